"""torch-semantics ops over MLX arrays: elementwise math, reductions, shapes, indexing.

A mixin of :class:`tdx.backends.mlx_executor.MLXExecutor`: methods take and return MLX
arrays and rely on ``self.s`` (the stream), ``self._nd`` and ``self._from_native``.
Promotion follows ``tdx._dtypes``; dims are checked as torch checks them. It must never
import torch.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import mlx.core as mx

from . import mlx_f64
from .. import _dtypes as D
from ..autograd.tape import differentiating
from .base import norm_dim
from .._errors import (DtypeMismatchError, OpDtypeError, ShapeError, TdxIndexError,
                       TdxNotImplementedError, TdxRuntimeError, TdxTypeError, TdxValueError)

_SCALARS = (bool, int, float, complex)
_INTS = frozenset((mx.bool_, mx.uint8, mx.int8, mx.int16, mx.int32, mx.int64))
_FLOATS = frozenset((mx.float16, mx.bfloat16, mx.float32, mx.float64))


def _is_bool(v) -> bool:
    return v.dtype == mx.bool_ if isinstance(v, mx.array) else isinstance(v, bool)


def gathered(x, out):
    """``out``, gathered from ``x``, as a constant when ``x`` is empty: MLX's gradient of a
    gather from an empty array divides by zero and kills the process (SIGFPE)."""
    return mx.zeros(out.shape, out.dtype) if x.size == 0 else out


def _unbroadcast(g, shape):
    """Sum the gradient ``g`` (of a broadcast result) down to an operand's ``shape``."""
    if g.shape == shape:
        return g
    lead = g.ndim - len(shape)
    axes = [*range(lead), *(lead + i for i, s in enumerate(shape) if s == 1 and g.shape[lead + i] != 1)]
    return mx.sum(g, axis=axes, keepdims=True).reshape(shape) if axes else g.reshape(shape)


@functools.lru_cache(maxsize=None)
def _tie_splitting(name, stream):
    """``mx.maximum``/``mx.minimum`` on ``stream`` with torch's gradient: half to each operand on a tie.

    MLX gives a tie's whole gradient to the second operand; torch splits it, and gives a NaN
    comparison's gradient to both.
    """
    pick = getattr(mx, name)
    loses_a, loses_b = (mx.less, mx.greater) if name == "maximum" else (mx.greater, mx.less)

    @mx.custom_function
    def op(a, b):
        return pick(a, b, stream=stream)

    @op.vjp
    def op_vjp(primals, cotangent, output):
        a, b = primals
        with mx.stream(stream):
            half = mx.where(mx.equal(a, b), cotangent * 0.5, cotangent)
            return (_unbroadcast(mx.where(loses_a(a, b), 0, half), a.shape),
                    _unbroadcast(mx.where(loses_b(a, b), 0, half), b.shape))

    return op


@functools.lru_cache(maxsize=None)
def _where_exact(stream):
    """where(cond, a, b) on ``stream`` whose derivative selects the cotangent (MLX's multiplies
    it by the mask, so an infinite cotangent gives NaN in the branch not taken)."""
    @mx.custom_function
    def op(cond, a, b):
        return mx.where(cond, a, b, stream=stream)

    @op.vjp
    def op_vjp(primals, cotangent, output):
        cond, a, b = primals
        with mx.stream(stream):
            zero = mx.zeros_like(cotangent)
            return (mx.zeros(cond.shape, cond.dtype), _unbroadcast(mx.where(cond, cotangent, zero), a.shape),
                    _unbroadcast(mx.where(cond, zero, cotangent), b.shape))

    return op


@functools.lru_cache(maxsize=None)
def _clamp_exact(has_min: bool, has_max: bool, stream):
    """clamp(x, lo, hi) on ``stream`` with torch's derivative: x's gradient where lo <= x <= hi,
    lo's where x < lo < hi, hi's where x > hi or hi < lo (NaN compares false: no gradient)."""
    @mx.custom_function
    def op(x, lo, hi):
        out = mx.maximum(x, lo, stream=stream) if has_min else x
        return mx.minimum(out, hi, stream=stream) if has_max else out

    @op.vjp
    def op_vjp(primals, cotangent, output):
        x, lo, hi = primals
        with mx.stream(stream):
            if has_min and has_max:
                keep_x = mx.logical_and(x >= lo, x <= hi)
                to_lo = mx.logical_and(x < lo, lo < hi)
                to_hi = mx.logical_or(x > hi, hi < lo)
            elif has_min:
                keep_x, to_lo, to_hi = x >= lo, x < lo, None
            else:
                keep_x, to_lo, to_hi = x <= hi, None, x > hi

            def share(mask, like):
                if mask is None:
                    return mx.zeros_like(like)
                return _unbroadcast(mx.where(mask, cotangent, 0), like.shape)

            return share(keep_x, x), share(to_lo, lo), share(to_hi, hi)

    return op


def _dims(dim, ndim):
    """torch's ``dim`` argument (None, (), int, sequence) as an MLX axis list or None (all)."""
    if dim is None:
        return None
    dims = [norm_dim(d, ndim) for d in ((dim,) if isinstance(dim, int) else dim)]
    if len(set(dims)) != len(dims):
        raise ShapeError(f"dim {dims} appears multiple times in the list of dims")
    return dims or None if ndim else None


def _kw(x, dim, keepdim) -> dict:
    """MLX reduction keywords for torch's ``dim``/``keepdim`` (0-d inputs reduce to themselves)."""
    axes = _dims(dim, x.ndim)
    return {"axis": axes, "keepdims": keepdim} if x.ndim else {}


def _reduced_shape(shape, axes, keepdim) -> tuple:
    axes = range(len(shape)) if axes is None else axes
    if keepdim:
        return tuple(1 if i in axes else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i not in axes)


class MLXOps:
    """Ops with torch's semantics, mixed into the MLX executor."""

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
        if type(a) is mx.array and (b.__class__ is float or b.__class__ is int) and a.dtype in _FLOATS:
            return a, b, self._from_native[a.dtype]
        return self._args(a, b)

    # binary arithmetic ----------------------------------------------------------------
    def add(self, a, b):
        a, b, _ = self._pair(a, b)
        return mx.add(a, b, stream=self.s)

    def sub(self, a, b):
        if _is_bool(a) or _is_bool(b):
            raise OpDtypeError("Subtraction, the `-` operator, with a bool tensor is not supported. "
                               "If you are trying to invert a mask, use the `~` or `logical_not()` "
                               "operator instead.")
        a, b, _ = self._pair(a, b)
        return mx.subtract(a, b, stream=self.s)

    def mul(self, a, b):
        a, b, _ = self._pair(a, b)
        return mx.multiply(a, b, stream=self.s)

    def truediv(self, a, b):
        rt = D.float_for(self._promote(a, b))
        return mx.divide(self._cast(a, rt), self._cast(b, rt), stream=self.s)

    def floordiv(self, a, b):
        a, b, rt = self._args(a, b)
        if rt is D.bool_:
            raise OpDtypeError("\"div_floor\" not implemented for 'Bool'")
        return mx.floor_divide(a, b, stream=self.s)

    def remainder(self, a, b):
        a, b, rt = self._args(a, b)
        if rt is D.bool_:
            raise OpDtypeError("\"remainder\" not implemented for 'Bool'")
        return mx.remainder(a, b, stream=self.s)

    def pow(self, a, b):
        if isinstance(a, mx.array) and isinstance(b, mx.array) and _is_bool(a) and _is_bool(b):
            raise OpDtypeError("\"pow\" not implemented for 'Bool'")
        negative_scalar = isinstance(b, int) and b < 0  # checked before the cast wraps it (uint8)
        a, b, rt = self._args(a, b)
        if rt is D.bool_:
            return mx.power(a.astype(mx.int32), b.astype(mx.int32), stream=self.s).astype(mx.bool_)
        if D.is_integral(rt, include_bool=True) and (negative_scalar or bool(mx.any(b < 0))):
            raise TdxRuntimeError("Integers to negative integer powers are not allowed.")
        return mx.power(a, b, stream=self.s)

    def matmul(self, a, b):
        if not (isinstance(a, mx.array) and isinstance(b, mx.array)):
            raise TdxTypeError("matmul: both arguments must be tensors")
        if a.ndim == 0 or b.ndim == 0:
            raise ShapeError(f"both arguments to matmul need to be at least 1D, but they are "
                             f"{a.ndim}D and {b.ndim}D")
        if a.dtype != b.dtype:
            raise DtypeMismatchError(f"expected m1 and m2 to have the same dtype, but got: "
                                     f"{self._tdx(a).name} != {self._tdx(b).name}")
        ka, kb = a.shape[-1], b.shape[-2] if b.ndim > 1 else b.shape[0]
        if ka != kb:
            raise ShapeError(f"mat1 and mat2 shapes cannot be multiplied ({a.shape} and {b.shape})")
        if a.dtype in _INTS:
            if a.dtype == mx.bool_ and not (a.size == 0 or b.size == 0):  # torch's empty products pass
                raise OpDtypeError("\"addmm\" not implemented for 'Bool'")
            out = np.matmul(np.array(a), np.array(b))
            return mx.array(out).astype(a.dtype, stream=self.s)
        return mx.matmul(a, b, stream=self.s)

    def _compare(self, fn, a, b):
        a, b, _ = self._pair(a, b)
        return fn(a, b, stream=self.s)

    def eq(self, a, b):
        return self._compare(mx.equal, a, b)

    def ne(self, a, b):
        return self._compare(mx.not_equal, a, b)

    def _order(self, fn, name, a, b):
        a, b, rt = self._pair(a, b)
        if rt.is_complex:  # MLX would order complex numbers lexicographically
            raise TdxNotImplementedError(_complex_refused(name))
        return fn(a, b, stream=self.s)

    def lt(self, a, b):
        return self._order(mx.less, "lt", a, b)

    def le(self, a, b):
        return self._order(mx.less_equal, "le", a, b)

    def gt(self, a, b):
        return self._order(mx.greater, "gt", a, b)

    def ge(self, a, b):
        return self._order(mx.greater_equal, "ge", a, b)

    def _bitwise(self, fn, name, a, b):
        a, b, rt = self._args(a, b)
        if not D.is_integral(rt, include_bool=True):
            raise OpDtypeError(f"\"{name}\" not implemented for '{rt.name}'")
        return fn(a, b, stream=self.s)

    def and_(self, a, b):
        return self._bitwise(mx.bitwise_and, "bitwise_and", a, b)

    def or_(self, a, b):
        return self._bitwise(mx.bitwise_or, "bitwise_or", a, b)

    def xor(self, a, b):
        return self._bitwise(mx.bitwise_xor, "bitwise_xor", a, b)

    def lshift(self, a, b):
        return self._bitwise(mx.left_shift, "lshift", a, b)

    def rshift(self, a, b):
        return self._bitwise(mx.right_shift, "rshift", a, b)

    def maximum(self, a, b):
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
        return mx.negative(x, stream=self.s)

    def _not_bool(self, x, op):
        if x.dtype == mx.bool_:
            raise OpDtypeError(f"\"{op}\" not implemented for 'Bool'")

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
        return mx.sigmoid(x, stream=self.s)

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

    def rsqrt(self, x):
        return mx.rsqrt(self._float_in(x), stream=self.s)

    def logical_not(self, x):
        return mx.logical_not(x.astype(mx.bool_) if x.dtype != mx.bool_ else x, stream=self.s)

    def bitwise_not(self, x):
        if x.dtype == mx.bool_:
            return mx.logical_not(x, stream=self.s)
        if x.dtype not in _INTS:
            raise OpDtypeError(f"\"bitwise_not_cpu\" not implemented for '{self._tdx(x).name}'")
        return mx.bitwise_invert(x, stream=self.s)

    def isnan(self, x):
        return mx.isnan(x, stream=self.s) if x.dtype not in _INTS else mx.zeros(x.shape, mx.bool_)

    def isinf(self, x):
        return mx.isinf(x, stream=self.s) if x.dtype not in _INTS else mx.zeros(x.shape, mx.bool_)

    def isfinite(self, x):
        return mx.isfinite(x, stream=self.s) if x.dtype not in _INTS else mx.ones(x.shape, mx.bool_)

    # reductions -----------------------------------------------------------------------
    def _acc(self, x, dtype):
        if dtype is not None:
            return self._cast(x, D.as_dtype(dtype))
        return x.astype(mx.int64, stream=self.s) if x.dtype in _INTS else x

    def _reduce(self, fn, identity, x, dim, keepdim):
        """``fn`` over ``dim``; empty inputs give ``identity`` (MLX mishandles empty reductions)."""
        kw = _kw(x, dim, keepdim)
        if x.size == 0:
            return mx.full(_reduced_shape(x.shape, kw["axis"], keepdim), identity, x.dtype, stream=self.s)
        return fn(x, **kw, stream=self.s)

    def sum(self, x, dim=None, keepdim=False, dtype=None):
        return self._reduce(mx.sum, 0, self._acc(x, dtype), dim, keepdim)

    def prod(self, x, dim=None, keepdim=False, dtype=None):
        if dim is not None and not isinstance(dim, int):
            raise TdxTypeError(f"prod(): argument 'dim' (position 1) must be int, not {type(dim).__name__}")
        return self._reduce(mx.prod, 1, self._acc(x, dtype), dim, keepdim)

    def _need_float(self, x, op):
        if x.dtype in _INTS:
            raise OpDtypeError(f"{op}(): could not infer output dtype. Input dtype must be either a "
                               f"floating point or complex dtype. Got: {self._tdx(x).name}")

    def mean(self, x, dim=None, keepdim=False, dtype=None):
        if dtype is None:
            self._need_float(x, "mean")
        x = self._acc(x, dtype)
        if x.size == 0:  # MLX's mean of an empty array may never return; torch gives NaN
            return self._empty_nan(x, dim, keepdim)
        return mx.mean(x, **_kw(x, dim, keepdim), stream=self.s)

    def var(self, x, dim=None, correction=1, keepdim=False):
        self._need_float(x, "var")
        if x.size == 0:  # as mean: avoid MLX's empty reduction, torch gives NaN
            return self._empty_nan(x, dim, keepdim)
        return mx.var(x, **_kw(x, dim, keepdim), ddof=correction, stream=self.s)

    def _empty_nan(self, x, dim, keepdim):
        shape = _reduced_shape(x.shape, _dims(dim, x.ndim), keepdim) if x.ndim else ()
        return mx.full(shape, float("nan"), x.dtype, stream=self.s)

    def std(self, x, dim=None, correction=1, keepdim=False):
        self._need_float(x, "std")
        return mx.sqrt(self.var(x, dim, correction, keepdim), stream=self.s)

    def _nonempty(self, x, dim, op):
        if x.size:
            return
        axes = _dims(dim, x.ndim)
        if axes is None:
            raise TdxRuntimeError(f"{op}(): Expected reduction dim to be specified for input.numel() == 0. "
                                  "Specify the reduction dim with the 'dim' argument.")
        for a in axes:
            if x.shape[a] == 0:
                raise TdxIndexError(f"{op}(): Expected reduction dim {a} to have non-zero size.")

    def amax(self, x, dim=(), keepdim=False):
        self._nonempty(x, dim, "amax")
        return mx.max(x, **_kw(x, dim, keepdim), stream=self.s)

    def amin(self, x, dim=(), keepdim=False):
        self._nonempty(x, dim, "amin")
        return mx.min(x, **_kw(x, dim, keepdim), stream=self.s)

    def _arg(self, fn, op, x, dim, keepdim):
        if x.dtype == mx.bool_ and op.startswith("arg"):
            raise OpDtypeError(f"{op}(): does not support bool input")
        self._nonempty(x, dim, op)
        if x.ndim == 0:
            norm_dim(dim if dim is not None else 0, 0)
            return mx.zeros((), mx.int64)
        x = mx.stop_gradient(x, stream=self.s)  # indices are constants to autodiff
        if x.size == 0:  # an empty result (MLX's arg-reductions refuse empty input)
            return mx.zeros(_reduced_shape(x.shape, [norm_dim(dim, x.ndim)], keepdim), mx.int64)
        if dim is None:
            out = fn(mx.reshape(x, (-1,), stream=self.s), stream=self.s)
            if keepdim:
                out = mx.reshape(out, (1,) * x.ndim, stream=self.s)
        else:
            out = fn(x, axis=norm_dim(dim, x.ndim), keepdims=keepdim, stream=self.s)
        return out.astype(mx.int64, stream=self.s)

    def argmax(self, x, dim=None, keepdim=False):
        return self._arg(mx.argmax, "argmax", x, dim, keepdim)

    def argmin(self, x, dim=None, keepdim=False):
        return self._arg(mx.argmin, "argmin", x, dim, keepdim)

    def _at(self, x, idx, dim, keepdim):
        """The values of ``x`` at ``idx`` along ``dim``: torch routes max/min(dim)'s gradient
        to the chosen element only (amax splits it between ties)."""
        if x.ndim == 0:
            return x
        d = norm_dim(dim, x.ndim)
        idx = idx if keepdim else mx.expand_dims(idx, d, stream=self.s)
        out = mx.take_along_axis(x, idx, axis=d, stream=self.s)
        return out if keepdim else mx.squeeze(out, d, stream=self.s)

    def max_dim(self, x, dim, keepdim=False):
        idx = self._arg(mx.argmax, "max", x, dim, keepdim)
        return self._at(x, idx, dim, keepdim), idx

    def min_dim(self, x, dim, keepdim=False):
        idx = self._arg(mx.argmin, "min", x, dim, keepdim)
        return self._at(x, idx, dim, keepdim), idx

    def _logical_reduce(self, fn, identity, x, dim, keepdim):
        out = self._reduce(fn, identity, x.astype(mx.bool_, stream=self.s), dim, keepdim)
        return out.astype(mx.uint8, stream=self.s) if x.dtype == mx.uint8 else out  # torch keeps uint8

    def all(self, x, dim=None, keepdim=False):
        return self._logical_reduce(mx.all, True, x, dim, keepdim)

    def any(self, x, dim=None, keepdim=False):
        return self._logical_reduce(mx.any, False, x, dim, keepdim)

    # shapes ---------------------------------------------------------------------------
    def reshape(self, x, shape):
        shape = tuple(shape)
        known = math.prod(s for s in shape if s != -1)
        if shape.count(-1) > 1:
            raise ShapeError("only one dimension can be inferred")
        if (-1 in shape and (known == 0 or x.size % known)) or (-1 not in shape and known != x.size):
            raise ShapeError(f"shape '{list(shape)}' is invalid for input of size {x.size}")
        if -1 in shape:
            shape = tuple(x.size // known if s == -1 else s for s in shape)
        return mx.reshape(x, shape, stream=self.s)

    view = reshape

    def permute(self, x, dims):
        dims = [norm_dim(d, x.ndim) for d in dims]
        if sorted(dims) != list(range(x.ndim)):
            raise ShapeError(f"permute(): dims {list(dims)} are not a permutation of the "
                             f"{x.ndim} dims of the input")
        return mx.transpose(x, dims, stream=self.s)

    def transpose(self, x, dim0, dim1):
        if x.ndim < 2:
            norm_dim(dim0, x.ndim), norm_dim(dim1, x.ndim)
            return x
        axes = list(range(x.ndim))
        a, b = norm_dim(dim0, x.ndim), norm_dim(dim1, x.ndim)
        axes[a], axes[b] = axes[b], axes[a]
        return mx.transpose(x, axes, stream=self.s)

    def unsqueeze(self, x, dim):
        return mx.expand_dims(x, norm_dim(dim, x.ndim + 1), stream=self.s)

    def squeeze(self, x, dim=None):
        if dim is None:
            axes = [i for i, s in enumerate(x.shape) if s == 1]
        else:
            dims = [dim] if isinstance(dim, int) else list(dim)
            axes = [d for d in (norm_dim(d, x.ndim) for d in dims) if x.ndim and x.shape[d] == 1]
        return mx.squeeze(x, axes, stream=self.s) if axes else x

    def flatten(self, x, start_dim=0, end_dim=-1):
        if x.ndim == 0:
            return mx.reshape(x, (1,), stream=self.s)
        a, b = norm_dim(start_dim, x.ndim), norm_dim(end_dim, x.ndim)
        if a > b:
            raise ShapeError("flatten() has invalid args: start_dim cannot come after end_dim")
        shape = [*x.shape[:a], math.prod(x.shape[a:b + 1]), *x.shape[b + 1:]]
        return mx.reshape(x, shape, stream=self.s)

    def expand(self, x, shape):
        shape = list(shape)
        if len(shape) < x.ndim:
            raise ShapeError(f"expand: the number of sizes provided ({len(shape)}) must be greater or "
                             f"equal to the number of dimensions in the tensor ({x.ndim})")
        lead = len(shape) - x.ndim
        for i, have in enumerate(x.shape):
            want = shape[lead + i]
            if want == -1:
                shape[lead + i] = have
            elif have != 1 and want != have:
                raise ShapeError(f"The expanded size of the tensor ({want}) must match the existing size "
                                 f"({have}) at non-singleton dimension {lead + i}.  Target sizes: "
                                 f"{list(shape)}.  Tensor sizes: {list(x.shape)}")
        if any(s < 0 for s in shape):
            raise ShapeError(f"expand: -1 is not allowed in a leading, non-existing dimension: {shape}")
        return mx.broadcast_to(x, shape, stream=self.s)

    def contiguous(self, x):
        return x

    def _same_dtype(self, xs):
        rt = D.result_type([self._tdx(x) for x in xs])
        return [self._cast(x, rt) for x in xs]

    def cat(self, xs, dim=0):
        xs = self._same_dtype(xs)  # before dropping empty 1-D inputs: they still promote
        xs = [x for x in xs if not (x.ndim == 1 and x.size == 0)] or xs[:1]
        ref = xs[0]
        d = norm_dim(dim, ref.ndim)
        for i, x in enumerate(xs):
            if x.ndim != ref.ndim or any(a != b for j, (a, b) in enumerate(zip(x.shape, ref.shape)) if j != d):
                raise ShapeError(f"Sizes of tensors must match except in dimension {d}. Expected "
                                 f"{list(ref.shape)} but got {list(x.shape)} for tensor number {i} in the list.")
        return mx.concatenate(xs, axis=d, stream=self.s)

    def stack(self, xs, dim=0):
        ref = xs[0]
        for i, x in enumerate(xs):
            if x.shape != ref.shape:
                raise ShapeError(f"stack expects each tensor to be equal size, but got {list(ref.shape)} "
                                 f"at entry 0 and {list(x.shape)} at entry {i}")
        return mx.stack(self._same_dtype(xs), axis=norm_dim(dim, ref.ndim + 1), stream=self.s)

    def split(self, x, sizes, dim=0):
        d = norm_dim(dim, x.ndim)
        if sum(sizes) != x.shape[d]:
            raise ShapeError(f"split_with_sizes expects split_sizes to sum exactly to {x.shape[d]} "
                             f"(input tensor's size at dimension {d}), but got split_sizes={list(sizes)}")
        cuts = list(np.cumsum(sizes)[:-1])
        return tuple(mx.split(x, [int(c) for c in cuts], axis=d, stream=self.s)) if cuts else (x,)

    # indexing -------------------------------------------------------------------------
    def _index(self, x, index):
        """Turn a torch-style index into one MLX accepts, checking bounds as torch does."""
        items = index if isinstance(index, tuple) else (index,)
        out, dim = [], 0
        consumed = sum(it.ndim if isinstance(it, mx.array) and it.dtype == mx.bool_ else
                       0 if it is None or it is Ellipsis or isinstance(it, bool) else 1 for it in items)
        for it in items:
            if it is None or it is True:
                out.append(None)
                continue
            if it is Ellipsis:
                out.append(it)
                dim += x.ndim - consumed
                continue
            if isinstance(it, list):
                it = mx.array(np.asarray(it)) if it else mx.array([], dtype=mx.int64)
            if isinstance(it, np.ndarray):
                it = mx.array(it)
            if it is False:
                raise TdxIndexError("indexing with a False scalar is not supported on MLX")
            if isinstance(it, int):
                size = x.shape[dim] if dim < x.ndim else None
                if size is None:
                    raise TdxIndexError(f"too many indices for tensor of dimension {x.ndim}")
                if not -size <= it < size:
                    raise TdxIndexError(f"index {it} is out of bounds for dimension {dim} with size {size}")
                out.append(it)
                dim += 1
            elif isinstance(it, slice):
                if it.step is not None and it.step <= 0:
                    raise TdxValueError("step must be greater than zero")
                out.append(it)
                dim += 1
            elif isinstance(it, mx.array):
                if it.dtype == mx.bool_:
                    k = max(it.ndim, 1)
                    if it.ndim and tuple(it.shape) != tuple(x.shape[dim:dim + it.ndim]):
                        raise TdxIndexError(f"The shape of the mask {list(it.shape)} at index {dim} does "
                                            f"not match the shape of the indexed tensor {list(x.shape)}")
                    if it.ndim == 0:
                        raise TdxIndexError("indexing with a 0-d bool tensor is not supported on MLX")
                    nz = np.nonzero(np.array(it))
                    out.extend(mx.array(n.astype(np.int64)) for n in nz)
                    dim += k
                else:
                    if it.dtype not in _INTS:
                        raise TdxIndexError("tensors used as indices must be long, int, byte or bool tensors")
                    size = x.shape[dim] if dim < x.ndim else 0
                    if it.size:
                        lo, hi = int(mx.min(it).item()), int(mx.max(it).item())
                        if lo < -size or hi >= size:
                            bad = hi if hi >= size else lo
                            raise TdxIndexError(f"index {bad} is out of bounds for dimension {dim} with size {size}")
                    out.append(it)
                    dim += 1
            else:
                raise TdxIndexError(f"only integers, slices (`:`), ellipsis (`...`), None and long or byte "
                                    f"Variables are valid indices (got {type(it).__name__})")
        if dim > x.ndim:
            raise TdxIndexError(f"too many indices for tensor of dimension {x.ndim}")
        return tuple(out)

    def getitem(self, x, index):
        if index.__class__ is int and x.ndim and -x.shape[0] <= index < x.shape[0]:
            return x[index]  # the common case, checked here in full
        return gathered(x, x[self._index(x, index)])

    def setitem(self, x, index, value):
        """``x`` with ``x[index] = value`` applied, as a new array (``x`` itself is never mutated)."""
        if isinstance(index, mx.array) and index.dtype == mx.bool_ and tuple(index.shape) == tuple(x.shape):
            return mx.where(index, self._cast(value, self._tdx(x)), x, stream=self.s)
        out = mx.array(x)
        out[self._index(x, index)] = self._cast(value, self._tdx(x))
        return out


_FLOAT_UNARY = {"exp": mx.exp, "expm1": mx.expm1, "log": mx.log, "log2": mx.log2, "log10": mx.log10,
                "log1p": mx.log1p, "sqrt": mx.sqrt, "sin": mx.sin, "cos": mx.cos, "tan": mx.tan,
                "asin": mx.arcsin, "acos": mx.arccos, "atan": mx.arctan, "sinh": mx.sinh,
                "cosh": mx.cosh, "tanh": mx.tanh, "erf": mx.erf,
                "reciprocal": mx.reciprocal}


def _float_unary(fn):
    def op(self, x):
        return fn(self._float_in(x), stream=self.s)

    op.__name__ = fn.__name__
    return op


def _float_unary_f64(fn, name):
    """As :func:`_float_unary`, with float64 computed by :mod:`tdx.backends.mlx_f64` (MLX's own
    value or derivative is float32-accurate)."""
    def op(self, x):
        x = self._float_in(x)
        if x.dtype == mx.float64:
            return mlx_f64.functions(self.s)[name](x)
        return fn(x, stream=self.s)

    op.__name__ = fn.__name__
    return op


for _name, _fn in _FLOAT_UNARY.items():
    setattr(MLXOps, _name, _float_unary(_fn))
for _name in mlx_f64.NAMES:
    if _name in _FLOAT_UNARY:
        setattr(MLXOps, _name, _float_unary_f64(_FLOAT_UNARY[_name], _name))

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


for _name, _kind in _NOT_FOR_COMPLEX.items():
    setattr(MLXOps, _name, _real_only(_name, _kind, getattr(MLXOps, _name)))
MLXOps.sign = _real_only("sign", TdxNotImplementedError, MLXOps.sign)  # torch.sgn is the complex one
