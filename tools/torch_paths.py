"""Write ``tdx/aliasing/torch_paths.json``: torch's module paths and their public names, read from the installed torch.

Usage: ``python tools/torch_paths.py`` (torch installed; run again when the torch version tdx follows changes).

The file lists every public module path of torch (no component after ``torch`` starting with ``_``) plus
the private paths real libraries import (:data:`PRIVATE`), and for each path its public names (``dir()`` and ``__all__``) with their
kind (``c`` class, ``f`` function, ``v`` other value) and, where the same object is reachable at a shorter
public path or is a standard-library object, that canonical home (``torch.nn:Linear``, ``functools:wraps``).
tdx reads it at run time (``tdx.aliasing.torch_paths``) so that every such path imports under tdx without
torch installed. This tool imports torch; tdx never imports this tool.
"""

from __future__ import annotations

import importlib
import inspect
import json
import logging
import pathlib
import pkgutil
import sys
import warnings

OUT = pathlib.Path(__file__).resolve().parent.parent / "tdx" / "aliasing" / "torch_paths.json"

# private module paths that libraries and pickles really import
PRIVATE = ("torch._dynamo", "torch._dynamo.config", "torch._inductor", "torch._inductor.config", "torch._decomp",
           "torch._export", "torch._higher_order_ops", "torch._lazy", "torch._library", "torch._logging",
           "torch._numpy", "torch._prims", "torch._prims_common", "torch._refs", "torch.utils._pytree",
           "torch.distributed._functional_collectives", "torch.distributed._tensor", "torch._functorch",
           "torch._subclasses", "torch._subclasses.fake_tensor", "torch._guards", "torch._ops")


def _public_paths(torch) -> list:
    paths = {"torch"}
    for info in pkgutil.walk_packages(torch.__path__, "torch.", onerror=lambda name: None):
        if not any(part.startswith("_") for part in info.name.split(".")[1:]):
            paths.add(info.name)
    return sorted(paths | set(PRIVATE))


def _kind(obj) -> str:
    if isinstance(obj, type):
        return "c"
    return "f" if callable(obj) else "v"


def _names(module) -> list:
    names = set(dir(module))
    listed = getattr(module, "__all__", None)
    if isinstance(listed, (list, tuple)):
        names.update(listed)
    return sorted(n for n in names if isinstance(n, str) and not n.startswith("_"))


def _stdlib_home(obj, name: str):
    mod = getattr(obj, "__module__", None)
    if not isinstance(mod, str) or mod.partition(".")[0] not in sys.stdlib_module_names:
        return None
    owner = sys.modules.get(mod)
    qual = getattr(obj, "__qualname__", name)
    return f"{mod}:{qual}" if owner is not None and getattr(owner, qual, None) is obj else None


def build() -> dict:
    """``{"torch": version, "modules": {path: {"package": bool, "names": {name: code}}}}``."""
    warnings.simplefilter("ignore")
    logging.disable(logging.CRITICAL)
    import torch

    modules = {}
    for path in _public_paths(torch):
        try:
            modules[path] = importlib.import_module(path)
        except Exception:  # noqa: BLE001 - a path torch itself cannot import is listed without names
            modules[path] = None
    # the shortest public path at which each class/function object is reachable under its own name (at equal
    # depth, the module that defines it)
    candidates = {}
    for path, mod in modules.items():
        if mod is None or any(part.startswith("_") for part in path.split(".")[1:]):
            continue
        for name in _names(mod):
            obj = getattr(mod, name, None)
            if isinstance(obj, type) or inspect.isfunction(obj) or inspect.isbuiltin(obj):
                candidates.setdefault((id(obj), name), (obj, []))[1].append(path)
    home = {key: min(paths, key=lambda p, o=obj: (p.count("."), p != getattr(o, "__module__", None), p))
            for key, (obj, paths) in candidates.items()}
    out = {}
    for path, mod in modules.items():
        names = {}
        if mod is not None:
            children = {p.rpartition(".")[2] for p in modules if p.rpartition(".")[0] == path}
            for name in _names(mod):
                obj = getattr(mod, name, None)
                if inspect.ismodule(obj) or name in children:
                    continue
                code = _kind(obj)
                canon = home.get((id(obj), name)) if code != "v" else None
                where = _stdlib_home(obj, name) if code != "v" else None
                if where is not None:
                    code += "=" + where
                elif canon is not None and canon != path:
                    code += "=" + canon
                names[name] = code
        is_pkg = mod is None or hasattr(mod, "__path__")
        out[path] = {"package": bool(is_pkg), "names": names}
    return {"torch": torch.__version__.split("+")[0], "modules": out}


def main() -> int:
    data = build()
    rows = [f"{json.dumps(path)}:{json.dumps(entry, sort_keys=True, separators=(',', ':'))}"
            for path, entry in sorted(data["modules"].items())]   # one module a line, so diffs stay readable
    # (and tdx.aliasing.torch_paths reads each line's path and its final "package" flag without parsing the names)
    OUT.write_text(f'{{"torch":{json.dumps(data["torch"])},"modules":{{\n' + ",\n".join(rows) + "\n}}\n")
    print(f"{OUT}: {len(data['modules'])} module paths of torch {data['torch']}, "
          f"{sum(len(m['names']) for m in data['modules'].values())} names")
    return 0


if __name__ == "__main__":
    sys.exit(main())
