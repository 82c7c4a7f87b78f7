"""The layer, activation, normalization, dropout and embedding modules of ``tdx.nn`` and the
functions added to ``tdx.nn.functional`` for them, against torch on CPU, on every device:
forward values, input and parameter gradients (float32 and float64), ``repr``, default
initialisation bit for bit on cpu for the same seed, train/eval behaviour and torch's error
kinds for bad arguments."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import tdx
from nn_oracle import compare, raises_like

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")
DTYPES = ["float32", "float64"]


def F(m):
    return m.nn.functional


def u(*shape, lo=-2.0, hi=2.0, seed=0):
    return np.random.default_rng(seed).uniform(lo, hi, size=shape)


def on(m, device, v, **kw):
    return m.tensor(v, device=device if m is tdx else "cpu", **kw)


# functional additions ----------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag(device, dtype, mode):
    weight = u(10, 3)
    idx2 = np.array([[1, 2, 4, 5], [4, 3, 2, 9], [0, 0, 7, 7]])
    compare(device, dtype, lambda m, w: F(m).embedding_bag(on(m, device, idx2), w, mode=mode), [weight])
    flat = np.array([1, 2, 4, 5, 4, 3, 2, 9, 0, 7])
    offsets = [0, 2, 2, 6]  # an empty bag gives zeros
    compare(device, dtype, lambda m, w: F(m).embedding_bag(on(m, device, flat), w, on(m, device, offsets), mode=mode),
            [weight])
    compare(device, dtype, lambda m, w: F(m).embedding_bag(on(m, device, flat), w, on(m, device, offsets + [10]),
                                                           mode=mode, include_last_offset=True), [weight])
    compare(device, dtype, lambda m, w: F(m).embedding_bag(on(m, device, flat), w, on(m, device, offsets), mode=mode,
                                                           padding_idx=2), [weight])
    if mode == "sum":
        compare(device, dtype, lambda m, w, s: F(m).embedding_bag(on(m, device, flat), w, on(m, device, offsets),
                                                                  mode=mode, per_sample_weights=s),
                [weight, u(10, seed=3)])


def test_embedding_bag_errors(device):
    def call(m, case):
        d = device if m is tdx else "cpu"
        w = m.ones(5, 2, device=d)
        i1 = m.tensor([0, 1, 2], device=d)
        off = m.tensor([0, 2], device=d)
        return [lambda: F(m).embedding_bag(i1, w),
                lambda: F(m).embedding_bag(i1.reshape(1, 3), w, off),
                lambda: F(m).embedding_bag(i1, w, off, mode="median"),
                lambda: F(m).embedding_bag(i1, w, off, mode="mean", per_sample_weights=m.ones(3, device=d)),
                lambda: F(m).embedding_bag(i1, w, m.tensor([1, 2], device=d))][case]()

    for case in range(5):
        raises_like(lambda: call(tdx, case), lambda: call(torch, case))


@pytest.mark.parametrize("dtype", DTYPES)
def test_local_response_norm_and_pdist(device, dtype):
    for shape, size in (((2, 5, 3), 3), ((2, 6, 3, 2), 4), ((1, 3, 2, 2, 2), 1), ((2, 4, 3), 7)):
        compare(device, dtype, lambda m, x: F(m).local_response_norm(x, size, alpha=0.3, beta=0.6, k=1.5),
                [u(*shape)])
    x = u(5, 3)
    x[3] = x[1]  # a zero distance: zero gradient, as torch's
    for p in (2.0, 1.0, 3.0):
        compare(device, dtype, lambda m, a: F(m).pdist(a, p), [x])
    with tdx.device(device):
        raises_like(lambda: F(tdx).local_response_norm(tdx.ones(2, 3), 2),
                    lambda: F(torch).local_response_norm(torch.ones(2, 3), 2))
        raises_like(lambda: F(tdx).pdist(tdx.ones(2, 3, 1)), lambda: F(torch).pdist(torch.ones(2, 3, 1)))


@pytest.mark.parametrize("fn,shape", [("dropout1d", (4, 6, 5)), ("dropout1d", (6, 5)), ("dropout2d", (4, 6, 3, 2)),
                                      ("dropout3d", (4, 6, 2, 2, 2)), ("dropout3d", (6, 2, 2, 2)),
                                      ("feature_alpha_dropout", (4, 6, 3))])
def test_channel_dropout(device, fn, shape):
    x = tdx.tensor(u(*shape, lo=0.5, hi=1.5), device=device).float().requires_grad_(True)
    f = getattr(F(tdx), fn)
    out = f(x, 0.4, True)
    batched = len(shape) in (3, 4, 5) and not (fn == "dropout3d" and len(shape) == 4) and \
        not (fn == "dropout1d" and len(shape) == 2)
    chans = out.detach().reshape(shape[:2] + (-1,) if batched else (1, shape[0], -1)).numpy()
    xs = x.detach().reshape(chans.shape).numpy()
    if fn == "feature_alpha_dropout":
        a = 1.0 / np.sqrt((1.7580993408473766 ** 2 * 0.4 + 1) * 0.6)
        b = 1.7580993408473766 * a * 0.4
        kept = np.isclose(chans, xs * a + b, rtol=1e-5)
        dropped = np.isclose(chans, -1.7580993408473766 * a + b, rtol=1e-5)
    else:
        kept, dropped = np.isclose(chans, xs / 0.6, rtol=1e-6), chans == 0
    # every channel is wholly kept or wholly dropped
    assert ((kept.all(-1)) | (dropped.all(-1))).all()
    out.sum().backward()
    g = x.grad.reshape(chans.shape).numpy()
    scale = a if fn == "feature_alpha_dropout" else 1 / 0.6
    np.testing.assert_allclose(g, np.where(kept.all(-1, keepdims=True), scale, 0.0) * np.ones_like(g), rtol=1e-6)
    assert f(x, 0.4, False) is x  # eval: the input itself, as torch
    y = x.detach().clone()
    assert f(y, 1.0, True, inplace=True) is y and float(y.abs().sum().item()) == 0 or fn == "feature_alpha_dropout"
    with tdx.device(device):
        raises_like(lambda: f(tdx.ones(*shape), 1.5), lambda: getattr(F(torch), fn)(torch.ones(*shape), 1.5))
    if fn == "dropout1d":
        raises_like(lambda: f(tdx.ones(2, 3, 4, 5, device=device)), lambda: F(torch).dropout1d(torch.ones(2, 3, 4, 5)))


def test_rrelu_and_gumbel_softmax(device):
    x = tdx.tensor(u(200, lo=-2, hi=2), device=device).requires_grad_(True)
    xt = torch.tensor(x.detach().numpy())
    out = F(tdx).rrelu(x)  # eval: the mean slope
    compare(device, "float32", lambda m, a: F(m).rrelu(a, 0.1, 0.3), [x.detach().numpy()])
    out = F(tdx).rrelu(x, 0.1, 0.3, training=True)
    ratio = (out.detach() / x.detach()).numpy()
    neg = xt.numpy() < 0
    assert ((ratio[neg] >= 0.1 - 1e-6) & (ratio[neg] <= 0.3 + 1e-6)).all() and np.allclose(ratio[~neg], 1)
    assert len(np.unique(ratio[neg].round(6))) > 10  # drawn per element
    out.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), ratio, rtol=1e-5)
    logits = tdx.tensor(u(64, 5), device=device).requires_grad_(True)
    soft = F(tdx).gumbel_softmax(logits, tau=0.5)
    np.testing.assert_allclose(soft.detach().sum(-1).numpy(), 1, rtol=1e-5)
    hard = F(tdx).gumbel_softmax(logits, hard=True)
    h = hard.detach().numpy()
    assert set(np.unique(h)) <= {0.0, 1.0} and (h.sum(-1) == 1).all()
    (hard * tdx.arange(5, device=device).float()).sum().backward()
    assert float(logits.grad.abs().sum().item()) > 0  # straight through
    with tdx.device(device):
        raises_like(lambda: F(tdx).rrelu(tdx.ones(3), 0.5, 0.1, True),
                    lambda: F(torch).rrelu(torch.ones(3), 0.5, 0.1, True))
