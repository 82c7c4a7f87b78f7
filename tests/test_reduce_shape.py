"""Reductions and shape ops against torch on CPU."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import tdx
from conftest import check, pair, sample
from tdx.testing.parity import assert_close, tolerance

RED_SHAPES = [(3, 4), (2, 3, 4), (), (0, 3), (5,)]
DIMS = [None, 0, -1, (0, 1), 1]


@pytest.mark.parametrize("name", ["sum", "mean", "prod", "std", "var", "amax", "amin", "all", "any"])
@pytest.mark.parametrize("dtype", ["float32", "int64", "bool"])
@pytest.mark.parametrize("shape", RED_SHAPES, ids=str)
@pytest.mark.parametrize("dim", DIMS, ids=str)
@pytest.mark.parametrize("keepdim", [False, True])
def test_reduction(device, name, dtype, shape, dim, keepdim):
    x, t = pair(sample(shape, dtype, seed=20), device, dtype)
    if dim is None and name in ("amax", "amin"):
        fx, ft = (lambda: getattr(x, name)(keepdim=keepdim)), (lambda: getattr(t, name)(keepdim=keepdim))
    elif dim is None:
        fx, ft = (lambda: getattr(x, name)()), (lambda: getattr(t, name)())
    else:
        fx, ft = (lambda: getattr(x, name)(dim, keepdim=keepdim)), (lambda: getattr(t, name)(dim, keepdim=keepdim))
    check(fx, ft, msg=f"{name}({dim}, keepdim={keepdim})", rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", ["max", "min", "argmax", "argmin"])
@pytest.mark.parametrize("dtype", ["float32", "int64"])
@pytest.mark.parametrize("shape", [(3, 4), (2, 3, 4), (), (5,)], ids=str)
@pytest.mark.parametrize("dim", [None, 0, -1])
@pytest.mark.parametrize("keepdim", [False, True])
def test_extremes(device, name, dtype, shape, dim, keepdim):
    x, t = pair(sample(shape, dtype, seed=21, low=-100, high=100), device, dtype)
    if dim is None:
        if name.startswith("arg"):
            check(lambda: getattr(x, name)(keepdim=keepdim), lambda: getattr(t, name)(keepdim=keepdim))
        else:
            check(lambda: getattr(x, name)(), lambda: getattr(t, name)())
    else:
        check(lambda: getattr(x, name)(dim, keepdim), lambda: getattr(t, name)(dim, keepdim))
        check(lambda: getattr(tdx, name)(x, dim, keepdim), lambda: getattr(torch, name)(t, dim, keepdim))


def test_max_returns_named_tuple(device):
    x, t = pair(sample((3, 4), "float32", seed=22), device, "float32")
    got, want = x.max(dim=1), t.max(dim=1)
    assert type(got).__name__ == "max" and got._fields == ("values", "indices")
    check(lambda: got.values, lambda: want.values)
    check(lambda: got.indices, lambda: want.indices)
    y, u = pair(sample((4,), "float32", seed=23), device, "float32")
    check(lambda: x.max(y), lambda: t.max(u))


@pytest.mark.parametrize("correction", [0, 1, 2, 0.5, 2.5])
def test_std_var_correction(device, correction):
    """Integer corrections and fractional ones (torch accepts any float; MLX's ddof is an int)."""
    x, t = pair(sample((4, 5), "float32", seed=24), device, "float32")
    check(lambda: x.std(1, correction=correction), lambda: t.std(1, correction=correction), rtol=1e-5)
    check(lambda: x.var(correction=correction), lambda: t.var(correction=correction), rtol=1e-5)
    check(lambda: x.var(0, unbiased=False), lambda: t.var(0, unbiased=False), rtol=1e-5)
    check(lambda: x.std(False), lambda: t.std(False), rtol=1e-5)


def test_reduction_dtype_argument(device):
    x, t = pair(sample((3, 4), "int64", seed=25), device, "int64")
    check(lambda: x.sum(dtype=tdx.float32), lambda: t.sum(dtype=torch.float32))
    check(lambda: x.mean(dtype=tdx.float32), lambda: t.mean(dtype=torch.float32))
    check(lambda: x.prod(1, dtype=tdx.int32), lambda: t.prod(1, dtype=torch.int32))
    f, tf = pair(sample((3, 4), "float32", seed=25), device, "float32")
    assert f.dtype is tdx.float32  # the dtype read once and kept: a float32 reduction's result keeps it too
    for dtype in ("float64", "float16") if tdx.backends.get(device).caps.float64 else ("float16",):
        check(lambda: f.sum(dtype=getattr(tdx, dtype)), lambda: tf.sum(dtype=getattr(torch, dtype)), msg=dtype,
              rtol=1e-3, atol=1e-3)
        check(lambda: f.mean(1, dtype=getattr(tdx, dtype)), lambda: tf.mean(1, dtype=getattr(torch, dtype)), msg=dtype,
              rtol=1e-3, atol=1e-3)
    check(lambda: f.sum(0) * 2, lambda: tf.sum(0) * 2)
    check(lambda: f.mean() + 1, lambda: tf.mean() + 1)


SHAPE_CASES = [
    ("reshape", lambda a: a.reshape(4, 6)), ("reshape -1", lambda a: a.reshape(-1, 3)),
    ("reshape tuple", lambda a: a.reshape((2, 12))), ("reshape bad", lambda a: a.reshape(5, 5)),
    ("reshape -1 mid", lambda a: a.reshape(2, -1, 4)), ("reshape -1 last", lambda a: a.reshape(1, 2, 3, -1)),
    ("reshape -1 bad", lambda a: a.reshape(5, -1)), ("reshape two -1", lambda a: a.reshape(-1, -1)),
    ("reshape -1 beside 0", lambda a: a.reshape(0, -1)), ("reshape -1 beside negative", lambda a: a.reshape(-3, -1)),
    ("reshape negative dim", lambda a: a.reshape(2, -1, -6)), ("reshape -1 to 1", lambda a: a.reshape(24, -1)),
    ("view", lambda a: a.view(6, 4)), ("view list", lambda a: a.view([24])),
    ("transpose", lambda a: a.transpose(0, 2)), ("transpose neg", lambda a: a.transpose(-1, 0)),
    ("transpose bad", lambda a: a.transpose(0, 5)), ("permute", lambda a: a.permute(2, 0, 1)),
    ("permute tuple", lambda a: a.permute((1, 2, 0))), ("permute bad", lambda a: a.permute(0, 0, 1)),
    ("unsqueeze", lambda a: a.unsqueeze(1)), ("unsqueeze neg", lambda a: a.unsqueeze(-1)),
    ("unsqueeze bad", lambda a: a.unsqueeze(5)), ("squeeze", lambda a: a.reshape(1, 2, 1, 12).squeeze()),
    ("squeeze dim", lambda a: a.reshape(1, 2, 1, 12).squeeze(2)),
    ("squeeze noop", lambda a: a.squeeze(0)), ("squeeze tuple", lambda a: a.reshape(1, 24, 1).squeeze((0, 2))),
    ("flatten", lambda a: a.flatten()), ("flatten range", lambda a: a.flatten(1)),
    ("flatten mid", lambda a: a.flatten(0, 1)), ("expand", lambda a: a[:, :1, :].expand(2, 3, 4)),
    ("expand -1", lambda a: a[:1].expand(5, -1, -1, -1)), ("expand bad", lambda a: a.expand(3, 3, 4)),
    ("contiguous", lambda a: a.transpose(0, 1).contiguous()), ("t", lambda a: a[0].t()),
    ("T", lambda a: a.T), ("mT", lambda a: a.mT), ("split", lambda a: a.split(2, dim=2)),
    ("split sizes", lambda a: a.split([1, 3], dim=-1)), ("split bad", lambda a: a.split([1, 1], dim=0)),
    ("chunk", lambda a: a.chunk(3, dim=2)), ("chunk uneven", lambda a: a.chunk(2, dim=1)),
    ("expand_as", lambda a: a[:1].expand_as(a)), ("reshape 0-d", lambda a: a[0, 0, 0].reshape(1, 1)),
]


@pytest.mark.parametrize("case", SHAPE_CASES, ids=lambda c: c[0])
@pytest.mark.parametrize("dtype", ["float32", "int64", "bool"])
def test_shape_ops(device, case, dtype):
    x, t = pair(sample((2, 3, 4), dtype, seed=26), device, dtype)
    check(lambda: case[1](x), lambda: case[1](t), msg=case[0])


@pytest.mark.parametrize("dtypes", [("float32", "float32"), ("int64", "float32"), ("int32", "int64"),
                                    ("bool", "int64")], ids=str)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cat_stack(device, dtypes, dim):
    a, ta = pair(sample((2, 3), dtypes[0], seed=27), device, dtypes[0])
    b, tb = pair(sample((2, 3), dtypes[1], seed=28), device, dtypes[1])
    check(lambda: tdx.cat([a, b], dim), lambda: torch.cat([ta, tb], dim))
    check(lambda: tdx.stack([a, b], dim), lambda: torch.stack([ta, tb], dim))
    check(lambda: tdx.stack((a, b, a), dim=2), lambda: torch.stack((ta, tb, ta), dim=2))
    c, tc = pair(sample((2, 4), dtypes[0], seed=29), device, dtypes[0])
    check(lambda: tdx.cat([a, c], 1), lambda: torch.cat([ta, tc], 1))
    check(lambda: tdx.cat([a, c], -1), lambda: torch.cat([ta, tc], -1), msg="a KV cache's growth: a negative dim")
    check(lambda: tdx.cat([a, c], -2), lambda: torch.cat([ta, tc], -2), msg="mismatched sizes, a negative dim")
    check(lambda: tdx.cat([a, c], 0), lambda: torch.cat([ta, tc], 0), msg="mismatched sizes")
    check(lambda: tdx.stack([a, c]), lambda: torch.stack([ta, tc]), msg="stack unequal")


def test_reduction_executor_defaults(device):
    """The executors' reductions called with their defaults (keepdim off, correction 1) as torch's."""
    from tdx._tensor.wrapping import wrap

    x, t = pair(sample((3, 4), "float32", seed=30), device, "float32")
    ex = x._ex
    check(lambda: wrap(ex.prod(x._n, 1), ex), lambda: t.prod(1), msg="prod")
    check(lambda: wrap(ex.var(x._n, 0), ex), lambda: t.var(0), msg="var", rtol=1e-5)
    check(lambda: wrap(ex.std(x._n, 1), ex), lambda: t.std(1), msg="std", rtol=1e-5)
    for name in ("argmin", "argmax", "sum", "mean", "amax", "amin"):
        check(lambda: wrap(getattr(ex, name)(x._n, 1), ex), lambda: getattr(t, name)(1), msg=name)
    b, tb = pair(sample((3, 4), "bool", seed=31), device, "bool")
    for name in ("all", "any"):
        check(lambda: wrap(getattr(ex, name)(b._n, 0), ex), lambda: getattr(tb, name)(0), msg=name)


@pytest.mark.parametrize("p", [2, 3, 1.5])
def test_norm_orders_gradient_at_zero(device, p):
    """torch's gradient of a vector norm is 0 where the norm is 0 (not NaN), and the usual one elsewhere."""
    rows = [[0.0, 0.0, 0.0], [3.0, -4.0, 1.0]]
    for xfn, tfn in ((lambda v: tdx.linalg.vector_norm(v, p, dim=1), lambda v: torch.linalg.vector_norm(v, p, dim=1)),
                     (lambda v: v.norm(p, dim=1), lambda v: v.norm(p, dim=1))):
        x = tdx.tensor(rows, device=device, requires_grad=True)
        t = torch.tensor(rows, requires_grad=True)
        xn, tn = xfn(x), tfn(t)
        torch.testing.assert_close(torch.from_numpy(xn.detach().numpy(force=True)), tn.detach(), rtol=1e-6, atol=0)
        xn.sum().backward()
        tn.sum().backward()
        torch.testing.assert_close(torch.from_numpy(x.grad.numpy(force=True)), t.grad, rtol=1e-6, atol=0)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_reduction_wide_range_logsumexp_and_scans(device, dtype):
    """logsumexp of values 1000 apart (the shift must be the maximum, or exp overflows), and
    logcumsumexp of a 1-D tensor, as torch."""
    a = [[0.0, 1000.0, -5.0], [-1000.0, 2.0, 3.0]]
    x, t = tdx.tensor(a, dtype=getattr(tdx, dtype), device=device), torch.tensor(a, dtype=getattr(torch, dtype))
    check(lambda: x.logsumexp(1), lambda: t.logsumexp(1), msg="logsumexp")
    check(lambda: x.logsumexp((0, 1), keepdim=True), lambda: t.logsumexp((0, 1), keepdim=True), msg="all dims")
    check(lambda: x[1].logcumsumexp(0), lambda: t[1].logcumsumexp(0), msg="logcumsumexp 1-D")


def test_reduction_nuclear_norm_needs_two_dims(device):
    """torch.norm(x, 'nuc') of a 3-D tensor without dims, or with one dim, raises as torch."""
    x, t = pair(sample((2, 3, 4), "float32", seed=31), device, "float32")
    check(lambda: tdx.norm(x, "nuc"), lambda: torch.norm(t, "nuc"), msg="3-D")
    check(lambda: tdx.norm(x, "nuc", 1), lambda: torch.norm(t, "nuc", 1), msg="one dim")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_logsumexp_of_all_minus_inf_rows(device, dtype):
    """A row of nothing but -inf is -inf (not nan), beside ordinary rows, along either dim and whole."""
    ninf = -math.inf
    values = np.array([[ninf, ninf, ninf], [0.0, 1.0, ninf], [2.0, -3.0, 0.5]])
    x = tdx.tensor(values, dtype=getattr(tdx, dtype), device=device)
    t = torch.tensor(values).to(getattr(torch, dtype))
    for dim in (1, 0, (0, 1)):
        got, expected = tdx.logsumexp(x, dim=dim), torch.logsumexp(t, dim=dim)
        assert got.dtype == getattr(tdx, dtype)
        rtol, atol = tolerance(getattr(tdx, dtype), "reduction")
        assert_close(got, expected, rtol=rtol, atol=atol, msg=f"dim={dim}")
    all_inf = tdx.full((2, 4), ninf, device=device).to(getattr(tdx, dtype))
    assert tdx.logsumexp(all_inf, dim=1).tolist() == [ninf, ninf]
    assert x.logsumexp(1, keepdim=True).shape == (3, 1)
    empty = tdx.zeros(2, 0, device=device).to(getattr(tdx, dtype))
    assert_close(tdx.logsumexp(empty, dim=1), torch.logsumexp(torch.zeros(2, 0).to(getattr(torch, dtype)), dim=1))


@pytest.mark.parametrize("shape", [(4,), (4, -1), (-2, -3), (-1, -1)], ids=str)
def test_view_refused_with_torchs_message(device, shape):
    """A view/reshape to a shape the size cannot fill raises torch's class and words on every device."""
    with pytest.raises(RuntimeError) as want:
        torch.ones(2, 3).view(shape)
    for op in ("view", "reshape"):
        with pytest.raises(RuntimeError) as got:
            getattr(tdx.ones(2, 3, device=device), op)(shape)
        assert isinstance(got.value, tdx.TdxError)
        assert str(got.value) == str(want.value), op


def test_shape_reads_follow_every_tensor(device):
    """``x.shape`` (one Size per native shape, reused) is each tensor's own shape, as torch's, through views,
    reshapes and tensors made and freed in turn; a Size's slices, sums and repeats stay Sizes."""
    shapes = [(2, 3), (3, 2), (6,), (1, 6), (2, 1, 3), (), (0, 4), (4, 0), (2, 3)] * 3
    for i, shape in enumerate(shapes):
        t, ref = tdx.zeros(shape, device=device), torch.zeros(shape)
        if len(shape) > 1:
            t, ref = t.transpose(0, -1), ref.transpose(0, -1)
        if i % 2:
            t, ref = t.reshape(-1, 1), ref.reshape(-1, 1)
        got = t.shape
        assert isinstance(got, tdx.Size) and tuple(got) == tuple(ref.shape) and got == t.size()
        assert tuple(got[1:]) == tuple(ref.shape[1:]) and isinstance(got[1:], tdx.Size)
        assert isinstance(got + (5,), tdx.Size) and isinstance(got * 2, tdx.Size) and got.numel() == ref.numel()
        if got:
            assert got[-1] == ref.shape[-1] and t.size(-1) == ref.size(-1)


@pytest.mark.parametrize("shape", [(2, 6), (-1, 3), (3, 2, 2), (12,), (1, 12, 1)], ids=str)
def test_view_of_a_shape_tuple(device, shape):
    """``view((*lead, -1, d))``, as transformers writes it, is ``view(*lead, -1, d)``: torch's values and shape; a
    tuple holding a non-integer is torch's TypeError."""
    x, t = tdx.arange(12.0, device=device), torch.arange(12.0)
    check(lambda: x.view(shape), lambda: t.view(shape))
    check(lambda: x.transpose(0, 0).view(*shape) * 2, lambda: t.view(*shape) * 2)
    with pytest.raises(TypeError):
        x.view((shape[0], 2.0))
