"""Guards for behaviours that only a test far from their module checked, or none: frozen parameters
through ``load_state_dict(assign=True)``, complex autograd beyond the FFT, and ``logsumexp`` of rows
that are all ``-inf``. Each compares with torch on CPU, on every device. (On MLX, ``real``/``imag``
dropped the gradient and a complex ``pow`` had the conjugate left out of its derivative.)"""

from __future__ import annotations

import math
import subprocess
import sys
import warnings
from collections import OrderedDict
from pathlib import Path

import numpy as np
import pytest
import torch

import tdx
from tdx.testing import assert_close, tolerance

ROOT = Path(__file__).resolve().parents[1]


def _net(nn):
    net = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    net[0].weight.requires_grad_(False)  # a frozen layer, as fine-tuning freezes a backbone
    net[0].bias.requires_grad = False
    return net


@pytest.mark.parametrize("as_parameters", [False, True], ids=["tensors", "parameters"])
def test_frozen_parameters_stay_frozen_through_assign(device, as_parameters):
    """``load_state_dict(assign=True)`` gives each new Parameter the requires_grad of the one it replaces."""
    ref = _net(torch.nn)
    ours = _net(tdx.nn).to(device)
    state = ref.state_dict()
    if as_parameters:
        state = OrderedDict((k, torch.nn.Parameter(v.clone())) for k, v in state.items())
    ref.load_state_dict(state, assign=True)
    loaded = OrderedDict((k, (tdx.nn.Parameter if as_parameters else lambda x: x)(
        tdx.tensor(v.detach().numpy(), device=device))) for k, v in state.items())
    ours.load_state_dict(loaded, assign=True)
    for (name, p), (_, q) in zip(ours.named_parameters(), ref.named_parameters()):
        assert isinstance(p, tdx.nn.Parameter), name
        assert p.requires_grad == q.requires_grad, name
    assert [n for n, p in ours.named_parameters() if p.requires_grad] == ["2.weight", "2.bias"]
    x = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    ours(tdx.tensor(x, device=device)).sum().backward()
    ref(torch.tensor(x)).sum().backward()
    assert ours[0].weight.grad is None and ours[2].weight.grad is not None
    assert_close(ours[2].weight.grad, ref[2].weight.grad)


COMPLEX_LOSSES = {  # name -> loss(lib, a, b) of two real leaves, through complex intermediates
    "abs of complex": lambda t, a, b: t.complex(a, b).abs().sum(),
    "product with conj": lambda t, a, b: (t.complex(a, b) * t.complex(b, a).conj()).real.sum(),
    "imag of a square": lambda t, a, b: (t.complex(a, b) ** 2).imag.sum(),
    "exp": lambda t, a, b: t.complex(a, b).exp().real.sum(),
    "angle": lambda t, a, b: t.complex(a, b).angle().sum(),
    "matmul": lambda t, a, b: (t.complex(a, b).reshape(2, 3) @ t.complex(b, -a).reshape(3, 2)).abs().sum(),
    "view_as_real": lambda t, a, b: (t.view_as_real(t.complex(a, b) * (1 + 2j)) ** 2).sum(),
    "division": lambda t, a, b: (t.complex(a, b) / t.complex(b + 3, a)).imag.sum(),
    "polar": lambda t, a, b: t.polar(a.abs() + 0.5, b).real.sum(),
    "sum then abs": lambda t, a, b: t.complex(a, b).sum().abs(),
    "complex power": lambda t, a, b: (t.complex(a, b) ** 2.5).real.sum() + (t.complex(a, b) ** 3).abs().sum(),
    "complex exponent": lambda t, a, b: (t.complex(a, b) ** (t.complex(b, a) * 0.5)).imag.sum() + (
        2 ** t.complex(a, b)).imag.sum(),
}


@pytest.mark.parametrize("name", sorted(COMPLEX_LOSSES))
def test_complex_autograd_matches_torch(device, name):
    loss = COMPLEX_LOSSES[name]
    rng = np.random.default_rng(3)
    va, vb = (rng.uniform(-2, 2, 6).astype(np.float32) for _ in range(2))
    a, b = (tdx.tensor(v, device=device, requires_grad=True) for v in (va, vb))
    ta, tb = (torch.tensor(v, requires_grad=True) for v in (va, vb))
    got, expected = loss(tdx, a, b), loss(torch, ta, tb)
    got.backward()
    expected.backward()
    rtol, atol = tolerance(tdx.float32, "gradient")
    assert_close(got, expected.detach(), rtol=rtol, atol=atol)
    assert_close(a.grad, ta.grad, rtol=rtol, atol=atol, msg=f"{name}: d/da")
    assert_close(b.grad, tb.grad, rtol=rtol, atol=atol, msg=f"{name}: d/db")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_logsumexp_of_all_minus_inf_rows(device, dtype):
    """A row of nothing but -inf is -inf (not nan), beside ordinary rows, along either dim and whole."""
    ninf = -math.inf
    values = np.array([[ninf, ninf, ninf], [0.0, 1.0, ninf], [2.0, -3.0, 0.5]])
    x = tdx.tensor(values, dtype=getattr(tdx, dtype), device=device)
    t = torch.tensor(values).to(getattr(torch, dtype))
    for dim in (1, 0, (0, 1)):
        got, expected = tdx.logsumexp(x, dim=dim), torch.logsumexp(t, dim=dim)
        assert got.dtype == getattr(tdx, dtype)
        rtol, atol = tolerance(getattr(tdx, dtype), "reduction")
        assert_close(got, expected, rtol=rtol, atol=atol, msg=f"dim={dim}")
    all_inf = tdx.full((2, 4), ninf, device=device).to(getattr(tdx, dtype))
    assert tdx.logsumexp(all_inf, dim=1).tolist() == [ninf, ninf]
    assert x.logsumexp(1, keepdim=True).shape == (3, 1)
    empty = tdx.zeros(2, 0, device=device).to(getattr(tdx, dtype))
    assert_close(tdx.logsumexp(empty, dim=1), torch.logsumexp(torch.zeros(2, 0).to(getattr(torch, dtype)), dim=1))


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
