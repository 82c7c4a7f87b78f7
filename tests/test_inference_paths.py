"""The per-call paths a model takes at inference (``no_grad``, ``eval``), against torch on CPU: ``nn.Linear``
and ``F.linear`` reach the executor's kernel at once where nothing is recorded (MLX: ``linear_last`` without
the tape), and give torch's values there, before and after a backward pass has made the tape active, and
torch's gradients where grad mode is on."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import tdx
from tdx.testing.parity import assert_close

CASES = [((3, 8), True), ((2, 5, 8), True), ((3, 8), False), ((1, 1, 8), True)]


def _pair(device, bias: bool):
    torch.manual_seed(0)
    ref = torch.nn.Linear(8, 4, bias=bias)
    mine = tdx.nn.Linear(8, 4, bias=bias).to(device)
    mine.load_state_dict({k: tdx.tensor(v.detach().numpy()) for k, v in ref.state_dict().items()})
    return mine, ref


@pytest.mark.parametrize("shape,bias", CASES, ids=[f"{s}-{'bias' if b else 'no bias'}" for s, b in CASES])
@pytest.mark.parametrize("after_backward", [False, True], ids=["fresh", "after a backward pass"])
def test_linear_under_no_grad(device, shape, bias, after_backward):
    mine, ref = _pair(device, bias)
    x_np = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    x = tdx.tensor(x_np, device=device)
    if after_backward:  # the tape is active from here on (MLX): no_grad must still record nothing
        mine(x).sum().backward()
    with tdx.no_grad():
        got, got_f = mine(x), tdx.nn.functional.linear(x, mine.weight, mine.bias)
    want = ref(torch.from_numpy(x_np)).detach()
    assert not got.requires_grad and not got_f.requires_grad
    assert_close(got, want)
    assert_close(got_f, want)


@pytest.mark.parametrize("bias", [True, False])
def test_linear_records_where_grad_is_on(device, bias):
    mine, ref = _pair(device, bias)
    x_np = np.random.default_rng(2).standard_normal((3, 8)).astype(np.float32)
    x = tdx.tensor(x_np, device=device, requires_grad=True)
    xt = torch.from_numpy(x_np).requires_grad_()
    (mine(x) ** 2).sum().backward()
    (ref(xt) ** 2).sum().backward()
    assert_close(x.grad, xt.grad)
    assert_close(mine.weight.grad, ref.weight.grad)
    if bias:
        assert_close(mine.bias.grad, ref.bias.grad)
