"""Convolutions and average pooling of integer tensors against torch on CPU, on every device: torch's CPU
kernels take int64 (a convolution any integer dtype; average pooling truncates the window mean toward
zero and keeps int64), and refuse other dtypes with NotImplementedError naming the kernel."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import tdx
from nn_oracle import raises_like


def ints(*shape, seed=0):
    return np.random.default_rng(seed).integers(-9, 10, size=shape).astype(np.int64)


def same(got, expected):
    assert str(got.dtype).rsplit(".", 1)[-1] == str(expected.dtype).rsplit(".", 1)[-1]
    np.testing.assert_array_equal(got.cpu().numpy(), expected.numpy())


@pytest.mark.parametrize("nd", [1, 2, 3])
def test_conv_int64(device, nd):
    x, w, b = ints(2, 4, *(5,) * nd), ints(6, 2, *(3,) * nd, seed=1), ints(6, seed=2)
    f = f"conv{nd}d"
    kw = dict(stride=2, padding=1, groups=2)
    expected = getattr(torch.nn.functional, f)(torch.tensor(x), torch.tensor(w), torch.tensor(b), **kw)
    got = getattr(tdx.nn.functional, f)(tdx.tensor(x, device=device), tdx.tensor(w, device=device),
                                        tdx.tensor(b, device=device), **kw)
    same(got, expected)


@pytest.mark.parametrize("nd", [1, 2, 3])
def test_conv_transpose_int64(device, nd):
    x, w = ints(1, 4, *(4,) * nd), ints(4, 3, *(2,) * nd, seed=1)
    f = f"conv_transpose{nd}d"
    kw = dict(stride=2, padding=1, output_padding=1)
    expected = getattr(torch.nn.functional, f)(torch.tensor(x), torch.tensor(w), **kw)
    got = getattr(tdx.nn.functional, f)(tdx.tensor(x, device=device), tdx.tensor(w, device=device), **kw)
    same(got, expected)


@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("kw", [dict(), dict(padding=1, count_include_pad=False), dict(divisor_override=3)])
def test_avg_pool_int64_truncates(device, nd, kw):
    if nd == 1 and "divisor_override" in kw:
        pytest.skip("avg_pool1d has no divisor_override")
    x = ints(2, 3, *(6,) * nd)
    f = f"avg_pool{nd}d"
    expected = getattr(torch.nn.functional, f)(torch.tensor(x), 3, stride=2, **kw)
    got = getattr(tdx.nn.functional, f)(tdx.tensor(x, device=device), 3, stride=2, **kw)
    same(got, expected)


@pytest.mark.parametrize("call", [
    lambda F, m, d: F.conv2d(m.ones(1, 1, 3, 3, dtype=d.bool), m.ones(1, 1, 2, 2, dtype=d.bool)),
    lambda F, m, d: F.conv_transpose2d(m.ones(1, 1, 3, 3, dtype=d.int32), m.ones(1, 1, 2, 2, dtype=d.int32)),
    lambda F, m, d: F.avg_pool2d(m.ones(1, 1, 4, 4, dtype=d.int32), 2),
])
def test_refused_dtypes_raise_like_torch(device, call):
    with pytest.raises(NotImplementedError) as expected:
        call(torch.nn.functional, torch, torch)
    with pytest.raises(NotImplementedError) as got:
        call(tdx.nn.functional, _On(device), tdx)
    assert isinstance(got.value, tdx.TdxError)
    assert "not implemented for" in str(got.value) and "not implemented for" in str(expected.value)
    raises_like(lambda: call(tdx.nn.functional, _On(device), tdx), lambda: call(torch.nn.functional, torch, torch))


class _On:
    """``tdx.ones`` on one device."""

    def __init__(self, device):
        self.device = device

    def ones(self, *shape, dtype):
        return tdx.ones(*shape, dtype=dtype, device=self.device)
