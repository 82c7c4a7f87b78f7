"""Tensor subclasses as torch has them: the ``__torch_function__`` protocol, ``as_subclass``, ``_make_subclass``.

torch hands every Tensor method and torch function called on a tensor subclass (or on an object whose type
defines ``__torch_function__``) to that type's ``__torch_function__(func, types, args, kwargs)``; the default,
``Tensor.__torch_function__``, runs ``func`` with the protocol off for subclasses
(``DisableTorchFunctionSubclass``) and turns tensor results into the subclass. tdx does the same with no
cost for plain tensors:

- when a subclass of ``Tensor`` is defined (``__init_subclass__``), each Tensor method, operator and property
  it does not define itself becomes, on that subclass only, a wrapper asking the arguments'
  ``__torch_function__`` (a property read hands it ``Tensor.<name>.__get__``, an assignment ``__set__``, as
  torch's); a subclass whose ``__torch_function__`` is ``torch._C._disabled_torch_function_impl`` (as torch's and
  tdx's ``Parameter``) gets none. A class naming ``Tensor`` as a base gets ``_SubclassBase`` in its place, whose
  instances' ``__class__`` reads ``Tensor`` to tdx's own code (as ``Parameter``'s does) so the facade's paths,
  which test ``x.__class__ is Tensor``, take them; the program, ``type(x)`` and ``isinstance`` see the subclass;
- the first such class turns the same dispatch on for the functions of ``tdx``, ``tdx.nn.functional``,
  ``tdx.linalg``, ``tdx.fft`` and ``tdx.special`` (module attributes replaced by dispatching wrappers, which
  ``__torch_function__`` receives as ``func``) and for Tensor's own methods, so a plain tensor's method given a
  subclass argument (``plain.add(sub)``, ``plain[sub]``) asks it as torch's does (its binary operators and
  comparisons need not: Python tries the subclass operand's reflected one first). A program that defines no
  such class never pays for it; one that does pays a frame and a type test per argument on plain calls;
- ``as_subclass`` and ``_make_subclass`` give an instance of the subclass sharing the tensor's data (the
  first attached to its autograd graph, the second detached), as torch's.

Not covered, as far as torch's Python-level protocol goes: a reference to a function taken before the first
subclass was defined and kept elsewhere than a module's global name (a default argument, a dict, a closure)
stays undispatched, as do the functions a namespace module first imported after that binds itself. A subclass
instance's ``__class__`` reads ``Tensor`` to tdx's own modules only (its true class to the program and
libraries); fast paths that must let a subclass's override see the call (``nn.Linear``'s) test ``type(x)``.
``__torch_dispatch__`` needs torch's C++ dispatcher: a subclass defining it is refused by name when an instance
would be made.

This module must never import a framework, and must never add more than a type test per argument to an op
of a plain tensor (none before the first subclass is defined).
"""

from __future__ import annotations

import functools
import sys
import threading
import types as _types

from .._errors import TdxTypeError, UnsupportedOpError
from .tensor import Tensor

__all__ = ["DisableTorchFunctionSubclass", "DisableTorchFunction", "disabled_torch_function_impl",
           "overloaded_arguments", "torch_function_dispatch"]

class _State(threading.local):
    """This thread's protocol level (``level``): 0 on, 1 off for Tensor subclasses, 2 off for everything. A class
    default, so a thread that never changed it reads 0 as a plain attribute (every dispatching call asks)."""

    level = 0


_STATE = _State()
_set_class = object.__dict__["__class__"].__set__


def _level() -> int:
    return _STATE.level


class DisableTorchFunctionSubclass:
    """``torch.DisableTorchFunctionSubclass``: inside the block no tensor subclass's ``__torch_function__`` is
    called (objects of other types that define one still are), in this thread."""

    _LEVEL = 1

    def __enter__(self):
        self._saved = _level()
        _STATE.level = max(self._saved, self._LEVEL)
        return None

    def __exit__(self, *exc) -> None:
        _STATE.level = self._saved


class DisableTorchFunction(DisableTorchFunctionSubclass):
    """``torch.DisableTorchFunction``: no ``__torch_function__`` is called inside the block, in this thread."""

    _LEVEL = 2


def disabled_torch_function_impl(func, types, args=(), kwargs=None):
    """``torch._C._disabled_torch_function_impl``: ``func(*args, **kwargs)`` with the protocol off for subclasses.
    A subclass setting it as its ``__torch_function__`` opts out of the protocol (its results are plain)."""
    with DisableTorchFunctionSubclass():
        return func(*args, **(kwargs or {}))


def _opted_out(cls) -> bool:
    return getattr(cls.__torch_function__, "__func__", cls.__torch_function__) is disabled_torch_function_impl


def _foreign_or_none(t) -> bool:
    """Whether type ``t`` takes no part in tdx's protocol: it has no ``__torch_function__``, or has real
    torch's own (a torch tensor handed to a tdx function is data to convert, not an override: its
    ``__torch_function__`` would call the tdx function again)."""
    handler = getattr(t, "__torch_function__", None)
    if handler is None:
        return True
    home = getattr(handler, "__module__", None) or ""
    return home == "torch" or home.startswith("torch.")


def overloaded_arguments(args, kwargs):
    """The arguments whose type overrides ``__torch_function__``, subclasses before their bases, else in order."""
    level = _level()
    found, kinds = [], []

    def visit(a):
        t = type(a)
        if t is Tensor or t in kinds:
            return
        if isinstance(a, Tensor):
            if level or _opted_out(t):
                return
        elif level > 1 or _foreign_or_none(t):
            return
        at = next((i for i, u in enumerate(kinds) if issubclass(t, u)), len(kinds))
        kinds.insert(at, t)
        found.insert(at, a)

    for group in (args, kwargs.values()):
        for a in group:
            if a.__class__ in (list, tuple):
                for b in a:
                    visit(b)
            else:
                visit(a)
    return found, kinds


def torch_function_dispatch(public, impl, args, kwargs, name=None):
    """``impl(*args, **kwargs)``, or the answer of the first ``__torch_function__`` among the arguments' types
    that does not return ``NotImplemented`` (called with ``public``, the function's public object).

    Raises:
        TdxTypeError: every override returned ``NotImplemented`` (torch's message, naming ``name``).
    """
    found, kinds = overloaded_arguments(args, kwargs)
    if not found:
        return impl(*args, **kwargs)
    for a in found:
        out = type(a).__torch_function__(public, tuple(kinds), args, kwargs)
        if out is not NotImplemented:
            return out
    handlers = "".join(f"\n  - {'tensor subclass' if issubclass(k, Tensor) else 'argument of type'} {k}"
                       for k in kinds)
    raise TdxTypeError(f"Multiple dispatch failed for '{name or _qualified(public)}'; all __torch_function__ "
                       f"handlers returned NotImplemented:\n{handlers}\n\nFor more information, try re-running "
                       f"with TORCH_LOGS=not_implemented")


def _qualified(func) -> str:
    return f"torch.{getattr(func, '__name__', func)}"


def _convert(ret, cls):
    """torch's default conversion of a result: tensors become ``cls``, inside tuples and lists too."""
    if isinstance(ret, Tensor) and not isinstance(ret, cls):
        return ret.as_subclass(cls)
    if isinstance(ret, (tuple, list)):
        items = [_convert(r, cls) for r in ret]
        return type(ret)(*items) if hasattr(ret, "_fields") else type(ret)(items)
    return ret


# the getters torch's default leaves unconverted (torch.overrides.get_default_nowrap_functions), filled below
_NOWRAP: set = set()


def __torch_function__(cls, func, types, args=(), kwargs=None):
    """``Tensor.__torch_function__``, the default: run ``func`` with the protocol off for subclasses and give
    tensor results the class ``cls``; ``NotImplemented`` when a type in ``types`` is no base of ``cls``."""
    if not all(issubclass(cls, t) for t in types):
        return NotImplemented
    with DisableTorchFunctionSubclass():
        ret = func(*args, **(kwargs or {}))
        return ret if func in _NOWRAP else _convert(ret, cls)


# ------------------------------------------------------------------------------------------- the subclass

def _refuse_dispatch(cls) -> None:
    if cls.__dict__.get("__torch_dispatch__") is None and getattr(cls, "__torch_dispatch__", None) in (
            None, Tensor.__dict__.get("__torch_dispatch__")):
        return
    from ..aliasing import refused

    raise UnsupportedOpError(refused.message(cls.__name__, "__torch_dispatch__", (
        "__torch_dispatch__ subclasses", "tdx runs each op on its executor in Python and has no ATen dispatcher "
        "to hand the subclass torch's aten ops", "override __torch_function__, which tdx calls for every torch "
        "function and Tensor method")))


def as_subclass(self, cls):
    """``Tensor.as_subclass(cls)``: a ``cls`` instance sharing this tensor's data and attached to its autograd
    graph (torch's alias).

    Raises:
        TdxTypeError: ``cls`` is not a subclass of Tensor.
        UnsupportedOpError: ``cls`` defines ``__torch_dispatch__``.
    """
    if not (isinstance(cls, type) and issubclass(cls, Tensor)):
        raise TdxTypeError(f"as_subclass(): argument 'cls' must be a subclass of Tensor, not "
                           f"{getattr(cls, '__name__', type(cls).__name__)}")
    _refuse_dispatch(cls)
    with DisableTorchFunction():
        out = Tensor.view(self, tuple(self.shape))
    _set_class(out, cls)
    return out


def _make_subclass(cls, data, require_grad=False, dispatch_sizes_strides_policy=None, dispatch_device=False,
                   dispatch_layout=False, _extra_dispatch_keys=None):
    """``Tensor._make_subclass(cls, data, require_grad=False)``: a ``cls`` instance sharing ``data``'s values,
    detached from its graph, with ``requires_grad`` set as asked (how torch's ``Parameter`` is made).

    Raises:
        TdxTypeError: ``cls`` is not a subclass of Tensor, or ``data`` is not a tensor.
        UnsupportedOpError: ``cls`` defines ``__torch_dispatch__``.
    """
    if not (isinstance(cls, type) and issubclass(cls, Tensor)):
        raise TdxTypeError(f"_make_subclass(): argument 'cls' must be a subclass of Tensor, not "
                           f"{getattr(cls, '__name__', type(cls).__name__)}")
    if not isinstance(data, Tensor):
        raise TdxTypeError(f"_make_subclass(): argument 'data' must be Tensor, not {type(data).__name__}")
    _refuse_dispatch(cls)
    with DisableTorchFunction():
        out = Tensor.detach(data)
        if require_grad:
            out.requires_grad_(True)
    _set_class(out, cls)
    return out


def _make_wrapper_subclass(cls, *args, **kwargs):
    """``Tensor._make_wrapper_subclass``: the constructor of ``__torch_dispatch__`` wrapper subclasses, refused."""
    _refuse_dispatch(cls)
    from ..aliasing import refused

    raise UnsupportedOpError(refused.message("Tensor", "_make_wrapper_subclass", (
        "__torch_dispatch__ wrapper subclasses", "a wrapper subclass holds no data of its own and answers every "
        "aten op from __torch_dispatch__, which needs torch's dispatcher", "subclass Tensor with __torch_function__ "
        "and make instances with as_subclass or Tensor._make_subclass")))


# operators torch's Tensor dispatches; a reflected one called because its operand is a subclass reaches
# __torch_function__ as torch's forward operator on the operands in their written order
_OPERATORS = ("__add__ __sub__ __mul__ __truediv__ __floordiv__ __mod__ __pow__ __matmul__ __and__ __or__ __xor__ "
              "__lshift__ __rshift__ __iadd__ __isub__ __imul__ __itruediv__ __ifloordiv__ __imod__ __ipow__ "
              "__imatmul__ __iand__ __ior__ __ixor__ __ilshift__ __irshift__ __neg__ __pos__ __abs__ __invert__ "
              "__eq__ __ne__ __lt__ __le__ __gt__ __ge__ __getitem__ __setitem__ __len__ __iter__ __bool__ "
              "__float__ __int__ __index__ __complex__ __contains__ __reversed__ __rsub__ __rpow__ __rtruediv__ "
              "__rfloordiv__ __rmod__ __rmatmul__ __radd__ __rmul__ __rand__ __ror__ __rxor__ __rlshift__ "
              "__rrshift__").split()
# the method torch names as ``func`` for an operator: (operand order kept) -> method; a reflected operator with
# a tensor on the left is the forward one on the operands in their written order, with a number its own name
_PUBLIC = {"__add__": "add", "__radd__": "add", "__sub__": "sub", "__mul__": "mul", "__rmul__": "mul",
           "__truediv__": "div", "__pow__": "pow", "__mod__": "remainder", "__matmul__": "matmul", "__neg__": "neg",
           "__abs__": "abs", "__lt__": "lt", "__le__": "le", "__gt__": "gt", "__ge__": "ge"}
_FORWARD = {"__radd__": "add", "__rmul__": "mul", "__rsub__": "sub", "__rtruediv__": "div",
            "__rfloordiv__": "__floordiv__", "__rmod__": "remainder", "__rpow__": "pow", "__rmatmul__": "matmul",
            "__rand__": "__and__", "__ror__": "__or__", "__rxor__": "__xor__", "__rlshift__": "__lshift__",
            "__rrshift__": "__rshift__"}
_REFLECTED_NAME = {"__rtruediv__": "__rdiv__"}  # torch's name of ``number / tensor``
_BINARY = frozenset("__add__ __sub__ __mul__ __truediv__ __floordiv__ __mod__ __pow__ __matmul__ __and__ __or__ "
                    "__xor__ __lshift__ __rshift__ __radd__ __rsub__ __rmul__ __rtruediv__ __rfloordiv__ __rmod__ "
                    "__rpow__ __rmatmul__ __rand__ __ror__ __rxor__ __rlshift__ __rrshift__".split())
# methods that are no op on the data, or that the protocol itself uses
_NOT_DISPATCHED = frozenset("as_subclass _make_subclass _make_wrapper_subclass __torch_function__ "
                            "__init_subclass__ __reduce_ex__ __deepcopy__ __repr__ __format__ __hash__ __dir__ "
                            "__array__ __dlpack__ __dlpack_device__ __sizeof__".split())


def _method(name: str, base):
    public = getattr(Tensor, _PUBLIC.get(name, _REFLECTED_NAME.get(name, name)), base)
    forward = _FORWARD.get(name)
    forward_public = getattr(Tensor, forward) if forward and hasattr(Tensor, forward) else None
    label = f"torch.Tensor.{public.__name__}"

    @functools.wraps(base)
    def method(self, *args, **kwargs):
        if _level():
            return base(self, *args, **kwargs)
        if forward_public is not None and args and isinstance(args[0], Tensor) and not kwargs:
            # Python chose the subclass's reflected operator: torch's forward one, operands as written
            return torch_function_dispatch(forward_public, forward_public, (args[0], self), {},
                                           f"torch.Tensor.{forward_public.__name__}")
        if name not in _BINARY:
            return torch_function_dispatch(public, base, (self, *args), kwargs, label)
        try:
            return torch_function_dispatch(public, base, (self, *args), kwargs, label)
        except TypeError:  # torch's binary operators: a TypeError lets Python try the other operand
            return NotImplemented

    method.__tdx_dispatch__ = True
    return method


# tdx's own properties, which torch's Tensor has not (no torch function to hand an override)
_OWN_PROPERTIES = frozenset({"native", "executor", "is_mlx"})


def _property(name: str, prop: property) -> property:
    """``prop`` on a subclass: a read hands ``__torch_function__`` torch's ``Tensor.<name>.__get__`` and the
    instance, an assignment ``Tensor.<name>.__set__`` with the instance and the value."""
    fget, fset = prop.fget, prop.fset
    getter, setter = prop.__get__, prop.__set__
    label = f"torch.Tensor.{name}.__get__"

    def get(self):
        if _level():
            return fget(self)
        return torch_function_dispatch(getter, fget, (self,), {}, label)

    def put(self, value):
        if _level():
            return fset(self, value)
        return torch_function_dispatch(setter, fset, (self, value), {}, f"torch.Tensor.{name}.__set__")

    return property(get, put if fset is not None else None, prop.fdel, prop.__doc__)


def _dispatched_properties():
    found = {}
    for klass in reversed(Tensor.__mro__[:-1]):
        for name, value in vars(klass).items():
            if type(value) is property and name not in _OWN_PROPERTIES and name != "__class__":
                found[name] = value
    return found


def _dispatched_names():
    names = [n for n in _OPERATORS if hasattr(Tensor, n)]
    for name, value in vars(Tensor).items():
        if name.startswith("__") or name in _NOT_DISPATCHED or not isinstance(value, _types.FunctionType):
            continue
        names.append(name)
    for klass in Tensor.__mro__[1:]:  # the op families' mixins
        for name, value in vars(klass).items():
            if not name.startswith("__") and name not in _NOT_DISPATCHED and isinstance(value, _types.FunctionType):
                names.append(name)
    return sorted(set(names))


def _deepcopy(self, memo):
    """``copy.deepcopy`` of a subclass instance: Tensor's copy, of the instance's class (where torch asks the
    subclass's ``new_empty`` for it and raises when that gives a plain tensor)."""
    new = Tensor.__deepcopy__(self, memo)
    if type(new) is not type(self):
        _set_class(new, type(self))
    return new


_FACADE_MODULES: dict = {}  # module name -> whether it is tdx's own code


def reported_class(self):
    """``x.__class__`` of a tensor subclass instance (and of ``Parameter``'s): ``Tensor`` to tdx's own code, whose
    per-op paths test ``x.__class__ is Tensor`` to take any tensor at once, and the instance's true class to
    every other reader (a library's ``self.__class__(data)``, ``p.__class__.__name__``), as torch's."""
    name = sys._getframe(1).f_globals.get("__name__") or ""
    own = _FACADE_MODULES.get(name)
    if own is None:
        own = _FACADE_MODULES[name] = name == "tdx" or name.startswith("tdx.")
    return Tensor if own else type(self)


class _SubclassBase(Tensor):
    """Put between a tensor subclass and ``Tensor``: its instances' ``__class__`` reads ``Tensor`` to tdx's own
    code (as ``Parameter``'s does), so the facade's paths, which test ``x.__class__ is Tensor``, take them as
    tensors; everyone else, ``type()`` and ``isinstance`` see the subclass."""

    __slots__ = ()
    __class__ = property(reported_class, _set_class)


_ACTIVE = [False]
_ACTIVATING = threading.RLock()
_ACTIVATING_NOW = [False]
# argument types that never override: plain tensors, numbers, strings, None and the subclasses that opt out
# (``Parameter``, ``Buffer``), each added when it is defined
_PLAIN = {Tensor, int, float, bool, complex, str, type(None)}
_ORIGINAL: dict = {}  # Tensor's own methods, by name, once its plain methods dispatch (_dispatch_plain_methods)


def __init_subclass__(cls, **kwargs):
    """Make ``cls``'s methods and operators ask ``__torch_function__`` (unless it opts out), and turn the
    dispatch of the namespaces' functions on with the first such class."""
    super(Tensor, cls).__init_subclass__(**kwargs)
    if Tensor in cls.__bases__ and "__class__" not in cls.__dict__:
        cls.__bases__ = tuple(_SubclassBase if b is Tensor else b for b in cls.__bases__)
    if _opted_out(cls):
        _PLAIN.add(cls)
        return
    own = set()
    for klass in cls.__mro__[:cls.__mro__.index(Tensor)]:
        own.update(klass.__dict__)
    if "__deepcopy__" not in own:
        cls.__deepcopy__ = _deepcopy
    for name in _dispatched_names():
        if name not in own:
            setattr(cls, name, _method(name, _ORIGINAL.get(name) or getattr(Tensor, name)))
    for name, prop in _dispatched_properties().items():
        if name not in own:
            setattr(cls, name, _property(name, prop))
    if not _ACTIVE[0]:
        with _ACTIVATING:  # one thread wraps the namespaces; the switch shows once they are wrapped
            if not _ACTIVE[0] and not _ACTIVATING_NOW[0]:  # (a subclass made while wrapping: nothing more)
                _ACTIVATING_NOW[0] = True
                try:
                    _dispatch_namespaces()
                    _dispatch_plain_methods()
                finally:
                    _ACTIVATING_NOW[0] = False
                _ACTIVE[0] = True


_NAMESPACES = ("tdx", "tdx.compat.nn.functional", "tdx.compat.linalg", "tdx.compat.fft", "tdx.compat.special")
# tdx functions that take no tensor to dispatch on, or that set process state
_NOT_OPS = frozenset("manual_seed seed initial_seed set_default_dtype get_default_dtype set_default_device "
                     "get_default_device set_printoptions is_grad_enabled set_grad_enabled compile load save "
                     "use_deterministic_algorithms are_deterministic_algorithms_enabled set_num_threads "
                     "get_num_threads set_rng_state get_rng_state promote_types can_cast result_type_of "
                     "is_tensor is_storage typename".split())


def _plain_call(args, kwargs) -> bool:
    """Whether no argument can override (plain tensors, numbers, strings, None only): the wrapper's fast path,
    so a subclass defined somewhere in the process adds one type test per argument to a plain call."""
    for a in args:
        if type(a) not in _PLAIN:
            return False
    for a in kwargs.values():
        if type(a) not in _PLAIN:
            return False
    return True


def _namespace_function(public_name: str, impl):
    label = "torch" + public_name[len("tdx"):].replace(".compat", "", 1)
    @functools.wraps(impl)
    def function(*args, **kwargs):
        if _plain_call(args, kwargs) or _level() > 1:
            return impl(*args, **kwargs)
        return torch_function_dispatch(function, impl, args, kwargs, label)

    function.__tdx_dispatch__ = True
    function.__tdx_redispatch__ = lambda other: _namespace_function(public_name, other)
    return function


# where the tensor functions of those namespaces are defined (process settings, symbolic ints, control flow and
# autocast's switches are no tensor functions)
_OP_HOMES = ("tdx", "tdx._tensor.", "tdx.compat.nn._", "tdx.attention", "tdx.compat.linalg", "tdx.compat.fft",
             "tdx.compat.special")
_NOT_OP_HOMES = ("tdx._tensor.runtime", "tdx._tensor.symbolic", "tdx._tensor.control_flow", "tdx._tensor.formats",
                 "tdx.compat.nn._torch_function")


def _is_op(name: str, value) -> bool:
    home = getattr(value, "__module__", None) or ""
    return (isinstance(value, _types.FunctionType) and not name.startswith("_") and name not in _NOT_OPS
            and (home == "tdx" or home.startswith(_OP_HOMES[1:])) and not home.startswith(_NOT_OP_HOMES)
            and not getattr(value, "__tdx_dispatch__", False) and not getattr(value, "__tdx_refused__", None))


def _dispatch_namespaces() -> None:
    """Replace the tensor functions of torch's namespaces by dispatching wrappers (once, for the process), in
    every loaded module that binds them, so each stays one object whichever module it is read from."""
    import importlib

    wrapped = {}
    for path in _NAMESPACES:
        module = sys.modules.get(path) or importlib.import_module(path)
        for name, value in list(vars(module).items()):
            if _is_op(name, value) and id(value) not in wrapped:
                wrapped[id(value)] = (value, _namespace_function(f"{path}.{name}", value))
    # every module's global names bound to them: tdx's own and the program's and libraries' (``from torch
    # import add`` before the first subclass), so the name dispatches as torch's would
    for module in list(sys.modules.values()):
        names = getattr(module, "__dict__", None) if isinstance(module, _types.ModuleType) else None
        if type(names) is not dict:
            continue
        for name, value in list(names.items()):
            pair = wrapped.get(id(value))
            if pair is not None and pair[0] is value:
                names[name] = pair[1]


# operators Python hands a subclass operand itself (its reflected or swapped comparison is tried first), so a
# plain tensor's need not ask
_REFLECTED_BY_PYTHON = _BINARY | frozenset("__eq__ __ne__ __lt__ __le__ __gt__ __ge__".split())


def _plain_method(name: str, base, public=None):
    if public is None:
        public = getattr(Tensor, _PUBLIC.get(name, name), base)
    label = f"torch.Tensor.{name}"

    @functools.wraps(base)
    def method(self, *args, **kwargs):
        for a in args:
            if type(a) not in _PLAIN:
                break
        else:
            if not kwargs or _plain_call((), kwargs):
                return base(self, *args, **kwargs)
        if _level() > 1:
            return base(self, *args, **kwargs)
        return torch_function_dispatch(public, base, (self, *args), kwargs, label)

    method.__tdx_dispatch__ = True
    method.__tdx_redispatch__ = lambda other: _plain_method(name, other, public)
    return method


def _dispatch_plain_methods() -> None:
    """Make Tensor's own methods ask the ``__torch_function__`` of their arguments (``plain.add(sub)``, as
    torch's): once for the process, with the first subclass that takes part; the originals stay in
    ``_ORIGINAL`` for the subclasses defined later."""
    for name in _dispatched_names():
        if name in _REFLECTED_BY_PYTHON or name in _ORIGINAL:
            continue
        base = getattr(Tensor, name)
        _ORIGINAL[name] = base
        setattr(Tensor, name, _plain_method(name, base))


def __rdiv__(self, other):
    """``number / tensor`` (torch's ``Tensor.__rdiv__``, the name its ``__torch_function__`` receives)."""
    return Tensor.__rtruediv__(self, other)


Tensor.__rdiv__ = __rdiv__
Tensor.__torch_function__ = classmethod(__torch_function__)
Tensor.__init_subclass__ = classmethod(__init_subclass__)
Tensor.as_subclass = as_subclass
Tensor._make_subclass = staticmethod(_make_subclass)
Tensor._make_wrapper_subclass = staticmethod(_make_wrapper_subclass)
_NOWRAP.update(vars(Tensor)[name].__get__ for name in ("grad", "_base", "_grad") if type(vars(Tensor).get(name)) is property)
