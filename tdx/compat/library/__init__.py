"""``tdx.library`` (torch's ``torch.library``): custom operators, eagerly.

``@custom_op("ns::name", mutates_args=...)`` returns a :class:`CustomOpDef` that calls the function, is
reachable as ``tdx.ops.ns.name`` (and ``torch.ops.ns.name`` under the alias), takes per-device kernels
(``register_kernel``/``impl``: the first tensor argument's device type picks one, the function is the
default) and a custom backward (``register_autograd``: the op then runs as a ``tdx.autograd.Function`` with
that backward on every executor). ``register_fake``, ``register_torch_dispatch``, ``register_vmap`` and
``register_autocast`` record their functions and change nothing eagerly (fake tensors, dispatch modes and
vmap rules are torch-compiler machinery). :class:`Library` defines and implements ops by schema the same
way. Difference, stated: an op without ``register_autograd`` is differentiated through the tdx ops its
function calls (torch refuses to backward through it). ``tdx.ops.aten.<name>`` is tdx's function of that
name.

Compiled libraries (a torch C++ extension, torchvision's ``_C``) register their operators with torch itself:
``tdx.ops.load_library(path)`` loads one into torch, and ``tdx.ops.<ns>.<name>`` that tdx does not define
reaches torch's operator of that name, handing it the native tensors of tdx tensors on torch executors and
wrapping what it returns (tensors on MLX are refused: the compiled kernels are torch's). Must never import a
framework at import; torch is reached only once loaded (or by ``load_library``, which needs it).
"""

from __future__ import annotations

from ..._errors import (NotProvidedAttributeError, TdxNotImplementedError, TdxRuntimeError, TdxValueError,
                       UnsupportedOpError)
from ...backends import _flags

__all__ = ["custom_op", "CustomOpDef", "Library", "define", "impl", "register_fake", "impl_abstract",
           "register_kernel", "register_autograd", "register_torch_dispatch", "register_vmap", "register_autocast",
           "ops", "infer_schema"]
__tdx_partial__ = True  # opcheck, get_ctx, triton_op... refuse at use (tdx.aliasing.torch_paths)

_REGISTRY: dict = {}  # "ns::name" -> CustomOpDef
_KEYS = {"cpu": "cpu", "cuda": "cuda", "mps": "mps", "mlx": "mlx", "meta": "meta"}


def _device_key(key: str):
    """A device type from a dispatch key or device type ("CPU", "cuda"...); None for composite keys."""
    key = key.lower()
    return None if key.startswith("composite") or key in ("", "default", "autograd") else _KEYS.get(key, key)


def _split(qualname: str):
    ns, sep, name = qualname.partition("::")
    if not sep or not ns or not name:
        raise TdxValueError(f'expected a qualified op name "namespace::name", got {qualname!r}')
    return ns, name.partition(".")[0]


class CustomOpDef:
    """A custom operator: callable, with per-device kernels and an optional custom backward."""

    def __init__(self, namespace: str, name: str, fn=None, mutates_args=(), schema=None):
        self._namespace, self._name = namespace, name
        self._init_fn = fn
        self._mutates_args = mutates_args
        self._schema = schema
        self._kernels: dict = {}
        self._backward = self._setup_context = None
        self._function = None
        self._recorded: dict = {}
        self.__name__ = name
        self.__doc__ = getattr(fn, "__doc__", None)
        _REGISTRY[f"{namespace}::{name}"] = self

    def __repr__(self) -> str:
        return f"<CustomOpDef({self._namespace}::{self._name})>"

    @property
    def default(self):
        """The op's only overload (``torch.ops.ns.name.default``): the op itself."""
        return self

    def _kernel(self, args, kwargs):
        first = next((a for a in (*args, *kwargs.values()) if hasattr(a, "device") and hasattr(a, "shape")), None)
        kind = getattr(getattr(first, "device", None), "type", None)
        fn = self._kernels.get(kind, self._init_fn)
        if fn is None:
            raise UnsupportedOpError(f"{self._namespace}::{self._name} has no kernel for device type {kind!r} "
                                     "(register one with register_kernel or Library.impl)")
        return fn

    def __call__(self, *args, **kwargs):
        fn = self._kernel(args, kwargs)
        if self._backward is None:
            return fn(*args, **kwargs)
        if kwargs:
            raise TdxValueError(f"{self._namespace}::{self._name}: pass the arguments by position when the op has "
                                "a registered backward")
        return self._autograd_function(fn).apply(*args)

    def _autograd_function(self, fn):
        from ...autograd import Function

        setup, backward = self._setup_context, self._backward
        return type(f"{self._name}_function", (Function,), {
            "forward": staticmethod(lambda *args: fn(*args)),
            "setup_context": staticmethod(setup if setup is not None else (lambda ctx, inputs, output: None)),
            "backward": staticmethod(backward)})

    def register_kernel(self, device_types, fn=None):
        """Use ``fn`` for tensors on ``device_types`` (a type or a list); a decorator when ``fn`` is None."""
        def register(f):
            types = [device_types] if isinstance(device_types, str) or device_types is None else device_types
            for t in types:
                key = _device_key(t) if t is not None else None
                if key is None:
                    self._init_fn = f
                else:
                    self._kernels[key] = f
            return f
        return register if fn is None else register(fn)

    def register_autograd(self, backward, /, *, setup_context=None) -> None:
        """Differentiate the op with ``backward(ctx, *grads)`` after ``setup_context(ctx, inputs, output)``."""
        if not callable(backward):
            raise TdxValueError(f"register_autograd: backward must be callable, got {type(backward).__name__}")
        self._backward, self._setup_context = backward, setup_context

    def _record(self, what: str, fn=None):
        def register(f):
            self._recorded[what] = f
            return f
        return register if fn is None else register(fn)

    def register_fake(self, fn=None, /):
        """Record the fake (meta) implementation; eagerly unused."""
        return self._record("fake", fn)

    def register_torch_dispatch(self, torch_dispatch_class, fn=None, /):
        """Record a dispatch-mode rule; eagerly unused."""
        return self._record(f"dispatch:{torch_dispatch_class!r}", fn)

    def register_vmap(self, func=None, /):
        """Record a vmap rule; eagerly unused."""
        return self._record("vmap", func)

    def register_autocast(self, device_type, cast_inputs):
        """Record an autocast rule; eagerly unused."""
        self._recorded["autocast"] = (device_type, cast_inputs)


def custom_op(name: str, fn=None, /, *, mutates_args, device_types=None, schema=None, tags=None):
    """Make ``fn`` the custom operator ``name`` (``"ns::op"``); a decorator when ``fn`` is None."""
    ns, op = _split(name)

    def make(f):
        op_def = CustomOpDef(ns, op, None if device_types is not None else f, mutates_args, schema)
        if device_types is not None:
            op_def.register_kernel(device_types, f)
        return op_def
    return make if fn is None else make(fn)


def _op(op):
    """The operator named or given by ``op``: tdx's :class:`CustomOpDef`, or a :class:`_TorchRegistered` for an
    operator a compiled library registered with torch itself."""
    if isinstance(op, CustomOpDef):
        return op
    if isinstance(op, str):
        ns, name = _split(op)
        found = _REGISTRY.get(f"{ns}::{name}")
        if found is None:
            found = _torch_registered(op, ns, name)
        if found is None:
            raise TdxRuntimeError(f"operator {op} does not exist (define it with custom_op or Library.define)")
        return found
    raise TdxValueError(f"expected an op name or a CustomOpDef, got {type(op).__name__}")


class _TorchRegistered:
    """An operator a compiled library registered with torch itself (torchvision's ``torchvision::nms``), not with
    tdx: its kernels, fakes and autograd rules are registered with torch's dispatcher, by torch's ``torch.library``,
    as the library's own code does under torch."""

    def __init__(self, qualname: str, library):
        self._qualname, self._library = qualname, library

    def register_kernel(self, device_types, fn=None):
        return self._library.register_kernel(self._qualname, device_types, fn)

    def register_autograd(self, backward, /, *, setup_context=None) -> None:
        self._library.register_autograd(self._qualname, backward, setup_context=setup_context)

    def register_fake(self, fn=None, /):
        return self._library.register_fake(self._qualname, fn)

    def register_torch_dispatch(self, torch_dispatch_class, fn=None, /):
        return self._library.register_torch_dispatch(self._qualname, torch_dispatch_class, fn)

    def register_vmap(self, func=None, /):
        return self._library.register_vmap(self._qualname, func)

    def register_autocast(self, device_type, cast_inputs):
        self._library.register_autocast(self._qualname, device_type, cast_inputs)


def _torch_registered(op: str, ns: str, name: str):
    """A :class:`_TorchRegistered` for ``op`` (``ns::name`` split by the caller; not tdx's) where torch has such an
    operator, else None."""
    if _compiled(ns, name) is None:
        return None
    return _TorchRegistered(op, _flags.torch_loaded().library)


def register_kernel(op, device_types, func=None, /, *, lib=None):
    """``_op(op).register_kernel(device_types, func)``."""
    return _op(op).register_kernel(device_types, func)


def register_autograd(op, backward, /, *, setup_context=None, lib=None) -> None:
    """``_op(op).register_autograd(backward, setup_context=...)``."""
    _op(op).register_autograd(backward, setup_context=setup_context)


def register_fake(op, func=None, /, *, lib=None, _stacklevel=1, allow_override=True):
    """Record the fake implementation of ``op``; eagerly unused."""
    return _op(op).register_fake(func)


impl_abstract = register_fake


def register_torch_dispatch(op, torch_dispatch_class, func=None, /, *, lib=None):
    """Record a dispatch-mode rule of ``op``; eagerly unused."""
    return _op(op).register_torch_dispatch(torch_dispatch_class, func)


def register_vmap(op, func=None, /, *, lib=None):
    """Record a vmap rule of ``op``; eagerly unused."""
    return _op(op).register_vmap(func)


def register_autocast(op, device_type, cast_inputs, /, *, lib=None) -> None:
    """Record an autocast rule of ``op``; eagerly unused."""
    _op(op).register_autocast(device_type, cast_inputs)


def define(qualname: str, schema: str, *, lib=None, tags=()) -> None:
    """Declare op ``qualname`` with ``schema`` (its kernels come from ``impl``/``register_kernel``)."""
    ns, name = _split(qualname)
    if f"{ns}::{name}" not in _REGISTRY:
        CustomOpDef(ns, name, None, schema=schema)


def impl(qualname: str, types, func=None, *, lib=None):
    """Register ``func`` for ``qualname`` on ``types`` (device types or dispatch keys); a decorator when
    ``func`` is None."""
    return _op(qualname).register_kernel(types, func)


def infer_schema(prototype_function, /, *, mutates_args, op_name=None) -> str:
    """A schema string from the function's annotations (``(Tensor x, float y) -> Tensor``)."""
    import inspect

    names = {"Tensor": "Tensor", "float": "float", "int": "SymInt", "bool": "bool", "str": "str", "None": "()"}
    sig = inspect.signature(prototype_function)

    def type_name(ann):
        text = getattr(ann, "__name__", str(ann)).rpartition(".")[2]
        return names.get(text, text)

    args = ", ".join(f"{type_name(p.annotation)} {p.name}" for p in sig.parameters.values())
    out = "()" if sig.return_annotation in (None, "None") else type_name(sig.return_annotation)
    return f"{op_name or ''}({args}) -> {out}"


class Library:
    """A namespace of operators to define (``"DEF"``/``"FRAGMENT"``) or implement (``"IMPL"``)."""

    def __init__(self, ns: str, kind: str, dispatch_key: str = ""):
        if kind not in ("IMPL", "DEF", "FRAGMENT"):
            raise TdxValueError(f"Unsupported kind: {kind}")
        self.ns, self.kind, self.dispatch_key = ns, kind, dispatch_key
        self._real = None  # torch's Library of this namespace, made for a compiled library's operators

    def define(self, schema: str, alias_analysis: str = "", *, tags=()) -> str:
        """Declare the op of ``schema`` (``"name(Tensor x) -> Tensor"``) in this namespace; return its name."""
        name = schema.partition("(")[0].strip().partition(".")[0]
        if not name:
            raise TdxValueError(f"Library.define: the schema must start with the op's name, got {schema!r}")
        define(f"{self.ns}::{name}", schema)
        return name

    def impl(self, op_name, fn, dispatch_key: str = "", *, with_keyset=False, allow_override=True) -> None:
        """Use ``fn`` for ``op_name`` under ``dispatch_key`` (a device key, or composite: every device); for an
        operator a compiled library registered with torch, torch's ``Library.impl`` of the same namespace."""
        name = getattr(op_name, "__name__", op_name)
        qual = name if isinstance(name, str) and "::" in name else f"{self.ns}::{name}"
        op = _op(qual)
        if isinstance(op, _TorchRegistered):  # torch's Library takes its dispatch keys (AutocastCPU, Meta...)
            if self._real is None:
                self._real = op._library.Library(self.ns, self.kind, self.dispatch_key)
            self._real.impl(op_name, fn, dispatch_key, with_keyset=with_keyset)
            return
        op.register_kernel(dispatch_key or self.dispatch_key or None, fn)

    def _destroy(self) -> None:
        for qual in [q for q in _REGISTRY if q.startswith(self.ns + "::")]:
            del _REGISTRY[qual]


class _Overloads:
    """A tdx function seen as an ATen op packet (``tdx.ops.aten.add``): its overloads are the function."""

    def __init__(self, fn):
        self._fn = fn

    def __call__(self, *args, **kwargs):
        return self._fn(*args, **kwargs)

    def __getattr__(self, overload):
        if overload.startswith("__"):
            raise AttributeError(overload)
        return self._fn


def _aten(name: str):
    """The tdx function ``torch.ops.aten.<name>`` runs: ATen's own forms first (``aten_only``), then the
    ``tdx.*`` function, the Tensor method and the ``nn.functional`` function of that name, none refused."""
    import tdx
    from ...aliasing import refused
    from .aten_only import OPS

    fn = OPS.get(name)
    if fn is not None:
        return fn
    for home in (tdx, tdx.Tensor, tdx.nn.functional):
        fn = getattr(home, name, None)
        if fn is not None and not refused.is_refused(fn):
            return fn
    return None


class _Namespace:
    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        op = _REGISTRY.get(f"{self._name}::{name}")
        if op is not None:
            return op
        if self._name == "aten":
            fn = _aten(name)
            if fn is not None:
                return _Overloads(fn)
        compiled = _compiled(self._name, name)
        if compiled is not None:
            return compiled
        raise NotProvidedAttributeError(f"torch.ops.{self._name}.{name} is not provided by tdx (no such op is "
                                        "defined: custom_op or Library.define defines one)", name=name)


def _compiled(ns: str, name: str):
    """torch's operator ``ns::name`` registered by a compiled library, as a :class:`_CompiledOp`; None when
    torch is not loaded or has no such operator."""
    torch = _flags.torch_loaded()
    if torch is None or ns == "aten":
        return None
    try:
        return _CompiledOp(f"{ns}::{name}", getattr(getattr(torch.ops, ns), name))
    except (AttributeError, RuntimeError):
        return None


class _CompiledOp:
    """An operator a compiled library registered with torch, called with tdx tensors."""

    def __init__(self, qualname: str, op):
        self._qualname, self._op = qualname, op
        self.__name__ = qualname.partition("::")[2]

    def __repr__(self) -> str:
        return f"<compiled torch operator {self._qualname}>"

    def __getattr__(self, overload):  # op.default, op.out...
        if overload.startswith("__"):
            raise AttributeError(overload)
        return _CompiledOp(f"{self._qualname}.{overload}", getattr(self._op, overload))

    def __call__(self, *args, **kwargs):
        return _tdx_side(self._op(*_native_side(args, self._qualname), **_native_side(kwargs, self._qualname)))


def _native_side(value, qualname: str):
    """``value`` with every tdx tensor replaced by its torch tensor (lists, tuples and dicts walked)."""
    from ..._tensor.tensor import Tensor

    if isinstance(value, Tensor):
        if value._ex.name != "torch":
            raise TdxNotImplementedError(f"torch.ops.{qualname.replace('::', '.')} is a compiled torch operator: "
                                         f"it runs on torch's devices (cpu, cuda, mps), not on {value.device}; "
                                         "move the tensor with .to('cpu') first")
        return value._n
    if isinstance(value, (list, tuple)):
        return type(value)(_native_side(v, qualname) for v in value)
    if isinstance(value, dict):
        return {k: _native_side(v, qualname) for k, v in value.items()}
    return value


def _tdx_side(value):
    """``value`` with every torch tensor wrapped as a tdx tensor on its device's executor."""
    torch = _flags.torch_loaded()
    if isinstance(value, torch.Tensor):
        from ... import interop
        from ..._tensor.wrapping import wrap

        return wrap(value, interop._torch_executor(value, "a compiled operator's result"))
    if isinstance(value, (list, tuple)):
        return type(value)(_tdx_side(v) for v in value)
    return value


class _Ops:
    """``tdx.ops`` (``torch.ops``): ``tdx.ops.<namespace>.<op>``; ``load_library`` loads a compiled one."""

    def __getattr__(self, ns):
        if ns.startswith("__"):
            raise AttributeError(ns)
        return _Namespace(ns)

    @property
    def loaded_libraries(self) -> set:
        """The paths ``load_library`` loaded (torch's own set once torch is loaded)."""
        torch = _flags.torch_loaded()
        return set() if torch is None else torch.ops.loaded_libraries

    def load_library(self, path) -> None:
        """Load the compiled library at ``path`` into torch, whose operators it registers (torch's
        ``torch.ops.load_library``); they are then reachable as ``tdx.ops.<namespace>.<name>``."""
        _flags.require_torch(f"torch.ops.load_library({str(path)!r})").ops.load_library(path)


ops = _Ops()
