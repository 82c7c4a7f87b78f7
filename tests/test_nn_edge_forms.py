"""Edge forms of ``tdx.nn.functional`` against torch on CPU, on every device: hardsigmoid's float64
gradient (torch multiplies by 1/6 rounded to float32; compared on the device's torch twin), unfold of zero-size batches,
``torch.normal``'s ``layout=``, pdist of one row, triplet loss with a distance module, and
``div(rounding_mode="floor")``'s zero gradient."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import tdx
from conftest import torch_twin


@pytest.mark.float64
def test_hardsigmoid_float64_gradient_bit_for_bit(device):
    """Bit for bit with real torch on the device's torch twin: torch's kernels there (cuda's forward also
    multiplies by a float32 1/6 where its CPU one divides by 6)."""
    twin = torch_twin(device)
    x = np.linspace(-4, 4, 33)
    t = torch.tensor(x, device=twin, requires_grad=True)
    g = tdx.tensor(x, device=device).requires_grad_()
    up = np.random.default_rng(0).uniform(0.5, 1.5, size=x.shape)
    expected = torch.nn.functional.hardsigmoid(t)
    got = tdx.nn.functional.hardsigmoid(g)
    np.testing.assert_array_equal(got.detach().cpu().numpy(), expected.detach().cpu().numpy())
    (expected * torch.tensor(up, device=twin)).sum().backward()
    (got * tdx.tensor(up, device=device)).sum().backward()
    np.testing.assert_array_equal(g.grad.cpu().numpy(), t.grad.cpu().numpy())  # 0 at and outside +-3


@pytest.mark.float64
def test_hardswish_float64_bit_for_bit(device):
    """hardswish in float64, values and gradient, as real torch computes it on the device's torch twin (its cuda
    kernel multiplies by 1/6 rounded to float32, its CPU one divides by 6)."""
    twin = torch_twin(device)
    x = np.linspace(-4, 4, 41)
    t = torch.tensor(x, device=twin, requires_grad=True)
    g = tdx.tensor(x, device=device).requires_grad_()
    up = np.random.default_rng(1).uniform(0.5, 1.5, size=x.shape)
    rtol = 0 if tdx.backends.get(device).name == "torch" else 1e-12  # torch's kernel, or MLX's own rounding
    expected, got = torch.nn.functional.hardswish(t), tdx.nn.functional.hardswish(g)
    np.testing.assert_allclose(got.detach().cpu().numpy(), expected.detach().cpu().numpy(), rtol=rtol, atol=0)
    (expected * torch.tensor(up, device=twin)).sum().backward()
    (got * tdx.tensor(up, device=device)).sum().backward()
    np.testing.assert_allclose(g.grad.cpu().numpy(), t.grad.cpu().numpy(), rtol=rtol, atol=0)


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


@pytest.mark.float64
def test_pdist_of_one_row_keeps_the_graph(device):
    t = torch.ones(1, 3, dtype=torch.float64, requires_grad=True)
    x = tdx.ones(1, 3, dtype=tdx.float64, device=device).requires_grad_()
    expected, got = torch.nn.functional.pdist(t), tdx.nn.functional.pdist(x)
    assert tuple(got.shape) == tuple(expected.shape) == (0,)
    assert got.requires_grad == expected.requires_grad
    expected.sum().backward()
    got.sum().backward()
    np.testing.assert_array_equal(x.grad.cpu().numpy(), t.grad.numpy())


@pytest.mark.float64
def test_triplet_margin_with_a_distance_module(device):
    rng = np.random.default_rng(0)
    a, p, n = (rng.normal(size=(4, 5)) for _ in range(3))
    kw = dict(margin=0.5, swap=True)
    expected = torch.nn.functional.triplet_margin_with_distance_loss(
        *(torch.tensor(v) for v in (a, p, n)), distance_function=torch.nn.PairwiseDistance(p=1.0), **kw)
    got = tdx.nn.functional.triplet_margin_with_distance_loss(
        *(tdx.tensor(v, device=device) for v in (a, p, n)), distance_function=tdx.nn.PairwiseDistance(p=1.0), **kw)
    np.testing.assert_allclose(got.item(), expected.item(), rtol=1e-12)


@pytest.mark.float64
def test_div_floor_gradient_is_zero(device):
    """torch: div(rounding_mode="floor") has a zero derivative (floor_divide, ``//``, has none)."""
    t = torch.tensor([3.5, -5.0, 7.0], dtype=torch.float64, requires_grad=True)
    x = tdx.tensor([3.5, -5.0, 7.0], dtype=tdx.float64, device=device).requires_grad_()
    got, expected = x.div(2.0, rounding_mode="floor"), t.div(2.0, rounding_mode="floor")
    np.testing.assert_array_equal(got.detach().cpu().numpy(), expected.detach().numpy())
    expected.sum().backward()
    got.sum().backward()
    np.testing.assert_array_equal(x.grad.cpu().numpy(), t.grad.numpy())
