"""Local response normalization of ``tdx.nn.functional`` (``local_response_norm``): each value is
divided by ``(k + alpha * mean of the squares of its ``size`` neighbouring channels)**beta``.

On an executor with torch's kernels the call is torch's own (its average pooling: values, and errors
where a device's pooling lacks a dtype, as CUDA's for int64). Elsewhere composed from tdx ops (a
zero-padded window sum over the channel dim), so it runs and differentiates on every executor. This
module must never import torch or mlx.
"""

from __future__ import annotations

import tdx
from ..._errors import TdxNotImplementedError
from . import _kernels
from ._activations import need_tensor, torch_name

__all__ = ["local_response_norm"]


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):  # noqa: A002 - torch's name
    """``input / (k + alpha / size * sum of squares over size channels)**beta`` for ``(N, C, *)`` input.

    The window of channel ``c`` spans ``[c - size // 2, c + (size - 1) // 2]``; channels outside
    ``[0, C)`` count as zeros (and the divisor stays ``size``), as torch's average pooling of a padded input.

    An int64 input averages its window as torch's integer average pooling does (the window sum
    floor-divided by ``size``); the result is floating point.

    Raises:
        TdxValueError: ``input`` has fewer than 3 dims.
        TdxNotImplementedError: an integer or bool input other than int64 (torch's pooling has no kernel).
    """
    x = need_tensor(input, "local_response_norm")
    done = _kernels.native("local_response_norm", x, size, alpha, beta, k)
    if done is not _kernels.NOT_NATIVE:
        return done
    if x.ndim < 3:
        raise tdx.TdxValueError(f"Expected 3D or higher dimensionality input (got {x.ndim} dimensions)")
    exact = not (x.dtype.is_floating_point or x.dtype.is_complex)
    if exact and x.dtype is not tdx.int64:
        kernel = "avg_pool2d" if x.ndim == 3 else "avg_pool3d_out_frame"
        raise TdxNotImplementedError(f'"{kernel}" not implemented for \'{torch_name(x.dtype)}\' (local_response_norm '
                                     "takes floating point or int64 input)")
    if x.numel() == 0:
        return x
    sq = x * x
    c = x.shape[1]
    before, after = size // 2, (size - 1) // 2
    side = tuple(x.shape[:1])
    rest = tuple(x.shape[2:])
    parts = [sq.new_zeros(side + (before,) + rest), sq, sq.new_zeros(side + (after,) + rest)]
    padded = tdx.cat(parts, 1)
    window = padded.narrow(1, 0, c)
    for i in range(1, size):
        window = window + padded.narrow(1, i, c)
    div = ((window // size if exact else window / size) * alpha + k) ** beta
    return x / div
