"""MLX kernels for complex parts and bit reinterpretation: ``complex_real``, ``complex_imag`` and
``view_dtype`` (torch's ``view(dtype)``). Must never import torch or the facade.
"""

from __future__ import annotations

import mlx.core as mx

from ..._errors import TdxRuntimeError
from ._indexing import on_stream


@on_stream
class MLXComplexOps:
    """Complex parts and ``view(dtype)`` on MLX arrays."""

    __slots__ = ()

    def complex_real(self, x):
        return mx.real(x)

    def complex_imag(self, x):
        return mx.imag(x)

    def view_dtype(self, x, dtype):
        old, new = x.dtype.size, dtype.size
        if old != new and (x.ndim == 0 or (x.shape[-1] * old) % new):
            raise TdxRuntimeError(f"view(): to view a tensor as a dtype of another element size, the size of its "
                                  f"last dimension must be divisible by the ratio ({x.shape} as {dtype})")
        return mx.view(x, dtype)
