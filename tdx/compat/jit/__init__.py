"""``tdx.jit`` (torch's ``torch.jit``) with eager semantics: scripting and tracing return objects that behave as
torch's scripted and traced things do when called, and run the same Python.

``script(module)`` returns a ``RecursiveScriptModule`` and ``trace(module, inputs)`` a ``TopLevelTracedModule``:
each shares the original's parameters and buffers, is a ``tdx.jit.ScriptModule`` and an ``nn.Module``, and
prints as torch prints it. ``script(function)``/``trace(function, ...)`` return a :class:`ScriptFunction`;
``script(class)`` returns the class. ``trace`` runs the callable once on the example inputs (with
``is_tracing()`` True), as torch does. Differences, stated: a traced callable keeps its Python control flow
(torch freezes the branch taken while tracing), and a scripted module is also an instance of the original
class. ``ignore``, ``unused``, ``export``, ``interface``, ``annotate``, ``Final``, ``Attribute`` are what they
are in eager torch; ``fork`` runs the call at once and returns a completed ``tdx.futures.Future``. What only
TorchScript's compiler produces (``.graph``, ``.code``, ``save`` of a scripted module, ``tdx.jit.save``/``load``,
``export_opnames``...) refuses at use, by name, from ``tdx.aliasing.refused``. This module must never import a
framework.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import threading
import typing

from ..._errors import JITException as Error
from ..._errors import TdxTypeError
from ...aliasing import refused as _refused
from ..._tensor.control_flow import Future, fork, wait
from ..nn.modules.module import Module as _Module

__all__ = ["script", "trace", "trace_module", "ignore", "unused", "export", "is_scripting", "is_tracing",
           "annotate", "Final", "interface", "fork", "wait", "ScriptModule", "ScriptFunction",
           "RecursiveScriptModule", "TracedModule", "TopLevelTracedModule", "Attribute", "Error", "Future",
           "script_method", "script_if_tracing", "isinstance", "freeze", "optimize_for_inference",
           "run_frozen_optimizations", "fuser", "optimized_execution", "set_fusion_strategy", "enable_onednn_fusion",
           "onednn_fusion_enabled", "strict_fusion", "set_module", "contextmanager"]
__tdx_partial__ = True  # torch.jit's other names (save, load, CompilationUnit...) refuse as TorchScript

Final = typing.Final
Attribute = collections.namedtuple("Attribute", ["value", "type"])
contextmanager = contextlib.contextmanager
_builtin_isinstance = isinstance
_state = {"tracing": 0, "onednn": False, "strategy": [("STATIC", 2), ("DYNAMIC", 10)]}
class _Scripting(threading.local):
    scripting = 0  # >0 while a scripted function or module runs (is_scripting() is True); a class default: read per call


_local = _Scripting()


@contextlib.contextmanager
def _scripting(depth):
    before = _local.scripting
    _local.scripting = depth
    try:
        yield
    finally:
        _local.scripting = before


def _scripted_attribute(owner: str, name: str):
    why = _refused.SCRIPTED.get(name)
    if why is not None:
        _refused.refuse(owner, name, why, attribute=True)
    raise AttributeError(name)


class ScriptModule(_Module):
    """The class of scripted and traced modules (torch's ``torch.jit.ScriptModule``); subclassing it with
    ``@script_method`` methods gives an ordinary module."""

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            if name in _refused.SCRIPTED:
                _scripted_attribute(type(self).__name__, name)
            raise

    def save(self, f, **kwargs):  # torch's ScriptModule.save: a TorchScript archive
        _refused.refuse("ScriptModule", "save", _refused.SCRIPTED["save"])


class RecursiveScriptModule(ScriptModule):
    """The type name of what ``script(module)`` returns (torch's); it prints as torch prints it, and its
    code runs with ``is_scripting()`` True, as compiled code does."""

    def __call__(self, *args, **kwargs):
        with _scripting(_local.scripting + 1):
            return super().__call__(*args, **kwargs)

    def _get_name(self):
        return "RecursiveScriptModule"

    def extra_repr(self) -> str:
        return f"original_name={self.original_name}"


class TracedModule(ScriptModule):
    """What ``trace`` makes of a submodule (torch's); it prints as its original class."""

    def _get_name(self):
        return self.original_name

    def extra_repr(self) -> str:
        return f"original_name={self.original_name}"


class TopLevelTracedModule(TracedModule):
    """What ``trace(module, ...)`` returns (torch's type name)."""


def _wrap_module(module, kind):
    """A ``kind`` (RecursiveScriptModule/TracedModule subclass) view of ``module``: the original's methods and
    attributes, the same parameters and buffers, its submodules wrapped alike."""
    if _builtin_isinstance(module, ScriptModule):
        return module
    cls = type(kind.__name__, (kind, type(module)), {"__module__": kind.__module__,
                                                      "__qualname__": kind.__qualname__})
    out = object.__new__(cls)
    state = dict(module.__dict__)
    child = TracedModule if kind is TopLevelTracedModule else kind
    state["_modules"] = {name: (None if m is None else _wrap_module(m, child)) for name, m in module._modules.items()}
    state["original_name"] = type(module).__name__
    object.__setattr__(out, "__dict__", state)
    return out


class ScriptFunction:
    """What ``script``/``trace`` of a function returns (torch's ``torch.jit.ScriptFunction``): calling it calls
    the function."""

    def __init__(self, fn, scripted=True):
        self._fn, self._scripted = fn, scripted
        self.name = self.__name__ = getattr(fn, "__name__", type(fn).__name__)
        self.__doc__ = getattr(fn, "__doc__", None)

    def __call__(self, *args, **kwargs):
        if not self._scripted:
            return self._fn(*args, **kwargs)
        with _scripting(_local.scripting + 1):
            return self._fn(*args, **kwargs)

    def __getattr__(self, name):
        _scripted_attribute("ScriptFunction", name)

    def save(self, f, **kwargs):
        _refused.refuse("ScriptFunction", "save", _refused.SCRIPTED["save"])


ScriptFunction.__name__ = "ScriptFunction"


def script(obj, optimize=None, _frames_up=0, _rcb=None, example_inputs=None):
    """Script ``obj`` (a module, function or class): the eager equivalent of torch's scripted thing."""
    if _builtin_isinstance(obj, (ScriptModule, ScriptFunction)):
        return obj
    if _builtin_isinstance(obj, _Module):
        return _wrap_module(obj, RecursiveScriptModule)
    if _builtin_isinstance(obj, type):
        return obj
    if callable(obj):
        return ScriptFunction(obj)
    raise TdxTypeError(f"torch.jit.script: expected a module, function or class, got {type(obj).__name__}")


@contextlib.contextmanager
def _tracing():
    _state["tracing"] += 1
    try:
        yield
    finally:
        _state["tracing"] -= 1


def _as_args(example_inputs):
    return example_inputs if _builtin_isinstance(example_inputs, tuple) else (example_inputs,)


def trace(func, example_inputs=None, optimize=None, check_trace=True, check_inputs=None, check_tolerance=1e-5,
          strict=True, _force_outplace=False, _module_class=None, _compilation_unit=None,
          example_kwarg_inputs=None, _store_inputs=True):
    """Trace ``func`` on ``example_inputs``: it runs once (``is_tracing()`` True) and the result calls ``func``."""
    if _builtin_isinstance(func, (ScriptModule, ScriptFunction)):
        return func
    if _builtin_isinstance(func, _Module):
        return trace_module(func, {"forward": example_inputs}, example_inputs_is_kwarg=example_kwarg_inputs)
    if not callable(func):
        raise TdxTypeError(f"torch.jit.trace: expected a module or a function, got {type(func).__name__}")
    with _tracing():
        if example_kwarg_inputs is not None:
            func(**example_kwarg_inputs)
        else:
            func(*_as_args(example_inputs))
    return ScriptFunction(func, scripted=False)


def trace_module(mod, inputs, optimize=None, check_trace=True, check_inputs=None, check_tolerance=1e-5,
                 strict=True, _force_outplace=False, _module_class=None, _compilation_unit=None,
                 example_inputs_is_kwarg=False, _store_inputs=True):
    """Trace the methods of ``mod`` named by ``inputs`` (``{"forward": example_inputs}``)."""
    if not _builtin_isinstance(mod, _Module):
        raise TdxTypeError(f"torch.jit.trace_module: expected an nn.Module, got {type(mod).__name__}")
    if not _builtin_isinstance(inputs, dict):
        raise TdxTypeError(f"torch.jit.trace_module: inputs must be a dict of method name to example inputs, got "
                           f"{type(inputs).__name__}")
    with _tracing():
        for method, example in inputs.items():
            fn = getattr(mod, method)
            if _builtin_isinstance(example, dict) and example_inputs_is_kwarg:
                fn(**example)
            else:
                fn(*_as_args(example))
    return _wrap_module(mod, TopLevelTracedModule)


def _as_python(fn):
    """``fn`` running as Python even when called from scripted code (``is_scripting()`` False inside)."""
    @functools.wraps(fn)
    def python(*args, **kwargs):
        with _scripting(0):
            return fn(*args, **kwargs)
    python._torchscript_modifier = "ignore"
    return python


def ignore(drop=False, **kwargs):
    """Leave a function as Python (``@ignore`` or ``@ignore(drop=True)``): it runs with ``is_scripting()``
    False even when scripted code calls it."""
    if callable(drop):
        return _as_python(drop)
    return _as_python


def unused(fn):
    """Mark a method the compiler skips; eagerly, the method itself (properties too)."""
    return fn


def export(fn):
    """Mark a method as a TorchScript entry point; eagerly, the method itself."""
    fn._torchscript_modifier = "export"
    return fn


def script_method(fn):
    """A ``ScriptModule`` method to compile; eagerly, the method itself."""
    return fn


def script_if_tracing(fn):
    """Script ``fn`` on first call while tracing; eagerly, ``fn`` itself."""
    return fn


_script_if_tracing = script_if_tracing  # torch's private spelling, which libraries import


def _overload(func):
    """Declare one typed overload of a function for TorchScript; eagerly, ``func`` itself."""
    return func


_overload_method = _overload  # the same for a method


def interface(obj):
    """Declare a module or class interface; eagerly, ``obj`` itself."""
    return obj


def is_scripting() -> bool:
    """True while a scripted function or module runs (as inside torch's compiled code), else False."""
    return _local.scripting > 0


def is_tracing() -> bool:
    """True while ``trace``/``trace_module`` runs the traced callable."""
    return _state["tracing"] > 0


def annotate(the_type, the_value):
    """The type hint for TorchScript; eagerly, ``the_value``."""
    return the_value


def isinstance(obj, target_type) -> bool:  # noqa: A001 - torch's name
    """``isinstance`` that also refines ``List[int]``, ``Dict[str, Tensor]``, ``Optional[T]``, ``Tuple[...]``."""
    origin, args = typing.get_origin(target_type), typing.get_args(target_type)
    if origin is None:
        return target_type is typing.Any or _builtin_isinstance(obj, target_type)
    if origin is typing.Union:
        return any(isinstance(obj, a) for a in args)
    if origin in (list, collections.abc.Sequence):
        return _builtin_isinstance(obj, list) and all(isinstance(x, args[0]) for x in obj) if args else \
            _builtin_isinstance(obj, list)
    if origin is dict:
        return _builtin_isinstance(obj, dict) and all(isinstance(k, args[0]) and isinstance(v, args[1])
                                                      for k, v in obj.items())
    if origin is tuple:
        if not _builtin_isinstance(obj, tuple):
            return False
        if len(args) == 2 and args[1] is Ellipsis:
            return all(isinstance(x, args[0]) for x in obj)
        return len(obj) == len(args) and all(isinstance(x, a) for x, a in zip(obj, args))
    return _builtin_isinstance(obj, origin)


def freeze(mod, preserved_attrs=None, optimize_numerics=True):
    """Freeze a scripted module in eval mode; eagerly, the module itself (its outputs are the same)."""
    if not _builtin_isinstance(mod, ScriptModule):
        raise TdxTypeError("Freezing expects a ScriptModule as input. Please use torch.jit.script or "
                           "torch.jit.trace to script your 'nn.Module'.")
    if mod.training:
        raise TdxTypeError("Freezing is currently only implemented for modules in eval mode. Please call .eval() "
                           "on your module before freezing.")
    return mod


def optimize_for_inference(mod, other_methods=None):
    """Freeze and optimize a scripted module for inference; eagerly, the module in eval mode."""
    return freeze(mod.eval() if _builtin_isinstance(mod, ScriptModule) else script(mod).eval())


def run_frozen_optimizations(mod, optimize_numerics=True, preserved_methods=None) -> None:
    """TorchScript graph passes on a frozen module: nothing to do eagerly."""


@contextlib.contextmanager
def fuser(name):
    """Select TorchScript's fuser for the block; eagerly, no effect."""
    yield


@contextlib.contextmanager
def optimized_execution(should_optimize):
    """Turn TorchScript's graph optimizations on or off for the block; eagerly, no effect."""
    yield


class strict_fusion:  # noqa: N801 - torch's name
    """Assert that the block fuses under TorchScript; eagerly, no effect."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def set_fusion_strategy(strategy):
    """Record TorchScript's fusion strategy and return the previous one (eagerly, it has no effect)."""
    previous, _state["strategy"] = _state["strategy"], list(strategy)
    return previous


def enable_onednn_fusion(enabled: bool) -> None:
    """Record the oneDNN fusion switch (eagerly, it has no effect)."""
    _state["onednn"] = bool(enabled)


def onednn_fusion_enabled() -> bool:
    """The oneDNN fusion switch last set."""
    return _state["onednn"]


def set_module(obj, mod) -> None:
    """Set ``obj.__module__`` to ``mod`` (for nicer printing)."""
    if not _builtin_isinstance(mod, str):
        raise TdxTypeError("The mod argument should be a string")
    obj.__module__ = mod
