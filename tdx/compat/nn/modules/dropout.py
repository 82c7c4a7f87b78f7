"""Dropout modules of ``tdx.nn``: ``Dropout``, ``Dropout1d/2d/3d`` (whole channels), ``AlphaDropout`` and
``FeatureAlphaDropout``. Each drops only while the module is in training mode
(``module.train()``) and is the identity after ``module.eval()``.

This module must never import torch or mlx.
"""

from __future__ import annotations

import tdx
from .. import functional as F
from .module import Module

__all__ = ["Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout"]


class _DropoutNd(Module):
    """A dropout module: probability ``p`` of zeroing, optionally in place.

    Raises:
        TdxValueError: ``p`` is outside ``[0, 1]``.
    """

    __constants__ = ["p", "inplace"]
    _fn = None

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if p < 0 or p > 1:
            raise tdx.TdxValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def forward(self, input):  # noqa: A002 - torch's name
        return type(self)._fn(input, self.p, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    """Zero each element with probability ``p`` and scale the rest by ``1 / (1 - p)`` while training."""

    _fn = staticmethod(F.dropout)


class Dropout1d(_DropoutNd):
    """Zero whole channels of ``(N, C, L)`` or ``(C, L)`` input while training."""

    _fn = staticmethod(F.dropout1d)


class Dropout2d(_DropoutNd):
    """Zero whole channels of ``(N, C, H, W)`` input while training."""

    _fn = staticmethod(F.dropout2d)


class Dropout3d(_DropoutNd):
    """Zero whole channels of ``(N, C, D, H, W)`` or ``(C, D, H, W)`` input while training."""

    _fn = staticmethod(F.dropout3d)


class AlphaDropout(_DropoutNd):
    """Dropout that keeps SELU networks' zero mean and unit variance, while training."""

    _fn = staticmethod(F.alpha_dropout)


class FeatureAlphaDropout(_DropoutNd):
    """Alpha dropout of whole channels, while training."""

    _fn = staticmethod(F.feature_alpha_dropout)
