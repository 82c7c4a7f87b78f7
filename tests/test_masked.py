"""``tdx.masked`` against torch.masked on CPU: values, dtypes, fully masked slices and gradients, every device.

Tolerances: float32 2e-6 relative (reductions of 4-6 terms), float64 1e-12. Each mask has a fully
masked row, so the identity / NaN handling of fully masked slices is compared too.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import tdx
import tdx.masked as M
from tdx.testing.parity import assert_close

TOL = {"float32": dict(rtol=2e-6, atol=2e-6), "float64": dict(rtol=1e-12, atol=1e-12)}
RNG = np.random.default_rng(3)
A = RNG.uniform(-2, 2, (4, 5))
MASK = RNG.random((4, 5)) > 0.4
MASK[2] = False  # a fully masked row
MASK[0, 0] = True
REDUCTIONS = ["sum", "prod", "amax", "amin", "mean", "logsumexp", "norm", "var", "std"]
ALONG = ["softmax", "log_softmax", "softmin", "cumsum", "cumprod", "argmax", "argmin", "median"]
SMOOTH = {"sum", "prod", "mean", "logsumexp", "norm", "var", "std", "softmax", "log_softmax", "softmin", "cumsum",
          "cumprod", "amax", "amin", "median"}


def _pair(a, device, dtype, grad=False):
    x = tdx.tensor(a, dtype=getattr(tdx, dtype), device=device)
    t = torch.tensor(a).to(getattr(torch, dtype))
    return (x.requires_grad_(), t.requires_grad_()) if grad else (x, t)


def _masks(device, m=MASK):
    return tdx.tensor(m, device=device), torch.tensor(m)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", REDUCTIONS)
def test_reductions(device, name, dtype):
    mk, mt = _masks(device)
    for dim, keepdim in ((1, False), (0, True), ((0, 1), False), (None, False), (-1, True)):
        x, t = _pair(A, device, dtype, grad=True)
        got = getattr(M, name)(x, dim=dim, keepdim=keepdim, mask=mk)
        want = getattr(torch.masked, name)(t, dim=dim, keepdim=keepdim, mask=mt)
        assert_close(got, want.detach(), msg=f"{name} dim={dim}", **TOL[dtype])
        finite = torch.isfinite(want).detach()
        w = torch.linspace(-1, 1, want.numel()).reshape(want.shape).to(want.dtype) * finite
        (got * tdx.tensor(w.numpy(), device=device)).sum().backward()
        (want * w).nan_to_num(0.0).sum().backward()
        assert_close(x.grad, t.grad, msg=f"{name} grad dim={dim}", **TOL[dtype])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", ALONG)
def test_along_dim(device, name, dtype):
    mk, mt = _masks(device)
    for dim in (1, 0, -1):
        x, t = _pair(A, device, dtype, grad=name in SMOOTH)
        got, want = getattr(M, name)(x, dim, mask=mk), getattr(torch.masked, name)(t, dim, mask=mt)
        assert_close(got, want.detach(), msg=f"{name} dim={dim}", **TOL[dtype])
        if name in SMOOTH:
            finite = torch.isfinite(want).detach()
            w = torch.linspace(-1, 1, want.numel()).reshape(want.shape).to(want.dtype) * finite
            (got * tdx.tensor(w.numpy(), device=device)).nan_to_num(0.0).sum().backward()
            (want * w).nan_to_num(0.0).sum().backward()
            assert_close(x.grad, t.grad, msg=f"{name} grad dim={dim}", **TOL[dtype])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_norms_of_a_0d_tensor(device, dtype):
    # dim 0 or -1 of a 0-d tensor is its one element (torch's), masked or not
    for mask in (None, np.array(True), np.array(False)):
        for dim, keepdim in ((0, True), (-1, False), ((), False), (None, False)):
            x, t = _pair(np.array(-1.5), device, dtype, grad=True)
            mk, mt = (None, None) if mask is None else _masks(device, mask)
            got = M.norm(x, 2.0, dim=dim, keepdim=keepdim, mask=mk)
            want = torch.masked.norm(t, 2.0, dim=dim, keepdim=keepdim, mask=mt)
            assert_close(got, want.detach(), msg=f"norm dim={dim} mask={mask}", **TOL[dtype])
            got.backward()
            want.backward()
            assert_close(x.grad, t.grad, msg=f"norm grad dim={dim} mask={mask}", **TOL[dtype])
            if dim not in ((), None):
                assert_close(M.normalize(x.detach(), 2.0, dim, mask=mk),
                             torch.masked.normalize(t.detach(), 2.0, dim, mask=mt), **TOL[dtype])
    x, t = _pair(np.array(-1.5), device, dtype)
    assert_close(tdx.linalg.vector_norm(x, 3.0, dim=(0,), keepdim=True),
                 torch.linalg.vector_norm(t, 3.0, dim=(0,), keepdim=True), **TOL[dtype])
    with pytest.raises(IndexError):
        tdx.linalg.vector_norm(x, dim=1)
    with pytest.raises(IndexError):
        torch.linalg.vector_norm(t, dim=1)


def test_fully_masked_identities(device):
    x, t = _pair(A, device, "float32")
    none = np.zeros_like(MASK)
    mk, mt = _masks(device, none)
    for name in REDUCTIONS:
        assert_close(getattr(M, name)(x, dim=1, mask=mk), getattr(torch.masked, name)(t, dim=1, mask=mt), msg=name)
    for name in ("softmax", "log_softmax", "softmin", "median", "argmax", "argmin"):
        assert_close(getattr(M, name)(x, dim=1, mask=mk), getattr(torch.masked, name)(t, dim=1, mask=mt), msg=name)
    nan = tdx.tensor([[1.0, float("nan"), 3.0, 2.0]], device=device)
    assert_close(M.median(nan, 1, mask=tdx.tensor([[True, True, True, False]], device=device)),
                 torch.masked.median(torch.tensor([[1.0, float("nan"), 3.0, 2.0]]), 1,
                                     mask=torch.tensor([[True, True, True, False]])))


@pytest.mark.float64
def test_integer_inputs_and_dtype_argument(device):
    a = RNG.integers(-5, 6, (4, 5))
    mk, mt = _masks(device)
    for dt in ("int64", "int32"):
        x, t = _pair(a, device, dt)
        for name in ("sum", "prod", "amax", "amin", "argmax", "argmin", "var", "std", "cumsum", "cumprod"):
            dim = 1 if name not in ("argmax", "argmin") else 0
            assert_close(getattr(M, name)(x, dim, mask=mk), getattr(torch.masked, name)(t, dim, mask=mt),
                         msg=f"{name} {dt}", **TOL["float32"])
        assert_close(M.mean(x, 1, dtype=tdx.float32, mask=mk), torch.masked.mean(t, 1, dtype=torch.float32, mask=mt))
        full = np.ones_like(MASK)
        assert_close(M.median(x, 1, mask=tdx.tensor(full, device=device)),
                     torch.masked.median(t, 1, mask=torch.tensor(full)))
    x, t = _pair(A, device, "float32")
    assert_close(M.sum(x, 1, dtype=tdx.float64, mask=mk), torch.masked.sum(t, 1, dtype=torch.float64, mask=mt),
                 **TOL["float32"])
    assert_close(M.softmax(x, 0, dtype=tdx.float64, mask=mk), torch.masked.softmax(t, 0, dtype=torch.float64, mask=mt),
                 **TOL["float32"])


@pytest.mark.float64
def test_broadcast_mask_no_mask_and_options(device):
    x, t = _pair(A, device, "float64")
    row = np.array([True, False, True, True, False])
    mk, mt = tdx.tensor(row, device=device), torch.tensor(row)
    for name in REDUCTIONS:
        assert_close(getattr(M, name)(x, dim=0, mask=mk), getattr(torch.masked, name)(t, dim=0, mask=mt), msg=name,
                     **TOL["float64"])
        assert_close(getattr(M, name)(x, dim=1), getattr(torch.masked, name)(t, dim=1), msg=f"{name} no mask",
                     **TOL["float64"])
    full_mk, full_mt = _masks(device)
    assert_close(M.var(x, 1, unbiased=False, mask=full_mk), torch.masked.var(t, 1, unbiased=False, mask=full_mt))
    assert_close(M.var(x, 1, correction=2, mask=full_mk), torch.masked.var(t, 1, correction=2, mask=full_mt))
    assert_close(M.std(x, (0, 1), keepdim=True, mask=full_mk), torch.masked.std(t, (0, 1), keepdim=True, mask=full_mt))
    for ord_ in (1.0, float("inf"), float("-inf"), 3.0):
        assert_close(M.norm(x, ord_, 1, mask=full_mk), torch.masked.norm(t, ord_, 1, mask=full_mt), msg=str(ord_))
        assert_close(M.normalize(x, ord_, 1, mask=full_mk), torch.masked.normalize(t, ord_, 1, mask=full_mt),
                     msg=f"normalize {ord_}")
    y, u = _pair(A[::-1].copy(), device, "float64")
    assert_close(M.logaddexp(x, y, input_mask=full_mk, other_mask=~full_mk),
                 torch.masked.logaddexp(t, u, input_mask=full_mt, other_mask=~full_mt))
    assert_close(M.logaddexp(x, y), torch.masked.logaddexp(t, u))
    s, st = _pair(2.5, device, "float32")
    assert_close(M.sum(s, mask=tdx.tensor(False, device=device)), torch.masked.sum(st, mask=torch.tensor(False)))


@pytest.mark.float64
def test_bad_input(device):
    x = tdx.tensor(A, device=device)
    with pytest.raises(tdx.TdxError) as err:
        M.sum(x, 1, mask=tdx.ones(2, 4, 5, dtype=tdx.bool, device=device))
    assert isinstance(err.value, IndexError) and "dimensionality" in str(err.value)
    with pytest.raises(IndexError, match="out of range"):
        M.sum(x, 2, mask=tdx.ones(4, 5, dtype=tdx.bool, device=device))
    with pytest.raises(RuntimeError, match="multiple times"):
        M.amax(x, (1, -1))
    with pytest.raises(ValueError, match="floating point"):
        M.mean(x.to(tdx.int64), 1)
    with pytest.raises(ValueError, match="fully masked"):
        M.median(x.to(tdx.int64), 1, mask=tdx.tensor(MASK, device=device))
    with pytest.raises(TypeError, match="mask must be a Tensor"):
        M.sum(x, 1, mask=MASK)
    with pytest.raises(RuntimeError, match="not implemented for 'Bool'") as err:
        M.cumsum(tdx.tensor(MASK, device=device), 1, mask=tdx.tensor(MASK, device=device))
    assert isinstance(err.value, tdx.TdxError)
    with pytest.raises(RuntimeError):
        torch.masked.cumsum(torch.tensor(MASK), 1, mask=torch.tensor(MASK))
    with pytest.raises(RuntimeError, match="no identity") as err:
        M.amax(tdx.tensor(MASK, device=device), 1, mask=tdx.tensor(MASK, device=device))
    assert isinstance(err.value, tdx.TdxError)
    for fn in (M.sum, M.softmax, M.var):
        with pytest.raises(TypeError, match="input must be a Tensor") as err:
            fn([1.0, 2.0], 0)
        assert isinstance(err.value, tdx.TdxError)
    assert M.is_masked_tensor(x) is False


def test_public_names():
    skip = {"MaskedTensor", "masked_tensor", "as_masked_tensor", "maskedtensor"}  # the prototype tensor subclass
    missing = [n for n in dir(torch.masked) if not n.startswith("_") and n not in skip and not hasattr(M, n)]
    assert not missing, missing
