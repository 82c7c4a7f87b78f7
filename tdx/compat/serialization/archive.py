"""torch's checkpoint container: a zip archive of uncompressed records under one folder.

Writes ``<name>/data.pkl``, ``.format_version``, ``.storage_alignment``, ``byteorder``, one
``data/<key>`` record per storage, ``version`` and ``.data/serialization_id`` in torch's
order, each record's data aligned to 64 bytes (padding in the local header's extra field, as
torch pads), and reads any such archive, whatever its folder name. What it reads is bounded by
the file: a record named twice, records whose bytes overlap, and a compressed record inflating
over :data:`MAX_RATIO`-fold are refused. Must never import torch or MLX.
"""

from __future__ import annotations

import collections
import contextlib
import io
import mmap as _mmap
import os
import secrets
import struct
import zipfile
import zlib

import numpy as np

from .records import CheckpointError

__all__ = ["ArchiveWriter", "ArchiveReader", "ALIGNMENT", "is_zip", "replacing"]

ALIGNMENT = 64
MAX_RATIO = 100  # the most a compressed record may inflate (deflate reaches about 1000)
_PAD_ID = b"FB"  # the extra-field id torch uses for its alignment padding


def is_zip(f) -> bool:
    """Whether the file object ``f`` (at its start) holds a zip archive; ``f`` is rewound."""
    start = f.tell()
    magic = f.read(4)
    f.seek(start)
    return magic == b"PK\x03\x04"


_ZERO_DATE = (1980, 0, 0, 0, 0,  # torch's records carry a zero DOS date
              0)  # mutate: equivalent (the seconds: DOS time keeps 2-second units, so 1 is written as 0)


class ArchiveWriter:
    """Writes records of one checkpoint into ``f`` (a path or a binary file object)."""

    def __init__(self, f, name: str):
        self.name = name
        self.zip = zipfile.ZipFile(f, "w", compression=zipfile.ZIP_STORED, allowZip64=True)

    def write(self, record: str, data: bytes) -> None:
        info = zipfile.ZipInfo(f"{self.name}/{record}", date_time=_ZERO_DATE)
        info.compress_type = zipfile.ZIP_STORED
        info.create_system = 0
        start = self.zip.fp.tell() if self.zip.fp is not None else 0
        header = 30 + len(info.filename.encode("utf-8"))
        pad = (-(start + header + 4)) % ALIGNMENT
        info.extra = _PAD_ID + struct.pack("<H", pad) + b"Z" * pad
        self.zip.writestr(info, data)

    def close(self) -> None:
        self.zip.close()

    def write_footer(self) -> None:
        """The records torch writes after the storages."""
        self.write("version", b"3\n")
        # torch's id: two random 64-bit numbers, each written as 20 zero-filled digits
        self.write(".data/serialization_id", "".join(f"{secrets.randbits(64):020d}" for _ in range(2)).encode())


# what zipfile raises on a corrupt archive: a bad CRC, a truncated or inconsistent header (a negative
# seek, a short struct), a name that is not UTF-8, an unknown compression method, a truncated record
CORRUPT = (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, EOFError, struct.error, OSError,
           NotImplementedError, OverflowError, KeyError, IndexError, zlib.error)


class ArchiveReader:
    """Reads the records of a checkpoint archive from ``f`` (a path or a binary file object).

    Raises:
        CheckpointError: (a RuntimeError, as torch's ``PytorchStreamReader failed ...``) a corrupt
            archive, a missing record, a record whose CRC does not match its bytes.
    """

    def __init__(self, f, path=None):
        try:
            self.zip = zipfile.ZipFile(f, "r")
            names = self.zip.namelist()
        except CORRUPT as err:
            raise CheckpointError(f"PytorchStreamReader failed reading zip archive: {type(err).__name__}: "
                                  f"{err}") from None
        if not names:
            raise CheckpointError("PytorchStreamReader failed reading zip archive: an archive with no record")
        self.names = set(names)
        if len(self.names) != len(names):
            twice = sorted(n for n, k in collections.Counter(names).items() if k > 1)
            raise CheckpointError(f"PytorchStreamReader failed reading zip archive: records {twice[:5]} appear more "
                                  f"than once (a checkpoint names each record once)")
        self.prefix = names[0].split("/", 1)[0]
        self._check_extents()
        self.path = path
        self._mapped = None

    def _check_extents(self) -> None:
        """Refuse records whose data overlap the next record's header (a zip bomb's trick: many
        records over the same bytes, each read in full), so what is read is bounded by the file."""
        infos = sorted(self.zip.infolist(), key=lambda i: i.header_offset)
        ends = [i.header_offset for i in infos[1:]] + [self.zip.start_dir]
        for info, end in zip(infos, ends):
            if info.header_offset + 30 + len(info.orig_filename.encode("utf-8")) + info.compress_size > end:
                raise CheckpointError(f"PytorchStreamReader failed reading zip archive: record {info.filename} "
                                      f"({info.compress_size} bytes at offset {info.header_offset}) overlaps the "
                                      f"next record at offset {end}")

    def has(self, record: str) -> bool:
        return f"{self.prefix}/{record}" in self.names

    def size(self, record: str) -> int:
        """The record's size in bytes as the archive states it (nothing read)."""
        return self._info(record).file_size

    def _info(self, record: str):
        try:
            return self.zip.getinfo(f"{self.prefix}/{record}")
        except KeyError:
            raise CheckpointError(f"PytorchStreamReader failed locating file {self.prefix}/{record}: "
                                  f"file not found") from None

    def read(self, record: str) -> bytes:
        """The record's bytes; a compressed one only when it inflates at most :data:`MAX_RATIO`-fold
        (plus 1 MiB), so a few bytes of a file never become gigabytes (torch writes records stored)."""
        info = self._info(record)
        if info.compress_type != zipfile.ZIP_STORED and info.file_size > MAX_RATIO * info.compress_size + (1 << 20):
            raise CheckpointError(f"PytorchStreamReader failed reading record {info.filename}: it is compressed "
                                  f"{info.compress_size} bytes -> {info.file_size} bytes, over {MAX_RATIO} times; "
                                  f"tdx.load inflates a record at most {MAX_RATIO}-fold (torch writes records "
                                  f"uncompressed: re-save it with torch.save or tdx.save)")
        try:
            return self.zip.read(info)
        except CORRUPT as err:
            raise CheckpointError(f"PytorchStreamReader failed reading record {info.filename}: "
                                  f"{type(err).__name__}: {err}") from None

    def mapped(self, record: str, np_dtype, count: int):
        """The record as a copy-on-write memory-mapped NumPy array (None where it cannot be:
        no file path, or a compressed record)."""
        info = self._info(record)
        if self.path is None or info.compress_type != zipfile.ZIP_STORED:
            return None
        if self._mapped is None:
            with open(self.path, "rb") as fh:
                self._mapped = _mmap.mmap(fh.fileno(), 0, access=_mmap.ACCESS_COPY)
        local = self._mapped[info.header_offset:info.header_offset + 30]
        if len(local) < 30 or local[:4] != b"PK\x03\x04":
            raise CheckpointError(f"PytorchStreamReader failed reading record {info.filename}: bad local header")
        name_len, extra_len = struct.unpack("<HH", local[26:30])
        start = info.header_offset + 30 + name_len + extra_len
        if start + count * np.dtype(np_dtype).itemsize > len(self._mapped):
            raise CheckpointError(f"PytorchStreamReader failed reading record {info.filename}: it runs past the "
                                  f"end of the file")
        return np.frombuffer(self._mapped, dtype=np_dtype, count=count, offset=start)

    def close(self) -> None:
        self.zip.close()


@contextlib.contextmanager
def replacing(path: str):
    """A binary file that replaces ``path`` in one rename when the block ends normally.

    The file is a new one beside the target (same folder, hence same file system), created with
    the mode a new file gets (the umask applies), or the target's own mode when it exists; it is
    flushed to disk before the rename. When the block raises, even ``KeyboardInterrupt``, the
    temporary file is removed and ``path`` is untouched. A symlink is followed: its target is
    replaced, the link stays.
    """
    target = os.path.realpath(path)
    folder, base = os.path.split(target)
    if not os.path.isdir(folder):
        raise CheckpointError(f"Parent directory {folder} does not exist.")  # torch's RuntimeError
    if os.path.isdir(target):
        raise CheckpointError(f"cannot save to {path}: it is a directory")
    tmp = os.path.join(folder, f".{base}.{secrets.token_hex(4)}.tmp")
    fh = open(tmp, "xb")
    try:
        yield fh
        fh.flush()
        os.fsync(fh.fileno())
        fh.close()
        if os.path.exists(target):
            os.chmod(tmp, os.stat(target).st_mode & 0o7777)
        os.replace(tmp, target)
    except BaseException:
        fh.close()
        os.unlink(tmp)
        raise


def open_for_read(f):
    """(binary file object, its path or None, whether we opened it)."""
    if isinstance(f, (str, os.PathLike)):
        path = os.fspath(f)
        return open(path, "rb"), path, True
    if isinstance(f, (bytes, bytearray)):
        return io.BytesIO(f), None, True
    return f, getattr(f, "name", None) if isinstance(getattr(f, "name", None), str) else None, False
