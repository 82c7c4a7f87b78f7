"""What a checkpoint's records may say, checked before anything is allocated from them.

A checkpoint is untrusted input: a few hundred crafted bytes can claim a storage of 2**40
elements or a tensor of (20000, 20000) elements over a 4-element storage. Every number a record
carries (a storage's element count against its record's size, a tensor's sizes, strides and
offset against its storage, a device's index, a pickle opcode's length prefix) is checked here
with Python integers, before any array of that size exists, and the pickle's opcodes are walked
(with ``weights_only``, against the set torch's weights-only unpickler reads) before it runs;
each is refused as torch refuses it: :class:`CheckpointError` (a ``RuntimeError``) for a
corrupt archive or an inconsistent record, :class:`CheckpointUnpicklingError` (a
``pickle.UnpicklingError``, as torch's weights-only unpickler raises) for a pickle stream that
cannot be read. Each message names the record. This module only checks and names: it must
never read, allocate or import torch or MLX.
"""

from __future__ import annotations

import pickle
import pickletools
import re

import tdx

__all__ = ["CheckpointError", "CheckpointUnpicklingError", "check_storage", "check_layout", "check_pickle",
           "check_device", "WEIGHTS_ONLY_OPCODES", "MAX_DEVICE_INDEX"]


class CheckpointError(tdx.TdxError, RuntimeError):
    """A checkpoint archive that is corrupt, a record inconsistent with another, or a path a
    checkpoint cannot be saved to (torch raises RuntimeError: ``PytorchStreamReader failed ...``,
    ``setStorage: ... out of bounds``, ``Parent directory ... does not exist``)."""


class CheckpointUnpicklingError(tdx.TdxError, pickle.UnpicklingError):
    """A checkpoint's pickle stream that cannot be read (truncated, malformed, hostile)."""


_INT64 = 1 << 63


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
    """Refuse a tensor layout that reaches outside its storage or past int64 (with torch's classes:
    ValueError for the offset, TypeError for sizes and strides); ``(size, stride)`` as tuples of ints.

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
    if offset >= _INT64:  # torch fails to unpack it: a ValueError for the offset, a TypeError for the rest
        raise tdx.TdxValueError(f"checkpoint tensor over {record!r}: storage offset {offset} does not fit in int64")
    wide = [v for v in size + stride if v >= _INT64]
    if wide:
        raise tdx.TdxTypeError(f"checkpoint tensor over {record!r}: size {size} and stride {stride} must fit in "
                               f"int64; got {wide[0]}")
    if 0 in size:
        return size, stride
    last = offset + sum((n - 1) * s for n, s in zip(size, stride))
    if last >= storage_numel:
        raise CheckpointError(f"checkpoint tensor over {record!r}: sizes {list(size)}, strides {list(stride)} and "
                              f"storage offset {offset} reach element {last}, out of bounds for a storage of "
                              f"{storage_numel} elements")
    return size, stride


MAX_DEVICE_INDEX = 127  # torch keeps a device index in a signed byte


def check_device(record: str, spec, index=None) -> None:
    """Refuse a device a record names (``torch.device(spec[, index])`` or a storage's location,
    ``"cuda:3"``) whose index no device can have: negative, not an int, or past torch's
    :data:`MAX_DEVICE_INDEX` (torch refuses ``"cuda:10000000000"`` as unparsable)."""
    if isinstance(spec, str):
        kind, sep, tail = spec.rpartition(":")
        if sep and kind and tail.lstrip("-").isdigit():
            if index is not None:
                raise CheckpointError(f"checkpoint {record!r}: device {spec!r} given a second index {index!r}")
            index = int(tail)
    if index is None:
        return
    if not _is_int(index) or not 0 <= index <= MAX_DEVICE_INDEX:
        raise CheckpointError(f"checkpoint {record!r}: device {spec!r} with index {index!r}: a device index is an "
                              f"int from 0 to {MAX_DEVICE_INDEX}")


# torch's weights-only unpickler reads these opcodes (pickle protocol 2 without POP, DUP, LONG4, the text
# opcodes of protocol 0...) and refuses any other with "Unsupported operand"
WEIGHTS_ONLY_OPCODES = frozenset((
    "PROTO", "STOP", "GLOBAL", "NEWOBJ", "REDUCE", "BUILD", "APPEND", "APPENDS", "SETITEM", "SETITEMS", "MARK",
    "TUPLE", "TUPLE1", "TUPLE2", "TUPLE3", "NONE", "NEWFALSE", "NEWTRUE", "EMPTY_TUPLE", "EMPTY_LIST", "EMPTY_DICT",
    "EMPTY_SET", "BININT", "BININT1", "BININT2", "BINFLOAT", "BINUNICODE", "SHORT_BINSTRING", "BINPERSID", "BINGET",
    "LONG_BINGET", "BINPUT", "LONG_BINPUT", "LONG1"))

_PREFIX = {pickletools.TAKEN_FROM_ARGUMENT1: (1, False), pickletools.TAKEN_FROM_ARGUMENT4: (4, True),
           pickletools.TAKEN_FROM_ARGUMENT4U: (4, False), pickletools.TAKEN_FROM_ARGUMENT8U: (8, False)}


class _Grammar:
    """The opcodes one reader accepts: a regular expression that skips, at C speed, every run of
    opcodes whose argument has a fixed length or ends at a newline, and the length-prefixed ones
    (walked one by one, their prefix checked against the bytes left)."""

    def __init__(self, names):
        fixed, lines, counted, prefixed = {}, {1: [], 2: []}, {}, {}
        self.names = {}
        for op in pickletools.opcodes:
            if op.name not in names:
                continue
            code = op.code.encode("latin-1")
            self.names[code[0]] = op.name
            n = op.arg.n if op.arg is not None else 0
            if op.name == "STOP":
                continue  # ends the walk: never skipped
            if n >= 0:  # FRAME too: the unpickler reads a frame's opcodes as they come, never allocating its length
                fixed.setdefault(n, []).append(code)
            elif n == pickletools.UP_TO_NEWLINE:
                lines[2 if op.arg.name == "stringnl_noescape_pair" else 1].append(code)
            else:
                width, signed = _PREFIX[n]
                counted[code[0]] = (width, signed)
                prefixed.setdefault(width, []).append(code)
        parts = [b"[" + b"".join(re.escape(c) for c in codes) + b"]" + (b".{%d}" % n if n else b"++")
                 for n, codes in sorted(fixed.items())]  # argument-less opcodes: one run per class match
        parts += [b"[" + b"".join(re.escape(c) for c in codes) + b"]" + b"[^\\n]*\\n" * k
                  for k, codes in lines.items() if codes]
        # a length under 256 (every one-byte prefix, most strings) is matched by one branch per length
        parts += [b"[" + b"".join(re.escape(c) for c in codes) + b"](?:" + b"|".join(
            re.escape(bytes([n]) + bytes(width - 1)) + (b".{%d}" % n if n else b"") for n in range(256)) + b")"
            for width, codes in sorted(prefixed.items())]
        self.run = re.compile(b"(?:" + b"|".join(parts) + b")*+", re.S)  # possessive: nothing kept to backtrack
        self.counted = counted


_GRAMMARS = {True: _Grammar(WEIGHTS_ONLY_OPCODES), False: _Grammar({op.name for op in pickletools.opcodes})}
_STOP = pickle.STOP[0]


def check_pickle(record: str, pickled, weights_only: bool = False, start: int = 0) -> int:
    """Walk a pickle stream's opcodes (nothing executed) and return the offset just past its STOP.

    Refuses, naming the offset: an opcode outside the reader's set (with ``weights_only``, the
    opcodes torch's weights-only unpickler reads: any other it refuses as "Unsupported operand");
    a length prefix announcing more bytes than the stream holds (the C unpickler allocates what
    ``BINBYTES8`` or ``BYTEARRAY8`` announce before reading it, so a 20-byte stream could ask for
    terabytes); a stream that ends before its STOP. The opcodes are matched by a regular
    expression (lengths over 255 bytes walked one by one), so the walk takes at most tens of
    milliseconds per megabyte, whatever the opcodes (10 MB of ``None``: about 60 ms; of empty
    one-byte strings, 5 million opcodes: about 1 s).
    """
    grammar = _GRAMMARS[bool(weights_only)]
    data = memoryview(pickled).cast("B") if not isinstance(pickled, bytes) else pickled
    end, at = len(data), start
    while True:
        at = grammar.run.match(data, at).end()
        if at >= end:
            raise CheckpointUnpicklingError(f"checkpoint record {record!r}: the pickle stream ends at byte {end} "
                                            f"before its STOP opcode (truncated)")
        code = data[at]
        if code == _STOP:
            return at + 1
        counted = grammar.counted.get(code)
        if counted is None:
            if code in grammar.names:  # a fixed-length or line opcode cut short by the end of the stream
                raise CheckpointUnpicklingError(f"checkpoint record {record!r}: the pickle stream ends inside "
                                                f"its {grammar.names[code]} opcode at byte {at} (truncated)")
            known = _GRAMMARS[False].names.get(code)
            if weights_only and known is not None:
                raise CheckpointUnpicklingError(
                    f"checkpoint record {record!r}: Weights only load failed: Unsupported operand {code} ({known}) "
                    f"at byte {at}; torch's weights-only unpickler reads pickle protocol 2's opcodes only. Load "
                    f"with weights_only=False only if you trust the file")
            raise CheckpointUnpicklingError(f"checkpoint record {record!r}: malformed pickle stream: unknown "
                                            f"opcode {code} at byte {at}")
        width, signed = counted
        if at + 1 + width > end:
            raise CheckpointUnpicklingError(f"checkpoint record {record!r}: the pickle stream ends inside its "
                                            f"{grammar.names[code]} opcode at byte {at} (truncated)")
        length = int.from_bytes(data[at + 1:at + 1 + width], "little", signed=signed)
        at += 1 + width
        if length < 0 or length > end - at:
            raise CheckpointUnpicklingError(f"checkpoint record {record!r}: malformed pickle stream: "
                                            f"{grammar.names[code]} at byte {at - 1 - width} announces {length} "
                                            f"bytes; {end - at} are left")
        at += length
