"""What the ``tdx`` module says it is while the torch alias is on: torch's name and torch's version.

Under ``python -m tdx run`` a program's ``import torch`` gets the ``tdx`` module object itself, and libraries
read ``torch.__name__`` (pyro asserts it is ``"torch"``) and gate features on ``torch.__version__``. While the
alias is active, :func:`install` gives the ``tdx`` module a class whose ``__name__`` and ``__version__`` answer
``"torch"`` and the torch version tdx mirrors (``torch_paths.torch_version()``) to the program and its
libraries, and tdx's own to tdx, torch and the standard library (the import system and ``inspect`` look modules
up by ``__name__``, so they must keep seeing ``"tdx"``). :func:`uninstall` restores the plain module class.
``tdx.__version__`` read by tdx, or with the alias off, is always tdx's version.

This module must never import a framework, and never change the module's ``__dict__``: the answers are
computed per read, so nothing written while the alias is on outlives it.
"""

from __future__ import annotations

import sys
import sysconfig
import types

_STDLIB = sysconfig.get_paths()["stdlib"]
_SITE = (sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"])


def _sees_torch(frame) -> bool:
    """Whether the code of FRAME (a reader of the module's identity) is the program's or a library's."""
    name = frame.f_globals.get("__name__", "")
    if not isinstance(name, str) or name.split(".", 1)[0] in ("tdx", "torch", "importlib", "pickle", "inspect"):
        return False
    file = frame.f_code.co_filename
    if file.startswith("<frozen") or (file.startswith(_STDLIB) and not file.startswith(_SITE)):
        return False
    return not _INTERNAL[0](frame.f_globals)


class _TorchIdentity:
    """Mixed into the ``tdx`` module's class while the alias is on (see the module docstring)."""

    @property
    def __name__(self):
        if _sees_torch(sys._getframe(1)):
            return "torch"
        return types.ModuleType.__getattribute__(self, "__dict__")["__name__"]

    @__name__.setter
    def __name__(self, value):
        types.ModuleType.__getattribute__(self, "__dict__")["__name__"] = value

    @property
    def __version__(self):
        if _sees_torch(sys._getframe(1)):
            from .torch_paths import torch_version

            return torch_version()
        return types.ModuleType.__getattribute__(self, "__dict__")["__version__"]


_FACING: dict = {}  # the module's own class -> its subclass with torch's identity


_INTERNAL = [lambda globals_: True]  # the alias's test of whether a module is tdx's, torch's or their dependency's


def install(internal) -> None:
    """Give the ``tdx`` module torch's identity for the program's reads.

    Args:
        internal: ``internal(globals) -> bool``, the alias's test of a reading module that must see tdx's identity.
    """
    _INTERNAL[0] = internal
    module = sys.modules["tdx"]
    cls = type(module)
    if issubclass(cls, _TorchIdentity):
        return
    if cls not in _FACING:
        _FACING[cls] = type(cls.__name__, (_TorchIdentity, cls), {"__module__": cls.__module__})
    module.__class__ = _FACING[cls]


def uninstall() -> None:
    """Give the ``tdx`` module back its own class."""
    module = sys.modules["tdx"]
    cls = type(module)
    if issubclass(cls, _TorchIdentity):
        module.__class__ = cls.__mro__[2]
