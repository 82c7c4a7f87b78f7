"""Storages: ``tdx.UntypedStorage``, ``tdx.TypedStorage``, the legacy ``tdx.FloatStorage``..., and the
Tensor methods that look at memory (``storage``, ``untyped_storage``, ``data_ptr``, ``is_set_to``,
``share_memory_``, ``pin_memory``...).

A tdx storage is a window on a tensor's memory, enough for what user code asks of torch's:
its size in bytes, its pointer (two tensors share memory when their storages' pointers are
equal), its dtype and device. On a torch executor the pointer is torch's; on MLX it is the
address of the root array's buffer plus the view's offset (MLX arrays are immutable, so an
in-place write gives the root a new buffer and a new address, where torch's stays put).
This module must never import a framework at module level.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from .. import _dtypes as D
from .._errors import NATIVE_ERRORS, TdxRuntimeError, TdxTypeError
from . import views as _views
from .tensor import Tensor
from .wrapping import attach

__all__ = ["UntypedStorage", "TypedStorage", "Storage", "StorageBase", "is_storage", "LEGACY_STORAGES"]


def _root_pointer(t) -> int:
    """The address of the first byte of the memory ``t``'s root owns."""
    if t._ex.name == "torch":
        return t._n.untyped_storage().data_ptr()
    root = _views.layout_of(t).root
    native = root._n
    if native.size == 0:
        return 0
    try:
        return np.frombuffer(memoryview(native), dtype=np.uint8).__array_interface__["data"][0]
    except BufferError:  # stored column by column (a relaid weight): NumPy's strided view starts at the buffer
        return np.array(native, copy=False).__array_interface__["data"][0]


def data_ptr(t) -> int:
    """The address of ``t``'s first element."""
    if t._ex.name == "torch":
        return t._n.data_ptr()
    lay = _views.layout_of(t)
    base = _root_pointer(lay.root)
    return base + lay.offset * D.as_dtype(t.dtype).itemsize if base else 0


class StorageBase:
    """Base of tdx's storage classes (``torch.StorageBase``)."""

    __slots__ = ()


class UntypedStorage(StorageBase):
    """The bytes under a tensor (``torch.UntypedStorage``): ``nbytes()``, ``data_ptr()``, ``device``.

    Args:
        size: with no tensor, a fresh zeroed storage of ``size`` bytes on ``device``.
    """

    __slots__ = ("_tensor",)

    def __init__(self, size=0, *, device=None):
        from .creation import zeros

        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            raise TdxTypeError(f"UntypedStorage(): size must be a non-negative int, got {size!r}")
        self._tensor = zeros(size, dtype=D.uint8, device=device)

    @classmethod
    def _of(cls, t):
        out = object.__new__(cls)
        out._tensor = t
        return out

    @property
    def device(self):
        return self._tensor.device

    def nbytes(self) -> int:
        """The storage's size in bytes (the root tensor's, for a view)."""
        root = _views.layout_of(self._tensor).root if self._tensor._ex.name != "torch" else None
        if root is None:
            return int(self._tensor._n.untyped_storage().nbytes())
        return root.numel() * root.element_size()

    def size(self) -> int:
        """The size in bytes (an untyped storage's elements are bytes)."""
        return self.nbytes()

    def __len__(self) -> int:
        return self.nbytes()

    def data_ptr(self) -> int:
        """The address of the storage's first byte."""
        return _root_pointer(self._tensor)

    def element_size(self) -> int:
        return 1

    def is_shared(self) -> bool:
        return self._tensor.is_shared()

    def tolist(self) -> list:
        """The bytes as ints."""
        return list(bytes(memoryview(np.ascontiguousarray(self._root_numpy()))))

    def _root_numpy(self):
        t = self._tensor
        root = t if t._ex.name == "torch" else _views.layout_of(t).root
        return root.detach().cpu().numpy().reshape(-1).view(np.uint8)

    def __repr__(self) -> str:
        return f"<tdx.UntypedStorage of {self.nbytes()} bytes on {self.device}>"


class TypedStorage(StorageBase):
    """A storage seen as elements of one dtype (``torch.TypedStorage``, what ``x.storage()`` returns)."""

    __slots__ = ("_untyped", "dtype")

    def __init__(self, *args, dtype=None, device=None):
        from .creation import tensor, zeros

        self.dtype = D.as_dtype(dtype) if dtype is not None else D.get_default_dtype()
        if len(args) == 1 and isinstance(args[0], (list, tuple)):
            t = tensor(list(args[0]), dtype=self.dtype, device=device)
        elif len(args) <= 1 and all(isinstance(a, int) and not isinstance(a, bool) for a in args):
            t = zeros(args[0] if args else 0, dtype=self.dtype, device=device)
        else:
            raise TdxTypeError(f"{type(self).__name__}(): expected a size (int) or a sequence of values, got {args!r}")
        self._untyped = UntypedStorage._of(t)

    @classmethod
    def _of(cls, t):
        out = object.__new__(cls)
        out._untyped = UntypedStorage._of(t)
        out.dtype = t.dtype
        return out

    @property
    def device(self):
        return self._untyped.device

    def untyped(self) -> UntypedStorage:
        return self._untyped

    def nbytes(self) -> int:
        return self._untyped.nbytes()

    def element_size(self) -> int:
        return self.dtype.itemsize

    def size(self) -> int:
        """The number of elements."""
        return self.nbytes() // self.element_size()

    def __len__(self) -> int:
        return self.size()

    def data_ptr(self) -> int:
        return self._untyped.data_ptr()

    def is_shared(self) -> bool:
        return self._untyped.is_shared()

    def tolist(self) -> list:
        t = self._untyped._tensor
        root = t if t._ex.name == "torch" else _views.layout_of(t).root
        if t._ex.name == "torch":
            import torch

            n = t._n
            base = torch.empty(0, dtype=n.dtype, device=n.device).set_(n.untyped_storage())
            return base.tolist()
        return root.reshape(-1).tolist()

    def __repr__(self) -> str:
        return f"<tdx.TypedStorage dtype={self.dtype} of {self.size()} elements on {self.device}>"


Storage = TypedStorage


def _legacy_storage(name: str, dtype):
    def __init__(self, *args, device=None):
        TypedStorage.__init__(self, *args, dtype=dtype, device=device)

    return type(name, (TypedStorage,), {"__slots__": (), "__init__": __init__, "__module__": "tdx",
                                        "__doc__": f"Legacy storage of {dtype} elements (``torch.{name}``)."})


LEGACY_STORAGES = {f"{n}Storage": _legacy_storage(f"{n}Storage", getattr(D, d)) for n, d in (
    ("Float", "float32"), ("Double", "float64"), ("Half", "float16"), ("BFloat16", "bfloat16"),
    ("Long", "int64"), ("Int", "int32"), ("Short", "int16"), ("Char", "int8"), ("Byte", "uint8"),
    ("Bool", "bool_"), ("ComplexFloat", "complex64"), ("ComplexDouble", "complex128"))}


def is_storage(obj) -> bool:
    """Whether ``obj`` is a tdx storage."""
    return isinstance(obj, StorageBase)


def _set_view(t, src, storage_offset, size, stride, whole_storage):
    """``set_`` on an MLX tensor: ``t`` becomes a view of ``src``'s root with the given layout."""
    if t is src:
        return t
    if _views.family(t):
        raise TdxRuntimeError("set_(): this MLX tensor has views of its own; tdx cannot move them to the new "
                              "memory (call set_ on a tensor without views)")
    old = getattr(t, "_view", None)
    if old is not None:
        (_views._views_of(old.root) or {}).pop(id(t), None)
        t._view = None
    lay = _views.layout_of(src)
    root = lay.root
    if size is None and not whole_storage:
        shape, strides, offset = lay.shape, lay.strides, lay.offset
    else:
        shape = (root.numel(),) if size is None else tuple(size)
        strides = _views.contiguous_strides(shape) if stride is None else tuple(stride)
        offset = storage_offset
    if shape and math.prod(shape) and offset + sum((n - 1) * s for n, s in zip(shape, strides)) >= root.numel():
        raise TdxRuntimeError(f"set_(): size {list(shape)}, stride {list(strides)} and offset {offset} reach past "
                              f"the storage's {root.numel()} elements")
    t._ag = None
    _views.link(t, root, shape, strides, offset, root=root)
    _views.refresh_one(t)
    return t


class _StorageMethods:
    def data_ptr(self) -> int:
        """The address of the tensor's first element (torch's ``data_ptr``)."""
        return data_ptr(self)

    def const_data_ptr(self) -> int:
        """``data_ptr()`` for reading."""
        return data_ptr(self)

    def untyped_storage(self) -> UntypedStorage:
        """The bytes under this tensor (shared with its views and its base)."""
        return UntypedStorage._of(self)

    def storage(self) -> TypedStorage:
        """The storage as elements of this tensor's dtype (torch's deprecated ``TypedStorage``)."""
        return TypedStorage._of(self)

    def storage_type(self):
        """The legacy storage class of this tensor's dtype (``tdx.FloatStorage``...)."""
        name = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
                "int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
                "bool": "Bool", "complex64": "ComplexFloat", "complex128": "ComplexDouble"}.get(self.dtype.name)
        if name is None:
            raise TdxTypeError(f"storage_type(): no legacy storage class for {self.dtype}")
        return LEGACY_STORAGES[f"{name}Storage"]

    def is_set_to(self, tensor) -> bool:
        """Whether both tensors have the same storage, offset, sizes and strides."""
        if not isinstance(tensor, Tensor):
            raise TdxTypeError(f"is_set_to(): argument 'tensor' must be Tensor, not {type(tensor).__name__}")
        if self._ex is not tensor._ex:
            return False
        if self._ex.name == "torch":
            return bool(self._n.is_set_to(tensor._n))
        a, b = _views.layout_of(self), _views.layout_of(tensor)
        return a.root is b.root and a.shape == b.shape and a.strides == b.strides and a.offset == b.offset

    def is_shared(self) -> bool:
        """Whether the memory is in shared memory (torch's ``share_memory_``); MLX memory never is."""
        return bool(self._n.is_shared()) if self._ex.name == "torch" else False

    def share_memory_(self):
        """Move the memory to shared memory (a torch executor's CPU tensor) and return self.

        Raises:
            TdxRuntimeError: an MLX tensor (MLX allocates its own memory).
        """
        if self._ex.name == "torch":
            self._n.share_memory_()
            return self
        raise TdxRuntimeError(f"share_memory_(): tensors on {self.device} cannot be moved to shared memory "
                              "(MLX allocates its own buffers); move the tensor to cpu first")

    def is_pinned(self, device=None) -> bool:
        """Whether the memory is page-locked (only a torch CPU tensor can be)."""
        return bool(self._n.is_pinned()) if self._ex.name == "torch" and self.device.type == "cpu" else False

    def pin_memory(self, device=None):
        """A page-locked copy for fast transfer to a GPU, as torch's (it needs CUDA).

        Raises:
            TdxRuntimeError: no CUDA device, or not a cpu tensor.
        """
        if self.device.type != "cpu" or self._ex.name != "torch":
            raise TdxRuntimeError(f"cannot pin '{self.device}' memory: only dense CPU tensors can be pinned")
        import torch

        if not torch.cuda.is_available():
            raise TdxRuntimeError("Cannot access accelerator device when none is available.")
        from .wrapping import wrap

        return wrap(self._n.pin_memory(), self._ex)

    def resize(self, *sizes):
        """A tensor of shape ``sizes`` with the same elements (torch's deprecated out-of-place ``resize``).

        Raises:
            TdxRuntimeError: ``sizes`` holds another number of elements.
        """
        warnings.warn("non-inplace resize is deprecated", UserWarning, stacklevel=2)
        shape = tuple(sizes[0]) if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)) else tuple(sizes)
        if math.prod(shape) != self.numel():
            raise TdxRuntimeError(f"requested resize to {'x'.join(map(str, shape))} ({math.prod(shape)} elements "
                                  f"in total), but the given tensor has a size of "
                                  f"{'x'.join(map(str, self.shape))} ({self.numel()} elements). autograd's resize "
                                  "can only change the shape of a given tensor, while preserving the number of "
                                  "elements.")
        return self.contiguous().view(shape)

    def set_(self, source=None, storage_offset=0, size=None, stride=None):
        """Make this tensor look at ``source``'s memory (a tensor or a storage), with ``size``/``stride``/
        ``storage_offset`` when given (else ``source``'s own layout); ``set_()`` makes it empty. Writes
        through either are then seen by the other, as torch's.

        Raises:
            TdxRuntimeError: another dtype or executor, a leaf that requires grad while grad mode is on,
                or (on MLX) a tensor that has views of its own.
        """
        from ..autograd.grad_mode import is_grad_enabled

        if self.requires_grad and is_grad_enabled():
            raise TdxRuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
        src = source._untyped._tensor if isinstance(source, TypedStorage) else \
            source._tensor if isinstance(source, UntypedStorage) else source
        if src is None:
            from .creation import empty

            src = empty(0, dtype=self.dtype, device=self.device)
        if not isinstance(src, Tensor):
            raise TdxTypeError(f"set_(): argument 'source' must be Tensor or Storage, not {type(source).__name__}")
        if src.dtype is not self.dtype or src._ex is not self._ex:
            raise TdxRuntimeError(f"set_(): expected a source of dtype {self.dtype} on {self.device}, got "
                                  f"{src.dtype} on {src.device}")
        storage_of = isinstance(source, StorageBase)
        if self._ex.name == "torch":
            if size is None and not storage_of:
                self._n.set_(src._n)
                return self
            shape = (src._n.untyped_storage().nbytes() // src.element_size(),) if size is None else tuple(size)
            strides = _views.contiguous_strides(shape) if stride is None else tuple(stride)
            target = src._n.untyped_storage() if storage_of else src._n
            try:
                self._n.set_(target, storage_offset, shape, strides)
            except NATIVE_ERRORS as err:
                raise self._ex.native_error(err) from None
            return self
        return _set_view(self, src, storage_offset, size, stride, storage_of)

    def resize_as(self, tensor):
        """``resize(tensor.size())``."""
        warnings.warn("non-inplace resize_as is deprecated", UserWarning, stacklevel=2)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return self.resize(tuple(tensor.shape))


attach(_StorageMethods)
