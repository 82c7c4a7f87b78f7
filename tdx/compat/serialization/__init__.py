"""``tdx.save`` / ``tdx.load`` in torch's checkpoint format, and ``tdx.serialization``.

What ``tdx.save`` writes ``torch.load`` reads (weights_only included), and ``tdx.load``
reads what ``torch.save`` writes, without importing torch. Each storage is saved once and
every tensor is rebuilt as a view of it (offset, sizes, strides), so views saved together
share memory again after loading. Legacy (pre-zip, ``_use_new_zipfile_serialization=False``)
files are read too, never written. MLX tensors are saved with torch's ``cpu`` location (so
torch loads them) and their tdx device in an extra record, ``.data/tdx_locations``, which
torch ignores and ``tdx.load`` uses. Must never import torch or MLX.
"""

from __future__ import annotations

import io
import json
import os
import pickle

import numpy as np

import tdx

from . import archive as _archive
from . import legacy as _legacy
from . import storage as _storage
from .pickling import (CheckpointPickler, CheckpointUnpickler, StorageType, WeightsOnlyError, add_safe_globals,
                       clear_safe_globals, get_safe_globals, safe_globals, _parameter_class)

__all__ = ["save", "load", "add_safe_globals", "get_safe_globals", "clear_safe_globals", "safe_globals",
           "WeightsOnlyError", "DEFAULT_PROTOCOL"]

DEFAULT_PROTOCOL = 2  # torch's
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

    Args:
        obj: tensors, Parameters, state dicts (OrderedDict with ``_metadata``), containers,
            Python scalars, whole modules (pickled by reference to their classes).
        f: a path (str / PathLike) or a binary file object.
        pickle_module: only the standard ``pickle`` (or None): tdx writes with its own pickler.
        pickle_protocol: the pickle protocol of ``data.pkl`` (torch's default 2).
        _use_new_zipfile_serialization: must be True: tdx writes only the zip format.
        _disable_byteorder_record: leave out the ``byteorder`` record, as torch's flag.

    Raises:
        TdxValueError: another pickle module.
        UnsupportedOpError: the legacy (non-zip) format was asked for.
    """
    if pickle_module not in (None, pickle):
        raise tdx.TdxValueError(f"tdx.save pickles with its own pickler; pickle_module must be None or the "
                                f"standard pickle module, got {pickle_module!r}")
    if not _use_new_zipfile_serialization:
        raise tdx.UnsupportedOpError("tdx.save writes only torch's zip format; "
                                     "_use_new_zipfile_serialization=False (the legacy format) is not supported")
    extra = {}

    def location_of(st):
        return _torch_location(st.device)[0]

    buffer = io.BytesIO()
    pickler = CheckpointPickler(buffer, pickle_protocol, _storage.storage_of, location_of)
    pickler.dump(obj)
    for ref in pickler.storages:
        own = _torch_location(ref.storage.device)[1]
        if own is not None:
            extra[ref.key] = own
    if isinstance(f, (str, os.PathLike)):
        name = os.path.splitext(os.path.basename(os.fspath(f)))[0] or "archive"
    else:
        name = "archive"
    writer = _archive.ArchiveWriter(f, name)
    try:
        writer.write("data.pkl", buffer.getvalue())
        writer.write(".format_version", b"1")
        writer.write(".storage_alignment", str(_archive.ALIGNMENT).encode())
        if not _disable_byteorder_record:
            writer.write("byteorder", b"little")
        for ref in pickler.storages:
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


def _rebuild_tensor(flat, offset, size, stride, requires_grad=False, hooks=None, metadata=None):
    size, stride = tuple(size), tuple(stride)
    numel = int(np.prod(size)) if size else 1
    if numel == 0:
        out = tdx.zeros(size, dtype=flat.dtype, device=flat.device)
    else:
        out = _view_of(flat, offset, size, stride)
        if out is None:  # a layout view ops cannot express: the values, copied
            idx = np.full(size, offset, dtype=np.int64)
            for d, (k, st) in enumerate(zip(size, stride)):
                shape = [1] * len(size)
                shape[d] = k
                idx = idx + (np.arange(k, dtype=np.int64) * st).reshape(shape)
            out = flat[tdx.as_tensor(idx.ravel(), device=flat.device)].reshape(size)
    if requires_grad:
        out = out.detach().requires_grad_(True) if not out.is_leaf else out.requires_grad_(True)
    return out


def _rebuild_parameter(data, requires_grad, hooks=None):
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

    Raises:
        WeightsOnlyError: (a ``pickle.UnpicklingError``) a global outside the allowed set.
        UnsupportedOpError: a big-endian checkpoint; a tensor subclass tdx lacks, or a tensor
            carrying Python attributes (torch keeps them; tdx tensors hold none).
        pickle.UnpicklingError: neither a zip checkpoint nor a legacy one.
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
                                     f"{reader.read('byteorder').decode()!r}")
    own = json.loads(reader.read(_TDX_LOCATIONS)) if reader.has(_TDX_LOCATIONS) else {}

    def host_values(key, dtype, numel):
        values = None
        if mmap and dtype is not tdx.bfloat16:
            np_dtype = np.dtype("bool" if dtype is tdx.bool else dtype.name).newbyteorder("<")
            values = reader.mapped(f"data/{key}", np_dtype, numel)
        if values is None:
            values = _storage.from_bytes(reader.read(f"data/{key}"), dtype)[:numel]
        return values

    return _unpickle(reader.read("data.pkl"), host_values, own, map_location, weights_only)


def _unpickle(pickled, host_values, own, map_location, weights_only):
    """Unpickle checkpoint pickle bytes; ``host_values(key, dtype, numel)`` gives a storage's values."""
    storages = {}

    def to_device(values, dtype, device):
        t = tdx.as_tensor(values, device=device) if device == "cpu" else tdx.tensor(values, device=device)
        return t if t.dtype is dtype else t.to(dtype)

    def load_storage(pid):
        _, storage_type, key, location, numel = pid[:5]
        view = pid[5] if len(pid) > 5 else None  # legacy files: (view key, offset, size) of a view of `key`
        if view is not None:
            root = load_storage(pid[:5])
            return root[view[1]:view[1] + view[2]]
        if key in storages:
            return storages[key]
        if not isinstance(storage_type, StorageType):
            raise pickle.UnpicklingError(f"unsupported storage type {storage_type!r} in checkpoint")
        dtype = storage_type.dtype
        saved = own.get(key, location)
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
        return flat

    unpickler = CheckpointUnpickler(io.BytesIO(pickled), load_storage, _rebuild_tensor, _rebuild_parameter,
                                    weights_only)
    return unpickler.load()
