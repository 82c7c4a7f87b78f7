"""Regressions for the errors the OpInfo run found (issue 13), each against torch on CPU, on every device.

``round(decimals=)``, tensor endpoints of ``linspace``/``logspace``, and on MLX: int32 scatter
indices, empty uint8 gather indices, ``randint`` to a float dtype, a float ``correction`` of
``std``/``var``, ``norm(x, 'nuc')``, integer bases to tensors of negative exponents, integer
``arange``/``linspace`` bounds, ``einsum`` on int64 with a dropped ellipsis, ``prod(dtype=bool)``.
"""

from __future__ import annotations

import pytest
import torch

import tdx
from conftest import check, torch_twin

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")  # torch warns on corrections >= n by design

X = [[1.23456, -2.5, 0.125], [3.14159, 0.5, -7.77777]]


@pytest.mark.parametrize("decimals", [0, 1, 3, -1])
@pytest.mark.float64
def test_round_decimals(device, decimals):
    check(lambda: tdx.round(tdx.tensor(X, device=device), decimals=decimals),
          lambda: torch.round(torch.tensor(X), decimals=decimals))
    check(lambda: tdx.tensor(X, device=device, dtype=tdx.float64).round(decimals=decimals),
          lambda: torch.tensor(X, dtype=torch.float64).round(decimals=decimals))
    t = tdx.tensor(X, device=device)
    t.round_(decimals=decimals)
    check(lambda: t, lambda: torch.tensor(X).round_(decimals=decimals))


def test_round_decimals_refuses_integers(device):
    check(lambda: tdx.round(tdx.tensor([1, 2], device=device), decimals=2),
          lambda: torch.round(torch.tensor([1, 2]), decimals=2))


def test_linspace_logspace_tensor_endpoints(device):
    check(lambda: tdx.linspace(tdx.tensor(1.0), tdx.tensor(3.0), 5, device=device),
          lambda: torch.linspace(torch.tensor(1.0), torch.tensor(3.0), 5))
    check(lambda: tdx.logspace(tdx.tensor(-1.0), 2, 7, device=device),
          lambda: torch.logspace(torch.tensor(-1.0), 2, 7), rtol=2e-6)
    check(lambda: tdx.linspace(tdx.tensor([1.0, 2.0]), 3.0, 5, device=device),
          lambda: torch.linspace(torch.tensor([1.0, 2.0]), 3.0, 5))


def test_scatter_int32_index_and_empty_gather(device):
    idx = [[0, 2], [1, 0]]
    src = [[1.0, 2.0], [3.0, 4.0]]
    check(lambda: tdx.zeros(2, 3, device=device).scatter(1, tdx.tensor(idx, dtype=tdx.int32, device=device),
                                                          tdx.tensor(src, device=device)),
          lambda: torch.zeros(2, 3).scatter(1, torch.tensor(idx, dtype=torch.int32), torch.tensor(src)))
    check(lambda: tdx.zeros(3, device=device).gather(0, tdx.tensor([], dtype=tdx.uint8, device=device)),
          lambda: torch.zeros(3).gather(0, torch.tensor([], dtype=torch.uint8)))
    check(lambda: tdx.zeros(3, device=device).gather(0, tdx.tensor([1], dtype=tdx.uint8, device=device)),
          lambda: torch.zeros(3).gather(0, torch.tensor([1], dtype=torch.uint8)))


def test_randint_float_dtype(device):
    x = tdx.randint(0, 5, (2000,), dtype=tdx.float32, device=device)
    assert x.dtype is tdx.float32 and tuple(x.shape) == (2000,)
    vals = set(x.tolist())
    assert vals <= {0.0, 1.0, 2.0, 3.0, 4.0} and len(vals) == 5


@pytest.mark.parametrize("correction", [0.5, 1.5, 0, 2])
@pytest.mark.float64
def test_std_var_float_correction(device, correction):
    for dim in (None, 0, 1):
        check(lambda: tdx.tensor(X, device=device).std(dim, correction=correction),
              lambda: torch.tensor(X).std(dim, correction=correction), rtol=2e-6)
        check(lambda: tdx.tensor(X, device=device, dtype=tdx.float64).var(dim, correction=correction, keepdim=True),
              lambda: torch.tensor(X, dtype=torch.float64).var(dim, correction=correction, keepdim=True),
              rtol=1e-12)


def test_norm_nuc(device):
    check(lambda: tdx.norm(tdx.tensor(X, device=device), "nuc"), lambda: torch.norm(torch.tensor(X), "nuc"),
          rtol=2e-6)
    check(lambda: tdx.tensor(X, device=device).norm("nuc"), lambda: torch.tensor(X).norm("nuc"), rtol=2e-6)


def test_integer_base_negative_tensor_exponent(device):
    base, exp = [0, 2, -2, 1, -1, -1, 3], [-1, -1, -3, -5, -5, -4, 2]
    check(lambda: tdx.pow(tdx.tensor(base, device=device), tdx.tensor(exp, device=device)),
          lambda: torch.pow(torch.tensor(base), torch.tensor(exp)))
    check(lambda: tdx.tensor(base, device=device) ** -1, lambda: torch.tensor(base) ** -1)  # torch refuses


@pytest.mark.parametrize("args", [(0.0, -8.000001, -4.0), (0, 5.5, 1), (0.5, 5.5, 1.5), (-0.5, 3, 1)])
def test_arange_integer_bounds(device, args):
    check(lambda: tdx.arange(*args, dtype=tdx.int64, device=device), lambda: torch.arange(*args, dtype=torch.int64))


@pytest.mark.parametrize("args", [(4.3, -3, 50), (-2.7, 9.9, 13), (0, 10, 4)])
def test_linspace_integer(device, args):
    """torch's cuda kernel fills from both ends and truncates otherwise than its CPU one: the device's torch twin."""
    check(lambda: tdx.linspace(*args, dtype=tdx.int64, device=device),
          lambda: torch.linspace(*args, dtype=torch.int64, device=torch_twin(device)))


def test_einsum_int64_dropped_ellipsis(device):
    a = [[[1, 2], [3, 4]], [[5, 6], [7, 8]]]
    b = [[1, 2, 3], [4, 5, 6]]
    twin = torch_twin(device)  # torch on cuda has no integer bmm: it raises there, and so must tdx
    for eq in ("...ik, ...j -> ij", "...ik,...j->ij", "bik,bj->bij"):
        check(lambda: tdx.einsum(eq, tdx.tensor(a, device=device), tdx.tensor(b, device=device)),
              lambda: torch.einsum(eq, torch.tensor(a, device=twin), torch.tensor(b, device=twin)))


def test_prod_bool_dtype(device):
    m = [[True, False], [True, True]]
    check(lambda: tdx.tensor(m, device=device).prod(dtype=tdx.bool), lambda: torch.tensor(m).prod(dtype=torch.bool))
    check(lambda: tdx.tensor(m, device=device).prod(1, dtype=tdx.bool),
          lambda: torch.tensor(m).prod(1, dtype=torch.bool))
    check(lambda: tdx.tensor([[2, 0], [1, 3]], device=device).prod(0, keepdim=True, dtype=tdx.bool),
          lambda: torch.tensor([[2, 0], [1, 3]]).prod(0, keepdim=True, dtype=torch.bool))
