"""Elementwise ops: arithmetic with torch's promotion, the unary and binary kernels, comparisons of
whole tensors (``isclose``, ``equal``) and the composites built from them (``lerp``, ``addcmul``,
``logaddexp``, ``hypot``, ``xlogy``, ``nan_to_num``...), as ``Tensor`` methods and ``torch.*`` functions.

Each op unwraps its operands (checking they share an executor), normalizes torch's argument
forms, calls the executor and wraps the result; methods are attached to :class:`Tensor` by
:func:`wrapping.attach`. This module must never import a framework, never holds a per-executor
special case (those live in the executors), and depends on the Tensor core only, never on
another op family through it.
"""

from __future__ import annotations

import math

from .. import _dtypes as D
from .._errors import NATIVE_ERRORS, CastError, DtypeMismatchError, TdxRuntimeError, UnsupportedOpError
from . import recording as _tape
from ..autograd.tape import ACTIVE as _TAPE, MODE as _MODE
from . import wrapping as TM
from .operands import (
    _FMAX,
    _coerce,
    _full,
    _is_float,
    _no_complex,
    _not_implemented,
    _operand,
    _requires_grad,
    _result_type,
    _saturated,
    _signbit,
    _tensor,
    _work,
    _write,
)
from .tensor import Tensor
from .wrapping import (NO_KERNEL, SCALARS, attach, exporter, float32_binary, float32_unary, inline_typed,
                       mixed_operands, need_tensor, operand, typed_errors, wrap)

__all__: list = []
_new = object.__new__
_export = exporter(__all__)


def _unary(name: str):
    seen = [NO_KERNEL]  # the last executor's float32 kernel for this op (wrapping.float32_entry)

    @inline_typed
    def method(self):
        if _TAPE[0] and _MODE.enabled and _tape.wants(self):
            return _tape.call(method, self)
        ex = self._ex
        k = seen[0]
        if k[0] is not ex or k[1] is not None:  # an executor with no float32 kernel for it (torch) skips the call
            t = float32_unary(seen, name, self)
            if t is not None:
                return t
        try:
            n = getattr(ex, name)(self._n)
        except NATIVE_ERRORS as err:
            raise ex.native_error(err) from None
        t = _new(Tensor)  # wrap's, inlined: the per-op path
        t._n = n
        t._ex = ex
        t._ag = t._view = t._dt = None
        return t

    method.__name__ = name
    method.__doc__ = f"Elementwise ``{name}``, as ``torch.Tensor.{name}``."
    return method


def _binary(name: str, torch_name: str):
    seen = [NO_KERNEL]  # the last executor's float32 kernel for this op (wrapping.float32_entry)

    @inline_typed
    def method(self, other):
        if _TAPE[0] and _MODE.enabled and _tape.wants(self, other):
            return _tape.call(method, self, other)
        ex = self._ex
        k = seen[0]
        if k[0] is not ex or k[1] is not None:  # an executor with no float32 kernel for it (torch) skips the call
            t = float32_binary(seen, name, self, other)
            if t is not None:
                return t
        mine = self._n
        if other.__class__ is Tensor:
            if other._ex is ex:
                other = other._n
            else:
                ex, mine, other = mixed_operands(torch_name, self, other)
        elif other.__class__ not in SCALARS:
            other = operand(self, other, torch_name)
        try:
            n = getattr(ex, name)(mine, other)
        except NATIVE_ERRORS as err:
            raise ex.native_error(err) from None
        t = _new(Tensor)  # wrap's, inlined: the per-op path
        t._n = n
        t._ex = ex
        t._ag = t._view = t._dt = None
        return t

    method.__name__ = torch_name
    method.__doc__ = f"``{torch_name}`` with torch's broadcasting and promotion."
    return method


UNARY = ("neg", "abs", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt",
         "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "sigmoid", "relu",
         "erf", "floor", "ceil", "round", "trunc", "frac", "sign", "sgn", "reciprocal", "square",
         "logical_not", "bitwise_not", "isnan", "isinf", "isfinite", "positive")

BINARY = {"mul": "mul", "truediv": "true_divide", "floordiv": "floor_divide", "remainder": "remainder",
          "pow": "pow", "matmul": "matmul", "eq": "eq", "ne": "ne", "lt": "lt", "le": "le", "gt": "gt",
          "ge": "ge", "maximum": "maximum", "minimum": "minimum", "atan2": "atan2",
          "logical_and": "logical_and", "logical_or": "logical_or", "logical_xor": "logical_xor",
          "and_": "bitwise_and", "or_": "bitwise_or", "xor": "bitwise_xor", "outer": "outer"}

ALIASES = {"negative": "neg", "absolute": "abs", "arcsin": "asin", "arccos": "acos", "arctan": "atan",
           "multiply": "mul", "divide": "div", "greater": "gt", "greater_equal": "ge", "less": "lt",
           "less_equal": "le", "not_equal": "ne", "clip": "clamp", "fix": "trunc",
           "arctan2": "atan2", "subtract": "sub"}


def _fused_call(kernel, t, t1, t2, value):
    """``kernel(t, t1, t2, value)`` on natives (one executor call), or None when the kernel refuses
    or declines the arguments (the composite then computes it, or raises tdx's typed error)."""
    if isinstance(value, Tensor):
        return None
    try:
        out = kernel(t._n, t1._n, t2._n, value)
    except NATIVE_ERRORS:
        return None
    return None if out is None else wrap(out, t._ex)


class ElementwiseMethods:
    """The elementwise methods of ``tdx.Tensor``."""

    __slots__ = ()

    # arithmetic with extra arguments ----------------------------------------------------
    def add(self, other, *, alpha=1):
        ex = self._ex
        other = operand(self, other, "add")
        if alpha.__class__ is not int or alpha != 1:
            return wrap(ex.add_alpha(self._n, other, alpha), ex)
        return wrap(ex.add(self._n, other), ex)

    def sub(self, other, *, alpha=1):
        ex = self._ex
        other = operand(self, other, "sub")
        if alpha.__class__ is not int or alpha != 1:
            return wrap(ex.sub_alpha(self._n, other, alpha), ex)
        return wrap(ex.sub(self._n, other), ex)

    def div(self, other, *, rounding_mode=None):
        ex = self._ex
        other = operand(self, other, "div")
        if rounding_mode is None:
            return wrap(ex.truediv(self._n, other), ex)
        if rounding_mode == "floor":
            return wrap(ex.div_floor(self._n, other), ex)
        if rounding_mode == "trunc":
            return wrap(ex.div_trunc(self._n, other), ex)
        raise TdxRuntimeError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
                              f"{rounding_mode!r}")

    def where(self, condition, other):
        ex = self._ex
        return wrap(ex.where(operand(self, condition, "where"), self._n, operand(self, other, "where")), ex)

    def clamp(self, min=None, max=None):  # noqa: A002 - torch's names
        ex = self._ex
        return wrap(ex.clamp(self._n, operand(self, min, "clamp"), operand(self, max, "clamp")), ex)

    # complex conjugation ---------------------------------------------------------------------
    def conj(self):
        """The complex conjugate; a real tensor is returned as it is, as torch's."""
        if not self.dtype.is_complex:
            return self
        return wrap(self._ex.conj(self._n), self._ex)

    def resolve_conj(self):
        """This tensor with a lazy conjugation (torch's conj bit) materialized."""
        n = self._ex.resolve_conj(self._n)
        return self if n is self._n else wrap(n, self._ex)

    def is_conj(self) -> bool:
        """Whether this is a lazily conjugated view (torch executors only; MLX conjugates eagerly)."""
        return self._ex.is_conj(self._n)

    # elementwise ------------------------------------------------------------------------
    def fmod(self, other):
        """C-style remainder (the sign of self), as ``torch.fmod``."""
        ex = self._ex
        return wrap(ex.fmod(self._n, operand(self, other, "fmod")), ex)

    def addcmul(self, tensor1, tensor2, *, value=1):
        """``self + value * tensor1 * tensor2``, broadcast and promoted over all three."""
        ex = self._ex
        if ex.update_kernels and getattr(tensor1, "_ex", None) is ex and getattr(tensor2, "_ex", None) is ex:
            fast = _fused_call(ex.addcmul, self, tensor1, tensor2, value)
            if fast is not None:
                return fast
        t1, t2 = _tensor(self, tensor1, "addcmul", "tensor1"), _tensor(self, tensor2, "addcmul", "tensor2")
        rt = _result_type(self, t1, t2)
        if rt is D.bool_:
            raise _not_implemented("addcmul", rt, "numeric tensors")
        value = _coerce(value, rt, "addcmul", "value")
        w = _work(rt)
        prod = t1._cast(w) * t2._cast(w) if value == 1 else (t1._cast(w) * value) * t2._cast(w)
        return (self._cast(w) + prod)._cast(rt)

    def addcdiv(self, tensor1, tensor2, *, value=1):
        """``self + value * tensor1 / tensor2`` (true division), broadcast and promoted over all three."""
        ex = self._ex
        if ex.update_kernels and getattr(tensor1, "_ex", None) is ex and getattr(tensor2, "_ex", None) is ex:
            fast = _fused_call(ex.addcdiv, self, tensor1, tensor2, value)
            if fast is not None:
                return fast
        t1, t2 = _tensor(self, tensor1, "addcdiv", "tensor1"), _tensor(self, tensor2, "addcdiv", "tensor2")
        if not _is_float(t1.dtype) and not _is_float(t2.dtype):
            raise TdxRuntimeError(f"addcdiv(): integer division ({t1.dtype.name} / {t2.dtype.name}) is no longer "
                                  "supported; use (input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) "
                                  "or pass floating point tensors")
        rt = _result_type(self, t1, t2)
        value = _coerce(value, rt, "addcdiv", "value")
        w = _work(rt)
        num = t1._cast(w) if value == 1 else t1._cast(w) * value
        return (self._cast(w) + num / t2._cast(w))._cast(rt)

    def lerp(self, end, weight):
        """``self + weight * (end - self)``, computed as torch does for accuracy near ``weight = 1``."""
        ex = self._ex
        if ex.update_kernels and getattr(end, "_ex", None) is ex and (weight.__class__ is float or weight.__class__ is int):
            try:
                out = ex.lerp(self._n, end._n, weight)
            except NATIVE_ERRORS:  # the composite below raises tdx's typed error
                out = None
            if out is not None:
                return wrap(out, ex)
        end = _tensor(self, end, "lerp", "end")
        rt = self.dtype
        if end.dtype is not rt:
            raise DtypeMismatchError(f"lerp(): expected dtype {rt.name} for `end` but got dtype {end.dtype.name}")
        weight = _operand(self, weight, "lerp", "weight")
        if weight.__class__ is TM.Tensor:
            if weight.ndim and weight.dtype is not rt:
                raise DtypeMismatchError(f"lerp(): expected dtype {rt.name} for `weight` but got dtype "
                                         f"{weight.dtype.name}")
            rt = _result_type(self, end, weight)  # a 0-d weight promotes 0-d inputs only
        if not _is_float(rt):
            raise _not_implemented("lerp", rt)
        w = _work(rt)
        a, b = self._cast(w), end._cast(w)
        if weight.__class__ is TM.Tensor:
            wt = weight._cast(w)
            small = a + wt * (b - a)
            large = b - (b - a) * (1 - wt)
            return small.where(wt.abs() < 0.5, large)._cast(rt)
        weight = _coerce(weight, rt, "lerp", "weight")
        out = a + weight * (b - a) if abs(weight) < 0.5 else b - (b - a) * (1 - weight)
        return out._cast(rt)

    # elementwise ----------------------------------------------------------------------------------
    def _pair(self, other, op: str):
        """(self, other) cast to their common floating dtype's compute dtype, and that dtype."""
        other = _tensor(self, other, op, "other")
        rt = _result_type(self, other)
        if not _is_float(rt):
            raise _not_implemented(op, rt)
        if rt.is_complex:
            raise UnsupportedOpError(f"{op}() of complex tensors is not supported (got {rt.name})")
        w = _work(rt)
        return self._cast(w), other._cast(w), rt

    def _logaddexp(self, other, op: str, log1p_exp):
        a, b, rt = self._pair(other, op)
        m = a.maximum(b)
        out = m + log1p_exp(-(a - b).abs())
        return out.where((a != b) | a.isfinite(), a)._cast(rt)  # equal infinities: the infinity itself

    def logaddexp(self, other):
        """``log(exp(self) + exp(other))``, computed without overflow."""
        return self._logaddexp(other, "logaddexp", lambda x: x.exp().log1p())

    def logaddexp2(self, other):
        """``log2(2**self + 2**other)``, computed without overflow."""
        return self._logaddexp(other, "logaddexp2", lambda x: x.exp2().log1p() * (1 / math.log(2)))

    def hypot(self, other):
        """``sqrt(self**2 + other**2)`` without overflow (infinite if either is, even with a NaN)."""
        a, b, rt = self._pair(other, "hypot")
        a, b = a.abs(), b.abs()
        big, small = a.maximum(b), a.minimum(b)
        safe = big.where(big != 0, 1)
        r = small / safe
        out = (big * (r * r + 1).sqrt()).where(big != 0, 0)
        inf = a.isinf() | b.isinf()
        return out.where(inf.logical_not(), math.inf)._cast(rt)

    def xlogy(self, other):
        """``self * log(other)``, 0 where ``self`` is 0 (unless ``other`` is NaN); ints give floats."""
        from .elementwise import xlogy_of

        return xlogy_of(self, _operand(self, other, "xlogy", "other"))

    def fmax(self, other):
        """Elementwise maximum that ignores NaN (NaN only where both are)."""
        other = _tensor(self, other, "fmax", "other")
        _no_complex(self, "fmax")
        return self.where((self >= other) | other.isnan(), other)

    def fmin(self, other):
        """Elementwise minimum that ignores NaN (NaN only where both are)."""
        other = _tensor(self, other, "fmin", "other")
        _no_complex(self, "fmin")
        return self.where((self <= other) | other.isnan(), other)

    def copysign(self, other):
        """The magnitude of ``self`` with the sign of ``other`` (ints give floats; -0.0 counts negative)."""
        other = _operand(self, other, "copysign", "other")
        _no_complex(self, "copysign")
        if other.__class__ is TM.Tensor:
            _no_complex(other, "copysign")
        rt = D.float_for(_result_type(self, other))
        mag = self._cast(rt).abs()
        if other.__class__ is not TM.Tensor:
            return -mag if math.copysign(1.0, other) < 0 else mag
        out = (-mag).where(_signbit(other), mag)
        if _requires_grad(other):  # torch gives ``other`` a zero gradient
            out = out - other._cast(rt).masked_fill(_full(other, other.shape, True, D.bool_), 0)
        return out

    def signbit(self):
        """Whether each element's sign bit is set (-0.0 included)."""
        _no_complex(self, "signbit")
        return _signbit(self)

    def heaviside(self, values):
        """0 where ``self < 0``, 1 where ``self > 0``, ``values`` where ``self == 0`` (NaN gives 0)."""
        values = _tensor(self, values, "heaviside", "values")
        if self.dtype.is_complex or values.dtype.is_complex:
            raise TdxRuntimeError("heaviside is not yet implemented for complex tensors.")
        if self.dtype is not values.dtype:
            raise DtypeMismatchError(f"heaviside is not yet implemented for tensors with different dtypes "
                                     f"({self.dtype.name} and {values.dtype.name})")
        return (self > 0)._cast(self.dtype).where(self != 0, values)

    def _signed_inf(self, op: str, inf: float):
        if self.dtype.is_complex:
            raise TdxRuntimeError(f"{op} does not support complex inputs.")
        return self == inf if self.dtype.is_floating_point else _full(self, self.shape, False, D.bool_)

    def isposinf(self):
        """Whether each element is +inf."""
        return self._signed_inf("isposinf", math.inf)

    def isneginf(self):
        """Whether each element is -inf."""
        return self._signed_inf("isneginf", -math.inf)

    def _scaled(self, op: str, factor: float):
        if self.dtype.is_complex:
            raise TdxRuntimeError(f"{op} is not supported for complex tensors.")
        return self._cast(D.float_for(self.dtype)) * factor

    def deg2rad(self):
        """Degrees to radians (ints and bools give the default float dtype)."""
        return self._scaled("deg2rad", math.pi / 180)

    def rad2deg(self):
        """Radians to degrees (ints and bools give the default float dtype)."""
        return self._scaled("rad2deg", 180 / math.pi)

    def logit(self, eps=None):
        """``log(p / (1 - p))``; with ``eps`` >= 0, ``p`` is first held inside ``[eps, 1 - eps]``."""
        if self.dtype.is_complex:
            raise _not_implemented("logit", self.dtype, "real tensors")
        rt = D.float_for(self.dtype)
        p = self._cast(_work(rt))
        if eps is not None and eps >= 0:
            lo, hi = float(eps), 1.0 - float(eps)
            p = p.where((p > hi).logical_not(), hi).where((p < lo).logical_not(), lo)
        return (p / (1 - p)).log()._cast(rt)

    def float_power(self, exponent):
        """``self ** exponent`` computed in float64 (complex128 when either is complex)."""
        from .elementwise import float_power_of

        return float_power_of(self, _operand(self, exponent, "float_power", "exponent"))

    def float_power_(self, exponent):
        """In-place ``float_power``: self must already be float64 (or complex128)."""
        out = self.float_power(exponent)
        if out.dtype is not self.dtype:
            raise CastError(f"the base given to float_power_ has dtype {self.dtype.name} but the operation's "
                            f"result requires dtype {out.dtype.name}")
        return _write(self, out, "float_power_")

    def nan_to_num(self, nan=0.0, posinf=None, neginf=None):
        """NaN, +inf and -inf replaced by ``nan`` and the dtype's largest / lowest finite values (or the
        given ones); integer and bool tensors come back unchanged (a copy)."""
        d = self.dtype
        if not d.is_floating_point:
            if d.is_complex:
                raise UnsupportedOpError("nan_to_num() of complex tensors is not supported")
            return self.clone()
        big = _FMAX[d]  # given values as the dtype holds them (torch casts them; a kernel would refuse an overflow)
        out = self.where(self.isnan().logical_not(), 0.0 if nan is None else _saturated(nan, d))
        out = out.where(self != math.inf, big if posinf is None else _saturated(posinf, d))
        return out.where(self != -math.inf, -big if neginf is None else _saturated(neginf, d))

    def isclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
        """Elementwise ``|self - other| <= atol + rtol * |other|`` (or equal), with broadcasting."""
        other = _tensor(self, other, "isclose", "other")
        d = self.dtype
        if other.dtype is not d:
            raise DtypeMismatchError(f"isclose(): {d.name} did not match {other.dtype.name} (both tensors must "
                                     "have one dtype)")
        if d.is_complex and equal_nan:
            raise TdxRuntimeError("isclose with equal_nan=True is not supported for complex inputs.")
        rtol, atol = float(rtol), float(atol)
        if rtol < 0 or atol < 0:
            raise TdxRuntimeError(f"isclose(): rtol and atol must be >= 0, but got rtol={rtol}, atol={atol}")
        close = self == other
        if equal_nan and d.is_floating_point:
            close = close | (self.isnan() & other.isnan())
        if rtol == 0 and atol == 0:
            return close
        wide = d if _is_float(d) else D.get_default_dtype()  # ints compare in the default float dtype
        a, b = self._cast(wide), other._cast(wide)
        actual = (a - b).abs()
        return close | (actual.isfinite() & (actual <= (b * rtol).abs() + atol))

    def allclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False) -> bool:
        """Whether every element pair is close (``isclose``), as a Python bool."""
        return bool(self.isclose(other, rtol, atol, equal_nan).all().item())

    def equal(self, other) -> bool:
        """Whether both tensors have one shape and equal elements (NaN is never equal), as a Python bool."""
        other = _tensor(self, other, "equal", "other")
        return self.shape == other.shape and bool((self == other).all().item())

    def clamp_min(self, min):  # noqa: A002 - torch's name
        """Elementwise ``max(self, min)`` (a number or a broadcastable tensor)."""
        return self.clamp(min=_operand(self, min, "clamp_min", "min"))

    def clamp_max(self, max):  # noqa: A002 - torch's name
        """Elementwise ``min(self, max)`` (a number or a broadcastable tensor)."""
        return self.clamp(max=_operand(self, max, "clamp_max", "max"))


for _name in UNARY:
    setattr(ElementwiseMethods, _name, _unary(_name))
for _name, _torch_name in BINARY.items():
    setattr(ElementwiseMethods, _torch_name, _binary(_name, _torch_name))
for _name, _fn in list(vars(ElementwiseMethods).items()):
    if callable(_fn) and not _name.startswith("_") and not getattr(_fn, "_typed", False):
        setattr(ElementwiseMethods, _name, typed_errors(_fn))
for _alias, _target in ALIASES.items():
    setattr(ElementwiseMethods, _alias, getattr(ElementwiseMethods, _target))
attach(ElementwiseMethods)
Tensor.__neg__ = ElementwiseMethods.neg  # torch's ``-x`` is ``x.neg()``: the per-op path, one frame (rotary embeddings)


@_export(record=True)
def xlogy(input, other):  # noqa: A002 - torch's name
    """``input * log(other)``, 0 where ``input`` is 0 (unless ``other`` is NaN); either may be a number."""
    if isinstance(input, Tensor):
        return input.xlogy(other)
    need_tensor(other, "xlogy", "other")
    return xlogy_of(_operand(other, input, "xlogy", "input"), other)


@_export(record=True)
def float_power(input, exponent):  # noqa: A002 - torch's name
    """``input ** exponent`` computed in float64 (complex128 if either is complex); either may be a number."""
    if isinstance(input, Tensor):
        return input.float_power(exponent)
    need_tensor(exponent, "float_power", "exponent")
    return float_power_of(_operand(exponent, input, "float_power", "input"), exponent)


def xlogy_of(x, y):
    """``x * log(y)`` (0 where ``x == 0`` unless ``y`` is NaN); either may be a Python number."""
    ref = x if x.__class__ is Tensor else y
    for v in (x, y):
        if v.__class__ is Tensor:
            _no_complex(v, "xlogy")
    rt = D.float_for(_result_type(x, y))
    w = _work(rt)
    xs = x._cast(w) if x.__class__ is Tensor else _full(ref, (), x, w)
    ys = y._cast(w) if y.__class__ is Tensor else _full(ref, (), y, w)
    safe = ys.log().where(((xs == 0) & ((ys <= 0) | (ys == math.inf))).logical_not(), 0)
    return (xs * safe)._cast(rt)


def float_power_of(x, y):
    """``x ** y`` in float64 (complex128 when either is complex); either may be a Python number."""
    def wide(v):
        if v.__class__ is Tensor:
            return v.dtype.is_complex
        return isinstance(v, complex)

    rt = D.complex128 if wide(x) or wide(y) else D.float64
    if x.__class__ is Tensor:
        return x._cast(rt).pow(y._cast(rt) if y.__class__ is Tensor else y)
    ref = y._cast(rt)
    return _full(ref, (), x, rt).pow(ref)


_round_plain = Tensor.round


def _round(self, *, decimals=0):
    """Round half to even, to ``decimals`` decimal places (negative: to tens, hundreds...)."""
    if decimals == 0:
        return _round_plain(self)
    if not (self.dtype.is_floating_point or self.dtype.is_complex):
        raise _not_implemented("round", self.dtype)
    if decimals > 0:
        scale = 10.0 ** decimals
        return (self * scale).round() / scale
    scale = 10.0 ** -decimals
    return (self / scale).round() * scale


Tensor.round = typed_errors(_round)


@_export
def round(input, *, decimals=0):  # noqa: A001 - torch's name
    """``input`` rounded half to even, to ``decimals`` decimal places."""
    return need_tensor(input, "round").round(decimals=decimals)
