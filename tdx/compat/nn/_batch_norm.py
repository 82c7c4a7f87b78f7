"""Batch and instance normalization of ``tdx.nn.functional``: ``batch_norm`` (training statistics or
running ones, updating ``running_mean``/``running_var`` in place as torch) and ``instance_norm``, plus
``unfold`` (im2col) and ``fold``'s inverse shape helper.

Composed from tdx ops (mean, var, broadcasting), so they run and differentiate on every executor.
This module must never import torch or mlx.
"""

from __future__ import annotations

import math

import tdx
from ._activations import need_tensor
from ._error_kinds import TdxRuntimeError

__all__ = ["batch_norm", "instance_norm", "unfold"]


def _shape(x, c):
    return (1, c) + (1,) * (x.ndim - 2)


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1,  # noqa: A002
               eps=1e-5):
    """Normalize each channel (dim 1) by its batch statistics (training) or the running ones."""
    x = need_tensor(input, "batch_norm")
    if x.numel() == 0:  # nothing to normalize: torch returns the empty input's copy
        return x * 1
    if x.ndim < 2:
        raise TdxRuntimeError(f"batch_norm: expected at least 2D input (got {x.ndim}D input)")
    c = x.shape[1]
    dims = [0, *range(2, x.ndim)]
    if training:
        count = x.numel() // max(c, 1)
        if count <= 1:
            raise TdxRuntimeError(f"Expected more than 1 value per channel when training, got input size "
                                  f"{list(x.shape)}")
        mean = x.mean(dims)
        var = x.var(dims, correction=0)
        if running_mean is not None:
            with tdx.no_grad():
                running_mean.mul_(1 - momentum).add_(mean.detach() * momentum)
        if running_var is not None:
            with tdx.no_grad():
                running_var.mul_(1 - momentum).add_(var.detach() * (momentum * count / (count - 1)))
    else:
        if running_mean is None or running_var is None:
            raise TdxRuntimeError("running_mean and running_var must be defined in evaluation mode")
        mean, var = running_mean, running_var
    out = (x - mean.reshape(_shape(x, c))) / (var.reshape(_shape(x, c)) + eps).sqrt()
    if weight is not None:
        out = out * weight.reshape(_shape(x, c))
    if bias is not None:
        out = out + bias.reshape(_shape(x, c))
    return out


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,  # noqa: A002
                  use_input_stats=True, momentum=0.1, eps=1e-5):
    """Normalize each (sample, channel) plane by its own statistics."""
    x = need_tensor(input, "instance_norm")
    if x.ndim < 3:
        raise TdxRuntimeError(f"instance_norm: expected at least 3D input (got {x.ndim}D input)")
    n, c = x.shape[0], x.shape[1]
    dims = tuple(range(2, x.ndim))
    if use_input_stats:
        mean = x.mean(dims, keepdim=True)
        var = x.var(dims, correction=0, keepdim=True)
        count = math.prod(x.shape[2:])
        if running_mean is not None:
            with tdx.no_grad():
                running_mean.mul_(1 - momentum).add_(mean.detach().reshape(n, c).mean(0) * momentum)
        if running_var is not None:
            with tdx.no_grad():
                unbiased = var.detach().reshape(n, c).mean(0) * (count / max(count - 1, 1))
                running_var.mul_(1 - momentum).add_(unbiased * momentum)
    else:
        mean, var = running_mean.reshape(_shape(x, c)), running_var.reshape(_shape(x, c))
    out = (x - mean) / (var + eps).sqrt()
    if weight is not None:
        out = out * weight.reshape(_shape(x, c))
    if bias is not None:
        out = out + bias.reshape(_shape(x, c))
    return out


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):  # noqa: A002
    """im2col: the sliding ``kernel_size`` blocks of a ``(N, C, H, W)`` input as ``(N, C * kh * kw, L)`` columns."""
    x = need_tensor(input, "unfold")
    if x.ndim not in (3, 4):
        raise TdxRuntimeError(f"Input Error: Only 3D or 4D input Tensors are supported (got {x.ndim}D)")
    batched = x.ndim == 4
    x = x if batched else x.unsqueeze(0)

    def pair(v):
        return (v, v) if isinstance(v, int) else tuple(v)

    k, d, p, s = pair(kernel_size), pair(dilation), pair(padding), pair(stride)
    x = tdx.nn.functional.pad(x, (p[1], p[1], p[0], p[0]))
    n, c, h, w = x.shape
    oh = (h - d[0] * (k[0] - 1) - 1) // s[0] + 1
    ow = (w - d[1] * (k[1] - 1) - 1) // s[1] + 1
    if oh <= 0 or ow <= 0:
        raise TdxRuntimeError(f"Given input with spatial size ({h - 2 * p[0]}, {w - 2 * p[1]}), kernel_size "
                              f"{list(k)}, the calculated shape of the array of sliding blocks is ({oh}, {ow}), "
                              "but its components must be at least one.")
    cols = []
    for i in range(k[0]):
        for j in range(k[1]):
            block = x[:, :, i * d[0]: i * d[0] + (oh - 1) * s[0] + 1: s[0],
                      j * d[1]: j * d[1] + (ow - 1) * s[1] + 1: s[1]]
            cols.append(block.reshape(n, c, 1, oh * ow))
    out = tdx.cat(cols, 2).reshape(n, c * k[0] * k[1], oh * ow)
    return out if batched else out[0]
