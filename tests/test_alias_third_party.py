"""Packages whose names merely start with ``torch`` (torchvision, torchmetrics...) stay themselves under
tdx's torch alias: the stand-in packages ``torchfake`` and ``torchy_pkg`` in ``tests/alias_packages``
import as the real modules, and their own ``import torch`` gets what the program's gets."""

from __future__ import annotations

import pathlib
import sys

import tdx

from test_run import _py, _script

PACKAGES = pathlib.Path(__file__).resolve().parent / "alias_packages"

PROGRAM = """
import torch
import torchfake
import torchfake.layers as layers
import torchy_pkg
from torchfake import double
print(torchfake.NAME, torchy_pkg.NAME, torchfake.TORCH is torch, layers.__name__)
print(pathlib.Path(torchfake.__file__).parent.name, pathlib.Path(torchy_pkg.__file__).parent.name)
print(double(torch.ones(2)).tolist())
"""


def test_torch_prefixed_packages_stay_themselves_under_run(device, tmp_path):
    """``python -m tdx run`` prints what ``python`` prints under real torch."""
    prog = _script(tmp_path, "import pathlib\n" + PROGRAM)
    env = {"PYTHONPATH": f"{PACKAGES}:{pathlib.Path(tdx.__file__).resolve().parent.parent}"}
    expected = _py([str(prog)], tmp_path, **env)
    got = _py(["-m", "tdx", "run", "--device", device, str(prog)], tmp_path, **env)
    assert expected.returncode == 0 and got.returncode == 0, expected.stderr[-1500:] + got.stderr[-1500:]
    assert got.stdout == expected.stdout
    assert expected.stdout.splitlines()[0] == "torchfake torchy_pkg True torchfake.layers"


def test_torch_prefixed_packages_in_the_alias_block(device):
    from tdx.aliasing.torch_alias import torch_alias

    sys.path.insert(0, str(PACKAGES))
    try:
        with torch_alias():
            import torch as aliased
            import torchfake
            import torchy_pkg

            assert aliased is tdx and torchfake.TORCH is tdx and torchy_pkg.NAME == "torchy_pkg"
            assert pathlib.Path(torchfake.__file__).parent == PACKAGES / "torchfake"
            assert torchfake.double(tdx.ones(2, device=device)).tolist() == [2.0, 2.0]
            x = tdx.ones(2, device=device, dtype=tdx.int64)  # old code compares x.type() with torch's names
            kind = {"cuda": "cuda.", "mps": "mps."}.get(x.device.type, "")
            assert x.type() == aliased.typename(x) == f"torch.{kind}LongTensor"
            pdict = tdx.nn.ParameterDict({"a": tdx.nn.Parameter(tdx.ones(2, device=device))})
            infix = "" if x.device.type == "cpu" else f"{x.device.type}."  # torch names other devices' classes so
            assert f"[torch.{infix}FloatTensor of size 2" in repr(pdict)  # torch's repr, as printed under it
            assert "tdxfake" not in sys.modules and "tdxy_pkg" not in sys.modules
        assert x.type() == f"tdx.{kind}LongTensor"  # tdx's own names outside the alias
    finally:
        sys.path.remove(str(PACKAGES))
        for name in [m for m in sys.modules if m.partition(".")[0] in ("torchfake", "torchy_pkg")]:
            del sys.modules[name]


def test_alias_import_forms(device, tmp_path):
    """Every way a program imports under the alias: ``importlib.import_module``, ``__import__`` without
    globals, code exec'd with bare globals; an import made on behalf of tdx gets the real torch."""
    import builtins
    import importlib

    import torch as real

    from tdx.aliasing.torch_alias import torch_alias

    sys.path.insert(0, str(PACKAGES))
    try:
        with torch_alias():
            assert importlib.import_module("torch") is tdx
            assert importlib.import_module("torch.nn.functional") is tdx.nn.functional
            assert importlib.import_module("torchfake").NAME == "torchfake"
            assert builtins.__import__("torch") is tdx
            assert builtins.__import__("torch", {"__name__": "tdx.compat.something"}) is real
            assert builtins.__import__("torch", {"__name__": "__main__"}) is tdx
            bare: dict = {}
            exec("import torch as t", bare)  # noqa: S102 - globals without a __name__: the program's
            assert bare["t"] is tdx
            # __import__ with no globals: the calling frame's module decides, not its caller's
            internal: dict = {"__name__": "tdx.compat.stand_in"}
            exec("def load():\n    return __import__('torch')", internal)  # noqa: S102
            assert internal["load"]() is real
            # a module first loaded by tdx (a dependency of its own) keeps the real torch afterwards
            (tmp_path / "alias_dep_standin.py").write_text("def get():\n    import torch\n    return torch\n")
            sys.path.insert(0, str(tmp_path))
            try:
                dep = builtins.__import__("alias_dep_standin", {"__name__": "tdx.compat.stand_in"})
                assert dep.get() is real
            finally:
                sys.path.remove(str(tmp_path))
                sys.modules.pop("alias_dep_standin", None)
            assert tdx.ones(1, device=device).device == tdx.device(device)
    finally:
        sys.path.remove(str(PACKAGES))
        for name in [m for m in sys.modules if m.partition(".")[0] in ("torchfake", "torchy_pkg")]:
            del sys.modules[name]


COMPILED_PROGRAM = """
import torch
import visionext
x = torch.arange(4.0)
y = visionext.scale(x, 2.5)
print(visionext.NAME, type(y).__name__, y.tolist(), isinstance(y, torch.Tensor))
"""


def test_a_library_with_a_compiled_extension_imports_and_runs(tmp_path):
    """A library whose compiled extension registers operators with torch, and whose Python code registers fakes
    and autocast kernels through ``torch.library`` and ``torch._C``'s dispatcher at import (torchvision's way),
    imports under ``python -m tdx run`` and its operators take tdx tensors: the output is real torch's."""
    prog = _script(tmp_path, COMPILED_PROGRAM)
    env = {"PYTHONPATH": f"{PACKAGES}:{pathlib.Path(tdx.__file__).resolve().parent.parent}"}
    expected = _py([str(prog)], tmp_path, **env)
    got = _py(["-m", "tdx", "run", "--device", "cpu", str(prog)], tmp_path, **env)
    assert expected.returncode == 0 and got.returncode == 0, expected.stderr[-1500:] + got.stderr[-1500:]
    assert got.stdout == expected.stdout == "visionext Tensor [0.0, 2.5, 5.0, 7.5] True\n"
