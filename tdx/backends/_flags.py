"""Shared machinery of the ``torch.backends`` mirrors (``tdx.backends.cudnn`` and friends).

A mirror answers from torch's own state when torch is present and from tdx-side state when
it is not. A value set while torch is absent is kept here and applied when torch loads:
the torch executor calls :func:`on_torch_loaded`, and any later query that finds torch
imported applies it first. Switches that steer tdx's own kernels (the SDP enables, the
MHA fast path, ``opt_einsum``) are :class:`Flag` objects with ``load=False``: reading or
writing them never imports torch, so an MLX-only process can consult them for free.
It also holds torch.backends' own top-level names (``fp32_precision`` through
:class:`BackendsModule`, ``flags``, ``set_flags``, ``disable_global_flags``, ``flags_frozen``)
for the ``tdx.backends`` package to expose.

This module must never import torch or mlx when it is imported, and must never import
torch to answer a ``load=False`` flag.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import threading
import types
import warnings
from contextlib import contextmanager

from .._errors import TdxError

__all__ = ["BackendUnavailableError", "FlagValueError", "Flag", "FP32Precision", "torch_loaded",
           "torch_module", "require_torch", "torch_backend", "defer", "pending", "on_torch_loaded",
           "mlx_core", "prepare_mlx", "installed", "check_bool", "check_precision", "flag_property", "install",
           "read_only_property", "mutable", "disable_global_flags", "flags_frozen", "set_flags", "flags",
           "BackendsModule"]

_lock = threading.RLock()
_pending: dict = {}  # key -> (description, apply(torch))
_state = {"synced": None, "import_failed": False, "installed": {}, "frozen": False, "mutable": 0}

PRECISIONS = ("ieee", "tf32", "bf16", "none")
_FROZEN_KEY = "backends.frozen"


class BackendUnavailableError(TdxError, RuntimeError, AssertionError):
    """A call needs a device or library this process does not have.

    torch raises ``AssertionError`` ("Torch not compiled with CUDA enabled") or
    ``RuntimeError`` in the same situations; this error is both.
    """


class FlagValueError(TdxError, RuntimeError):
    """A backend setting got a value torch would refuse (torch raises ``RuntimeError``)."""


def installed(name: str) -> bool:
    """Whether a top-level package can be imported, without importing it.

    Args:
        name: a top-level module name such as ``"torch"`` or ``"mlx"``.
    """
    if name in sys.modules:
        return sys.modules[name] is not None
    cache = _state["installed"]
    if name not in cache:
        try:
            cache[name] = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):
            cache[name] = False
    return cache[name]


def torch_loaded():
    """torch if it is imported and fully initialized, else None; never imports it.

    The first time it sees torch, values set while torch was absent are applied.
    """
    mod = sys.modules.get("torch")
    if mod is None:
        return None
    if mod is _state["synced"]:  # seen initialized before: the per-read path (attention reads switches per call)
        return mod
    spec = getattr(mod, "__spec__", None)
    if getattr(spec, "_initializing", False) or not hasattr(mod, "backends"):
        return None
    if _state["synced"] is not mod:
        _apply_pending(mod)
    return mod


def torch_module():
    """torch, imported on first need when it is installed; None when it cannot be imported."""
    mod = torch_loaded()
    if mod is not None or _state["import_failed"] or not installed("torch"):
        return mod
    try:
        importlib.import_module("torch")
    except ImportError:
        _state["import_failed"] = True
        return None
    return torch_loaded()


def require_torch(what: str):
    """torch, or a :class:`BackendUnavailableError` saying that ``what`` needs it."""
    mod = torch_module()
    if mod is None:
        raise BackendUnavailableError(f"{what} needs torch, which cannot be imported in this "
                                      "process; install it with: pip install 'tdx-runtime[torch]'")
    return mod


def torch_backend(torch, name: str):
    """torch's ``torch.backends.<name>`` module (some are not imported by ``import torch``)."""
    mod = _backend_modules.get((torch, name))
    if mod is None:
        mod = getattr(torch.backends, name, None)
        if not isinstance(mod, types.ModuleType):
            mod = importlib.import_module(f"torch.backends.{name}")
        _backend_modules[torch, name] = mod
    return mod


_backend_modules: dict = {}  # (torch, name) -> torch.backends.<name>, looked up once


# MLX's environment switches whose defaults differ from torch's, with torch's value. MLX reads
# MLX_ENABLE_TF32 once, at its first float32 matrix product or convolution on a CUDA GPU, and defaults to
# TF32 (10-bit mantissa) there; torch multiplies float32 matrices in full float32 unless asked
# (``allow_tf32``/``set_float32_matmul_precision``), so MLX is told the same unless the environment
# already says otherwise.
MLX_ENVIRONMENT = {"MLX_ENABLE_TF32": "0"}


def prepare_mlx() -> None:
    """Set MLX's environment switches to torch's behaviour where the user's environment left them unset."""
    for key, value in MLX_ENVIRONMENT.items():
        os.environ.setdefault(key, value)


def mlx_core():
    """``mlx.core`` when MLX is installed (importing it, after :func:`prepare_mlx`), else None."""
    if not installed("mlx"):
        return None
    prepare_mlx()
    try:
        return importlib.import_module("mlx.core")
    except ImportError:
        return None


def defer(key: str, description: str, apply) -> None:
    """Keep ``apply(torch)`` to run when torch loads; a later call with the same key replaces it.

    Args:
        key: identifies the setting ("cudnn.enabled").
        description: shown in the warning if torch refuses the value.
        apply: a callable taking the torch module.
    """
    with _lock:
        _pending.pop(key, None)
        _pending[key] = (description, apply)


def pending() -> list:
    """Descriptions of the values waiting for torch, in the order they were set."""
    with _lock:
        return [d for d, _ in _pending.values()]


def _apply_pending(torch) -> None:
    with _lock:
        if _state["synced"] is torch:
            return
        _state["synced"] = torch
        # freezing goes last, so the values kept inside flags() blocks still reach torch
        items = [v for k, v in _pending.items() if k != _FROZEN_KEY] + \
                [v for k, v in _pending.items() if k == _FROZEN_KEY]
        _pending.clear()
    for description, apply in items:
        try:
            apply(torch)
        except (RuntimeError, ValueError, TypeError, AttributeError) as e:
            warnings.warn(f"tdx: torch refused {description} set before it loaded: {e}",
                          UserWarning, stacklevel=3)


def on_torch_loaded() -> None:
    """Apply every value set while torch was absent; the torch executor calls this after importing torch."""
    torch_loaded()


class Flag:
    """One setting shared by tdx and torch.

    Args:
        key: unique name, also used for the pending value ("cudnn.enabled").
        default: the answer while torch is absent and nothing was set.
        get: ``get(torch)`` reads torch's value.
        put: ``put(torch, value)`` writes torch's value.
        check: ``check(value)`` validates a value set while torch is absent and returns the
            value to keep; it raises what torch would.
        load: whether a read may import torch. False for switches of tdx's own kernels.
        guarded: whether :func:`disable_global_flags` forbids assigning it outside ``flags()``
            (torch's ``ContextProp`` attributes).
    """

    __slots__ = ("key", "value", "get", "put", "check", "load", "guarded")

    def __init__(self, key, default, get, put, check=None, load=True, guarded=False):
        self.key, self.value, self.get, self.put, self.check, self.load = key, default, get, put, check, load
        self.guarded = guarded

    def read(self):
        """torch's value when torch is present (imported on need if ``load``), else tdx's."""
        torch = sys.modules.get("torch")
        if torch is not None and torch is _state["synced"]:  # torch_loaded's per-read path, inlined
            return self.get(torch)
        torch = torch_module() if self.load else torch_loaded()
        return self.value if torch is None else self.get(torch)

    def write(self, value) -> None:
        """Set torch's value if torch is loaded, else keep it for when torch loads."""
        torch = torch_loaded()
        if torch is not None:
            self.put(torch, value)
            return
        if self.guarded and _state["frozen"] and not _state["mutable"]:
            raise FlagValueError(f"not allowed to set {self.key.rpartition('.')[0] or 'backends'} flags after "
                                 "disable_global_flags; please use flags() context manager instead")
        if self.check is not None:
            value = self.check(value)
        self.value = value
        defer(self.key, f"{self.key} = {value!r}", lambda t: self.put(t, value))


def check_bool(api: str):
    """A validator that accepts only bools, failing as torch's setter ``api`` does."""
    def check(value):
        if not isinstance(value, bool):
            raise FlagValueError(f"{api} expects a bool, but got {type(value).__name__}")
        return value
    return check


def check_precision(value):
    """Validate an ``fp32_precision`` value as torch does."""
    if value not in PRECISIONS:
        raise FlagValueError(f"Unknown precision: {value}; expected one of {', '.join(PRECISIONS)}")
    return value


def flag_property(flag: Flag, doc: str = "") -> property:
    """A module-class property reading and writing ``flag``."""
    return property(lambda self: flag.read(), lambda self, value: flag.write(value), doc=doc or flag.key)


def read_only_property(fget, doc: str) -> property:
    """A property whose assignment fails as torch's read-only backend attributes do."""
    def refuse(self, value):
        raise FlagValueError("Assignment not supported")
    return property(lambda self: fget(), refuse, doc=doc)


def install(module_name: str, cls: type) -> None:
    """Give the module ``module_name`` the class ``cls`` so its properties work on the module."""
    sys.modules[module_name].__class__ = cls


class FP32Precision:
    """An object whose ``fp32_precision`` attribute is one precision setting (torch's ``_FP32Precision``).

    Args:
        backend: torch's backend name (``"cuda"``, ``"mkldnn"``).
        op: torch's op name (``"conv"``, ``"matmul"``, ``"rnn"``).
        get: ``get(torch)`` returns torch's object that holds the setting.
        default: the value while torch is absent.
    """

    __slots__ = ("_flag",)

    def __init__(self, backend: str, op: str, get, default: str = "none"):
        flag = Flag(f"{backend}.{op}.fp32_precision", default,
                    lambda t: get(t).fp32_precision,
                    lambda t, v: setattr(get(t), "fp32_precision", v), check_precision)
        object.__setattr__(self, "_flag", flag)

    def __getattr__(self, name):
        if name == "fp32_precision":
            return self._flag.read()
        raise AttributeError("Unknown attribute " + name)

    def __setattr__(self, name, value):
        if name != "fp32_precision":
            raise AttributeError("Unknown attribute " + name)
        self._flag.write(value)

    def __repr__(self) -> str:
        return f"<fp32_precision setting {self._flag.key!r}>"


# --- torch.backends' own top-level names (fp32_precision, flags, global-flag freezing) -----------

@contextmanager
def mutable():
    """Allow guarded flags to be set inside the block even after :func:`disable_global_flags`."""
    _state["mutable"] += 1
    try:
        yield
    finally:
        _state["mutable"] -= 1


def disable_global_flags() -> None:
    """Forbid assigning backend flag attributes outside ``flags()`` blocks (as torch's test suites do).

    Without torch, tdx enforces it for the flags it keeps; torch gets it when it loads.
    """
    _state["frozen"] = True
    torch = torch_loaded()
    if torch is not None:
        torch.backends.disable_global_flags()
    else:
        defer(_FROZEN_KEY, "disable_global_flags()", lambda t: t.backends.disable_global_flags())


def flags_frozen() -> bool:
    """Whether :func:`disable_global_flags` was called."""
    torch = torch_loaded()
    return torch.backends.flags_frozen() if torch is not None else _state["frozen"]


GENERIC_FP32_PRECISION = Flag("backends.fp32_precision", "none", lambda t: t.backends.fp32_precision,
                              lambda t, v: setattr(t.backends, "fp32_precision", v), check_precision,
                              guarded=True)


def set_flags(_fp32_precision="none"):
    """Set the generic float32 precision (unless None) and return the previous value as a 1-tuple."""
    torch = torch_module()
    if torch is not None:
        return torch.backends.set_flags(_fp32_precision)
    orig = (GENERIC_FP32_PRECISION.read(),)
    if _fp32_precision is not None:
        with mutable():
            GENERIC_FP32_PRECISION.write(_fp32_precision)
    return orig


@contextmanager
def flags(fp32_precision="none"):
    """Set the generic float32 precision for the ``with`` block and restore it after, even on error."""
    orig = set_flags(fp32_precision)
    try:
        yield
    finally:
        set_flags(*orig)


class BackendsModule(types.ModuleType):
    """A class for the ``tdx.backends`` package that makes ``fp32_precision`` a live attribute."""

    fp32_precision = flag_property(GENERIC_FP32_PRECISION, "The float32 precision of every backend and op "
                                   "that does not set its own: 'ieee', 'tf32', 'bf16' or 'none'.")
