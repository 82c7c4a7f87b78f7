"""Convolutions and average pooling of integer tensors against torch on the device's torch twin, on every
device: torch's CPU kernels take int64 (a convolution any integer dtype; average pooling truncates the window
mean toward zero and keeps int64), and refuse other dtypes with NotImplementedError naming the kernel; its cuda
kernels take floating dtypes only, and tdx (which runs them there) raises as they do."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import tdx
from conftest import torch_twin
from nn_oracle import raises_like


def ints(*shape, seed=0):
    return np.random.default_rng(seed).integers(-9, 10, size=shape).astype(np.int64)


def same(got, expected):
    assert str(got.dtype).rsplit(".", 1)[-1] == str(expected.dtype).rsplit(".", 1)[-1]
    np.testing.assert_array_equal(got.cpu().numpy(), expected.cpu().numpy())


def like_torch(device, tdx_fn, torch_fn):
    """``tdx_fn()`` equals ``torch_fn(twin)`` (real torch on ``device``'s torch twin), or, where torch's kernel
    there refuses the dtype, raises a TdxError of the builtin kind torch raised."""
    try:
        expected = torch_fn(torch_twin(device))
    except RuntimeError as err:  # NotImplementedError included
        kind = NotImplementedError if isinstance(err, NotImplementedError) else RuntimeError
        with pytest.raises(kind) as got:
            tdx_fn()
        assert isinstance(got.value, tdx.TdxError), f"raised untyped {got.value!r}"
        return
    same(tdx_fn(), expected)


@pytest.mark.parametrize("nd", [1, 2, 3])
def test_conv_int64(device, nd):
    x, w, b = ints(2, 4, *(5,) * nd), ints(6, 2, *(3,) * nd, seed=1), ints(6, seed=2)
    f = f"conv{nd}d"
    kw = dict(stride=2, padding=1, groups=2)
    like_torch(device, lambda: getattr(tdx.nn.functional, f)(tdx.tensor(x, device=device), tdx.tensor(w, device=device),
                                                             tdx.tensor(b, device=device), **kw),
               lambda on: getattr(torch.nn.functional, f)(torch.tensor(x, device=on), torch.tensor(w, device=on),
                                                          torch.tensor(b, device=on), **kw))


@pytest.mark.parametrize("nd", [1, 2, 3])
def test_conv_transpose_int64(device, nd):
    x, w = ints(1, 4, *(4,) * nd), ints(4, 3, *(2,) * nd, seed=1)
    f = f"conv_transpose{nd}d"
    kw = dict(stride=2, padding=1, output_padding=1)
    like_torch(device, lambda: getattr(tdx.nn.functional, f)(tdx.tensor(x, device=device), tdx.tensor(w, device=device),
                                                             **kw),
               lambda on: getattr(torch.nn.functional, f)(torch.tensor(x, device=on), torch.tensor(w, device=on), **kw))


@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("kw", [dict(), dict(padding=1, count_include_pad=False), dict(divisor_override=3)])
def test_avg_pool_int64_truncates(device, nd, kw):
    if nd == 1 and "divisor_override" in kw:
        pytest.skip("avg_pool1d has no divisor_override")
    x = ints(2, 3, *(6,) * nd)
    f = f"avg_pool{nd}d"
    like_torch(device, lambda: getattr(tdx.nn.functional, f)(tdx.tensor(x, device=device), 3, stride=2, **kw),
               lambda on: getattr(torch.nn.functional, f)(torch.tensor(x, device=on), 3, stride=2, **kw))


@pytest.mark.parametrize("call", [
    lambda F, m, d: F.conv2d(m.ones(1, 1, 3, 3, dtype=d.bool), m.ones(1, 1, 2, 2, dtype=d.bool)),
    lambda F, m, d: F.conv_transpose2d(m.ones(1, 1, 3, 3, dtype=d.int32), m.ones(1, 1, 2, 2, dtype=d.int32)),
    lambda F, m, d: F.avg_pool2d(m.ones(1, 1, 4, 4, dtype=d.int32), 2),
])
def test_refused_dtypes_raise_like_torch(device, call):
    """torch's kernels on the device's twin refuse these dtypes (on CPU a NotImplementedError naming the kernel;
    cuda's own error there), and tdx raises the same kind."""
    on = _On(torch, torch_twin(device))
    with pytest.raises(RuntimeError) as expected:  # NotImplementedError included
        call(torch.nn.functional, on, torch)
    kind = NotImplementedError if isinstance(expected.value, NotImplementedError) else RuntimeError
    with pytest.raises(kind) as got:
        call(tdx.nn.functional, _On(tdx, device), tdx)
    assert isinstance(got.value, tdx.TdxError)
    if "not implemented for" in str(expected.value):
        assert "not implemented for" in str(got.value)
    raises_like(lambda: call(tdx.nn.functional, _On(tdx, device), tdx), lambda: call(torch.nn.functional, on, torch))


class _On:
    """``ones`` of ``m`` (tdx or torch) on one device."""

    def __init__(self, m, device):
        self.m, self.device = m, device

    def ones(self, *shape, dtype):
        return self.m.ones(*shape, dtype=dtype, device=self.device)
