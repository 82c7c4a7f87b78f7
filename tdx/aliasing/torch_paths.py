"""Every module path of torch imports under tdx; a name tdx lacks is a typed error naming its torch path.

``torch_paths.json`` (written by ``tools/torch_paths.py`` from the installed torch, read here without
torch) lists torch's public module paths, the private ones libraries import, and each path's public
names. Three pieces use it:

- :class:`GeneratedFinder`, last on ``sys.meta_path``: ``import tdx.<path>`` (``torch.<path>`` under
  the alias) for a path with no real tdx module builds a :class:`GeneratedModule` whose torch names
  refuse when called, instantiated or used (``UnsupportedOpError`` naming ``torch.<path>.<name>`` and
  why, from the module groups of ``tdx.aliasing.refused``). Being last, a real module (``tdx/compat/<name>/``
  or any file under ``tdx/``) always wins, also for submodules. A generated module is a package when
  torch's is.
- :class:`ShapingFinder`, first on ``sys.meta_path``: every ``tdx.*`` module standing for a torch module
  path is made a :class:`ShapedModule` (tdx's own modules, ``tdx._tensor.wrapping``..., are left alone),
  whose failed attribute lookups go through :func:`resolve`: a torch submodule is imported
  (``tdx.cuda.amp``), a name torch re-exports from elsewhere resolves to tdx's object there
  (``torch.nn.modules.activation.MultiheadAttention`` is ``tdx.nn.MultiheadAttention``), and anything
  else raises :class:`tdx.NotProvidedAttributeError` (an ``AttributeError``, so ``hasattr`` answers
  False) naming the torch path. A real module that sets ``__tdx_partial__ = True`` has its missing
  torch names refuse at use like a generated module's.
- :func:`torch_path`/:func:`tdx_path`, the mapping between the two spellings.

This module must never import a framework, and never makes an import fail that would succeed without it.
"""

from __future__ import annotations

import functools
import importlib
import importlib.machinery
import importlib.util
import json
import pathlib
import sys
import types

from .._errors import NotProvidedAttributeError

_DATA = pathlib.Path(__file__).with_name("torch_paths.json")


@functools.lru_cache(maxsize=1)
def data() -> dict:
    """``{torch module path: {"package": bool, "names": {name: code}}}`` (see ``tools/torch_paths.py``)."""
    return json.loads(_DATA.read_text())["modules"]


_DECODER = json.JSONDecoder()


@functools.lru_cache(maxsize=1)
def _index() -> dict:
    """``{torch module path: (is a package, offset of its line in the file)}``, read without parsing the names.

    Every import of a ``tdx.*`` module asks whether it stands for a torch path and whether that path is a package,
    while the names (most of the file, ~2 MB of objects once parsed) are needed only for the lookups that fail and
    the modules that are generated; so this reads the file line by line in the layout ``tools/torch_paths.py``
    writes (one module a line, its keys sorted so ``"package"`` ends it) and keeps each line's path, flag and
    offset, from which :func:`names` parses one module's line when asked. Returns ``{}`` when a line has any
    other shape (then :func:`data` serves every question).
    """
    out = {}
    offset = 0
    with _DATA.open("rb") as fh:
        for raw in fh:
            here, offset = offset, offset + len(raw)
            if not raw.startswith(b'"'):
                continue  # the opening line and the closing braces
            line = raw.decode("utf-8")
            path, end = _DECODER.raw_decode(line)
            row = line.rstrip().rstrip(",")
            if not isinstance(path, str) or line[end:end + 1] != ":" \
                    or not row.endswith(('"package":true}', '"package":false}')):
                return {}
            out[path] = (row.endswith("true}"), here)
    return out


@functools.lru_cache(maxsize=1)
def _packages() -> dict:
    """``{torch module path: is a package}`` (from :func:`_index`, or :func:`data` if the file's layout differs)."""
    index = _index()
    if index:
        return {path: package for path, (package, _) in index.items()}
    return {path: entry["package"] for path, entry in data().items()}


@functools.lru_cache(maxsize=None)
def names(path: str) -> dict:
    """``{name: code}`` of torch module ``path`` (``{}`` for a path not in the table): its one line parsed."""
    index = _index()
    if not index:
        return data().get(path, {}).get("names", {})
    found = index.get(path)
    if found is None:
        return {}
    with _DATA.open("rb") as fh:
        fh.seek(found[1])
        line = fh.readline().decode("utf-8")
    _, end = _DECODER.raw_decode(line)
    entry, _ = _DECODER.raw_decode(line, end + 1)
    return entry["names"]


def torch_version() -> str:
    """The torch version the path table was read from."""
    return json.loads(_DATA.read_text())["torch"]


def _namespaces() -> tuple:
    tdx = sys.modules.get("tdx")
    return getattr(tdx, "_NAMESPACES", ())


def torch_path(name: str):
    """The torch module path a tdx module name stands for (``tdx.compat.nn.functional`` -> ``torch.nn.functional``),
    or None when it stands for none."""
    if name == "tdx":
        return "torch"
    if name.startswith("tdx.compat."):
        rest = name[len("tdx.compat."):]
        return "torch." + rest if rest.partition(".")[0] in _namespaces() else None
    if name.startswith("tdx."):
        return "torch." + name[len("tdx."):]
    return None


def tdx_path(path: str) -> str:
    """The tdx module name of torch module ``path`` (``torch.nn`` -> ``tdx.nn``)."""
    return "tdx" + path[len("torch"):]


def _stands_for_torch(name: str) -> bool:
    return (torch_path(name) or "") in _packages()


def module_paths() -> list:
    """Every torch module path of the table, sorted."""
    return sorted(_packages())


_MODULE_DICT = types.ModuleType.__dict__["__dict__"].__get__


class ShapedModule(types.ModuleType):
    """A tdx module standing for a torch module: a failed lookup goes through :func:`resolve`."""

    def __getattr__(self, name: str):
        if name[:2] == "__":  # the import system's probes (__path__...): as fast as a plain module's miss
            raise AttributeError(name)
        return resolve(self, name)

    def __setattr__(self, name: str, value) -> None:
        # Importing a submodule under a second name (torch.multiprocessing.spawn, after the package itself was
        # loaded as tdx's) makes the import system bind it on the package again; a function or class the
        # package binds under that name (torch's multiprocessing.spawn is a function) stays, as in torch,
        # where the package's own binding came after its submodule's first import.
        if isinstance(value, types.ModuleType) and value.__name__ == f"{_MODULE_DICT(self)['__name__']}.{name}":
            bound = _MODULE_DICT(self).get(name)
            if bound is not None and not isinstance(bound, types.ModuleType):
                return
        types.ModuleType.__setattr__(self, name, value)

    @property
    def __dict__(self):
        """The module's namespace; read from outside tdx, it holds the lazily offered names too (torch's
        namespaces hold every name: pyro builds its optimizer wrappers from ``torch.optim.__dict__``)."""
        namespace = _MODULE_DICT(self)
        reader = sys._getframe(1).f_globals.get("__name__")
        if isinstance(reader, str) and (reader == "tdx" or reader.startswith("tdx.")):
            return namespace  # tdx's own reads (autocast's install, the alias) import nothing
        for name in getattr(namespace.get("__getattr__"), "lazy_names", ()):
            if name not in namespace:
                getattr(self, name)
        return namespace


class GeneratedModule(ShapedModule):
    """The module standing for a torch module path tdx has no real module for: its names refuse at use."""

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self.__all__))


def _home(code: str, name: str):
    """The object a table code's canonical home names (``c=torch.nn``, ``f=functools:wraps``), or None."""
    home = code.partition("=")[2]
    if not home:
        return None
    if ":" in home:  # a standard-library object torch re-exports
        module, _, qual = home.partition(":")
        obj = importlib.import_module(module)
        for part in qual.split("."):
            obj = getattr(obj, part, None)
        return obj
    try:
        return getattr(importlib.import_module(tdx_path(home)), name)
    except (ImportError, AttributeError):
        return None


def resolve(module: types.ModuleType, name: str):
    """``module.name`` for a name the module lacks (called by :class:`ShapedModule` lookups).

    Raises:
        NotProvidedAttributeError: ``name`` is neither a torch submodule, a name torch re-exports from a
            module tdx has, nor (on a generated module) one of the torch module's names.
    """
    path = torch_path(module.__name__)
    if name.startswith("__") or path is None:
        raise NotProvidedAttributeError(f"module {module.__name__!r} has no attribute {name!r}", name=name,
                                        obj=module)
    if f"{path}.{name}" in _packages():
        value = importlib.import_module(f"{module.__name__}.{name}")
    else:
        code = names(path).get(name)
        value = _home(code, name) if code is not None else None
        refuses = code is not None and (isinstance(module, GeneratedModule) or _MODULE_DICT(module).get("__tdx_partial__"))
        if refuses and (value is None or getattr(value, "__tdx_refused__", None)):
            from . import refused  # a refusal named by the path asked for (not by torch's canonical home)

            value = refused.module_name(path, name, code[0], module.__name__)
        if value is None:
            where = (f"{module.__name__} has no {name!r}, and it is not among the public names of {path} "
                     "that tdx follows") if code is None else f"{module.__name__} has no {name!r}"
            raise NotProvidedAttributeError(f"{path}.{name} is not provided by tdx ({where})", name=name,
                                            obj=module)
    setattr(module, name, value)
    return value


class _GeneratedLoader:
    """Creates the :class:`GeneratedModule` of one torch path."""

    def __init__(self, path: str):
        self.path = path

    def create_module(self, spec):
        return GeneratedModule(spec.name)

    def exec_module(self, module) -> None:
        module_names = names(self.path)
        module.__doc__ = (f"tdx's stand-in for {self.path}: tdx has no module of this path, so each of torch's "
                          "names here refuses (UnsupportedOpError saying why) when called, instantiated or used.")
        module.__all__ = sorted(module_names)
        module.__tdx_generated__ = True


class GeneratedFinder:
    """Last on ``sys.meta_path``: a ``tdx.*`` name standing for a torch module path no real module serves."""

    def find_spec(self, fullname, path=None, target=None):
        if not fullname.startswith("tdx."):
            return None
        torch = torch_path(fullname)
        package = _packages().get(torch) if torch is not None else None
        if package is None:
            return None
        head = fullname.split(".")[1]
        if head != "compat" and head in _namespaces():
            return None  # tdx.<namespace>... is the alias of tdx.compat.<namespace>...
        return importlib.util.spec_from_loader(fullname, _GeneratedLoader(torch), is_package=package)


class _ShapingLoader:
    """Wraps the loader a later finder chose so the module it makes is a :class:`ShapedModule`."""

    def __init__(self, loader):
        self.loader = loader

    def create_module(self, spec):
        module = self.loader.create_module(spec)
        if module is None and _stands_for_torch(spec.name):
            return ShapedModule(spec.name)
        if module is not None:
            shape(module)
        return module

    def exec_module(self, module) -> None:
        self.loader.exec_module(module)
        shape(module)

    def __getattr__(self, name):  # get_source, get_code, is_package, get_filename... of the wrapped loader
        return getattr(self.loader, name)


class ShapingFinder:
    """First on ``sys.meta_path``: every ``tdx.*`` module found by a later finder is made a :class:`ShapedModule`."""

    def find_spec(self, fullname, path=None, target=None):
        if not fullname.startswith("tdx."):
            return None
        finders = sys.meta_path
        for finder in finders[finders.index(self) + 1 if self in finders else 0:]:
            find = getattr(finder, "find_spec", None)
            spec = find(fullname, path, target) if find is not None else None
            if spec is not None:
                if spec.loader is not None and not isinstance(spec.loader, (_GeneratedLoader, _ShapingLoader)) \
                        and hasattr(spec.loader, "exec_module"):
                    spec.loader = _ShapingLoader(spec.loader)
                return spec
        return None


def shape(module: types.ModuleType) -> None:
    """Make a tdx module a :class:`ShapedModule`; one standing for a torch package gets a ``__path__`` if it is a
    single file (``tdx.compat.cuda`` for ``torch.cuda``), so ``import tdx.cuda.amp`` can reach the submodule."""
    name = getattr(module, "__name__", None)
    package = _packages().get(torch_path(name) or "") if isinstance(name, str) else None
    if package is None:
        return  # a module of tdx's own (tdx._tensor.wrapping): left as it is
    if type(module) is types.ModuleType:
        module.__class__ = ShapedModule
    if package and not hasattr(module, "__path__"):
        module.__path__ = []


SHAPING, GENERATED = ShapingFinder(), GeneratedFinder()


def install() -> None:
    """Put :data:`SHAPING` first and :data:`GENERATED` last on ``sys.meta_path`` (once) and shape the tdx modules
    already imported."""
    if SHAPING not in sys.meta_path:
        sys.meta_path.insert(0, SHAPING)
    if GENERATED not in sys.meta_path:
        sys.meta_path.append(GENERATED)
    for name, module in list(sys.modules.items()):
        if (name == "tdx" or name.startswith("tdx.")) and isinstance(module, types.ModuleType):
            shape(module)
