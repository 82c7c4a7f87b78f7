"""The house rules of the package layout, checked on the source with ``ast`` (nothing is imported).

- No import cycle among modules through module-level imports.
- With the imports made inside function bodies counted too, no cycle (strongly connected set
  of modules, a "circle") larger than ``MAX_DEFERRED_CYCLE``; none spanning folders; at most
  ``MAX_CIRCLES`` in all; every module of a circle named in ARCHITECTURE.md (where the reason it
  stays is written).
- Imports run down the floors of ``FLOORS``; an import up a floor only between the folder pairs of
  ``UPWARD``, each written in ARCHITECTURE.md with why.
- Every entry of ``tdx/compat/`` is a torch module path (``mlx`` and ``integrations`` aside).
- No file over ``MAX_LINES`` lines.
- No vague module names (``_more``, ``_misc``...): a file is named by its domain.
- At most ``MAX_PRIVATE_ROOT`` private modules or packages at the package root.

Run as a script (``python tests/test_architecture.py``) it prints the figures.
"""

from __future__ import annotations

import ast
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent / "tdx"
MAX_LINES = 800
MAX_DEFERRED_CYCLE = 3
MAX_CIRCLES = 3
# the floors, lowest first: a module imports from its own floor or a lower one (the longest prefix decides a floor)
FLOORS = (("tdx._errors", "tdx._device", "tdx._dtypes", "tdx.config", "tdx.return_types"), ("tdx.backends",),
          ("tdx.aliasing",), ("tdx.autograd",), ("tdx._tensor",), ("tdx.interop", "tdx.attention"), ("tdx",),
          ("tdx.compat",), ("tdx._cli", "tdx.__main__", "tdx.testing"))
# the folder pairs an import may run up the floors between, each written in ARCHITECTURE.md ("Imports up the floors")
UPWARD = {("tdx._tensor", "tdx.interop"), ("tdx._tensor", "tdx.compat"), ("tdx.attention", "tdx.compat"),
          ("tdx.autograd", "tdx._tensor"), ("tdx.autograd", "tdx.interop"), ("tdx.autograd", "tdx"),
          ("tdx.autograd", "tdx.compat"), ("tdx.backends", "tdx.compat"), ("tdx.backends", "tdx.autograd"),
          ("tdx", "tdx.compat")}
# tdx/compat/ entries that are tdx's own, not torch paths
COMPAT_OWN = ("mlx", "integrations")
MAX_PRIVATE_ROOT = 8
VAGUE = ("more", "misc", "extra", "support", "helpers", "helper", "utils", "util", "stuff", "common")
# torch's own module names, which tdx.compat mirrors path for path (torch.nn.utils, torch.utils.data,
# torch.optim.swa_utils): a user imports them by these names
TORCH_PATHS = ("compat/nn/utils", "compat/utils", "compat/optim/swa_utils", "compat/distributed/tensor/_utils",
               "compat/nn/modules/utils")


def module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict:
    """Dotted module name -> path, for every .py file under tdx/."""
    return {module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def _resolve(mod: str, is_pkg: bool, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = mod.split(".") if is_pkg else mod.split(".")[:-1]
    base = base[:len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports(known: dict) -> tuple:
    """(module-level edges, all edges): module -> set of tdx modules it imports."""
    top, every = {m: set() for m in known}, {m: set() for m in known}
    for mod, path in known.items():
        is_pkg = path.name == "__init__.py"
        tree = ast.parse(path.read_text(), str(path))
        nested = set()
        for fn in ast.walk(tree):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                nested.update(id(n) for n in ast.walk(fn) if n is not fn)
        for node in ast.walk(tree):
            targets = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _resolve(mod, is_pkg, node)
                for a in node.names:
                    sub = f"{base}.{a.name}"
                    targets.append(sub if sub in known else base)
            for t in targets:
                while t and t not in known:
                    t = t.rpartition(".")[0]
                if not t or t == mod or not t.startswith("tdx"):
                    continue
                every[mod].add(t)
                if id(node) not in nested:
                    top[mod].add(t)
    return top, every


def cycles(graph: dict) -> list:
    """The strongly connected sets of more than one module (Tarjan), largest first."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]
    sys.setrecursionlimit(max(10000, sys.getrecursionlimit()))

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in graph:
        if v not in index:
            visit(v)
    return sorted(out, key=len, reverse=True)


def folder(mod: str, known: dict) -> str:
    """The folder a module's file is in (a package's ``__init__`` is in the package's own folder)."""
    return str(known[mod].parent.relative_to(ROOT.parent))


def circles(graph: dict, known: dict) -> tuple:
    """(circles within one folder, circles spanning folders), each a sorted list of modules."""
    within, across = [], []
    for c in cycles(graph):
        (within if len({folder(m, known) for m in c}) == 1 else across).append(c)
    return within, across


def floor(mod: str) -> tuple:
    """``(floor index, the FLOORS prefix that decides it)`` of a module."""
    best = (-1, "")
    for i, names in enumerate(FLOORS):
        for n in names:
            if (mod == n or mod.startswith(n + ".")) and len(n) > len(best[1]):
                best = (i, n)
    return best


def upward(graph: dict) -> list:
    """``(importer, imported)`` pairs whose import runs up the floors."""
    return sorted((a, b) for a in graph for b in graph[a] if floor(b)[0] > floor(a)[0])


def compat_entries() -> list:
    """The names of ``tdx/compat/``'s modules and packages."""
    return sorted(p.stem for p in (ROOT / "compat").iterdir()
                  if p.name != "__init__.py" and (p.suffix == ".py" or (p / "__init__.py").exists()))


def not_torch_paths(names, has_path) -> list:
    """The names of ``names`` (``tdx/compat/`` entries) that are no torch module path by ``has_path``."""
    return [n for n in names if n not in COMPAT_OWN and not has_path("torch." + n)]


def vague_names(known: dict) -> list:
    bad = []
    for path in known.values():
        rel = path.relative_to(ROOT).as_posix()
        if any(rel == f"{t}.py" or rel.startswith(f"{t}/") for t in TORCH_PATHS):
            continue
        words = path.stem.strip("_").split("_") + [p.strip("_") for p in path.relative_to(ROOT).parts[:-1]]
        if any(w in VAGUE for w in words):
            bad.append(str(path.relative_to(ROOT.parent)))
    return bad


def long_files(known: dict) -> list:
    return [(str(p.relative_to(ROOT.parent)), n) for p in known.values()
            if (n := len(p.read_text().splitlines())) > MAX_LINES]


def private_root() -> list:
    return sorted(p.name for p in ROOT.iterdir()
                  if p.name.startswith("_") and not p.name.startswith("__")
                  and (p.suffix == ".py" or (p.is_dir() and (p / "__init__.py").exists())))


def test_no_module_level_import_cycle():
    top, _ = imports(modules())
    assert cycles(top) == []


def test_deferred_import_cycles_are_small():
    _, every = imports(modules())
    big = [c for c in cycles(every) if len(c) > MAX_DEFERRED_CYCLE]
    assert big == [], f"import cycles (imports in functions counted) over {MAX_DEFERRED_CYCLE} modules: {big}"


def test_no_circle_spans_folders():
    known = modules()
    _, every = imports(known)
    _, across = circles(every, known)
    assert across == [], f"import circles across folders (turn a dependency around or move an interface down): {across}"


def test_few_circles_and_each_written_down():
    known = modules()
    _, every = imports(known)
    found = cycles(every)
    assert len(found) <= MAX_CIRCLES, found
    text = (ROOT.parent / "ARCHITECTURE.md").read_text()
    unwritten = [m for c in found for m in c if f"`{m[len('tdx.'):]}`" not in text]
    assert unwritten == [], f"modules of an import circle that ARCHITECTURE.md does not name: {unwritten}"


def test_imports_up_the_floors_only_where_written():
    _, every = imports(modules())
    pairs = {(floor(a)[1], floor(b)[1]) for a, b in upward(every)}
    assert pairs - UPWARD == set(), f"imports up the floors not in UPWARD/ARCHITECTURE.md: {sorted(pairs - UPWARD)}"


def test_compat_entries_are_torch_paths():
    import importlib.util

    names = compat_entries()
    assert {"nn", "amp", "cuda", "mlx", "integrations"} <= set(names)
    if importlib.util.find_spec("torch") is not None:
        def has_path(path):
            try:
                return importlib.util.find_spec(path) is not None
            except ModuleNotFoundError:
                return False
    else:  # without torch: the table of torch's module paths tdx ships
        from tdx.aliasing import torch_paths

        has_path = torch_paths._packages().__contains__
    assert not_torch_paths(names, has_path) == [], "tdx/compat/ holds torch's tree only (tdx's machinery: tdx/aliasing)"
    assert not_torch_paths(["nn", "torch_alias", "mlx"], has_path) == ["torch_alias"]  # the check can fail


def test_no_file_over_the_line_limit():
    assert long_files(modules()) == []


def test_files_are_named_by_their_domain():
    assert vague_names(modules()) == []


def test_few_private_modules_at_the_root():
    names = private_root()
    assert len(names) <= MAX_PRIVATE_ROOT, names


def test_architecture_map_names_every_folder_and_root_module():
    text = (ROOT.parent / "ARCHITECTURE.md").read_text()
    parts = [p for p in ROOT.iterdir() if not p.name.startswith("__") and (p.suffix == ".py" or p.is_dir())
             and p.name != "__pycache__"]
    parts += [p for p in (ROOT / "backends").iterdir() if p.is_dir() and p.name != "__pycache__"]
    parts += [p for p in (ROOT / "compat").iterdir() if p.is_dir() and p.name != "__pycache__"]
    missing = [str(p.relative_to(ROOT.parent)) for p in parts
               if p.name not in text and p.stem not in text]
    assert missing == [], f"ARCHITECTURE.md does not name {missing}"


def test_checker_sees_a_cycle_and_a_deferred_one():
    # the checker itself must be able to fail: a hand-made graph with both kinds
    assert cycles({"a": {"b"}, "b": {"a"}, "c": set()}) == [["a", "b"]]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []
    assert floor("tdx.backends.mlx._ops") == (1, "tdx.backends") and floor("tdx.compat.nn")[1] == "tdx.compat"
    assert upward({"tdx.backends.x": {"tdx.compat.y"}, "tdx.compat.y": {"tdx.backends.x"}}) == [
        ("tdx.backends.x", "tdx.compat.y")]
    # a circle is across folders when its files are in two folders, within one when in one
    known = {"tdx.a.x": ROOT / "a" / "x.py", "tdx.a.y": ROOT / "a" / "y.py", "tdx.b.z": ROOT / "b" / "z.py"}
    assert circles({"tdx.a.x": {"tdx.b.z"}, "tdx.b.z": {"tdx.a.x"}, "tdx.a.y": set()}, known) == (
        [], [["tdx.a.x", "tdx.b.z"]])
    assert circles({"tdx.a.x": {"tdx.a.y"}, "tdx.a.y": {"tdx.a.x"}, "tdx.b.z": set()}, known) == (
        [["tdx.a.x", "tdx.a.y"]], [])


if __name__ == "__main__":
    known = modules()
    top, every = imports(known)
    print(f"{len(known)} modules")
    print("module-level cycles:", cycles(top))
    within, across = circles(every, known)
    print(f"circles with deferred imports: {len(within)} within one folder, {len(across)} across folders")
    for c in across + within:
        print("   ", len(c), c)
    ups = upward(every)
    print(f"imports up the floors: {len(ups)}, between {len({(floor(a)[1], floor(b)[1]) for a, b in ups})} folder pairs")
    for a, b in ups:
        print("   ", a, "->", b, "(module level)" if b in top[a] else "")
    print("compat entries that are no torch path:", not_torch_paths(compat_entries(), lambda p: __import__(
        "importlib.util").util.find_spec(p) is not None))
    print("long files:", long_files(known))
    print("vague names:", vague_names(known))
    print("private root modules:", len(private_root()), private_root())
