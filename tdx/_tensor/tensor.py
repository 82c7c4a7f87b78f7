"""The ``tdx.Tensor`` facade: one native array plus the executor that owns it.

A ``Tensor`` holds ``_n``, the native torch tensor or MLX array, and ``_ex``, the executor for its
device (``__slots__``; ``_ag`` and ``_view`` carry autograd and view state where there is some, ``_dt``
the dtype where a float32 per-op path has learnt it). Every op unwraps its operands, checks they share
an executor, calls the executor, and wraps the result in a new ``Tensor``. Operators are built by small
factories so the hot path does no dictionary work; where the executor declares a float32 kernel for the
op (MLX, :attr:`tdx.backends.base.Executor.float32_kernels`) and both operands are known float32, the
operator calls that kernel itself, reading no dtype. The op families (:mod:`.elementwise`,
:mod:`.reduction`, :mod:`.shape`...) attach their methods to this class; it knows none of them.

This module must never import a framework and never decide anything an executor
decides (promotion, kernels): it only unwraps, checks devices, calls and wraps.
"""

from __future__ import annotations

import math

from .. import _dtypes as D, backends as _backends, interop as _interop
from .._device import device as _Device
from ..backends.base import norm_dim as _norm_dim
from .._errors import NATIVE_ERRORS, TdxRuntimeError, TdxTypeError, TdxValueError, UnsupportedOpError
from . import recording as _tape
from ..autograd.tape import ACTIVE as _TAPE, MODE as _MODE, STATE as _TAPE_STATE
from . import versions as _versions, views as _views, wrapping
from .hooks import HookHandle
from .formats import check_memory_format, contiguous_format as _CONTIGUOUS
from .wrapping import (LARGE_RESULT as _LARGE_RESULT, NO_ENTRY as _NO_ENTRY, SCALARS as _SCALARS, Size,
                       foreign as _foreign, inline_typed, op_entry as _op_entry,
                       mixed_operands as _mixed, scalar as _scalar, typed_errors, unwrap_index as _unwrap_index,
                       wrap)

_new = object.__new__
_SIZES: dict = {}  # a native shape -> its Size (Tensor.shape)
_INDEXED = _views.indexed  # the layout recipe of a basic index of a fresh tensor (MLX)
_F32 = D.float32
_DType = D.dtype


def _operand(t, other, op: str):
    """``other`` as a native of ``t``'s executor or a Python scalar; NotImplemented for other types."""
    if other.__class__ is Tensor:
        return other._n if other._ex is t._ex else _foreign(op, t._ex, other)
    return other if other.__class__ in _SCALARS else _scalar(other)


def _binary(name: str, reverse: bool = False):
    # the last executor's entry (wrapping.op_entry): its function for this op, then its float32 kernel's fields;
    # one tuple, so the common case reads no executor attribute and a thread binding it never tears it
    site = [_NO_ENTRY]

    # the operand handling is inlined (not _operand): this is the per-op hot path
    def op(self, other):
        if _TAPE[0] and _MODE.enabled and _tape.wants(self, other):
            return _tape.call(op, self, other)
        ex = self._ex
        e = site[0]
        if e[0] is not ex:
            e = site[0] = _op_entry(ex, name)
        mine = self._n
        if e[2] is not None:  # float32_binary, inlined: the per-op path on MLX
            d = self._dt
            if d is None:
                d = self._dt = ex._from_native[mine.dtype]  # Executor.dtype, read in this frame
            if d is _F32:
                if other.__class__ is Tensor:
                    if other._ex is ex:
                        d = other._dt
                        if d is None:
                            d = other._dt = ex._from_native[other._n.dtype]
                        b = other._n if d is _F32 and (e[5] or mine.ndim > 1 or other._n.ndim > 1) else None
                    else:
                        b = None
                else:
                    b = other if (other.__class__ is float or other.__class__ is int) and e[4] else None
                if b is not None and not (_TAPE[0] and _TAPE_STATE.differentiating):
                    try:
                        n = e[2](b, mine, stream=e[6]) if reverse else e[2](mine, b, stream=e[6])
                    except NATIVE_ERRORS:
                        n = None
                    if n is not None:
                        if n.size > _LARGE_RESULT:
                            ex.check_result(n, name)
                        t = _new(Tensor)
                        t._n = n
                        t._ex = ex
                        t._ag = t._view = None
                        t._dt = e[3]
                        return t
        if other.__class__ is Tensor:
            if other._ex is ex:
                other = other._n
            else:
                ex, mine, other = _mixed(name, self, other)
                e = _op_entry(ex, name)  # the operands' common executor's (a host scalar moved to it)
        elif other.__class__ not in _SCALARS:
            other = _scalar(other)
            if other is NotImplemented:
                return NotImplemented
        try:
            n = e[1](other, mine) if reverse else e[1](mine, other)
        except NATIVE_ERRORS as err:
            raise ex.native_error(err) from None
        t = _new(Tensor)
        t._n = n
        t._ex = ex
        t._ag = t._view = t._dt = None  # as wrap's
        return t

    op.__name__ = f"__{'r' if reverse else ''}{name.rstrip('_')}__"
    return op


# in-place operator -> (executor op, torch's in-place method)
_INPLACE = {"add": "add_", "sub": "sub_", "mul": "mul_", "truediv": "div_",
            "floordiv": "floor_divide_", "remainder": "remainder_", "pow": "pow_",
            "and_": "bitwise_and_", "or_": "bitwise_or_", "xor": "bitwise_xor_",
            "lshift": "bitwise_left_shift_", "rshift": "bitwise_right_shift_"}


def _inplace(name: str):
    method = _INPLACE[name]
    out_of_place = _binary(name)

    def op(self, other):
        if not self._ex.mutable:  # torch's native ops check it
            _views.check_overlap(self, (other,))
        if _TAPE[0] and _MODE.enabled and _tape.wants(self, other):
            return _tape.record_inplace(self, out_of_place, (self, other), {})
        ex = self._ex
        other = _operand(self, other, method)
        if other is NotImplemented:
            return NotImplemented
        try:
            if ex.caps.mutable:
                getattr(self._n, method)(other)
                return self
            out = getattr(ex, name)(self._n, other)
        except NATIVE_ERRORS as err:
            raise ex.native_error(err) from None
        return self._rebind(out, method)

    op.__name__ = f"__i{name.rstrip('_')}__"
    return op


class Tensor:
    """A multi-dimensional array on one executor, with torch's API.

    Build tensors with the factory functions (``tdx.tensor``, ``tdx.zeros``...); calling the class is torch's
    legacy constructor (``tdx.Tensor([1, 2])``: default dtype and device).
    """

    # _dt: the tdx dtype where a per-op path has learnt it (float32_binary/float32_unary), else None; only
    # on executors whose natives never change dtype (MLX), and reset wherever _n may take another dtype
    # _w: in-place writes left before the lazy chain they build is computed (views.count_write), absent until
    # the first write; _fam: a root's live views (views.link_lazy), absent until its first view
    # __dict__: attributes libraries set on tensors (torch's tensors take them); CPython creates the dict on the
    # first such assignment, so a tensor that never gets one carries only a null pointer
    __slots__ = ("_n", "_ex", "_ag", "_view", "_dt", "_w", "_ver", "_fam", "__weakref__", "__dict__")
    __array_priority__ = 1000  # NumPy defers binary ops to Tensor

    # ``Tensor(...)`` is torch's legacy constructor (legacy.py); the facade makes its tensors with object.__new__

    # properties -----------------------------------------------------------------------
    @property
    def shape(self) -> Size:
        s = self._n.shape  # every native's shape is a tuple of ints (torch.Size, MLX's tuple): equal shapes hash alike
        size = _SIZES.get(s)  # shapes recur (every layer, every token) and a Size is immutable: one per shape
        if size is None:
            if len(_SIZES) >= 4096:
                _SIZES.clear()
            size = _SIZES[s] = Size(s)
        return size

    @property
    def dtype(self):
        d = self._dt
        if d is None:  # kept once read, as the operators keep it (what gives the tensor another dtype resets it);
            d = self._dt = self._ex._from_native[self._n.dtype]  # Executor.dtype's table, read in this frame
        return d

    @property
    def device(self):
        return self._ex.device

    @property
    def ndim(self) -> int:
        return self._n.ndim

    @property
    def native(self):
        """The wrapped native array (a ``torch.Tensor`` or an ``mlx.core.array``)."""
        return self._n

    @property
    def executor(self):
        return self._ex

    # whether the tensor lives on a device of that type
    is_cuda, is_cpu, is_mps, is_mlx, is_meta = (property(lambda self, kind=kind: self._ex.device.type == kind)
                                                for kind in ("cuda", "cpu", "mps", "mlx", "meta"))

    @property
    def layout(self):
        """``tdx.strided``: every tdx tensor is dense and strided."""
        from .formats import strided

        return strided

    # every tdx tensor is dense, unquantized and not nested (tdx.aliasing.refused says why)
    is_sparse = is_sparse_csr = is_quantized = is_nested = is_mkldnn = False

    def size(self, dim=None):
        shape = self._n.shape  # every native's shape is a sequence of ints (as ``shape`` reads it)
        if dim is None:
            return Size(shape)
        return shape[_norm_dim(dim, len(shape))]

    @inline_typed  # the metadata queries read the native's attributes, raising no framework error: no wrapper
    def dim(self) -> int:
        return self._n.ndim

    @inline_typed
    def ndimension(self) -> int:
        return self._n.ndim

    @inline_typed
    def numel(self) -> int:
        return math.prod(self._n.shape)

    nelement = numel

    @inline_typed
    def element_size(self) -> int:
        return self.dtype.itemsize

    @inline_typed
    def is_floating_point(self) -> bool:
        return self.dtype.is_floating_point

    @inline_typed
    def is_complex(self) -> bool:
        return self.dtype.is_complex

    # autograd: torch records natively; other executors use tdx's tape ------------------------
    @property
    def requires_grad(self) -> bool:
        if self._ex.caps.native_autograd:
            return self._n.requires_grad
        m = _tape.meta(self)
        return bool(m and m.requires_grad)

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        self.requires_grad_(value)

    @inline_typed
    def requires_grad_(self, requires_grad: bool = True) -> "Tensor":
        if self._ex.caps.native_autograd:
            try:
                self._n.requires_grad_(requires_grad)
            except NATIVE_ERRORS as err:
                raise self._ex.native_error(err) from None
        else:
            _tape.set_requires_grad(self, requires_grad)
        return self

    @property
    def grad(self):
        """The accumulated gradient: one Tensor object until it is replaced, as torch's ``.grad``."""
        if self._ex.caps.native_autograd:
            g = self._n.grad
            if g is None:
                return None
            m = getattr(self, "_ag", None)  # on torch executors ``_ag`` only caches the wrapper of ``.grad``
            if m is not None and m.grad is not None and m.grad._n is g:
                return m.grad
            if m is None:
                m = self._ag = _tape.Meta()
            m.grad = wrap(g, self._ex)
            return m.grad
        m = _tape.meta(self)
        return None if m is None else m.grad

    @grad.setter
    def grad(self, value) -> None:
        _tape.set_grad(self, value)

    @grad.deleter
    def grad(self) -> None:
        _tape.set_grad(self, None)

    @property
    def is_leaf(self) -> bool:
        if self._ex.caps.native_autograd:
            return self._n.is_leaf
        m = _tape.meta(self)
        return m is None or m.node is None

    @property
    def grad_fn(self):
        if self._ex.caps.native_autograd:
            return self._n.grad_fn
        m = _tape.meta(self)
        return None if m is None else m.node

    @inline_typed
    def retain_grad(self) -> None:
        if self._ex.caps.native_autograd:
            self._n.retain_grad()
            return
        m = _tape.meta(self)
        if m is None or not m.requires_grad:
            raise TdxRuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        m.retain = True

    def register_post_accumulate_grad_hook(self, hook):
        """Call ``hook(self)`` after a backward has accumulated ``self.grad`` (a leaf), as torch's.

        Returns:
            A handle whose ``remove()`` unregisters the hook.
        """
        if self._ex.caps.native_autograd:
            native = self._n.register_post_accumulate_grad_hook(lambda _native: hook(self))
            return HookHandle(native.remove)
        return HookHandle(_tape.add_post_accumulate_hook(self, hook))

    def register_hook(self, hook):
        """Call ``hook(grad)`` whenever the gradient with respect to this tensor is computed; a hook that
        returns a tensor replaces that gradient (in ``.grad`` of a leaf and in what flows further back).

        Returns:
            A handle whose ``remove()`` unregisters the hook.

        Raises:
            TdxRuntimeError: the tensor does not require grad (torch's error).
        """
        ex = self._ex
        if not ex.caps.native_autograd:
            return HookHandle(_tape.add_grad_hook(self, hook))

        def native_hook(g):
            out = hook(wrap(g, ex))
            return None if out is None else wrapping.need_tensor(out, "register_hook", "hook_result")._n

        try:
            return HookHandle(self._n.register_hook(native_hook).remove)
        except NATIVE_ERRORS as err:
            raise ex.native_error(err) from None

    @inline_typed
    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None) -> None:
        if inputs is not None:
            inputs = [inputs] if isinstance(inputs, Tensor) else list(inputs)
            if not inputs:
                raise TdxRuntimeError("'inputs' argument to backward() cannot be empty.")
        if self._ex.caps.native_autograd:
            g = None if gradient is None else gradient._n
            try:
                self._n.backward(g, retain_graph=retain_graph, create_graph=create_graph,
                                 inputs=None if inputs is None else [t._n for t in inputs])
            except NATIVE_ERRORS as err:
                raise self._ex.native_error(err) from None
            return
        self._ex.s  # noqa: B018 -- this thread's MLX work goes on the stream every thread can read
        _tape.backward(self, gradient, retain_graph, create_graph, inputs)

    @inline_typed
    def detach(self) -> "Tensor":
        ex = self._ex
        if ex.caps.native_autograd:
            return wrap(self._n.detach(), ex)
        out = wrap(self._n, ex)  # shares storage with self, as torch's detach
        if ex.mutable:
            return out
        root = _views.bare_root(self)  # the values' holder, never self's history
        lay = _views.layout_of(self)
        return _views.link(out, self, lay.shape, lay.strides, lay.offset, root=root, detached=True)

    @inline_typed
    def detach_(self) -> "Tensor":
        if self._ex.caps.native_autograd:
            self._n.detach_()
        else:
            self._ag = None
        return self

    @property
    def data(self) -> "Tensor":
        """This tensor's value without autograd history, sharing its memory but not its version counter, as
        torch's; ``t.data = value`` makes ``t`` (the same object) take ``value``'s data, shape, device and dtype."""
        ex = self._ex
        return wrap(self._n.data, ex) if ex.caps.native_autograd else _versions.counted_apart(self.detach())

    @data.setter
    def data(self, value) -> None:
        # keeps requires_grad; the gradient is left alone (Module._apply moves it). On torch executors t then
        # shares value's storage, as torch's set_data; on MLX it takes the current (immutable) array
        if not isinstance(value, Tensor):
            raise TdxTypeError(f"data must be a Tensor, not {type(value).__name__}")
        if value is self:
            return
        rg = self.requires_grad
        old, new = self._ex, value._ex
        self._dt = None  # the dtype may change
        if old.caps.native_autograd and new.caps.native_autograd and old.name == new.name:
            self._n.data = value._n  # torch's own set_data: same TensorImpl, new storage/device/dtype
            self._ex = new
            return
        grad = self.grad
        lay = self._view
        if lay is not None:  # a view no more: its root's writes stop reaching it
            (_views._views_of(lay.root) or {}).pop(id(self), None)
        elif _views.has_views(self):  # its views keep the old values, as torch's keep the old storage
            wrapping.reroot(self)
        self._ag = self._view = None
        self._ex = new
        self._n = value._n.detach() if new.caps.native_autograd else value._n
        _views.count_write(self, self._n)  # ``p.data = p.data - lr * g`` chains as a write does (uncounted: torch's)
        if rg:
            self.requires_grad_(True)
        if grad is not None and grad._ex is new and grad.dtype is self.dtype and grad.shape == self.shape:
            self.grad = grad

    # conversion -----------------------------------------------------------------------
    def item(self):
        return self._ex.item(self._n)

    def tolist(self):
        return self._ex.tolist(self._n)

    def numpy(self, *, force: bool = False):
        """A NumPy array sharing memory where the executor allows (torch's rules otherwise).

        As torch, a tensor that requires grad is refused unless ``force=True`` (which detaches).
        """
        if force:
            return self._ex.host_numpy(self._n)
        if self._ex.taped and self.requires_grad:
            raise TdxRuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() "
                                  "instead.")
        return self._ex.numpy(self._n)

    def __array__(self, dtype=None, copy=None):
        arr = self._ex.host_numpy(self._n)  # read-only where it views an MLX buffer
        if dtype is not None and arr.dtype != dtype:
            return arr.astype(dtype)
        return arr.copy() if copy else arr

    def __dlpack__(self, stream=None, *, max_version=None, dl_device=None, copy=None):
        from ..interop import export_dlpack

        return export_dlpack(self, stream, max_version=max_version, dl_device=dl_device, copy=copy)

    def __dlpack_device__(self):
        from ..interop import export_device

        return export_device(self)

    @inline_typed
    def to(self, *args, **kwargs) -> "Tensor":
        """Move and/or cast: ``to(dtype)``, ``to(device, dtype=None)``, ``to(other)``.

        A tensor that requires grad stays differentiable across executors (the gradient flows back
        to the source), as torch's ``.to()`` across devices.
        """
        # the forms that change nothing return at once: to(dtype), to(device) and to(device=, dtype=) naming this
        # tensor's own dtype and executor (transformers calls them dozens of times per token); to(dtype) first
        if len(args) == 1 and not kwargs and args[0].__class__ is _DType:
            if args[0] is (self._dt or self.dtype):  # every RMS norm casts its input to float32 and back
                return self
        elif (len(args) <= 2 and not kwargs) or (len(args) + len(kwargs) <= 2 and (
                len(kwargs) == ("device" in kwargs) + ("dtype" in kwargs) + ("non_blocking" in kwargs))):
            for a in (args if not kwargs else (*args, kwargs.get("device"), kwargs.get("dtype"))):
                c = a.__class__
                if c is _DType:
                    if a is not (self._dt or self.dtype):
                        break
                elif c is _Device or c is str:
                    if a is not self._ex.device and _backends.get(a) is not self._ex:
                        break
                elif a is not None:
                    break
            else:
                return self
        if args and isinstance(args[0], Tensor) and type(args[0]) is not Tensor:  # to(parameter): its device, dtype
            args = (args[0].device, args[0].dtype, *args[1:])
        ex, dtype, copy = _interop.parse_to(self, args, kwargs)
        out = self
        try:
            if ex is not self._ex:
                _interop.share(self, ex)
                out = _move(self, ex) if self.requires_grad and _tape.is_grad_enabled() else \
                    wrap(_interop.transfer(self._n, self._ex, ex), ex)
                copy = False
            if dtype is not None and dtype is not out.dtype:
                if _TAPE[0] and _MODE.enabled and _tape.wants(out):
                    return _tape.call(_astype, out, dtype)
                return _astype(out, dtype)
        except NATIVE_ERRORS as err:
            raise self._ex.native_error(err) from None
        return out.clone() if copy else out

    @inline_typed  # ``to`` types its errors and records the move itself (a tape node would refuse it)
    def cpu(self) -> "Tensor":
        return self.to("cpu")

    @inline_typed
    def cuda(self, device=None) -> "Tensor":
        return self.to("cuda" if device is None else f"cuda:{device}" if isinstance(device, int) else device)

    @inline_typed
    def mlx(self) -> "Tensor":
        return self.to("mlx")

    def type_as(self, other: "Tensor") -> "Tensor":
        return self.to(other.dtype)

    def _cast(self, d) -> "Tensor":
        return self if self.dtype is d else wrap(self._ex.astype(self._n, d), self._ex)

    def clone(self, *, memory_format=None) -> "Tensor":
        if memory_format is not None and memory_format is not _CONTIGUOUS:
            check_memory_format(memory_format, "clone")
        return wrap(self._ex.clone(self._n), self._ex)

    # Python protocol ------------------------------------------------------------------
    def __repr__(self) -> str:
        from .repr import format_tensor

        return format_tensor(self)

    def __len__(self) -> int:
        shape = self._ex.shape(self._n)
        if not shape:
            raise TdxTypeError("len() of a 0-d tensor")
        return shape[0]

    def __iter__(self):
        if self._n.ndim == 0:
            raise TdxTypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(len(self)))

    def __bool__(self) -> bool:
        return self.is_nonzero()  # torch's error, word for word, for no element or several

    def __float__(self) -> float:
        return float(self._scalar())

    def _scalar(self):
        """The one element as a Python number, for ``float()``/``int()``/``complex()``.

        Raises:
            TdxValueError: the tensor has another number of elements (torch's ValueError; ``item()``
                raises RuntimeError instead, as torch's).
        """
        try:
            return self.item()
        except TdxRuntimeError:
            if self.numel() != 1:
                raise TdxValueError("only one element tensors can be converted to Python scalars") from None
            raise

    def __format__(self, spec: str) -> str:
        # torch: a 0-d tensor formats as its Python number (f"{loss:.4f}"); others as object does
        if self._n.ndim == 0:
            return self.item().__format__(spec)
        return object.__format__(self, spec)

    def __int__(self) -> int:
        return int(self._scalar())

    def __complex__(self) -> complex:
        return complex(self._scalar())

    def __index__(self) -> int:
        if self.dtype.is_floating_point or self.dtype.is_complex or self.numel() != 1:
            raise TdxTypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __hash__(self) -> int:
        return id(self)

    def __getitem__(self, index) -> "Tensor":
        if _TAPE[0] and _MODE.enabled and _tape.wants(self, index):
            return _tape.call(Tensor.__getitem__, self, index)
        ex = self._ex
        cls = index.__class__
        basic = True  # ints, slices, None and Ellipsis (or a tuple of them): nothing to unwrap, and a view
        plain = True  # slices without a step and one Ellipsis only: nothing for the executor to check
        if cls is tuple:
            spans = False  # an Ellipsis seen
            for i in index:
                if i.__class__ is slice:
                    if i.step is not None:
                        plain = False
                elif i is Ellipsis:  # x[..., :d]: plain once; a second one is the executor's error to raise
                    if spans:
                        plain = False
                    spans = True
                elif i.__class__ is int or i is None:
                    plain = False
                else:
                    index = _unwrap_index(index, ex)
                    basic = plain = False
                    break
        elif cls is slice:
            plain = index.step is None
        else:
            plain = False
            if cls is not int:
                index = _unwrap_index(wrapping.list_index(index) if cls is list else index, ex)
                basic = False
        try:
            n = ex.getitem_slices(self._n, index) if plain else ex.getitem(self._n, index)
        except NATIVE_ERRORS as err:
            raise ex.native_error(err) from None
        out = _new(Tensor)  # wrap's, inlined: the per-op path
        out._n = n
        out._ex = ex
        out._ag = out._view = None
        out._dt = self._dt  # indexing keeps the dtype: a read already made serves the result too
        if not ex.mutable:
            lay = self._view
            if lay is None:  # a fresh tensor: ints and slices link their lazy layout here
                return _views.link_lazy(out, self, (_INDEXED, self._n.shape, index)) if basic else \
                    _views.link_root_index(out, self, index)
            return _views.link_index(out, self, lay, index)
        return out

    @inline_typed
    def __setitem__(self, index, value) -> None:
        if value.__class__ is Tensor and not self._ex.mutable:  # torch's native copy_ checks it
            dest = _views.written_layout(self, index)
            if dest is not None:
                _views.check_overlap(_views.Layout(_views.layout_of(self).root, *dest), (value,))
        if _TAPE[0] and _MODE.enabled and _tape.wants(self, value):
            _tape.record_inplace(self, _set_copy, (self, index, value), {})
            return
        ex = self._ex
        if value.__class__ is Tensor:
            value = value._n if value._ex is ex else _foreign("index_put_", ex, value)
        index = _unwrap_index(wrapping.list_index(index) if index.__class__ is list else index, ex)
        if ex.mutable:
            try:
                ex.setitem(self._n, index, value)
            except NATIVE_ERRORS as err:
                raise ex.native_error(err) from None
            return
        with _views.WRITE_LOCK:  # the new array is computed from the current one: no other write between
            try:
                new = ex.setitem(self._n, index, value)
            except NATIVE_ERRORS as err:
                raise ex.native_error(err) from None
            _views.assign(self, new)

    def __neg__(self):
        return wrap(self._ex.neg(self._n), self._ex)

    def __pos__(self):
        return self

    def __abs__(self):
        return wrap(self._ex.abs(self._n), self._ex)

    def __invert__(self):
        if self.dtype.is_floating_point or self.dtype.is_complex:
            raise TdxTypeError("~ (operator.invert) is only implemented on integer and Boolean-type tensors")
        return wrap(self._ex.bitwise_not(self._n), self._ex)

    @property
    def _version(self) -> int:
        """The count of in-place writes to the tensor's data, as torch's version counter: on torch executors the
        native's own; on MLX its root's, counting writes through the root and its views (:mod:`.versions`)."""
        v = getattr(self._n, "_version", None)
        return v if v is not None else _versions.version(self)

    def __deepcopy__(self, memo):
        """A new leaf with a copy of the values, ``requires_grad`` and a deep copy of ``.grad``, as torch's.

        Raises:
            TdxRuntimeError: the tensor is not a leaf (torch supports deepcopy of leaves only).
        """
        if id(self) in memo:
            return memo[id(self)]
        if not self.is_leaf:
            raise TdxRuntimeError("Only Tensors created explicitly by the user (graph leaves) support the deepcopy "
                                  "protocol at the moment.")
        import copy

        new = wrap(self._ex.clone(self._n.detach() if self._ex.caps.native_autograd else self._n), self._ex)
        memo[id(self)] = new
        if self.requires_grad:
            new.requires_grad_(True)
        g = self.grad
        if g is not None:
            new.grad = copy.deepcopy(g, memo)
        if self.__dict__:  # the attributes set on the tensor, deep-copied as torch's deepcopy does
            new.__dict__.update(copy.deepcopy(self.__dict__, memo))
        return new


def _astype(t, dtype):
    """``t`` cast to ``dtype`` (the op ``Tensor.to(dtype)`` records on the tape)."""
    return wrap(t._ex.astype(t._n, dtype), t._ex)


def _move(t, ex):
    """``t`` (which requires grad) on executor ``ex``, with a gradient path back to ``t``.

    Raises:
        UnsupportedOpError: a move between two tape executors, which no backward can cross yet.
    """
    from ..autograd import transfer as _transfer
    from ..interop import transfer

    src = t._ex
    if src.caps.native_autograd and ex.caps.native_autograd:
        return wrap(transfer(t._n, src, ex), ex)  # torch's own .to() records it
    if src.caps.native_autograd:
        return _transfer.to_tape(t, ex)
    if ex.caps.native_autograd:
        return _transfer.to_native(t, ex)
    raise UnsupportedOpError(f"to(): moving a tensor that requires grad from {src.device} to {ex.device} is not "
                             "differentiable; detach() it first")


def _set_copy(t, index, value):
    """Out-of-place ``t[index] = value`` (what an in-place write records on the tape)."""
    out = t.clone()
    out[index] = value
    return out


for _name in ("add", "sub", "mul", "truediv", "floordiv", "pow", "matmul", "and_", "or_", "xor",
              "lshift", "rshift"):
    _dunder = _name.rstrip("_")
    setattr(Tensor, f"__{_dunder}__", _binary(_name))
    setattr(Tensor, f"__r{_dunder}__", _binary(_name, reverse=True))
    if _name in _INPLACE:
        setattr(Tensor, f"__i{_dunder}__", _inplace(_name))
Tensor.__mod__ = _binary("remainder")
Tensor.__rmod__ = _binary("remainder", reverse=True)
Tensor.__imod__ = _inplace("remainder")
for _name in ("eq", "ne", "lt", "le", "gt", "ge"):
    setattr(Tensor, f"__{_name}__", _binary(_name))


def _caster(d, name):
    def method(self, memory_format=None) -> "Tensor":
        if memory_format is not None:
            from .formats import check_conversion_format

            check_conversion_format(memory_format, name, self.ndim)
        return self._cast(d)

    method.__name__ = name
    method.__doc__ = f"This tensor as {d!r} (itself when it already is), as ``torch.Tensor.{name}``."
    return method


for _name, _d in {"float": D.float32, "double": D.float64, "half": D.float16, "bfloat16": D.bfloat16,
                  "long": D.int64, "int": D.int32, "short": D.int16, "bool": D.bool_, "byte": D.uint8,
                  "char": D.int8}.items():
    setattr(Tensor, _name, _caster(_d, _name))

_PLAIN = {"__new__", "__repr__", "__hash__", "__len__", "__iter__", "__reduce_ex__", "__deepcopy__", "__array__",
          "__dlpack__", "__dlpack_device__", "__pos__"}
for _name, _fn in list(vars(Tensor).items()):
    if getattr(_fn, "_typed", False):
        continue
    if callable(_fn) and not isinstance(_fn, type) and _name not in _PLAIN and not _name.startswith("_") \
            or _name in ("__neg__", "__abs__", "__invert__", "__bool__",
                         "__index__", "__float__", "__int__"):
        setattr(Tensor, _name, typed_errors(_fn))
wrapping.Tensor = Tensor
