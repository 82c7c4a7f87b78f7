"""Reading torch's legacy checkpoint format (``_use_new_zipfile_serialization=False``).

Layout: four small pickles (magic number, protocol version, system info), the main pickle
(storages as persistent ids ``('storage', type, key, location, numel, view)``), the list of
storage keys, then for each key an int64 element count and the raw little-endian bytes. The
bytes come after the pickle that needs them, so the main pickle is first scanned (opcodes
only, nothing executed) and then once more with every storage's element type known, with
nothing but harmless stand-ins, to learn the element size of each key. Must never import
torch or MLX.
"""

from __future__ import annotations

import io
import pickle
import struct

from .pickling import STORAGE_TYPES, StorageType
from .records import CheckpointError, CheckpointUnpicklingError, check_pickle
from . import storage as _storage

import tdx

__all__ = ["read", "MAGIC_NUMBER"]

MAGIC_NUMBER = 0x1950A86A20F9469CFC6C
_PROTOCOL_VERSION = 1001


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
