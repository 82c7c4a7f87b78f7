"""tdx.optim.swa_utils against torch.optim.swa_utils: AveragedModel (SWA mean, EMA through
avg_fn and multi_avg_fn, use_buffers), SWALR's lr sequence, update_bn's statistics."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import tdx
import tdx.nn as xnn
import tdx.optim as toptim
from tdx.optim import swa_utils as xswa
from torch.optim import swa_utils as tswa


def _make(lib, nn, device=None):
    kw = {} if device is None else {"device": device}

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(lib.zeros(3, 2, **kw))
            self.b = nn.Parameter(lib.zeros(2, **kw))
            self.register_buffer("count", lib.zeros(2, **kw))

        def forward(self, x):
            return x @ self.w + self.b

    return Net()


def _assign(model, values, lib, step):
    with lib.no_grad():
        model.w.copy_(lib.tensor(values["w"] * (1 + step)))
        model.b.copy_(lib.tensor(values["b"] - step))
        model.count.add_(1.0)


def _to(x, device):
    return x if device == "cpu" else x.to(device)


@pytest.mark.parametrize("kind", ["swa", "ema_multi", "ema_avg", "swa_buffers"])
def test_averaged_model_matches_torch(device, kind):
    rng = np.random.default_rng(0)
    values = {"w": rng.standard_normal((3, 2)).astype(np.float32), "b": rng.standard_normal(2).astype(np.float32)}
    xm, tm = _make(tdx, xnn).to(device), _make(torch, torch.nn)
    kwargs = {
        "swa": ({}, {}),
        "ema_multi": ({"multi_avg_fn": xswa.get_ema_multi_avg_fn(0.9)}, {"multi_avg_fn": tswa.get_ema_multi_avg_fn(0.9)}),
        "ema_avg": ({"avg_fn": xswa.get_ema_avg_fn(0.8)}, {"avg_fn": tswa.get_ema_avg_fn(0.8)}),
        "swa_buffers": ({"use_buffers": True}, {"use_buffers": True}),
    }[kind]
    xa, ta = xswa.AveragedModel(xm, **kwargs[0]), tswa.AveragedModel(tm, **kwargs[1])
    assert list(xa.state_dict()) == list(ta.state_dict())
    for step in range(6):
        with tdx.no_grad():
            xm.w.copy_(_to(tdx.tensor(values["w"] * (1 + step)), device))
            xm.b.copy_(_to(tdx.tensor(values["b"] - step), device))
            xm.count.add_(1.0)
        _assign(tm, values, torch, step)
        xa.update_parameters(xm)
        ta.update_parameters(tm)
    assert xa.n_averaged.item() == ta.n_averaged.item() and xa.n_averaged.dtype == tdx.int64
    for (xk, xv), (tk, tv) in zip(xa.state_dict().items(), ta.state_dict().items()):
        assert xk == tk
        if device == "cpu":
            assert np.array_equal(xv.numpy(force=True), tv.numpy()), xk
        else:
            np.testing.assert_allclose(xv.numpy(force=True), tv.numpy(), rtol=1e-6, atol=1e-6, err_msg=xk)
    out = xa(_to(tdx.ones(4, 3), device))
    np.testing.assert_allclose(out.numpy(force=True), ta(torch.ones(4, 3)).detach().numpy(), rtol=1e-6)


def test_averaging_fn_validation():
    with pytest.raises(ValueError, match="Invalid decay value 1.5") as info:
        xswa.get_ema_avg_fn(1.5)
    assert isinstance(info.value, tdx.TdxError)
    with pytest.raises(ValueError, match="Invalid decay value -0.1"):
        xswa.get_ema_multi_avg_fn(-0.1)
    with pytest.raises(ValueError, match="Only one of avg_fn and multi_avg_fn"):
        xswa.AveragedModel(_make(tdx, xnn), avg_fn=xswa.get_swa_avg_fn(), multi_avg_fn=xswa.get_swa_multi_avg_fn())


@pytest.mark.parametrize("strategy,anneal_epochs", [("cos", 10), ("linear", 7), ("cos", 0)])
def test_swalr_matches_torch(device, strategy, anneal_epochs):
    xw = tdx.ones(2, device=device, requires_grad=True)
    tw = torch.ones(2, requires_grad=True)
    xo = toptim.SGD([{"params": [xw]}, {"params": [tdx.ones(1, device=device, requires_grad=True)], "lr": 0.3}],
                    lr=0.5)
    to = torch.optim.SGD([{"params": [tw]}, {"params": [torch.ones(1, requires_grad=True)], "lr": 0.3}], lr=0.5)
    xs = xswa.SWALR(xo, swa_lr=[0.05, 0.01], anneal_epochs=anneal_epochs, anneal_strategy=strategy)
    ts = tswa.SWALR(to, swa_lr=[0.05, 0.01], anneal_epochs=anneal_epochs, anneal_strategy=strategy)
    assert xs.get_last_lr() == ts.get_last_lr()
    for _ in range(20):
        xo.step()
        to.step()
        xs.step()
        ts.step()
        assert xs.get_last_lr() == ts.get_last_lr()
    assert set(xs.state_dict()) == set(ts.state_dict())
    with pytest.raises(ValueError, match="anneal_strategy must be one of"):
        xswa.SWALR(xo, swa_lr=0.1, anneal_strategy="step")
    with pytest.raises(ValueError, match="anneal_epochs must be equal or greater than 0, got -1"):
        xswa.SWALR(xo, swa_lr=0.1, anneal_epochs=-1)


class _BatchNormLike(xnn.Module):
    """torch's _BatchNorm interface over one feature axis, written with tdx ops (the test's BN)."""

    def __init__(self, features, device):
        super().__init__()
        self.momentum = 0.1
        self.register_buffer("running_mean", tdx.zeros(features, device=device))
        self.register_buffer("running_var", tdx.ones(features, device=device))
        self.register_buffer("num_batches_tracked", tdx.tensor(0, device=device))

    def reset_running_stats(self):
        with tdx.no_grad():
            self.running_mean.zero_()
            self.running_var.fill_(1.0)
            self.num_batches_tracked.zero_()

    def forward(self, x):
        if self.training:
            with tdx.no_grad():
                self.num_batches_tracked.add_(1)
                f = 1.0 / self.num_batches_tracked.item() if self.momentum is None else self.momentum
                self.running_mean.mul_(1 - f).add_(x.mean(0), alpha=f)
                self.running_var.mul_(1 - f).add_(x.var(0, unbiased=True), alpha=f)
        return x


def test_update_bn_matches_torch(device):
    rng = np.random.default_rng(3)
    batches = [rng.standard_normal((8, 4)).astype(np.float32) * (i + 1) for i in range(5)]
    tmodel = torch.nn.Sequential(torch.nn.BatchNorm1d(4))
    tmodel.eval()
    tswa.update_bn([(torch.tensor(b), 0) for b in batches], tmodel)
    bn = _BatchNormLike(4, device)
    xmodel = xnn.Sequential(bn)
    xmodel.eval()
    xswa.update_bn([(tdx.tensor(b, device=device), 0) for b in batches], xmodel)
    assert bn.momentum == 0.1 and not xmodel.training
    np.testing.assert_allclose(bn.running_mean.numpy(force=True), tmodel[0].running_mean.numpy(), rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(bn.running_var.numpy(force=True), tmodel[0].running_var.numpy(), rtol=1e-5)
    assert bn.num_batches_tracked.item() == tmodel[0].num_batches_tracked.item()
    xswa.update_bn([tdx.ones(2, 4, device=device)], xnn.Sequential(xnn.Identity()))  # no BN: nothing to do
