"""The per-call paths a model takes at inference (``no_grad``, ``eval``), against torch on CPU: ``nn.Linear``
and ``F.linear`` reach the executor's kernel at once where nothing is recorded (MLX: ``linear_last`` without
the tape), and give torch's values there, before and after a backward pass has made the tape active, and
torch's gradients where grad mode is on."""

from __future__ import annotations

import subprocess
import sys

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


def _used_linear(device):
    """A Linear (300 -> 70) on ``device`` and torch's, after two inference calls on ``device``: on MLX's CPU the
    first product relays the weight out for its products (``linear_last``); (mine, ref, the two outputs, torch's)."""
    torch.manual_seed(0)
    ref = torch.nn.Linear(300, 70)
    mine = tdx.nn.Linear(300, 70).to(device)
    mine.load_state_dict({k: tdx.tensor(v.detach().numpy()) for k, v in ref.state_dict().items()})
    x_np = np.random.default_rng(3).standard_normal((4, 300)).astype(np.float32)
    x = tdx.tensor(x_np, device=device)
    with tdx.no_grad():
        first, second = mine(x), mine(x)
    return mine, ref, first, second, ref(torch.from_numpy(x_np)).detach()


def test_linear_weight_used_at_inference_leaves_as_torch_lays_it_out(device, tmp_path):
    mine, ref, first, second, want = _used_linear(device)
    assert np.array_equal(first.cpu().numpy(), second.cpu().numpy())  # the relaid weight changes no bit
    assert_close(second, want)
    w, w_ref = mine.weight.detach(), ref.weight.detach()
    assert w.numpy().flags.c_contiguous == w_ref.numpy().flags.c_contiguous
    assert np.array_equal(w.numpy(), w_ref.numpy())
    moved = w.to("cpu")
    assert moved.is_contiguous() and moved.view(-1).shape == w_ref.view(-1).shape
    shared = torch.from_dlpack(w)
    assert shared.is_contiguous() == w_ref.is_contiguous() and shared.stride() == w_ref.stride()
    assert torch.equal(shared, w_ref)
    assert mine.weight.data_ptr() != 0
    tdx.save(mine.state_dict(), tmp_path / "linear.pt")
    loaded = torch.load(tmp_path / "linear.pt")
    assert torch.equal(loaded["weight"], w_ref) and torch.equal(loaded["bias"], ref.bias.detach())


@pytest.mark.parametrize("trained", [False, True], ids=["fresh", "after a forward with grad enabled"])
def test_mlx_linear_relays_its_weight_without_a_second_copy(trained):
    """On MLX's CPU the first inference product stores the weight column by column (its ``.T`` row-major: the
    BLAS's fast operand) in place of the old array: the product's bits are the transposed view's, and the memory
    held is still one copy of the weight, also where a forward with grad enabled made a row-major ``w.T`` first."""
    mx = pytest.importorskip("mlx.core")
    from tdx.backends.mlx import _nn
    if not _nn._rows_same_bits(mx.default_stream(mx.cpu)):
        pytest.skip("this CPU's BLAS gives other bits with a row-major operand: weights stay as they are")
    lin = tdx.nn.Linear(1024, 1024).to("mlx:cpu")  # a 4 MiB weight
    x = tdx.tensor(np.random.default_rng(4).standard_normal((3, 1024)).astype(np.float32), device="mlx:cpu")
    if trained:
        mx.eval(lin(x)._n)  # the tape's path: a row-major copy of w.T beside the weight array
    w = lin.weight._n
    plain = mx.add(mx.matmul(x._n, mx.transpose(w)), lin.bias._n)
    mx.eval(plain)
    del w
    before = mx.get_active_memory()
    with tdx.no_grad():
        y = lin(x)
    mx.eval(y._n)
    assert _nn.column_major(lin.weight._n)
    assert np.array_equal(np.array(y._n), np.array(plain))
    del y
    assert mx.get_active_memory() - before < 1 << 20  # not the 4 MiB a kept second copy would hold


@pytest.mark.parametrize("change", ["bias of another size", "float64 weight", "3-D weight", "narrower input"])
def test_linear_checks_follow_a_parameter_changed_after_use(device, change):
    """A Linear used at inference, then given a parameter (or input) torch refuses: tdx refuses it with torch's
    class as well, however the first calls' checks were kept."""
    def run(mod, **kw):
        torch.manual_seed(0)
        lin = mod.nn.Linear(8, 4).to(**kw)
        x = mod.ones(2, 8, **kw)
        with mod.no_grad():
            lin(x)
            lin(x)
            if change == "bias of another size":
                lin.bias = mod.nn.Parameter(mod.zeros(3, **kw))
            elif change == "float64 weight":
                lin.weight = mod.nn.Parameter(lin.weight.double())
            elif change == "3-D weight":
                lin.weight = mod.nn.Parameter(mod.ones(4, 8, 1, **kw))
            else:
                x = mod.ones(2, 7, **kw)
            try:
                return lin(x).shape
            except Exception as err:  # noqa: BLE001 - the class is the result compared
                return type(err).__mro__
    want = run(torch)
    got = run(tdx, device=device)
    if isinstance(want, tuple) and isinstance(want[0], type):
        assert isinstance(got, tuple) and want[0] in got, (got, want)
    else:
        assert tuple(got) == tuple(want)


_THREADS = """
import threading, numpy as np, tdx
lins = [tdx.nn.Linear(64, 64).to("mlx:cpu") for _ in range(4)]
x = tdx.randn(2, 64, device="mlx:cpu")
def work():
    with tdx.no_grad():
        for _ in range(20):
            for lin in lins:
                lin.weight.data = lin.weight.data + 0  # a new weight array: its first product relays it
                lin(x)
threads = [threading.Thread(target=work) for _ in range(4)]
[t.start() for t in threads]
[t.join() for t in threads]
with tdx.no_grad():
    for lin in lins:
        want = x.numpy() @ lin.weight.detach().numpy().T + lin.bias.detach().numpy()
        assert np.allclose(lin(x).numpy(), want, atol=1e-5)
"""


def test_mlx_linear_in_several_threads_relays_without_evaluating():
    """Inference Linears called from several threads at once (each weight array relaid on its first product):
    the relayout evaluates nothing in the calling thread (MLX's stream must not be evaluated from two threads
    at once), so the threads only build graphs; the values are the product's."""
    pytest.importorskip("mlx.core")
    run = subprocess.run([sys.executable, "-X", "faulthandler", "-c", _THREADS], capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]


def test_mlx_training_linear_takes_the_rows_operand_with_the_same_bits(monkeypatch):
    """A training step's Linear on MLX's CPU multiplies by ``w.T`` stored row by row (the BLAS's fast operand, no
    rebinding: its weights are new arrays every step): the loss and every gradient are bit for bit those of the
    transposed view."""
    mx = pytest.importorskip("mlx.core")
    from tdx.backends.mlx import _nn
    if not _nn._rows_same_bits(mx.default_stream(mx.cpu)):
        pytest.skip("this CPU's BLAS gives other bits with a row-major operand: the view is kept")
    made = []
    original = _nn.transposed
    monkeypatch.setattr(_nn, "transposed", lambda w, s, rows=False: made.append(rows) or original(w, s, rows))

    def step(rows: bool):
        monkeypatch.setitem(_nn._ROWS_SAME_BITS, str(mx.default_stream(mx.cpu).device), rows)
        tdx.manual_seed(0)
        model = tdx.nn.Sequential(tdx.nn.Linear(96, 160), tdx.nn.Tanh(), tdx.nn.Linear(160, 8)).to("mlx:cpu")
        x = tdx.tensor(np.random.default_rng(5).standard_normal((33, 96)).astype(np.float32), device="mlx:cpu")
        loss = model(x).square().mean()
        loss.backward()
        return [loss.detach().numpy()] + [p.grad.numpy() for p in model.parameters()]

    plain, rows = step(False), step(True)
    assert any(made)  # the rows operand was asked for
    assert all(np.array_equal(a, b) for a, b in zip(plain, rows))
