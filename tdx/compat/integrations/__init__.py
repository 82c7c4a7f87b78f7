"""What third-party libraries need to see tdx as torch, attached when (and only when) the library is imported.

Each library with an integration (``einops``, ``safetensors``) has a module here whose
``attach(library_module)`` runs right after the library's top-level package (or a watched submodule of it,
``safetensors.torch``) has executed, or at once when it is already imported. :func:`install` puts
:class:`_AfterImport` on ``sys.meta_path``: it answers no import itself, it wraps the loader of a watched
name so that ``attach`` runs after the
library's own code. Nothing here edits a library's files; each integration uses the extension point
the library offers (einops: a backend subclass) or wraps one of its public entry points by
delegation (safetensors' ``safe_open``). This package must never import a framework or a library
before that library is imported by someone else.
"""

from __future__ import annotations

import importlib
import sys

__all__ = ["install", "WATCHED"]

# library module name (a top-level package, or a submodule its integration wraps) -> the integration module whose
# ``attach`` is called with it
WATCHED = {"einops": "tdx.compat.integrations.einops", "safetensors": "tdx.compat.integrations.safetensors",
           "safetensors.torch": "tdx.compat.integrations.safetensors"}
_attached: set = set()


def _attach(name: str, module) -> None:
    if name in _attached:
        return
    _attached.add(name)
    importlib.import_module(WATCHED[name]).attach(module)


class _Loader:
    """Runs the real loader, then the library's integration."""

    def __init__(self, loader, name: str):
        self._loader, self._name = loader, name

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module) -> None:
        spec = module.__spec__
        spec.loader = self._loader  # the library sees its own loader from now on
        self._loader.exec_module(module)
        _attach(self._name, module)

    def __getattr__(self, name):
        return getattr(self._loader, name)


class _AfterImport:
    """A meta path finder that finds nothing itself and wraps the loader of the watched libraries."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in WATCHED or fullname in _attached:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _Loader(spec.loader, fullname)
                return spec
        return None


_FINDER = _AfterImport()


def install() -> None:
    """Watch for the libraries of :data:`WATCHED` (once); attach at once to those already imported."""
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)
    for name in WATCHED:
        module = sys.modules.get(name)
        if module is not None:
            _attach(name, module)
