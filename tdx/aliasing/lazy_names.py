"""Names a package offers without importing their modules: the module-level ``__getattr__``/``__dir__`` pair.

A package states, per submodule, the names it re-exports from it (``{".conv": ("Conv1d", ...)}``); :func:`attach`
returns the two functions the package binds as ``__getattr__`` and ``__dir__``. The first lookup of such a name
imports its submodule and keeps the object in the package's globals, so every later lookup is a plain dict hit and
the object is the very one the submodule defines (``isinstance``, pickling and identity are unchanged). A submodule's
own name resolves to the submodule (so no lazy name may be a submodule's name: the import would rebind it).
``__all__`` stays the package's to state, so ``from package import *`` still gives every name (importing what
it needs). :func:`check` says whether a table still matches its submodules.

It exists because an import's memory is mostly the code it loads: a program that uses a few layers of ``tdx.nn`` or
one optimizer loads only their modules. Must never import a framework; imports nothing at module level but
``importlib`` and ``threading``.
"""

from __future__ import annotations

import importlib
import threading

_LOCK = threading.RLock()  # an RLock: resolving a name may import a module that resolves another


def attach(namespace: dict, homes: dict, adapt=None):
    """The ``(__getattr__, __dir__)`` of the module whose globals are ``namespace``.

    Args:
        namespace: the module's ``globals()``; a resolved name is stored there.
        homes: ``{".submodule": (name, ...)}``, relative to the module's package: where each lazily offered
            name is defined or re-exported. In a package, a submodule's own name resolves to the submodule; a
            name may not be a submodule's name (importing the submodule would rebind it: bind it eagerly).
        adapt: ``adapt(name, value) -> value``, applied to each object as it is resolved (the autocast
            wrappers of ``tdx.nn.functional``), or None.

    Returns:
        The two functions, to bind as the module's ``__getattr__`` and ``__dir__``.
    """
    module_name, anchor = namespace["__name__"], namespace["__package__"]
    where = {name: home for home, names in homes.items() for name in names}
    clash = sorted(name for name in where if "." + name in homes)
    if clash:  # importing the submodule binds its name to it, so such a name must be imported eagerly
        raise ValueError(f"{module_name}: lazy names that are also submodule names: {clash}")
    submodules = {home[1:]: home for home in homes} if "__path__" in namespace else {}

    def __getattr__(name: str):
        home = where.get(name)
        if home is None:
            home = submodules.get(name)
            if home is None:
                raise AttributeError(f"module {module_name!r} has no attribute {name!r}")
            return importlib.import_module(home, anchor)  # the import binds it in the package
        module = importlib.import_module(home, anchor)
        with _LOCK:  # two threads resolving at once get the same object
            value = namespace.get(name)
            if value is None:
                value = getattr(module, name)
                namespace[name] = value = value if adapt is None else adapt(name, value)
        return value

    def __dir__():
        return sorted(set(namespace) | set(where) | set(submodules))

    __getattr__.lazy_names = tuple(where)  # what the module's __dict__ resolves when read (torch_paths)
    return __getattr__, __dir__


def check(package: str, homes: dict, whole=()) -> list:
    """What a table of :func:`attach` gets wrong, as ``"module: name ..."`` lines (empty when it is exact): a name its
    submodule lacks, and, for the submodules of ``whole`` (those the package offers all of, as ``import *`` did), a
    name of the submodule's ``__all__`` the table leaves out. Imports every submodule: for tests."""
    out = []
    for home, names in homes.items():
        module = importlib.import_module(home, package)
        out += [f"{module.__name__}: {n} missing" for n in names if not hasattr(module, n)]
        if home in whole:
            out += [f"{module.__name__}: {n} not in the table" for n in module.__all__ if n not in names]
    return out
