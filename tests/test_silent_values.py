"""Silent wrong values found on MLX (issue 26), one test per reported case, on every device against torch on CPU:
floor division, scalar writes that overflow, float16 accumulation, views that copied, dim checks, masks and
numpy indices, gradients at zero and at ties, and ``ldexp``'s dtype."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch

import tdx
from tdx.testing.parity import assert_close, tolerance

from conftest import check, skip_value_checked, torch_order, torch_twin

INF, NAN = math.inf, math.nan


def _same_bits(got, expected):
    """Values equal with NaN at the same places and the same signs of zero."""
    g = torch.tensor(np.asarray(got.to(tdx.float64).cpu().numpy()))
    e = expected.to(torch.float64)
    assert g.shape == e.shape
    assert torch.equal(g.isnan(), e.isnan()), (g, e)
    keep = ~e.isnan()
    assert torch.equal(g[keep], e[keep]), (g, e)
    assert torch.equal(torch.signbit(g[keep]), torch.signbit(e[keep])), (g, e)


# floor division ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("a, b", [(1.5, 0.1), (-1.5, INF), (INF, -1.5), (-0.0, 3.0), (0.0, -3.0), (5.0, 0.0),
                                  (-5.0, -0.0), (NAN, 1.0), (7.0, 2.5), (-7.0, 2.5), (1e-30, 1e30)])
@pytest.mark.float64
def test_floor_division_is_pythons(device, a, b):
    x = tdx.tensor([a], device=device)
    t = torch.tensor([a])
    _same_bits(x // b, t // b)
    _same_bits(x.div(tdx.tensor([b], device=device), rounding_mode="floor"),
               t.div(torch.tensor([b]), rounding_mode="floor"))
    _same_bits(x % b, t % b)
    _same_bits(x.fmod(b), t.fmod(b))


@pytest.mark.float64
def test_floor_division_of_float16_takes_the_scalar_in_float32(device):
    x = tdx.tensor([1.5, -0.1], dtype=tdx.float16, device=device)
    t = torch.tensor([1.5, -0.1], dtype=torch.float16)
    _same_bits(x // 0.1, t // 0.1)
    _same_bits(x.to(tdx.bfloat16) // 0.1, t.to(torch.bfloat16) // 0.1)


# scalar writes -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype, value", [("int32", 2 ** 40), ("int32", 1e10), ("int32", NAN), ("int8", 300),
                                          ("float32", 1 + 2j), ("uint8", -256), ("float32", 1e39)])
@pytest.mark.parametrize("write", ["index", "fill_", "slice", "mask"])
def test_an_overflowing_scalar_write_raises_torchs_error(device, dtype, value, write):
    def run(mod, **kw):
        x = mod.zeros(3, dtype=getattr(mod, dtype), **kw)
        if write == "index":
            x[0] = value
        elif write == "fill_":
            x.fill_(value)
        elif write == "slice":
            x[1:] = value
        else:
            x[mod.tensor([True, False, True], **kw)] = value
        return x

    with pytest.raises(RuntimeError) as expected:
        run(torch)
    with pytest.raises(tdx.TdxError) as got:
        run(tdx, device=device)
    assert isinstance(got.value, RuntimeError)
    assert str(got.value) == str(expected.value)


def test_minus_one_wraps_into_uint8(device):
    assert_close(tdx.tensor([-1, -255], dtype=tdx.uint8, device=device), torch.tensor([-1, -255], dtype=torch.uint8))
    x = tdx.zeros(2, dtype=tdx.uint8, device=device)
    x[0] = -1
    assert x.tolist() == [255, 0]


# float16 accumulation ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_reductions_accumulate_in_float32(device, dtype):
    rtol, atol = tolerance(dtype, "reduction")
    cases = [
        (lambda m, d: m.ones(100000, dtype=d).mean()),
        (lambda m, d: m.tensor([[6e4, 6e4, 1]]).to(d).mean(1)),
        (lambda m, d: m.tensor([[6e4, 6e4, 1]]).to(d).std(1)),
        (lambda m, d: m.tensor([[6e4, 6e4, 1]]).to(d).var(1)),
        (lambda m, d: m.ones(3000, dtype=d).cumsum(0)[-1]),
        (lambda m, d: m.ones(3000, dtype=d).sum()),
        (lambda m, d: (m.ones(300, dtype=d) * 1.01).cumprod(0)[-1]),
        (lambda m, d: (m.ones(8, dtype=d) * 1.01).prod()),  # torch's CPU product of halves rounds as it goes
        (lambda m, d: m.full((5000,), 3.0, dtype=d).norm()),
    ]
    with tdx.device(device):
        for fn in cases:
            with torch.device(torch_twin(device)):  # cuda's half kernels accumulate otherwise than CPU's
                want = fn(torch, getattr(torch, dtype))
            assert_close(fn(tdx, getattr(tdx, dtype)), want, rtol=rtol, atol=atol)


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "int32"])
def test_sum_to_a_narrow_int_wraps(device, dtype):
    x = tdx.tensor([200, 100, 7], device=device)
    t = torch.tensor([200, 100, 7])
    assert_close(x.sum(dtype=getattr(tdx, dtype)), t.sum(dtype=getattr(torch, dtype)))
    assert_close(x.cumsum(0, dtype=getattr(tdx, dtype)), t.cumsum(0, dtype=getattr(torch, dtype)))
    assert_close(x.prod(dtype=getattr(tdx, dtype)), t.prod(dtype=getattr(torch, dtype)))


@pytest.mark.float64
def test_ldexp_promotes_as_torch(device):
    for a, b in [("int64", "float64"), ("int32", "int64"), ("float16", "int32"), ("float32", "float64")]:
        x = tdx.tensor([1, 3], dtype=getattr(tdx, a), device=device)
        e = tdx.tensor([2, -1], dtype=getattr(tdx, b), device=device)
        assert_close(tdx.ldexp(x, e), torch.ldexp(torch.tensor([1, 3], dtype=getattr(torch, a)),
                                                  torch.tensor([2, -1], dtype=getattr(torch, b))))


# views ---------------------------------------------------------------------------------------------------------
def test_views_write_through(device):
    def run(mod, **kw):
        x = mod.zeros(2, 3, **kw)
        x.ravel().add_(10)
        x[1].ravel().mul_(2)
        x[:, 1].ravel().add_(5)  # not contiguous: a copy
        x[:, 0].flatten().add_(7)  # a 1-D flatten is a view
        y = mod.zeros(4, **kw)
        y.view(mod.int32).add_(1)
        z = mod.zeros(6, **kw)
        a = z.as_strided((2, 2), (1, 2), 1)
        a.add_(1)
        z.mul_(3)
        w = mod.zeros(3, **kw)
        w.expand(2, 3).fill_(4)
        return x, y, z, a, w

    for got, expected in zip(run(tdx, device=device), run(torch)):
        assert_close(got, expected)


def test_overlapping_writes_are_refused(device):
    check(lambda: tdx.zeros(3, device=device).expand(2, 3).add_(1), lambda: torch.zeros(3).expand(2, 3).add_(1))
    check(lambda: tdx.zeros(4, device=device).as_strided((2, 2), (0, 1)).mul_(2),
          lambda: torch.zeros(4).as_strided((2, 2), (0, 1)).mul_(2))


# dims, masks and indices ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("op", [lambda m, x: m.median(x, dim=3), lambda m, x: m.nanmedian(x, dim=3),
                                lambda m, x: m.mode(x, dim=3), lambda m, x: m.quantile(x, 0.5, dim=3),
                                lambda m, x: m.nanquantile(x, 0.5, dim=-4), lambda m, x: m.kthvalue(x, 1, dim=3),
                                lambda m, x: x.unfold(3, 1, 1), lambda m, x: m.renorm(x, 2, 3, 1.0)])
def test_an_out_of_range_dim_is_an_index_error(device, op):
    check(lambda: op(tdx, tdx.zeros(2, 3, 4, device=device)), lambda: op(torch, torch.zeros(2, 3, 4)))


def test_masked_scatter_with_a_short_source_raises(device):
    skip_value_checked(device, "a masked_scatter source shorter than the mask's count")
    check(lambda: tdx.zeros(4, device=device).masked_scatter(tdx.tensor([True, True, True, False], device=device),
                                                              tdx.tensor([1.0, 2.0], device=device)),
          lambda: torch.zeros(4).masked_scatter(torch.tensor([True, True, True, False]), torch.tensor([1.0, 2.0])))


def test_a_uint8_index_is_a_mask(device):
    x = tdx.arange(6.0, device=device).reshape(2, 3)
    with pytest.warns(UserWarning, match="uint8 is now deprecated"):
        got = x[tdx.tensor([1, 0], dtype=tdx.uint8, device=device)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = torch.arange(6.0).reshape(2, 3)[torch.tensor([1, 0], dtype=torch.uint8)]
    assert_close(got, expected)


def test_numpy_integers_index(device):
    x, t = tdx.arange(6.0, device=device).reshape(2, 3), torch.arange(6.0).reshape(2, 3)
    assert_close(x[np.int64(1)], t[np.int64(1)])
    assert_close(x[np.int32(0), np.int64(2)], t[np.int32(0), np.int64(2)])
    x[np.int64(0)] = 7.0
    t[np.int64(0)] = 7.0
    assert_close(x, t)


def test_mask_assignment_of_values_in_mask_order(device):
    y, t = tdx.zeros(2, 2, device=device), torch.zeros(2, 2)
    y[tdx.tensor([[True, False], [True, True]], device=device)] = tdx.tensor([7.0, 8.0, 9.0], device=device)
    t[torch.tensor([[True, False], [True, True]])] = torch.tensor([7.0, 8.0, 9.0])
    assert_close(y, t)


# gradients -----------------------------------------------------------------------------------------------------
def test_polynomial_features_have_torchs_gradient_at_zero(device):
    x, t = tdx.tensor([0.0, 1.0, 2.0], device=device, requires_grad=True), torch.tensor([0.0, 1.0, 2.0],
                                                                                         requires_grad=True)
    tdx.stack([x ** i for i in range(3)], 1).sum().backward()
    torch.stack([t ** i for i in range(3)], 1).sum().backward()
    assert_close(x.grad, t.grad)


@pytest.mark.parametrize("fn", [lambda v: v ** 0, lambda v: v ** 1, lambda v: v ** 2, lambda v: (v * 0) ** v,
                                lambda v: v ** v, lambda v: 2.0 ** v, lambda v: v ** -1.0, lambda v: v.abs(),
                                lambda v: v.sqrt(), lambda v: v.norm()])
def test_gradients_at_zero(device, fn):
    x = tdx.tensor([0.0, 1.0, 2.0], device=device, requires_grad=True)
    t = torch.tensor([0.0, 1.0, 2.0], requires_grad=True)
    fn(x).sum().backward()
    fn(t).sum().backward()
    assert_close(x.grad, t.grad)


@pytest.mark.parametrize("values", [[1.0, 1.0, 2.0], [1.0, 1.0, 1.0, 2.0], [NAN, NAN, 1.0], [1.0, NAN, 1.0, 2.0],
                                   [0.1, 0.1, 0.1, 5.0]])
@pytest.mark.parametrize("op", ["median", "nanmedian"])
def test_median_shares_its_gradient_among_ties(device, values, op):
    x, t = tdx.tensor(values, device=device, requires_grad=True), torch.tensor(values, requires_grad=True)
    got, expected = getattr(x, op)(), getattr(t, op)()
    assert_close(got, expected)
    got.backward()
    expected.backward()
    assert_close(x.grad, t.grad)


PROD_SHAPES = [((1000,), None), ((8,), 0), ((63,), 0), ((64,), 0), ((4, 300), 1), ((4, 300), 0), ((300, 4), 0),
               ((300, 1), 0), ((3, 5, 70), 1), ((3, 5, 70), -1), ((2, 3, 130), None)]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("keepdim", [False, True])
def test_half_prod_matches_torch_on_random_values(device, dtype, keepdim):
    """A half-precision product rounds after every multiplication, so its order matters: on random values (where
    it does, unlike a constant) the product equals torch's CPU result, bit for bit where tdx reproduces torch's
    order (the torch executor; MLX on CPU while torch-order summation is in force), else within a few ulps."""
    ex = tdx.backends.get(device)
    exact = device == "cpu" or (ex.name == "mlx" and torch_order(device, "prod")[0])  # verified on this CPU
    rng = np.random.default_rng(7)
    for shape, dim in PROD_SHAPES:
        values = rng.uniform(0.9, 1.1, shape)
        t = torch.tensor(values).to(getattr(torch, dtype))
        x = tdx.tensor(values, device=device).to(getattr(tdx, dtype))
        want = t.prod() if dim is None else t.prod(dim, keepdim=keepdim)
        got = x.prod() if dim is None else x.prod(dim, keepdim=keepdim)
        what = f"{shape} dim={dim}"
        if exact:
            assert got.dtype.name == dtype and tuple(got.shape) == tuple(want.shape), what
            assert np.array_equal(got.float().numpy(force=True), want.float().numpy()), what
        else:
            assert_close(got, want, rtol=8 * tolerance(dtype, "reduction")[0], atol=0, msg=what)
