"""transformers' own model tests under real torch and under ``python -m tdx run``, compared test by test.

Assembles, in a scratch folder, the tests tree that transformers' model tests need (the repository's root
``conftest.py`` and ``pyproject.toml``, ``tests/*.py``, ``tests/utils``, ``tests/generation`` and the chosen
``tests/models/<name>`` folders) from a transformers checkout (a work tree, or a bare/mirror git folder and
a revision), then runs each test file with pytest three ways: under real torch, under
``python -m tdx run --device cpu`` and under ``--device mlx:cpu`` (``HF_HUB_OFFLINE=1``: nothing is
downloaded). It prints, per file and device, how many tests pass under torch and how many of those also
pass under tdx, then lists each test that passes under torch but not under tdx with its error line, and
the error lines grouped by count. Nothing from transformers is kept in this repository: the tree is copied
at run time only, and the installed transformers package provides the library and its test helpers.

Usage::

    python tools/hf_model_tests.py --checkout /path/to/transformers [--rev HEAD] [--root-rev REV] [--own-source] [--deps DIR] \\
        [--files gpt2,llama,bert,t5,vit,generation] [--devices cpu,mlx:cpu] [--work /tmp/hf_model_tests] \\
        [-n 2] [-k EXPR] [--timeout 3600]

The checkout's version should be the installed transformers' (the script says when they differ: the
tests then use helpers of another release, and some fail under torch too; those are not counted).

This tool must never be imported by tdx, never download anything, and never write outside ``--work``.
"""

from __future__ import annotations

import argparse
import collections
import importlib.metadata
import io
import os
import re
import shutil
import subprocess
import sys
import tarfile
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent  # the folder holding tdx/
FILES = {
    "gpt2": "tests/models/gpt2/test_modeling_gpt2.py",
    "llama": "tests/models/llama/test_modeling_llama.py",
    "bert": "tests/models/bert/test_modeling_bert.py",
    "t5": "tests/models/t5/test_modeling_t5.py",
    "vit": "tests/models/vit/test_modeling_vit.py",
    "generation": "tests/generation/test_utils.py",
}
SHARED = ["conftest.py", "pyproject.toml", "tests/__init__.py", "tests/utils", "tests/generation", "tests/exporters", "tests/pipelines",
          "tests/fixtures", "tests/models/__init__.py", "utils"]
ROOT_FILES = ["conftest.py", "pyproject.toml"]  # taken from --root-rev: an older conftest may not import beside torch


def _git(checkout: Path, *args: str) -> bytes:
    """``git ARGS`` on ``checkout`` (a work tree or a bare repository); its stdout."""
    gitdir = checkout / ".git" if (checkout / ".git").exists() else checkout
    return subprocess.run(["git", f"--git-dir={gitdir}", *args], check=True, capture_output=True).stdout


def _is_git(checkout: Path) -> bool:
    return (checkout / ".git").exists() or (checkout / "HEAD").is_file()


def checkout_version(checkout: Path, rev: str) -> str:
    """``__version__`` of transformers at ``rev`` of the checkout (from its ``src/transformers/__init__.py``)."""
    path = "src/transformers/__init__.py"
    text = _git(checkout, "show", f"{rev}:{path}").decode() if _is_git(checkout) else (checkout / path).read_text()
    found = re.search(r'^__version__\s*=\s*"([^"]+)"', text, re.M)
    return found.group(1) if found else "unknown"


def assemble(checkout: Path, rev: str, names: list, tree: Path, root_rev: str | None = None,
             own_source: bool = False) -> None:
    """Copy the tests tree for ``names`` (keys of :data:`FILES`) from the checkout into ``tree`` (emptied first).

    Args:
        root_rev: the revision the root ``conftest.py``/``pyproject.toml`` come from (default ``rev``).
        own_source: also copy the checkout's ``src/transformers``, which the runs then import instead of the
            installed package (for a checkout of another release than the installed one).
    """
    if tree.exists():
        shutil.rmtree(tree)
    tree.mkdir(parents=True)
    folders = {str(Path(FILES[n]).parent) for n in names} | ({"src/transformers"} if own_source else set())
    if _is_git(checkout):
        listed = _git(checkout, "ls-tree", "--name-only", rev, "tests/").decode().split()
        top = [p for p in listed if p.endswith(".py")]
        data = _git(checkout, "archive", "--format=tar", rev, *SHARED, *top, *sorted(folders))
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            tar.extractall(tree, filter="data")
        if root_rev and root_rev != rev:
            for name in ROOT_FILES:
                (tree / name).write_bytes(_git(checkout, "show", f"{root_rev}:{name}"))
        return
    for rel in [*SHARED, *(str(p.relative_to(checkout)) for p in (checkout / "tests").glob("*.py")), *folders]:
        src, dst = checkout / rel, tree / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            shutil.copytree(src, dst, dirs_exist_ok=True)
        elif src.exists():
            shutil.copy2(src, dst)


def _environment(deps=None, source=None) -> dict:
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PYTHONHASHSEED="0",
               TOKENIZERS_PARALLELISM="false")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [source, deps, os.environ.get("PYTHONPATH")])])
    return env


def run_file(tree: Path, rel: str, runner: str, report: Path, args) -> dict:
    """Run one test file; ``{test id: (outcome, message)}`` read from pytest's JUnit XML report.

    Args:
        runner: ``"torch"`` (plain pytest) or a tdx device (``python -m tdx run --device D -m pytest``).
    """
    pytest_args = ["-m", "pytest", rel, "-q", "-p", "no:cacheprovider", f"--junitxml={report}", "-o",
                   "junit_family=xunit1"]
    if args.n:
        pytest_args += ["-n", str(args.n)]
    if args.k:
        pytest_args += ["-k", args.k]
    command = [sys.executable, *pytest_args] if runner == "torch" else \
        [sys.executable, "-m", "tdx", "run", "--device", runner, *pytest_args]
    log = report.with_suffix(".log")
    with open(log, "w") as out:
        try:
            subprocess.run(command, cwd=tree, env=_environment(args.deps, str(tree / "src") if args.own_source else None), stdout=out, stderr=subprocess.STDOUT,
                           timeout=args.timeout)
        except subprocess.TimeoutExpired:
            out.write(f"\n[hf_model_tests] timed out after {args.timeout}s\n")
    return read_report(report)


def read_report(report: Path) -> dict:
    """``{test id: (outcome, first line of the message)}``; outcome is passed, failed, error or skipped."""
    results = {}
    if not report.exists():
        return results
    for case in ET.parse(report).getroot().iter("testcase"):
        test = f"{case.get('classname', '')}::{case.get('name', '')}"
        outcome, message = "passed", ""
        for tag in ("failure", "error", "skipped"):
            node = case.find(tag)
            if node is not None:
                outcome = {"failure": "failed"}.get(tag, tag)
                message = (node.get("message") or node.text or "").strip().splitlines()
                message = message[0][:200] if message else ""
                break
        results[test] = (outcome, message)
    return results


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--checkout", required=True, type=Path, help="a transformers work tree or git folder")
    parser.add_argument("--rev", default="HEAD", help="revision of a git checkout (default HEAD)")
    parser.add_argument("--root-rev", default=None, help="revision of the root conftest.py (default --rev)")
    parser.add_argument("--deps", default=None, help="a folder of extra test dependencies (pip install --target "
                        "DIR parameterized httpx) put on PYTHONPATH")
    parser.add_argument("--own-source", action="store_true", help="run against the checkout's own "
                        "src/transformers instead of the installed package (its dependencies may go in --deps)")
    parser.add_argument("--files", default=",".join(FILES), help=f"comma-separated, of: {', '.join(FILES)}")
    parser.add_argument("--devices", default="cpu,mlx:cpu", help="tdx devices to compare with torch")
    parser.add_argument("--work", default="/tmp/hf_model_tests", type=Path, help="scratch folder")
    parser.add_argument("-n", type=int, default=0, help="pytest-xdist workers per run (0: none)")
    parser.add_argument("-k", default=None, help="pytest -k expression")
    parser.add_argument("--timeout", type=int, default=3600, help="seconds per pytest run")
    parser.add_argument("--reuse", action="store_true", help="keep the torch reports of an earlier run")
    args = parser.parse_args(argv)

    names = [n.strip() for n in args.files.split(",") if n.strip()]
    unknown = [n for n in names if n not in FILES]
    if unknown:
        parser.error(f"unknown --files {unknown}; known: {', '.join(FILES)}")
    devices = [d for d in args.devices.split(",") if d]
    installed = importlib.metadata.version("transformers")
    version = checkout_version(args.checkout, args.rev)
    print(f"transformers installed {installed}, checkout {args.rev} is {version}"
          + (", its own source is used" if args.own_source else "" if version == installed
             else "  (differs: tests that fail under torch are not counted)"))
    tree = args.work / "tree"
    reports = args.work / "reports"
    reports.mkdir(parents=True, exist_ok=True)
    assemble(args.checkout, args.rev, names, tree, args.root_rev, args.own_source)

    rows, missing = [], collections.Counter()
    for name in names:
        rel = FILES[name]
        torch_report = reports / f"{name}-torch.xml"
        reference = read_report(torch_report) if args.reuse else {}
        if not reference:
            reference = run_file(tree, rel, "torch", torch_report, args)
        passed = {t for t, (o, _) in reference.items() if o == "passed"}
        for device in devices:
            got = run_file(tree, rel, device, reports / f"{name}-{device.replace(':', '_')}.xml", args)
            ok = {t for t, (o, _) in got.items() if o == "passed"}
            rows.append((name, device, len(passed), len(passed & ok)))
            print(f"{name:<11} {device:<8} torch-pass {len(passed):4d}  tdx-pass {len(passed & ok):4d}", flush=True)
            for test in sorted(passed - ok):
                outcome, message = got.get(test, ("not run", ""))
                print(f"    {outcome:<8} {test}  {message}")
                missing[re.sub(r"\d+", "N", message)[:120] or outcome] += 1

    print("\nfile        device   torch-pass tdx-pass")
    for name, device, ref, ok in rows:
        print(f"{name:<11} {device:<8} {ref:10d} {ok:8d}")
    if missing:
        print("\nfailure groups (count, first line of the error):")
        for message, count in missing.most_common():
            print(f"  {count:4d}  {message}")
    return 0 if all(ref == ok for _, _, ref, ok in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
