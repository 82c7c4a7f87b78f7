"""MLX's fused kernel, ``mx.fast.scaled_dot_product_attention``, with torch's semantics.

Three translations make it agree with torch: ``is_causal`` aligns top-left in torch and
lower-right in MLX, so a causal call with ``Tq != Tk`` passes an explicit top-left mask; the
scale is always passed (MLX requires it); and rows whose mask lets no key through come out as
zeros (torch's), not as MLX's NaN or arbitrary values. Dropout never reaches this kernel (its
rules refuse it). float64 inputs run the math path: MLX's fused kernel computes them to float32
accuracy only. Imported on first use; it imports MLX, never torch.
"""

from __future__ import annotations

import mlx.core as mx

from . import _math
from ._math import causal_keep

__all__ = ["run", "direct", "UPCAST_HALF"]

# device classes where the fused kernel runs float16/bfloat16 inputs in float32: MLX's CPU path is
# unfused and emulates half-precision math, so float32 is both faster there and as precise as
# torch's math path (whose reductions run in float32)
UPCAST_HALF = frozenset({"mlx:cpu"})


def run(p, backend=None):
    """MLX's fused kernel on canonical params; the ``(B, Hq, Tq, Ev)`` result."""
    dt = p.q.dtype
    if dt == mx.float64:  # MLX's fused kernel computes float64 to float32 accuracy: the math path
        return _math.run(p)
    if dt in (mx.float16, mx.bfloat16) and str(p.ex.device) in UPCAST_HALF:
        q, k, v = (x.astype(mx.float32, stream=p.ex.s) for x in (p.q, p.k, p.v))
        mask = p.mask if p.mask_kind != "float" else p.mask.astype(mx.float32, stream=p.ex.s)
        return _fused(p, q, k, v, mask).astype(dt, stream=p.ex.s)
    return _fused(p, p.q, p.k, p.v, p.mask)


def direct(p, backend=None):
    """``run`` as a function of the three input natives alone, for calls planned as ``p`` (the same executor,
    flags, dtypes and shapes but the key length's class): float32 or float16/bfloat16 where the device runs them
    natively, no mask and not causal (a causal call's mask depends on the exact key length). None otherwise."""
    dt = p.q.dtype
    if p.mask is not None or p.is_causal or dt == mx.float64 or (
            dt in (mx.float16, mx.bfloat16) and str(p.ex.device) in UPCAST_HALF):
        return None
    scale, s, attend = p.scale, p.ex.s, mx.fast.scaled_dot_product_attention

    def fused(q, k, v):
        return attend(q, k, v, scale=scale, stream=s)

    return fused


def _fused(p, q, k, v, mask):
    s, ops = p.ex.s, p.ops
    if p.is_causal:
        mask = "causal" if p.Tq == p.Tk else causal_keep(ops, 0, p.Tq, 0, p.Tk)
    if p.mask is None:
        return mx.fast.scaled_dot_product_attention(q, k, v, scale=p.scale, mask=mask, stream=s)
    # rows that see no key: give the kernel a harmless row (so neither the output nor the gradient
    # holds NaN there), then zero them as torch does
    allowed = mask if p.mask_kind == "bool" else mx.greater(mask, float("-inf"), stream=s)
    seen = mx.any(allowed, axis=-1, keepdims=True, stream=s)
    if p.mask_kind == "bool":
        mask = mx.logical_or(mask, mx.logical_not(seen, stream=s), stream=s)
    else:
        mask = mx.where(seen, mask, mx.array(0, mask.dtype), stream=s)
    out = mx.fast.scaled_dot_product_attention(q, k, v, scale=p.scale, mask=mask, stream=s)
    return mx.where(seen, out, mx.array(0, out.dtype), stream=s)
