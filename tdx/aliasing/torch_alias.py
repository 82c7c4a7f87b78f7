"""The ``torch`` import alias behind ``python -m tdx run``: a program's ``import torch...`` gets tdx.

While the alias is active, every ``import torch``, ``import torch.nn as nn``, ``from torch.utils.data
import DataLoader``... made by the *program* resolves to the tdx module of the same path
(``torch`` -> ``tdx``, ``torch.nn.functional`` -> ``tdx.nn.functional``), through the
:class:`~tdx.aliasing.alias.AliasFinder` mapping ``{"torch": "tdx"}``. A ``torch.*`` module tdx lacks
raises :class:`tdx.NotProvidedError` (an ``ImportError``) naming it: real torch is never mixed in.

Design. tdx's torch executor needs the real torch, and torch itself runs ``import torch`` in its
own modules, so ``sys.modules["torch"]`` must stay the real torch (or absent): putting tdx there
would hand tdx's executor (and torch's internals) tdx. The alias therefore decides per importing
frame: ``builtins.__import__`` (and ``importlib.import_module``) are wrapped, and a ``torch``
import is translated only when the importing module is the program's, never when it is tdx's,
torch's own, or a module first loaded while tdx or torch was importing (torch's dependencies).
``sys.modules`` is left alone; ``sys.modules["torch"]`` is never tdx.

:func:`torch_alias` is the same alias as a context manager (notebooks, test suites);
:func:`activate`/:func:`deactivate` are its two halves. This module must never import a framework.
"""

from __future__ import annotations

import builtins
import contextlib
import importlib
import sys
import threading

from .._errors import NotProvidedError
from . import inherit, torch_identity
from .alias import AliasFinder

__all__ = ["torch_alias", "activate", "deactivate", "is_active", "real_imports", "adopt", "NotProvidedError"]

_INTERNAL = {"tdx", "torch"}       # module roots whose imports always get the real modules
class _Depth(threading.local):
    depth = 0  # >0 while tdx/torch is importing something new; a class default: every import statement reads it


_tls = _Depth()
_state = {"count": 0, "import": None, "import_module": None, "prefix": None}
_lock = threading.RLock()


def _missing(alias: str):
    real = "tdx" + alias[len("torch"):]
    raise NotProvidedError(f"{alias} is not provided by tdx (there is no {real}); under the torch alias "
                           "torch.* imports resolve to tdx and real torch is never mixed in", name=alias)


FINDER = AliasFinder({"torch": "tdx"}, missing=_missing)


def _is_torch(name: str) -> bool:
    return name == "torch" or name.startswith("torch.")


def _internal(globals_) -> bool:
    """Whether the module whose globals are ``globals_`` is tdx's, torch's or one of their dependencies."""
    if _tls.depth:
        return True
    name = globals_.get("__name__") if globals_ else None
    if not isinstance(name, str):
        return False
    return name.partition(".")[0] in _INTERNAL


def _load_internal(load, name: str):
    """Run ``load()`` (an import made by tdx or torch); roots it loads first count as internal."""
    if name in sys.modules:
        return load()
    depth = _tls.depth
    before = set(sys.modules) if depth == 0 else None
    _tls.depth = depth + 1
    try:
        return load()
    finally:
        _tls.depth = depth
        if before is not None:
            _INTERNAL.update(k.partition(".")[0] for k in set(sys.modules) - before
                             if k not in ("__main__", "__mp_main__"))


def _program_import(name: str, fromlist):
    """The tdx module for the program's ``import name`` (``fromlist`` as ``__import__`` takes it)."""
    real = FINDER.real_name(name)
    original = _state["import"]
    try:
        module = original(real, None, None, fromlist or (), 0)
    except ModuleNotFoundError as err:
        if err.name and (real == err.name or real.startswith(err.name + ".")):
            _missing("torch" + err.name[len("tdx"):])
        raise
    if fromlist:
        for attr in fromlist:
            if attr != "*" and not hasattr(module, attr):
                raise NotProvidedError(f"cannot import name {attr!r} from {name!r}: {name}.{attr} is not "
                                       f"provided by tdx (there is no {real}.{attr})", name=f"{name}.{attr}")
    return module


def _from_c(fromlist) -> bool:
    """Whether the import comes from C's ``PyImport_Import`` (torch's C++, a Rust extension's ``import``).

    CPython's ``PyImport_Import`` calls ``__import__`` with a fromlist that is a *list*, empty (3.11+)
    or ``['__doc__']`` (older), where a Python import statement passes None or a tuple; it then
    returns ``sys.modules[name]`` whatever ``__import__`` returned. Such an import always ends with the
    real module, so it runs as the framework's own import.
    """
    return type(fromlist) is list and (not fromlist or fromlist == ["__doc__"])


def _import(name, globals=None, locals=None, fromlist=(), level=0):  # noqa: A002 - __import__'s signature
    if level == 0:
        if globals is None:
            globals = sys._getframe(1).f_globals  # noqa: A001
        if _internal(globals):
            if name in sys.modules:  # loaded already: nothing new to mark as internal (_load_internal's first case)
                return _state["import"](name, globals, locals, fromlist, level)
            return _load_internal(lambda: _state["import"](name, globals, locals, fromlist, level), name)
        if name == "torch" and not fromlist and fromlist.__class__ is not list:  # the program's plain
            # ``import torch`` (transformers runs it inside functions, per token): tdx's package, once loaded
            module = sys.modules.get("tdx")
            if module is not None:
                return module
        if _from_c(fromlist):  # the real module; what it loads is not marked as tdx's or torch's, since
            # C also imports the program's own modules (pickle finding a function by reference)
            return _state["import"](name, globals, locals, fromlist, level)
        if _is_torch(name):
            return _program_import(name, fromlist)
    return _state["import"](name, globals, locals, fromlist, level)


def _import_module(name, package=None):
    caller = sys._getframe(1).f_globals
    if _internal(caller):
        return _load_internal(lambda: _state["import_module"](name, package), name)
    if _is_torch(name):
        _program_import(name, ())
        return sys.modules[FINDER.real_name(name)]
    return _state["import_module"](name, package)


def activate() -> None:
    """Turn the alias on for the whole process (nested calls count; pair each with :func:`deactivate`).

    Reprs print ``torch.float32`` and ``torch.Size`` while it is active, and processes started with
    ``spawn``/``forkserver`` inherit the alias and the pin (:mod:`tdx.aliasing.inherit`).
    """
    from .. import _dtypes

    with _lock:
        if _state["count"] == 0:
            inherit.install(adopt)  # before the import hook: multiprocessing must not count as tdx's
            _state["import"], _state["import_module"] = builtins.__import__, importlib.import_module
            _state["prefix"] = _dtypes._state["prefix"]
            builtins.__import__ = _import
            importlib.import_module = _import_module
            _dtypes._state["prefix"] = "torch"
            torch_identity.install(_internal)
        _state["count"] += 1


def deactivate() -> None:
    """Undo one :func:`activate`; the last one restores the import machinery and reprs."""
    from .. import _dtypes

    with _lock:
        if _state["count"] == 0:
            return
        _state["count"] -= 1
        if _state["count"] == 0:
            builtins.__import__ = _state["import"]
            importlib.import_module = _state["import_module"]
            _dtypes._state["prefix"] = _state["prefix"]
            torch_identity.uninstall()
            inherit.uninstall()


def adopt(device, source, warned: bool) -> None:
    """In a freshly started child (:mod:`.inherit`): turn the alias on and pin ``device`` as the parent had it.

    Args:
        device: the parent's pinned device (a string), or None when it had no pin (then none is kept).
        source: where the parent's pin came from (named in the pin's warning).
        warned: whether the parent already warned about a remapped device.
    """
    from .. import backends

    if device is None:
        if backends.pinned() is not None:  # a forkserver server's pin that this child's parent does not have
            backends.unpin()
    else:
        if not source.endswith(inherit.INHERITED):
            source += inherit.INHERITED
        backends.pin(device, source)
        backends._state["pin_warned"] = warned
    if not is_active():
        activate()


@contextlib.contextmanager
def real_imports():
    """Within the block, imports made on this thread get the real modules, as tdx's own do.

    For tdx code that pickles or unpickles torch's objects by reference (``torch.storage...``):
    pickle imports the named module from the calling frame, which may be the program's.
    """
    depth = _tls.depth
    _tls.depth = depth + 1
    try:
        yield
    finally:
        _tls.depth = depth


def is_active() -> bool:
    """Whether the torch alias is on."""
    return _state["count"] > 0


@contextlib.contextmanager
def torch_alias(device=None, *, source: str = "torch_alias(device=...)"):
    """Within the block, the caller's ``import torch...`` statements get tdx.

    Args:
        device: optional device to pin every tensor to for the block (see :func:`tdx.backends.pin`).
        source: how the pin is named in the warning of the first remapped request.

    Example:
        >>> with torch_alias():
        ...     import torch
        ...     import torch.nn as nn
        >>> torch.__name__
        'tdx'
    """
    from .. import backends

    before = backends.pinned()
    if device is not None:
        backends.pin(device, source)
    activate()
    try:
        yield
    finally:
        deactivate()
        if device is not None:
            if before is None:
                backends.unpin()
            else:
                backends.pin(before[0].device, before[1])
