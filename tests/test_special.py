"""``tdx.special`` against torch.special on CPU: values on every device (float32 and float64) and gradients.

Tolerances: float32 1e-5 relative (measured <= 8e-6, samples keep 0.1 from the gamma poles), float64 1e-10 relative (measured <= 5e-10 for polygamma(1); 2e-14 elsewhere).
Functions MLX has no composition for yet must raise UnsupportedOpError there.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import tdx
import tdx.special as S
from tdx.testing import assert_close

TOL = {"float32": dict(rtol=1e-5, atol=1e-5), "float64": dict(rtol=1e-10, atol=1e-10)}
RNG = np.random.default_rng(0)
X = {"pos": RNG.uniform(0.1, 8, 12), "any": RNG.uniform(-5, 5, 12), "unit": RNG.uniform(-0.99, 0.99, 12),
     "p01": RNG.uniform(0.01, 0.99, 12), "small": RNG.uniform(-3, 3, 12),
     # gamma functions: at least 0.1 from their poles (float32's reflection near a pole is ill-conditioned)
     "gam": np.array([-4.6, -3.3, -2.75, -1.5, -0.4, 0.3, 0.9, 1.7, 2.5, 3.14, 5.2, 7.9])}
UNARY = [("expit", "any"), ("logit", "p01"), ("exp2", "any"), ("expm1", "any"), ("log1p", "pos"), ("erf", "any"),
         ("erfinv", "unit"), ("sinc", "any"), ("spherical_bessel_j0", "any"), ("entr", "pos"), ("gammaln", "gam"),
         ("digamma", "gam"), ("psi", "pos"), ("i0", "any"), ("i1", "any"), ("i0e", "any"), ("i1e", "any"),
         ("modified_bessel_i0", "small"), ("modified_bessel_i1", "small")]
NO_GRAD = {"modified_bessel_i0", "modified_bessel_i1", "spherical_bessel_j0"}  # torch has no derivative
POLY = ["chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w",
        "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
        "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he", "laguerre_polynomial_l",
        "legendre_polynomial_p"]
NOT_ON_MLX = ["erfc", "erfcx", "ndtr", "log_ndtr", "ndtri", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1",
              "modified_bessel_k0", "modified_bessel_k1", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
              "airy_ai"]


def _pair(a, device, dtype, grad=False):
    t = torch.tensor(a).to(getattr(torch, dtype))
    x = tdx.tensor(a, device=device).to(getattr(tdx, dtype))
    return (x.requires_grad_(), t.requires_grad_()) if grad else (x, t)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name, kind", UNARY, ids=[u[0] for u in UNARY])
def test_unary(device, name, kind, dtype):
    grad = name not in NO_GRAD
    x, t = _pair(X[kind], device, dtype, grad)
    got, want = getattr(S, name)(x), getattr(torch.special, name)(t)
    assert_close(got, want.detach(), msg=name, **TOL[dtype])
    if grad:
        w = np.linspace(-1, 1, 12)
        (got * tdx.tensor(w, device=device).to(got.dtype)).sum().backward()
        (want * torch.tensor(w).to(want.dtype)).sum().backward()
        # torch's float64 trigamma (digamma's derivative) is accurate to ~3e-10 only: tdx's equals
        # torch.special.zeta(2, x) to 1e-15, and torch's trigamma differs from that by up to 3.3e-10
        tol = dict(rtol=1e-9, atol=1e-9) if name in ("digamma", "psi") and dtype == "float64" else TOL[dtype]
        assert_close(x.grad, t.grad, msg=f"{name} grad", **tol)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_binary_and_parametrized(device, dtype):
    tol = TOL[dtype]
    (x, t), (y, u) = _pair(X["pos"], device, dtype), _pair(X["any"], device, dtype)
    assert_close(S.xlogy(y, x), torch.special.xlogy(u, t), **tol)
    assert_close(S.xlogy(2.0, x), torch.special.xlogy(2.0, t), **tol)
    assert_close(S.xlog1py(y, x), torch.special.xlog1py(u, t), **tol)
    assert_close(S.zeta(x + 1.5, x), torch.special.zeta(t + 1.5, t), **tol)
    for n in (0, 1, 2, 3):  # n = 1: torch's trigamma, accurate to ~3e-10 in float64 (see test_unary)
        wide = dict(rtol=1e-9, atol=1e-9) if n == 1 and dtype == "float64" else tol
        assert_close(S.polygamma(n, x), torch.special.polygamma(n, t), **wide)
    assert_close(S.multigammaln(x + 2, 3), torch.special.multigammaln(t + 2, 3), **tol)
    assert_close(S.logit(x / 10, eps=0.1), torch.special.logit(t / 10, eps=0.1), **tol)
    assert_close(S.round(y, decimals=1), torch.special.round(u, decimals=1), **tol)
    a = np.linspace(-2, 2, 12).reshape(3, 4)
    (m, mt) = _pair(a, device, dtype)
    assert_close(S.softmax(m, 1), torch.special.softmax(mt, 1), **tol)
    assert_close(S.log_softmax(m, 0), torch.special.log_softmax(mt, 0), **tol)
    assert_close(S.logsumexp(m, 1, keepdim=True), torch.special.logsumexp(mt, 1, keepdim=True), **tol)


@pytest.mark.parametrize("name", POLY)
def test_polynomials(device, name):
    x, t = _pair(X["unit"], device, "float64")
    for n in (0, 1, 2, 5):
        assert_close(getattr(S, name)(x, n), getattr(torch.special, name)(t, n), msg=f"{name} {n}",
                     rtol=1e-10, atol=1e-10)
    ns = np.array([0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4])
    got = getattr(S, name)(x, tdx.tensor(ns, device=device))
    assert_close(got, getattr(torch.special, name)(t, torch.tensor(ns)), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("name", NOT_ON_MLX)
def test_torch_everywhere_and_mlx_refuses_what_it_lacks(device, name):
    a = X["p01"] if name == "ndtri" else X["pos"]
    x, t = _pair(a, device, "float32")
    if device.startswith("mlx"):
        with pytest.raises(tdx.UnsupportedOpError, match=name):
            getattr(S, name)(x)
    else:
        assert_close(getattr(S, name)(x), getattr(torch.special, name)(t), rtol=1e-6, atol=1e-6)
    for other in ("gammainc", "gammaincc"):
        if not device.startswith("mlx"):
            assert_close(getattr(S, other)(x, x), getattr(torch.special, other)(t, t), rtol=1e-6, atol=1e-6)


def test_integer_input_is_float32(device):
    got = S.expit(tdx.tensor([0, 1, 2], device=device))
    assert got.dtype == tdx.float32
    assert_close(got, torch.special.expit(torch.tensor([0, 1, 2])), rtol=1e-6, atol=1e-6)


def test_torch_special_coverage():
    names = [n for n in dir(torch.special) if not n.startswith("_") and callable(getattr(torch.special, n))]
    missing = [n for n in names if not hasattr(S, n)]
    assert not missing, missing
