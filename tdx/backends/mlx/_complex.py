"""MLX kernels for complex parts and bit reinterpretation: ``complex_real``, ``complex_imag`` and
``view_dtype`` (torch's ``view(dtype)``; between complex64 and float32 differentiable, as torch's
``view_as_real``/``view_as_complex``). Must never import torch or the facade.
"""

from __future__ import annotations

import mlx.core as mx

from ..._errors import TdxRuntimeError
from ._indexing import on_stream


@mx.custom_function
def _complex_as_pairs(x):
    """complex64 ``x`` as float32 (real, imaginary) pairs, the last dim doubled."""
    return mx.view(x, mx.float32)


@_complex_as_pairs.vjp
def _complex_as_pairs_vjp(primals, cotangent, output):
    return (mx.view(cotangent, mx.complex64),)  # the gradient of a reinterpretation is the reinterpreted one


@mx.custom_function
def _pairs_as_complex(x):
    """float32 ``x`` read as complex64, the last dim halved."""
    return mx.view(x, mx.complex64)


@_pairs_as_complex.vjp
def _pairs_as_complex_vjp(primals, cotangent, output):
    return (mx.view(cotangent, mx.float32),)


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
        if x.dtype == mx.complex64 and dtype == mx.float32:
            return _complex_as_pairs(x)
        if x.dtype == mx.float32 and dtype == mx.complex64:
            return _pairs_as_complex(x)
        return mx.view(x, dtype)
