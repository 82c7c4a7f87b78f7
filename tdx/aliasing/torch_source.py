"""Runs the installed torch package's own pure-Python modules as tdx modules.

Some torch namespaces are plain Python written over torch's public ops (``torch.distributions``
is the example): executing *torch's own files*, with every ``import torch...`` in them resolved
to tdx, gives torch's exact semantics on every executor with no copy of torch's code in tdx.
:func:`run_package` does this for one torch package: it executes the package's ``__init__.py``
in the namespace of the tdx package that calls it, and installs a :class:`TorchSourceFinder`
so that the package's submodules (``tdx.compat.distributions.normal``...) are torch's files
executed under tdx names.

Inside an executed file, ``raise ValueError(...)``/``raise TypeError(...)`` raise tdx's typed
errors (:class:`tdx.TdxError` and the same builtin); a package run here must not rely on
``except ValueError``/``except TypeError`` catching a plain builtin raised elsewhere.

Inside an executed file, ``import torch`` binds ``tdx``, ``from torch.X import y`` reads
``tdx.X``, and relative imports stay inside the tdx package; nothing else changes. The files
are located on ``sys.path`` by the path finder itself, so torch is never imported for it
(under ``python -m tdx run`` the name ``torch`` is tdx's alias). Where torch is not installed
the namespace raises :class:`tdx.NotProvidedError` naming what to install.

This module must never import torch or MLX, never copies or rewrites torch's source text, and
never binds a real torch object into an executed file: whatever the file needs from torch
must exist in tdx.
"""

from __future__ import annotations

import builtins
import importlib.machinery
import importlib.util
import os
import sys

from .._errors import NotProvidedError, TdxTypeError, TdxValueError

__all__ = ["torch_package_dir", "run_package", "run_module", "TorchSourceFinder"]


def torch_package_dir(what: str) -> str:
    """The directory of the installed torch package, found without importing it.

    Args:
        what: the tdx namespace that needs torch's files, named in the error.

    Raises:
        NotProvidedError: torch is not installed.
    """
    spec = importlib.machinery.PathFinder.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        raise NotProvidedError(
            f"{what} runs the installed torch package's own Python source with tdx as torch, and torch "
            f"is not installed: install it (`pip install torch`, any CPU build of torch 2.13) to use {what}")
    return list(spec.submodule_search_locations)[0]


def _translate(name: str) -> str:
    if name == "torch" or name.startswith("torch."):
        return "tdx" + name[5:]
    return name


def _tdx_import(name, globals=None, locals=None, fromlist=(), level=0):  # noqa: A002 - __import__'s names
    """``__import__`` for executed torch files: absolute ``torch...`` names become ``tdx...``."""
    if level == 0:
        name = _translate(name)
    return builtins.__import__(name, globals, locals, fromlist, level)


# torch's files raise ValueError/TypeError for bad arguments: there they are tdx's typed errors (the
# same builtins, so ``except ValueError`` still catches them); the packages run here catch neither
_BUILTINS = dict(builtins.__dict__, __import__=_tdx_import, ValueError=TdxValueError, TypeError=TdxTypeError)


class _SourceLoader:
    """Executes one torch file as the module it is asked to create."""

    def __init__(self, path: str):
        self.path = path

    def create_module(self, spec):
        return None

    def get_source(self, fullname):
        with open(self.path, encoding="utf-8") as fh:
            return fh.read()

    def exec_module(self, module) -> None:
        _execute(self.path, module.__dict__)


def _execute(path: str, namespace: dict) -> None:
    with open(path, encoding="utf-8") as fh:
        code = compile(fh.read(), path, "exec", dont_inherit=True)
    namespace["__builtins__"] = _BUILTINS
    exec(code, namespace)  # noqa: S102 - torch's own installed source, by design


class TorchSourceFinder:
    """Finds ``<package>.<sub>`` as torch's file ``<torch_dir>/<sub>.py`` (or ``<sub>/__init__.py``).

    Args:
        package: the tdx package name, e.g. ``"tdx.compat.distributions"``.
        directory: torch's directory for that package.
    """

    def __init__(self, package: str, directory: str):
        self.package = package
        self.directory = directory

    def find_spec(self, fullname, path=None, target=None):
        if not fullname.startswith(self.package + "."):
            return None
        rest = fullname[len(self.package) + 1:].split(".")
        base = os.path.join(self.directory, *rest)
        for candidate, is_package in ((base + ".py", False), (os.path.join(base, "__init__.py"), True)):
            if os.path.isfile(candidate):
                spec = importlib.util.spec_from_loader(fullname, _SourceLoader(candidate), origin=candidate,
                                                       is_package=is_package)
                spec.has_location = True
                if is_package:
                    spec.submodule_search_locations = []
                return spec
        return None


def run_package(namespace: dict, torch_package: str) -> None:
    """Execute torch's ``torch.<torch_package>/__init__.py`` in ``namespace`` (a tdx package's
    globals) and make the package's submodules torch's files too.

    Args:
        namespace: the calling package's ``globals()``.
        torch_package: the dotted name under torch, e.g. ``"distributions"``.

    Raises:
        NotProvidedError: torch is not installed, or lacks that package.
    """
    what = "torch." + torch_package
    directory = os.path.join(torch_package_dir(what), *torch_package.split("."))
    init = os.path.join(directory, "__init__.py")
    if not os.path.isfile(init):
        raise NotProvidedError(f"{what} runs the installed torch's {init}, which does not exist: install torch 2.13")
    package = namespace["__name__"]
    if not any(isinstance(f, TorchSourceFinder) and f.package == package for f in sys.meta_path):
        from .torch_paths import GENERATED  # the catch-all for absent paths must stay after torch's files

        at = sys.meta_path.index(GENERATED) if GENERATED in sys.meta_path else len(sys.meta_path)
        sys.meta_path.insert(at, TorchSourceFinder(package, directory))
    namespace["__path__"] = []
    namespace["__file__"] = init
    _execute(init, namespace)


def run_module(name: str, torch_module: str):
    """Execute one torch file, ``torch.<torch_module>``, as the tdx module ``name`` and return it.

    For a tdx package of its own files that needs a few of torch's (``tdx.testing`` runs torch's
    ``testing/_comparison.py`` and ``testing/_creation.py``), where :func:`run_package` would hand the
    whole package to torch's directory.

    Args:
        name: the tdx module's dotted name, e.g. ``"tdx.testing._comparison"``.
        torch_module: the dotted name under torch, e.g. ``"testing._comparison"``.

    Raises:
        NotProvidedError: torch is not installed, or lacks that file.
    """
    module = sys.modules.get(name)
    if module is not None:
        return module
    what = "torch." + torch_module
    path = os.path.join(torch_package_dir(what), *torch_module.split(".")) + ".py"
    if not os.path.isfile(path):
        raise NotProvidedError(f"{what} runs the installed torch's {path}, which does not exist: install torch 2.13")
    spec = importlib.util.spec_from_loader(name, _SourceLoader(path), origin=path)
    spec.has_location = True
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module
