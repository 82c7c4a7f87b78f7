"""tdx.optim.lr_scheduler against torch.optim.lr_scheduler: every scheduler's learning-rate
(and momentum) sequence over 100 steps equals torch's exactly, state dicts hold the same
keys and resume identically, and the step-order warning fires as torch's."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch

import tdx
import tdx.optim as toptim
from tdx.optim import lr_scheduler as xls
from torch.optim import lr_scheduler as tls

STEPS = 100


def _opts(device, opt_name="SGD", **kw):
    kw = kw or {"lr": 0.1, "momentum": 0.9}
    xw = [tdx.ones(2, device=device, requires_grad=True), tdx.ones(3, device=device, requires_grad=True)]
    tw = [torch.ones(2, requires_grad=True), torch.ones(3, requires_grad=True)]
    xo = getattr(toptim, opt_name)([{"params": [xw[0]]}, {"params": [xw[1]], "lr": kw["lr"] * 0.5}], **kw)
    to = getattr(torch.optim, opt_name)([{"params": [tw[0]]}, {"params": [tw[1]], "lr": kw["lr"] * 0.5}], **kw)
    return xo, to


def _lam(epoch):
    return 0.97 ** epoch + 0.01 * (epoch % 3)


def _mul(epoch):
    return 0.99 if epoch % 2 else 1.001


SCHEDULERS = {
    "LambdaLR": lambda m, o: m.LambdaLR(o, _lam),
    "LambdaLR-list": lambda m, o: m.LambdaLR(o, [_lam, lambda e: 1.0 / (e + 1)]),
    "MultiplicativeLR": lambda m, o: m.MultiplicativeLR(o, _mul),
    "StepLR": lambda m, o: m.StepLR(o, step_size=7, gamma=0.7),
    "MultiStepLR": lambda m, o: m.MultiStepLR(o, milestones=[10, 30, 30, 75], gamma=0.3),
    "ConstantLR": lambda m, o: m.ConstantLR(o, factor=0.3, total_iters=13),
    "LinearLR": lambda m, o: m.LinearLR(o, start_factor=0.1, end_factor=0.9, total_iters=37),
    "ExponentialLR": lambda m, o: m.ExponentialLR(o, gamma=0.97),
    "PolynomialLR": lambda m, o: m.PolynomialLR(o, total_iters=60, power=2.3),
    "CosineAnnealingLR": lambda m, o: m.CosineAnnealingLR(o, T_max=17, eta_min=0.001),
    "CosineAnnealingWarmRestarts": lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=7, T_mult=2, eta_min=1e-4),
    "CyclicLR-triangular": lambda m, o: m.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=9, step_size_down=5),
    "CyclicLR-triangular2": lambda m, o: m.CyclicLR(o, base_lr=[0.01, 0.02], max_lr=0.2, step_size_up=6,
                                                     mode="triangular2"),
    "CyclicLR-exp_range": lambda m, o: m.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=8, mode="exp_range",
                                                   gamma=0.98, cycle_momentum=False),
    "OneCycleLR-cos": lambda m, o: m.OneCycleLR(o, max_lr=0.5, total_steps=STEPS + 1),
    "OneCycleLR-linear-3": lambda m, o: m.OneCycleLR(o, max_lr=[0.5, 0.3], epochs=4, steps_per_epoch=26,
                                                      anneal_strategy="linear", three_phase=True, pct_start=0.25),
    "SequentialLR": lambda m, o: m.SequentialLR(o, [m.LinearLR(o, start_factor=0.2, total_iters=10),
                                                    m.ExponentialLR(o, gamma=0.95),
                                                    m.CosineAnnealingLR(o, T_max=20)], milestones=[10, 50]),
    "ChainedScheduler": lambda m, o: m.ChainedScheduler([m.ConstantLR(o, factor=0.5, total_iters=20),
                                                         m.ExponentialLR(o, gamma=0.98),
                                                         m.StepLR(o, step_size=15, gamma=0.5)]),
}


def _momenta(opt):
    return [(g.get("momentum"), g.get("betas")) for g in opt.param_groups]


@pytest.mark.parametrize("opt_name", ["SGD", "Adam"])
@pytest.mark.parametrize("name", sorted(SCHEDULERS))
def test_lr_sequence_matches_torch(device, name, opt_name):
    kw = {"lr": 0.1, "momentum": 0.9} if opt_name == "SGD" else {"lr": 0.1}
    xo, to = _opts(device, opt_name, **kw)
    xs, ts = SCHEDULERS[name](xls, xo), SCHEDULERS[name](tls, to)
    assert xs.get_last_lr() == ts.get_last_lr()
    for i in range(STEPS):
        xo.step()
        to.step()
        xs.step()
        ts.step()
        assert xs.get_last_lr() == ts.get_last_lr(), f"step {i}"
        assert [g["lr"] for g in xo.param_groups] == [g["lr"] for g in to.param_groups]
        assert _momenta(xo) == _momenta(to), f"momentum at step {i}"
    assert getattr(xs, "last_epoch", None) == getattr(ts, "last_epoch", None)


def test_reduce_lr_on_plateau_matches_torch(device):
    xo, to = _opts(device)
    metrics = [1.0 / (i + 1) if i < 20 else 0.05 + 0.001 * math.sin(i) for i in range(STEPS)]
    for kw in (dict(), dict(mode="max", factor=0.5, patience=2, threshold=0.1, threshold_mode="abs", cooldown=3,
                            min_lr=[0.01, 0.001])):
        xo, to = _opts(device)
        xs, ts = xls.ReduceLROnPlateau(xo, **kw), tls.ReduceLROnPlateau(to, **kw)
        for m in metrics:
            xs.step(tdx.tensor(m, device=device))
            ts.step(torch.tensor(m))
            assert xs.get_last_lr() == ts.get_last_lr()
            assert xs.num_bad_epochs == ts.num_bad_epochs and xs.best == ts.best
        assert xs.state_dict().keys() == ts.state_dict().keys()


@pytest.mark.parametrize("name", ["StepLR", "CosineAnnealingLR", "OneCycleLR-cos", "CyclicLR-triangular2",
                                  "SequentialLR", "LambdaLR", "CosineAnnealingWarmRestarts"])
def test_state_dict_resume_matches_torch(device, name):
    xo, to = _opts(device)
    xs, ts = SCHEDULERS[name](xls, xo), SCHEDULERS[name](tls, to)
    for _ in range(23):
        xo.step()
        to.step()
        xs.step()
        ts.step()
    xsd, tsd = xs.state_dict(), ts.state_dict()
    assert set(xsd) == set(tsd)
    # resume in fresh objects from the other side's state (plain Python values cross as they are)
    xo2, to2 = _opts(device)
    xo2.load_state_dict(_to_tdx_sd(to.state_dict(), device))
    to2.load_state_dict(_to_torch_sd(xo.state_dict()))
    xs2, ts2 = SCHEDULERS[name](xls, xo2), SCHEDULERS[name](tls, to2)
    xs2.load_state_dict(tsd)
    ts2.load_state_dict(xsd)
    for i in range(30):
        xo2.step()
        to2.step()
        xs2.step()
        ts2.step()
        assert xs2.get_last_lr() == ts2.get_last_lr(), f"step {i} after resume"


def _to_torch_sd(obj):
    if isinstance(obj, tdx.Tensor):
        return torch.from_numpy(np.array(obj.numpy(force=True)))
    if isinstance(obj, dict):
        return {k: _to_torch_sd(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(_to_torch_sd(v) for v in obj)
    return obj


def _to_tdx_sd(obj, device):
    if isinstance(obj, torch.Tensor):
        return tdx.tensor(obj.numpy().copy(), device=device)
    if isinstance(obj, dict):
        return {k: _to_tdx_sd(v, device) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(_to_tdx_sd(v, device) for v in obj)
    return obj


def test_closed_form_with_epoch_matches_torch(device):
    for name in ("StepLR", "MultiStepLR", "ExponentialLR", "CosineAnnealingLR", "PolynomialLR", "LinearLR",
                 "ConstantLR", "CosineAnnealingWarmRestarts"):
        xo, to = _opts(device)
        xs, ts = SCHEDULERS[name](xls, xo), SCHEDULERS[name](tls, to)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for epoch in (3, 10, 4.5 if name == "CosineAnnealingWarmRestarts" else 4, 40, 99):
                xo.step()
                to.step()
                xs.step(epoch)
                ts.step(epoch)
                assert xs.get_last_lr() == ts.get_last_lr(), (name, epoch)


def test_step_order_warning(device):
    xo, _ = _opts(device)
    sched = xls.StepLR(xo, step_size=2)
    with pytest.warns(UserWarning, match="before `optimizer.step\\(\\)`"):
        sched.step()
    xo2, _ = _opts(device)
    sched2 = xls.StepLR(xo2, step_size=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        xo2.step()
        sched2.step()
    with pytest.warns(UserWarning, match="get_last_lr"):
        sched2.get_lr()


def test_errors(device):
    xo, _ = _opts(device)
    with pytest.raises(TypeError, match="is not an Optimizer") as info:
        xls.StepLR(object(), step_size=2)
    assert isinstance(info.value, tdx.TdxError)
    with pytest.raises(KeyError, match="initial_lr") as info:
        xls.StepLR(xo, step_size=2, last_epoch=3)
    assert isinstance(info.value, tdx.TdxError)
    with pytest.raises(ValueError, match="Expected 2 lr_lambdas, but got 3"):
        xls.LambdaLR(xo, [_lam] * 3)
    with pytest.raises(ValueError, match="Factor should be < 1.0"):
        xls.ReduceLROnPlateau(xo, factor=2.0)
    with pytest.raises(ValueError, match="total_steps"):
        xls.OneCycleLR(xo, max_lr=0.1)
    with pytest.raises(ValueError, match="Expected positive integer T_0, but got 0"):
        xls.CosineAnnealingWarmRestarts(xo, T_0=0)
    with pytest.raises(ValueError, match="number of milestone points"):
        xls.SequentialLR(xo, [xls.StepLR(xo, 2), xls.StepLR(xo, 3)], milestones=[])
    with pytest.raises(ValueError, match="ReduceLROnPlateau"):
        xls.ChainedScheduler([xls.ReduceLROnPlateau(xo)])
    ad, _ = _opts(device, "Adagrad", lr=0.1)
    with pytest.raises(ValueError, match="momentum or beta1"):
        xls.CyclicLR(ad, base_lr=0.01, max_lr=0.1)
    sched = xls.OneCycleLR(xo, max_lr=0.1, total_steps=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sched.step()
        sched.step()
        with pytest.raises(ValueError, match="Tried to step 3 times"):
            sched.step()


def test_private_alias():
    assert xls._LRScheduler is xls.LRScheduler
    assert issubclass(xls.StepLR, xls.LRScheduler)
