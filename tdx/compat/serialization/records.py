"""What a checkpoint's records may say, checked before anything is allocated from them.

A checkpoint is untrusted input: a few hundred crafted bytes can claim a storage of 2**40
elements or a tensor of (20000, 20000) elements over a 4-element storage. Every number a record
carries (a storage's element count against its record's size, a tensor's sizes, strides and
offset against its storage) is checked here with Python integers, before any array of that size
exists, and refused as torch refuses it: :class:`CheckpointError` (a ``RuntimeError``) for a
corrupt archive or an inconsistent record, :class:`CheckpointUnpicklingError` (a
``pickle.UnpicklingError``, as torch's weights-only unpickler raises) for a pickle stream that
cannot be read. Each message names the record. This module only checks and names: it must
never read, allocate or import torch or MLX.
"""

from __future__ import annotations

import pickle
import pickletools
import io

import tdx

__all__ = ["CheckpointError", "CheckpointUnpicklingError", "check_storage", "check_layout", "check_pickle"]


class CheckpointError(tdx.TdxError, RuntimeError):
    """A checkpoint archive that is corrupt, a record inconsistent with another, or a path a
    checkpoint cannot be saved to (torch raises RuntimeError: ``PytorchStreamReader failed ...``,
    ``setStorage: ... out of bounds``, ``Parent directory ... does not exist``)."""


class CheckpointUnpicklingError(tdx.TdxError, pickle.UnpicklingError):
    """A checkpoint's pickle stream that cannot be read (truncated, malformed, hostile)."""


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def check_storage(record: str, numel, itemsize: int, record_size: int) -> None:
    """Refuse a storage whose element count does not match its record's byte size.

    Args:
        record: the record's name (for the message).
        numel: the element count the pickle claims.
        itemsize: bytes per element of the storage's dtype.
        record_size: the record's size in bytes, as the archive states it.
    """
    if not _is_int(numel) or numel < 0:
        raise CheckpointError(f"checkpoint record {record!r}: storage element count {numel!r} is not a "
                              f"non-negative int")
    if numel * itemsize != record_size:
        raise CheckpointError(f"checkpoint record {record!r}: record size ({record_size} bytes) does not match "
                              f"the expected size ({numel * itemsize} bytes = {numel} elements * {itemsize} "
                              f"bytes/element)")


def check_layout(record: str, storage_numel: int, offset, size, stride) -> tuple:
    """Refuse a tensor layout that reaches outside its storage; ``(size, stride)`` as tuples of ints.

    A tensor with no element needs no storage (torch checks nothing more then); any other reads
    the elements ``offset + sum((size[d] - 1) * stride[d])`` at most, which must lie in the storage.
    """
    if not isinstance(size, (tuple, list)) or not isinstance(stride, (tuple, list)):
        raise CheckpointError(f"checkpoint tensor over {record!r}: size {size!r} and stride {stride!r} must be "
                              f"tuples of ints")
    size, stride = tuple(size), tuple(stride)
    bad = [v for v in (offset,) + size + stride if not _is_int(v)]
    if bad:
        raise CheckpointError(f"checkpoint tensor over {record!r}: size {size}, stride {stride} and offset "
                              f"{offset!r} must be ints; got {bad[0]!r}")
    if len(size) != len(stride):
        raise CheckpointError(f"checkpoint tensor over {record!r}: unequal size length ({len(size)}) and stride "
                              f"length ({len(stride)})")
    if offset < 0 or any(v < 0 for v in size + stride):
        raise CheckpointError(f"checkpoint tensor over {record!r}: negative size, stride or offset (size {size}, "
                              f"stride {stride}, offset {offset}); torch refuses them")
    if 0 in size:
        return size, stride
    last = offset + sum((n - 1) * s for n, s in zip(size, stride))
    if last >= storage_numel:
        raise CheckpointError(f"checkpoint tensor over {record!r}: sizes {list(size)}, strides {list(stride)} and "
                              f"storage offset {offset} reach element {last}, out of bounds for a storage of "
                              f"{storage_numel} elements")
    return size, stride


def check_pickle(record: str, pickled: bytes) -> None:
    """Refuse a pickle stream whose length-prefixed opcodes announce more bytes than it holds.

    The C unpickler allocates what ``BINBYTES``, ``BINBYTES8`` or ``BYTEARRAY8`` announce before
    reading it, so a 20-byte stream can ask for terabytes; the opcodes are walked first (nothing
    executed; about 20 ms for the pickle of a 2000-tensor state dict, a sixth of loading it).
    """
    try:
        for _ in pickletools.genops(io.BytesIO(pickled)):
            pass
    except (ValueError, EOFError, UnicodeDecodeError) as err:
        raise CheckpointUnpicklingError(f"checkpoint record {record!r}: malformed pickle stream ({err})") from None
