"""Layouts of memory read as another dtype: ``view(dtype)`` (elements of another size: the last dim grows or
shrinks), ``view_as_real`` (a trailing dim of 2) and ``view_as_complex`` (that dim gone), with torch's rules
and messages for the strides and offsets that cannot be read so.

A layout here counts in elements of its tensor's dtype (:func:`unit` bytes each); the views of
:mod:`.views` carry these layouts. This module computes layouts only: it must never compute on arrays or
import a framework.
"""

from __future__ import annotations

from .._errors import TdxRuntimeError


def unit(lay) -> int:
    """The bytes of one element in ``lay``'s coordinates: its ``cast``'s, else its root's dtype's."""
    return (lay.cast if lay.cast is not None else lay.root._n.dtype).size


def _bits_error(what: str, rule: str, got: int):
    return TdxRuntimeError(f"{rule} to view {what} (different element sizes), but got {got}")


def reinterpreted(lay, new: int, form: str, what: str) -> tuple:
    """``(shape, strides, offset)`` of ``lay``'s memory read as elements of ``new`` bytes, in their units.

    Args:
        lay: the layout of the tensor read (in units of :func:`unit` bytes).
        new: the new element size in bytes.
        form: ``"dtype"`` (``view(dtype)``: the last dim grows or shrinks), ``"as_real"`` (a trailing dim
            of 2 appears) or ``"as_complex"`` (the trailing dim of 2 goes).
        what: ``"Float as Half"``, for torch's messages.

    Raises:
        TdxRuntimeError: the layout cannot be read so, with torch's message.
    """
    shape, strides, offset, old = lay.shape, lay.strides, lay.offset, unit(lay)
    if form == "as_real":
        return shape + (2,), tuple(s * 2 for s in strides) + (1,), offset * 2
    if form == "as_complex":
        if strides[-1] != 1:
            raise TdxRuntimeError("Tensor must have a last dimension with stride 1")
        if any(s % 2 for s in strides[:-1]):
            raise TdxRuntimeError("Tensor must have a stride divisible by 2 for all but last dimension")
        if offset % 2:
            raise TdxRuntimeError("Tensor must have a storage_offset divisible by 2")
        return shape[:-1], tuple(s // 2 for s in strides[:-1]), offset // 2
    if new == old:
        return shape, strides, offset
    if strides[-1] != 1:
        raise _bits_error(what, "self.stride(-1) must be 1", strides[-1])
    if new < old:
        r = old // new
        return shape[:-1] + (shape[-1] * r,), tuple(s * r for s in strides[:-1]) + (1,), offset * r
    r = new // old
    if shape[-1] % r:
        raise _bits_error(what, f"self.size(-1) must be divisible by {r}", shape[-1])
    if offset % r:
        raise _bits_error(what, f"self.storage_offset() must be divisible by {r}", offset)
    for d, s in enumerate(strides[:-1]):
        if s % r:
            raise _bits_error(what, f"self.stride({d}) must be divisible by {r}", s)
    return shape[:-1] + (shape[-1] // r,), tuple(s // r for s in strides[:-1]) + (1,), offset // r
