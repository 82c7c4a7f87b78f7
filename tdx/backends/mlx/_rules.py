"""torch's rules on MLX arrays, shared by the MLX op families: dtype sets, bool and complex
detection, dims and reduced shapes, un-broadcasting of gradients, and the torch-exact derivative
forms (tie-splitting maximum/minimum, where, clamp) used inside a backward replay.

Must never import torch or the facade.
"""

from __future__ import annotations

import functools

import mlx.core as mx

from ..._errors import ShapeError
from ..base import norm_dim

_SCALARS = (bool, int, float, complex)
_INTS = frozenset((mx.bool_, mx.uint8, mx.int8, mx.int16, mx.int32, mx.int64))
_FLOATS = frozenset((mx.float16, mx.bfloat16, mx.float32, mx.float64))
_SIGNED = frozenset((mx.int8, mx.int16, mx.int32, mx.int64))
# torch's integer dtypes but bool -> the values they hold: an array of one with a Python int in that range keeps
# its dtype in torch's promotion, as in MLX's
_INT_RANGES = {d: (-(1 << 8 * d.size - 1), (1 << 8 * d.size - 1) - 1) if d in _SIGNED else (0, (1 << 8 * d.size) - 1)
               for d in _INTS if d != mx.bool_}


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
