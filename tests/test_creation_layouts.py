"""``torch.empty_permuted`` against torch on CPU, on every device: shape, strides (the physical layout is
observable through ``stride()``), dtype, leaf-ness, and torch's error kind for a bad layout."""

from __future__ import annotations

import pytest
import torch

import tdx


@pytest.mark.parametrize("size,order", [((2, 3, 4), (2, 0, 1)), ((2, 3, 4, 5), (0, 2, 3, 1)), ((5,), (0,)),
                                        ((), ()), ((0, 3), (1, 0))])
@pytest.mark.float64
def test_empty_permuted_strides(device, size, order):
    expected = torch.empty_permuted(size, order, dtype=torch.float64, requires_grad=True)
    got = tdx.empty_permuted(size, order, dtype=tdx.float64, device=device, requires_grad=True)
    assert tuple(got.shape) == tuple(expected.shape)
    assert got.stride() == expected.stride()
    assert got.dtype is tdx.float64 and got.is_leaf and got.requires_grad
    assert got.is_contiguous() == expected.is_contiguous()


@pytest.mark.parametrize("order", [(0, 1), (0, 0, 1)])
def test_empty_permuted_bad_layout(device, order):
    with pytest.raises(RuntimeError):
        torch.empty_permuted((2, 3, 4), order)
    with pytest.raises(RuntimeError) as err:
        tdx.empty_permuted((2, 3, 4), order, device=device)
    assert isinstance(err.value, tdx.TdxError)
