"""``tdx.distributions`` (torch's own distributions package run with tdx as torch) against real
torch on CPU: for every family, ``log_prob``/``entropy``/``mean``/``variance``/``cdf``/``icdf`` of the
same parameters on every device; seeded ``sample`` shape, dtype and support; ``rsample``
gradients; ``kl_divergence`` pairs; constraints, transforms and bad arguments."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import tdx
import tdx.distributions as D
from tdx.testing.parity import assert_close, tolerance
from conftest import torch_twin

RNG = np.random.default_rng(7)
B = 5  # batch size of every case


@pytest.fixture(autouse=True)
def _device_is_the_default(request):
    """Each device test runs with its device as tdx's default device, as a program pinned to it: torch's
    distributions make some tensors on the default device (Multinomial's entropy, GeneralizedPareto's zero,
    Wishart's indices) and the cases' temperatures are made there, and tdx's own default device is cuda where
    a GPU is present, not the MLX device under test. torch's side keeps its CPU default."""
    if "device" not in request.fixturenames:
        yield
        return
    with tdx.device(request.getfixturevalue("device")):
        yield


def _pos(*shape, lo=0.5, hi=3.0):
    return RNG.uniform(lo, hi, size=shape).astype(np.float32)


def _unit(*shape):
    return RNG.uniform(0.15, 0.85, size=shape).astype(np.float32)


def _spd(n):
    a = RNG.normal(size=(B, n, n)).astype(np.float32)
    return (a @ a.transpose(0, 2, 1) + n * np.eye(n, dtype=np.float32)).astype(np.float32)


def _simplex(*shape):
    p = RNG.uniform(0.2, 1.0, size=shape).astype(np.float32)
    return p / p.sum(-1, keepdims=True)


LOC, SCALE, P, C1, C0 = RNG.normal(size=B).astype(np.float32), _pos(B), _unit(B), _pos(B), _pos(B)
PROBS3, LOGITS3 = _simplex(B, 3), RNG.normal(size=(B, 3)).astype(np.float32)
COV = _spd(3)
MVLOC = RNG.normal(size=(B, 3)).astype(np.float32)
COUNTS = np.array([3, 0, 5, 1, 2], dtype=np.float32)

# name -> (factory(lib, arrays) -> distribution, parameters as arrays, value(s) in the support)
CASES = {
    "Normal": (lambda L, a: L.distributions.Normal(a[0], a[1]), (LOC, SCALE), RNG.normal(size=B)),
    "Bernoulli": (lambda L, a: L.distributions.Bernoulli(probs=a[0]), (P,), np.array([0, 1, 1, 0, 1])),
    "BernoulliLogits": (lambda L, a: L.distributions.Bernoulli(logits=a[0]), (LOC,), np.array([1, 0, 1, 0, 1])),
    "Beta": (lambda L, a: L.distributions.Beta(a[0], a[1]), (C1, C0), _unit(B)),
    "Binomial": (lambda L, a: L.distributions.Binomial(10, probs=a[0]), (P,), np.array([0, 3, 10, 7, 5])),
    "Categorical": (lambda L, a: L.distributions.Categorical(probs=a[0]), (PROBS3,), np.array([0, 2, 1, 1, 0])),
    "CategoricalLogits": (lambda L, a: L.distributions.Categorical(logits=a[0]), (LOGITS3,), np.array([2, 2, 0, 1, 0])),
    "Cauchy": (lambda L, a: L.distributions.Cauchy(a[0], a[1]), (LOC, SCALE), RNG.normal(size=B)),
    "Chi2": (lambda L, a: L.distributions.Chi2(a[0]), (C1,), _pos(B)),
    "ContinuousBernoulli": (lambda L, a: L.distributions.ContinuousBernoulli(a[0]), (P,), _unit(B)),
    "Dirichlet": (lambda L, a: L.distributions.Dirichlet(a[0]), (_pos(B, 3),), _simplex(B, 3)),
    "Exponential": (lambda L, a: L.distributions.Exponential(a[0]), (SCALE,), _pos(B)),
    "FisherSnedecor": (lambda L, a: L.distributions.FisherSnedecor(a[0], a[1]), (C1 + 4, C0 + 4), _pos(B)),
    "Gamma": (lambda L, a: L.distributions.Gamma(a[0], a[1]), (C1, C0), _pos(B)),
    "GeneralizedPareto": (lambda L, a: L.distributions.GeneralizedPareto(a[0], a[1], a[2]),
                          (LOC, SCALE, _unit(B) - 0.5), LOC + _pos(B, lo=0.1, hi=0.5)),
    "Geometric": (lambda L, a: L.distributions.Geometric(a[0]), (P,), np.array([0, 1, 4, 2, 7])),
    "Gumbel": (lambda L, a: L.distributions.Gumbel(a[0], a[1]), (LOC, SCALE), RNG.normal(size=B)),
    "HalfCauchy": (lambda L, a: L.distributions.HalfCauchy(a[0]), (SCALE,), _pos(B)),
    "HalfNormal": (lambda L, a: L.distributions.HalfNormal(a[0]), (SCALE,), _pos(B)),
    "Independent": (lambda L, a: L.distributions.Independent(L.distributions.Normal(a[0], a[1]), 1),
                    (MVLOC, _pos(B, 3)), RNG.normal(size=(B, 3))),
    "InverseGamma": (lambda L, a: L.distributions.InverseGamma(a[0], a[1]), (C1 + 2, C0), _pos(B)),
    "Kumaraswamy": (lambda L, a: L.distributions.Kumaraswamy(a[0], a[1]), (C1, C0), _unit(B)),
    "Laplace": (lambda L, a: L.distributions.Laplace(a[0], a[1]), (LOC, SCALE), RNG.normal(size=B)),
    "LogNormal": (lambda L, a: L.distributions.LogNormal(a[0], a[1]), (LOC, SCALE), _pos(B)),
    "LogisticNormal": (lambda L, a: L.distributions.LogisticNormal(a[0], a[1]), (RNG.normal(size=(B, 2)).astype(
        np.float32), _pos(B, 2)), _simplex(B, 3)),
    "LowRankMultivariateNormal": (lambda L, a: L.distributions.LowRankMultivariateNormal(a[0], a[1], a[2]),
                                  (MVLOC, RNG.normal(size=(B, 3, 2)).astype(np.float32), _pos(B, 3)),
                                  RNG.normal(size=(B, 3))),
    "MixtureSameFamily": (lambda L, a: L.distributions.MixtureSameFamily(
        L.distributions.Categorical(probs=a[0]), L.distributions.Normal(a[1], a[2])),
        (PROBS3, RNG.normal(size=(B, 3)).astype(np.float32), _pos(B, 3)), RNG.normal(size=B)),
    "Multinomial": (lambda L, a: L.distributions.Multinomial(6, probs=a[0]), (PROBS3,),
                    np.array([[1, 2, 3], [6, 0, 0], [2, 2, 2], [0, 5, 1], [3, 3, 0]])),
    "MultivariateNormal": (lambda L, a: L.distributions.MultivariateNormal(a[0], covariance_matrix=a[1]),
                           (MVLOC, COV), RNG.normal(size=(B, 3))),
    "MultivariateNormalTril": (lambda L, a: L.distributions.MultivariateNormal(a[0], scale_tril=a[1]),
                               (MVLOC, np.linalg.cholesky(COV).astype(np.float32)), RNG.normal(size=(B, 3))),
    "NegativeBinomial": (lambda L, a: L.distributions.NegativeBinomial(a[0], probs=a[1]), (C1, P), COUNTS),
    "OneHotCategorical": (lambda L, a: L.distributions.OneHotCategorical(probs=a[0]), (PROBS3,),
                          np.eye(3)[[0, 2, 1, 1, 0]]),
    "Pareto": (lambda L, a: L.distributions.Pareto(a[0], a[1]), (SCALE, C1 + 2), SCALE + _pos(B)),
    "Poisson": (lambda L, a: L.distributions.Poisson(a[0]), (SCALE,), COUNTS),
    "RelaxedBernoulli": (lambda L, a: L.distributions.RelaxedBernoulli(L.tensor(0.7), probs=a[0]), (P,), _unit(B)),
    "RelaxedOneHotCategorical": (lambda L, a: L.distributions.RelaxedOneHotCategorical(L.tensor(0.7), probs=a[0]),
                                 (PROBS3,), _simplex(B, 3)),
    "StudentT": (lambda L, a: L.distributions.StudentT(a[0], a[1], a[2]), (C1 + 2, LOC, SCALE), RNG.normal(size=B)),
    "Uniform": (lambda L, a: L.distributions.Uniform(a[0], a[0] + a[1]), (LOC, SCALE), LOC + 0.4 * SCALE),
    "VonMises": (lambda L, a: L.distributions.VonMises(a[0], a[1]), (LOC, SCALE), RNG.uniform(-3, 3, size=B)),
    "Weibull": (lambda L, a: L.distributions.Weibull(a[0], a[1]), (SCALE, C1), _pos(B)),
    "Wishart": (lambda L, a: L.distributions.Wishart(a[1], covariance_matrix=a[0]),
                (COV[:2], np.array([4.0, 5.5], dtype=np.float32)), COV[2:4]),
    "LKJCholesky": (lambda L, a: L.distributions.LKJCholesky(3, a[0]), (C1,), np.linalg.cholesky(
        np.array([[1, .3, .1], [.3, 1, .2], [.1, .2, 1]], dtype=np.float32))[None].repeat(B, 0)),
    "TransformedDistribution": (lambda L, a: L.distributions.TransformedDistribution(
        L.distributions.Normal(a[0], a[1]), [L.distributions.transforms.ExpTransform(),
                                             L.distributions.transforms.AffineTransform(1.0, 2.0)]),
        (LOC, SCALE), 1 + 2 * _pos(B)),
}


def _make(name, lib, device=None):
    factory, params, _ = CASES[name]
    if lib is torch:
        return factory(torch, [torch.tensor(np.asarray(p)) for p in params])
    return factory(tdx, [tdx.tensor(np.asarray(p), device=device) for p in params])


def _value(name, lib, dist, device=None):
    v = np.asarray(CASES[name][2], dtype=np.float32)
    return torch.tensor(v) if lib is torch else tdx.tensor(v, device=device)


def _same(tdx_fn, torch_fn, kind="reduction", what=""):
    """tdx's result equals torch's; where torch raises, tdx raises the same builtin kind."""
    try:
        expected = torch_fn()
    except NotImplementedError:
        with pytest.raises(NotImplementedError):
            tdx_fn()
        return
    got = tdx_fn()
    rtol, atol = tolerance("float32", kind)
    assert_close(got, expected, rtol=max(rtol, 2e-5), atol=max(atol, 2e-5), check_dtype=False, msg=what)


@pytest.mark.parametrize("name", sorted(CASES))
def test_statistics_match_torch(name, device):
    """log_prob, entropy, mean, variance, stddev, cdf and icdf (where torch has them) equal torch's."""
    dt, dx = _make(name, torch), _make(name, tdx, device)
    vt, vx = _value(name, torch, dt), _value(name, tdx, dx, device)
    assert tuple(dx.batch_shape) == tuple(dt.batch_shape) and tuple(dx.event_shape) == tuple(dt.event_shape)
    _same(lambda: dx.log_prob(vx), lambda: dt.log_prob(vt), what=f"{name}.log_prob")
    _same(lambda: dx.entropy(), lambda: dt.entropy(), what=f"{name}.entropy")
    _same(lambda: dx.mean, lambda: dt.mean, what=f"{name}.mean")
    _same(lambda: dx.variance, lambda: dt.variance, what=f"{name}.variance")
    _same(lambda: dx.mode, lambda: dt.mode, what=f"{name}.mode")
    if name in ("Normal", "Cauchy", "Exponential", "Laplace", "Uniform", "HalfNormal", "HalfCauchy", "Gumbel",
                "LogNormal", "Pareto", "Weibull", "TransformedDistribution", "ContinuousBernoulli",
                "GeneralizedPareto", "Gamma"):
        _same(lambda: dx.cdf(vx), lambda: dt.cdf(vt), what=f"{name}.cdf")
        q = np.array([0.1, 0.3, 0.5, 0.7, 0.9], dtype=np.float32)
        _same(lambda: dx.icdf(tdx.tensor(q, device=device)), lambda: dt.icdf(torch.tensor(q)), what=f"{name}.icdf")


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.float64
def test_seeded_sample_shape_dtype_support(name, device):
    """sample((4,)) has torch's shape and dtype, lies in the support, and a seed repeats it."""
    dt, dx = _make(name, torch), _make(name, tdx, device)
    expected = dt.sample((4,))
    tdx.manual_seed(3)
    got = dx.sample((4,))
    tdx.manual_seed(3)
    again = dx.sample((4,))
    assert tuple(got.shape) == tuple(expected.shape), name
    assert str(got.dtype) == str(expected.dtype).replace("torch.", "tdx."), name
    assert_close(got, again, rtol=0, atol=0, msg=f"{name}: same seed, same draws")
    assert bool(dx.support.check(got).all()), f"{name}: a draw outside {dx.support}"
    if name == "Normal" and device == "cpu":  # the torch executor draws torch's very numbers
        torch.manual_seed(3)
        assert_close(got, dt.sample((4,)), rtol=0, atol=0)


RSAMPLE = ["Normal", "Uniform", "Exponential", "Laplace", "Cauchy", "Gumbel", "LogNormal", "HalfNormal",
           "MultivariateNormal", "LowRankMultivariateNormal", "RelaxedBernoulli", "RelaxedOneHotCategorical",
           "Independent", "TransformedDistribution", "Weibull", "Pareto", "Kumaraswamy"]
GAMMA_RSAMPLE = ["Gamma", "Beta", "Dirichlet", "Chi2", "StudentT", "InverseGamma"]


@pytest.mark.parametrize("name", RSAMPLE + GAMMA_RSAMPLE)
def test_rsample_gradients(name, device):
    """Gradients through rsample reach the parameters: d(sum rsample)/d params equals torch's where the
    draws are reproducible (cpu, seeded); elsewhere they exist, are finite and match the
    reparameterization identity checked through log_prob's gradient shape."""
    factory, params, _ = CASES[name]
    pt = [torch.tensor(np.asarray(p)).requires_grad_() for p in params]
    torch.manual_seed(5)
    yt = factory(torch, pt).rsample((3,))
    yt.square().sum().backward()
    px = [tdx.tensor(np.asarray(p), device=device).requires_grad_() for p in params]
    tdx.manual_seed(5)
    if name in ("Beta", "Dirichlet") and tdx.tensor(0.0, device=device)._ex.taped:
        with pytest.raises(tdx.UnsupportedOpError, match="_dirichlet_grad"):
            factory(tdx, px).rsample((3,)).square().sum().backward()
        return
    yx = factory(tdx, px).rsample((3,))
    yx.square().sum().backward()
    for x, t in zip(px, pt):
        assert x.grad is not None and tuple(x.grad.shape) == tuple(t.grad.shape), name
        assert bool(x.grad.isfinite().all()), name
        if device == "cpu":
            assert_close(x.grad, t.grad, rtol=1e-4, atol=1e-5, msg=name)
    if device != "cpu":  # reproduce the draws' noise from tdx's own sample and check the chain rule
        _rsample_gradient_identity(name, factory, params, device)


def test_standard_gamma_grad_matches_torch(device):
    """The reparameterization gradient of gamma draws (what Gamma, Chi2, StudentT rsample differentiate
    through) equals torch's ``_standard_gamma_grad`` at the same draws, on every executor; and
    d E[rsample] / d concentration is 1, measured through tdx's own draws."""
    torch.manual_seed(0)
    alpha = torch.tensor([0.05, 0.3, 1.0, 2.5, 9.0, 45.0, 150.0]).repeat(3)
    x = torch._standard_gamma(alpha)
    got = tdx._standard_gamma_grad(tdx.tensor(alpha.numpy(), device=device), tdx.tensor(x.numpy(), device=device))
    assert_close(got, torch._standard_gamma_grad(alpha, x), rtol=3e-4, atol=1e-6)
    a = tdx.tensor([0.5, 2.0, 7.0], device=device, requires_grad=True)
    tdx.manual_seed(1)
    D.Gamma(a, tdx.ones(3, device=device)).rsample((4000,)).mean(0).sum().backward()
    assert_close(a.grad, tdx.ones(3, device=device), rtol=0.08, atol=0.0)


def _rsample_gradient_identity(name, factory, params, device):
    """For location-scale families, d sum(rsample)/d loc = number of draws: an exact check of the
    gradient on any executor."""
    if name not in ("Normal", "Laplace", "Cauchy", "Gumbel", "Uniform"):
        return
    px = [tdx.tensor(np.asarray(p), device=device).requires_grad_() for p in params]
    factory(tdx, px).rsample((3,)).sum().backward()
    assert_close(px[0].grad, tdx.full((B,), 3.0, device=device), rtol=1e-6, atol=1e-6)


KL_PAIRS = [("Normal", "Normal"), ("Bernoulli", "Bernoulli"), ("Beta", "Beta"), ("Categorical", "CategoricalLogits"),
            ("Exponential", "Exponential"), ("Gamma", "Gamma"), ("Laplace", "Laplace"), ("Poisson", "Poisson"),
            ("MultivariateNormal", "MultivariateNormalTril"), ("Dirichlet", "Dirichlet"), ("Uniform", "Normal"),
            ("Geometric", "Geometric"), ("Gumbel", "Gumbel"), ("Independent", "Independent"),
            ("OneHotCategorical", "OneHotCategorical"), ("HalfNormal", "HalfNormal"), ("Pareto", "Pareto"),
            ("LowRankMultivariateNormal", "MultivariateNormal"), ("Exponential", "Gamma")]


@pytest.mark.parametrize("p,q", KL_PAIRS, ids=[f"{p}-{q}" for p, q in KL_PAIRS])
def test_kl_divergence_pairs(p, q, device):
    """kl_divergence of registered pairs equals torch's; an unregistered pair raises NotImplementedError."""
    _same(lambda: D.kl_divergence(_make(p, tdx, device), _make(q, tdx, device)),
          lambda: torch.distributions.kl_divergence(_make(p, torch), _make(q, torch)), what=f"KL({p}||{q})")


def test_kl_unregistered_and_register_kl(device):
    """An unregistered pair raises NotImplementedError; register_kl adds a rule that is then used."""
    class Mine(D.Normal):
        pass

    a, b = D.Cauchy(tdx.zeros(2, device=device), 1.0), D.Poisson(tdx.ones(2, device=device))
    with pytest.raises(NotImplementedError):
        D.kl_divergence(a, b)

    @D.register_kl(Mine, Mine)
    def _kl(p, q):
        return (p.loc - q.loc).abs()

    m1, m2 = Mine(tdx.zeros(2, device=device), 1.0), Mine(tdx.full((2,), 3.0, device=device), 1.0)
    assert_close(D.kl_divergence(m1, m2), tdx.full((2,), 3.0, device=device))


def test_constraints_and_transforms(device):
    """constraints' check and biject_to/transform_to transforms equal torch's."""
    x = np.array([-1.0, 0.0, 0.5, 1.0, 2.0], dtype=np.float32)
    xt, xx = torch.tensor(x), tdx.tensor(x, device=device)
    for name in ("positive", "nonnegative", "unit_interval", "real", "boolean", "nonnegative_integer"):
        assert_close(getattr(D.constraints, name).check(xx), getattr(torch.distributions.constraints, name).check(xt))
    assert_close(D.constraints.interval(0.0, 1.0).check(xx), torch.distributions.constraints.interval(0.0, 1.0).check(xt))
    for c in ("positive", "unit_interval", "simplex", "real_vector", "corr_cholesky", "interval"):
        ct, cx = getattr(torch.distributions.constraints, c), getattr(D.constraints, c)
        if c == "interval":
            ct, cx = ct(-1.0, 2.0), cx(-1.0, 2.0)
        v = RNG.normal(size=(2, 3)).astype(np.float32)
        tt, tx = torch.distributions.biject_to(ct), D.biject_to(cx)
        yt, yx = tt(torch.tensor(v)), tx(tdx.tensor(v, device=device))
        assert_close(yx, yt, rtol=1e-5, atol=1e-6, msg=c)
        assert bool(cx.check(yx).all()), c
        assert_close(tx.log_abs_det_jacobian(tdx.tensor(v, device=device), yx),
                     tt.log_abs_det_jacobian(torch.tensor(v), yt), rtol=1e-5, atol=1e-5, msg=c)
        assert_close(tx.inv(yx), tt.inv(yt), rtol=1e-4, atol=1e-4, msg=c)


@pytest.mark.parametrize("make, kind", [
    (lambda dev: D.Normal(tdx.zeros(2, device=dev), tdx.tensor([1.0, -1.0], device=dev)), ValueError),
    (lambda dev: D.Bernoulli(probs=tdx.tensor([1.5], device=dev)), ValueError),
    (lambda dev: D.Categorical(probs=tdx.tensor([0.5, -0.1], device=dev)), ValueError),
    (lambda dev: D.Bernoulli(probs=tdx.tensor([0.5], device=dev), logits=tdx.tensor([0.0], device=dev)), ValueError),
    (lambda dev: D.Normal(tdx.zeros(2, device=dev), 1.0).log_prob(tdx.zeros(3, device=dev)), ValueError),
    (lambda dev: D.Bernoulli(probs=tdx.tensor([0.5], device=dev)).log_prob(tdx.tensor([0.5], device=dev)), ValueError),
    (lambda dev: D.Normal("a", 1.0), ValueError),
])
def test_bad_arguments_are_typed(make, kind, device):
    """torch's argument validation: a typed error (TdxError and the builtin torch raises) naming the argument."""
    with pytest.raises(kind) as info:
        make(device)
    assert isinstance(info.value, tdx.TdxError), repr(info.value)


def test_set_default_validate_args(device):
    """With validation off, bad parameters are accepted as torch accepts them; on again, refused."""
    try:
        D.Distribution.set_default_validate_args(False)
        torch.distributions.Distribution.set_default_validate_args(False)
        dx = D.Normal(tdx.zeros(1, device=device), tdx.tensor([-1.0], device=device))
        dt = torch.distributions.Normal(torch.zeros(1), torch.tensor([-1.0]))
        assert_close(dx.log_prob(tdx.ones(1, device=device)), dt.log_prob(torch.ones(1)))
    finally:
        D.Distribution.set_default_validate_args(True)
        torch.distributions.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError):
        D.Normal(tdx.zeros(1, device=device), tdx.tensor([-1.0], device=device))


def test_expand_and_batch_shapes(device):
    """expand gives torch's batch shape and the same log_prob on the broadcast value."""
    dt = torch.distributions.Gamma(torch.tensor(C1), torch.tensor(C0)).expand((2, B))
    dx = D.Gamma(tdx.tensor(C1, device=device), tdx.tensor(C0, device=device)).expand((2, B))
    assert tuple(dx.batch_shape) == tuple(dt.batch_shape)
    v = _pos(2, B)
    _same(lambda: dx.log_prob(tdx.tensor(v, device=device)), lambda: dt.log_prob(torch.tensor(v)))


@pytest.mark.parametrize("stream", ["torch", "native"])
def test_samplers_moments(device, stream, monkeypatch):
    """torch.poisson/binomial/_standard_gamma/_sample_dirichlet draws have the right moments on every
    executor, from torch's stream (torch's own kernels) and from MLX's own (its rejection samplers)."""
    monkeypatch.setenv("TDX_RANDOM_STREAM", stream)
    tdx.manual_seed(0)
    n = 4000
    rate = tdx.tensor([0.5, 4.0, 30.0], device=device).expand(n, 3).contiguous()
    pois = tdx.poisson(rate)
    assert_close(pois.mean(0), tdx.tensor([0.5, 4.0, 30.0], device=device), rtol=0.08, atol=0.05)
    alpha = tdx.tensor([0.4, 1.0, 6.0], device=device).expand(n, 3).contiguous()
    g = tdx._standard_gamma(alpha)
    assert_close(g.mean(0), tdx.tensor([0.4, 1.0, 6.0], device=device), rtol=0.08, atol=0.03)
    assert bool((g > 0).all())
    cnt = tdx.tensor([10.0, 50.0, 0.0], device=device).expand(n, 3).contiguous()
    prob = tdx.tensor([0.3, 0.8, 0.5], device=device).expand(n, 3).contiguous()
    b = tdx.binomial(cnt, prob)
    assert_close(b.mean(0), tdx.tensor([3.0, 40.0, 0.0], device=device), rtol=0.05, atol=0.1)
    assert bool((b <= cnt).all()) and bool((b >= 0).all())
    d = tdx._sample_dirichlet(tdx.tensor([1.0, 2.0, 5.0], device=device).expand(n, 3).contiguous())
    assert_close(d.sum(-1), tdx.ones(n, device=device), rtol=1e-5, atol=1e-5)
    assert_close(d.mean(0), tdx.tensor([0.125, 0.25, 0.625], device=device), rtol=0.05, atol=0.01)
    if not tdx.backends.get(device).caps.device_side_checks:  # else a device-side assert, as torch's
        with pytest.raises(RuntimeError) as info:
            tdx.poisson(tdx.tensor([-1.0], device=device))
        assert isinstance(info.value, tdx.TdxError)
    # torch's argument rules: count and prob broadcast; integer count or rate is refused, typed as torch's
    assert tuple(tdx.binomial(tdx.tensor([10.0, 5.0], device=device), tdx.tensor(0.5, device=device)).shape) == (2,)
    for call, kind in ((lambda: tdx.binomial(tdx.tensor([10, 5], device=device), tdx.tensor([0.5, 0.5], device=device)),
                        ValueError),
                       (lambda: tdx.poisson(tdx.tensor([1, 2], device=device)), NotImplementedError)):
        with pytest.raises(kind) as info:
            call()
        assert isinstance(info.value, tdx.TdxError) and "Long" in str(info.value)


def test_namespace_is_torchs_package_on_tdx():
    """tdx.distributions is one module under both names, its classes take tdx tensors, and its
    submodules are torch's files run under tdx names."""
    import tdx.compat.distributions as compat

    assert compat is D
    assert D.normal.Normal is D.Normal
    assert D.Normal.__module__ == "tdx.compat.distributions.normal"
    assert D.normal.torch is tdx
    assert set(torch.distributions.__all__) <= set(dir(D))


def test_torch_rules_the_distributions_rely_on(device):
    """A 0-d CPU tensor is a scalar operand of an op on any device, either side (torch's rule that
    ``RelaxedBernoulli(torch.tensor(0.7), probs=x_cuda)`` needs); CPU integer index tensors index a
    tensor on any device; ``exponential_``/``cauchy_``/``geometric_`` draw torch's own stream: its CPU one, or
    on cuda torch's Philox stream there (the device's torch twin)."""
    twin = {"device": torch_twin(device)}
    x = tdx.tensor([1.0, 2.0, 3.0], device=device)
    c = tdx.tensor(2.0, device="cpu")  # named: tdx's default device is cuda where a GPU is present
    for got, want in ((c * x, [2.0, 4.0, 6.0]), (x - c, [-1.0, 0.0, 1.0]), (c - x, [1.0, 0.0, -1.0]),
                      (tdx.mul(c, x), [2.0, 4.0, 6.0]), (c.mul(x), [2.0, 4.0, 6.0]),
                      (tdx.isclose(x, c), [False, True, False])):
        assert got.device == x.device
        assert got.tolist() == want
    assert x[tdx.tensor([2, 0], device="cpu")].tolist() == [3.0, 1.0]
    with pytest.raises(RuntimeError) as info:  # a non-scalar CPU operand is still torch's mixed-device error
        _ = x + tdx.ones(3, device="cpu") if device != "cpu" else x + tdx.ones(3, device="mlx:cpu")
    assert isinstance(info.value, tdx.TdxError)
    for name, args in (("exponential_", (2.0,)), ("cauchy_", (0.5, 2.0)), ("geometric_", (0.3,))):
        tdx.manual_seed(11)  # torch's stream on every executor by default: torch's very numbers
        got = getattr(tdx.empty(6, device=device), name)(*args)
        torch.manual_seed(11)
        assert_close(got, getattr(torch.empty(6, **twin), name)(*args), rtol=0, atol=0, msg=name)
    for draw in (lambda L, dev: L.poisson(L.tensor([0.5, 4.0, 30.0], **dev)),
                 lambda L, dev: L._standard_gamma(L.tensor([0.3, 2.0, 9.0], **dev)),
                 lambda L, dev: L.binomial(L.tensor([10.0, 3.0, 50.0], **dev), L.tensor([0.2, 0.5, 0.9], **dev)),
                 lambda L, dev: L._sample_dirichlet(L.tensor([0.5, 1.0, 4.0], **dev))):
        tdx.manual_seed(12)
        got = draw(tdx, {"device": device})
        torch.manual_seed(12)
        assert_close(got, draw(torch, twin), rtol=0, atol=0)


def test_native_stream_fills(device, monkeypatch):
    """exponential_/cauchy_/geometric_ from an executor's own stream have the right support and moments."""
    monkeypatch.setenv("TDX_RANDOM_STREAM", "native")
    tdx.manual_seed(11)
    e = tdx.empty(4000, device=device).exponential_(2.0)
    assert bool((e > 0).all()) and abs(e.mean().item() - 0.5) < 0.05
    c = tdx.empty(4000, device=device).cauchy_(1.0, 0.5)
    assert abs(c.median().item() - 1.0) < 0.05
    g = tdx.empty(4000, device=device).geometric_(0.25)
    assert bool((g >= 1).all()) and abs(g.mean().item() - 4.0) < 0.3


def test_without_torch_installed_the_namespace_names_what_to_install(monkeypatch):
    """Where the torch package is absent, the namespaces built on its source raise NotProvidedError
    (an ImportError and a TdxError) saying to install torch."""
    import importlib.machinery

    from tdx.aliasing import torch_source

    real = importlib.machinery.PathFinder.find_spec
    monkeypatch.setattr(importlib.machinery.PathFinder, "find_spec",
                        classmethod(lambda cls, name, path=None, target=None:
                                    None if name == "torch" else real(name, path, target)))
    with pytest.raises(ImportError) as info:
        torch_source.torch_package_dir("torch.distributions")
    assert isinstance(info.value, tdx.NotProvidedError)
    assert "pip install torch" in str(info.value) and "torch.distributions" in str(info.value)


def test_import_forms_under_the_alias(device):
    """``import torch.distributions as dist``, ``from torch.distributions.normal import Normal`` and
    ``from torch.distributions import constraints`` give tdx's classes under the torch alias."""
    from tdx.aliasing.torch_alias import torch_alias

    with torch_alias():
        import torch.distributions as dist
        from torch.distributions import Categorical, constraints, kl_divergence  # noqa: F401
        from torch.distributions.normal import Normal

    assert dist is D and Normal is D.Normal and Categorical is D.Categorical
    m = Categorical(logits=tdx.zeros(4, device=device))
    tdx.manual_seed(0)
    a = m.sample((3,))
    assert a.device == tdx.device(device) and str(a.dtype) == "tdx.int64" and bool(constraints.integer_interval(0, 3).check(a).all())
