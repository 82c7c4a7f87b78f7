"""Record the torch surface a library reaches: every ``torch.*`` attribute, private ``torch._C.*`` name and
``Tensor`` attribute that code outside torch touches while a program runs under real torch.

Usage: ``python tools/torch_surface_trace.py LIB PROGRAM [ARGS...]`` (real torch installed) runs PROGRAM
(a path, as ``python PROGRAM ARGS`` would) with every loaded ``torch`` module's class swapped for a recording
subclass and ``torch.Tensor.__getattribute__`` wrapped, then writes ``tests/data/torch_surface/LIB.json``:
the sorted names (``torch.nn.functional.linear``, ``torch._C._log_api_usage_once``, ``Tensor.new_zeros``) that
the program or any library it imports reached, each resolved under torch, with the module that reached it first. A name reached only from torch's own
modules is left out: it is torch's business, not the surface libraries see. ``tests/test_torch_surface.py``
replays each list against tdx under the alias.

This tool imports torch and is never imported by tdx.
"""

from __future__ import annotations

import json
import os
import pathlib
import runpy
import sys
import sysconfig
import types

OUT = pathlib.Path(__file__).resolve().parent.parent / "tests" / "data" / "torch_surface"
_SEEN: dict = {}  # name -> the module that reached it first
_IN_TRACE = [False]


_STDLIB = sysconfig.get_paths()["stdlib"]
_SITE = (sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"])
_TORCH_OWN = {"torch", "functorch", "torchgen"}  # the packages torch's wheel installs
_REAL_FILES: dict = {}


def _reader(depth: int):
    """The module name of the frame ``depth`` levels above the caller when it is a library's or the program's,
    else None: neither torch's own modules nor the standard library's (pickle's and inspect's module scans read
    every module's names)."""
    frame = sys._getframe(depth + 1)
    name, file = frame.f_globals.get("__name__", ""), frame.f_code.co_filename
    if not isinstance(name, str) or name.split(".", 1)[0] in _TORCH_OWN or file == __file__:
        return None
    if file.startswith(_STDLIB) and not file.startswith(_SITE):
        return None
    if file not in _REAL_FILES:  # torch's modules generated at run time (its RPC templates) have no file
        _REAL_FILES[file] = os.path.isfile(file)
    return name if _REAL_FILES[file] else None


def _record(attr: str, path) -> None:
    """Record ``path()`` (a dotted name, or None to skip) as read by the frame that read ``attr``, unless the
    read is a dunder, comes from torch or the standard library, or happens while recording."""
    if _IN_TRACE[0] or (attr.startswith("__") and attr.endswith("__")):
        return
    _IN_TRACE[0] = True
    try:
        reader = _reader(2)  # _record's caller is a __getattribute__; its caller did the read
        if reader is not None:
            name = path()
            if name is not None:
                _SEEN.setdefault(name, reader)
    finally:
        _IN_TRACE[0] = False


class _RecordingModule(types.ModuleType):
    """A torch module whose attribute reads from outside torch are recorded under its dotted path."""

    def __getattribute__(self, attr):
        value = super().__getattribute__(attr)
        _record(attr, lambda: f"{types.ModuleType.__getattribute__(self, '__name__')}.{attr}")
        return value


def _swap_class(module) -> bool:
    """Make a plain torch module record its reads; False for a module of its own class (left alone)."""
    if type(module) is not types.ModuleType:
        return False
    try:
        module.__class__ = _RecordingModule
    except TypeError:
        return False
    return True


def _instrument_modules() -> int:
    """Swap the class of every loaded torch module; returns how many were swapped."""
    return sum(_swap_class(module) for name, module in list(sys.modules.items())
               if name == "torch" or name.startswith("torch."))


def _instrument_ops(torch) -> None:
    """Record every ``torch.ops.<namespace>.<op>`` read from outside torch (the ops libraries key their
    ``__torch_dispatch__`` tables by, and call)."""
    namespace_class = torch._ops._OpNamespace
    base = namespace_class.__getattribute__

    def __getattribute__(self, attr):
        try:
            value = base(self, attr)
        except AttributeError:  # an op not loaded yet: the namespace's __getattr__ loads it (or raises)
            value = namespace_class.__getattr__(self, attr)
        _record(attr, lambda: f"torch.ops.{base(self, 'name')}.{attr}")
        return value

    namespace_class.__getattribute__ = __getattribute__


def _instrument_tensor(torch) -> None:
    """Record every attribute read on a tensor (any subclass included) made from outside torch."""
    base = torch._C.TensorBase.__getattribute__

    def __getattribute__(self, attr):
        _record(attr, lambda: f"Tensor.{attr}" if hasattr(torch.Tensor, attr) else None)
        return base(self, attr)

    torch.Tensor.__getattribute__ = __getattribute__


class _ModuleWatcher:
    """A meta path hook that instruments each torch module imported after the trace starts."""

    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            _PENDING.append(name)
        return None


_PENDING: list = []


def _sweep_pending() -> None:
    while _PENDING:
        _swap_class(sys.modules.get(_PENDING.pop()))


def trace(program: str, argv: list) -> dict:
    """Run PROGRAM under real torch with recording on; ``{name: the module that reached it first}``, sorted."""
    import torch
    import torch.utils.data  # noqa: F401  the modules every library reaches

    _instrument_modules()
    _instrument_tensor(torch)
    _instrument_ops(torch)
    sys.meta_path.insert(0, _ModuleWatcher())
    import builtins
    import importlib

    real_import, real_import_module = builtins.__import__, importlib.import_module

    def _import(*a, **k):  # instrument the torch modules an import loaded, once it returns
        module = real_import(*a, **k)
        if _PENDING:
            _sweep_pending()
        return module

    def _import_module(*a, **k):
        module = real_import_module(*a, **k)
        if _PENDING:
            _sweep_pending()
        return module

    builtins.__import__, importlib.import_module = _import, _import_module
    sys.argv = [program, *argv]
    try:
        runpy.run_path(program, run_name="__main__")
    finally:
        builtins.__import__, importlib.import_module = real_import, real_import_module
    return dict(sorted(_SEEN.items()))


def main(args: list) -> int:
    if len(args) < 2:
        print(__doc__)
        return 2
    lib, program, rest = args[0], args[1], args[2:]
    names = trace(program, rest)
    OUT.mkdir(parents=True, exist_ok=True)
    out = OUT / f"{lib}.json"
    out.write_text(json.dumps({"library": lib, "program": pathlib.Path(program).name, "names": names}, indent=0)
                   + "\n")
    print(f"{lib}: {len(names)} names -> {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
