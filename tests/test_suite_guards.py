"""Guards for behaviours that only a test far from their module checked, or none: ``state_dict``'s forms and
extra state, and the MLX rows on a device without float64. Each compares with torch on CPU, on every device.
(Frozen parameters through ``load_state_dict(assign=True)`` are in test_nn_module.py, complex autograd in
test_autograd.py, ``logsumexp`` of all ``-inf`` rows in test_reduce_shape.py.)"""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import torch

import tdx

ROOT = Path(__file__).resolve().parents[1]


def _scaled(lib):
    class Scaled(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = lib.nn.Parameter(lib.tensor(2.0))
            self.lin = lib.nn.Linear(2, 1)

    return Scaled()


def test_state_dict_forms_match_torch(device):
    """Detached by default, the Parameters themselves with keep_vars, the deprecated positional
    (destination, prefix, keep_vars) form, and a 1-element 1-d tensor loading into a 0-d parameter."""
    ref, ours = _scaled(torch), _scaled(tdx).to(device)
    for sd, module in ((ours.state_dict(), ours), (ref.state_dict(), ref)):
        assert list(sd) == ["scale", "lin.weight", "lin.bias"]
        assert not any(v.requires_grad for v in sd.values()) and sd["scale"] is not module.scale
    assert dict(ours.state_dict()._metadata) == dict(ref.state_dict()._metadata) == {"": {"version": 1},
                                                                                       "lin": {"version": 1}}
    kept = ours.state_dict(keep_vars=True)
    assert kept["scale"] is ours.scale and kept["scale"].requires_grad
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got, expected = ours.state_dict({}, "pre.", True), ref.state_dict({}, "pre.", True)
    assert [w.category for w in caught] == [FutureWarning, FutureWarning]
    assert list(got) == list(expected) == ["pre.scale", "pre.lin.weight", "pre.lin.bias"]
    assert got["pre.scale"] is ours.scale and type(expected["pre.scale"]) is torch.nn.Parameter
    values = {"scale": [5.0], "lin.weight": [[1.0, 2.0]], "lin.bias": [0.5]}
    ref.load_state_dict({k: torch.tensor(v) for k, v in values.items()})
    ours.load_state_dict({k: tdx.tensor(v, device=device) for k, v in values.items()})
    assert ours.scale.shape == ref.scale.shape == () and ours.scale.item() == ref.scale.item() == 5.0
    values["scale"] = [5.0, 6.0]
    with pytest.raises(RuntimeError, match="size mismatch for scale") as info:
        ours.load_state_dict({k: tdx.tensor(v, device=device) for k, v in values.items()})
    assert isinstance(info.value, tdx.TdxError)


def _with_extra(lib):
    class Counter(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = lib.nn.Linear(1, 1)
            self.steps = 0

        def get_extra_state(self):
            return {"steps": self.steps}

        def set_extra_state(self, state):
            self.steps = state["steps"]

    outer = lib.nn.Sequential(Counter())
    outer[0].steps = 7
    return outer


def test_state_dict_extra_state_and_two_positional_args(device):
    ref, ours = _with_extra(torch), _with_extra(tdx).to(device)
    got, expected = ours.state_dict(), ref.state_dict()
    assert list(got) == list(expected) == ["0._extra_state", "0.lin.weight", "0.lin.bias"]
    assert got["0._extra_state"] == expected["0._extra_state"] == {"steps": 7}
    fresh = _with_extra(tdx).to(device)
    fresh[0].steps = 0
    fresh.load_state_dict(got)
    assert fresh[0].steps == 7
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        assert list(ours.state_dict({}, "m.")) == list(ref.state_dict({}, "m.")) == [
            "m.0._extra_state", "m.0.lin.weight", "m.0.lin.bias"]


def test_mlx_rows_hold_on_a_device_without_float64():
    """The MLX rows of the helper-heavy modules pass with the capabilities an MLX GPU declares (no float64):
    a helper that builds its tensors through float64 on the device would fail them all there, as it once
    failed about 2,700 rows of an MLX GPU."""
    pytest.importorskip("mlx.core")
    files = ["tests/test_linalg.py", "tests/test_elementwise.py", "tests/test_nn_layers.py", "tests/test_special.py",
             "tests/test_reduce_shape.py"]
    out = subprocess.run([sys.executable, "-m", "pytest", "--mlx-as-gpu", "--tdx-devices=mlx:cpu", "-q", "-n", "0",
                          "-p", "no:cacheprovider", "-k", "mlx and not test_mlx_eig_float64_raises", *files],
                         capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert out.returncode == 0, out.stdout[-3000:]
    assert " passed" in out.stdout.splitlines()[-1], out.stdout[-500:]
