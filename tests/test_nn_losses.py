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
    kinks = np.array([[0.0, 1.0, 0.0, 3.0], [2.0, 1.0, 1.0, 0.0]])  # margins of exactly 0: no gradient there
    compare(device, dtype, lambda m, a, b: F(m).multi_margin_loss(a, b, reduction=reduction), [kinks, CLS[:2]])
    compare(device, dtype, lambda m, a, b: F(m).multilabel_margin_loss(a, b, reduction=reduction),
            [kinks, np.array([[1, -1, 0, 0], [0, 2, -1, 0]])])


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
def test_cross_entropy_probability_targets(device, dtype, reduction):
    # (N, C) logits with a float (N, C) target: class probabilities, never class indices (the fused
    # class-index kernel of float32 (N, C) logits must not take them)
    x, p = u(4, 5), np.random.default_rng(8).dirichlet(np.ones(5), size=4)
    compare(device, dtype, lambda m, a, b: F(m).cross_entropy(a, b, reduction=reduction), [x, p])
    compare(device, dtype, lambda m, a, b: F(m).cross_entropy(a, b, reduction=reduction, label_smoothing=0.2),
            [x, p])
    compare(device, dtype, lambda m, a, b, w: F(m).cross_entropy(a, b, w, reduction=reduction),
            [x, p, u(5, lo=0.1, hi=1.0, seed=9)])


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
        if case == 1 and fn in ("multi_margin_loss", "multilabel_margin_loss") and \
                tdx.backends.get(device).caps.device_side_checks:
            continue  # a class target past the last class: an assert inside cuda's kernel (see skip_value_checked)
        with tdx.device(device):
            raises_like(lambda: call(tdx, case), lambda: call(torch, case))


def test_margin_target_dtypes(device):
    """The multi-margin losses take int64 targets only, as torch's kernels."""
    with tdx.device(device):
        for fn, tgt in (("multi_margin_loss", [0, 1]), ("multilabel_margin_loss", [[0, -1, 0], [1, 2, -1]])):
            raises_like(lambda: getattr(F(tdx), fn)(tdx.ones(2, 3), tdx.tensor(tgt, dtype=tdx.int32)),
                        lambda: getattr(F(torch), fn)(torch.ones(2, 3), torch.tensor(tgt, dtype=torch.int32)))


# loss modules --------------------------------------------------------------------------------------
from nn_oracle import module_check  # noqa: E402

CLS = np.array([1, 0, 4, 2])
MULTI = np.array([[3, 0, -1, 1, 2], [1, 2, 3, 4, 0], [-1, 0, 0, 0, 0], [4, 4, -1, 0, 0]])
BINARY = (u(4, 5, lo=0, hi=1, seed=4) > 0.5).astype(np.float64)
PROBS = u(4, 5, lo=0.05, hi=0.95, seed=8)


def _w(m, arr):
    return m.tensor(arr).to(m.get_default_dtype())


LOSSES = {
    "cross_entropy": (lambda m, r: m.nn.CrossEntropyLoss(weight=_w(m, u(5, lo=0.1, hi=1)), ignore_index=2,
                                                         label_smoothing=0.2, reduction=r), [u(4, 5), CLS]),
    "nll": (lambda m, r: m.nn.NLLLoss(weight=_w(m, u(5, lo=0.1, hi=1)), reduction=r), [u(4, 5), CLS]),
    "mse": (lambda m, r: m.nn.MSELoss(reduction=r), [u(4, 5), u(4, 5, seed=1)]),
    "l1": (lambda m, r: m.nn.L1Loss(reduction=r), [u(4, 5), u(4, 5, seed=1)]),
    "smooth_l1": (lambda m, r: m.nn.SmoothL1Loss(reduction=r, beta=0.5), [u(4, 5), u(4, 5, seed=1)]),
    "huber": (lambda m, r: m.nn.HuberLoss(reduction=r, delta=0.7), [u(4, 5), u(4, 5, seed=1)]),
    "bce": (lambda m, r: m.nn.BCELoss(weight=_w(m, u(5, lo=0.1, hi=1)), reduction=r), [PROBS, BINARY]),
    "bce_logits": (lambda m, r: m.nn.BCEWithLogitsLoss(weight=_w(m, u(5, lo=0.1, hi=1)),
                                                       pos_weight=_w(m, u(5, lo=0.5, hi=3)), reduction=r),
                   [u(4, 5), BINARY]),
    "kl_div": (lambda m, r: m.nn.KLDivLoss(reduction="batchmean" if r == "mean" else r, log_target=True),
               [u(4, 5, lo=-3, hi=0), u(4, 5, lo=-3, hi=0, seed=1)]),
    "cosine_embedding": (lambda m, r: m.nn.CosineEmbeddingLoss(margin=0.1, reduction=r),
                         [u(4, 5), u(4, 5, seed=1), signs(4)]),
    "margin_ranking": (lambda m, r: m.nn.MarginRankingLoss(0.2, reduction=r), [u(4), u(4, seed=1), signs(4)]),
    "triplet": (lambda m, r: m.nn.TripletMarginLoss(margin=0.5, p=1.0, swap=True, reduction=r),
                [u(4, 5), u(4, 5, seed=1), u(4, 5, seed=2)]),
    "triplet_distance": (lambda m, r: m.nn.TripletMarginWithDistanceLoss(
        distance_function=m.nn.PairwiseDistance(p=3.0), margin=2.0, reduction=r),
        [u(4, 5), u(4, 5, seed=1), u(4, 5, seed=2)]),
    "hinge": (lambda m, r: m.nn.HingeEmbeddingLoss(margin=0.5, reduction=r), [u(4, 5), signs(4, 5)]),
    "multilabel_soft": (lambda m, r: m.nn.MultiLabelSoftMarginLoss(weight=_w(m, u(5, lo=0.1, hi=1)), reduction=r),
                        [u(4, 5), BINARY]),
    "multilabel_margin": (lambda m, r: m.nn.MultiLabelMarginLoss(reduction=r), [u(4, 5), MULTI]),
    "multi_margin": (lambda m, r: m.nn.MultiMarginLoss(p=2, margin=0.7, weight=_w(m, u(5, lo=0.1, hi=1)),
                                                       reduction=r), [u(4, 5), CLS]),
    "soft_margin": (lambda m, r: m.nn.SoftMarginLoss(reduction=r), [u(4, 5), signs(4, 5)]),
    "poisson": (lambda m, r: m.nn.PoissonNLLLoss(full=True, reduction=r), [u(4, 5), np.abs(u(4, 5, seed=1)) * 3]),
    "gaussian": (lambda m, r: m.nn.GaussianNLLLoss(full=True, eps=1e-3, reduction=r),
                 [u(4, 5), u(4, 5, seed=1), u(4, 5, lo=0, hi=2, seed=2)]),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("name", sorted(LOSSES))
def test_loss_modules(device, dtype, reduction, name):
    build, arrays = LOSSES[name]
    targets = {"bce": [1], "bce_logits": [1], "multilabel_soft": [1], "hinge": [1], "soft_margin": [1],
               "cosine_embedding": [2], "margin_ranking": [2], "kl_div": [1]}
    grad = [i for i, a in enumerate(arrays) if np.asarray(a).dtype.kind == "f" and i not in targets.get(name, [])]
    module_check(device, dtype, lambda m: build(m, reduction), arrays, grad=grad)


@pytest.mark.parametrize("dtype", DTYPES)
def test_ctc_loss_module(device, dtype):
    logits = u(10, 3, 4, lo=-3, hi=3)
    tg, in_lens, tg_lens = np.array([[1, 2, 2], [3, 1, 0], [2, 0, 0]]), [10, 8, 5], [3, 2, 1]

    def run(m, z):
        loss = m.nn.CTCLoss(blank=0, zero_infinity=True)
        assert repr(loss) == "CTCLoss()"
        return loss(z.log_softmax(2), on_device(m, tg), on_device(m, in_lens), on_device(m, tg_lens))

    def on_device(m, v):
        return m.tensor(v, device=device if m is tdx else "cpu")

    compare(device, dtype, run, [logits], tol=dict(rtol=1e-4, atol=1e-5) if dtype == "float32" else None)


def test_loss_module_buffers_and_errors(device):
    """Class weights are buffers: ``.to(device)`` moves them and ``state_dict`` holds them, as torch's."""
    loss = tdx.nn.CrossEntropyLoss(weight=tdx.ones(3)).to(device)
    assert loss.weight.device == tdx.device(device) and list(loss.state_dict()) == ["weight"]
    bce = tdx.nn.BCEWithLogitsLoss(pos_weight=tdx.ones(3)).to(device)
    assert list(bce.state_dict()) == list(torch.nn.BCEWithLogitsLoss(pos_weight=torch.ones(3)).state_dict())
    with pytest.warns(UserWarning, match="size_average"):
        assert tdx.nn.MSELoss(size_average=False).reduction == "sum"
    with tdx.device(device):
        raises_like(lambda: tdx.nn.MSELoss(reduction="avg")(tdx.ones(2), tdx.ones(2)),
                    lambda: torch.nn.MSELoss(reduction="avg")(torch.ones(2), torch.ones(2)))
        raises_like(lambda: tdx.nn.MultiMarginLoss(p=3), lambda: torch.nn.MultiMarginLoss(p=3))
        raises_like(lambda: tdx.nn.TripletMarginWithDistanceLoss(margin=-1.0),
                    lambda: torch.nn.TripletMarginWithDistanceLoss(margin=-1.0))
        if not tdx.backends.get(device).caps.device_side_checks:  # a class target past the last class: an
            raises_like(lambda: tdx.nn.CrossEntropyLoss()(tdx.ones(2, 3), tdx.tensor([0, 3])),  # assert in cuda's
                        lambda: torch.nn.CrossEntropyLoss()(torch.ones(2, 3), torch.tensor([0, 3])))  # kernel
    for name in ("CrossEntropyLoss", "BCEWithLogitsLoss", "TripletMarginLoss", "KLDivLoss", "HuberLoss"):
        assert repr(getattr(tdx.nn, name)()) == repr(getattr(torch.nn, name)())
