"""``tdx.overrides`` (torch's ``torch.overrides``): the ``__torch_function__`` helpers as tdx has them.

``has_torch_function*`` and ``handle_torch_function`` are the ``__torch_function__`` protocol tdx runs for
tensor subclasses (:mod:`tdx._tensor.subclassing`); a :class:`TorchFunctionMode` can be entered but
intercepts nothing (tdx has no function modes). The query functions answer from tdx's namespace:
``get_overridable_functions`` lists tdx's public callables per namespace, ``is_tensor_like`` is True for tdx
tensors and objects whose type defines ``__torch_function__``. Must never import a framework.
"""

from __future__ import annotations

import contextlib
import functools

import tdx

from ..nn._torch_function import (handle_torch_function, has_torch_function, has_torch_function_unary,
                                  has_torch_function_variadic)

__all__ = ["has_torch_function", "has_torch_function_unary", "has_torch_function_variadic", "handle_torch_function",
           "is_tensor_like", "is_tensor_method_or_property", "get_ignored_functions", "get_overridable_functions",
           "get_testing_overrides", "get_default_nowrap_functions", "wrap_torch_function", "enable_reentrant_dispatch",
           "resolve_name", "TorchFunctionMode", "BaseTorchFunctionMode"]
__tdx_partial__ = True  # redispatch_function refuses at use (tdx.aliasing.torch_paths)


def is_tensor_like(inp) -> bool:
    """True for a tdx tensor and for an object whose type defines ``__torch_function__``."""
    return type(inp) is tdx.Tensor or hasattr(type(inp), "__torch_function__")


def is_tensor_method_or_property(func) -> bool:
    """Whether ``func`` is a method or property of ``tdx.Tensor``."""
    name = getattr(func, "__name__", None)
    return isinstance(name, str) and getattr(tdx.Tensor, name, None) is func


def get_ignored_functions() -> set:
    """The functions torch's protocol never overrides: none are overridden in tdx, so the empty set."""
    return set()


def get_default_nowrap_functions() -> set:
    """Functions whose results ``__torch_function__`` leaves unwrapped: none in tdx."""
    return set()


def get_testing_overrides() -> dict:
    """Dummy overrides per function for testing a ``__torch_function__`` implementation: none in tdx."""
    return {}


@functools.lru_cache(maxsize=1)
def get_overridable_functions() -> dict:
    """``{namespace: [public callables]}`` for ``tdx``, ``tdx.Tensor`` and ``tdx.nn.functional``."""
    out = {}
    for ns in (tdx, tdx.Tensor, tdx.nn.functional):
        out[ns] = [getattr(ns, n) for n in sorted(dir(ns)) if not n.startswith("_")
                   and callable(getattr(ns, n, None)) and not isinstance(getattr(ns, n), type)]
    return out


def resolve_name(f):
    """The torch-style qualified name of ``f`` (``torch.add``), or None."""
    name = getattr(f, "__name__", None)
    if name is None:
        return None
    if getattr(tdx, name, None) is f:
        return f"torch.{name}"
    if getattr(tdx.Tensor, name, None) is f:
        return f"torch.Tensor.{name}"
    return None


def wrap_torch_function(dispatcher):
    """Decorator adding ``__torch_function__`` dispatch to a function; in tdx the function itself."""
    def decorate(func):
        return func
    return decorate


@contextlib.contextmanager
def enable_reentrant_dispatch():
    """Allow re-entering the dispatcher inside the block; nothing to allow in tdx."""
    yield


class TorchFunctionMode:
    """Base of a ``__torch_function__`` mode: enterable, but tdx ops never consult it."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        raise NotImplementedError

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    @classmethod
    def push(cls, *args, **kwargs):
        """An instance entered as a mode."""
        return cls(*args, **kwargs)


class BaseTorchFunctionMode(TorchFunctionMode):
    """The mode that calls each function unchanged."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))
