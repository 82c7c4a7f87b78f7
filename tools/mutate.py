"""A small mutation tester: flip operators and constants in a module, run the tests that cover it.

``python tools/mutate.py [MODULE ...] [--max N] [--jobs J] [--seed S] [--site S ...]`` (``--site``
re-runs named sites, e.g. an earlier run's survivors; ``make mutate`` runs every
module of :data:`MODULES`). For each module it parses the source, lists every mutation site
(comparison, arithmetic, boolean and augmented-assignment operators swapped; ``not`` dropped;
integer, float and bool constants changed; ``min``/``max``, ``any``/``all`` style call names
swapped; ``if`` conditions negated), writes each mutant into a private copy of the tree and
runs the module's test subset with ``pytest -x`` under a timeout (3x the clean run, timed with
``--jobs`` copies running at once, + 15 s). A mutant is killed when the
subset fails or times out. Modules with more than ``--max`` sites are sampled: a deterministic
random sample (``--seed``) of ``--max`` sites, said in the report. The report gives each
module's kill rate and lists the survivors (file:line and the change), so tests can be added.

A line whose comment holds ``mutate: equivalent`` (e.g. ``# mutate: equivalent (speed only)``)
offers no mutation site: it marks a change no test can observe, such as a threshold that only
picks the faster of two exact algorithms. Use it sparingly and say why in the comment; the
report counts the marked lines of each module.

It is a tool of the test suite: it must never edit the working tree (mutants live in copies
under a temporary folder) and it imports nothing of tdx itself.
"""

from __future__ import annotations

import argparse
import ast
import concurrent.futures as cf
import copy
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# module -> the pytest arguments of the tests that cover it (the MLX executor's modules and the
# tape only run on mlx:cpu, so the subsets select that device; the tape's ``.grad`` setter also serves
# torch executors, so the gradient-identity tests run there too)
MODULES = {
    "tdx/autograd/tape.py": ["tests/test_autograd.py", "tests/test_grad_identity.py", "tests/test_autograd_api.py",
                             "tests/test_tensor_memory.py",
                             "tests/test_reduce_shape.py::test_norm_orders_gradient_at_zero", "-k",
                             "mlx or across_executors or grad_identity"],
    "tdx/_tensor/recording.py": ["tests/test_autograd.py", "tests/test_grad_identity.py", "tests/test_autograd_api.py",
                                 "tests/test_tensor_memory.py",
                                 "tests/test_reduce_shape.py::test_norm_orders_gradient_at_zero", "-k",
                                 "mlx or across_executors or grad_identity"],
    "tdx/_tensor/views.py": ["tests/test_views.py", "tests/test_inplace_views.py", "tests/test_silent_values.py",
                             "tests/test_grad_identity.py", "-k", "mlx"],
    "tdx/config.py": ["tests/test_config.py", "tests/test_bad_input.py", "tests/test_random_stream.py", "-k",
                      "precedence or merges or nearest or bad_values or bad_env or typo"
                      " or documented or name_what or edge_values or env_device_auto or no_file or config_env"
                      " or pyproject_tool or unreadable or largest_thread or cut_short or non_ascii"
                      " or malformed_unrelated or bad_stream"],
    "tdx/backends/mlx/_reduction.py": ["tests/test_reduce_shape.py", "tests/test_ops_more.py",
                                       "tests/test_summation_order.py", "-k",
                                       "mlx and (reduction or extremes or max_returns or std_var or scan or softmax"
                                       " or norm_orders or nuclear or sum_ or dot or bias_gradient or mlp_first)"],
    "tdx/backends/mlx/_indexing.py": ["tests/test_ops_more.py", "tests/test_indexing.py", "-k",
                                      "mlx and (gather or index_select or masks or sort or topk or unique or "
                                      "rearrange or range_edges or bad_index)"],
    "tdx/backends/mlx/_gather.py": ["tests/test_indexing.py", "-k", "mlx"],
    "tdx/compat/serialization/": ["tests/test_serialization.py", "tests/test_checkpoint_fuzz.py"],  # files pooled
    "tdx/compat/nn/modules/state_dict.py": ["tests/test_nn_module.py", "tests/test_suite_guards.py",
                                            "tests/test_serialization.py", "-k", "state_dict or assign or frozen"],
    "tdx/aliasing/torch_alias.py": ["tests/test_run.py", "tests/test_alias_third_party.py", "-k",
                                  "torch_alias or alias_block or import_forms or resolves_every or traceback"],
}

_CMP = {ast.Lt: ast.GtE, ast.GtE: ast.Lt, ast.Gt: ast.LtE, ast.LtE: ast.Gt, ast.Eq: ast.NotEq,
        ast.NotEq: ast.Eq, ast.Is: ast.IsNot, ast.IsNot: ast.Is, ast.In: ast.NotIn, ast.NotIn: ast.In}
_BIN = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.FloorDiv, ast.Div: ast.Mult, ast.FloorDiv: ast.Mult,
        ast.Mod: ast.FloorDiv, ast.BitAnd: ast.BitOr, ast.BitOr: ast.BitAnd, ast.LShift: ast.RShift,
        ast.RShift: ast.LShift, ast.Pow: ast.Mult}
_NAMES = {"min": "max", "max": "min", "amin": "amax", "amax": "amin", "any": "all", "all": "any",
          "minimum": "maximum", "maximum": "minimum", "argmin": "argmax", "argmax": "argmin"}


def _docstrings(tree) -> set:
    """ids of the constant nodes that are docstrings (never mutated)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


MARKER = "mutate: equivalent"


def marked_lines(source: str) -> set:
    """Line numbers (1-based) whose comment carries :data:`MARKER`: no site is taken there."""
    return {n for n, text in enumerate(source.splitlines(), 1) if "#" in text and MARKER in text.split("#", 1)[1]}


def sites(tree, source: str = "") -> list:
    """Every mutation site: ``(node index in ast.walk order, kind, description)``.

    Args:
        tree: the parsed module.
        source: its text; lines marked with :data:`MARKER` are left out.
    """
    skip = _docstrings(tree)
    marked = marked_lines(source)
    found = []
    for i, node in enumerate(ast.walk(tree)):
        line = getattr(node, "lineno", 0)
        if line in marked:
            continue
        if isinstance(node, ast.Compare):
            for j, op in enumerate(node.ops):
                if type(op) in _CMP:
                    found.append((i, ("cmp", j), f"{line}: {type(op).__name__} -> {_CMP[type(op)].__name__}"))
        elif isinstance(node, (ast.BinOp, ast.AugAssign)) and type(node.op) in _BIN:
            found.append((i, ("bin",), f"{line}: {type(node.op).__name__} -> {_BIN[type(node.op)].__name__}"))
        elif isinstance(node, ast.BoolOp):
            found.append((i, ("bool",), f"{line}: {type(node.op).__name__} swapped"))
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            found.append((i, ("not",), f"{line}: 'not' dropped"))
        elif isinstance(node, ast.If):
            found.append((i, ("if",), f"{line}: if-condition negated"))
        elif isinstance(node, ast.Constant) and id(node) not in skip:
            v = node.value
            if isinstance(v, bool):
                found.append((i, ("const",), f"{line}: {v} -> {not v}"))
            elif isinstance(v, (int, float)) and not isinstance(v, bool):
                found.append((i, ("const",), f"{line}: {v!r} -> {_bumped(v)!r}"))
        elif isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
            if name in _NAMES:
                found.append((i, ("name",), f"{line}: {name}() -> {_NAMES[name]}()"))
    return found


def _bumped(v):
    if isinstance(v, int):
        return v + 1
    if v != v or v in (float("inf"), float("-inf")):
        return -v if v == v else 0.0
    return v + 1.0 if v == 0 else v * 2


def mutant_source(source: str, site) -> str:
    """``source`` with the one mutation ``site`` applied (re-printed by :func:`ast.unparse`)."""
    tree = ast.parse(source)
    index, kind, _ = site
    node = list(ast.walk(tree))[index]
    if kind[0] == "cmp":
        node.ops[kind[1]] = _CMP[type(node.ops[kind[1]])]()
    elif kind[0] == "bin":
        node.op = _BIN[type(node.op)]()
    elif kind[0] == "bool":
        node.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
    elif kind[0] == "not":
        inner = copy.deepcopy(node.operand)
        # drop the 'not': replace this node by its operand in its parent
        for parent in ast.walk(tree):
            for field, value in ast.iter_fields(parent):
                if value is node:
                    setattr(parent, field, inner)
                elif isinstance(value, list):
                    for k, item in enumerate(value):
                        if item is node:
                            value[k] = inner
    elif kind[0] == "if":
        node.test = ast.UnaryOp(op=ast.Not(), operand=node.test)
    elif kind[0] == "const":
        node.value = (not node.value) if isinstance(node.value, bool) else _bumped(node.value)
    elif kind[0] == "name":
        f = node.func
        if isinstance(f, ast.Attribute):
            f.attr = _NAMES[f.attr]
        else:
            f.id = _NAMES[f.id]
    return ast.unparse(ast.fix_missing_locations(tree))


def _workspace(base: Path, n: int) -> Path:
    """A private copy of the tree (tdx, tests, tools, pyproject) for worker ``n``."""
    dst = base / f"w{n}"
    if not dst.exists():
        for name in ("tdx", "tests"):
            shutil.copytree(ROOT / name, dst / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        for name in ("pyproject.toml",):
            if (ROOT / name).exists():
                shutil.copy(ROOT / name, dst / name)
    return dst


def run_tests(work: Path, args: list, timeout: float) -> tuple:
    """(status, seconds): "passed", "failed" or "timeout" of ``pytest -x args`` run in ``work``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TDX_")}
    env["PYTHONPATH"] = str(work)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    cmd = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:randomly", "-p", "no:cacheprovider",
           "-p", "no:xdist", "--no-header", *args]
    t0 = time.monotonic()
    try:
        proc = subprocess.run(cmd, cwd=work, env=env, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timeout", time.monotonic() - t0
    return ("passed" if proc.returncode == 0 else "failed"), time.monotonic() - t0


def mutate_module(rel: str, args: list, base: Path, jobs: int, max_sites: int, seed: int, log,
                  only: frozenset = frozenset()) -> dict:
    """Run every (or a sample of) mutant of ``rel``; returns the module's figures and survivors."""
    files = sorted(str(p.relative_to(ROOT)) for p in (ROOT / rel).glob("*.py")) if rel.endswith("/") else [rel]
    sources = {f: (ROOT / f).read_text() for f in files}
    all_sites = [(f, site) for f in files for site in sites(ast.parse(sources[f]), sources[f])]
    n_marked = sum(len(marked_lines(sources[f])) for f in files)
    chosen = all_sites
    if only:  # re-run named sites (survivors of an earlier run), as "path:line: change"
        chosen = [s for s in all_sites if f"{s[0]}:{s[1][2]}" in only]
    elif max_sites and len(all_sites) > max_sites:
        chosen = sorted(random.Random(seed).sample(all_sites, max_sites), key=lambda s: (s[0], s[1][0]))
    works = [_workspace(base, n) for n in range(jobs)]
    # the clean run is timed as the mutants run: ``jobs`` copies at once, so the load is the same
    with cf.ThreadPoolExecutor(jobs) as pool:
        clean = list(pool.map(lambda w: run_tests(w, args, timeout=900), works))
    bad = [status for status, _ in clean if status != "passed"]
    if bad:
        raise SystemExit(f"{rel}: the test subset {' '.join(args)} fails without a mutant ({bad[0]})")
    baseline = max(secs for _, secs in clean)
    timeout = 3 * baseline + 15
    log(f"{rel}: {len(chosen)} of {len(all_sites)} sites ({n_marked} lines marked equivalent), "
        f"baseline {baseline:.1f} s, timeout {timeout:.0f} s")

    def one(job):
        n, (path, site) = job
        work = works[n % jobs]
        target = work / path
        target.write_text(mutant_source(sources[path], site))
        try:
            result, secs = run_tests(work, args, timeout)
        finally:
            target.write_text(sources[path])
        return (path, site), result, secs

    survivors, killed = [], 0
    # each worker owns one copy: run the mutants in rounds of ``jobs``, one per copy
    for start in range(0, len(chosen), jobs):
        batch = list(enumerate(chosen[start:start + jobs]))
        with cf.ThreadPoolExecutor(jobs) as pool:
            for site, result, secs in pool.map(one, batch):
                log(f"  {'survived' if result == 'passed' else result:8} {site[0]}:{site[1][2]} ({secs:.0f} s)")
                if result == "passed":
                    survivors.append(f"{site[0]}:{site[1][2]}")
                else:
                    killed += 1
    rate = killed / len(chosen) if chosen else 1.0
    log(f"{rel}: killed {killed}/{len(chosen)} = {rate:.0%}" + (f"; survivors: {survivors}" if survivors else ""))
    return {"module": rel, "sites": len(all_sites), "run": len(chosen), "killed": killed, "rate": rate,
            "survivors": survivors, "marked": n_marked}


def main(argv=None) -> int:
    """Command line entry: mutate the named modules (all of :data:`MODULES` by default)."""
    parser = argparse.ArgumentParser(prog="python tools/mutate.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("modules", nargs="*", help=f"modules to mutate; default: {', '.join(MODULES)}")
    parser.add_argument("--max", type=int, default=20, help="sample this many sites per module (0: all)")
    parser.add_argument("--jobs", type=int, default=2, help="mutants run at once (one tree copy each)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the site sample")
    parser.add_argument("--site", action="append", default=[],
                        help="run only this site, as a report names it ('path:line: change'); repeatable")
    parser.add_argument("--min-rate", type=float, default=0.0, help="exit 1 when a module kills fewer")
    opts = parser.parse_args(argv)
    names = opts.modules or list(MODULES)
    unknown = [n for n in names if n not in MODULES]
    if unknown:
        parser.error(f"unknown module {unknown[0]!r}; accepted: {', '.join(MODULES)}")
    results = []
    with tempfile.TemporaryDirectory(prefix="tdx-mutate-") as tmp:
        for name in names:
            results.append(mutate_module(name, MODULES[name], Path(tmp), opts.jobs, opts.max, opts.seed,
                                         lambda s: print(s, flush=True), frozenset(opts.site)))
            shutil.rmtree(Path(tmp), ignore_errors=True)  # a fresh copy per module
            Path(tmp).mkdir(exist_ok=True)
    print("\n| module | sites | marked equivalent | mutants run | killed | kill rate |\n|---|---|---|---|---|---|")
    for r in results:
        print(f"| `{r['module']}` | {r['sites']} | {r['marked']} | {r['run']} | {r['killed']} | {r['rate']:.0%} |")
    return 1 if any(r["rate"] < opts.min_rate for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
