"""``tdx.signal.windows`` and tdx's top-level ``*_window`` functions against torch on CPU, every device.

Tolerances: float32 1e-6 absolute (window values lie in [0, 1]; cos/exp of float32 arguments
differ in the last bit), float64 1e-13. kaiser's i0 is a power series on MLX (see test_special),
float32 2e-6.
"""

from __future__ import annotations

import pytest
import torch

import tdx
import tdx.signal.windows as W
from tdx.testing.parity import assert_close

TOL = {"float32": dict(rtol=1e-6, atol=1e-6), "float64": dict(rtol=1e-13, atol=1e-13)}
PLAIN = ["bartlett", "blackman", "cosine", "hamming", "hann", "nuttall"]
WITH_ARGS = [("exponential", {"tau": 2.5}), ("gaussian", {"std": 1.7}), ("kaiser", {"beta": 8.0}),
             ("general_cosine", {"a": [0.46, 0.23, 0.31]}), ("general_hamming", {"alpha": 0.6}), ("exponential", {}),
             ("gaussian", {}), ("kaiser", {}), ("general_hamming", {})]
LENGTHS = (0, 1, 2, 7, 16)


def _tol(name, dtype):
    return dict(rtol=2e-6, atol=2e-6) if name == "kaiser" and dtype == "float32" else TOL[dtype]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name, kw", [(n, {}) for n in PLAIN] + WITH_ARGS,
                         ids=[n for n in PLAIN] + [f"{n}-{'-'.join(map(str, k.values()))}" for n, k in WITH_ARGS])
def test_windows(device, name, kw, dtype):
    for M in LENGTHS:
        for sym in (True, False):
            got = getattr(W, name)(M, sym=sym, dtype=getattr(tdx, dtype), device=device, **kw)
            want = getattr(torch.signal.windows, name)(M, sym=sym, dtype=getattr(torch, dtype), **kw)
            assert_close(got, want, msg=f"{name} M={M} sym={sym}", **_tol(name, dtype))
            assert got.device == tdx.device(device)


def test_exponential_center_and_defaults(device):
    assert_close(W.exponential(9, center=2.0, sym=False, device=device),
                 torch.signal.windows.exponential(9, center=2.0, sym=False), **TOL["float32"])
    got = W.hann(8, device=device)
    assert got.dtype == tdx.float32 and not got.requires_grad
    g = W.gaussian(6, device=device, requires_grad=True)
    t = torch.signal.windows.gaussian(6, requires_grad=True)
    assert g.requires_grad and t.requires_grad and g.is_leaf == t.is_leaf


TOP = [("hann_window", {}), ("hamming_window", {}), ("hamming_window", {"alpha": 0.6, "beta": 0.3}),
       ("blackman_window", {}), ("bartlett_window", {}), ("kaiser_window", {}), ("kaiser_window", {"beta": 5.0})]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name, kw", TOP, ids=[f"{n}{'-'.join(map(str, k.values()))}" for n, k in TOP])
def test_top_level_windows(device, name, kw, dtype):
    for n in (0, 1, 2, 5, 10, 33):
        for periodic in (True, False):
            got = getattr(tdx, name)(n, periodic, dtype=getattr(tdx, dtype), device=device, **kw)
            want = getattr(torch, name)(n, periodic, dtype=getattr(torch, dtype), **kw)
            tol = dict(rtol=2e-6, atol=2e-6) if dtype == "float32" else TOL[dtype]
            assert_close(got, want, msg=f"{name} n={n} periodic={periodic}", **tol)
    assert_close(getattr(tdx, name)(12, device=device), getattr(torch, name)(12), **TOL["float32"])
    got, want = getattr(tdx, name)(6, requires_grad=True, device=device), getattr(torch, name)(6, requires_grad=True)
    assert got.requires_grad and got.is_leaf == want.is_leaf


def test_window_of_stft_idiom(device):
    w = tdx.hann_window(64, device=device)
    x = tdx.arange(64, dtype=tdx.float32, device=device)
    assert_close((x * w).sum(), (torch.arange(64, dtype=torch.float32) * torch.hann_window(64)).sum(),
                 rtol=1e-6, atol=1e-5)


def test_bad_arguments(device):
    with pytest.raises(ValueError, match="non-negative window length") as err:
        W.hann(-1, device=device)
    assert isinstance(err.value, tdx.TdxError)
    with pytest.raises(ValueError, match="float32 or float64"):
        W.hann(4, dtype=tdx.float16, device=device)
    with pytest.raises(ValueError, match="Tau must be positive"):
        W.exponential(4, tau=0, device=device)
    with pytest.raises(ValueError, match="Center must be None"):
        W.exponential(4, center=1.0, device=device)
    with pytest.raises(ValueError, match="Standard deviation"):
        W.gaussian(4, std=-1.0, device=device)
    with pytest.raises(ValueError, match="beta must be non-negative"):
        W.kaiser(4, beta=-1.0, device=device)
    with pytest.raises(ValueError, match="cannot be empty"):
        W.general_cosine(4, a=[], device=device)
    with pytest.raises(TypeError, match="list/tuple"):
        W.general_cosine(4, a=3, device=device)
    with pytest.raises(RuntimeError, match="floating point") as err:
        tdx.hann_window(4, dtype=tdx.int64, device=device)
    assert isinstance(err.value, tdx.TdxError)
    with pytest.raises(RuntimeError, match="non-negative"):
        tdx.blackman_window(-2, device=device)


def test_public_names():
    missing = [n for n in dir(torch.signal.windows) if not n.startswith("_") and not hasattr(W, n)]
    assert not missing, missing
    assert all(hasattr(tdx, n) for n in ("hann_window", "hamming_window", "blackman_window", "bartlett_window",
                                          "kaiser_window"))
