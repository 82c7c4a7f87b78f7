"""float32 ``tanh`` on MLX's CPU rounded as torch's CPU kernels round it, forward and derivative.

MLX's CPU ``tanh`` is a fast approximation: on float32 it misses the correctly rounded value
in about one element of five (1 ulp), while torch's CPU ``tanh`` (SLEEF's 1-ulp kernel) gives
the correctly rounded value in all but about 1 in 2000. A network with a tanh layer therefore
drifts from torch by an ulp per element per step on MLX. On a CPU stream (where MLX has float64)
the function here computes float32 ``tanh`` in float64 and rounds once, so it equals torch's
wherever torch's is correctly rounded. Its derivative is torch's ``tanh_backward``:
``grad * (1 - y * y)`` with ``1 - y * y`` formed by one fused multiply-add (exact in float64,
``y`` being a float32), then one float32 product. MLX GPUs (no float64) keep MLX's own ``tanh``.

Must never import torch or the tdx facade; used only by the MLX executor.
"""

from __future__ import annotations

import functools

import mlx.core as mx


def _one_minus_square(y, s):
    """``1 - y * y`` of float32 ``y`` rounded once to float32 (a fused multiply-add, as torch's kernel)."""
    wide = y.astype(mx.float64, stream=s)
    return mx.subtract(1.0, mx.multiply(wide, wide, stream=s), stream=s).astype(mx.float32, stream=s)


@functools.lru_cache(maxsize=None)
def tanh(stream):
    """float32 ``tanh`` on the CPU ``stream``, correctly rounded, with torch's derivative.

    Args:
        stream: an MLX CPU stream (float64 must be available on it).

    Returns:
        An ``mx.custom_function`` of one float32 array.
    """
    s = stream

    @mx.custom_function
    def fn(x):
        return mx.tanh(x.astype(mx.float64, stream=s), stream=s).astype(mx.float32, stream=s)

    @fn.vjp
    def fn_vjp(primals, cotangent, output):
        y = output[0] if isinstance(output, (list, tuple)) else output
        g = cotangent[0] if isinstance(cotangent, (list, tuple)) else cotangent
        return (mx.multiply(g, _one_minus_square(y, s), stream=s),)

    return fn
