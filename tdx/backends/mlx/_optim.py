"""MLX-executor optimizer kernels, a mixin of the MLX executor: one Adam/AdamW update of a
parameter and its moments as a single compiled MLX function.

``tdx.optim``'s single-tensor Adam issues about eight tdx ops per parameter (decay, ``lerp_``,
``mul_``, ``addcmul_``, ``sqrt``, two divisions, ``addcdiv_``), each a Python call and, on MLX,
a separate pass over memory. :meth:`MLXOptimOps.adam_update` computes the same arithmetic in
one ``mx.compile``d function per stream and set of flags (:func:`._cpu_rounding.compiled`) (the per-step numbers are passed as
0-d float32 arrays, so a new step never traces again). Every rounding is the one torch's CPU
kernels make, as tdx's composed ops on MLX make it: float32 products and sums rounded apart,
``lerp``, ``addcmul`` and ``add(alpha=)`` as fused multiply-adds (through float64, exact
for float32 operands) where torch's kernels fuse them on this machine, else rounded apart
(:func:`._torch_order.fused`, part of the kernel's key), so the result equals the composed path
bit for bit. Must never import torch or tdx's facade.
"""

from __future__ import annotations

import mlx.core as mx
import numpy as np

from ._cpu_rounding import compiled, fma, rounded_apart
from ._torch_order import fused


def _update_fn(s, weight_decay: str, small_lerp: bool, amsgrad: bool, fused: bool):
    """The update for one set of flags (``weight_decay``: "none", "decoupled" or "l2"; ``fused``: torch's
    kernels round a multiply-add once on this machine, :func:`._torch_order.fused`)."""
    fma_ = fma if fused else rounded_apart

    def update(p, g, m, v, vmax, decay, lerp_w, beta2, g_scale, bc2_sqrt, eps, neg_step):
        if weight_decay == "decoupled":
            p = mx.multiply(p, decay, stream=s)  # p.mul_(1 - lr * wd)
        elif weight_decay == "l2":
            g = fma_(p, decay, g, s)  # grad.add(p, alpha=wd), one rounding
        diff = mx.subtract(g, m, stream=s)  # m.lerp_(g, 1 - beta1), torch's two branches
        m = fma_(lerp_w, diff, m if small_lerp else g, s)
        v = fma_(mx.multiply(g, g_scale, stream=s), g, mx.multiply(v, beta2, stream=s), s)  # mul_, addcmul_
        if amsgrad:
            vmax = mx.maximum(vmax, v, stream=s)
        denom = mx.add(mx.divide(mx.sqrt(vmax if amsgrad else v, stream=s), bc2_sqrt, stream=s), eps, stream=s)
        step = mx.divide(mx.multiply(m, neg_step, stream=s), denom, stream=s)  # addcdiv_(m, denom, -lr / bc1)
        return mx.add(p, step, stream=s), m, v, vmax

    return update


def _kernel(stream, flags):
    def build():
        one, half = mx.ones(2, mx.float32), mx.array(0.5, mx.float32)
        return _update_fn(stream, *flags), (one,) * 5 + (half,) * 7

    return compiled(("adam", stream, flags), build)


class MLXOptimOps:
    """One Adam/AdamW parameter update in one compiled MLX call."""

    __slots__ = ()

    def adam_update(self, p, g, m, v, vmax, *, weight_decay: str, wd: float, decay: float, beta1: float,
                    beta2: float, eps: float, step_size: float, bc2_sqrt: float):
        """The new ``(p, m, v, vmax)`` of one Adam step on float32 arrays of one shape, or None where
        this kernel does not apply (other dtypes or shapes, no float64 on the stream for the exact
        fused multiply-adds): the caller then takes its composed path.

        Args:
            p, g, m, v: parameter, gradient, first and second moments.
            vmax: the running maximum of ``v`` (AMSGrad), or None.
            weight_decay: "none", "decoupled" (``p *= decay``) or "l2" (``g += wd * p``).
            wd: the L2 coefficient; decay: the decoupled factor ``1 - lr * wd``.
            beta1, beta2, eps: Adam's; step_size: ``lr / (1 - beta1 ** step)``;
            bc2_sqrt: ``sqrt(1 - beta2 ** step)``.
        """
        arrays = (p, g, m, v) if vmax is None else (p, g, m, v, vmax)
        if not self.caps.float64 or any(type(a) is not mx.array or a.dtype != mx.float32 or a.shape != p.shape
                                        for a in arrays):
            return None
        w = np.float32(1 - beta1)  # lerp's weight, a float32 as torch's kernel takes it
        small = bool(abs(w) < 0.5)
        f32 = lambda x: mx.array(x, mx.float32)  # noqa: E731 - per-step numbers as 0-d arrays
        kernel = _kernel(self.s, (weight_decay, small, vmax is not None, fused()))
        out = kernel(p, g, m, v, v if vmax is None else vmax, f32(wd if weight_decay == "l2" else decay),
                     f32(w if small else w - np.float32(1)), f32(beta2), f32(1 - beta2), f32(bc2_sqrt), f32(eps),
                     f32(-step_size))
        return out[0], out[1], out[2], (out[3] if vmax is not None else None)
