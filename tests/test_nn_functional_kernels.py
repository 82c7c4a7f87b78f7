"""Every ``nn.functional`` loss (and the entries routed to torch's kernels) gives torch's own result: bit for
bit on the cpu executor over several seeds (values and input gradients), within tolerance on other devices."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import tdx
from conftest import torch_twin
from tdx.testing.parity import assert_close, tolerance

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")
SEEDS = [0, 1, 2]


def _cases(rng):
    """name -> (F's function name, [arrays], kwargs, positions of inputs that get gradients)."""
    n, c = 23, 17
    x = rng.standard_normal((n, c)).astype(np.float32) * 3
    y = rng.standard_normal((n, c)).astype(np.float32)
    logp = (x - np.log(np.exp(x).sum(1, keepdims=True))).astype(np.float32)
    cls = rng.integers(0, c, size=n)
    cls_ign = cls.copy()
    cls_ign[::5] = 2
    w = rng.uniform(0.1, 2, size=c).astype(np.float32)
    prob = rng.uniform(0.02, 0.98, size=(n, c)).astype(np.float32)
    bits = (rng.uniform(size=(n, c)) > 0.5).astype(np.float32)
    sgn = np.where(rng.uniform(size=n) > 0.5, 1.0, -1.0).astype(np.float32)
    sgn2 = np.where(rng.uniform(size=(n, c)) > 0.5, 1.0, -1.0).astype(np.float32)
    ml = np.full((n, c), -1)
    ml[:, :3] = rng.integers(0, c, size=(n, 3))
    var = rng.uniform(0.1, 2, size=(n, c)).astype(np.float32)
    lp3 = rng.standard_normal((12, 4, 6)).astype(np.float32)
    lp3 = lp3 - np.log(np.exp(lp3).sum(2, keepdims=True))
    out = {}
    for red in ("mean", "sum", "none"):
        out.update({
            f"nll_loss/{red}": ("nll_loss", [logp, cls], {"reduction": red}, [0]),
            f"nll_loss weight/{red}": ("nll_loss", [logp, cls, w], {"reduction": red}, [0]),
            f"nll_loss ignore/{red}": ("nll_loss", [logp, cls_ign, w], {"reduction": red, "ignore_index": 2}, [0]),
            f"cross_entropy/{red}": ("cross_entropy", [x, cls, w], {"reduction": red, "label_smoothing": 0.1}, [0]),
            f"cross_entropy probs/{red}": ("cross_entropy", [x, prob], {"reduction": red}, [0]),
            f"multi_margin_loss/{red}": ("multi_margin_loss", [x, cls], {"reduction": red}, [0]),
            f"multi_margin_loss p2 w/{red}": ("multi_margin_loss", [x, cls], {"p": 2, "margin": 0.7, "reduction": red,
                                                                        "weight": w}, [0]),
            f"multilabel_margin_loss/{red}": ("multilabel_margin_loss", [x, ml], {"reduction": red}, [0]),
            f"multilabel_soft_margin_loss/{red}": ("multilabel_soft_margin_loss", [x, bits], {"reduction": red}, [0]),
            f"mse_loss/{red}": ("mse_loss", [x, y], {"reduction": red}, [0, 1]),
            f"l1_loss/{red}": ("l1_loss", [x, y], {"reduction": red}, [0, 1]),
            f"smooth_l1_loss/{red}": ("smooth_l1_loss", [x, y], {"reduction": red, "beta": 0.5}, [0, 1]),
            f"huber_loss/{red}": ("huber_loss", [x, y], {"reduction": red, "delta": 0.8}, [0, 1]),
            f"binary_cross_entropy/{red}": ("binary_cross_entropy", [prob, bits], {"reduction": red}, [0]),
            f"binary_cross_entropy w/{red}": ("binary_cross_entropy", [prob, bits, var], {"reduction": red}, [0]),
            f"bce_with_logits/{red}": ("binary_cross_entropy_with_logits", [x, bits], {"reduction": red,
                                                                                 "pos_weight": w}, [0]),
            f"kl_div/{red}": ("kl_div", [logp, prob], {"reduction": red}, [0]),
            f"kl_div log_target/{red}": ("kl_div", [logp, logp[::-1].copy()], {"reduction": red,
                                                                             "log_target": True}, [0]),
            f"poisson_nll_loss/{red}": ("poisson_nll_loss", [x / 3, var], {"reduction": red}, [0]),
            f"poisson_nll_loss full/{red}": ("poisson_nll_loss", [var, var[::-1].copy() * 3],
                                             {"reduction": red, "log_input": False, "full": True}, [0]),
            f"gaussian_nll_loss/{red}": ("gaussian_nll_loss", [x, y, var], {"reduction": red}, [0, 2]),
            f"hinge_embedding_loss/{red}": ("hinge_embedding_loss", [x, sgn2], {"reduction": red}, [0]),
            f"soft_margin_loss/{red}": ("soft_margin_loss", [x, sgn2], {"reduction": red}, [0]),
            f"margin_ranking_loss/{red}": ("margin_ranking_loss", [x[:, 0].copy(), y[:, 0].copy(), sgn],
                                           {"reduction": red, "margin": 0.2}, [0, 1]),
            f"cosine_embedding_loss/{red}": ("cosine_embedding_loss", [x, y, sgn], {"reduction": red}, [0, 1]),
            f"triplet_margin_loss/{red}": ("triplet_margin_loss", [x, y, y[::-1].copy()], {"reduction": red,
                                                                                      "swap": True}, [0, 1, 2]),
            f"ctc_loss/{red}": ("ctc_loss", [lp3, rng.integers(1, 6, size=(4, 5)), np.full(4, 12), np.array([5, 4, 3, 5])],
                                {"reduction": red}, [0]),
        })
    return out


CASES = sorted(_cases(np.random.default_rng(0)))


def _run(m, device, name, arrays, kwargs, grads):
    ts = []
    for i, a in enumerate(arrays):
        t = m.tensor(a) if m is torch else m.tensor(a, device=device)
        ts.append(t.requires_grad_() if i in grads else t)
    kwargs = {k: (m.tensor(v) if m is torch else m.tensor(v, device=device)) if isinstance(v, np.ndarray) else v
              for k, v in kwargs.items()}
    out = getattr(m.nn.functional, name)(*ts, **kwargs)
    out.sum().backward()
    return out, [ts[i].grad for i in grads]


@pytest.mark.parametrize("case", CASES)
def test_losses_are_torch_kernels(device, case):
    for seed in SEEDS:
        name, arrays, kwargs, grads = _cases(np.random.default_rng(seed))[case]
        want, want_g = _run(torch, None, name, arrays, kwargs, grads)
        got, got_g = _run(tdx, device, name, arrays, kwargs, grads)
        if device == "cpu":
            assert got.dtype == tdx.float32 and got.shape == tuple(want.shape)
            assert np.array_equal(got.detach().numpy(), want.detach().numpy(), equal_nan=True), (case, seed)
            for g, wg in zip(got_g, want_g):
                assert np.array_equal(g.numpy(), wg.numpy(), equal_nan=True), (case, seed, "grad")
        else:
            rtol, atol = tolerance(tdx.float32, "reduction")
            assert_close(got, want.detach(), rtol=rtol, atol=atol, msg=f"{case} seed {seed}")
            for g, wg in zip(got_g, want_g):
                assert_close(g, wg, rtol=rtol, atol=atol, msg=f"{case} seed {seed} grad")


ACTIVATIONS = {"elu": {"alpha": 0.7}, "selu": {}, "celu": {"alpha": 0.7}, "silu": {}, "mish": {}, "hardswish": {},
               "logsigmoid": {}, "softplus": {"beta": 2.0}, "glu": {"dim": 1}, "relu": {}, "gelu": {"approximate": "tanh"},
               "leaky_relu": {"negative_slope": 0.2}, "hardtanh": {}, "hardsigmoid": {}, "tanhshrink": {},
               "softsign": {}, "softshrink": {}, "softmin": {"dim": 1}, "log_softmax": {"dim": 1},
               "normalize": {}, "group_norm": {"num_groups": 3}, "layer_norm": {"normalized_shape": (8,)},
               "rms_norm": {"normalized_shape": (8,)}, "local_response_norm": {"size": 3}, "pdist": {}}


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_routed_entries_are_torch_kernels(device, name):
    for seed in SEEDS:
        arr = np.random.default_rng(seed).standard_normal((7, 6, 8) if name != "pdist" else (9, 5)).astype(np.float32)
        got, (gg,) = _run(tdx, device, name, [arr * 3], ACTIVATIONS[name], [0])
        want, (wg,) = _run(torch, None, name, [arr * 3], ACTIVATIONS[name], [0])
        if device == "cpu":
            assert np.array_equal(got.detach().numpy(), want.detach().numpy()), (name, seed)
            assert np.array_equal(gg.numpy(), wg.numpy()), (name, seed, "grad")
        else:
            rtol, atol = tolerance(tdx.float32, "reduction")
            assert_close(got, want.detach(), rtol=rtol, atol=atol)
            assert_close(gg, wg, rtol=rtol, atol=atol)


def test_inplace_activation_returns_its_input(device):
    x = tdx.tensor([-1.0, 0.5, 2.0], device=device)
    assert tdx.nn.functional.elu(x, 1.0, True) is x
    assert_close(x, torch.nn.functional.elu(torch.tensor([-1.0, 0.5, 2.0])))


def _others(rng):
    img = rng.standard_normal((2, 3, 8, 8)).astype(np.float32)
    x2, y2 = rng.standard_normal((5, 8)).astype(np.float32), rng.standard_normal((5, 8)).astype(np.float32)
    theta = rng.standard_normal((2, 2, 3)).astype(np.float32) * 0.3
    w = rng.standard_normal((4, 8, 8)).astype(np.float32)
    seq, wt = rng.standard_normal((5, 2, 4)).astype(np.float32), rng.standard_normal((3, 4, 6)).astype(np.float32)
    return {  # name -> (fn(m, F, T), draws random numbers)
        "grid_sample": (lambda m, F, T: F.grid_sample(T(img), F.affine_grid(T(theta), (2, 3, 5, 5), align_corners=False),
                                                      align_corners=False), False),
        "bilinear": (lambda m, F, T: F.bilinear(T(x2), T(y2), T(w)), False),
        "conv_tbc": (lambda m, F, T: F.conv_tbc(T(seq), T(wt), T(w[0, 0, :6])), False),
        "alpha_dropout": (lambda m, F, T: F.alpha_dropout(T(x2), 0.3, training=True), True),
        "rrelu": (lambda m, F, T: F.rrelu(T(x2), training=True), True),
        "gumbel_softmax": (lambda m, F, T: F.gumbel_softmax(T(x2), tau=0.5), True),
        "embedding max_norm": (lambda m, F, T: F.embedding(T(np.array([[1, 4], [4, 0]])), T(x2 * 2), max_norm=1.0,
                                                           norm_type=3.0), False),
    }


@pytest.mark.parametrize("name", sorted(_others(np.random.default_rng(0))))
def test_other_routed_entries(device, name):
    """torch's kernels give the device's numbers: the oracle runs on the device's torch twin (torch's cuda
    embedding renorm sums ``x ** norm_type`` without ``abs``, unlike its CPU one)."""
    twin = torch_twin(device)
    for seed in SEEDS:
        fn, random = _others(np.random.default_rng(seed))[name]
        torch.manual_seed(seed)
        want = fn(torch, torch.nn.functional, lambda a: torch.tensor(a, device=twin))
        tdx.manual_seed(seed)
        got = fn(tdx, tdx.nn.functional, lambda a: tdx.tensor(a, device=device))
        assert tuple(got.shape) == tuple(want.shape) and got.dtype is tdx.float32
        if device == "cpu":  # torch's kernel, and torch's random stream
            assert np.array_equal(got.numpy(), want.numpy()), (name, seed)
        elif not random:
            rtol, atol = tolerance(tdx.float32, "reduction")
            assert_close(got, want, rtol=rtol, atol=atol)
