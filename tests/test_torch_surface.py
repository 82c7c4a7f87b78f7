"""The torch surface third-party libraries reach, replayed against tdx under the alias.

``tests/data/torch_surface/<lib>.json`` lists every ``torch.*`` attribute, private ``torch._C.*`` name and
``Tensor`` attribute that the library's program in ``tests/programs/`` touched under real torch (written by
``tools/torch_surface_trace.py``). Under the alias each name must resolve as torch's does: present, or a
callable that refuses at call by name (``refused.py``); never missing. A library release that reaches a new
name shows up here once its list is traced again; ``test_lists_match_a_fresh_trace`` re-traces one program
to catch a list that went stale.
"""

from __future__ import annotations

import importlib
import json
import pathlib
import subprocess
import sys

import pytest
import torch

import tdx
from test_run import ROOT, _env

LISTS = sorted((ROOT / "tests" / "data" / "torch_surface").glob("*.json"))


def _resolve(root, name: str):
    """The object NAME names under ROOT (``torch.a.b``: attributes, then a module import where an attribute is
    missing; ``Tensor.x``: the class attribute); raises what the lookup raises."""
    if name.startswith("Tensor."):
        return getattr(root.Tensor, name.split(".", 1)[1])
    parts = name.split(".")[1:]
    obj = root
    for i, part in enumerate(parts):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            try:  # a submodule not imported yet
                obj = importlib.import_module(".".join(["torch", *parts[:i + 1]]))
            except ImportError:
                raise AttributeError(f"{'.'.join(['torch', *parts[:i]])} has no {part}") from None
    return obj


def missing_names(names) -> dict:
    """{name: the error} for each name that does not resolve under the alias."""
    from tdx.aliasing.torch_alias import torch_alias

    missing = {}
    with torch_alias():
        import torch as aliased

        for name in names:
            try:
                _resolve(aliased, name)
            except Exception as e:  # the missing name and why, reported together below
                missing[name] = f"{type(e).__name__}: {e}"
    return missing


@pytest.mark.parametrize("path", LISTS, ids=[p.stem for p in LISTS])
def test_every_traced_name_resolves_under_the_alias(path):
    names = json.loads(path.read_text())["names"]
    assert len(names) >= 40
    for name in names:  # the list holds names that resolve under real torch
        _resolve(torch, name) if not name.startswith("Tensor.") else getattr(torch.Tensor, name[7:])
    missing = missing_names(names)
    assert not missing, "\n".join(f"{k}: {v}" for k, v in sorted(missing.items()))


def test_replay_catches_a_missing_name():
    assert "torch.no_such_name_at_all" in missing_names(["torch.no_such_name_at_all", "torch.nn.Linear"])
    assert missing_names(["Tensor.add", "torch.nn.functional.relu", "torch._C._log_api_usage_once"]) == {}


@pytest.mark.timeout(300)
def test_lists_match_a_fresh_trace(tmp_path):
    """The tracer, run again on the torchmetrics program, finds the names of the checked-in list."""
    pytest.importorskip("torchmetrics")
    out = tmp_path / "surface"
    code = ("import sys, runpy, tools.torch_surface_trace as t; t.OUT = __import__('pathlib').Path(sys.argv[1]); "
            "sys.exit(t.main(['torchmetrics', sys.argv[2]]))")
    done = subprocess.run([sys.executable, "-c", code, str(out), str(ROOT / "tests/programs/torchmetrics_eval.py")],
                          cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=280)
    assert done.returncode == 0, done.stderr[-3000:]
    fresh = set(json.loads((out / "torchmetrics.json").read_text())["names"])
    kept = set(json.loads((ROOT / "tests/data/torch_surface/torchmetrics.json").read_text())["names"])
    assert fresh == kept, (sorted(fresh - kept), sorted(kept - fresh))
    assert tdx.__version__
