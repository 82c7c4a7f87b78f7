"""MLX elementwise ops with torch's semantics: promotion, binary arithmetic and comparisons,
unary math (float64 to float64 accuracy), ``fmod``; complex operands refused where torch refuses.

Every op names its stream (``self.s``), follows torch's promotion and checks, and raises typed errors.
Must never import torch or the facade.
"""

from __future__ import annotations

import functools

import mlx.core as mx
import numpy as np

from ... import _dtypes as D
from ..._errors import (
    DtypeMismatchError,
    OpDtypeError,
    ShapeError,
    TdxNotImplementedError,
    TdxRuntimeError,
    TdxTypeError,
)
from ...autograd.tape import ACTIVE as _TAPE, STATE as _TAPE_STATE, differentiating
from . import _float64 as mlx_f64
from . import _cpu_rounding as cpu_rounding
from . import _summation_order as summation
from . import _torch_order as torch_order
from ._indexing import on_stream, scalar_name
from ._rules import _FLOATS, _INT_RANGES, _INTS, _SCALARS, _SIGNED, _clamp_exact, _is_bool, _is_bool_operand, _tie_splitting, _where_exact
from ._value_bounds import KNOWN, combined, compared, inverted, shifted


_BOOL, _COMPLEX, _F32 = mx.bool_, mx.complex64, mx.float32


def float32_kernel(kernel, *, result=None, scalars: bool = True, vectors: bool = True):
    """Declare the decorated op's float32 per-op path: given float32 arrays (and, where ``scalars``,
    Python ints and floats; unless ``vectors``, not two 1-d arrays), outside a backward replay, the op
    is exactly ``kernel(*operands, stream=s)`` with a result of dtype ``result`` (None: float32). The
    facade calls ``kernel`` itself when it knows the operands are float32 (:attr:`tdx.backends.base.
    Executor.float32_kernels`), reading no dtype; a native error from ``kernel`` sends the call back to
    the op, which raises torch's."""
    def mark(op):
        op.float32_kernel = (kernel, result, scalars, vectors)
        return op

    return mark


def float32_kernels(cls) -> dict:
    """{op name: (kernel, result dtype name or None, takes scalars, takes two vectors)} of the ops of
    ``cls`` marked by :func:`float32_kernel` (an op overridden without the mark has none)."""
    table = {}
    for name in dir(cls):
        mark = getattr(getattr(cls, name, None), "float32_kernel", None)
        if mark is not None:
            table[name] = mark
    return table


def _same_float(a, t1, t2, value) -> bool:
    """Whether ``a``, ``t1``, ``t2`` are MLX arrays of one float32/float64 dtype and ``value`` an int or float."""
    return (type(a) is mx.array and type(t1) is mx.array and type(t2) is mx.array
            and (a.dtype == mx.float32 or a.dtype == mx.float64) and t1.dtype == a.dtype and t2.dtype == a.dtype
            and (value.__class__ is float or value.__class__ is int))


def _c_fmod(a, b, s):
    """C's ``fmod``: the remainder of the quotient truncated toward zero (the sign of ``a``), exact."""
    r = mx.remainder(mx.abs(a, stream=s), mx.abs(b, stream=s), stream=s)
    r = mx.where(a < 0, mx.negative(r, stream=s), r, stream=s)
    return mx.where(mx.logical_and(a == 0, r == 0, stream=s), a, r, stream=s)  # a signed zero stays


def _python_remainder(a, b, s):
    """torch's (and Python's) float remainder: C's ``fmod`` moved by ``b`` when its sign differs from ``b``'s."""
    r = _c_fmod(a, b, s)
    moved = mx.logical_and(r != 0, mx.not_equal(b < 0, r < 0, stream=s), stream=s)
    return mx.where(moved, mx.add(r, b, stream=s), r, stream=s)


def _floor_quotient(a, b, s):
    """torch's ``div(a, b, rounding_mode="floor")`` on floats, which is Python's ``a // b``.

    The quotient is taken from the exact remainder (``(a - fmod(a, b)) / b``, lowered by one where
    the remainder's sign differs from ``b``'s) rather than by flooring ``a / b``, whose rounding can
    cross an integer (``1.5 // 0.1`` is 14, ``floor(1.5 / 0.1)`` 15); a zero quotient takes the sign
    of ``a / b``, and a zero divisor gives ``a / b`` (IEEE's inf or nan).
    """
    mod = _c_fmod(a, b, s)
    div = mx.divide(mx.subtract(a, mod, stream=s), b, stream=s)
    lower = mx.logical_and(mod != 0, mx.not_equal(b < 0, mod < 0, stream=s), stream=s)
    div = mx.where(lower, mx.subtract(div, 1, stream=s), div, stream=s)
    floor = mx.floor(div, stream=s)
    floor = mx.where(mx.subtract(div, floor, stream=s) > 0.5, mx.add(floor, 1, stream=s), floor, stream=s)
    quotient = mx.divide(a, b, stream=s)
    zero = mx.multiply(quotient, 0, stream=s)  # 0 with the sign of a / b (used where a / b is finite)
    out = mx.where(div != 0, floor, zero, stream=s)
    return mx.where(b == 0, quotient, out, stream=s)


def _summed_to(g, shape):
    """Gradient ``g`` summed over the dims broadcasting added to an operand of ``shape``."""
    if tuple(g.shape) == tuple(shape):
        return g
    lead = g.ndim - len(shape)
    axes = list(range(lead)) + [lead + i for i, n in enumerate(shape) if n == 1 and g.shape[lead + i] != 1]
    return mx.reshape(mx.sum(g, axis=axes, keepdims=True), shape) if axes else mx.reshape(g, shape)


@mx.custom_function
def _torch_pow(a, b):
    """``a ** b`` whose derivative is torch's at the points torch defines it: ``d/da`` is 0 where
    ``b == 0`` (``x ** 0`` at 0: MLX's ``0 * 0 ** -1`` is NaN) and ``d/db`` is 0 where ``a == 0`` and
    ``b >= 0`` (MLX's ``0 * log 0`` is NaN). Complex operands get torch's conjugated derivatives
    (MLX's own vjp of a complex ``power`` leaves out the conjugate: a wrong sign in the imaginary
    direction). Used only inside a backward replay."""
    return mx.power(a, b)


@_torch_pow.vjp
def _torch_pow_vjp(primals, cotangent, output):
    a, b = primals
    if a.dtype == mx.complex64:  # torch's convention for a holomorphic f: grad_in = grad_out * conj(f')
        da = mx.where(b == 0, 0, cotangent * mx.conj(b * mx.power(a, b - 1)))
        db = mx.where(a == 0, 0, cotangent * mx.conj(output * mx.log(a)))
    else:
        da = mx.where(b == 0, 0, cotangent * b * mx.power(a, b - 1))
        db = mx.where(mx.logical_and(a == 0, b >= 0), 0, cotangent * output * mx.log(a))
    return _summed_to(da.astype(a.dtype), a.shape), _summed_to(db.astype(b.dtype), b.shape)


def _int_floor_quotient(a, b, s):
    return mx.floor_divide(a, b, stream=s)


def _int_trunc_quotient(a, b, s):
    """The integer quotient rounded toward zero (C's ``/``)."""
    q = mx.floor_divide(a, b, stream=s)
    inexact = mx.logical_and(mx.remainder(a, b, stream=s) != 0, mx.not_equal(a < 0, b < 0, stream=s), stream=s)
    return mx.where(inexact, mx.add(q, 1, stream=s), q, stream=s)


def _int_remainder(a, b, s):
    return mx.remainder(a, b, stream=s)


def _negated(a, s):
    return mx.negative(a, stream=s)  # a // -1 (wrapping as torch's)


def _zero(a, s):
    return mx.zeros_like(a, stream=s)  # a % -1


def _truncated_quotient(a, b, s):
    """``trunc(a / b)`` (a signed zero kept)."""
    q = mx.divide(a, b, stream=s)
    return mx.where(q < 0, mx.ceil(q, stream=s), mx.floor(q, stream=s), stream=s)


def _float_op(fn, a, b, raw, s):
    """``fn(a, b, s)`` on the float operands of :meth:`MLXElementwiseOps._args`; float16/bfloat16 are
    computed in float32 and rounded once, as torch's CPU kernels do, with a Python scalar among the
    ``raw`` operands taken in float32 (torch's opmath), not rounded to the tensor's dtype first."""
    if a.dtype == mx.float16 or a.dtype == mx.bfloat16:
        a32, b32 = (v.astype(mx.float32, stream=s) if isinstance(r, mx.array) else mx.array(r, mx.float32)
                    for v, r in zip((a, b), raw))
        return fn(a32, b32, s).astype(a.dtype, stream=s)
    return fn(a, b, s)


@on_stream
class MLXElementwiseOpsStreamed:
    """The ops of this family that run with ``self.s`` as MLX's default stream (operators and
    ``.at[]`` updates take no ``stream=``)."""

    __slots__ = ()

    # elementwise --------------------------------------------------------------------------
    def fmod(self, a, b):
        if not isinstance(a, mx.array):
            raise TdxTypeError(f"fmod(): argument 'input' must be Tensor, not {type(a).__name__}")
        raw = a, b
        a, b, rt = self._args(a, b)
        if rt is D.bool_ or rt.is_complex:
            raise OpDtypeError(f"\"fmod_cpu\" not implemented for '{scalar_name(rt)}'")
        if a.dtype in _INTS:
            b, minus_one = self._int_divisor(b)
            r = mx.remainder(a, b, stream=self.s)  # sign of b; C's fmod takes the sign of a
            fix = mx.logical_and(mx.not_equal(r, 0, stream=self.s),
                                 mx.not_equal(r < 0, a < 0, stream=self.s), stream=self.s)
            r = mx.where(fix, mx.subtract(r, b, stream=self.s), r, stream=self.s)
            return r if minus_one is None else mx.where(minus_one, mx.zeros_like(r, stream=self.s), r,
                                                        stream=self.s)
        return _float_op(_c_fmod, a, b, raw, self.s)

    def _alpha(self, a, b, alpha, sub: bool):
        if sub and (_is_bool_operand(a) or _is_bool_operand(b)):
            which = "two bool tensors" if _is_bool_operand(a) and _is_bool_operand(b) else "a bool tensor"
            raise OpDtypeError(f"Subtraction, the `-` operator, with {which} is not supported. If you are trying "
                               "to invert a mask, use the `~` or `logical_not()` operator instead.")
        a, b, rt = self._args(a, b)
        if isinstance(alpha, complex) and not rt.is_complex:
            raise TdxRuntimeError("For non-complex input tensors, argument alpha must not be a complex number.")
        if isinstance(alpha, float) and D.is_integral(rt, include_bool=True):
            raise TdxRuntimeError("For integral input tensors, argument alpha must not be a floating point number.")
        if isinstance(alpha, bool) and rt is not D.bool_:
            raise TdxRuntimeError("Boolean alpha only supported for Boolean results.")
        if rt is D.bool_:
            return mx.logical_or(a, mx.logical_and(b, bool(alpha), stream=self.s), stream=self.s)
        if rt is D.float32 and self.caps.float64 and not isinstance(alpha, complex):  # torch: one rounding
            return cpu_rounding.add_scaled(self._cast(a, rt), self._cast(b, rt), alpha, sub, self.s,
                                           torch_order.fused())
        scaled = mx.multiply(b, self._cast(alpha, rt), stream=self.s)
        return (mx.subtract if sub else mx.add)(a, scaled, stream=self.s)

    def addcmul(self, a, t1, t2, value):
        """``a + value * t1 * t2`` in torch's order of roundings (``value * t1`` rounded, then one
        fused multiply-add: exact on a CPU stream, for float32), when all three are arrays of one
        float32/float64 dtype and ``value`` a real Python number; else None (the facade composes it)."""
        if not _same_float(a, t1, t2, value):
            return None
        scaled = t1 if value == 1 else t1 * value
        if a.dtype == mx.float32 and self.caps.float64:
            return cpu_rounding.multiply_add(a, scaled, t2, self.s, torch_order.fused())
        return a + scaled * t2

    def addcdiv(self, a, t1, t2, value):
        """``a + value * t1 / t2`` in torch's order of roundings, under :meth:`addcmul`'s conditions."""
        if not _same_float(a, t1, t2, value):
            return None
        return a + t1 * value / t2

    def lerp(self, a, b, weight):
        """``a + weight * (b - a)`` as torch's CPU kernel rounds it, when ``a`` and ``b`` are arrays of one
        float32/float64 dtype and ``weight`` a real Python number; else None (the facade composes it).

        torch takes ``weight`` as a float32 and computes ``fma(weight, b - a, a)`` for ``|weight| < 0.5``,
        else ``fma(weight - 1, b - a, b)`` (exact near 1); on a CPU stream float32 does the same (one
        rounding through float64), elsewhere the product and the sum round apart."""
        if not _same_float(a, b, b, weight):
            return None
        if a.dtype == mx.float32:
            w = np.float32(weight)
            small = bool(abs(w) < 0.5)
            coeff, base = (w, a) if small else (w - np.float32(1), b)
            if self.caps.float64:
                return cpu_rounding.multiply_add(base, b - a, mx.array(coeff, mx.float32), self.s, torch_order.fused())
            return base + (b - a) * float(coeff)
        return a + (b - a) * weight if abs(weight) < 0.5 else b - (b - a) * (1 - weight)

    def add_alpha(self, a, b, alpha):
        """``a + alpha * b`` with torch's promotion (``alpha`` takes no part) and checks on ``alpha``."""
        return self._alpha(a, b, alpha, False)

    def sub_alpha(self, a, b, alpha):
        """``a - alpha * b`` with torch's promotion and checks (no bool operands)."""
        return self._alpha(a, b, alpha, True)


class MLXElementwiseOps(MLXElementwiseOpsStreamed):
    """MLX elementwise ops with torch's semantics: promotion, binary arithmetic and comparisons,"""

    __slots__ = ()
    update_kernels = True

    # promotion ------------------------------------------------------------------------
    def _tdx(self, v):
        return self._from_native[v.dtype]

    def _promote(self, *vals):
        """The torch result dtype of arrays and Python scalars in ``vals`` (None skipped)."""
        dims, zeros, scalars = [], [], []
        for v in vals:
            if v is None:
                continue
            if isinstance(v, mx.array):
                (dims if v.ndim else zeros).append(self._from_native[v.dtype])
            elif isinstance(v, _SCALARS):
                scalars.append(v)
            else:
                raise TdxTypeError(f"expected a Tensor or a Python scalar, got {type(v).__name__}")
        return D.result_type(dims, zeros, scalars)

    def _cast(self, v, d):
        nd = self._nd(d)
        if isinstance(v, mx.array):
            return v if v.dtype == nd else v.astype(nd, stream=self.s)
        return mx.array(v, dtype=nd)

    def _args(self, a, b):
        if type(a) is mx.array and type(b) is mx.array and a.dtype == b.dtype:
            return a, b, self._from_native[a.dtype]
        rt = self._promote(a, b)
        return self._cast(a, rt), self._cast(b, rt), rt

    def _pair(self, a, b):
        """:meth:`_args` for MLX's binary kernels, which take a Python scalar as it is: a float
        tensor with a Python int or float keeps its dtype (torch's rule), and MLX rounds the
        scalar to that dtype itself, as the cast would."""
        if type(a) is mx.array:  # the common cases of _args, inlined: this is the per-op path
            d = a.dtype  # read once: each read of an MLX property is a call
            if type(b) is mx.array:
                if d == b.dtype:
                    return a, b, self._from_native[d]
            elif (b.__class__ is float or b.__class__ is int) and d in _FLOATS:
                return a, b, self._from_native[d]
            elif b.__class__ is int and d in _INT_RANGES and _INT_RANGES[d][0] <= b <= _INT_RANGES[d][1]:
                return a, b, self._from_native[d]  # an int the integer array holds: torch keeps its dtype, as MLX
        return self._args(a, b)

    def _int_divisor(self, b):
        """(``b`` with every -1 replaced by 1, a mask of the -1s or None) for an integer division.

        MLX's integer kernels trap (SIGFPE, the process dies) on ``INT_MIN // -1`` and
        ``INT_MIN % -1``; the caller puts ``-a`` (wrapping, as torch's) or 0 where the mask is set.

        Raises:
            TdxRuntimeError: some divisor is 0 (torch: "ZeroDivisionError").
        """
        if bool(mx.any(mx.equal(b, 0, stream=self.s), stream=self.s).item()):
            raise TdxRuntimeError("ZeroDivisionError")
        if b.dtype not in _SIGNED:
            return b, None
        minus_one = mx.equal(b, -1, stream=self.s)
        return mx.where(minus_one, mx.ones_like(b, stream=self.s), b, stream=self.s), minus_one

    # binary arithmetic ----------------------------------------------------------------
    def _bias_grad(self, a, b):
        """Whether ``a + b`` is replayed for its derivative with a broadcast float32 operand, whose
        gradient torch sums in its own order (:func:`._summation_order.broadcast_add`). Only a recorded
        op is replayed: nothing is asked before a tape tensor first requires grad."""
        return (_TAPE[0] and differentiating() and self.caps.float64 and type(a) is mx.array
                and type(b) is mx.array and a.shape != b.shape and a.dtype == b.dtype == mx.float32
                and torch_order.in_force("sum"))

    @float32_kernel(mx.add)
    def add(self, a, b):
        if type(a) is mx.array and type(b) is mx.array and a.dtype == b.dtype and not (_TAPE[0] and _TAPE_STATE.differentiating):
            out = mx.add(a, b, stream=self._stream or self.s)  # the per-op path
        else:
            x, y, _ = self._pair(a, b)
            out = summation.broadcast_add(x, y, False, self.s) if self._bias_grad(x, y) else mx.add(x, y, stream=self.s)
        # an index moved by another or by a count (``pos.add_(1)``): its bounds move with it
        return shifted(a, b, out) if KNOWN and id(a) in KNOWN and (b.__class__ is int or id(b) in KNOWN) else out

    @float32_kernel(mx.subtract)
    def sub(self, a, b):
        if type(a) is mx.array and type(b) is mx.array and not (_TAPE[0] and _TAPE_STATE.differentiating) \
                and a.dtype == b.dtype and a.dtype != _BOOL:  # the per-op path
            out = mx.subtract(a, b, stream=self._stream or self.s)
        else:
            if _is_bool(a) or _is_bool(b):
                raise OpDtypeError("Subtraction, the `-` operator, with a bool tensor is not supported. "
                                   "If you are trying to invert a mask, use the `~` or `logical_not()` "
                                   "operator instead.")
            x, y, _ = self._pair(a, b)
            out = (summation.broadcast_add(x, y, True, self.s) if self._bias_grad(x, y)
                   else mx.subtract(x, y, stream=self.s))
        return shifted(a, b, out, True) if KNOWN and id(a) in KNOWN and (b.__class__ is int or id(b) in KNOWN) else out

    @float32_kernel(mx.multiply)
    def mul(self, a, b):
        if type(a) is mx.array:  # the common cases of _pair, inlined: this is the per-op path
            d = a.dtype
            if type(b) is mx.array:
                if d == b.dtype:
                    return mx.multiply(a, b, stream=self._stream or self.s)
            elif (b.__class__ is float or b.__class__ is int) and (d == _F32 or d in _FLOATS):
                return mx.multiply(a, b, stream=self._stream or self.s)
        a, b, _ = self._pair(a, b)
        return mx.multiply(a, b, stream=self.s)

    @float32_kernel(mx.divide)
    def truediv(self, a, b):
        rt = D.float_for(self._promote(a, b))
        return mx.divide(self._cast(a, rt), self._cast(b, rt), stream=self.s)

    def _division(self, a, b, kernel: str, ints, at_minus_one, floats):
        """One of the integer-or-float divisions: ``ints(a, b, s)`` on integers (a zero divisor refused,
        ``at_minus_one(a, s)`` where the divisor is -1, which MLX would trap on), else ``floats`` by
        :func:`_float_op`; bools refused as torch's ``kernel``."""
        raw = a, b
        a, b, rt = self._args(a, b)
        if rt is D.bool_:
            raise OpDtypeError(f"\"{kernel}\" not implemented for 'Bool'")
        if a.dtype in _INTS:
            b, minus_one = self._int_divisor(b)
            out = ints(a, b, self.s)
            return out if minus_one is None else mx.where(minus_one, at_minus_one(a, self.s), out, stream=self.s)
        return _float_op(floats, a, b, raw, self.s)

    def floordiv(self, a, b):
        return self._division(a, b, "div_floor", _int_floor_quotient, _negated, _floor_quotient)

    div_floor = floordiv  # div(rounding_mode="floor"); the tape gives it a zero derivative as torch

    def div_trunc(self, a, b):
        """``div(a, b, rounding_mode="trunc")``: integers exactly (a zero divisor refused, as torch),
        floats as ``trunc(a / b)`` (float16/bfloat16 in float32, rounded once)."""
        return self._division(a, b, "div_trunc_cpu", _int_trunc_quotient, _negated, _truncated_quotient)

    def remainder(self, a, b):
        return self._division(a, b, "remainder", _int_remainder, _zero, _python_remainder)

    def pow(self, a, b):
        if type(a) is mx.array and (b.__class__ is int or b.__class__ is float) and b != 0.5 and b != -0.5 \
                and a.dtype == _F32 and not _TAPE_STATE.differentiating:
            # the per-op path (``x.pow(2)`` of a norm): the scalar becomes a float32 array, as the cast below makes it;
            # a square is torch's ``x * x`` (its kernel's case for 2), one node with no broadcast exponent
            if b == 2:
                return mx.square(a, stream=self._stream or self.s)
            return mx.power(a, b, stream=self._stream or self.s)
        if isinstance(a, mx.array) and isinstance(b, mx.array) and _is_bool(a) and _is_bool(b):
            raise OpDtypeError("\"pow\" not implemented for 'Bool'")
        negative_scalar = isinstance(b, int) and b < 0  # checked before the cast wraps it (uint8)
        half_power = b.__class__ is float and (b == 0.5 or b == -0.5)
        a, b, rt = self._args(a, b)
        if half_power and a.dtype in _FLOATS and a.dtype != mx.float16:
            # torch takes x ** 0.5 as sqrt and x ** -0.5 as rsqrt (but for float16): -0.0 gives -0.0 and -inf
            return (mx.sqrt if b.item() > 0 else mx.rsqrt)(a, stream=self.s)
        if rt is D.bool_:
            return mx.power(a.astype(mx.int32), b.astype(mx.int32), stream=self.s).astype(mx.bool_)
        if D.is_integral(rt, include_bool=True) and negative_scalar:
            raise TdxRuntimeError("Integers to negative integer powers are not allowed.")
        if D.is_integral(rt, include_bool=True) and bool(mx.any(b < 0)):
            # torch computes a tensor of negative exponents: 1 stays 1, -1 alternates, every other base gives 0
            neg = b < 0
            pos = mx.power(a, mx.where(neg, 0, b), stream=self.s)
            odd = mx.remainder(b, 2) != 0
            unit = mx.where(a == 1, 1, mx.where(a == -1, mx.where(odd, -1, 1), 0)).astype(a.dtype)
            return mx.where(neg, unit, pos, stream=self.s)
        if _TAPE_STATE.differentiating and (a.dtype in _FLOATS or a.dtype == mx.complex64):
            return _torch_pow(a, b)
        return mx.power(a, b, stream=self.s)

    @float32_kernel(mx.matmul, scalars=False, vectors=False)  # two vectors add in torch's order (below)
    def matmul(self, a, b):
        if type(a) is mx.array and type(b) is mx.array:  # the per-op path: one float dtype, not two vectors
            dt = a.dtype
            if dt == b.dtype and (dt == _F32 or dt in _FLOATS) and (a.ndim > 1 or b.ndim > 1):
                try:
                    return mx.matmul(a, b, stream=self._stream or self.s)
                except ValueError:  # shapes that do not multiply (or a 0-d operand): torch's error below
                    pass
        if not (isinstance(a, mx.array) and isinstance(b, mx.array)):
            raise TdxTypeError("matmul: both arguments must be tensors")
        na, nb, dt = a.ndim, b.ndim, a.dtype  # read once: each read of an MLX property is a call
        if na == 0 or nb == 0:
            raise ShapeError(f"both arguments to matmul need to be at least 1D, but they are "
                             f"{na}D and {nb}D")
        if dt != b.dtype:
            raise DtypeMismatchError(f"expected m1 and m2 to have the same dtype, but got: "
                                     f"{self._tdx(a).name} != {self._tdx(b).name}")
        sa, sb = a.shape, b.shape
        if sa[-1] != (sb[-2] if nb > 1 else sb[0]):
            raise ShapeError(f"mat1 and mat2 shapes cannot be multiplied ({sa} and {sb})")
        if dt in _INTS:
            if dt == mx.bool_ and not (a.size == 0 or b.size == 0):  # torch's empty products pass
                raise OpDtypeError("\"addmm\" not implemented for 'Bool'")
            out = np.matmul(np.array(a), np.array(b))
            return mx.array(out).astype(dt, stream=self.s)
        if na == 1 and nb == 1 and dt == mx.float32 and self.caps.float64 and torch_order.in_force("dot"):
            out = summation.dotted(a, b, self.s)  # torch's (MKL's) order of additions
            if out is not None:
                return out
        return mx.matmul(a, b, stream=self.s)

    def _compare(self, fn, a, b):
        if type(a) is mx.array and type(b) is mx.array and a.dtype == b.dtype:  # the per-op path
            return fn(a, b, stream=self._stream or self.s)
        a, b, _ = self._pair(a, b)
        return fn(a, b, stream=self.s)

    def _order(self, fn, name, a, b):
        if type(a) is mx.array and type(b) is mx.array:  # the per-op path: one real dtype
            d = a.dtype
            if d == b.dtype and d != _COMPLEX:
                return fn(a, b, stream=self._stream or self.s)
        a, b, rt = self._pair(a, b)
        if rt.is_complex:  # MLX would order complex numbers lexicographically
            raise TdxNotImplementedError(_complex_refused(name))
        return fn(a, b, stream=self.s)

    def _bitwise(self, fn, name, a, b):
        x, y, rt = self._args(a, b)
        if not D.is_integral(rt, include_bool=True):
            raise OpDtypeError(f"\"{name}_cpu\" not implemented for '{scalar_name(rt)}'")
        out = fn(x, y, stream=self.s)
        return combined(name, a, b, out) if KNOWN and (id(a) in KNOWN or id(b) in KNOWN) else out  # pinned flags

    def and_(self, a, b):
        return self._bitwise(mx.bitwise_and, "bitwise_and", a, b)

    def or_(self, a, b):
        return self._bitwise(mx.bitwise_or, "bitwise_or", a, b)

    def xor(self, a, b):
        return self._bitwise(mx.bitwise_xor, "bitwise_xor", a, b)

    def _shift(self, left: bool, a, b):
        """torch's shifts: a shift by the width or more (or a negative one) gives 0, or the sign
        for a right shift; C (and MLX) leave that undefined and wrap the count."""
        a, b, rt = self._args(a, b)
        if not D.is_integral(rt):  # bool too: torch has no shift kernel for it
            raise OpDtypeError(f"\"{'lshift' if left else 'rshift'}_cpu\" not implemented for '{scalar_name(rt)}'")
        width = rt.itemsize * 8
        over = mx.logical_or(mx.greater_equal(b, width, stream=self.s), mx.less(b, 0, stream=self.s),
                             stream=self.s)
        safe = mx.where(over, mx.zeros_like(b, stream=self.s), b, stream=self.s)
        if left:
            return mx.where(over, mx.zeros_like(a, stream=self.s), mx.left_shift(a, safe, stream=self.s),
                            stream=self.s)
        if rt is D.uint8:  # never negative: a right shift past the width gives 0
            fill = mx.zeros_like(a, stream=self.s)
        else:
            fill = mx.where(mx.less(a, 0, stream=self.s), mx.full(a.shape, -1, a.dtype, stream=self.s),
                            mx.zeros_like(a, stream=self.s), stream=self.s)
        return mx.where(over, fill, mx.right_shift(a, safe, stream=self.s), stream=self.s)

    def lshift(self, a, b):
        return self._shift(True, a, b)

    def rshift(self, a, b):
        return self._shift(False, a, b)

    @float32_kernel(mx.maximum, scalars=False)
    def maximum(self, a, b):
        if type(a) is mx.array and type(b) is mx.array and not (_TAPE[0] and _TAPE_STATE.differentiating):  # one real dtype
            d = a.dtype
            if d == b.dtype and d != _COMPLEX:
                return mx.maximum(a, b, stream=self._stream or self.s)
        a, b, rt = self._args(a, b)
        if rt.is_complex:
            raise TdxRuntimeError(_complex_refused("maximum"))
        if rt.is_floating_point and differentiating():
            return _tie_splitting("maximum", self.s)(a, b)
        return mx.maximum(a, b, stream=self.s)

    def minimum(self, a, b):
        a, b, rt = self._args(a, b)
        if rt.is_complex:
            raise TdxRuntimeError(_complex_refused("minimum"))
        if rt.is_floating_point and differentiating():
            return _tie_splitting("minimum", self.s)(a, b)
        return mx.minimum(a, b, stream=self.s)

    def atan2(self, a, b):
        rt = D.float_for(self._promote(a, b))
        return mx.arctan2(self._cast(a, rt), self._cast(b, rt), stream=self.s)

    def logical_and(self, a, b):
        return mx.logical_and(self._cast(a, D.bool_), self._cast(b, D.bool_), stream=self.s)

    def logical_or(self, a, b):
        return mx.logical_or(self._cast(a, D.bool_), self._cast(b, D.bool_), stream=self.s)

    def logical_xor(self, a, b):
        return mx.not_equal(self._cast(a, D.bool_), self._cast(b, D.bool_), stream=self.s)

    def where(self, cond, a, b):
        if not (isinstance(cond, mx.array) and cond.dtype == mx.bool_):
            raise OpDtypeError("where expected condition to be a boolean tensor")
        a, b, rt = self._args(a, b)
        if rt.is_floating_point and differentiating():  # the same values, with torch's derivative
            return _where_exact(self.s)(cond, a, b)
        return mx.where(cond, a, b, stream=self.s)

    def clamp(self, x, min=None, max=None):  # noqa: A002 - torch's names
        if min is None and max is None:
            raise TdxRuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
        rt = self._promote(x, min, max)
        out = self._cast(x, rt)
        lo = None if min is None else self._cast(min, rt)
        hi = None if max is None else self._cast(max, rt)
        if rt.is_floating_point and differentiating():  # the same values, with torch's derivative
            zero = mx.zeros((), out.dtype)
            return _clamp_exact(lo is not None, hi is not None, self.s)(out, zero if lo is None else lo,
                                                                        zero if hi is None else hi)
        if lo is not None:
            out = mx.maximum(out, lo, stream=self.s)
        if hi is not None:
            out = mx.minimum(out, hi, stream=self.s)
        return out

    def outer(self, a, b):
        a, b, _ = self._args(a, b)
        return mx.outer(a, b, stream=self.s)

    def tril(self, x, diagonal=0):
        return mx.tril(x, diagonal, stream=self.s)

    def triu(self, x, diagonal=0):
        return mx.triu(x, diagonal, stream=self.s)

    # unary ----------------------------------------------------------------------------
    def _float_in(self, x):
        if x.dtype in _INTS:
            return x.astype(self._nd(D.get_default_dtype()), stream=self.s)
        return x

    def neg(self, x):
        if x.dtype == mx.bool_:
            raise OpDtypeError("Negation, the `-` operator, on a bool tensor is not supported. "
                               "If you are trying to invert a mask, use the `~` or `logical_not()` "
                               "operator instead.")
        return mx.negative(x, stream=self._stream or self.s)

    def _not_bool(self, x, op):
        if x.dtype == mx.bool_:  # torch raises NotImplementedError for these kernels on bool
            raise TdxNotImplementedError(f"\"{op}\" not implemented for 'Bool'")

    def abs(self, x):
        self._not_bool(x, "abs")
        return mx.abs(x, stream=self.s)

    def sign(self, x):
        return x if x.dtype == mx.bool_ else mx.sign(x, stream=self.s)

    def sgn(self, x):
        return x if x.dtype == mx.bool_ else mx.sign(x, stream=self.s)

    def sigmoid(self, x):
        if x.dtype == mx.complex64:  # MLX's sigmoid is real only; torch's is 1 / (1 + exp(-x))
            e = mx.exp(mx.negative(x, stream=self.s), stream=self.s)
            return mx.reciprocal(mx.add(e, 1, stream=self.s), stream=self.s)
        x = self._float_in(x)
        if x.dtype == mx.float64:  # MLX's float64 sigmoid is float32-accurate
            return mlx_f64.functions(self.s)["sigmoid"](x)
        return mx.sigmoid(x, stream=self._stream or self.s)

    def square(self, x):
        return mx.square(x.astype(mx.int64) if x.dtype == mx.bool_ else x, stream=self.s)

    def positive(self, x):
        return x

    def conj(self, x):
        return mx.conjugate(x, stream=self.s) if x.dtype == mx.complex64 else x

    def relu(self, x):
        if x.dtype == mx.bool_ or x.dtype == mx.complex64:
            if x.dtype == mx.complex64:
                raise TdxNotImplementedError(_complex_refused("relu"))
            raise OpDtypeError("Boolean inputs not supported for relu")
        return mx.maximum(x, mx.array(0, x.dtype), stream=self.s)

    def _rounding(self, fn, x):
        self._not_bool(x, fn.__name__)
        return x if x.dtype in _INTS else fn(x, stream=self.s)

    def floor(self, x):
        return self._rounding(mx.floor, x)

    def ceil(self, x):
        return self._rounding(mx.ceil, x)

    def round(self, x):
        return self._rounding(mx.round, x)

    def trunc(self, x):
        self._not_bool(x, "trunc")
        if x.dtype in _INTS:
            return x
        return mx.where(x < 0, mx.ceil(x, stream=self.s), mx.floor(x, stream=self.s), stream=self.s)

    def frac(self, x):
        if x.dtype in _INTS:
            raise OpDtypeError(f"\"frac_cpu\" not implemented for '{self._tdx(x).name}'")
        return mx.subtract(x, self.trunc(x), stream=self.s)

    def exp2(self, x):
        x = self._float_in(x)
        return mx.power(mx.array(2, x.dtype), x, stream=self.s)

    def logical_not(self, x):
        return mx.logical_not(x.astype(mx.bool_) if x.dtype != mx.bool_ else x, stream=self.s)

    def bitwise_not(self, x):
        if x.dtype == mx.bool_:
            out = mx.logical_not(x, stream=self.s)
        elif x.dtype not in _INTS:
            raise OpDtypeError(f"\"bitwise_not_cpu\" not implemented for '{scalar_name(self._tdx(x))}'")
        else:
            out = mx.bitwise_invert(x, stream=self.s)
        return inverted(x, out) if KNOWN and id(x) in KNOWN else out

    def isnan(self, x):
        return mx.isnan(x, stream=self.s) if x.dtype not in _INTS else mx.zeros(x.shape, mx.bool_)

    def isinf(self, x):
        return mx.isinf(x, stream=self.s) if x.dtype not in _INTS else mx.zeros(x.shape, mx.bool_)

    def isfinite(self, x):
        return mx.isfinite(x, stream=self.s) if x.dtype not in _INTS else mx.ones(x.shape, mx.bool_)


_FLOAT_UNARY = {"exp": mx.exp, "expm1": mx.expm1, "log": mx.log, "log2": mx.log2, "log10": mx.log10,
                "log1p": mx.log1p, "sqrt": mx.sqrt, "sin": mx.sin, "cos": mx.cos, "tan": mx.tan,
                "asin": mx.arcsin, "acos": mx.arccos, "atan": mx.arctan, "sinh": mx.sinh,
                "cosh": mx.cosh, "tanh": mx.tanh, "erf": mx.erf,
                "reciprocal": mx.reciprocal, "rsqrt": mx.rsqrt}


def _comparison(fn, name, ordered: bool):
    """The comparison ``name`` (MLX's ``fn``): operands of one dtype (a real one, for an ordering) go
    straight to MLX, the per-op path; others through :meth:`MLXElementwiseOps._order`/``_compare``. An answer
    the operands' known bounds decide is pinned on the result (:func:`._value_bounds.compared`)."""
    def op(self, a, b):
        if type(a) is mx.array and type(b) is mx.array:
            d = a.dtype
            if d == b.dtype and not (ordered and d == _COMPLEX):
                out = fn(a, b, stream=self._stream or self.s)
                return compared(name, a, b, out) if KNOWN and (id(a) in KNOWN or id(b) in KNOWN) else out
        out = self._order(fn, name, a, b) if ordered else self._compare(fn, a, b)
        return compared(name, a, b, out) if KNOWN and (id(a) in KNOWN or id(b) in KNOWN) else out

    op.__name__ = name
    return float32_kernel(fn, result="bool")(op)


for _name, _fn in {"eq": mx.equal, "ne": mx.not_equal}.items():
    setattr(MLXElementwiseOps, _name, _comparison(_fn, _name, False))
for _name, _fn in {"lt": mx.less, "le": mx.less_equal, "gt": mx.greater, "ge": mx.greater_equal}.items():
    setattr(MLXElementwiseOps, _name, _comparison(_fn, _name, True))


def _float_unary(fn):
    def op(self, x):
        if x.dtype == _F32:  # the per-op path
            return fn(x, stream=self._stream or self.s)
        return fn(self._float_in(x), stream=self.s)

    op.__name__ = fn.__name__
    return float32_kernel(fn, scalars=False)(op)


def _float_unary_f64(fn, name):
    """As :func:`_float_unary`, with float64 computed by :mod:`tdx.backends.mlx._float64` (MLX's own
    value or derivative is float32-accurate)."""
    def op(self, x):
        if x.dtype == _F32:  # the per-op path
            return fn(x, stream=self._stream or self.s)
        x = self._float_in(x)
        if x.dtype == mx.float64:
            return mlx_f64.functions(self.s)[name](x)
        return fn(x, stream=self.s)

    op.__name__ = fn.__name__
    return float32_kernel(fn, scalars=False)(op)


for _name, _fn in _FLOAT_UNARY.items():
    setattr(MLXElementwiseOps, _name, _float_unary(_fn))
for _name in mlx_f64.NAMES:
    if _name in _FLOAT_UNARY:
        setattr(MLXElementwiseOps, _name, _float_unary_f64(_FLOAT_UNARY[_name], _name))


def _tanh(self, x):
    """``tanh``; float32 on a CPU stream rounds as torch's CPU kernel (:mod:`._cpu_rounding`)."""
    x = self._float_in(x)
    if x.dtype == mx.float32 and self.caps.float64:
        return cpu_rounding.tanh(self.s, torch_order.order("tanh") == "fused")(x)
    return mx.tanh(x, stream=self.s)


MLXElementwiseOps.tanh = _tanh

# ops torch refuses for complex operands: MLX would order complex numbers lexicographically
# (or round each part), so they are refused here with torch's error kind before MLX sees them
# (the comparisons, maximum/minimum and relu check inline, on their hot path)
_NOT_FOR_COMPLEX = {
    **dict.fromkeys(("round", "floordiv", "amax", "amin", "clamp"), TdxNotImplementedError),
    **dict.fromkeys(("max_dim", "min_dim", "argmax", "argmin"), TdxRuntimeError),
}
_TORCH_NAME = {"floordiv": "floor_divide", "max_dim": "max", "min_dim": "min"}


def _is_complex(v) -> bool:
    return v.dtype == mx.complex64 if isinstance(v, mx.array) else isinstance(v, complex)


def _complex_refused(name: str) -> str:
    return (f"{name}(): not implemented for complex tensors (ComplexFloat); it needs real (floating point, "
            "integer or bool) tensors")


def _real_only(name, kind, fn):
    message = _complex_refused(_TORCH_NAME.get(name, name))

    @functools.wraps(fn)
    def op(self, a, *args, **kwargs):
        if _is_complex(a) or any(_is_complex(v) for v in args) or any(_is_complex(v) for v in kwargs.values()):
            raise kind(message)
        return fn(self, a, *args, **kwargs)

    return op
