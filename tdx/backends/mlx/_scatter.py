"""MLX kernels for reducing scatters with torch's signature: ``scatter_reduce`` (sum, prod, mean,
amax, amin; ``include_self``) and ``index_reduce``.

Built on the executor's scatter preparation (bounds and shape checks, flat target positions) and
MLX's ``.at[]`` updates. Must never import torch or the facade.
"""

from __future__ import annotations

import mlx.core as mx

from ..._errors import TdxRuntimeError
from ..base import norm_dim
from ._indexing import on_stream

_REDUCES = ("sum", "prod", "mean", "amax", "amin")


@on_stream
class MLXScatterOps:
    """``scatter_reduce`` and ``index_reduce`` on MLX arrays."""

    __slots__ = ()

    def _identity(self, x, reduce):
        if reduce in ("sum", "mean"):
            return 0
        if reduce == "prod":
            return 1
        info = mx.finfo(x.dtype) if mx.issubdtype(x.dtype, mx.floating) else (
            None if x.dtype == mx.bool_ else mx.iinfo(x.dtype))
        if info is None:
            return reduce == "amin"
        if mx.issubdtype(x.dtype, mx.floating):
            return -float("inf") if reduce == "amax" else float("inf")
        return info.min if reduce == "amax" else info.max

    def scatter_reduce(self, x, dim, index, src, reduce, *, include_self=True):
        if reduce not in _REDUCES:
            raise TdxRuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
        if not isinstance(src, mx.array):
            raise TdxRuntimeError("scatter_reduce(): argument 'src' must be Tensor")
        flat_x, flat, vals = self._scatter_prep(x, dim, index, src, "scatter_reduce")
        if flat_x is None:
            return x
        if not include_self:
            touched = mx.zeros(flat_x.shape, mx.int32).at[flat].add(1) > 0
            ident = mx.array(self._identity(x, reduce), dtype=x.dtype)
            flat_x = mx.where(touched, ident, flat_x)
        if reduce in ("sum", "mean"):
            out = flat_x.at[flat].add(vals)
        elif reduce == "prod":
            out = _scatter_prod(flat, self.s)(flat_x, vals)
        elif reduce == "amax":
            out = flat_x.at[flat].maximum(vals)
        else:
            out = flat_x.at[flat].minimum(vals)
        if reduce == "mean":
            count = mx.zeros(flat_x.shape, mx.int64).at[flat].add(1) + (1 if include_self else 0)
            count = mx.maximum(count, 1)
            if mx.issubdtype(x.dtype, mx.floating) or mx.issubdtype(x.dtype, mx.complexfloating):
                out = mx.divide(out, count.astype(x.dtype))
            else:
                out = mx.floor_divide(out, count.astype(x.dtype))
        return mx.reshape(out, x.shape)

    def index_reduce(self, x, dim, index, source, reduce, *, include_self=True):
        if reduce not in ("prod", "mean", "amax", "amin"):
            raise TdxRuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got "
                                  f"{reduce}.")
        d = norm_dim(dim, x.ndim)
        shape = [1] * max(source.ndim, 1)
        shape[d] = -1
        idx = mx.broadcast_to(mx.reshape(index.astype(mx.int64), shape), source.shape if source.ndim else (1,))
        return self.scatter_reduce(x, d, idx, source, reduce, include_self=include_self)


def _scatter_prod(flat, stream):
    """``x.at[flat].multiply(v)`` with torch's derivative (``scatter_reduce_backward``, prod), which MLX
    lacks: ``grad * result / x`` for ``x``, ``grad * result / v`` gathered for ``v``, where a zero
    (in ``x``, or the only zero of ``v`` at its target) takes the product of the others instead."""
    @mx.custom_function
    def op(x, v):
        return x.at[flat].multiply(v)

    @op.vjp
    def op_vjp(primals, cotangent, output):
        x, v = primals
        g = cotangent
        with mx.stream(stream):
            one = mx.array(1, dtype=x.dtype)
            masked_x = mx.where(x == 0, one, x)
            grad_x = g * masked_x.at[flat].multiply(v) / masked_x
            v_zero = v == 0
            zeros_at = mx.zeros(x.shape, mx.int32).at[flat].add(v_zero.astype(mx.int32))[flat]
            single = mx.logical_and(v_zero, zeros_at == 1)
            others = x.at[flat].multiply(mx.where(single, one, v))
            grad_v = mx.where(single, (g * others)[flat], (g * output)[flat] / mx.where(v_zero, one, v))
        return grad_x, grad_v

    return op
