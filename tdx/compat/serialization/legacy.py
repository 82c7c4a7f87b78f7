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
import pickletools
import struct

from .pickling import STORAGE_TYPES, StorageType
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
        pickle.UnpicklingError: not a legacy checkpoint (wrong magic number or layout).
        UnsupportedOpError: a big-endian file or another legacy protocol version.
    """
    header = lambda: _HeaderUnpickler(fh).load()  # noqa: E731
    try:
        magic = header()
    except (pickle.UnpicklingError, EOFError, ValueError) as err:
        raise pickle.UnpicklingError(f"not a torch checkpoint: neither a zip archive nor the legacy format "
                                     f"({err})") from None
    if magic != MAGIC_NUMBER:
        raise pickle.UnpicklingError("Invalid magic number; corrupt file?")
    version = header()
    if version != _PROTOCOL_VERSION:
        raise tdx.UnsupportedOpError(f"Invalid protocol version: {version}; tdx.load reads {_PROTOCOL_VERSION}")
    sys_info = header()
    if not sys_info.get("little_endian", True):
        raise tdx.UnsupportedOpError("tdx.load reads little-endian checkpoints; this legacy file is big-endian")
    start = fh.tell()
    for opcode, _, _ in pickletools.genops(fh):
        if opcode.name == "STOP":
            break
    end = fh.tell()
    fh.seek(start)
    pickled = fh.read(end - start)
    keys = header()
    scan = _ScanUnpickler(io.BytesIO(pickled))
    scan.load()
    blobs = {}
    for key in keys:
        dtype = scan.dtypes.get(key)
        if dtype is None:
            raise pickle.UnpicklingError(f"legacy checkpoint: storage {key!r} has no element type")
        (numel,) = struct.unpack("<q", fh.read(8))
        blobs[key] = (fh.read(numel * dtype.itemsize), numel)

    def host_values(key, dtype, numel):
        data, count = blobs[key]
        return _storage.from_bytes(data, dtype)[:count]

    return pickled, host_values
