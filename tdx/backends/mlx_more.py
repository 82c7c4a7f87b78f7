"""torch-semantics MLX ops for the wider surface, a mixin of the MLX executor.

Holds ``fmod``, scans and normalizing reductions (``cumsum``, ``logsumexp``, ``norm``,
``softmax``...), batched and Einstein products, ``diag``/``trace`` and the ``fill_``/``copy_``
writes (which return a new array: MLX arrays are values, the facade rebinds). Indexing
and ordering ops live in :mod:`tdx.backends.mlx_index`, sampling in
:mod:`tdx.backends.mlx_random`; both are bases of :class:`MLXMoreOps`. Same conventions
as :mod:`tdx.backends.mlx_ops`: ``self.s`` on every call, torch's promotion and checks,
typed errors. Must never import torch.
"""

from __future__ import annotations

import math

import numpy as np
import mlx.core as mx

from . import mlx_f64
from .. import _dtypes as D
from ..autograd.tape import differentiating
from .._errors import DtypeMismatchError, OpDtypeError, ShapeError, TdxRuntimeError, TdxTypeError
from .base import norm_dim
from .mlx_index import MLXIndexOps, broadcast_shape, fit_scalar, on_stream, scalar_name
from .mlx_random import MLXRandomOps

_INTS = frozenset((mx.bool_, mx.uint8, mx.int8, mx.int16, mx.int32, mx.int64))
_HALF = frozenset((mx.float16, mx.bfloat16))


def _is_bool_operand(v) -> bool:
    return v.dtype == mx.bool_ if isinstance(v, mx.array) else isinstance(v, bool)


def _axes(dim, ndim: int):
    """torch's ``dim`` (None, int or sequence) as a list of axes, or None for all."""
    if dim is None:
        return None
    axes = [norm_dim(d, ndim) for d in ((dim,) if isinstance(dim, int) else dim)]
    if len(set(axes)) != len(axes):
        raise ShapeError(f"dim {axes} appears multiple times in the list of dims")
    return axes or None


def _out_shape(shape, axes, keepdim: bool) -> tuple:
    axes = range(len(shape)) if axes is None else axes
    if keepdim:
        return tuple(1 if i in axes else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i not in axes)


@on_stream
class MLXMoreOps(MLXIndexOps, MLXRandomOps):
    """Further MLX ops with torch's semantics."""

    # elementwise --------------------------------------------------------------------------
    def fmod(self, a, b):
        if not isinstance(a, mx.array):
            raise TdxTypeError(f"fmod(): argument 'input' must be Tensor, not {type(a).__name__}")
        a, b, rt = self._args(a, b)
        if rt is D.bool_ or rt.is_complex:
            raise OpDtypeError(f"\"fmod_cpu\" not implemented for '{scalar_name(rt)}'")
        if a.dtype in _INTS:
            if bool(mx.any(mx.equal(b, 0, stream=self.s), stream=self.s).item()):
                raise TdxRuntimeError("ZeroDivisionError")
            r = mx.remainder(a, b, stream=self.s)  # sign of b; C's fmod takes the sign of a
            fix = mx.logical_and(mx.not_equal(r, 0, stream=self.s),
                                 mx.not_equal(r < 0, a < 0, stream=self.s), stream=self.s)
            return mx.where(fix, mx.subtract(r, b, stream=self.s), r, stream=self.s)
        r = mx.remainder(mx.abs(a, stream=self.s), mx.abs(b, stream=self.s), stream=self.s)
        return mx.where(a < 0, mx.negative(r, stream=self.s), r, stream=self.s)

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
        scaled = mx.multiply(b, self._cast(alpha, rt), stream=self.s)
        return (mx.subtract if sub else mx.add)(a, scaled, stream=self.s)

    def add_alpha(self, a, b, alpha):
        """``a + alpha * b`` with torch's promotion (``alpha`` takes no part) and checks on ``alpha``."""
        return self._alpha(a, b, alpha, False)

    def sub_alpha(self, a, b, alpha):
        """``a - alpha * b`` with torch's promotion and checks (no bool operands)."""
        return self._alpha(a, b, alpha, True)

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
        return fn(x, axis=norm_dim(dim, x.ndim), stream=self.s)

    def cumsum(self, x, dim, dtype=None):
        return self._scan(mx.cumsum, x, dim, dtype)

    def cumprod(self, x, dim, dtype=None):
        return self._scan(mx.cumprod, x, dim, dtype)

    def norm(self, x, p="fro", dim=None, keepdim=False, dtype=None):
        if dtype is not None:
            x = self._cast(x, D.as_dtype(dtype))
        if x.dtype in _INTS:
            raise TdxRuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as input. "
                                  f"Got {scalar_name(self._tdx(x))}")
        axes = _axes(dim, x.ndim) if x.ndim else None
        if p == "nuc":
            if axes is None or len(axes) != 2:
                raise TdxRuntimeError("linalg.matrix_norm: dim must be a 2-tuple. Got " + str(dim))
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
        if a.size == 0 and math.isinf(p):
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

    # linear algebra -------------------------------------------------------------------------
    def bmm(self, a, b):
        for name, t in (("batch1", a), ("batch2", b)):
            if not isinstance(t, mx.array):
                raise TdxTypeError(f"bmm(): argument '{name}' must be Tensor, not {type(t).__name__}")
            if t.ndim != 3:
                raise TdxRuntimeError(f"{name} must be a 3D tensor")
        if b.shape[0] != a.shape[0] or b.shape[1] != a.shape[2]:
            raise ShapeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                             f"[{a.shape[0]}, {a.shape[2]}] but got: [{b.shape[0]}, {b.shape[1]}].")
        shape = (a.shape[0], a.shape[1], b.shape[2])
        if 0 in shape or a.shape[2] == 0:  # torch checks nothing more and returns mat2's dtype
            return mx.zeros(shape, b.dtype, stream=self.s)
        if a.dtype != b.dtype:
            raise DtypeMismatchError(f"expected scalar type {scalar_name(self._tdx(a))} but found "
                                     f"{scalar_name(self._tdx(b))}")
        if a.dtype == mx.bool_:
            raise OpDtypeError("\"bmm\" not implemented for 'Bool'")
        return self.matmul(a, b)

    def einsum(self, equation, operands):
        if not operands:
            raise TdxRuntimeError("einsum(): must provide at least one operand")
        first = operands[0]
        for t in operands[1:]:
            if t.dtype != first.dtype:
                raise DtypeMismatchError(f"expected scalar type {scalar_name(self._tdx(first))} but found "
                                         f"{scalar_name(self._tdx(t))}")
        if first.dtype in _INTS:
            lhs, arrow, rhs = equation.replace(" ", "").partition("->")
            labels = [c for c in lhs if c.isalpha()]
            kept = set(rhs) if arrow else {c for c in labels if labels.count(c) == 1}
            reduced = bool(set(labels) - kept)
            if first.dtype == mx.bool_ and len(operands) > 1 and self._contracts(lhs, kept, operands):
                raise OpDtypeError("\"bmm\" not implemented for 'Bool'")
            arrays = [np.array(t).astype(np.int64) for t in operands]
            try:
                out = np.einsum(equation, *arrays)
            except ValueError as err:
                raise TdxRuntimeError(f"einsum(): {err}") from None
            dtype = mx.int64 if len(operands) == 1 and reduced else first.dtype  # torch sums ints in int64
            return mx.array(np.asarray(out)).astype(dtype, stream=self.s)
        if any(t.size == 0 for t in operands):  # MLX's reductions over empty inputs are unreliable
            try:
                out = np.einsum(equation, *[self.host_numpy(t) for t in operands])
            except ValueError as err:
                raise TdxRuntimeError(f"einsum(): {err}") from None
            return mx.array(np.asarray(out)).astype(first.dtype, stream=self.s)
        return mx.einsum(equation, *operands, stream=self.s)

    @staticmethod
    def _contracts(lhs: str, kept: set, operands) -> bool:
        """Whether torch's einsum would run a real (non-empty, size > 1) contraction."""
        if any(t.size == 0 for t in operands):
            return False
        sizes = {}
        for spec, t in zip(lhs.split(","), operands):
            if "." in spec:
                return True
            sizes.update(zip(spec, t.shape))
        return any(n > 1 for c, n in sizes.items() if c not in kept)

    def diag(self, x, diagonal=0):
        if x.ndim not in (1, 2):
            raise TdxRuntimeError(f"diag(): Supports 1D or 2D tensors. Got {x.ndim}D")
        if x.ndim == 2:
            rows, cols = x.shape
            if diagonal >= cols or -diagonal >= rows or not x.size:
                return mx.zeros((0,), x.dtype, stream=self.s)
        if x.ndim == 1 and x.size == 0:
            n = abs(diagonal)
            return mx.zeros((n, n), x.dtype, stream=self.s)
        return mx.diag(x, diagonal, stream=self.s)

    def trace(self, x):
        if x.ndim != 2:
            raise TdxRuntimeError(f"trace: expected a matrix, but got tensor with dim {x.ndim}")
        if x.dtype == mx.bool_:
            raise OpDtypeError("\"trace\" not implemented for 'Bool'")
        n = min(x.shape)
        if n == 0:
            return self.sum(mx.zeros((0,), x.dtype, stream=self.s))
        return self.sum(mx.diagonal(x, stream=self.s))

    # writes: return the new value; the facade rebinds -----------------------------------------
    def fill_(self, x, value):
        if isinstance(value, mx.array) and value.ndim:
            raise TdxRuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with "
                                  f"{value.ndim} dimensions.")
        value = fit_scalar(value, self._tdx(x))
        return mx.full(x.shape, self._cast(value, self._tdx(x)), stream=self.s)

    def copy_(self, x, src):
        if not isinstance(src, mx.array):
            raise TdxTypeError(f"copy_(): argument 'other' must be Tensor, not {type(src).__name__}")
        shape = tuple(x.shape)
        if broadcast_shape(shape, tuple(src.shape)) != shape:
            raise ShapeError(f"output with shape {list(shape)} doesn't match the broadcast shape "
                             f"{list(broadcast_shape(shape, tuple(src.shape)))}")
        if src.dtype == mx.complex64 and x.dtype != mx.complex64:
            src = mx.real(src, stream=self.s)
        out = mx.broadcast_to(src.astype(x.dtype, stream=self.s), shape, stream=self.s)
        return mx.array(out) if out is src else out

