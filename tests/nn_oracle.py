"""Helpers for the nn layer and loss tests: run one computation through tdx on a device and through
torch on CPU (or on the device's torch twin, ``oracle=``) from the same arrays, and compare the outputs
and the gradients of every input."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch

import tdx
from conftest import BUILTINS
from tdx.testing.parity import TOLERANCE_TABLE, assert_close

TOL = {d: dict(zip(("rtol", "atol"), tol)) for d, tol in TOLERANCE_TABLE["module"].items()}


# torch 2.13 (which tdx follows) prints ``bias=`` in its norm layers' reprs; an older torch (2.11) has no
# such argument there and prints none
_NORM_BIAS_IN_REPR = "bias=" in repr(torch.nn.LayerNorm(1))
_NORM_LINE = re.compile(r"\b(LayerNorm|GroupNorm|(Sync)?BatchNorm\dd|SyncBatchNorm|InstanceNorm\dd)\(")


def torch_repr(module) -> str:
    """``repr(module)`` of a tdx module as the installed torch prints the same module: torch 2.13's (tdx's own),
    without the norm layers' ``, bias=...`` where the installed torch predates it."""
    text = repr(module)
    if _NORM_BIAS_IN_REPR:
        return text
    return "\n".join(re.sub(r", bias=(True|False)", "", line) if _NORM_LINE.search(line) else line
                     for line in text.split("\n"))


def leaf(arr, device, dtype, grad, oracle="cpu"):
    """(tdx leaf on ``device``, torch leaf on ``oracle``) of ``arr``; floats become ``dtype``, ints stay int64."""
    arr = np.asarray(arr)
    if arr.dtype.kind in "iub":
        return tdx.tensor(arr, device=device), torch.tensor(arr, device=oracle)
    x = tdx.tensor(arr, dtype=getattr(tdx, dtype), device=device).requires_grad_(grad)
    t = torch.tensor(arr).to(getattr(torch, dtype)).to(oracle).requires_grad_(grad)
    return x, t


def compare(device, dtype, fn, arrays, grad=None, tol=None, seed=None, oracle="cpu"):
    """``fn(module, *tensors)`` on tdx (``device``) and on torch (on ``oracle``: CPU, or the device's
    ``torch_twin`` where the numbers promised are that device's kernels'): equal values, and equal gradients
    of the floating point inputs at the positions in ``grad`` (all floating ones when None) for a
    random upstream gradient. Returns the tdx result."""
    tol = tol or TOL[dtype]
    floats = [i for i, a in enumerate(arrays) if np.asarray(a).dtype.kind == "f"]
    grad = floats if grad is None else grad
    pairs = [leaf(a, device, dtype, i in grad, oracle) for i, a in enumerate(arrays)]
    xs, ts = [p[0] for p in pairs], [p[1] for p in pairs]
    if seed is not None:
        torch.manual_seed(seed)
    expected = fn(torch, *ts)
    if seed is not None:
        tdx.manual_seed(seed)
    got = fn(tdx, *xs)
    assert_close(got, expected, **tol)
    if grad and expected.requires_grad:
        up = np.random.default_rng(1).uniform(-1, 1, size=tuple(expected.shape))
        (expected * torch.tensor(up).to(expected.dtype).to(oracle)).sum().backward()
        (got * tdx.tensor(up, dtype=got.dtype, device=device)).sum().backward()
        for i in grad:
            if ts[i].grad is None:
                assert xs[i].grad is None or float(xs[i].grad.abs().sum().item()) == 0, f"input {i}"
            else:
                assert_close(xs[i].grad, ts[i].grad, msg=f"grad of input {i}", **tol)
    return got


def raises_like(tdx_fn, torch_fn):
    """torch raises a builtin error, and tdx a TdxError of the same builtin kind."""
    with pytest.raises(BUILTINS) as expected:
        torch_fn()
    kind = next(b for b in BUILTINS if isinstance(expected.value, b))
    with pytest.raises(kind) as got:
        tdx_fn()
    assert isinstance(got.value, tdx.TdxError), f"raised untyped {got.value!r}"


def module_check(device, dtype, build, arrays, grad=None, tol=None, train=True, oracle="cpu"):
    """``build(m)`` on tdx and torch (moved to ``oracle``, CPU by default); torch's parameters and buffers
    loaded into the tdx module with ``load_state_dict`` after ``module.to(device)``; then equal ``repr``,
    outputs, input gradients and parameter gradients (for a random upstream gradient). Returns (tdx module,
    torch module)."""
    tol = tol or TOL[dtype]
    try:
        ref = build(torch)
    except TypeError as err:  # an argument of torch 2.13 (which tdx follows) that the installed torch lacks
        if "unexpected keyword argument" not in str(err):
            raise
        pytest.skip(f"the installed torch {torch.__version__} has no oracle for this module: {err}")
    ref = ref.to(getattr(torch, dtype)).to(oracle)
    mod = build(tdx).to(device).to(getattr(tdx, dtype))
    assert torch_repr(mod) == repr(ref)
    mod.load_state_dict({k: tdx.tensor(v.detach().cpu().numpy(), device=device)
                         for k, v in ref.state_dict().items()})
    ref.train(train)
    mod.train(train)
    floats = [i for i, a in enumerate(arrays) if np.asarray(a).dtype.kind == "f"]
    grad = floats if grad is None else grad
    pairs = [leaf(a, device, dtype, i in grad, oracle) for i, a in enumerate(arrays)]
    expected = ref(*[p[1] for p in pairs])
    got = mod(*[p[0] for p in pairs])
    assert_close(got, expected, **tol)
    if expected.requires_grad:
        up = np.random.default_rng(1).uniform(-1, 1, size=tuple(expected.shape))
        (expected * torch.tensor(up).to(expected.dtype).to(oracle)).sum().backward()
        (got * tdx.tensor(up, dtype=got.dtype, device=device)).sum().backward()
        for i in grad:
            assert_close(pairs[i][0].grad, pairs[i][1].grad, msg=f"grad of input {i}", **tol)
        params = dict(mod.named_parameters())
        for name, p in ref.named_parameters():
            if p.grad is None:
                assert params[name].grad is None or float(params[name].grad.abs().sum().item()) == 0, name
            else:
                assert_close(params[name].grad, p.grad, msg=f"grad of {name}", **tol)
    return mod, ref
