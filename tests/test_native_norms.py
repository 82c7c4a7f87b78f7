"""``torch.native_layer_norm`` and ``torch.native_group_norm`` against torch on CPU, on every device: the
output and both statistics (values, shapes, which ones carry a gradient), the input and parameter gradients,
and torch's error kind for a mismatched shape. Tolerances: float32 1e-5 (a mean and a variance of at most
24 values), float64 1e-10."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import tdx
from tdx.testing.parity import assert_close

TOL = {"float32": dict(rtol=1e-5, atol=1e-5), "float64": dict(rtol=1e-10, atol=1e-10)}


def pairs(device, dtype, *arrays):
    out = []
    for a in arrays:
        if a is None:
            out.append((None, None))
            continue
        t = torch.tensor(a).to(getattr(torch, dtype)).requires_grad_()
        out.append((tdx.tensor(a, dtype=getattr(tdx, dtype), device=device).requires_grad_(), t))
    return out


def check(device, dtype, got, expected, leaves):
    for g, e in zip(got, expected):
        assert g.requires_grad == e.requires_grad
        assert_close(g, e, **TOL[dtype])
    rng = np.random.default_rng(1)
    ups = [rng.uniform(0.5, 1.5, size=tuple(e.shape)) for e in expected]
    sum(((e * torch.tensor(u).to(e.dtype)).sum() for e, u in zip(expected, ups) if e.requires_grad)).backward()
    sum(((g * tdx.tensor(u, dtype=g.dtype, device=device)).sum() for g, u in zip(got, ups) if g.requires_grad)).backward()
    for x, t in leaves:
        if t is not None:
            assert_close(x.grad, t.grad, **TOL[dtype])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("affine", [True, False])
def test_native_layer_norm(device, dtype, affine):
    rng = np.random.default_rng(0)
    arrays = [rng.normal(size=(2, 3, 4)), rng.normal(size=(3, 4)) if affine else None,
              rng.normal(size=(3, 4)) if affine else None]
    leaves = pairs(device, dtype, *arrays)
    (x, t), (w, tw), (b, tb) = leaves
    got = tdx.native_layer_norm(x, [3, 4], w, b, 1e-5)
    expected = torch.native_layer_norm(t, [3, 4], tw, tb, 1e-5)
    check(device, dtype, got, expected, leaves)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_native_group_norm(device, dtype):
    rng = np.random.default_rng(0)
    leaves = pairs(device, dtype, rng.normal(size=(2, 6, 2, 2)), rng.normal(size=6), rng.normal(size=6))
    (x, t), (w, tw), (b, tb) = leaves
    got = tdx.native_group_norm(x, w, b, 2, 6, 4, 3, 1e-5)
    expected = torch.native_group_norm(t, tw, tb, 2, 6, 4, 3, 1e-5)
    check(device, dtype, got, expected, leaves)


def test_native_layer_norm_bad_shape(device):
    with pytest.raises(RuntimeError):
        torch.native_layer_norm(torch.zeros(2, 3), [4], None, None, 1e-5)
    with pytest.raises(RuntimeError) as err:
        tdx.native_layer_norm(tdx.zeros(2, 3, device=device), [4], None, None, 1e-5)
    assert isinstance(err.value, tdx.TdxError) and "normalized_shape" in str(err.value)
