"""Batching samples: ``default_collate`` and ``default_convert``, torch.utils.data's.

Tensors are stacked where they live; NumPy arrays, NumPy scalars and Python numbers become
tdx tensors on the host device (cpu), as torch builds batches on the CPU; strings and bytes
stay lists; mappings, namedtuples and sequences are collated field by field. Must never
import torch or MLX.
"""

from __future__ import annotations

import collections.abc
import copy
import re

import tdx
from tdx import backends as _backends

__all__ = ["default_collate", "default_convert"]

_HOST = _backends.HOST
_NP_STR_OBJ = re.compile(r"[SaUO]")
_ERR = "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}"


def _is_numpy(elem) -> bool:
    return type(elem).__module__ == "numpy" and type(elem).__name__ not in ("str_", "string_", "bytes_")


def _is_namedtuple(elem) -> bool:
    return isinstance(elem, tuple) and hasattr(elem, "_fields")


def default_convert(data):
    """Turn NumPy arrays and scalars into tdx tensors inside any nesting, leaving the rest.

    What a DataLoader with ``batch_size=None`` applies to each sample: no stacking.
    """
    if isinstance(data, tdx.Tensor):
        return data
    if _is_numpy(data):
        if getattr(data, "ndim", None) is not None and type(data).__name__ in ("ndarray", "memmap") \
                and _NP_STR_OBJ.search(data.dtype.str) is not None:
            return data
        return tdx.as_tensor(data, device=_HOST)
    if isinstance(data, collections.abc.Mapping):
        converted = {key: default_convert(data[key]) for key in data}
        if isinstance(data, collections.abc.MutableMapping):
            clone = copy.copy(data)
            clone.update(converted)
            return clone
        try:
            return type(data)(converted)
        except TypeError:
            return converted
    if _is_namedtuple(data):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        converted = [default_convert(d) for d in data]
        if isinstance(data, collections.abc.MutableSequence):
            clone = copy.copy(data)
            for i, d in enumerate(converted):
                clone[i] = d
            return clone
        try:
            return type(data)(converted)
        except TypeError:
            return converted
    return data


def default_collate(batch):
    """Stack a list of samples into a batch, as ``torch.utils.data.default_collate``.

    Tensors are stacked along a new dim 0 (on their device); NumPy arrays and scalars become
    tensors first; floats give a float64 tensor, ints an int64 one (bools a bool one); strings
    and bytes stay a list; a Mapping collates per key, a namedtuple per field, a tuple gives a
    list of per-position batches, and other sequences keep their type where it can be built.

    Raises:
        ShapeError: tensors of different sizes (torch's stack error), or sequences of
            different lengths ("each element in list of batch should be of equal size").
        TdxTypeError: an element of a kind that cannot be collated (NumPy string or object
            arrays included), naming its type.
    """
    elem = batch[0]
    if isinstance(elem, tdx.Tensor):
        return tdx.stack(list(batch), 0)
    if _is_numpy(elem):
        if type(elem).__name__ in ("ndarray", "memmap"):
            if _NP_STR_OBJ.search(elem.dtype.str) is not None:
                raise tdx.TdxTypeError(_ERR.format(elem.dtype))
            return default_collate([tdx.as_tensor(b, device=_HOST) for b in batch])
        if elem.shape == ():
            return tdx.as_tensor(list(batch), device=_HOST)
    if isinstance(elem, float):
        return tdx.tensor(list(batch), dtype=tdx.float64, device=_HOST)
    if isinstance(elem, int):  # bools included: a bool tensor, as torch.tensor infers
        return tdx.tensor(list(batch), device=_HOST)
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, collections.abc.Mapping):
        collated = {key: default_collate([d[key] for d in batch]) for key in elem}
        if isinstance(elem, collections.abc.MutableMapping):
            clone = copy.copy(elem)
            clone.update(collated)
            return clone
        try:
            return type(elem)(collated)
        except TypeError:
            return collated
    if _is_namedtuple(elem):
        return type(elem)(*(default_collate(list(samples)) for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        size = len(elem)
        if not all(len(e) == size for e in batch):
            raise tdx.ShapeError("each element in list of batch should be of equal size")
        transposed = [list(samples) for samples in zip(*batch)]
        if isinstance(elem, tuple):
            return [default_collate(samples) for samples in transposed]
        collated = [default_collate(samples) for samples in transposed]
        if isinstance(elem, collections.abc.MutableSequence):
            clone = copy.copy(elem)
            for i, c in enumerate(collated):
                clone[i] = c
            return clone
        try:
            return type(elem)(collated)
        except TypeError:
            return collated
    raise tdx.TdxTypeError(_ERR.format(type(elem)))
