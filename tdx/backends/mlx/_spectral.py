"""``torch.fft`` on MLX: each transform of torch's namespace as ``fft_<name>`` on native arrays.

MLX's ``mx.fft`` computes in complex64 only, so float64 and complex128 inputs are refused with
a DtypeError (a float64 result would silently lose half its digits); integer and bool inputs
compute in float32, as torch's. The Hermitian transforms, which MLX lacks, are the real ones of
the conjugate with the normalization swapped: ``hfftn(x) = irfftn(conj(x))`` scaled as the forward
transform, ``ihfftn(x) = conj(rfftn(x))`` scaled as the inverse. MLX differentiates every ``mx.fft``
op. Must never import torch or the facade.
"""

from __future__ import annotations

import mlx.core as mx

from ..._errors import DtypeError, OpDtypeError, TdxRuntimeError

_SWAP = {"backward": "forward", "forward": "backward", "ortho": "ortho"}


def _norm(norm):
    norm = "backward" if norm is None else norm
    if norm not in _SWAP:
        raise TdxRuntimeError(f"Invalid normalization mode: {norm}")
    return norm


def _input(op, x, real=False):
    """``x`` in the dtype MLX transforms it in (float32 or complex64)."""
    if x.dtype == mx.float64:
        raise DtypeError(f"fft.{op}: float64 input needs complex128, which MLX cannot hold (its FFT computes in "
                         "complex64 only); accepted on MLX: float32, complex64, integer and bool")
    if x.dtype in (mx.float16, mx.bfloat16):
        raise OpDtypeError(f"fft.{op}: Unsupported dtype {'Half' if x.dtype == mx.float16 else 'BFloat16'}")
    if x.dtype == mx.complex64:
        if real:
            raise TdxRuntimeError(f"{op} expects a real input tensor, but got ComplexFloat")
        return x
    return x.astype(mx.float32)


def _axes(x, s, dim, op):
    """torch's ``(s, dim)`` for the n-D transforms: the last ``len(s)`` dims when ``dim`` is None."""
    if isinstance(dim, int):
        dim = (dim,)
    if dim is None:
        dim = tuple(range(x.ndim - len(s), x.ndim)) if s is not None else tuple(range(x.ndim))
    dim = tuple(d % x.ndim if x.ndim else d for d in dim)
    if len(set(dim)) != len(dim):
        raise TdxRuntimeError(f"fft.{op}: FFT dims must be unique")
    if s is not None:
        if len(s) != len(dim):
            raise TdxRuntimeError(f"When given, dim and shape arguments must have the same length, got "
                                  f"{len(dim)} and {len(s)}")
        s = tuple(x.shape[d] if n == -1 else n for n, d in zip(s, dim))
    return s, dim


class MLXSpectralOps:
    """The functions of ``torch.fft`` on MLX arrays (``fft_<name>``)."""

    __slots__ = ()

    def _one(self, fn, op, x, n, dim, norm, real=False):
        x = _input(op, x, real)
        if n is not None and n < 1:
            raise TdxRuntimeError(f"Invalid number of data points ({n}) specified")
        return fn(x, n, dim, _norm(norm), stream=self.s)

    def _many(self, fn, op, x, s, dim, norm, real=False):
        x = _input(op, x, real)
        s, dim = _axes(x, s, dim, op)
        return fn(x, s, list(dim), _norm(norm), stream=self.s)

    def fft_fft(self, x, n=None, dim=-1, norm=None):
        return self._one(mx.fft.fft, "fft", x, n, dim, norm)

    def fft_ifft(self, x, n=None, dim=-1, norm=None):
        return self._one(mx.fft.ifft, "ifft", x, n, dim, norm)

    def fft_rfft(self, x, n=None, dim=-1, norm=None):
        return self._one(mx.fft.rfft, "rfft", x, n, dim, norm, real=True)

    def fft_irfft(self, x, n=None, dim=-1, norm=None):
        x = _input("irfft", x).astype(mx.complex64)
        return self._one(mx.fft.irfft, "irfft", x, n, dim, norm)

    def fft_hfft(self, x, n=None, dim=-1, norm=None):
        x = mx.conj(_input("hfft", x).astype(mx.complex64))
        return self._one(mx.fft.irfft, "hfft", x, n, dim, _SWAP[_norm(norm)])

    def fft_ihfft(self, x, n=None, dim=-1, norm=None):
        return mx.conj(self._one(mx.fft.rfft, "ihfft", x, n, dim, _SWAP[_norm(norm)], real=True))

    def fft_fftn(self, x, s=None, dim=None, norm=None):
        return self._many(mx.fft.fftn, "fftn", x, s, dim, norm)

    def fft_ifftn(self, x, s=None, dim=None, norm=None):
        return self._many(mx.fft.ifftn, "ifftn", x, s, dim, norm)

    def fft_rfftn(self, x, s=None, dim=None, norm=None):
        return self._many(mx.fft.rfftn, "rfftn", x, s, dim, norm, real=True)

    def fft_irfftn(self, x, s=None, dim=None, norm=None):
        return self._many(mx.fft.irfftn, "irfftn", _input("irfftn", x).astype(mx.complex64), s, dim, norm)

    def fft_hfftn(self, x, s=None, dim=None, norm=None):
        x = mx.conj(_input("hfftn", x).astype(mx.complex64))
        return self._many(mx.fft.irfftn, "hfftn", x, s, dim, _SWAP[_norm(norm)])

    def fft_ihfftn(self, x, s=None, dim=None, norm=None):
        return mx.conj(self._many(mx.fft.rfftn, "ihfftn", x, s, dim, _SWAP[_norm(norm)], real=True))

    def fft_fft2(self, x, s=None, dim=(-2, -1), norm=None):
        return self.fft_fftn(x, s, dim, norm)

    def fft_ifft2(self, x, s=None, dim=(-2, -1), norm=None):
        return self.fft_ifftn(x, s, dim, norm)

    def fft_rfft2(self, x, s=None, dim=(-2, -1), norm=None):
        return self.fft_rfftn(x, s, dim, norm)

    def fft_irfft2(self, x, s=None, dim=(-2, -1), norm=None):
        return self.fft_irfftn(x, s, dim, norm)

    def fft_hfft2(self, x, s=None, dim=(-2, -1), norm=None):
        return self.fft_hfftn(x, s, dim, norm)

    def fft_ihfft2(self, x, s=None, dim=(-2, -1), norm=None):
        return self.fft_ihfftn(x, s, dim, norm)
