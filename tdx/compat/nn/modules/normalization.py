"""Normalization modules of ``tdx.nn``: ``LayerNorm``, ``GroupNorm``, ``RMSNorm`` and ``LocalResponseNorm``
(batch and instance norms live with the convolution modules;
torch's legacy ``CrossMapLRN2d``, whose window and hand-written backward differ from
``LocalResponseNorm``'s, is not provided).

Affine parameters start as ones (weights) and zeros (biases), as torch's. This module must never
import torch or mlx.
"""

from __future__ import annotations

import numbers

import tdx
from .. import functional as F
from ..parameter import Parameter
from . import _default_init as init
from .module import Module

__all__ = ["LayerNorm", "GroupNorm", "RMSNorm", "LocalResponseNorm"]
__tdx_partial__ = True  # torch's classes here that tdx has not built refuse at use (tdx.aliasing.torch_paths)


def _shape(normalized_shape) -> tuple:
    if isinstance(normalized_shape, numbers.Integral):
        return (int(normalized_shape),)
    return tuple(normalized_shape)


class LayerNorm(Module):
    """Normalize the trailing ``normalized_shape`` dims to zero mean and unit variance, then apply an
    elementwise affine map.

    Args:
        normalized_shape: an int or the shape of the trailing dims.
        eps: added to the variance. Default: 1e-5.
        elementwise_affine: learn ``weight`` (ones) and, with ``bias``, ``bias`` (zeros).
        bias: learn a bias (when ``elementwise_affine``).
        device: device of the parameters.
        dtype: dtype of the parameters.
    """

    __constants__ = ["normalized_shape", "eps", "elementwise_affine"]

    def __init__(self, normalized_shape, eps: float = 1e-5, elementwise_affine: bool = True, bias: bool = True,
                 device=None, dtype=None) -> None:
        super().__init__()
        self.normalized_shape = _shape(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(tdx.empty(self.normalized_shape, device=device, dtype=dtype))
            if bias:
                self.bias = Parameter(tdx.empty(self.normalized_shape, device=device, dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Weights to ones, biases to zeros."""
        if self.elementwise_affine:
            init.fill_(self.weight, 1.0)
            if self.bias is not None:
                init.fill_(self.bias, 0.0)

    def forward(self, input):  # noqa: A002 - torch's name
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}, "
                f"bias={self.bias is not None}")


class GroupNorm(Module):
    """Normalize each of ``num_groups`` groups of channels of ``(N, C, *)`` input, then apply a
    per-channel affine map.

    Args:
        num_groups: the number of groups; must divide ``num_channels``.
        num_channels: ``C``.
        eps: added to the variance. Default: 1e-5.
        affine: learn per-channel ``weight`` (ones) and, with ``bias``, ``bias`` (zeros).
        device: device of the parameters.
        dtype: dtype of the parameters.
        bias: learn a bias (when ``affine``).

    Raises:
        TdxValueError: ``num_channels`` is not divisible by ``num_groups``.
    """

    __constants__ = ["num_groups", "num_channels", "eps", "affine"]

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5, affine: bool = True, device=None,
                 dtype=None, *, bias: bool = True) -> None:
        super().__init__()
        if num_groups == 0 or num_channels % num_groups != 0:
            raise tdx.TdxValueError(f"num_channels ({num_channels}) must be divisible by num_groups ({num_groups})")
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        self.affine = affine
        if affine:
            self.weight = Parameter(tdx.empty(num_channels, device=device, dtype=dtype))
            if bias:
                self.bias = Parameter(tdx.empty(num_channels, device=device, dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Weights to ones, biases to zeros."""
        if self.affine:
            init.fill_(self.weight, 1.0)
            if self.bias is not None:
                init.fill_(self.bias, 0.0)

    def forward(self, input):  # noqa: A002 - torch's name
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")


class RMSNorm(Module):
    """``x / sqrt(mean(x**2) + eps) * weight`` over the trailing ``normalized_shape`` dims.

    Args:
        normalized_shape: an int or the shape of the trailing dims.
        eps: added to the mean square; the compute dtype's machine epsilon when None.
        elementwise_affine: learn ``weight`` (ones).
        device: device of the weight.
        dtype: dtype of the weight.
    """

    __constants__ = ["normalized_shape", "eps", "elementwise_affine"]

    def __init__(self, normalized_shape, eps=None, elementwise_affine: bool = True, device=None,
                 dtype=None) -> None:
        super().__init__()
        self.normalized_shape = _shape(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(tdx.empty(self.normalized_shape, device=device, dtype=dtype))
        else:
            self.register_parameter("weight", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """The weight to ones."""
        if self.elementwise_affine:
            init.fill_(self.weight, 1.0)

    def forward(self, x):
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class LocalResponseNorm(Module):
    """Divide each value by ``(k + alpha * mean of the squares of size neighbouring channels)**beta``."""

    __constants__ = ["size", "alpha", "beta", "k"]

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0) -> None:
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):  # noqa: A002 - torch's name
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"
