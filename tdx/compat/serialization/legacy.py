"""Reading and writing torch's legacy checkpoint format (``_use_new_zipfile_serialization=False``).

Layout: four small pickles (magic number, protocol version, system info), the main pickle
(storages as persistent ids ``('storage', type, key, location, numel, view)``), the list of
storage keys, then for each key an int64 element count and the raw little-endian bytes. The
bytes come after the pickle that needs them, so the main pickle is first scanned (opcodes
only, nothing executed) and then once more with every storage's element type known, with
nothing but harmless stand-ins, to learn the element size of each key. :func:`write` lays out the
same records as ``torch.save(..., _use_new_zipfile_serialization=False)``; the format has no place
for a tdx device, so MLX tensors come back on ``cpu``. Must never import torch or MLX.
"""

from __future__ import annotations

import io
import pickle
import struct

from .pickling import STORAGE_TYPES, CheckpointPickler, StorageType
from .records import CheckpointError, CheckpointUnpicklingError, check_pickle
from . import storage as _storage

import tdx

__all__ = ["read", "write", "MAGIC_NUMBER"]

MAGIC_NUMBER = 0x1950A86A20F9469CFC6C
_PROTOCOL_VERSION = 1001
_SYS_INFO = {"protocol_version": _PROTOCOL_VERSION, "little_endian": True,
             "type_sizes": {"short": 2, "int": 4, "long": 4}}  # what torch records on x86-64 and arm64


class _Inert:
    """Stands for every global in the scanning pass: accepts anything, does nothing."""

    def __new__(cls, *args, **kwargs):
        return object.__new__(cls)

    def __init__(self, *args, **kwargs):
        pass

    def __call__(self, *args, **kwargs):
        return _Inert()

    def __setstate__(self, state):
        pass

    def __setitem__(self, key, value):
        pass

    def append(self, value):
        pass

    def extend(self, values):
        pass


class _HeaderUnpickler(pickle.Unpickler):
    """Plain data only (ints, dicts, lists of str): the header pickles never name a global."""

    def find_class(self, module, name):
        raise pickle.UnpicklingError(f"legacy checkpoint header names a global {module}.{name}: not a checkpoint")


class _ScanUnpickler(pickle.Unpickler):
    """Runs the main pickle with inert globals, recording each storage key's dtype."""

    def __init__(self, file):
        super().__init__(file, encoding="utf-8")
        self.dtypes = {}

    def find_class(self, module, name):
        if module == "torch" and name in STORAGE_TYPES.values():
            return StorageType(getattr(tdx, {v: k for k, v in STORAGE_TYPES.items()}[name]))
        return _Inert

    def persistent_load(self, pid):
        if isinstance(pid, tuple) and pid and pid[0] == "storage" and isinstance(pid[1], StorageType):
            self.dtypes[pid[2]] = pid[1].dtype  # the root storage's key: a view's own key has no bytes
        return _Inert()


def read(fh):
    """``(main pickle bytes, host_values(key, dtype, numel))`` of a legacy checkpoint in ``fh``.

    Raises:
        CheckpointUnpicklingError: not a legacy checkpoint (wrong magic number or layout), or a
            malformed pickle in it.
        CheckpointError: a storage whose element count does not fit the bytes left in the file.
        UnsupportedOpError: a big-endian file or another legacy protocol version.
    """
    try:
        return _read(fh)
    except tdx.TdxError:
        raise
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, KeyError, IndexError, AttributeError,
            UnicodeDecodeError, OverflowError, RecursionError, struct.error) as err:
        raise CheckpointUnpicklingError(f"not a readable torch checkpoint: neither a zip archive nor the legacy "
                                        f"format ({type(err).__name__}: {err})") from None


def _scanned(fh):
    """The length of the pickle starting at ``fh``'s position (its opcodes walked, nothing executed:
    a length prefix running past the end is refused before the unpickler allocates it)."""
    start = fh.tell()
    try:
        return check_pickle("legacy checkpoint", fh.getbuffer(), start=start) - start
    except CheckpointUnpicklingError as err:  # a file that may be no checkpoint at all: read() says so
        raise pickle.UnpicklingError(str(err)) from None


def _read(fh):
    fh = io.BytesIO(fh.read())  # a file's read(n) allocates n bytes before reading: in memory, it cannot

    def header():
        _scanned(fh)
        return _HeaderUnpickler(fh).load()

    magic = header()
    if magic != MAGIC_NUMBER:
        raise CheckpointUnpicklingError("Invalid magic number; corrupt file?")
    version = header()
    if version != _PROTOCOL_VERSION:
        raise tdx.UnsupportedOpError(f"Invalid protocol version: {version!r}; tdx.load reads {_PROTOCOL_VERSION}")
    sys_info = header()
    if not isinstance(sys_info, dict):
        raise CheckpointUnpicklingError(f"legacy checkpoint: system info {sys_info!r} is not a dict")
    if not sys_info.get("little_endian", True):
        raise tdx.UnsupportedOpError("tdx.load reads little-endian checkpoints; this legacy file is big-endian")
    pickled = fh.read(_scanned(fh))
    keys = header()
    if not isinstance(keys, list):
        raise CheckpointUnpicklingError(f"legacy checkpoint: storage keys {keys!r} are not a list")
    scan = _ScanUnpickler(io.BytesIO(pickled))
    scan.load()
    here = fh.tell()
    left = fh.seek(0, io.SEEK_END) - here
    fh.seek(here)
    blobs = {}
    for key in keys:
        dtype = scan.dtypes.get(key)
        if dtype is None:
            raise CheckpointUnpicklingError(f"legacy checkpoint: storage {key!r} has no element type")
        (numel,) = struct.unpack("<q", fh.read(8))
        left -= 8
        if numel < 0 or numel * dtype.itemsize > left:
            raise CheckpointError(f"legacy checkpoint: storage {key!r} claims {numel} elements of "
                                  f"{dtype.itemsize} bytes; {max(left, 0)} bytes are left in the file")
        blobs[key] = (fh.read(numel * dtype.itemsize), numel)
        left -= numel * dtype.itemsize

    def host_values(key, dtype, numel):
        if key not in blobs:
            raise CheckpointError(f"legacy checkpoint: no storage record {key!r}")
        data, count = blobs[key]
        if dtype.itemsize * count != len(data):
            raise CheckpointError(f"legacy checkpoint: storage {key!r} is read as {dtype} but was written as "
                                  f"another element type")
        return _storage.from_bytes(data, dtype)

    return pickled, host_values


class _LegacyPickler(CheckpointPickler):
    """The zip format's pickler with the legacy persistent id: a sixth field, the view (always None)."""

    dispatch = CheckpointPickler.dispatch

    def persistent_id(self, obj):
        pid = super().persistent_id(obj)
        return None if pid is None else (*pid, None)


def write(fh, obj, protocol: int, storage_of, location_of) -> None:
    """Write ``obj`` to the binary file ``fh`` in the legacy layout (header, main pickle, keys, storages).

    Args:
        protocol: the pickle protocol of every pickle in the file (torch's default 2).
        storage_of: a tensor's ``(storage, offset, strides)``.
        location_of: a storage's torch location tag (``"cpu"``...).
    """
    for header in (MAGIC_NUMBER, _PROTOCOL_VERSION, _SYS_INFO):
        pickle.dump(header, fh, protocol=protocol)
    pickler = _LegacyPickler(fh, protocol, storage_of, location_of)
    pickler.dump(obj)
    pickle.dump([ref.key for ref in pickler.storages], fh, protocol=protocol)
    for ref in pickler.storages:
        fh.write(struct.pack("<q", ref.storage.numel))
        fh.write(ref.storage.read())
