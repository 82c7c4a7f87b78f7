"""Module aliases: one module object reachable under two dotted names.

``tdx.nn`` is the module ``tdx.compat.nn`` (and ``tdx.nn.functional`` is
``tdx.compat.nn.functional``...): the compat package is the home of torch's namespaces, and
users import them by torch's shape. :class:`AliasFinder` is a ``sys.meta_path`` finder that
answers an import of an alias name by importing the real module and handing back that same
object, so a module is never executed twice under two names (which would give two distinct
classes and break ``isinstance``). The ``torch`` alias behind ``python -m tdx run`` uses the
same finder with ``torch`` -> ``tdx``.

This module must never import a framework, and never imports the real module before an
import statement asks for an alias of it.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys


class _AliasLoader:
    """Loads an alias by importing the real module and returning that very object.

    A plain class with the loader protocol's methods (``importlib.abc`` would import
    ``importlib.resources`` and ``tempfile``, about 1 MB, for nothing)."""

    def __init__(self, real: str):
        self.real = real
        self.real_spec = None

    def create_module(self, spec):
        module = importlib.import_module(self.real)
        self.real_spec = module.__spec__
        return module

    def exec_module(self, module) -> None:
        # the import system stamped the alias spec on the shared module: give it its own back
        module.__spec__ = self.real_spec


class AliasFinder:
    """Maps ``alias.rest`` to ``real.rest`` for each ``alias -> real`` pair it holds.

    Args:
        mapping: alias prefix -> real prefix, e.g. ``{"tdx.nn": "tdx.compat.nn"}``.
        missing: called with the alias name when the real module does not exist; it may raise
            an ImportError of its own (``python -m tdx run`` names the torch module tdx lacks).
            By default the import fails as any missing module does.
    """

    def __init__(self, mapping: dict, missing=None):
        self.mapping = dict(mapping)
        self.missing = missing

    def real_name(self, fullname: str):
        """The real module name behind alias ``fullname``, or None when it is not an alias."""
        for alias, real in self.mapping.items():
            if fullname == alias or fullname.startswith(alias + "."):
                return real + fullname[len(alias):]
        return None

    def find_spec(self, fullname, path=None, target=None):
        real = self.real_name(fullname)
        if real is None:
            return None
        module = sys.modules.get(real)
        if module is not None:
            spec = module.__spec__
        else:
            try:
                spec = importlib.util.find_spec(real)
            except ModuleNotFoundError:
                spec = None
        if spec is None:
            if self.missing is not None:
                self.missing(fullname)
            return None
        return importlib.util.spec_from_loader(fullname, _AliasLoader(real),
                                               is_package=spec.submodule_search_locations is not None)


def install(finder: AliasFinder) -> AliasFinder:
    """Put ``finder`` first on ``sys.meta_path`` (once) and return it."""
    if finder not in sys.meta_path:
        sys.meta_path.insert(0, finder)
    return finder


def put_first() -> None:
    """Move tdx's own finders (the aliases and :mod:`.torch_paths`' shaping finder), in their order, back
    ahead of finders inserted first on ``sys.meta_path`` after them.

    pytest's assertion-rewriting hook goes first and claims the ``tdx`` package (tdx ships a pytest
    plugin): ahead of the alias finder, it would execute ``tdx/compat/nn/functional.py`` a second time
    as ``tdx.nn.functional``, where its relative imports fail.
    """
    from .torch_paths import SHAPING

    ours = [f for f in sys.meta_path if isinstance(f, AliasFinder) or f is SHAPING]
    if sys.meta_path[:len(ours)] != ours:
        for finder in ours:
            sys.meta_path.remove(finder)
        sys.meta_path[:0] = ours


def uninstall(finder: AliasFinder) -> None:
    """Take ``finder`` off ``sys.meta_path`` (a no-op when it is not there)."""
    if finder in sys.meta_path:
        sys.meta_path.remove(finder)
