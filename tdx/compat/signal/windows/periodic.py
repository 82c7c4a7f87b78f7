"""torch's top-level window functions (``torch.hann_window`` ... ``torch.kaiser_window``), composed from tdx ops.

These are the ones ``torch.stft`` users pass: periodic by default (``periodic=True`` computes the
window one sample longer and drops the last), any floating dtype, and ``requires_grad`` marks
the result itself (a leaf), as torch's factories do. ``tdx`` exposes them at its top level. Must
never import a framework.
"""

from __future__ import annotations

import math

import tdx as _t

from .... import _dtypes
from ...._errors import TdxNotImplementedError, TdxRuntimeError, UnsupportedOpError

__all__ = ["bartlett_window", "blackman_window", "hamming_window", "hann_window", "kaiser_window"]


def _start(name, n, periodic, dtype, device, requires_grad, layout=None, pin_memory=False):
    """(``arange(n')`` for the window's computation length n', or the finished window of length 0/1).

    Raises:
        TdxRuntimeError: a negative length, a non-floating dtype or a non-strided layout (torch's RuntimeError).
        UnsupportedOpError: ``pin_memory=True`` (tdx has no pinned host memory).
    """
    if layout is not None and str(layout).rsplit(".", 1)[-1] != "strided":
        raise TdxRuntimeError(f"{name} is implemented for strided tensors only, got: {layout}")
    if pin_memory:
        raise UnsupportedOpError(f"{name}(pin_memory=True): tdx has no pinned host memory; accepted: False")
    dtype = _t.get_default_dtype() if dtype is None else _dtypes.as_dtype(dtype)
    if dtype.is_complex:  # torch's arange refuses it first
        raise TdxNotImplementedError(f'"arange_cpu" not implemented for \'{_dtypes.scalar_name(dtype)}\'')
    if not dtype.is_floating_point:
        raise TdxRuntimeError(f"{name} expects floating point dtypes, got: {dtype}")
    if n < 0:
        raise TdxRuntimeError(f"{name} requires non-negative window_length, got window_length={n}")
    if n <= 1:
        make = _t.zeros if n == 0 else _t.ones
        return None, make((n,), dtype=dtype, device=device).requires_grad_(requires_grad)
    return _t.arange(n + 1 if periodic else n, dtype=dtype, device=device), None


def _finish(window, periodic, requires_grad):
    if periodic:
        window = window[:-1]
    return window.requires_grad_(requires_grad) if requires_grad else window


def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None, layout=None, device=None,
                   requires_grad=False, pin_memory=False):
    """``alpha - beta cos(2 pi n / (N - 1))``, N the computation length."""
    n, done = _start("hamming_window", window_length, periodic, dtype, device, requires_grad, layout,
                     pin_memory)
    if done is not None:
        return done
    w = _t.cos(n * (2 * math.pi / (n.shape[0] - 1))) * -beta + alpha
    return _finish(w, periodic, requires_grad)


def hann_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False,
                pin_memory=False):
    """``0.5 - 0.5 cos(2 pi n / (N - 1))``: :func:`hamming_window` with ``alpha = beta = 0.5``."""
    return hamming_window(window_length, periodic, 0.5, 0.5, dtype=dtype, layout=layout, device=device,
                          requires_grad=requires_grad, pin_memory=pin_memory)


def blackman_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False,
                    pin_memory=False):
    """``0.42 - 0.5 cos(2 pi n / (N - 1)) + 0.08 cos(4 pi n / (N - 1))``."""
    n, done = _start("blackman_window", window_length, periodic, dtype, device, requires_grad, layout,
                     pin_memory)
    if done is not None:
        return done
    x = n * (math.pi / (n.shape[0] - 1))
    w = _t.cos(x * 4) * 0.08 - _t.cos(x * 2) * 0.5 + 0.42
    return _finish(w, periodic, requires_grad)


def bartlett_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False,
                    pin_memory=False):
    """The triangular window ``1 - |2n / (N - 1) - 1|``."""
    n, done = _start("bartlett_window", window_length, periodic, dtype, device, requires_grad, layout,
                     pin_memory)
    if done is not None:
        return done
    size = n.shape[0]
    x = n * (2.0 / (size - 1))
    w = _t.where(n >= ((size - 1) >> 1) + 1, 2 - x, x)
    return _finish(w, periodic, requires_grad)


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, layout=None, device=None,
                  requires_grad=False, pin_memory=False):
    """``I0(beta sqrt(1 - ((n - a) / a)^2)) / I0(beta)`` with ``a = (N - 1) / 2``."""
    import tdx.special as _special

    n, done = _start("kaiser_window", window_length, periodic, dtype, device, requires_grad, layout,
                     pin_memory)
    if done is not None:
        return done
    a = (n.shape[0] - 1) / 2.0
    b = _t.full((), beta, dtype=n.dtype, device=n.device)
    w = _special.i0(b * _t.sqrt(1 - ((n - a) / a) ** 2)) / _special.i0(b)
    return _finish(w, periodic, requires_grad)
