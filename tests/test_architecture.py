"""The house rules of the package layout, checked on the source with ``ast`` (nothing is imported).

- No import cycle among modules through module-level imports.
- With the imports made inside function bodies counted too, no cycle (strongly connected set
  of modules) larger than ``MAX_DEFERRED_CYCLE``.
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
MAX_DEFERRED_CYCLE = 6
MAX_PRIVATE_ROOT = 8
VAGUE = ("more", "misc", "extra", "support", "helpers", "helper", "utils", "util", "stuff", "common")
# torch's own module names, which tdx.compat mirrors path for path (torch.nn.utils, torch.utils.data,
# torch.optim.swa_utils): a user imports them by these names
TORCH_PATHS = ("compat/nn/utils", "compat/utils", "compat/optim/swa_utils", "compat/distributed/tensor/_utils")


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


if __name__ == "__main__":
    known = modules()
    top, every = imports(known)
    print(f"{len(known)} modules")
    print("module-level cycles:", cycles(top))
    print("cycles with deferred imports:", [len(c) for c in cycles(every)], cycles(every)[:3])
    print("long files:", long_files(known))
    print("vague names:", vague_names(known))
    print("private root modules:", len(private_root()), private_root())
