"""How a call becomes a ``Tensor`` result: wrapping natives, typed errors, operand checks.

``wrap`` puts a native array and its executor in a new :class:`Tensor` without running its
constructor; ``typed_errors`` turns a framework's exception into the TdxError of the same
builtin kind; ``foreign``/``operand``/``scalar`` turn an op's other argument into something the
executor takes (or torch's mixed-device error); ``shape_args`` normalizes torch's ``f(2, 3)`` and
``f((2, 3))`` forms once, so executors see one signature. ``exporter`` builds the ``torch.*``
functions of each op family; ``attach`` puts a family's methods on :class:`Tensor`.

This module must never import a framework and never the op families: it is what they share.
:data:`Tensor` is bound by :mod:`.tensor` once the class exists.
"""

from __future__ import annotations

import functools
import math
import operator
import warnings

from .. import _dtypes as D
from . import versions as _versions, views as _views
from .._errors import (NATIVE_ERRORS, TdxRuntimeError, TdxTypeError, UnsupportedOpError, mismatch,
                      translate)
from . import recording as _tape
from ..autograd.tape import ACTIVE as _TAPE, MODE as _MODE, STATE as _TAPE_STATE

SCALARS = frozenset((int, float, bool, complex))

_new = object.__new__
_F32 = D.float32

Tensor = None  # set by tdx._tensor once the class exists


_tuple_getitem, _tuple_add, _tuple_mul = tuple.__getitem__, tuple.__add__, tuple.__mul__


class Size(tuple):
    """A tensor's shape: a tuple of ints, as ``torch.Size``."""

    __slots__ = ()

    def numel(self) -> int:
        return math.prod(self)

    def __repr__(self) -> str:
        return f"{D._state['prefix']}.Size({list(self)})"

    # slices, sums and repeats of a Size are Sizes, as torch's (``shape[-1:].numel()``, ``shape[:1] + shape[2:]``)
    def __getitem__(self, index):
        if index.__class__ is slice:
            return Size(_tuple_getitem(self, index))
        return _tuple_getitem(self, index)

    def __add__(self, other):
        if not isinstance(other, tuple):
            from .._errors import TdxTypeError

            raise TdxTypeError(f"can only concatenate tuple (not {type(other).__name__}) to "
                               f"{D._state['prefix']}.Size")
        return Size(_tuple_add(self, other))

    def __radd__(self, other):
        if not isinstance(other, tuple):
            return NotImplemented
        return Size(_tuple_add(other, self))

    def __mul__(self, n):
        return Size(_tuple_mul(self, n))

    __rmul__ = __mul__


def wrap_grad(native, ex, requires_grad: bool):
    """``wrap``, then mark the tensor as requiring grad on executors that record on tdx's tape."""
    t = _new(Tensor)  # wrap's, inlined: every factory's path
    t._n = native
    t._ex = ex
    t._ag = t._view = t._dt = None
    if requires_grad and not ex.caps.native_autograd:
        t.requires_grad_()
    return t


def wrap(native, ex):
    """A new Tensor around ``native`` owned by executor ``ex``."""
    t = _new(Tensor)
    t._n = native
    t._ex = ex
    t._ag = t._view = t._dt = None  # set, not absent: reading an absent slot raises inside getattr (slow)
    return t


def reroot(t):
    """Move ``t``'s live views (``t`` a root) onto a new hidden root holding ``t``'s memory, which ``t``
    itself no longer shows (its next value is another array); returns that root."""
    base = wrap(t._n, t._ex)
    m = getattr(t, "_ag", None)
    if m is not None:
        base._ag = m
    views = getattr(t, "_fam", None)
    if views is not None:
        del t._fam
        views.pop(id(t), None)
        for ref in list(views.values()):
            v = ref()
            if v is not None:
                v._view.root = base
        base._fam = views
    return base


def wrap_typed(native, ex, dtype):
    """:func:`wrap`, with ``native``'s tdx dtype known (kept on the tensor, as the float32 path does)."""
    t = _new(Tensor)
    t._n = native
    t._ex = ex
    t._ag = t._view = None
    t._dt = dtype
    return t


NO_KERNEL = (None,) * 6
# a float32 per-op result with more elements than this (a broadcast of two operands, a product) is checked by
# its executor before anything evaluates it (Executor.check_result): a lazy framework crashes where the
# allocation fails; the executors' own methods check theirs
LARGE_RESULT = 1 << 22


def float32_entry(ex, name: str) -> tuple:
    """(``ex``, kernel, result dtype, takes scalars, takes two vectors, stream) of ``ex``'s float32 kernel
    for op ``name`` (:attr:`tdx.backends.base.Executor.float32_kernels`), or (``ex``, None, ...) where it has
    none. A per-op call site keeps the last one it used, so its common case reads no executor attribute."""
    entry = ex.float32_kernels.get(name) if ex.float32_kernels is not None else None
    return (ex, None, None, None, None, None) if entry is None else (ex, *entry, ex.s)


NO_ENTRY = (None,) * 7


def op_entry(ex, name: str) -> tuple:
    """(``ex``, its function for op ``name``, then :func:`float32_entry`'s kernel, result dtype, takes scalars,
    takes two vectors and stream): what an operator's call site keeps of the last executor it saw."""
    return (ex, getattr(ex, name), *float32_entry(ex, name)[1:])


def _float32_kernel(seen: list, name: str, t):
    """The call site's :func:`float32_entry` for ``t``'s executor where it has a kernel for ``name``, ``t`` is
    float32 (read once, then kept on ``t``) and no backward replay is running; else None."""
    ex = t._ex
    k = seen[0]
    if k[0] is not ex:
        k = seen[0] = float32_entry(ex, name)
    if k[1] is None:
        return None
    d = t._dt
    if d is None:
        d = t._dt = ex._from_native[t._n.dtype]  # Executor.dtype, read in this frame
    return k if d is _F32 and not (_TAPE[0] and _TAPE_STATE.differentiating) else None


def float32_binary(seen: list, name: str, t, other, reverse: bool = False):
    """``name(t, other)`` (``name(other, t)`` when ``reverse``) by ``t``'s executor's float32 kernel, or None.

    ``seen`` is the call site's one-item list of its last :func:`float32_entry`. The kernel runs when
    ``other`` is a float32 tensor of the same executor (or a Python int or float, for kernels that take
    one), ``t`` is float32 and no backward replay is running; each operand's dtype is read once and kept
    on it (``_dt``), so a chain of ops reads none. None means the op's own method must run (it then
    raises torch's error, if any). The operators (``Tensor.__add__``...) and ``tdx.<op>`` functions
    inline this.
    """
    k = _float32_kernel(seen, name, t)
    if k is None:
        return None
    ex = t._ex
    cls = other.__class__
    if cls is Tensor:
        if other._ex is not ex:
            return None
        d = other._dt
        if d is None:
            d = other._dt = ex._from_native[other._n.dtype]
        if d is not _F32 or not (k[4] or t._n.ndim > 1 or other._n.ndim > 1):
            return None
        b = other._n
    elif (cls is float or cls is int) and k[3]:
        b = other
    else:
        return None
    try:
        n = k[1](b, t._n, stream=k[5]) if reverse else k[1](t._n, b, stream=k[5])
    except NATIVE_ERRORS:
        return None
    if n.size > LARGE_RESULT:
        ex.check_result(n, name)
    return wrap_typed(n, ex, k[2])


def float32_unary(seen: list, name: str, t):
    """``name(t)`` by the executor's float32 kernel where ``t`` is float32 (:func:`float32_binary`), or None."""
    k = _float32_kernel(seen, name, t)
    if k is None:
        return None
    try:
        return wrap_typed(k[1](t._n, stream=k[5]), t._ex, k[2])
    except NATIVE_ERRORS:
        return None


# the in-place ops whose tensor value torch reads as a number (a 0-d tensor), so a value sharing self's memory is
# no overlap torch refuses: ``y.masked_fill_(mask, y[0, 0])``
_VALUE_AS_NUMBER = frozenset(("fill_", "masked_fill_", "index_fill_"))


def typed_errors(fn):
    """Wrap a method so framework exceptions surface as TdxErrors of the same builtin kind."""

    inplace = fn.__name__.endswith("_") and not fn.__name__.endswith("__")
    overlap = inplace and fn.__name__ not in _VALUE_AS_NUMBER

    @functools.wraps(fn)
    def method(self, *args, **kwargs):
        if overlap and (args or kwargs) and not getattr(getattr(self, "_ex", None), "mutable", True):
            _views.check_overlap(self, (*args, *kwargs.values()))  # torch's native in-place ops check it
        if _TAPE[0] and _MODE.enabled and _tape.wants(self, *args, **kwargs):
            if inplace:  # recorded as: clone, apply, rebind
                return _tape.record_inplace(self, _applied_to_clone(method), (self, *args), kwargs)
            return _tape.call(method, self, *args, **kwargs)
        try:
            return fn(self, *args, **kwargs)
        except NATIVE_ERRORS as err:
            retry = numpy_keywords(kwargs) if kwargs and isinstance(err, TypeError) else None
            if retry is not None:
                return method(self, *args, **retry)
            if kwargs and isinstance(err, TypeError) and "out" in kwargs:  # torch's out= on any op
                kwargs = dict(kwargs)
                out = kwargs.pop("out")
                result = method(self, *args, **kwargs)
                return result if out is None else write_out(out, result, fn.__name__)
            ex = getattr(self, "_ex", None)
            raise (ex.native_error(err) if ex is not None else translate(err)) from None

    return method


def _c10_name(d) -> str:
    """c10's ScalarType name of dtype ``d`` (``Float``), as torch's out= errors print it."""
    return D._TORCH_SCALAR_NAMES.get(d.name, d.name)


def write_out(out, result, op: str):
    """Copy ``result`` (a tensor or a tuple of them) into ``out`` (the same structure), resizing each as torch's
    ``out=`` does; returns ``out``.

    Raises:
        TdxTypeError: ``out`` is not a tensor (or a tuple of as many tensors as the result has).
        TdxRuntimeError: the result requires grad (out= records no gradient, as torch refuses it), or its dtype
            cannot be cast to ``out``'s.
    """
    if isinstance(result, tuple):
        if not isinstance(out, (tuple, list)) or len(out) != len(result):
            raise TdxTypeError(f"{op}(): out must be a tuple of {len(result)} Tensors, got {type(out).__name__}")
        for o, r in zip(out, result):
            write_out(o, r, op)
        return out
    if not isinstance(out, Tensor):
        raise TdxTypeError(f"{op}(): argument 'out' must be Tensor, not {type(out).__name__}")
    if result.requires_grad:
        raise TdxRuntimeError(f"{op}(): functions with out=... arguments don't support automatic differentiation, "
                              "but one of the arguments requires grad.")
    if not D.can_cast(result.dtype, out.dtype):
        raise TdxRuntimeError(f"result type {_c10_name(result.dtype)} can't be cast to the desired output type "
                              f"{_c10_name(out.dtype)}")
    if out.shape != result.shape:
        if out.numel():
            warnings.warn(f"An output with one or more elements was resized since it had shape {list(out.shape)}, "
                          f"which does not match the required output shape {list(result.shape)}. This behavior is "
                          "deprecated, and in a future PyTorch release outputs will not be resized unless they have "
                          "zero elements. You can explicitly reuse an out tensor t by resizing it, inplace, to zero "
                          "elements with t.resize_(0).", UserWarning, stacklevel=3)
        out.resize_(result.shape)
    out.copy_(result)
    return out


_NUMPY_NAMES = {"axis": "dim", "keepdims": "keepdim"}


def numpy_keywords(kwargs: dict):
    """``kwargs`` with NumPy's names (``axis``, ``keepdims``) given torch's (``dim``, ``keepdim``), as torch's
    argument parser accepts them; None when none is used or both names of one argument are given.

    The typed wrappers try it only after a call failed with a TypeError, so the common path pays nothing.
    """
    if "axis" not in kwargs and "keepdims" not in kwargs:
        return None
    out = {}
    for key, value in kwargs.items():
        key = _NUMPY_NAMES.get(key, key)
        if key in out:
            return None
        out[key] = value
    return out


def native_inplace(native: str, checked):
    """The in-place method ``native`` (``"mul_"``), short-circuited where nothing needs tdx's checks.

    - On an executor whose arrays are mutable and that records its own autograd (torch), an op
      whose operands (by position or keyword) are numbers, strings, None or Tensors of the same
      executor is the native array's own ``native`` method, called once with the operands' natives
      (torch then applies its cast, broadcast, overlap and autograd rules).
    - On an executor whose arrays are immutable (MLX), a write that is not recorded into a tensor
      that is no view and has none is the out-of-place op's result, taken as the tensor's array when
      it has the tensor's dtype and shape (nothing can overlap, and no view needs the new value).

    Anything else (a recorded write, a view, a result to cast, a Tensor of another device, a
    container) is ``checked``: the full path with tdx's own checks.
    """
    name = native[:-1]

    @functools.wraps(checked)
    def method(self, *args, **kwargs):
        ex = self._ex
        if ex.mutable:
            if ex.taped:
                return checked(self, *args, **kwargs)
            kernel = getattr(self._n, native, None)
            if kernel is None:
                return checked(self, *args, **kwargs)
            natives = []  # a Tensor of ex as its native; another executor's Tensor or a container: checked
            for a in args:
                c = a.__class__
                if c is Tensor:
                    if a._ex is not ex:
                        return checked(self, *args, **kwargs)
                    a = a._n
                elif c is list or c is tuple or c is dict:
                    return checked(self, *args, **kwargs)
                natives.append(a)
            if kwargs:  # the same check, written out: one loop over both (a joined tuple, then a zip) costs 0.6 us
                nkw = {}
                for k, v in kwargs.items():
                    c = v.__class__
                    if c is Tensor:
                        if v._ex is not ex:
                            return checked(self, *args, **kwargs)
                        v = v._n
                    elif c is list or c is tuple or c is dict:
                        return checked(self, *args, **kwargs)
                    nkw[k] = v
                kwargs = nkw
            try:
                kernel(*natives, **kwargs)
            except NATIVE_ERRORS as err:
                raise ex.native_error(err) from None
            return self
        else:
            with _views.WRITE_LOCK:  # the new array is computed from the current one: no other write between
                if self._view is None and not _views.has_views(self) and not (
                        _TAPE[0] and _MODE.enabled and _tape.wants(self, *args, **kwargs)):
                    mine = self._n
                    out = getattr(self, name)(*args, **kwargs)._n
                    if out.dtype == mine.dtype and out.shape == mine.shape:
                        if _views.WRITE_WATCHERS:
                            _views.note_write(self)
                        _views.count_write(self, out)
                        _versions.bump(self)
                        self._n = out
                        return self
                return checked(self, *args, **kwargs)

    method._typed = True
    return method


def _applied_to_clone(inplace_method):
    """The out-of-place form of an in-place method: apply it to a clone and return the clone."""

    def out_of_place(t, *args, **kwargs):
        c = t.clone()
        inplace_method(c, *args, **kwargs)
        return c

    out_of_place.__name__ = inplace_method.__name__.rstrip("_")
    return out_of_place


def scalar(value):
    """A Python scalar for a NumPy scalar, or NotImplemented for anything else."""
    if type(value).__module__ == "numpy" and getattr(value, "ndim", None) == 0:
        return value.item()
    return NotImplemented


def _reshaped(out, src, must_view: bool):
    """Link ``out`` (src reshaped) as a view when torch's stride rule allows, else it is a copy."""
    lay = getattr(src, "_view", None)
    if lay is None:  # a reshape of a fresh tensor is always a view, with contiguous strides
        return _views.link_contiguous(out, src)
    shape = tuple(out._n.shape)
    if lay.__class__ is _views._LazyLayout and lay.is_contiguous() and math.prod(shape) == math.prod(
            lay.root._n.shape):  # all of a fresh tensor in its order (``x.transpose(1, 2)`` over a dim of 1):
        return _views.link_lazy(out, lay.root, (_views.whole, shape))  # a reshape of that tensor itself
    strides = _views.view_strides(lay.shape, lay.strides, shape)
    if strides is None:
        if must_view:
            raise TdxRuntimeError("view size is not compatible with input tensor's size and stride (at least one "
                                  "dimension spans across two contiguous subspaces). Use .reshape(...) instead.")
        return out
    return _views.link(out, src, shape, strides, lay.offset, lay.root)


def _permuted(out, src, order):
    """Link ``out`` as ``src`` with its dims in ``order`` (checked by the executor, maybe negative)."""
    lay = src._view
    if lay is None:  # a fresh tensor: its contiguous layout, permuted (cached per shape and order)
        return _views.link_permuted_root(out, src, order)
    n = max(len(lay.shape), 1)
    order = [d % n for d in order]
    shape, strides = lay.shape, lay.strides
    return _views.link(out, src, tuple([shape[i] for i in order]), tuple([strides[i] for i in order]), lay.offset,
                       lay.root)


def foreign(op: str, ex, t):
    """``t`` (a Tensor on another executor than ``ex``) as a native of ``ex``, moved there when the
    config's ``auto_transfer`` allows it, or when ``t`` is a 0-d tensor on the CPU: torch takes such a
    tensor as a scalar operand of an op on any device (``torch.isclose(x_cuda, torch.tensor(0.))``).

    Raises:
        DeviceMismatchError: ``auto_transfer`` is off (the default), as torch raises for mixed devices.
        UnsupportedOpError: ``t`` requires grad, grad mode is on, and the move would not be
            differentiable (only moves between torch devices are).
    """
    from .. import config

    cpu_scalar = t.ndim == 0 and t._ex.device.type == "cpu"
    if not cpu_scalar and not config.current()["auto_transfer"]:
        raise mismatch(op, ex.device, t._ex.device)
    from ..autograd.grad_mode import is_grad_enabled

    if t.requires_grad and is_grad_enabled() and not (ex.name == t._ex.name == "torch"):
        raise UnsupportedOpError(f"{op}: auto_transfer would move a tensor that requires grad from {t._ex.device} "
                                 f"to {ex.device}, which is not differentiable; detach() it or move it first")
    return t.to(ex.device)._n


def mixed_operands(op: str, t, other) -> tuple:
    """``(executor, t's native, other's native)`` for a binary op of tensors on two executors: a 0-d
    CPU ``t`` goes to ``other``'s executor (torch's scalar operand, as in ``torch.tensor(0.7) * x_cuda``),
    else ``other`` comes to ``t``'s as :func:`foreign` allows."""
    if t.ndim == 0 and t._ex.device.type == "cpu" and not (other.ndim == 0 and other._ex.device.type == "cpu"):
        return other._ex, foreign(op, other._ex, t), other._n
    return t._ex, t._n, foreign(op, t._ex, other)


def operand(t, other, op: str):
    """``other`` as a native array of ``t``'s executor or a Python scalar.

    Raises:
        DeviceMismatchError: ``other`` lives on another executor.
        TdxTypeError: ``other`` is neither a Tensor nor a scalar.
    """
    if other.__class__ is Tensor:
        return other._n if other._ex is t._ex else foreign(op, t._ex, other)
    if other.__class__ in SCALARS or other is None:
        return other
    value = scalar(other)
    if value is NotImplemented:
        raise TdxTypeError(f"{op}(): argument 'other' must be a Tensor or a number, not {type(other).__name__}")
    return value


def shape_args(args, op: str) -> tuple:
    """``f(2, 3)``, ``f((2, 3))`` and ``f([2, 3])`` all as the tuple ``(2, 3)``."""
    if len(args) == 1 and not isinstance(args[0], int):
        args = args[0]
    if args.__class__ is tuple or args.__class__ is Size:  # ints already (view(shape), reshape(x.shape)): as is
        for s in args:
            if s.__class__ is not int:
                break
        else:
            return tuple(args)
    if isinstance(args, (str, bytes)):
        raise TdxTypeError(f"{op}(): argument 'size' must be tuple of ints, not {type(args).__name__}")
    try:  # ints and what stands for one (NumPy ints, 0-d integer tensors); a float or a str is refused
        shape = tuple(s if isinstance(s, int) else operator.index(s) for s in args)
    except TypeError:
        raise TdxTypeError(f"{op}(): expected a sequence of ints, got {args!r}") from None
    return shape


def inline_typed(fn):
    """Mark a method that translates framework errors itself (the hot path skips the wrapper)."""
    fn._typed = True
    return fn


def attach(cls) -> None:
    """Put the methods (and properties) of op family ``cls`` on :class:`Tensor`."""
    for name, member in vars(cls).items():
        if name not in ("__module__", "__qualname__", "__doc__", "__slots__", "__dict__", "__weakref__"):
            setattr(Tensor, name, member)


def need_tensor(x, op: str, arg: str = "input"):
    """``x`` itself when it is a Tensor, else torch's TypeError for argument ``arg`` of ``op``."""
    if not isinstance(x, Tensor):
        raise TdxTypeError(f"{op}(): argument '{arg}' must be Tensor, not {type(x).__name__}")
    return x


def first_tensor(args):
    """The first Tensor among ``args`` (looking into lists and tuples), or None."""
    for a in args:
        if isinstance(a, Tensor):
            return a
        if isinstance(a, (list, tuple)):
            found = first_tensor(a)
            if found is not None:
                return found
    return None


def typed_function(fn, record=False):
    """Framework exceptions from ``fn`` surface as TdxErrors (translated by the first tensor's executor).

    With ``record``, a call on tensors that require grad on a taped executor is one tape node
    (for functions whose result is a deterministic function of their tensor arguments).
    """
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if record and _TAPE[0] and _MODE.enabled and _tape.wants(*args, **kwargs):
            return _tape.call(wrapper, *args, **kwargs)
        try:
            return fn(*args, **kwargs)
        except NATIVE_ERRORS as err:
            retry = numpy_keywords(kwargs) if kwargs and isinstance(err, TypeError) else None
            if retry is not None:
                return wrapper(*args, **retry)
            if kwargs and isinstance(err, TypeError) and "out" in kwargs:  # torch's out= on any op
                kwargs = dict(kwargs)
                out = kwargs.pop("out")
                result = wrapper(*args, **kwargs)
                return result if out is None else write_out(out, result, getattr(fn, "__name__", "op"))
            ex = getattr(first_tensor(args), "_ex", None)
            raise (ex.native_error(err) if ex is not None else translate(err)) from None

    return wrapper


def exporter(names: list):
    """A decorator that adds a function's name to ``names`` (a module's ``__all__``) and gives it
    typed errors; ``@export(record=True)`` also makes each call one tape node."""
    def export(fn=None, *, record=False):
        if fn is None:
            return functools.partial(export, record=record)
        names.append(fn.__name__)
        return typed_function(fn, record)

    return export


def tensor_arg(t, x, op: str, arg: str):
    """``x`` as a native array of ``t``'s executor; it must be a Tensor.

    Raises:
        TdxTypeError: ``x`` is not a Tensor.
        DeviceMismatchError: ``x`` lives on another executor.
    """
    native = operand(t, x, op)
    if native is None or native is x:
        raise TdxTypeError(f"{op}(): argument '{arg}' must be Tensor, not {type(x).__name__}")
    return native


def int_arg(x, op: str, arg: str) -> int:
    """A Python int from an int or a one-element integer tensor.

    Raises:
        TdxTypeError: ``x`` is neither.
    """
    if isinstance(x, int) and not isinstance(x, bool):
        return x
    try:
        return x.__index__()
    except (AttributeError, TypeError):
        raise TdxTypeError(f"{op}(): argument '{arg}' must be int, not {type(x).__name__}") from None


def dims_arg(dims, op: str) -> tuple:
    """``f(0, 1)``, ``f((0, 1))``, ``f([0, 1])`` and ``f(0)`` as the tuple ``(0, 1)`` / ``(0,)``."""
    if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
        dims = dims[0]
    return tuple(int_arg(d, op, "dims") for d in dims)


def list_index(index: list):
    """A list index as torch reads it: a tuple (with torch's deprecation warning) where the list is shorter than 32
    and holds a tensor, a sequence (a list, a tuple, a NumPy array...), a slice, None or Ellipsis (``x[[0, None]]``
    is ``x[0, None]``); else the list, an index tensor (``x[[0, 2]]``). Only a whole index is read so: a list
    inside a tuple is an index tensor."""
    if len(index) < 32:
        for i in index:
            c = i.__class__
            if c is slice or i is None or i is Ellipsis or isinstance(i, (Tensor, list, tuple, range)) or \
                    c.__name__ == "ndarray":
                warnings.warn("Using a non-tuple sequence for multidimensional indexing is deprecated and will be "
                              "changed in pytorch 2.9; use x[tuple(seq)] instead of x[seq]. In pytorch 2.9 this will "
                              "be interpreted as tensor index, x[torch.tensor(seq)], which will result either in an "
                              "error or a different result", UserWarning, stacklevel=3)
                return tuple(index)
    return index


def dtype_or_none(dtype):
    """``dtype`` as a tdx dtype, or None."""
    return None if dtype is None else D.as_dtype(dtype)


def unwrap_index(index, ex):
    """``index`` with its tensors unwrapped to ``ex``'s natives, as torch reads it: a uint8 tensor is a
    mask (deprecated, with torch's warning) and an integer of another class (``np.int64``) an int."""
    if index.__class__ is Tensor:
        if index.dtype is D.uint8:
            warnings.warn("indexing with dtype torch.uint8 is now deprecated, please use a dtype torch.bool "
                          "instead.", UserWarning, stacklevel=3)
            index = index.bool()
        if index._ex is ex:
            return index._n
        if index._ex.device.type == "cpu" and not index.dtype.is_floating_point:
            return index.to(ex.device)._n  # torch indexes a tensor on any device with CPU index tensors
        return foreign("index", ex, index)
    if index.__class__ is tuple:
        return tuple(unwrap_index(i, ex) for i in index)
    if index.__class__ is list and any(i.__class__ is Tensor for i in index):
        return [unwrap_index(i, ex) for i in index]
    cls = index.__class__
    if cls is not int and cls is not bool and cls is not slice and hasattr(cls, "__index__") \
            and not getattr(index, "ndim", 0) and not isinstance(index, bool):
        return cls.__index__(index)
    return index
