"""MLX reductions and scans with torch's semantics: sums, means, moments, extremes, ``norm``,
``softmax``/``logsumexp`` and the cumulative ops.

Every op names its stream (``self.s``), follows torch's promotion and checks, and raises typed errors.
Must never import torch or the facade.
"""

from __future__ import annotations

import math

import mlx.core as mx

from ... import _dtypes as D
from ..._errors import OpDtypeError, TdxIndexError, TdxRuntimeError, TdxTypeError
from ...autograd.tape import differentiating
from ..base import norm_dim
from . import _float64 as mlx_f64
from . import _product_order as product_order
from . import _summation_order as summation
from . import _torch_order as torch_order
from ._indexing import on_stream, scalar_name
from ._memory import check_alloc
from ._value_bounds import KNOWN, carry as carry_bounds, note as note_bounds
from ._rules import _HALF, _INTS, _axes, _dims, _kw, _out_shape, _reduced_shape


_F32 = mx.float32

# torch's CPU accumulation type where it is wider than the dtype (the others accumulate in their own)
_WIDER = {mx.float16: mx.float32, mx.bfloat16: mx.float32, mx.bool_: mx.int64, mx.uint8: mx.int64,
          mx.int8: mx.int64, mx.int16: mx.int64, mx.int32: mx.int64}


_KEPT_DIVISOR = 256  # mean's divisor is kept as an array of the result's shape up to this many elements


def _wide(x, s):
    """``x`` in torch's CPU accumulation type: float16/bfloat16 in float32, narrow ints in int64
    (whose wrap-around, cast back, is the narrow type's own); other dtypes as they are."""
    wider = _WIDER.get(x.dtype)
    return x if wider is None else x.astype(wider, stream=s)


def _narrowed(out, dtype, s):
    """``out`` (computed by :func:`_wide`) rounded or wrapped back once to the reduction's ``dtype``."""
    return out if out.dtype is dtype or out.dtype == dtype else out.astype(dtype, stream=s)


@on_stream
class MLXReductionOpsStreamed:
    """The ops of this family that run with ``self.s`` as MLX's default stream (operators and
    ``.at[]`` updates take no ``stream=``)."""

    __slots__ = ()

    # reductions and scans -------------------------------------------------------------------
    def _floating(self, x, dtype=None):
        """``x`` cast to ``dtype`` if given, else ints and bools to the default float."""
        if dtype is not None:
            return self._cast(x, D.as_dtype(dtype))
        return self._float_in(x)

    def logsumexp(self, x, dim, keepdim=False):
        x = self._floating(x)
        axes = _axes(dim, x.ndim) if x.ndim else None
        if x.ndim == 0:
            return x
        if x.size == 0:
            shape = _out_shape(x.shape, axes, keepdim)
            return mx.full(shape, -math.inf, x.dtype, stream=self.s)
        wide = x.astype(mx.float32, stream=self.s) if x.dtype in _HALF else x
        if x.dtype == mx.float64:  # MLX's float64 exp is float32-accurate
            top = mx.stop_gradient(mx.max(x, axis=axes, keepdims=True, stream=self.s), stream=self.s)
            top = mx.where(mx.isinf(top, stream=self.s), 0.0, top, stream=self.s)
            total = mx.sum(mlx_f64.exp(mx.subtract(x, top, stream=self.s), self.s), axis=axes, keepdims=True,
                           stream=self.s)
            out = mx.add(mx.log(total, stream=self.s), top, stream=self.s)
            return out if keepdim else mx.squeeze(out, axes if axes is not None else None, stream=self.s)
        out = mx.logsumexp(wide, axis=axes, keepdims=keepdim, stream=self.s)
        return out.astype(x.dtype, stream=self.s)

    def _scan(self, fn, x, dim, dtype):
        norm_dim(dim, x.ndim)
        x = self._acc(x, dtype)
        if x.ndim == 0 or x.size == 0:
            return mx.array(x)
        return _narrowed(fn(_wide(x, self.s), axis=norm_dim(dim, x.ndim), stream=self.s), x.dtype, self.s)

    def cumsum(self, x, dim, dtype=None):
        return self._scan(mx.cumsum, x, dim, dtype)

    def cumprod(self, x, dim, dtype=None):
        return self._scan(mx.cumprod, x, dim, dtype)

    def logcumsumexp(self, x, dim):
        """torch's running logsumexp along ``dim``, or NotImplemented for float64, where MLX's exp is
        float32-accurate (the facade composes it).

        A sequential scan accumulated in float64 where the executor has it, as torch's CPU kernel
        (its accumulator type): a float32 accumulator differs from it by an ulp of the running
        value, which torch's gradient formula (``exp(x + reverse scan)``) magnifies.
        """
        if x.dtype == mx.float64:
            return NotImplemented
        if x.ndim == 0 or x.size == 0:
            return mx.array(x)
        wide = x.astype(mx.float64, stream=self.s) if self.caps.float64 else x
        out = mx.logcumsumexp(wide, axis=norm_dim(dim, x.ndim), stream=self.s)
        return out.astype(x.dtype, stream=self.s)

    def norm(self, x, p="fro", dim=None, keepdim=False, dtype=None):
        if dtype is not None:
            x = self._cast(x, D.as_dtype(dtype))
        if x.dtype in _INTS:
            raise TdxRuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as input. "
                                  f"Got {scalar_name(self._tdx(x))}")
        axes = _axes(dim, x.ndim) if x.ndim else None
        if p == "nuc":
            if axes is None and x.ndim == 2:  # torch.norm(matrix, 'nuc'): the matrix norm over both dims
                axes = (0, 1)
            if axes is None or len(axes) != 2:
                raise TdxRuntimeError("linalg.matrix_norm: dim must be a 2-tuple. Got " + str(dim))
            if x.dtype in (mx.float32, mx.float64):  # differentiable: the sum of the SVD's singular values
                from . import _lapack

                d0, d1 = (a % x.ndim for a in axes)
                moved = mx.transpose(x, [d for d in range(x.ndim) if d not in (d0, d1)] + [d0, d1])
                out = mx.sum(_lapack.svd(moved)[1], axis=-1)
                for d in sorted((d0, d1)) if keepdim else ():
                    out = mx.expand_dims(out, d)
                return out
            out = mx.linalg.norm(x, "nuc", axis=axes, keepdims=keepdim, stream=mx.cpu)
            return out.astype(x.dtype if x.dtype != mx.complex64 else mx.float32, stream=self.s)
        if p == "fro":
            p = 2
        if isinstance(p, str):
            raise TdxRuntimeError(f"norm(): unsupported norm type {p!r}; accepted: 'fro', 'nuc' or a number")
        out_dtype = mx.float32 if x.dtype == mx.complex64 else x.dtype
        a = mx.abs(x, stream=self.s).astype(out_dtype, stream=self.s)
        if a.dtype in _HALF:
            a = a.astype(mx.float32, stream=self.s)
        kw = {"axis": axes, "keepdims": keepdim} if x.ndim else {}
        if a.size == 0 and (p < 0 or math.isinf(p)):  # no identity, as torch
            if axes is None or not x.ndim:
                raise TdxRuntimeError(f"linalg.vector_norm cannot compute the {p} norm on an empty tensor "
                                      "because the operation does not have an identity")
            for ax in axes:
                if x.shape[ax] == 0:
                    raise TdxRuntimeError(f"linalg.vector_norm cannot compute the {p} norm on the dimension "
                                          f"{ax}because this dimension is empty and the operation does not "
                                          "have an identity")
        if a.size == 0:
            out = mx.zeros(_out_shape(x.shape, axes, keepdim), a.dtype, stream=self.s)
        elif p == math.inf:
            out = mx.max(a, **kw, stream=self.s)
        elif p == -math.inf:
            out = mx.min(a, **kw, stream=self.s)
        elif p == 0:
            out = mx.sum(mx.not_equal(a, 0, stream=self.s).astype(a.dtype, stream=self.s), **kw, stream=self.s)
        elif p == 1:
            out = mx.sum(a, **kw, stream=self.s)
        else:
            s = mx.sum(mx.square(a, stream=self.s) if p == 2 else mx.power(a, p, stream=self.s), **kw, stream=self.s)
            if differentiating():  # the same value; torch's derivative is 0 where the norm is 0 (MLX's is NaN)
                zero = mx.equal(s, 0, stream=self.s)
                s = mx.where(zero, 1, s, stream=self.s)
            out = mx.sqrt(s, stream=self.s) if p == 2 else mx.power(s, 1.0 / p, stream=self.s)
            if differentiating():
                out = mx.where(zero, 0, out, stream=self.s)
        return out.astype(out_dtype, stream=self.s)

    def _softmax_in(self, x, dim, dtype, op):
        if dtype is not None:
            x = self._cast(x, D.as_dtype(dtype))
        if x.size and (x.dtype in _INTS or x.dtype == mx.complex64):
            raise OpDtypeError(f"\"{op}_kernel_impl\" not implemented for '{scalar_name(self._tdx(x))}'")
        return x, norm_dim(dim, x.ndim)

    def softmax(self, x, dim, dtype=None):
        x, d = self._softmax_in(x, dim, dtype, "softmax")
        if x.size == 0:
            return mx.array(x)
        if x.ndim == 0:
            return mx.exp(mx.subtract(x, x, stream=self.s), stream=self.s)
        if x.dtype == mx.float64:  # MLX's float64 exp is float32-accurate
            e = mlx_f64.exp(mx.subtract(x, mx.max(x, axis=d, keepdims=True, stream=self.s), stream=self.s), self.s)
            return mx.divide(e, mx.sum(e, axis=d, keepdims=True, stream=self.s), stream=self.s)
        return mx.softmax(x, axis=d, precise=True, stream=self.s)

    def log_softmax(self, x, dim, dtype=None):
        x, d = self._softmax_in(x, dim, dtype, "log_softmax")
        if x.size == 0:
            return mx.array(x)
        if x.ndim == 0:
            return mx.subtract(x, x, stream=self.s)
        wide = x.astype(mx.float32, stream=self.s) if x.dtype in _HALF else x
        shifted = mx.subtract(wide, mx.max(wide, axis=d, keepdims=True, stream=self.s), stream=self.s)
        total = mx.sum(mlx_f64.exp(shifted, self.s), axis=d, keepdims=True, stream=self.s)
        out = mx.subtract(shifted, mx.log(total, stream=self.s), stream=self.s)
        return out.astype(x.dtype, stream=self.s)


class MLXReductionOps(MLXReductionOpsStreamed):
    """MLX reductions and scans with torch's semantics: sums, means, moments, extremes, ``norm``,"""

    __slots__ = ()

    # reductions -----------------------------------------------------------------------
    def _acc(self, x, dtype):
        if dtype is not None:
            d = D.as_dtype(dtype)
            if self._nd(d) != x.dtype:
                check_alloc(x.shape, d.itemsize, "sum")  # the widened copy MLX makes
            return self._cast(x, d)
        if x.dtype in _INTS and x.dtype != mx.int64:  # mutate: equivalent (allocation estimate: raises only at untestable sizes)
            check_alloc(x.shape, 8, "sum")
        return x.astype(mx.int64, stream=self.s) if x.dtype in _INTS else x

    def _reduce(self, fn, identity, x, dim, keepdim):
        """``fn`` over ``dim``; empty inputs give ``identity`` (MLX mishandles empty reductions)."""
        kw = _kw(x, dim, keepdim)
        if x.size == 0:
            return mx.full(_reduced_shape(x.shape, kw["axis"], keepdim), identity, x.dtype, stream=self.s)
        return fn(x, **kw, stream=self.s)

    def _sum_plan(self, x, dim, keepdim):
        """How to sum the float32 ``x`` over ``dim``: a function of the array, in torch's order of additions
        on a CPU stream (:func:`._summation_order.plan`), in MLX's own elsewhere, with the number of
        elements per sum as its ``count`` (``mean``'s float32 divisor: an array of the sum's shape up to
        ``_KEPT_DIVISOR`` elements, 0-d past that); decided once per (shape, dim, keepdim) and cached. None for
        a 0-d or empty ``x`` (the general path's)."""
        shape = x.shape
        try:
            key = (shape, dim, keepdim)
            found = self._sum_plans.get(key)
        except TypeError:  # an unhashable dim (a list)
            key, found = None, None
        if found is not None:
            return found
        if not shape or 0 in shape:
            return None
        axes = _dims(dim, len(shape))
        axes = range(len(shape)) if axes is None else axes
        s = self.s
        if self.caps.float64 and torch_order.in_force("sum"):
            fn, final = summation.plan(shape, axes, keepdim, s)
        else:
            ax = list(axes)

            def fn(a):
                return mx.sum(a, axis=ax, keepdims=keepdim, stream=s)

            final = True
        count = math.prod(shape[a] for a in axes)
        # mean's divisor as an array of the sum's shape where that is small (a norm's statistics): the division
        # then broadcasts nothing (no node of its own per call); computed with the first graph that divides by
        # it, a constant from then on. A larger result divides by a 0-d array: a plan lives as long as its
        # executor, and must not hold memory the size of a result
        out_shape = tuple(1 if a in axes else d for a, d in enumerate(shape)) if keepdim else \
            tuple(d for a, d in enumerate(shape) if a not in axes)
        fn.count = mx.full(out_shape if math.prod(out_shape) <= _KEPT_DIVISOR else (), float(count), mx.float32,
                           stream=s)
        if final and key is not None:
            self._sum_plans[key] = fn
        return fn

    def sum(self, x, dim=None, keepdim=False, dtype=None):
        if dtype is None and x.dtype == _F32:  # the common case first: a float32 sum, one plan lookup
            try:
                plan = self._sum_plans[x.shape, dim, keepdim]
            except (KeyError, TypeError):
                plan = self._sum_plan(x, dim, keepdim)
            if plan is not None:
                return plan(x)
        x = self._acc(x, dtype)
        own = x.dtype
        wider = _WIDER.get(own)
        wide = x if wider is None else x.astype(wider, stream=self.s)
        plan = self._sum_plan(wide, dim, keepdim) if wider is mx.float32 else None
        out = self._reduce(mx.sum, 0, wide, dim, keepdim) if plan is None else plan(wide)
        return out if wider is None else out.astype(own, stream=self.s)

    def prod(self, x, dim=None, keepdim=False, dtype=None):
        if dim is not None and not isinstance(dim, int):
            raise TdxTypeError(f"prod(): argument 'dim' (position 1) must be int, not {type(dim).__name__}")
        if dtype is not None and D.as_dtype(dtype) is D.bool_:  # a product of bools is their conjunction
            return self.all(x.astype(mx.bool_, stream=self.s), dim, keepdim)
        x = self._acc(x, dtype)
        if x.dtype in _HALF and self.caps.float64 and product_order.applies(x, dim) and torch_order.in_force("prod"):
            # a CPU stream: torch's order of half-precision multiplications, bit for bit
            return product_order.prod(x, None if dim is None else norm_dim(dim, x.ndim), keepdim, self.s)
        # narrow ints in int64 (wrapped back); float16/bfloat16 stay: torch's CPU product rounds to them as it goes
        wide = x if x.dtype in _HALF else _wide(x, self.s)
        return _narrowed(self._reduce(mx.prod, 1, wide, dim, keepdim), x.dtype, self.s)

    def _need_float(self, x, op):
        if x.dtype in _INTS and op != "mean":
            raise OpDtypeError("std and var only support floating point and complex dtypes")
        if x.dtype in _INTS:
            raise OpDtypeError(f"{op}(): could not infer output dtype. Input dtype must be either a "
                               f"floating point or complex dtype. Got: {self._tdx(x).name}")

    def mean(self, x, dim=None, keepdim=False, dtype=None):
        if dtype is None and x.dtype == _F32:  # the common case first, as sum's
            try:
                plan = self._sum_plans[x.shape, dim, keepdim]
            except (KeyError, TypeError):
                plan = self._sum_plan(x, dim, keepdim)
            if plan is not None:
                return mx.divide(plan(x), plan.count, stream=self._stream or self.s)
        if dtype is None:
            self._need_float(x, "mean")
        elif D.is_integral(D.as_dtype(dtype), include_bool=True):
            raise OpDtypeError("mean(): could not infer output dtype. Optional dtype must be either a floating "
                               f"point or complex dtype. Got: {scalar_name(D.as_dtype(dtype))}")
        elif self._nd(D.as_dtype(dtype)) in _HALF and x.dtype != self._nd(D.as_dtype(dtype)):  # torch: float32 sum
            return _narrowed(self.mean(x, dim, keepdim, D.float32), self._nd(D.as_dtype(dtype)), self.s)
        x = self._acc(x, dtype)
        if x.size == 0:  # MLX's mean of an empty array may never return; torch gives NaN
            return self._empty_nan(x, dim, keepdim)
        # torch divides the sum by the count; MLX's mean multiplies by 1/count (another rounding)
        wide = _wide(x, self.s)
        plan = self._sum_plan(wide, dim, keepdim) if wide.dtype == mx.float32 else None
        if plan is None:
            total = mx.sum(wide, **_kw(x, dim, keepdim), stream=self.s)
            return _narrowed(mx.divide(total, x.size // max(total.size, 1), stream=self.s), x.dtype, self.s)
        return _narrowed(mx.divide(plan(wide), plan.count, stream=self.s), x.dtype, self.s)

    def var(self, x, dim=None, correction=1, keepdim=False):
        self._need_float(x, "var")
        if x.size == 0:  # as mean: avoid MLX's empty reduction, torch gives NaN
            return self._empty_nan(x, dim, keepdim)
        if x.dtype in _HALF:
            return _narrowed(self.var(_wide(x, self.s), dim, correction, keepdim), x.dtype, self.s)
        if isinstance(correction, float) and not correction.is_integer():  # MLX's ddof is an int
            kw = _kw(x, dim, keepdim)
            n = x.size // max(mx.mean(x, **kw, stream=self.s).size, 1)
            dev = mx.subtract(x, mx.mean(x, axis=kw.get("axis"), keepdims=True, stream=self.s), stream=self.s)
            total = mx.sum(mx.square(dev, stream=self.s), **kw, stream=self.s)
            return mx.divide(total, max(0.0, n - correction), stream=self.s)
        return mx.var(x, **_kw(x, dim, keepdim), ddof=int(correction), stream=self.s)

    def _empty_nan(self, x, dim, keepdim):
        shape = _reduced_shape(x.shape, _dims(dim, x.ndim), keepdim) if x.ndim else ()
        return mx.full(shape, float("nan"), x.dtype, stream=self.s)

    def std(self, x, dim=None, correction=1, keepdim=False):
        self._need_float(x, "std")
        if x.dtype in _HALF:
            return _narrowed(self.std(_wide(x, self.s), dim, correction, keepdim), x.dtype, self.s)
        return mx.sqrt(self.var(x, dim, correction, keepdim), stream=self.s)

    def _nonempty(self, x, dim, op):
        if x.size:
            return
        axes = _dims(dim, x.ndim)
        if axes is None:
            kind = TdxIndexError if op.startswith("arg") else TdxRuntimeError  # torch's classes
            raise kind(f"{op}(): Expected reduction dim to be specified for input.numel() == 0. "
                       "Specify the reduction dim with the 'dim' argument.")
        for a in axes:
            if x.shape[a] == 0:
                raise TdxIndexError(f"{op}(): Expected reduction dim {a} to have non-zero size.")

    def amax(self, x, dim=(), keepdim=False):
        self._nonempty(x, dim, "amax")
        out = mx.max(x, **_kw(x, dim, keepdim), stream=self.s)
        return carry_bounds(x, out) if KNOWN and id(x) in KNOWN else out  # its values are x's

    def amin(self, x, dim=(), keepdim=False):
        self._nonempty(x, dim, "amin")
        out = mx.min(x, **_kw(x, dim, keepdim), stream=self.s)
        return carry_bounds(x, out) if KNOWN and id(x) in KNOWN else out

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
            n = x.size
            out = fn(mx.reshape(x, (-1,), stream=self.s), stream=self.s)
            if keepdim:
                out = mx.reshape(out, (1,) * x.ndim, stream=self.s)
        else:
            d = norm_dim(dim, x.ndim)
            n = x.shape[d]
            out = fn(x, axis=d, keepdims=keepdim, stream=self.s)
        out = out.astype(mx.int64, stream=self.s)
        note_bounds(out, 0, n - 1)  # an index checker needs no read of the pending result
        return out

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
