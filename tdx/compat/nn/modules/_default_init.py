"""The default initialisations of the layer modules (``Linear``, ``Bilinear``, ``Embedding``...), through
``tdx.nn.init`` (torch's draws in torch's order, so that on a torch device a freshly built layer
holds exactly torch's parameters for the same seed).

MLX's uniform sampler refuses float64, so a float64 parameter on MLX takes float32 draws,
widened (the same distribution at float32's resolution). This module must never import torch
or mlx.
"""

from __future__ import annotations

import math

import tdx
from .. import init as nn_init


def _drawn(tensor, draw):
    """``draw(tensor)``, or, where MLX cannot draw ``tensor``'s float64, ``draw`` of a float32 copy widened."""
    if tensor.dtype is tdx.float64 and tensor.device.type == "mlx":
        tmp = tdx.empty(tuple(tensor.shape), dtype=tdx.float32, device=tensor.device)
        draw(tmp)
        with tdx.no_grad():
            return tensor.copy_(tmp)
    return draw(tensor)


def fan_in(weight) -> int:
    """``weight.size(1) * receptive field`` (torch's fan-in of a weight of 2 or more dims)."""
    if weight.ndim < 2:
        raise tdx.TdxValueError(f"Fan in and fan out can not be computed for tensor with fewer than 2 dimensions "
                                f"(got {weight.ndim})")
    return weight.shape[1] * math.prod(weight.shape[2:])


def uniform_(tensor, low: float, high: float):
    """Fill ``tensor`` with draws from ``U(low, high)``, outside autograd."""
    return _drawn(tensor, lambda t: nn_init.uniform_(t, low, high))


def normal_(tensor, mean: float = 0.0, std: float = 1.0):
    """Fill ``tensor`` with draws from ``N(mean, std**2)``, outside autograd."""
    return nn_init.normal_(tensor, mean, std)


def kaiming_uniform_(weight, a: float = 0.0):
    """torch's ``kaiming_uniform_(weight, a, mode="fan_in", nonlinearity="leaky_relu")``."""
    return _drawn(weight, lambda t: nn_init.kaiming_uniform_(t, a=a))


def fill_(tensor, value):
    """Fill ``tensor`` with ``value``, outside autograd."""
    return nn_init.constant_(tensor, value)
