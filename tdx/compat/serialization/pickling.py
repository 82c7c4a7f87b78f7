"""The pickle side of torch's checkpoint format, for tdx objects.

Saving: a pure-Python pickler writes tdx tensors as torch does, ``torch._utils._rebuild_tensor_v2``
over a persistent storage id ``('storage', torch.<Type>Storage, key, location, numel)``;
Parameters through ``torch._utils._rebuild_parameter``; tdx dtypes, devices and Sizes as
``torch.<dtype>``, ``torch.device``, ``torch.Size``. Those names are written as GLOBAL
opcodes directly, so real torch reads the file and nothing here needs torch.

Loading: an unpickler resolves every torch name the format uses to a tdx counterpart
itself (never importing torch). With ``weights_only`` it allows only torch's safe set plus
what :func:`add_safe_globals` / :class:`safe_globals` added, and refuses anything else with
:class:`WeightsOnlyError` (a ``pickle.UnpicklingError``, as torch raises).
Must never import torch or MLX.
"""

from __future__ import annotations

import _codecs
import _compat_pickle
import collections
import pickle
import threading

import tdx

from .records import check_device

__all__ = ["TorchGlobal", "CheckpointPickler", "CheckpointUnpickler", "WeightsOnlyError", "STORAGE_TYPES",
           "add_safe_globals", "get_safe_globals", "clear_safe_globals", "safe_globals"]

# torch's storage class names, per tdx dtype name
STORAGE_TYPES = {"float32": "FloatStorage", "float64": "DoubleStorage", "float16": "HalfStorage",
                 "bfloat16": "BFloat16Storage", "int64": "LongStorage", "int32": "IntStorage",
                 "int16": "ShortStorage", "int8": "CharStorage", "uint8": "ByteStorage", "bool": "BoolStorage",
                 "complex64": "ComplexFloatStorage", "complex128": "ComplexDoubleStorage"}
_DTYPE_OF_STORAGE = {v: k for k, v in STORAGE_TYPES.items()}


class WeightsOnlyError(tdx.TdxError, pickle.UnpicklingError):
    """``weights_only`` loading met a global outside the allowed set (torch raises
    ``pickle.UnpicklingError`` here)."""


class TorchGlobal:
    """A reference to ``module.name`` in torch, written as a GLOBAL opcode without importing it."""

    __slots__ = ("module", "name")

    def __init__(self, module: str, name: str):
        self.module, self.name = module, name

    def __call__(self, *args, **kwargs):  # pickle wants reduce functions callable; this one only names
        raise tdx.UnsupportedOpError(f"{self.module}.{self.name} is only written into checkpoints, not called")


REBUILD_TENSOR = TorchGlobal("torch._utils", "_rebuild_tensor_v2")
REBUILD_PARAMETER = TorchGlobal("torch._utils", "_rebuild_parameter")
REBUILD_PARAMETER_WITH_STATE = TorchGlobal("torch._utils", "_rebuild_parameter_with_state")
REBUILD_FROM_TYPE = TorchGlobal("torch._tensor", "_rebuild_from_type_v2")
TORCH_TENSOR = TorchGlobal("torch", "Tensor")
TORCH_DEVICE = TorchGlobal("torch", "device")
TORCH_SIZE = TorchGlobal("torch", "Size")


class PlainTensor:
    """Marks a tensor to be written as a plain tensor (the data of a Parameter)."""

    __slots__ = ("tensor",)

    def __init__(self, tensor):
        self.tensor = tensor


class StorageRef:
    """A storage the pickle refers to by persistent id."""

    __slots__ = ("key", "storage", "location")

    def __init__(self, key, storage, location):
        self.key, self.storage, self.location = key, storage, location


def _is_parameter(obj) -> bool:
    return type(obj).__name__ == "Parameter" and isinstance(obj, tdx.Tensor)


class CheckpointPickler(pickle._Pickler):
    """Pickles an object tree the way ``torch.save`` does, collecting the storages to write.

    ``storages`` lists the :class:`StorageRef` s in key order once pickling is done.
    """

    dispatch = dict(pickle._Pickler.dispatch)

    def __init__(self, file, protocol, storage_of, location_of):
        super().__init__(file, protocol)
        self._storage_of = storage_of
        self._location_of = location_of
        self._refs = {}
        self.storages = []

    def save_torch_global(self, obj):
        memo = self.memo.get(id(obj))
        if memo is not None:
            self.write(self.get(memo[0]))
            return
        self.write(pickle.GLOBAL + obj.module.encode("utf-8") + b"\n" + obj.name.encode("utf-8") + b"\n")
        self.memoize(obj)

    dispatch[TorchGlobal] = save_torch_global

    def persistent_id(self, obj):
        if type(obj) is StorageRef:
            st = obj.storage
            return ("storage", TorchGlobal("torch", STORAGE_TYPES[st.dtype.name]), obj.key, obj.location, st.numel)
        return None

    def _tensor_reduce(self, t):
        storage, offset, strides = self._storage_of(t)
        ref = self._refs.get(storage.identity)
        if ref is None:
            ref = StorageRef(str(len(self.storages)), storage, self._location_of(storage))
            self._refs[storage.identity] = ref
            self.storages.append(ref)
        return (REBUILD_TENSOR, (ref, offset, tuple(t.shape), tuple(strides), t.requires_grad,
                                 collections.OrderedDict()))

    def reducer_override(self, obj):
        cls = type(obj)
        if cls is PlainTensor:
            return self._tensor_reduce(obj.tensor)
        if isinstance(obj, tdx.Tensor):
            # the attributes set on a tensor travel as torch's state (its __dict__), as torch.save writes them
            state = dict(obj.__dict__) if obj.__dict__ else None
            if _is_parameter(obj):
                if state:
                    return (REBUILD_PARAMETER_WITH_STATE, (PlainTensor(obj), obj.requires_grad,
                                                           collections.OrderedDict(), state))
                return (REBUILD_PARAMETER, (PlainTensor(obj), obj.requires_grad, collections.OrderedDict()))
            reduced = self._tensor_reduce(obj)
            if cls is tdx.Tensor:
                return (REBUILD_FROM_TYPE, (reduced[0], TORCH_TENSOR, reduced[1], state)) if state else reduced
            if cls.__reduce_ex__ is tdx.Tensor.__reduce_ex__:  # a subclass: torch's record names its class
                return (REBUILD_FROM_TYPE, (reduced[0], cls, reduced[1], state or {}))
            return NotImplemented
        if cls is tdx.device:
            return (TORCH_DEVICE, (str(obj),))
        if cls is tdx.Size:
            return (TORCH_SIZE, (tuple(obj),))
        return NotImplemented


def _save_dtype(self, obj):
    """A tdx dtype is the bare GLOBAL ``torch.<name>``, as torch writes its dtypes."""
    self.save_torch_global(TorchGlobal("torch", obj.name))
    self.memoize(obj)


CheckpointPickler.dispatch[tdx.dtype] = _save_dtype


# ----------------------------------------------------------------------------------- loading

class StorageType:
    """What ``torch.<Type>Storage`` resolves to when loading: it names a dtype."""

    __slots__ = ("dtype",)

    def __init__(self, dtype):
        self.dtype = dtype


_safe_state = threading.local()
_user_safe: dict = {}


def _qualified(obj) -> str:
    return f"{obj.__module__}.{obj.__qualname__}"


def add_safe_globals(safe_globals) -> None:
    """Allow these globals in ``weights_only`` loading, as ``torch.serialization.add_safe_globals``.

    Args:
        safe_globals: a list of classes/functions, or of ``(obj, "module.name")`` pairs for an
            object pickled under another name.
    """
    for entry in safe_globals:
        if isinstance(entry, tuple):
            obj, name = entry
            _user_safe[name] = obj
        else:
            _user_safe[_qualified(entry)] = entry


def get_safe_globals() -> list:
    """The globals :func:`add_safe_globals` allowed (as objects)."""
    return list(_user_safe.values())


def clear_safe_globals() -> None:
    """Forget every global :func:`add_safe_globals` allowed."""
    _user_safe.clear()


class safe_globals:
    """Context manager: allow these globals for ``weights_only`` loads inside the block only."""

    def __init__(self, safe_globals):
        self.entries = list(safe_globals)
        self._saved = None

    def __enter__(self):
        self._saved = dict(_user_safe)
        add_safe_globals(self.entries)
        return self

    def __exit__(self, *exc):
        _user_safe.clear()
        _user_safe.update(self._saved)
        return False


def _torch_names(rebuild, rebuild_parameter):
    """torch's names in the format -> their tdx counterparts (resolved without torch)."""
    names = {
        ("torch._utils", "_rebuild_tensor_v2"): rebuild,
        ("torch._utils", "_rebuild_tensor"): lambda storage, offset, size, stride: rebuild(
            storage, offset, size, stride, False, None),
        ("torch._utils", "_rebuild_parameter"): rebuild_parameter,
        ("torch._utils", "_rebuild_parameter_with_state"): lambda data, rg, hooks, state: _set_state(
            rebuild_parameter(data, rg, hooks), state),
        ("torch._tensor", "_rebuild_from_type_v2"): _rebuild_from_type_v2,
        ("torch", "device"): _device,
        ("torch", "Size"): tdx.Size,
        ("torch", "Tensor"): TENSOR_TYPE,
        ("torch.nn.parameter", "Parameter"): _parameter_class,
        ("collections", "OrderedDict"): collections.OrderedDict,
        ("collections", "Counter"): collections.Counter,
        ("_codecs", "encode"): _codecs.encode,
        ("builtins", "bytearray"): _bytearray,
        ("builtins", "set"): set,
        ("builtins", "complex"): complex,
    }
    for dtype_name, storage_name in STORAGE_TYPES.items():
        d = getattr(tdx, "bool" if dtype_name == "bool" else dtype_name)
        names[("torch", storage_name)] = StorageType(d)
        names[("torch", dtype_name)] = d
    return names


class _TensorType:
    """What ``torch.Tensor`` names in a checkpoint: the type ``_rebuild_from_type_v2`` is given.
    Never called by a checkpoint torch writes; a crafted one calling it (``torch.Tensor(20000, 20000)``
    allocates) is refused under ``weights_only`` (otherwise the name is ``tdx.Tensor`` itself)."""

    def __call__(self, *args, **kwargs):
        raise pickle.UnpicklingError(f"a checkpoint calls torch.Tensor{args!r}: torch's checkpoints only name it")


TENSOR_TYPE = _TensorType()


def _device(*args, **kwargs):
    """``torch.device`` called while loading: tdx's device, its index checked first."""
    check_device("data.pkl", *args, **kwargs)
    return tdx.device(*args, **kwargs)


def _bytearray(*args):
    """``bytearray`` as pickle protocol 2 uses it (``bytearray(str, encoding)``): a size is refused,
    since ``bytearray(10**12)`` would allocate it."""
    if args and isinstance(args[0], int):
        raise pickle.UnpicklingError(f"a checkpoint calls bytearray{args!r}: only bytearray(data, encoding) is read")
    return bytearray(*args)


def _parameter_class(*args, **kwargs):
    """``torch.nn.Parameter`` called while loading: tdx's Parameter."""
    import tdx.nn as nn

    return nn.Parameter(*args, **kwargs)


def _rebuild_from_type_v2(func, new_type, args, state):
    new_type = tdx.Tensor if new_type is TENSOR_TYPE else new_type
    out = func(*args)
    if new_type is not tdx.Tensor and isinstance(new_type, type) and not isinstance(out, new_type):
        if not issubclass(new_type, tdx.Tensor):
            raise tdx.UnsupportedOpError(f"tdx.load cannot rebuild tensor subclass {new_type!r}: it subclasses "
                                         f"real torch's Tensor, not tdx's")
        out = out.as_subclass(new_type)
    return _set_state(out, state)


# what a checkpoint's state may not set: the tensor's own slots (its array, executor, autograd and view records)
_INTERNAL = frozenset(name for klass in tdx.Tensor.__mro__ for name in getattr(klass, "__slots__", ()))


def _set_state(tensor, state):
    """Set torch's saved state, ``__dict__`` or ``(__dict__, slots)``, on ``tensor`` as torch does (attribute by
    attribute); a name of the tensor's own slots is refused, since a file is untrusted input."""
    if not state:
        return tensor
    if isinstance(state, tuple):
        if len(state) != 2:
            raise pickle.UnpicklingError(f"Invalid serialized state: {state!r}")
        parts = state
    else:
        parts = (state,)
    for part in parts:
        if not part:
            continue
        if not isinstance(part, dict):
            raise pickle.UnpicklingError(f"a saved tensor's state is {type(part).__name__}, not a dict of attributes")
        for name, value in part.items():
            if not isinstance(name, str) or name in _INTERNAL:
                raise pickle.UnpicklingError(f"a saved tensor's state sets {name!r}, which is no attribute a "
                                             f"checkpoint may set")
            setattr(tensor, name, value)
    return tensor


class CheckpointUnpickler(pickle.Unpickler):
    """Unpickles ``data.pkl``: torch's names become tdx's; ``weights_only`` restricts the rest.

    Args:
        file: the pickle bytes as a file object.
        load_storage: called with the persistent id tuple, returns the storage tensor.
        rebuild, rebuild_parameter: tdx's ``_rebuild_tensor_v2`` / ``_rebuild_parameter``.
        weights_only: allow only the safe set (and the user's safe globals).
    """

    def __init__(self, file, load_storage, rebuild, rebuild_parameter, weights_only):
        super().__init__(file, encoding="utf-8")
        self._load_storage = load_storage
        self._names = _torch_names(rebuild, rebuild_parameter)
        if not weights_only:
            self._names[("torch", "Tensor")] = tdx.Tensor
        self._weights_only = weights_only

    def persistent_load(self, pid):
        if not isinstance(pid, tuple) or not pid or pid[0] != "storage":
            raise pickle.UnpicklingError(f"unsupported persistent id {pid!r}: expected ('storage', ...)")
        return self._load_storage(pid)

    def find_class(self, module, name):
        if module in _compat_pickle.IMPORT_MAPPING or (module, name) in _compat_pickle.NAME_MAPPING:
            # Python 2 names that protocol 0-2 pickles use (__builtin__.set...): pickle's own mapping
            module, name = _compat_pickle.NAME_MAPPING.get((module, name), (module, name))
            module = _compat_pickle.IMPORT_MAPPING.get(module, module)
        known = self._names.get((module, name))
        if known is not None:
            return known
        qualified = f"{module}.{name}"
        if qualified in _user_safe:
            return _user_safe[qualified]
        if self._weights_only:
            raise WeightsOnlyError(
                "Weights only load failed. In PyTorch 2.6, we changed the default value of the `weights_only` "
                "argument in `torch.load` from `False` to `True`. Re-running `tdx.load` with `weights_only` set "
                "to `False` will likely succeed, but it can result in arbitrary code execution. Do it only if "
                "you got the file from a trusted source.\n"
                f"WeightsUnpickler error: Unsupported global: GLOBAL {qualified} was not an allowed global by "
                f"default. Please use `tdx.serialization.add_safe_globals([{name}])` or the "
                f"`tdx.serialization.safe_globals([{name}])` context manager to allowlist this global if you "
                "trust this class/function.")
        return super().find_class(module, name)
