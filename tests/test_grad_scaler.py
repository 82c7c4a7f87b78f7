"""``GradScaler`` (``torch.amp.GradScaler``, ``torch.cuda.amp.GradScaler``) on every device against torch on CPU:
the scale sequence through overflows, backoffs and growths, the parameters (bit for bit on cpu), skipped steps,
``state_dict``/``load_state_dict``, ``enabled=False`` and the out-of-order calls torch refuses."""

from __future__ import annotations

import math
import pickle
import warnings

import numpy as np
import pytest
import torch

import tdx
from tdx.testing.parity import assert_close
from test_amp import pinned

INF_AT = {2: math.inf, 5: math.nan}


def _loop(m, device, steps=9, **kw):
    rng = np.random.default_rng(0)
    w0 = rng.standard_normal((3, 4)).astype(np.float32)
    x = rng.standard_normal((6, 4)).astype(np.float32)
    y = rng.standard_normal((6, 3)).astype(np.float32)
    lin = m.nn.Linear(4, 3)
    with m.no_grad():
        lin.weight.copy_(m.tensor(w0))
        lin.bias.zero_()
    opt = m.optim.SGD(lin.parameters(), lr=0.05, momentum=0.9)
    scaler = m.amp.GradScaler("cpu", init_scale=2.0 ** 10, growth_interval=3, **kw)
    seen = []
    for step in range(steps):
        opt.zero_grad()
        loss = m.nn.functional.mse_loss(lin(m.tensor(x)), m.tensor(y))
        scaler.scale(loss).backward()
        if step in INF_AT:
            with m.no_grad():
                lin.weight.grad[0, 1] = INF_AT[step]
        if step == 4:
            scaler.unscale_(opt)
            m.nn.utils.clip_grad_norm_(lin.parameters(), 0.5)
        before = lin.weight.detach().clone()
        scaler.step(opt)
        scaler.update()
        seen.append((scaler.get_scale(), scaler._get_growth_tracker(), bool((lin.weight != before).any())))
    return seen, lin.weight.detach(), scaler


def test_scale_sequence_and_parameters_match_torch(device):
    want, w_want, ref = _loop(torch, None)
    with pinned(device):
        got, w_got, scaler = _loop(tdx, device)
    assert got == want
    scales = [1024.0] + [s for s, _, _ in got]
    assert any(b < a for a, b in zip(scales, scales[1:])) and any(b > a for a, b in zip(scales, scales[1:]))
    assert [stepped for _, _, stepped in got].count(False) == len(INF_AT)  # the inf/NaN steps were skipped
    if device == "cpu":
        assert np.array_equal(w_got.numpy(), w_want.numpy())
    else:
        assert_close(w_got, w_want, rtol=1e-5, atol=1e-6)
    assert scaler.state_dict() == ref.state_dict()


def test_state_dict_round_trip_and_disabled(device):
    with pinned(device):
        _, _, scaler = _loop(tdx, device, steps=4)
        other = tdx.amp.GradScaler("cpu")
        other.load_state_dict(scaler.state_dict())
        assert other.state_dict() == scaler.state_dict() and other.get_scale() == scaler.get_scale()
        again = pickle.loads(pickle.dumps(scaler))
        assert again.state_dict() == scaler.state_dict()
        got, _, off = _loop(tdx, device, steps=3, enabled=False)
        x = tdx.ones(2)
        assert off.scale(x) is x and not off.is_enabled() and off.get_scale() == 1.0 and off.state_dict() == {}
        with pytest.raises(RuntimeError):
            other.load_state_dict({})
    want, _, _ = _loop(torch, None, steps=3, enabled=False)
    assert got == want


def test_out_of_order_calls_are_refused(device):
    with pinned(device):
        lin = tdx.nn.Linear(2, 1)
        opt = tdx.optim.SGD(lin.parameters(), lr=0.1)
        scaler = tdx.amp.GradScaler("cpu")
        with pytest.raises(AssertionError):
            scaler.unscale_(opt)  # no scale() yet
        scaler.scale(lin(tdx.ones(1, 2)).sum()).backward()
        scaler.unscale_(opt)
        with pytest.raises(RuntimeError, match="already been called"):
            scaler.unscale_(opt)
        scaler.step(opt)
        with pytest.raises(RuntimeError, match="step"):
            scaler.step(opt)
        with pytest.raises(RuntimeError, match="Closure"):
            scaler.step(opt, closure=lambda: None)
        scaler.update(256.0)
        assert scaler.get_scale() == 256.0
        scaler.update(tdx.tensor([8.0]))
        assert scaler.get_scale() == 8.0
        for bad in ({"growth_factor": 0.5}, {"growth_factor": 1.0}, {"backoff_factor": 1.0}):
            with pytest.raises(AssertionError):  # torch asserts these
                torch.amp.GradScaler("cpu", **bad)
            with pytest.raises(AssertionError) as info:
                tdx.amp.GradScaler("cpu", **bad)
            assert isinstance(info.value, tdx.TdxError)
        tdx.amp.GradScaler("cpu", backoff_factor=0.0)  # torch checks only backoff_factor < 1.0
        with pytest.raises(ValueError):
            scaler.scale(3)  # neither a Tensor nor an iterable (any other iterable is mapped lazily, as torch's)
        assert type(scaler.scale("loss")) is type(torch.amp.GradScaler("cpu").scale("loss")) is map


def test_cuda_grad_scaler_without_cuda(device):
    """Without CUDA the deprecated ``torch.cuda.amp.GradScaler`` warns twice and disables itself; with CUDA
    (torch's answer decides) it is enabled and only the deprecation warns."""
    answers = []
    for m in (torch, tdx):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            s = m.cuda.amp.GradScaler(enabled=True)
        answers.append((s.is_enabled(), {w.category for w in caught}))
        assert m.cuda.amp.GradScaler(enabled=False).get_scale() == 1.0
    cuda = torch.cuda.is_available()
    assert answers[0] == (cuda, {FutureWarning} if cuda else {FutureWarning, UserWarning})
    assert answers[1] == answers[0]


def _fp16_loop(m):
    rng = np.random.default_rng(1)
    net = m.nn.Sequential(m.nn.Linear(16, 16), m.nn.ReLU(), m.nn.Linear(16, 4))
    with m.no_grad():
        for p in net.parameters():
            p.copy_(m.tensor(rng.uniform(-0.25, 0.25, size=tuple(p.shape)).astype(np.float32)))
    opt = m.optim.Adam(net.parameters(), 1e-2)
    scaler = m.amp.GradScaler("cpu", init_scale=2.0 ** 20, growth_interval=4)
    x = m.tensor(rng.standard_normal((32, 16)).astype(np.float32))
    y = m.tensor(rng.standard_normal((32, 4)).astype(np.float32))
    seen = []
    for _ in range(10):
        with m.autocast("cpu", dtype=m.float16):
            loss = m.nn.functional.mse_loss(net(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        opt.zero_grad()
        seen.append((scaler.get_scale(), loss.item()))
    return seen


def test_float16_loop_overflows_back_off_and_train(device):
    """float16 gradients overflow at a 2**20 scale: the first steps are skipped and the scale backs off, as
    torch's; then the loop trains to torch's losses (bit for bit on cpu)."""
    from test_amp import _cpu_oracle

    _cpu_oracle(device)
    want = _fp16_loop(torch)
    with pinned(device):
        got = _fp16_loop(tdx)
    assert [s for s, _ in got] == [s for s, _ in want]
    assert want[0][0] < 2.0 ** 20
    if device == "cpu":
        assert got == want
    else:
        assert [l for _, l in got] == pytest.approx([l for _, l in want], rel=2e-2)
