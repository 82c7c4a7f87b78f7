"""Edge forms of ``tdx.nn.functional`` against torch on CPU, on every device: hardsigmoid's float64
gradient (torch multiplies by 1/6 rounded to float32), unfold of zero-size batches, and
``torch.normal``'s ``layout=``."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import tdx


def test_hardsigmoid_float64_gradient_bit_for_bit(device):
    x = np.linspace(-4, 4, 33)
    t = torch.tensor(x, requires_grad=True)
    g = tdx.tensor(x, device=device).requires_grad_()
    up = np.random.default_rng(0).uniform(0.5, 1.5, size=x.shape)
    expected = torch.nn.functional.hardsigmoid(t)
    got = tdx.nn.functional.hardsigmoid(g)
    np.testing.assert_array_equal(got.detach().cpu().numpy(), expected.detach().numpy())
    (expected * torch.tensor(up)).sum().backward()
    (got * tdx.tensor(up, device=device)).sum().backward()
    np.testing.assert_array_equal(g.grad.cpu().numpy(), t.grad.numpy())  # 0 at and outside +-3


@pytest.mark.parametrize("shape", [(0, 1, 4, 4), (0, 3, 5, 6)])
def test_unfold_zero_size(device, shape):
    expected = torch.nn.functional.unfold(torch.zeros(shape), 2, stride=1)
    got = tdx.nn.functional.unfold(tdx.zeros(shape, device=device), 2, stride=1)
    assert tuple(got.shape) == tuple(expected.shape)


def test_normal_layout(device):
    tdx.manual_seed(0)
    got = tdx.normal(0.0, 1.0, (3,), layout=tdx.strided, device=device)
    assert tuple(got.shape) == tuple(torch.normal(0.0, 1.0, (3,), layout=torch.strided).shape)
    with pytest.raises(TypeError) as err:
        tdx.normal(0.0, 1.0, (3,), layout="sparse", device=device)
    assert isinstance(err.value, tdx.TdxError) and "layout" in str(err.value)
