"""Strides of torch's views of a row-major layout, in elements: a fresh tensor's (:func:`contiguous_strides`),
a reshape's without a copy (:func:`view_strides`) and whether a transpose stays contiguous (:func:`swap_keeps_order`).

Plain arithmetic on shapes and strides, with torch's rules; :mod:`.views` lays out its views with it. This module
must never touch a tensor, an array or a framework.
"""

from __future__ import annotations

import functools
import math


@functools.lru_cache(maxsize=1024)
def _contiguous(shape: tuple) -> tuple:
    strides, acc = [], 1
    for n in reversed(shape):
        strides.append(acc)
        acc *= max(n, 1)
    return tuple(reversed(strides))


def contiguous_strides(shape) -> tuple:
    """Row-major strides of ``shape``, in elements (torch's for a fresh tensor)."""
    return _contiguous(tuple(shape))


@functools.lru_cache(maxsize=1024)  # asked twice of a head-split transpose (``contiguous``, then ``reshape``)
def swap_keeps_order(shape: tuple, a: int, b: int) -> bool:
    """Whether a contiguous tensor of ``shape`` with dims ``a`` and ``b`` swapped (maybe negative) is contiguous
    by torch's rule (dims of size 1 take any stride): where the dims of more than one element keep their order,
    that is, the two swapped dims are of one element, or the one that is not crosses only dims of one element."""
    n = len(shape)
    if n < 2 or 0 in shape:  # (an empty tensor is contiguous)
        return True
    a, b = sorted((a % n, b % n))
    if shape[a] == 1 and shape[b] == 1:
        return True
    if shape[a] != 1 and shape[b] != 1:
        return a == b
    for d in range(a + 1, b):
        if shape[d] != 1:
            return False
    return True


def view_strides(old_shape, old_strides, new_shape):
    """Strides for viewing ``old`` as ``new_shape`` without a copy, or None (torch's rule)."""
    if not old_shape:  # a 0-d tensor: every new dim has size 1 and stride 1
        return contiguous_strides(new_shape)
    if math.prod(old_shape) == 0:  # torch keeps an empty tensor's strides when the shape stays
        return tuple(old_strides) if tuple(new_shape) == tuple(old_shape) else contiguous_strides(new_shape)
    new_strides = [0] * len(new_shape)
    view_d = len(new_shape) - 1
    chunk_stride = old_strides[-1]
    tensor_numel = view_numel = 1
    for d in range(len(old_shape) - 1, -1, -1):
        tensor_numel *= old_shape[d]
        if d == 0 or (old_shape[d - 1] != 1 and old_strides[d - 1] != tensor_numel * chunk_stride):
            while view_d >= 0 and (view_numel < tensor_numel or new_shape[view_d] == 1):
                new_strides[view_d] = view_numel * chunk_stride
                view_numel *= new_shape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if d > 0:
                chunk_stride = old_strides[d - 1]
                tensor_numel = view_numel = 1
    return tuple(new_strides) if view_d == -1 else None
