"""float32 ops that round as torch's CPU kernels round them, on every executor: ``add``/``sub`` with
``alpha`` (one fused multiply-add), ``tanh`` and its derivative, ``mean`` (the sum divided by the
count). Optimizers and training loops compare with torch to the last bits through these ops.

On MLX's CPU the multiply-adds and tanh's derivative round once or apart as torch's kernels do on the
running CPU (``tdx/backends/mlx/_torch_order.py`` asks them): each check compares bit for bit where
``conftest.torch_order`` says that rounding is in force, and within float32 tolerance (naming why)
where it is not.

The reference is torch on the device's torch twin (``conftest.torch_twin``): CPU, or the device itself where tdx
runs torch's own kernels there (cuda's tanh, and its mean multiplying by ``1 / count``, round otherwise)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import tdx
from conftest import torch_order, torch_twin

RNG = np.random.default_rng(7)


def _bits(x):
    return x.detach().numpy(force=True) if isinstance(x, tdx.Tensor) else x.detach().cpu().numpy()


def _rounds_as_torch(device):
    """An assertion that two results are equal: bit for bit where torch's multiply-add rounding is in force
    on ``device``, else within float32 rounding."""
    promised, why = torch_order(device, "multiply_add")

    def check(got, expect):
        if promised:
            assert np.array_equal(_bits(got), _bits(expect))
        else:
            np.testing.assert_allclose(_bits(got), _bits(expect), rtol=1e-6, atol=1e-6,
                                       err_msg=f"torch's rounding is not in force: {why}")

    return check


@pytest.mark.parametrize("alpha", [0.37, -1.3e-3, 3, 1e-8])
@pytest.mark.float64
def test_add_sub_alpha_round_once_as_torch(device, alpha):
    a = RNG.standard_normal(1000).astype(np.float32)
    b = RNG.standard_normal(1000).astype(np.float32)
    xa, xb = tdx.tensor(a, device=device), tdx.tensor(b, device=device)
    ta, tb = torch.tensor(a), torch.tensor(b)
    same = _rounds_as_torch(device)
    # (a product rounded before the sum differs from torch's fused result in ~1 element of 4)
    same(tdx.add(xa, xb, alpha=alpha), torch.add(ta, tb, alpha=alpha))
    same(xa.sub(xb, alpha=alpha), ta.sub(tb, alpha=alpha))
    xa.add_(xb, alpha=alpha)
    ta.add_(tb, alpha=alpha)
    same(xa, ta)
    # broadcasting
    col = RNG.standard_normal((8, 1)).astype(np.float32)
    row = RNG.standard_normal(5).astype(np.float32)
    out_x = tdx.add(tdx.tensor(col, device=device), tdx.tensor(row, device=device), alpha=alpha)
    same(out_x, torch.add(torch.tensor(col), torch.tensor(row), alpha=alpha))
    # the gradients: ``grad`` for ``input``, ``alpha * grad`` (one float32 product) for ``other``
    xa = tdx.tensor(a, device=device, requires_grad=True)
    xb = tdx.tensor(b, device=device, requires_grad=True)
    ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    g = RNG.standard_normal(1000).astype(np.float32)
    tdx.add(xa, xb, alpha=alpha).backward(tdx.tensor(g, device=device))
    torch.add(ta, tb, alpha=alpha).backward(torch.tensor(g))
    assert np.array_equal(_bits(xa.grad), _bits(ta.grad))
    assert np.array_equal(_bits(xb.grad), _bits(tb.grad))


def test_add_alpha_keeps_promotion_and_integers(device):
    x = tdx.add(tdx.tensor([1, 2], device=device), tdx.tensor([1.5, 2.0], device=device), alpha=2)
    t = torch.add(torch.tensor([1, 2]), torch.tensor([1.5, 2.0]), alpha=2)
    assert x.dtype == tdx.float32 and np.array_equal(_bits(x), _bits(t))
    xi = tdx.add(tdx.tensor([1, 2], device=device), tdx.tensor([3, 4], device=device), alpha=3)
    assert xi.dtype == tdx.int64 and xi.tolist() == [10, 14]
    with pytest.raises(RuntimeError):
        tdx.add(tdx.tensor([1, 2], device=device), tdx.tensor([3, 4], device=device), alpha=0.5)


@pytest.mark.float64
def test_tanh_and_its_derivative_round_as_torch(device):
    a = (RNG.standard_normal(20000) * 2).astype(np.float32)
    x = tdx.tensor(a, device=device, requires_grad=True)
    t = torch.tensor(a, device=torch_twin(device), requires_grad=True)
    yx, yt = x.tanh(), t.tanh()
    g = RNG.standard_normal(20000).astype(np.float32)
    yx.backward(tdx.tensor(g, device=device))
    yt.backward(torch.tensor(g, device=t.device))
    promised, why = torch_order(device, "tanh")
    if not promised:  # torch's tanh or its derivative rounds otherwise on this CPU
        np.testing.assert_allclose(_bits(yx), _bits(yt), rtol=2e-6, atol=1e-7, err_msg=why)
        np.testing.assert_allclose(_bits(x.grad), _bits(t.grad), rtol=1e-5, atol=1e-6, err_msg=why)
        return
    differ = _bits(yx) != _bits(yt)
    # torch's kernel misses the correctly rounded value in ~1 of 2000 elements; MLX's own in ~1 of 5
    assert differ.mean() < 2e-3
    np.testing.assert_array_max_ulp(_bits(yx), _bits(yt), maxulp=1)
    same_y = ~differ  # where the outputs agree, torch's tanh_backward gives the same bits
    assert np.array_equal(_bits(x.grad)[same_y], _bits(t.grad)[same_y])


def _sums_where_reciprocal_rounds_differently(n, count=40):
    """Rows of ``n`` small integers (exact float32 sums in any order) whose ``sum / n`` differs from
    ``sum * (1 / n)`` in float32."""
    rows = []
    while len(rows) < count:
        row = RNG.integers(-50, 50, n).astype(np.float32)
        s = np.float32(row.sum())
        if s / np.float32(n) != s * (np.float32(1) / np.float32(n)):
            rows.append(row)
    return np.stack(rows)


@pytest.mark.parametrize("n", [3, 7, 10])
def test_mean_divides_the_sum_by_the_count(device, n):
    rows = _sums_where_reciprocal_rounds_differently(n)
    x, t = tdx.tensor(rows, device=device), torch.tensor(rows, device=torch_twin(device))
    assert np.array_equal(_bits(x.mean(1)), _bits(t.mean(1)))
    assert np.array_equal(_bits(x[0].mean()), _bits(t[0].mean()))
