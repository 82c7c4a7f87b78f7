"""``tdx.save`` / ``tdx.load`` in torch's checkpoint format, and ``tdx.serialization``.

What ``tdx.save`` writes ``torch.load`` reads (weights_only included), and ``tdx.load``
reads what ``torch.save`` writes, without importing torch. Each storage is saved once and
every tensor is rebuilt as a view of it (offset, sizes, strides), so views saved together
share memory again after loading. Legacy (pre-zip, ``_use_new_zipfile_serialization=False``)
files are read and written too (:mod:`.legacy`; they keep no tdx device). MLX tensors are saved with torch's ``cpu`` location (so
torch loads them) and their tdx device in an extra record, ``.data/tdx_locations``, which
torch ignores and ``tdx.load`` uses. Must never import torch or MLX.
"""

from __future__ import annotations

import io
import json
import os
import pickle
import struct
import typing as _typing

import numpy as np

import tdx

from . import archive as _archive
from . import legacy as _legacy
from . import records as _records
from . import storage as _storage
from .records import CheckpointError, CheckpointUnpicklingError
from .pickling import (CheckpointPickler, CheckpointUnpickler, StorageType, WeightsOnlyError, add_safe_globals,
                       clear_safe_globals, get_safe_globals, safe_globals, _parameter_class)

__all__ = ["save", "load", "add_safe_globals", "get_safe_globals", "clear_safe_globals", "safe_globals",
           "WeightsOnlyError", "CheckpointError", "CheckpointUnpicklingError", "DEFAULT_PROTOCOL"]

DEFAULT_PROTOCOL = 2  # torch's
# torch's type aliases of load's map_location and of a file argument (libraries annotate with them)
MAP_LOCATION = _typing.Optional[_typing.Union[_typing.Callable, str, dict, "tdx.device"]]
FILE_LIKE = _typing.Union[str, os.PathLike, _typing.IO[bytes]]
_TDX_LOCATIONS = ".data/tdx_locations"


def _torch_location(device: str):
    """(torch's location tag, tdx's own device or None when torch's tag says it all)."""
    if device.startswith("mlx") or device.split(":")[0] not in ("cpu", "cuda", "mps", "xpu", "meta"):
        return "cpu", device
    if device.startswith("mps"):
        return "mps", None
    return device, None


def save(obj, f, pickle_module=None, pickle_protocol=DEFAULT_PROTOCOL, _use_new_zipfile_serialization=True,
         _disable_byteorder_record=False) -> None:
    """Save ``obj`` to ``f`` (a path or a writable binary file) as ``torch.save`` does.

    A path is written to a temporary file in the same folder, which then replaces it in one
    rename: an interrupt or error midway leaves the previous file as it was (torch truncates it
    first). A file object is written in place, as torch writes it.

    Args:
        obj: tensors, Parameters, state dicts (OrderedDict with ``_metadata``), containers,
            Python scalars, whole modules (pickled by reference to their classes).
        f: a path (str / PathLike) or a binary file object.
        pickle_module: only the standard ``pickle`` (or None): tdx writes with its own pickler.
        pickle_protocol: the pickle protocol of ``data.pkl`` (torch's default 2).
        _use_new_zipfile_serialization: False writes torch's legacy (non-zip) format, as torch does;
            it keeps no tdx device (MLX tensors load on ``cpu``).
        _disable_byteorder_record: leave out the ``byteorder`` record, as torch's flag.

    Raises:
        TdxValueError: another pickle module.
    """
    if pickle_module not in (None, pickle):
        raise tdx.TdxValueError(f"tdx.save pickles with its own pickler; pickle_module must be None or the "
                                f"standard pickle module, got {pickle_module!r}")
    extra = {}

    def location_of(st):
        return _torch_location(st.device)[0]

    if not _use_new_zipfile_serialization:
        if isinstance(f, (str, os.PathLike)):
            with _archive.replacing(os.fspath(f)) as fh:
                _legacy.write(fh, obj, pickle_protocol, _storage.storage_of, location_of)
        else:
            _legacy.write(f, obj, pickle_protocol, _storage.storage_of, location_of)
        return

    buffer = io.BytesIO()
    pickler = CheckpointPickler(buffer, pickle_protocol, _storage.storage_of, location_of)
    pickler.dump(obj)
    for ref in pickler.storages:
        own = _torch_location(ref.storage.device)[1]
        if own is not None:
            extra[ref.key] = own
    if isinstance(f, (str, os.PathLike)):
        name = os.path.splitext(os.path.basename(os.fspath(f)))[0] or "archive"
        with _archive.replacing(os.fspath(f)) as fh:
            _write_archive(fh, name, buffer.getvalue(), pickler.storages, extra, _disable_byteorder_record)
    else:
        _write_archive(f, "archive", buffer.getvalue(), pickler.storages, extra, _disable_byteorder_record)


def _write_archive(f, name, pickled, storages, extra, disable_byteorder):
    """The records of one checkpoint, in torch's order, into ``f``."""
    writer = _archive.ArchiveWriter(f, name)
    try:
        writer.write("data.pkl", pickled)
        writer.write(".format_version", b"1")
        writer.write(".storage_alignment", str(_archive.ALIGNMENT).encode())
        if not disable_byteorder:
            writer.write("byteorder", b"little")
        for ref in storages:
            writer.write(f"data/{ref.key}", ref.storage.read())
        if extra:
            writer.write(_TDX_LOCATIONS, json.dumps(extra).encode())
        writer.write_footer()
    finally:
        writer.close()



def _window(t, offset, n, s):
    """The layout ``(n, s)`` (sizes and strides, strides decreasing) starting ``offset`` elements
    into the last dimension of ``t``, as view ops of ``t``; None when it does not fit.

    The outermost dimension is a window of ``n[0]`` rows of ``s[0]`` elements (started early when
    it would run past the end); the rest of the layout is cut out of every row the same way.
    """
    length = t.shape[-1]
    lead = (slice(None),) * (t.ndim - 1)
    if not n:
        return t[lead + (offset,)] if offset < length else None
    if len(n) == 1:
        last = offset + (n[0] - 1) * s[0]
        return t[lead + (slice(offset, last + 1, s[0]),)] if last < length else None
    shift = max(0, offset + n[0] * s[0] - length)  # start the window early when it would overrun
    if shift > offset:
        return None  # n[0] rows of s[0] do not fit (an inner layout spilling out of its row: the next level says)
    rows = t[lead + (slice(offset - shift, offset - shift + n[0] * s[0]),)].view(*t.shape[:-1], n[0], s[0])
    return _window(rows, shift, n[1:], s[1:])


def _view_of(flat, offset, size, stride):
    """``flat.as_strided(size, stride, offset)`` built from view ops, so it shares ``flat``'s
    memory; None when the layout cannot be expressed that way (overlapping or negative strides)."""
    real = [d for d in range(len(size)) if size[d] != 1 and stride[d] != 0]
    order = sorted(real, key=lambda d: -stride[d])
    if any(stride[d] < 0 for d in real):
        return None
    core = _window(flat, offset, [size[d] for d in order], [stride[d] for d in order])
    if core is None:
        return None
    if order:
        inverse = sorted(range(len(order)), key=lambda i: order[i])
        core = core.permute(*inverse)
    for d in range(len(size)):
        if d not in real:
            core = core.unsqueeze(d)
    return core.expand(*size) if any(stride[d] == 0 and size[d] != 1 for d in range(len(size))) else core


def _shares_storage(flat) -> bool:
    """Whether ``flat`` lives on an executor whose ``as_strided`` is a view of its memory (torch's own
    tensors): any layout, overlapping ones included, is rebuilt there as torch rebuilds it."""
    return getattr(flat.executor, "mutable", True) and type(flat.native).__module__.startswith("torch")


def _rebuild_tensor(flat, offset, size, stride, requires_grad=False, hooks=None, metadata=None, record="storage"):
    """torch's ``_rebuild_tensor_v2``: the tensor ``(offset, size, stride)`` over storage ``flat``
    (named ``record`` in errors), checked against it before anything is built.

    On torch's executors the tensor is ``flat.as_strided(size, stride, offset)``, a view whatever
    the layout (overlapping and expanded ones included, as under torch). On MLX it is built from
    view ops (a view of the storage's array; stride 0 a lazy broadcast); a layout overlapping itself,
    which view ops cannot express, is copied while the copy stays within :func:`_overlap_limit`.
    """
    if not isinstance(flat, tdx.Tensor):
        raise CheckpointError(f"checkpoint tensor: its storage is a {type(flat).__name__}, not a storage record")
    size, stride = _records.check_layout(record, flat.numel(), offset, size, stride)
    if not isinstance(requires_grad, bool):
        raise CheckpointError(f"checkpoint tensor over {record!r}: requires_grad {requires_grad!r} is not a bool")
    if _shares_storage(flat):
        out = flat.as_strided(size, stride, flat.storage_offset() + offset)  # a legacy storage view starts late
    elif 0 in size:
        out = tdx.zeros(size, dtype=flat.dtype, device=flat.device)
    else:
        out = _view_of(flat, offset, size, stride)
        if out is None:  # a layout overlapping itself, which view ops cannot express: the values, copied
            out = _overlapping(flat, offset, size, stride, record)
    if requires_grad:
        out = out.detach().requires_grad_(True) if not out.is_leaf else out.requires_grad_(True)
    return out


_OVERLAP_FLOOR, _OVERLAP_RATIO = 16 << 20, 16


def _overlap_limit(flat) -> int:
    """The most bytes a self-overlapping layout over ``flat`` may be copied to where views cannot
    express it (MLX): 16 times the storage's bytes, or 16 MiB for a small one. The copy is bounded
    by the file; a larger one (a 160 KB storage viewed as 20000 x 20000 is 1.6 GB) is refused."""
    return max(_OVERLAP_FLOOR, _OVERLAP_RATIO * flat.numel() * flat.element_size())


def _overlapping(flat, offset, size, stride, record):
    """The values of a self-overlapping layout (in bounds: checked), strided on the host without an
    index array; refused when the copy would pass :func:`_overlap_limit`."""
    numel = int(np.prod(size, dtype=object))
    limit = _overlap_limit(flat)
    if numel * flat.element_size() > limit:
        raise tdx.UnsupportedOpError(
            f"checkpoint tensor over {record!r}: sizes {list(size)} with strides {list(stride)} overlap themselves; "
            f"on {flat.device} such a tensor is a copy ({numel * flat.element_size()} bytes), and tdx copies at most "
            f"{limit} bytes (16 times its storage's {flat.numel() * flat.element_size()} bytes, or 16 MiB): "
            f"load it with map_location='cpu' to get a view")
    host = np.ascontiguousarray(flat.numpy(force=True).reshape(-1))
    item = host.itemsize
    values = np.lib.stride_tricks.as_strided(host[offset:], shape=size, strides=[s * item for s in stride],
                                             writeable=False)
    return tdx.as_tensor(np.ascontiguousarray(values), device=flat.device).to(flat.dtype)


def _rebuild_parameter(data, requires_grad, hooks=None):
    if not isinstance(data, tdx.Tensor) or not isinstance(requires_grad, bool):
        raise CheckpointError(f"checkpoint parameter: data {type(data).__name__} and requires_grad "
                              f"{requires_grad!r} must be a tensor and a bool")
    return _parameter_class(data, requires_grad)


def _resolve(map_location, saved, torch_tag):
    """The tdx device a storage saved at ``saved`` (torch's tag ``torch_tag``) loads to."""
    if map_location is None:
        return saved
    if isinstance(map_location, (str, tdx.device)):
        return str(map_location)
    if isinstance(map_location, dict):
        target = map_location.get(saved, map_location.get(torch_tag, saved))
        return str(target)
    raise tdx.TdxTypeError(f"map_location should be None, a str, a tdx.device, a dict or a callable, "
                           f"got {type(map_location).__name__}")


def load(f, map_location=None, pickle_module=None, *, weights_only=None, mmap=None, **pickle_load_args):
    """Load what ``tdx.save`` or ``torch.save`` wrote, as ``torch.load``, without torch.

    Args:
        f: a path, a readable binary file object, or bytes.
        map_location: None (each storage where it was saved, through tdx's device translation:
            a ``cuda`` tag loads where tdx's device map sends cuda), a device string or
            ``tdx.device`` (everything there), a dict ``{saved: target}``, or a callable
            ``(storage, location) -> tensor or None`` given each storage as a flat cpu tensor.
        pickle_module: only the standard ``pickle`` (or None).
        weights_only: True (the default, as torch >= 2.6) allows only tensors, containers,
            numbers and torch's safe globals (plus :func:`add_safe_globals`); False loads any
            pickle (trusted files only).
        mmap: map the file's storages into memory instead of reading them (a path is needed;
            the tensors then share the mapped memory on cpu, copy-on-write).
        **pickle_load_args: only ``encoding`` is accepted (must be utf-8 compatible).

    A file is untrusted input; loading it costs time and memory bounded by its size. Every number
    a record carries is checked before anything of that size is allocated (see :mod:`.records`);
    the pickle's opcodes are walked before it runs (milliseconds per megabyte; with
    ``weights_only`` any opcode torch's weights-only unpickler refuses is refused there); a
    compressed record inflates at most 100-fold; on torch's executors every tensor is a view of its
    storage (overlapping and expanded layouts too, as torch loads them), on MLX a view or a copy of
    at most 16 times its storage. What the pickle builds still grows with it, as under torch: a
    stream of one-byte opcodes that each push an object takes about 8 (None) to 75 (empty lists or
    dicts) bytes of memory per byte of stream, and about a second per 10 MB.

    Raises:
        CheckpointError: (a RuntimeError, as torch's) a corrupt archive (truncated, a CRC that does
            not match its record, a missing record, a record named twice, records overlapping each
            other, a compressed record inflating over 100-fold), a storage count that does not match
            its record, a tensor's sizes/strides/offset outside its storage or negative, a device
            index outside 0..127; names the record.
        CheckpointUnpicklingError: (a ``pickle.UnpicklingError``) a pickle stream that cannot be
            read: truncated, malformed, announcing more bytes than it holds; with ``weights_only``,
            an opcode outside torch's weights-only set (protocol 4's FRAME, POP...); neither a zip
            checkpoint nor a legacy one.
        WeightsOnlyError: (a ``pickle.UnpicklingError``) a global outside the allowed set.
        UnsupportedOpError: a big-endian checkpoint; a tensor subclass tdx lacks, or a tensor
            carrying Python attributes (torch keeps them; tdx tensors hold none); on MLX, a
            self-overlapping layout whose copy would pass 16 times its storage (and 16 MiB).
        TdxValueError / TdxTypeError: a tensor's storage offset / sizes or strides past int64 (torch's
            classes there).
        TdxTypeError: a map_location of another kind.
    """
    if pickle_module not in (None, pickle):
        raise tdx.TdxValueError(f"tdx.load unpickles with its own unpickler; pickle_module must be None or the "
                                f"standard pickle module, got {pickle_module!r}")
    if weights_only is None:
        weights_only = pickle_module is None
    unknown = set(pickle_load_args) - {"encoding"}
    if unknown:
        raise tdx.TdxTypeError(f"tdx.load got unexpected keyword arguments {sorted(unknown)}; accepted: encoding")
    fh, path, opened = _archive.open_for_read(f)
    try:
        if not _archive.is_zip(fh):
            pickled, host_values = _legacy.read(fh)
            return _unpickle(pickled, host_values, {}, map_location, weights_only)
        reader = _archive.ArchiveReader(fh, path if mmap else None)
        try:
            return _load_archive(reader, map_location, weights_only, bool(mmap))
        finally:
            reader.close()
    finally:
        if opened:
            fh.close()


def _load_archive(reader, map_location, weights_only, mmap):
    if reader.has("byteorder") and reader.read("byteorder") != b"little":
        raise tdx.UnsupportedOpError(f"tdx.load reads little-endian checkpoints; this one is "
                                     f"{reader.read('byteorder')[:16]!r}")
    own = {}
    if reader.has(_TDX_LOCATIONS):
        try:
            own = json.loads(reader.read(_TDX_LOCATIONS))
        except (ValueError, UnicodeDecodeError) as err:
            raise CheckpointError(f"checkpoint record {_TDX_LOCATIONS!r} is not JSON: {err}") from None
        if not isinstance(own, dict) or not all(isinstance(v, str) for v in own.values()):
            raise CheckpointError(f"checkpoint record {_TDX_LOCATIONS!r} must map storage keys to device strings")

    def host_values(key, dtype, numel):
        record = f"data/{key}"
        _records.check_storage(record, numel, dtype.itemsize, reader.size(record))
        values = None
        if mmap and dtype is not tdx.bfloat16:
            np_dtype = np.dtype("bool" if dtype is tdx.bool else dtype.name).newbyteorder("<")
            values = reader.mapped(record, np_dtype, numel)
        if values is None:
            values = _storage.from_bytes(reader.read(record), dtype)
        return values

    return _unpickle(reader.read("data.pkl"), host_values, own, map_location, weights_only)


# what a malformed pickle stream makes the unpickler (or the callables it reaches) raise
_MALFORMED = (pickle.UnpicklingError, EOFError, ValueError, TypeError, KeyError, IndexError, AttributeError,
              UnicodeDecodeError, OverflowError, RecursionError, struct.error)


def _unpickle(pickled, host_values, own, map_location, weights_only):
    """Unpickle checkpoint pickle bytes; ``host_values(key, dtype, numel)`` gives a storage's values
    (checked against the record's size).

    With ``weights_only`` every callable the stream reaches is tdx's, so any failure of a builtin
    kind is the stream's fault: a :class:`CheckpointUnpicklingError`. Otherwise only the unpickler's
    own failures are; what the file's own classes raise passes through, as under torch.
    """
    _records.check_pickle("data.pkl", pickled, weights_only)
    storages = {}
    names = {}  # id(storage tensor) -> its record, for the errors that name it

    def to_device(values, dtype, device):
        t = tdx.as_tensor(values, device=device) if device == "cpu" else tdx.tensor(values, device=device)
        return t if t.dtype is dtype else t.to(dtype)

    def load_storage(pid):
        if len(pid) < 5 or not isinstance(pid[2], str) or not isinstance(pid[3], str):
            raise CheckpointUnpicklingError(f"checkpoint storage id {pid!r}: expected ('storage', type, key, "
                                            f"location, numel)")
        _, storage_type, key, location, numel = pid[:5]
        view = pid[5] if len(pid) > 5 else None  # legacy files: (view key, offset, size) of a view of `key`
        if view is not None:
            root = load_storage(pid[:5])
            _, start, length = view
            _records.check_layout(f"data/{key}", root.numel(), start, (length,), (1,))
            out = root[start:start + length]
            names[id(out)] = f"data/{key}"
            return out
        if key in storages:
            return storages[key]
        if not isinstance(storage_type, StorageType):
            raise CheckpointUnpicklingError(f"unsupported storage type {storage_type!r} in checkpoint")
        dtype = storage_type.dtype
        saved = own.get(key, location)
        _records.check_device(f"data/{key}", location)
        _records.check_device(f"data/{key}", saved)
        values = host_values(key, dtype, numel)
        if callable(map_location) and not isinstance(map_location, (str, tdx.device, dict)):
            result = map_location(to_device(values, dtype, "cpu"), location)
            flat = to_device(values, dtype, saved) if result is None else result
            if not isinstance(flat, tdx.Tensor):
                raise tdx.TdxTypeError(f"map_location callable must return a tdx tensor or None, got "
                                       f"{type(flat).__name__}")
        else:
            flat = to_device(values, dtype, _resolve(map_location, saved, location))
        storages[key] = flat
        names[id(flat)] = f"data/{key}"
        return flat

    def rebuild(flat, *args, **kwargs):
        return _rebuild_tensor(flat, *args, record=names.get(id(flat), "storage"), **kwargs)

    unpickler = CheckpointUnpickler(io.BytesIO(pickled), load_storage, rebuild, _rebuild_parameter, weights_only)
    try:
        return unpickler.load()
    except tdx.TdxError:
        raise
    except _MALFORMED as err:
        if not weights_only and not isinstance(err, (pickle.UnpicklingError, EOFError)):
            raise
        raise CheckpointUnpicklingError(f"checkpoint record 'data.pkl' cannot be unpickled: "
                                        f"{type(err).__name__}: {err}") from err
