"""Batch and instance normalization of ``tdx.nn.functional``: ``batch_norm`` and ``instance_norm``.

On an executor with torch's kernels each call is torch's own (results, running-statistics
updates and gradients bit for bit). Elsewhere the statistics are tdx reductions (in float32
for half precision inputs): the batch is normalized by its biased variance while the running
variance takes the unbiased one, ``running = (1 - momentum) * running + momentum * batch``,
written in place outside autograd, as torch's. This module must never import torch or mlx.
"""

from __future__ import annotations

import tdx
from ..._errors import ShapeError, TdxIndexError, TdxValueError
from . import _kernels
from ._activations import need_tensor, opmath

__all__ = ["batch_norm", "instance_norm"]


def _channel_param(p, c, op, name):
    if p is None:
        return None
    need_tensor(p, op, name)
    if p.numel() != c:
        raise ShapeError(f"{op}: expected {name} to have {c} elements (the input's channels), but got "
                         f"{list(p.shape)}")
    return p


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1,  # noqa: A002
               eps=1e-5):
    """Normalize each channel (dim 1) of ``(N, C, *)`` by batch statistics (``training``) or running ones.

    Args:
        running_mean, running_var: ``(C,)`` buffers (or None); updated in place when ``training``.
        weight, bias: optional ``(C,)`` affine parameters.
        training: use (and record into the running buffers) the batch's statistics.
        momentum: the running statistics' update factor.
        eps: added to the variance.

    Raises:
        TdxValueError: training with a single value per channel.
        TdxIndexError: a 0-d or non-empty 1-d input (no channel dim).
        ShapeError: a parameter or buffer without ``C`` elements.
    """
    x = need_tensor(input, "batch_norm")
    done = _kernels.native("batch_norm", x, running_mean, running_var, weight, bias, training, momentum, eps)
    if done is not _kernels.NOT_NATIVE:
        return done
    if x.ndim < 2:
        if x.ndim == 1 and not x.numel():  # torch's empty-input shortcut: the (empty) input back
            return x.clone()
        raise TdxIndexError(f"batch_norm: Dimension out of range (expected to be in range of [-1, 0], but got 1): "
                            f"the input {list(x.shape)} has no channel dim 1 (accepted: (N, C, ...))")
    c = x.shape[1]
    rm, rv = (_channel_param(p, c, "batch_norm", n) for p, n in ((running_mean, "running_mean"),
                                                                  (running_var, "running_var")))
    w, b = _channel_param(weight, c, "batch_norm", "weight"), _channel_param(bias, c, "batch_norm", "bias")
    dims = [0] + list(range(2, x.ndim))
    shape = (1, c) + (1,) * (x.ndim - 2)
    work = opmath(x)
    if training or rm is None or rv is None:
        count = x.numel() // c if c else 0
        if training and count <= 1:
            raise TdxValueError(f"Expected more than 1 value per channel when training, got input size "
                                f"{list(x.shape)}")
        mean = work.mean(dims)
        var = work.var(dims, correction=0)
        if training and rm is not None:
            with tdx.no_grad():
                rm.copy_(rm * (1 - momentum) + mean.detach().to(rm.dtype) * momentum)
        if training and rv is not None:
            with tdx.no_grad():
                unbiased = var.detach() * (count / (count - 1))
                rv.copy_(rv * (1 - momentum) + unbiased.to(rv.dtype) * momentum)
    else:
        mean, var = opmath(rm), opmath(rv)
    out = (work - mean.reshape(shape)) * (var.reshape(shape) + eps).rsqrt()
    if w is not None:
        out = out * opmath(w).reshape(shape)
    if b is not None:
        out = out + opmath(b).reshape(shape)
    return out.to(x.dtype)


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True,  # noqa
                  momentum=0.1, eps=1e-5):
    """Normalize each channel of each sample of ``(N, C, *)`` over its spatial dims.

    Args:
        running_mean, running_var: optional ``(C,)`` buffers: updated (averaged over the batch) when
            ``use_input_stats``, used instead of the input's statistics otherwise.
        weight, bias: optional ``(C,)`` affine parameters.
        use_input_stats: normalize by each instance's own statistics.

    Raises:
        TdxValueError: one spatial value per channel while using input statistics.
    """
    x = need_tensor(input, "instance_norm")
    done = _kernels.native("instance_norm", x, running_mean, running_var, weight, bias, use_input_stats, momentum,
                           eps)
    if done is not _kernels.NOT_NATIVE:
        return done
    if x.ndim < 3:
        raise TdxValueError(f"instance_norm: expected an input with at least 3 dims (N, C, *), got {list(x.shape)}")
    n, c = x.shape[:2]
    if use_input_stats and x.numel() // (n * c) <= 1 if n * c else False:
        raise TdxValueError(f"Expected more than 1 spatial element when training, got input size {list(x.shape)}")
    # torch's definition: batch norm of (1, N * C, *) with the running buffers repeated per sample
    folded = x.reshape((1, n * c) + tuple(x.shape[2:]))
    rm = running_mean.repeat(n) if running_mean is not None else None
    rv = running_var.repeat(n) if running_var is not None else None
    w = weight.repeat(n) if weight is not None else None
    b = bias.repeat(n) if bias is not None else None
    out = batch_norm(folded, rm, rv, w, b, use_input_stats, momentum, eps)
    if use_input_stats:
        with tdx.no_grad():
            if running_mean is not None:
                running_mean.copy_(rm.reshape(n, c).mean(0))
            if running_var is not None:
                running_var.copy_(rv.reshape(n, c).mean(0))
    return out.reshape(tuple(x.shape))
