"""Tensors built from a rule or from raw memory: ``tdx.range`` (torch's deprecated inclusive range),
``tdx.vander`` and ``tdx.frombuffer``.

This module must never import a framework.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from .. import _dtypes as D
from .._errors import TdxRuntimeError, TdxTypeError, TdxValueError
from .wrapping import exporter, need_tensor

__all__: list = []
_export = exporter(__all__)


@_export
def range(start, end, step=1, *, out=None, dtype=None, layout=None, device=None,  # noqa: A001
          requires_grad=False):
    """torch's deprecated ``range``: ``start, start + step, ...`` up to ``end`` INCLUDED, in the default
    dtype unless ``dtype`` is given (even for integer bounds); warns as torch does.

    Raises:
        TdxRuntimeError: ``step`` is zero or points away from ``end``.
        UnsupportedOpError: ``out=``.
    """
    from .creation import tensor

    warnings.warn("torch.range is deprecated and will be removed in a future release because its behavior is "
                  "inconsistent with Python's range builtin. Instead, use torch.arange, which produces values in "
                  "[start, end).", UserWarning, stacklevel=2)
    if out is not None:
        from .._errors import UnsupportedOpError

        raise UnsupportedOpError("range(): out= is not supported; assign the result instead")
    if step == 0:
        raise TdxRuntimeError("range(): step must be nonzero")
    if (end - start) / step < 0:
        raise TdxRuntimeError(f"range(): upper bound and larger bound inconsistent with step sign "
                              f"(start={start}, end={end}, step={step})")
    n = int(math.floor((end - start) / step)) + 1
    values = start + np.arange(n, dtype=np.float64) * step  # each element from the double start and step
    dt = D.get_default_dtype() if dtype is None else D.as_dtype(dtype)
    if not (dt.is_floating_point or dt.is_complex):
        values = np.trunc(values)
    t = tensor(values.tolist(), dtype=dt, device=device)
    return t.requires_grad_() if requires_grad else t


@_export(record=True)
def vander(x, N=None, increasing=False):  # noqa: N803 - torch's name
    """The Vandermonde matrix of the 1-d ``x``: columns ``x**(N-1) ... x**0`` (``increasing``: the other
    way), products of ``x`` as torch forms them; integer and bool inputs give int64.

    Raises:
        TdxRuntimeError: ``x`` is not 1-d, or ``N`` is negative.
    """
    from .creation import ones
    from .shape import cat

    x = need_tensor(x, "vander", "x")
    if x.dim() != 1:
        raise TdxRuntimeError(f"x must be a one-dimensional tensor, got {x.dim()} dims")
    n = x.shape[0] if N is None else N
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise TdxRuntimeError(f"N must be non-negative, got {N!r}")
    dt = x.dtype if (x.dtype.is_floating_point or x.dtype.is_complex) else D.int64
    x = x.to(dt)
    if n == 0:
        return ones((x.shape[0], 0), dtype=dt, device=x.device)
    cols = [ones((x.shape[0], 1), dtype=dt, device=x.device)]
    if n > 1:
        cols.append(x.unsqueeze(1).expand(x.shape[0], n - 1))
    out = cat(cols, 1).cumprod(1)
    return out if increasing else out.flip(1)


@_export
def frombuffer(buffer, *, dtype, count=-1, offset=0, requires_grad=False):
    """A 1-d cpu tensor over the bytes of a buffer-protocol object (sharing its memory, as torch's):
    ``count`` elements (-1: all) starting ``offset`` bytes in.

    Raises:
        TdxTypeError: ``buffer`` has no buffer protocol.
        TdxValueError: ``offset``/``count`` outside the buffer, or a length not a multiple of the dtype's size.
    """
    from .creation import from_numpy

    dt = D.as_dtype(dtype)
    try:
        view = memoryview(buffer)
    except TypeError:
        raise TdxTypeError(f"frombuffer(): object of type {type(buffer).__name__} does not implement the "
                           "Python buffer protocol") from None
    size, item = view.nbytes, dt.itemsize
    if not 0 <= offset < max(size, 1) or size == 0:
        raise TdxValueError(f"both buffer length ({size}) and offset ({offset}) must be greater than 0 and the "
                            "offset must be less than the buffer length")
    if count == 0 or count < -1:
        raise TdxValueError(f"expected 'count' to be a positive number or -1, got {count}")
    if count == -1:
        if (size - offset) % item:
            raise TdxValueError(f"buffer length ({size - offset} after offset) must be a multiple of element size "
                                f"({item})")
        count = (size - offset) // item
    elif offset + count * item > size:
        raise TdxValueError(f"requested buffer length ({count} * {item} bytes) after offset ({offset}) must not "
                            f"be greater than actual buffer length ({size})")
    arr = np.frombuffer(view.cast("B"), dtype=np.uint8, count=count * item, offset=offset)
    t = from_numpy(arr.view(np.int16)).view(dt) if dt.name == "bfloat16" else from_numpy(arr.view(np.dtype(dt.name)))
    return t.requires_grad_() if requires_grad else t


@_export
def from_file(filename, shared=None, size=0, *, dtype=None, layout=None, device=None, pin_memory=False,
              requires_grad=False):
    """A 1-d tensor of ``size`` elements of ``dtype`` (default: the default dtype) read from the start of
    ``filename``; with ``shared`` the tensor maps the file, so writes reach it (as torch's).

    Raises:
        TdxRuntimeError: the file holds fewer than ``size`` elements.
        UnsupportedOpError: ``pin_memory`` (tdx pins no memory here).
    """
    import os

    from .creation import from_numpy

    if pin_memory:
        from .._errors import UnsupportedOpError

        raise UnsupportedOpError("from_file(pin_memory=True) is not supported by tdx; pin the result instead")
    dt = D.get_default_dtype() if dtype is None else D.as_dtype(dtype)
    size = int(size or 0)
    need = size * dt.itemsize
    have = os.path.getsize(filename)
    if have < need:
        raise TdxRuntimeError(f"from_file(): unexpected end of file {filename!r}: {size} elements of {dt} need "
                              f"{need} bytes, the file holds {have}")
    np_dtype = np.int16 if dt.name == "bfloat16" else np.dtype(dt.name)
    if size == 0:
        raw = np.zeros(0, dtype=np_dtype)
    elif shared:
        raw = np.memmap(filename, dtype=np_dtype, mode="r+", shape=(size,))
    else:
        raw = np.fromfile(filename, dtype=np_dtype, count=size)
    t = from_numpy(np.asarray(raw) if not shared else raw)
    t = t.view(dt) if dt.name == "bfloat16" else t
    if device is not None:
        t = t.to(device)
    return t.requires_grad_() if requires_grad else t
