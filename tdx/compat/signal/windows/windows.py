"""torch.signal.windows' window functions (bartlett ... nuttall), composed from tdx ops.

Each follows torch's definition: the window's sample positions are one ``tdx.linspace`` (created
with ``requires_grad`` when asked, so the result is a non-leaf of it, as torch's), mapped through
``exp``/``sin``/``cos``/``i0``; ``sym=False`` gives the periodic window (one sample longer, the
last dropped). Results are float32 or float64 on any device; other dtypes, negative lengths,
non-strided layouts and out-of-domain parameters raise torch's ValueError (typed). Must never
import a framework.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import tdx as _t

from ...._errors import TdxTypeError, TdxValueError

__all__ = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine", "general_hamming", "hamming",
           "hann", "kaiser", "nuttall"]


def _checks(name, M, dtype, layout):
    """``dtype`` resolved to the default dtype; torch's argument checks of every window function.

    Raises:
        TdxValueError: a negative ``M``, a non-strided ``layout`` or a dtype other than float32/float64.
    """
    dtype = _t.get_default_dtype() if dtype is None else dtype
    if M < 0:
        raise TdxValueError(f"{name} requires non-negative window length, got M={M}")
    if layout is not None and str(layout).rsplit(".", 1)[-1] != "strided":
        raise TdxValueError(f"{name} is implemented for strided tensors only, got: {layout}")
    if dtype not in (_t.float32, _t.float64):
        raise TdxValueError(f"{name} expects float32 or float64 dtypes, got: {dtype}")
    return dtype


def _trivial(M, dtype, device, requires_grad, one=True):
    """The window of length 0 (empty) or, when ``one``, 1 (``[1.]``); None otherwise."""
    if M == 0:
        return _t.empty((0,), dtype=dtype, device=device, requires_grad=requires_grad)
    if M == 1 and one:
        return _t.ones((1,), dtype=dtype, device=device, requires_grad=requires_grad)
    return None


def _span(M, sym):
    """The denominator length: ``M`` for a periodic window longer than one sample, ``M - 1`` otherwise."""
    return M if not sym and M > 1 else M - 1


def exponential(M, *, center=None, tau=1.0, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """``exp(-|n - center| / tau)``; ``center`` defaults to the window's middle (only periodic windows take one).

    Raises:
        TdxValueError: ``tau <= 0``, or ``center`` given with ``sym=True``.
    """
    dtype = _checks("exponential", M, dtype, layout)
    if tau <= 0:
        raise TdxValueError(f"Tau must be positive, got: {tau} instead.")
    if sym and center is not None:
        raise TdxValueError("Center must be None for symmetric windows")
    if M == 0:
        return _trivial(M, dtype, device, requires_grad)
    if center is None:
        center = _span(M, sym) / 2.0
    k = _t.linspace(-center / tau, (-center + (M - 1)) / tau, M, dtype=dtype, device=device,
                    requires_grad=requires_grad)
    return _t.exp(-_t.abs(k))


def cosine(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """The sine window ``sin(pi (n + 1/2) / M)``."""
    dtype = _checks("cosine", M, dtype, layout)
    if M == 0:
        return _trivial(M, dtype, device, requires_grad)
    c = math.pi / (M + 1 if not sym and M > 1 else M)
    k = _t.linspace(0.5 * c, (0.5 + (M - 1)) * c, M, dtype=dtype, device=device, requires_grad=requires_grad)
    return _t.sin(k)


def gaussian(M, *, std=1.0, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """``exp(-(n - middle)^2 / (2 std^2))``.

    Raises:
        TdxValueError: ``std <= 0``.
    """
    dtype = _checks("gaussian", M, dtype, layout)
    if std <= 0:
        raise TdxValueError(f"Standard deviation must be positive, got: {std} instead.")
    if M == 0:
        return _trivial(M, dtype, device, requires_grad)
    start, c = -_span(M, sym) / 2.0, 1 / (std * math.sqrt(2))
    k = _t.linspace(start * c, (start + (M - 1)) * c, M, dtype=dtype, device=device, requires_grad=requires_grad)
    return _t.exp(-(k ** 2))


def kaiser(M, *, beta=12.0, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """``I0(beta sqrt(1 - (2n/(M-1) - 1)^2)) / I0(beta)``.

    Raises:
        TdxValueError: ``beta < 0``.
    """
    import tdx.special as _special

    dtype = _checks("kaiser", M, dtype, layout)
    if beta < 0:
        raise TdxValueError(f"beta must be non-negative, got: {beta} instead.")
    out = _trivial(M, dtype, device, requires_grad)
    if out is not None:
        return out
    b = _t.full((), beta, dtype=dtype, device=device)
    c = 2.0 * b / (M if not sym else M - 1)
    end = _t.minimum(b, -b + (M - 1) * c)  # in the window's dtype, as torch's
    k = _t.linspace(-beta, end.item(), M, dtype=dtype, device=device, requires_grad=requires_grad)
    return _special.i0(_t.sqrt(b * b - k ** 2)) / _special.i0(b)


def general_cosine(M, *, a, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """``sum_i (-1)^i a_i cos(2 pi i n / (M - 1))`` for the coefficients ``a``.

    Raises:
        TdxTypeError: ``a`` is not a list or tuple.
        TdxValueError: ``a`` is empty.
    """
    dtype = _checks("general_cosine", M, dtype, layout)
    out = _trivial(M, dtype, device, requires_grad)
    if out is not None:
        return out
    if not isinstance(a, Iterable):
        raise TdxTypeError(f"Coefficients must be a list/tuple, got {type(a).__name__}")
    a = list(a)
    if not a:
        raise TdxValueError("Coefficients cannot be empty")
    c = 2 * math.pi / (M if not sym else M - 1)
    k = _t.linspace(0, (M - 1) * c, M, dtype=dtype, device=device, requires_grad=requires_grad)
    coef = _t.tensor([(-1) ** i * float(w) for i, w in enumerate(a)], dtype=dtype, device=device,
                     requires_grad=requires_grad)
    i = _t.arange(len(a), dtype=dtype, device=device)
    return (coef.unsqueeze(-1) * _t.cos(i.unsqueeze(-1) * k)).sum(0)


def general_hamming(M, *, alpha=0.54, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """``alpha - (1 - alpha) cos(2 pi n / (M - 1))``."""
    return general_cosine(M, a=[alpha, 1.0 - alpha], sym=sym, dtype=dtype, layout=layout, device=device,
                          requires_grad=requires_grad)


def hamming(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """The Hamming window: ``general_hamming`` with ``alpha = 0.54``."""
    return general_hamming(M, sym=sym, dtype=dtype, layout=layout, device=device, requires_grad=requires_grad)


def hann(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """The Hann window: ``general_hamming`` with ``alpha = 0.5``."""
    return general_hamming(M, alpha=0.5, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


def blackman(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """The Blackman window: ``general_cosine`` with ``a = [0.42, 0.5, 0.08]``."""
    dtype = _checks("blackman", M, dtype, layout)
    return general_cosine(M, a=[0.42, 0.5, 0.08], sym=sym, dtype=dtype, layout=layout, device=device,
                          requires_grad=requires_grad)


def bartlett(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """The triangular window ``1 - |2n/(M-1) - 1|``."""
    dtype = _checks("bartlett", M, dtype, layout)
    out = _trivial(M, dtype, device, requires_grad)
    if out is not None:
        return out
    c = 2 / (M if not sym else M - 1)
    k = _t.linspace(-1, -1 + (M - 1) * c, M, dtype=dtype, device=device, requires_grad=requires_grad)
    return 1 - _t.abs(k)


def nuttall(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """The minimum 4-term Blackman-Harris window of Nuttall."""
    return general_cosine(M, a=[0.3635819, 0.4891775, 0.1365995, 0.0106411], sym=sym, dtype=dtype, layout=layout,
                          device=device, requires_grad=requires_grad)
