"""torch's public ``native_*`` normalization functions that also return their statistics:
``torch.native_layer_norm`` and ``torch.native_group_norm``.

Both are written with tdx tensor ops (so every executor runs them, differentiable through its
autograd): the normalized output plus the per-group ``mean`` and reciprocal standard deviation
``rstd`` (biased variance), shaped as torch's. As torch's, ``native_layer_norm``'s statistics carry
no gradient and ``native_group_norm``'s do. This module must never import a framework and holds no
per-executor special case.
"""

from __future__ import annotations

from .._errors import TdxRuntimeError
from .wrapping import exporter, need_tensor

__all__: list = []
_export = exporter(__all__)


def _stats(x, dims, eps):
    mean = x.mean(dims, keepdim=True)
    centered = x - mean
    rstd = ((centered * centered).mean(dims, keepdim=True) + eps).rsqrt()
    return centered, mean, rstd


@_export
def native_layer_norm(input, normalized_shape, weight, bias, eps):  # noqa: A002 - torch's name
    """Layer normalization over the trailing ``normalized_shape`` dims: ``(output, mean, rstd)``, the
    statistics shaped as ``input`` with the normalized dims kept as 1.

    Raises:
        TdxRuntimeError: ``input``'s trailing dims are not ``normalized_shape``.
    """
    x = need_tensor(input, "native_layer_norm")
    shape = tuple(int(n) for n in normalized_shape)
    k = len(shape)
    if k == 0 or x.ndim < k or tuple(x.shape[x.ndim - k:]) != shape:
        raise TdxRuntimeError(f"Given normalized_shape={list(shape)}, expected input with shape "
                              f"[*, {', '.join(map(str, shape))}], but got input of size{list(x.shape)}")
    centered, mean, rstd = _stats(x, tuple(range(x.ndim - k, x.ndim)), eps)
    out = centered * rstd
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out, mean.detach(), rstd.detach()


@_export
def native_group_norm(input, weight, bias, N, C, HxW, group, eps):  # noqa: A002, N803 - torch's names
    """Group normalization of ``input`` (``N`` samples, ``C`` channels, ``HxW`` positions each) in
    ``group`` groups: ``(output, mean, rstd)``, the statistics of shape ``(N, group)``.

    Raises:
        TdxRuntimeError: ``input`` does not hold ``N * C * HxW`` elements or ``C`` is not divisible
            by ``group``.
    """
    x = need_tensor(input, "native_group_norm")
    if group <= 0 or C % group:
        raise TdxRuntimeError(f"Expected number of channels in input to be divisible by num_groups, but got "
                              f"input of shape {list(x.shape)} and num_groups={group}")
    if x.numel() != N * C * HxW:
        raise TdxRuntimeError(f"Expected input to hold N * C * HxW = {N * C * HxW} elements, got input of "
                              f"shape {list(x.shape)}")
    centered, mean, rstd = _stats(x.reshape(N, group, (C // group) * HxW), (2,), eps)
    out = (centered * rstd).reshape(N, C, HxW)
    if weight is not None:
        out = out * weight.reshape(1, C, 1)
    if bias is not None:
        out = out + bias.reshape(1, C, 1)
    return out.reshape(x.shape), mean.reshape(N, group), rstd.reshape(N, group)
