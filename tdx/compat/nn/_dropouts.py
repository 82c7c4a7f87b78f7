"""Channel-wise dropout of ``tdx.nn.functional``: ``dropout1d``, ``dropout2d``, ``dropout3d`` and
``feature_alpha_dropout``, which zero (or, for alpha dropout, saturate) whole channels.

Each function has ``torch.nn.functional``'s signature, checks, warnings and error kinds. The
keep-mask is drawn per ``(N, C)`` channel with tdx's random ops (on a torch device from torch's
generator) and is a constant to autograd. This module must never import torch or mlx.
"""

from __future__ import annotations

import math
import warnings

import tdx
from ._activations import need_tensor, write_inplace
from ..._errors import TdxRuntimeError
from ._layers import _SELU_NEG, _check_p

__all__ = ["dropout1d", "dropout2d", "dropout3d", "feature_alpha_dropout"]


def _channel_mask(x, p: float):
    """A ``(N, C, 1, ...)`` mask of ``x``'s dtype, 1 with probability ``1 - p``."""
    shape = tuple(x.shape[:2]) + (1,) * (x.ndim - 2)
    return tdx.empty(shape, dtype=x.dtype, device=x.device).bernoulli_(1 - p)


def _feature_dropout(x, p: float, training: bool, inplace: bool, alpha: bool):
    """torch's feature dropout of a batched ``(N, C, *)`` input (``alpha``: alpha dropout's affine form)."""
    if not training or p == 0 or x.numel() == 0:
        return x

    def compute(s):
        if p == 1:
            return s * 0
        with tdx.no_grad():
            keep = _channel_mask(s, p)
        if not alpha:
            return s * (keep / (1 - p))
        a = 1.0 / math.sqrt((_SELU_NEG * _SELU_NEG * p + 1) * (1 - p))
        return s * (keep * a) + ((keep - 1) * (_SELU_NEG * a) + _SELU_NEG * a * p)

    return write_inplace(x, compute) if inplace else compute(x)


def _batched(x, p, training, inplace, batched: bool):
    """Feature dropout of ``x``, which is unbatched (one sample) unless ``batched``."""
    if batched:
        return _feature_dropout(x, p, training, inplace, False)
    if not training or p == 0 or x.numel() == 0:
        return x
    out = _feature_dropout(x.unsqueeze(0), p, training, inplace, False)  # in place through the view
    return x if inplace else out.squeeze(0)


def dropout1d(input, p=0.5, training=True, inplace=False):  # noqa: A002 - torch's name
    """Zero whole channels of ``(N, C, L)`` (or unbatched ``(C, L)``) input with probability ``p``, scaling
    the rest by ``1 / (1 - p)`` (only when ``training``).

    Raises:
        TdxValueError: ``p`` is outside ``[0, 1]``.
        TdxRuntimeError: ``input`` is not 2-D or 3-D.
    """
    _check_p(p)
    x = need_tensor(input, "dropout1d")
    if x.ndim not in (2, 3):
        raise TdxRuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {x.ndim}D input. Note that "
                              "dropout1d exists to provide channel-wise dropout on inputs with 1 spatial dimension, "
                              "a channel dimension, and an optional batch dimension (i.e. 2D or 3D inputs).")
    return _batched(x, p, training, inplace, x.ndim == 3)


def dropout2d(input, p=0.5, training=True, inplace=False):  # noqa: A002 - torch's name
    """Zero whole channels of ``(N, C, H, W)`` input with probability ``p`` (a 3-D input is taken as
    ``(N, C, L)`` with torch's warning; other dims warn too and are treated as batched).

    Raises:
        TdxValueError: ``p`` is outside ``[0, 1]``.
    """
    _check_p(p)
    x = need_tensor(input, "dropout2d")
    if x.ndim not in (3, 4):
        warnings.warn(f"dropout2d: Received a {x.ndim}-D input to dropout2d, which is deprecated and will result in "
                      "an error in a future release. To retain the behavior and silence this warning, please use "
                      "dropout instead. Note that dropout2d exists to provide channel-wise dropout on inputs with 2 "
                      "spatial dimensions, a channel dimension, and an optional batch dimension (i.e. 3D or 4D "
                      "inputs).", stacklevel=2)
    if x.ndim == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout behavior "
                      "is desired - input is interpreted as shape (N, C, L), where C is the channel dim. This behavior "
                      "will change in a future release to interpret the input as one without a batch dimension, i.e. "
                      "shape (C, H, W). To maintain the 1D channel-wise dropout behavior, please switch to using "
                      "dropout1d instead.", stacklevel=2)
    if x.ndim < 2:
        raise TdxRuntimeError(f"Feature dropout requires at least 2 dimensions in the input (got {x.ndim})")
    return _feature_dropout(x, p, training, inplace, False)


def dropout3d(input, p=0.5, training=True, inplace=False):  # noqa: A002 - torch's name
    """Zero whole channels of ``(N, C, D, H, W)`` (or unbatched ``(C, D, H, W)``) input with probability ``p``.

    Raises:
        TdxValueError: ``p`` is outside ``[0, 1]``.
    """
    _check_p(p)
    x = need_tensor(input, "dropout3d")
    if x.ndim not in (4, 5):
        warnings.warn(f"dropout3d: Received a {x.ndim}-D input to dropout3d, which is deprecated and will result in "
                      "an error in a future release. To retain the behavior and silence this warning, please use "
                      "dropout instead. Note that dropout3d exists to provide channel-wise dropout on inputs with 3 "
                      "spatial dimensions, a channel dimension, and an optional batch dimension (i.e. 4D or 5D "
                      "inputs).", stacklevel=2)
    if x.ndim == 0:  # even unsqueezed into a batch of one, it has no channel dim
        raise TdxRuntimeError(f"Feature dropout requires at least 2 dimensions in the input (got {x.ndim})")
    return _batched(x, p, training, inplace, x.ndim == 5)


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):  # noqa: A002 - torch's name
    """Alpha dropout of whole channels: a dropped channel takes SELU's negative saturation value, and the
    result is scaled and shifted to keep zero mean and unit variance.

    Raises:
        TdxValueError: ``p`` is outside ``[0, 1]``.
        TdxRuntimeError: ``input`` has fewer than 2 dims (when training).
    """
    _check_p(p)
    x = need_tensor(input, "feature_alpha_dropout")
    if training and p != 0 and x.ndim < 2:
        raise TdxRuntimeError(f"Feature dropout requires at least 2 dimensions in the input (got {x.ndim})")
    return _feature_dropout(x, p, training, inplace, True)
