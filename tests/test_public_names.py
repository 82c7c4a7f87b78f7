"""The public names of tdx's namespaces, pinned: a name tdx once offered is never lost.

``public_names.json`` lists, for each namespace, the public names it had when the package was
laid out in its current rooms. A move or a split must keep every one of them reachable at the
same path (new names may be added). Run this module as a script to see what was added.
"""

from __future__ import annotations

import importlib
import json
import pathlib

import pytest

import tdx

PINNED = json.loads((pathlib.Path(__file__).parent / "public_names.json").read_text())


def _namespace(path: str):
    if path == "tdx.Tensor":
        return tdx.Tensor
    return importlib.import_module(path)


@pytest.mark.parametrize("path", sorted(PINNED))
def test_no_public_name_is_lost(path):
    ns = _namespace(path)
    assert sorted(n for n in PINNED[path] if not hasattr(ns, n)) == []


def test_the_pin_itself_can_fail():
    assert "Tensor" in PINNED["tdx"] and "add_" in PINNED["tdx.Tensor"]
    assert {"zeros", "no_grad", "manual_seed"} <= set(PINNED["tdx"])


if __name__ == "__main__":
    for path in sorted(PINNED):
        have = {n for n in dir(_namespace(path)) if not n.startswith("_")}
        print(path, "added:", sorted(have - set(PINNED[path])))
