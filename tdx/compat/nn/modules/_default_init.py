"""The default initialisations of the layer modules (``Linear``, ``Bilinear``, ``Embedding``...),
drawn with tdx's in-place random ops in torch's order, so that on a torch device a freshly built
layer holds exactly torch's parameters for the same seed.

These follow ``torch.nn.init``'s formulas (fan computation, kaiming uniform bound); they stay
private to the layer modules. MLX's uniform sampler refuses float64, so float64 parameters on
MLX draw float32 values and widen them. This module must never import torch or mlx.
"""

from __future__ import annotations

import math

import tdx


def fan_in(weight) -> int:
    """``weight.size(1) * receptive field`` (torch's fan-in of a weight of 2 or more dims)."""
    if weight.ndim < 2:
        raise tdx.TdxValueError(f"Fan in and fan out can not be computed for tensor with fewer than 2 dimensions "
                                f"(got {weight.ndim})")
    return weight.shape[1] * math.prod(weight.shape[2:])


def uniform_(tensor, low: float, high: float):
    """Fill ``tensor`` with draws from ``U(low, high)``, outside autograd."""
    with tdx.no_grad():
        if tensor.dtype is tdx.float64 and tensor.device.type == "mlx":
            drawn = tdx.empty(tuple(tensor.shape), dtype=tdx.float32, device=tensor.device).uniform_(low, high)
            return tensor.copy_(drawn)
        return tensor.uniform_(low, high)


def normal_(tensor, mean: float = 0.0, std: float = 1.0):
    """Fill ``tensor`` with draws from ``N(mean, std**2)``, outside autograd."""
    with tdx.no_grad():
        return tensor.normal_(mean, std)


def kaiming_uniform_(weight, a: float = 0.0):
    """torch's ``kaiming_uniform_(weight, a, mode="fan_in", nonlinearity="leaky_relu")``."""
    if weight.numel() == 0:
        return weight
    gain = math.sqrt(2.0 / (1 + a ** 2))
    std = gain / math.sqrt(fan_in(weight))
    bound = math.sqrt(3.0) * std
    return uniform_(weight, -bound, bound)


def fill_(tensor, value):
    """Fill ``tensor`` with ``value``, outside autograd."""
    with tdx.no_grad():
        return tensor.fill_(value)
