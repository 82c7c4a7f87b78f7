"""The loss functions added to ``tdx.nn.functional`` (margin, ranking, embedding, likelihood and CTC
losses) and their ``tdx.nn`` loss modules, against torch on CPU, on every device: values, input
gradients, reductions, ``repr`` and torch's error kinds for bad arguments."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import tdx
from nn_oracle import compare, raises_like

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")
DTYPES = ["float32", "float64"]
REDUCTIONS = ["none", "mean", "sum"]
RNG = np.random.default_rng(0)


def F(m):
    return m.nn.functional


def u(*shape, lo=-2.0, hi=2.0, seed=0):
    return np.random.default_rng(seed).uniform(lo, hi, size=shape)


def signs(*shape, seed=3):
    return np.random.default_rng(seed).choice([-1.0, 1.0], size=shape)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_pairwise_margin_losses(device, dtype, reduction):
    a, b, t = u(5, 4), u(5, 4, seed=1), signs(5)
    compare(device, dtype, lambda m, x, y, z: F(m).cosine_embedding_loss(x, y, z, margin=0.2, reduction=reduction),
            [a, b, t], grad=[0, 1])
    compare(device, dtype, lambda m, x, y, z: F(m).cosine_embedding_loss(x, y, z), [a[0], b[0], np.array(-1.0)],
            grad=[0, 1])
    compare(device, dtype, lambda m, x, y, z: F(m).margin_ranking_loss(x, y, z, margin=0.3, reduction=reduction),
            [u(6), u(6, seed=2), signs(6)], grad=[0, 1])
    compare(device, dtype, lambda m, x, z: F(m).hinge_embedding_loss(x, z, margin=1.5, reduction=reduction),
            [u(3, 4), signs(3, 4)], grad=[0])
    compare(device, dtype, lambda m, x, z: F(m).soft_margin_loss(x, z, reduction=reduction),
            [u(3, 4), signs(3, 4)], grad=[0])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_multilabel_and_multiclass_margins(device, dtype, reduction):
    x, y = u(4, 5), (u(4, 5, lo=0, hi=1, seed=4) > 0.5).astype(np.float64)
    compare(device, dtype, lambda m, a, b: F(m).multilabel_soft_margin_loss(a, b, reduction=reduction), [x, y],
            grad=[0])
    compare(device, dtype, lambda m, a, b, w: F(m).multilabel_soft_margin_loss(a, b, weight=w, reduction=reduction),
            [x, y, u(5, lo=0.1, hi=1)], grad=[0])
    tgt = np.array([[3, 0, -1, 1, 2], [1, 2, 3, 4, 0], [-1, 0, 0, 0, 0], [4, 4, -1, 0, 0]])  # duplicates count twice
    compare(device, dtype, lambda m, a, b: F(m).multilabel_margin_loss(a, b, reduction=reduction), [x, tgt])
    compare(device, dtype, lambda m, a, b: F(m).multilabel_margin_loss(a, b, reduction=reduction),
            [x[0], tgt[0]])
    cls = np.array([1, 0, 4, 2])
    for p, margin in ((1, 1.0), (2, 0.5)):
        compare(device, dtype, lambda m, a, b: F(m).multi_margin_loss(a, b, p=p, margin=margin, reduction=reduction),
                [x, cls])
    compare(device, dtype, lambda m, a, b, w: F(m).multi_margin_loss(a, b, weight=w, reduction=reduction),
            [x, cls, u(5, lo=0.1, hi=1)], grad=[0])
    compare(device, dtype, lambda m, a, b: F(m).multi_margin_loss(a, b, reduction=reduction), [x[1], cls[1:2]])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_triplet_losses(device, dtype, reduction):
    a, p, n = u(6, 3), u(6, 3, seed=1), u(6, 3, seed=2)
    for kw in (dict(), dict(margin=2.0, p=1, swap=True), dict(p=3, eps=1e-3)):
        compare(device, dtype, lambda m, x, y, z: F(m).triplet_margin_loss(x, y, z, reduction=reduction, **kw),
                [a, p, n])

    def cos_dist(m):
        return lambda x, y: 1.0 - F(m).cosine_similarity(x, y)

    compare(device, dtype, lambda m, x, y, z: F(m).triplet_margin_with_distance_loss(
        x, y, z, distance_function=cos_dist(m), margin=0.5, swap=True, reduction=reduction), [a, p, n])
    compare(device, dtype, lambda m, x, y, z: F(m).triplet_margin_with_distance_loss(x, y, z, reduction=reduction),
            [a, p, n])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_likelihood_losses(device, dtype, reduction):
    x, counts = u(3, 4), np.random.default_rng(5).integers(0, 5, size=(3, 4)).astype(np.float64)
    for kw in (dict(), dict(full=True), dict(log_input=False, full=True)):
        inp = np.abs(x) if kw.get("log_input") is False else x
        compare(device, dtype, lambda m, a, b: F(m).poisson_nll_loss(a, b, reduction=reduction, **kw),
                [inp, counts], grad=[0])
    var = u(3, 4, lo=0.0, hi=2.0, seed=6)
    var[0, 0] = 1e-9  # clamped to eps, its gradient passed through
    compare(device, dtype, lambda m, a, b, v: F(m).gaussian_nll_loss(a, b, v, full=True, reduction=reduction),
            [x, u(3, 4, seed=7), var])
    compare(device, dtype, lambda m, a, b, v: F(m).gaussian_nll_loss(a, b, v, reduction=reduction),
            [x, u(3, 4, seed=7), var[:, 0]])  # one variance per row
    compare(device, dtype, lambda m, a, b, v: F(m).gaussian_nll_loss(a, b, v, reduction=reduction),
            [x, u(3, 4, seed=7), var[:, :1]])
    compare(device, dtype, lambda m, a, b: F(m).gaussian_nll_loss(a, b, 0.7, reduction=reduction),
            [x, u(3, 4, seed=7)])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_ctc_loss(device, dtype, reduction):
    t_len, batch, classes = 12, 4, 5
    logits = u(t_len, batch, classes, lo=-3, hi=3)
    targets = np.array([[1, 2, 2, 3], [4, 1, 0, 0], [2, 2, 2, 2], [3, 0, 0, 0]])
    in_lens, tg_lens = [12, 9, 10, 1], [4, 2, 4, 1]

    def on(m, v):
        return m.tensor(v, device=device if m is tdx else "cpu")

    def run(m, z, concat=False, zero_inf=False, blank=0):
        lp = z.log_softmax(2)
        tg = on(m, targets)
        if concat:
            tg = m.cat([tg[i, :n] for i, n in enumerate(tg_lens)])
        return F(m).ctc_loss(lp, tg, on(m, in_lens), on(m, tg_lens), blank=blank, reduction=reduction,
                             zero_infinity=zero_inf)

    tol = dict(rtol=1e-4, atol=1e-5) if dtype == "float32" else None  # a 12-step recursion of logsumexps
    compare(device, dtype, run, [logits], tol=tol)
    compare(device, dtype, lambda m, z: run(m, z, concat=True), [logits], tol=tol)
    impossible = [12, 9, 3, 1]  # sample 2 needs at least 7 steps: an infinite loss, or zero with zero_infinity
    in_lens[:] = impossible
    compare(device, dtype, lambda m, z: run(m, z, zero_inf=True), [logits], tol=tol)
    in_lens[:] = [12, 9, 10, 1]
    tgt_b = np.where(targets == 0, 4, targets - 0)
    targets[:] = np.where(tgt_b == 4, 1, tgt_b)
    compare(device, dtype, lambda m, z: run(m, z, blank=4), [logits], tol=tol)
    if reduction == "none":  # unbatched, and an impossible alignment without zero_infinity
        compare(device, dtype, lambda m, z: F(m).ctc_loss(z.log_softmax(1), on(m, [1, 1, 2]), on(m, 6), on(m, 3)), [logits[:6, 0]],
                tol=tol)
        got = compare(device, dtype, lambda m, z: F(m).ctc_loss(z.log_softmax(2), on(m, targets), (12, 9, 2, 1),
                                                                 tuple(tg_lens), reduction="none"), [logits], grad=[])
        assert float(got[2].item()) == float("inf")


@pytest.mark.parametrize("fn", ["cosine_embedding_loss", "margin_ranking_loss", "triplet_margin_loss",
                                "multi_margin_loss", "multilabel_margin_loss", "gaussian_nll_loss",
                                "triplet_margin_with_distance_loss", "poisson_nll_loss", "ctc_loss"])
def test_loss_errors(device, fn):
    def call(m, case):
        f = getattr(F(m), fn)
        r = lambda *s: m.ones(*s)  # noqa: E731
        if fn == "cosine_embedding_loss":
            return f(r(2, 3), r(2, 3), r(2, 1)) if case == 0 else f(r(2, 3), r(3), r(2))
        if fn == "margin_ranking_loss":
            return f(r(2), r(2, 1), r(2)) if case == 0 else f(r(2), r(2), r(2), reduction="avg")
        if fn == "triplet_margin_loss":
            return f(r(2, 3), r(2, 3), r(3))
        if fn == "multi_margin_loss":
            lab = m.tensor([0, 1])
            return f(r(2, 3), lab, p=3) if case == 0 else f(r(2, 3), m.tensor([0, 5]))
        if fn == "multilabel_margin_loss":
            return f(r(2, 3), m.tensor([[0, 1, 2]])) if case == 0 else f(r(2, 3), m.tensor([[0, 3, 2], [0, 1, 2]]))
        if fn == "gaussian_nll_loss":
            return f(r(2, 3), r(2, 3), -r(2, 3)) if case == 0 else f(r(2, 3), r(2, 3), r(3, 2))
        if fn == "triplet_margin_with_distance_loss":
            return f(r(2, 3), r(2, 3), r(2, 3), margin=0.0) if case == 0 else f(r(2), r(2, 3), r(2, 3))
        if fn == "poisson_nll_loss":
            return f(r(2), r(2), reduction="bad")
        lp = m.zeros(5, 2, 3)
        return f(lp, m.tensor([[1, 1], [1, 1]]), m.tensor([6, 5]), m.tensor([2, 2])) if case == 0 else \
            f(lp, m.tensor([[1, 1], [1, 1]]), m.tensor([5, 5]), m.tensor([2, 2]), blank=3)

    for case in (0, 1):
        with tdx.device(device):
            raises_like(lambda: call(tdx, case), lambda: call(torch, case))
