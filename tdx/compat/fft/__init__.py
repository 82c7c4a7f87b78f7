"""``tdx.fft``: every function of ``torch.fft``, on every executor.

The transforms forward torch's arguments to :func:`tdx._tensor.dispatch.call`: torch's own
``torch.fft`` on a torch executor; on MLX, :mod:`tdx.backends.mlx._spectral` (``mx.fft``, complex64
only: float64 input is a DtypeError there, never a silent downcast). ``fftfreq``/``rfftfreq`` and
``fftshift``/``ifftshift`` are composed from tdx's own ops (``arange``, ``roll``). Must never
import a framework and holds no per-executor logic.
"""

from __future__ import annotations

from ... import _dtypes as D
from ..._errors import TdxRuntimeError
from ..._tensor import creation as _creation
from ..._tensor.tensor import Tensor
from ..._tensor.dispatch import accept_out as _accept_out, call as _call

__all__ = ["Tensor", "fft", "fft2", "fftfreq", "fftn", "fftshift", "hfft", "hfft2", "hfftn", "ifft", "ifft2",
           "ifftn", "ifftshift", "ihfft", "ihfft2", "ihfftn", "irfft", "irfft2", "irfftn", "rfft", "rfft2",
           "rfftfreq", "rfftn"]


def _one(name):
    def transform(input, n=None, dim=-1, norm=None):  # noqa: A002 - torch's name
        return _call("fft", name, input, n, dim, norm)

    transform.__name__ = transform.__qualname__ = name
    transform.__doc__ = (f"torch.fft.{name}: the one-dimensional transform of ``input`` over ``dim``, padded or "
                         "trimmed to ``n`` points; ``norm`` is ``\"backward\"`` (default), ``\"ortho\"`` or "
                         "``\"forward\"``.")
    return transform


def _many(name, two):
    if two:
        def transform(input, s=None, dim=(-2, -1), norm=None):  # noqa: A002
            return _call("fft", name, input, s, dim, norm)
    else:
        def transform(input, s=None, dim=None, norm=None):  # noqa: A002
            return _call("fft", name, input, s, dim, norm)

    transform.__name__ = transform.__qualname__ = name
    transform.__doc__ = (f"torch.fft.{name}: the transform of ``input`` over ``dim`` (the last two dims for the "
                         "2-D form, all or the last ``len(s)`` for the n-D form), each padded or trimmed to ``s``.")
    return transform


fft, ifft, rfft, irfft, hfft, ihfft = (_one(n) for n in ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft"))
fft2, ifft2, rfft2, irfft2, hfft2, ihfft2 = (_many(n, True) for n in ("fft2", "ifft2", "rfft2", "irfft2", "hfft2",
                                                                      "ihfft2"))
fftn, ifftn, rfftn, irfftn, hfftn, ihfftn = (_many(n, False) for n in ("fftn", "ifftn", "rfftn", "irfftn", "hfftn",
                                                                       "ihfftn"))


def _freq_dtype(dtype):
    dtype = D.get_default_dtype() if dtype is None else D.as_dtype(dtype)
    if not dtype.is_floating_point and not dtype.is_complex:
        raise TdxRuntimeError(f"fftfreq: dtype must be a floating point or complex type, got {dtype}")
    return dtype


def fftfreq(n, d=1.0, *, dtype=None, device=None, requires_grad=False):
    """The sample frequencies of an ``n``-point transform with spacing ``d``:
    ``[0, 1, ..., (n - 1) // 2, -(n // 2), ..., -1] / (d * n)``."""
    dtype = _freq_dtype(dtype)
    k = _creation.arange(n, dtype=D.int64, device=device)
    k = k - (k >= (n + 1) // 2).to(D.int64) * n
    out = (k.to(dtype) / (d * n)).to(dtype)
    return out.requires_grad_() if requires_grad else out


def rfftfreq(n, d=1.0, *, dtype=None, device=None, requires_grad=False):
    """The sample frequencies of :func:`rfft`'s ``n // 2 + 1`` outputs: ``[0, 1, ..., n // 2] / (d * n)``."""
    dtype = _freq_dtype(dtype)
    out = (_creation.arange(n // 2 + 1, dtype=D.int64, device=device).to(dtype) / (d * n)).to(dtype)
    return out.requires_grad_() if requires_grad else out


def _shift(x, dim, sign):
    dims = tuple(range(x.ndim)) if dim is None else ((dim,) if isinstance(dim, int) else tuple(dim))
    if not dims:
        return x.clone()
    shifts = tuple(sign * (x.shape[d] // 2) for d in dims)
    return x.roll(shifts, dims)


def fftshift(input, dim=None):  # noqa: A002
    """``input`` rolled so the zero frequency sits in the middle of each of ``dim`` (all dims by default)."""
    return _shift(input, dim, 1)


def ifftshift(input, dim=None):  # noqa: A002
    """The inverse of :func:`fftshift`."""
    return _shift(input, dim, -1)


def _autocast_policy():  # the autocast policy wraps this module's listed functions (compat/amp/autocast_state.py)
    import sys

    from ..amp import autocast_state

    autocast_state.install_module(sys.modules[__name__])


_accept_out(globals(), __all__)  # torch's out= on every function
_autocast_policy()
