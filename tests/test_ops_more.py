"""Property-based agreement with torch on CPU for the wider op surface, on every device.

Hypothesis draws shapes (0-d and 0-size included), broadcasting pairs, dtypes, values
(with NaN and infinities for floats) and op arguments; each op runs through tdx on the
device and through torch on CPU, and must give the same values, dtype and shape within
per-dtype tolerances, or raise a TdxError of the builtin kind torch raises.
"""

from __future__ import annotations

import operator
import os

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, assume, given, settings, strategies as st

import tdx
from tdx.testing.parity import TOLERANCE_TABLE
from conftest import broadcast_pair, check, dim_of, nonempty, seeds, shapes, torch_twin

# TDX_HYPOTHESIS_EXAMPLES=200 explores further (random seeds); the default keeps the suite fast and repeatable
_EXAMPLES = int(os.environ.get("TDX_HYPOTHESIS_EXAMPLES", "0"))
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")  # torch warns on degenerate inputs by design
SETTINGS = settings(max_examples=_EXAMPLES or 30, deadline=None, derandomize=not _EXAMPLES,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
FLOATS = ["float32", "float16", "bfloat16", "float64"]
INTS = ["int8", "int16", "int32", "int64", "uint8"]
ALL = FLOATS + INTS + ["bool", "complex64"]
REAL = FLOATS + INTS + ["bool"]
# (rtol, atol) for results of transcendental math and reductions
TOL = TOLERANCE_TABLE["reduction"]


def tol(*dtypes):
    """The loosest tolerance among ``dtypes`` (exact for ints and bools)."""
    pairs = [TOL[d] for d in dtypes if d in TOL]
    if not pairs:
        return {}
    return {"rtol": max(p[0] for p in pairs), "atol": max(p[1] for p in pairs)}


def values(shape, dtype, seed, special=False, low=-4, high=4):
    """NumPy values for ``shape`` and ``dtype`` (float32/complex64 for float kinds, so both sides round once)."""
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.integers(0, 2, size=shape).astype(bool)
    if dtype == "uint8":
        return rng.integers(0, max(high, 1) * 2, size=shape)
    if dtype in INTS:
        return rng.integers(low, high, size=shape)
    if dtype == "complex64":
        return (rng.uniform(low, high, shape) + 1j * rng.uniform(low, high, shape)).round(2).astype(np.complex64)
    arr = rng.uniform(low, high, size=shape).round(2).astype(np.float32)
    if special and arr.size:
        flat = arr.reshape(-1)
        for v in (np.nan, np.inf, -np.inf, 0.0):
            flat[rng.integers(0, flat.size)] = v
    return arr


def make(arr, device, dtype):
    """(tdx tensor on ``device``, torch CPU tensor) holding ``arr`` as ``dtype``."""
    arr = np.asarray(arr)
    t = torch.tensor(arr).to(getattr(torch, dtype))
    x = tdx.tensor(arr, dtype=getattr(tdx, dtype), device=device)  # narrowed on the host: no float64 on the device
    return x, t


def make_on_twin(arr, device, dtype):
    """:func:`make` with the torch tensor on the device's torch twin: for ops whose cuda kernels differ from CPU's
    in what they accept (abs and trace of bool...) or where they put ties and NaNs (sort, topk)."""
    x, t = make(arr, device, dtype)
    return x, t.to(torch_twin(device))


def supported(device, *dtypes):
    caps = tdx.backends.get(device).caps
    return all(d in caps.dtypes for d in dtypes)


def _both(name, x, t, *args, **kwargs):
    """(tdx call, torch call) of function ``name``."""
    return (lambda: getattr(tdx, name)(x, *args, **kwargs)), (lambda: getattr(torch, name)(t, *args, **kwargs))


# elementwise ---------------------------------------------------------------------------------
UNARY = ["abs", "neg", "exp", "exp2", "log", "log1p", "log2", "sqrt", "rsqrt", "sin", "cos", "tanh", "sigmoid",
         "erf", "floor", "ceil", "round", "sign", "reciprocal", "isnan", "isinf", "isfinite", "logical_not"]


# (op, dtype) -> call: dtype edge cases where an executor must follow torch, not its framework
# (MLX orders complex numbers and rounds their parts, where torch refuses; torch keeps uint8 for
# any/all; torch's complex sigmoid is 1 / (1 + exp(-x)))
EDGE_CASES = {
    ("sigmoid", "complex64"): lambda m, x: m.sigmoid(x),
    ("sgn", "complex64"): lambda m, x: m.sgn(x),
    ("round", "complex64"): lambda m, x: m.round(x),
    ("sign", "complex64"): lambda m, x: m.sign(x),
    ("any", "uint8"): lambda m, x: m.any(x, 0),
    ("all", "uint8"): lambda m, x: m.all(x, 0),
    ("pow", "int64"): lambda m, x: m.pow(x, -2),
    ("argmax", "bool"): lambda m, x: m.argmax(x),
    ("argmin", "bool"): lambda m, x: m.argmin(x),
    ("relu", "complex64"): lambda m, x: m.relu(x),
    ("max_dim", "complex64"): lambda m, x: m.max(x, 1),
    ("lt_scalar", "complex64"): lambda m, x: x < 1,
    ("clamp", "complex64"): lambda m, x: m.clamp(x, 0, 1),
    ("clamp_complex_max", "float32"): lambda m, x: x.clamp(max=x.to(m.complex64)),
    ("cat_empty_promotes", "float16"): lambda m, x: m.cat([x.reshape(-1)[:0], x.float().reshape(-1)[:0]]),
    ("cat_skipped_empty_promotes", "float16"): lambda m, x: m.cat([x, x.double().reshape(-1)[:0]]),
    **{(n, "complex64"): (lambda n: lambda m, x: getattr(m, n)(x, x))(n)
       for n in ("maximum", "minimum", "lt", "le", "gt", "ge", "floor_divide")},
    **{(n, "complex64"): (lambda n: lambda m, x: getattr(m, n)(x))(n)
       for n in ("amax", "amin", "argmax", "argmin", "max", "min")},
}


@pytest.mark.parametrize("name", UNARY + ["sgn"])
@SETTINGS
@given(shape=shapes, dtype=st.sampled_from(ALL), seed=seeds, special=st.booleans())
def test_unary(device, name, shape, dtype, seed, special):
    assume(supported(device, dtype))
    x, t = make_on_twin(values(shape, dtype, seed, special), device, dtype)
    check(lambda: getattr(tdx, name)(x), lambda: getattr(torch, name)(t), msg=f"{name} {dtype}", **tol(dtype))
    check(lambda: getattr(x, name)(), lambda: getattr(t, name)(), msg=f"Tensor.{name} {dtype}", **tol(dtype))


@pytest.mark.parametrize("case", sorted(EDGE_CASES), ids=lambda g: f"{g[0]}-{g[1]}")
@pytest.mark.float64
def test_dtype_edge_cases(device, case):
    """Each executor gives torch's result, or torch's error kind, where its framework differs."""
    dtype = case[1]
    if not supported(device, dtype):
        pytest.skip(f"{device} has no {dtype}")
    x, t = make(values((2, 3), dtype, 1, low=1, high=4), device, dtype)
    call = EDGE_CASES[case]
    check(lambda: call(tdx, x), lambda: call(torch, t), msg=str(case), **tol(dtype))


BINARY = ["pow", "maximum", "minimum", "fmod", "remainder", "eq", "ne", "lt", "le", "gt", "ge", "logical_and",
          "logical_or", "add", "sub", "mul", "div"]


def _binary_safe(name, b, dtype):
    if name in ("fmod", "remainder") and (dtype in INTS or dtype == "bool"):
        b = np.where(b == 0, 3, b)
    if name == "pow" and (dtype in INTS or dtype == "bool"):
        b = np.abs(b) % 3
    return b


@pytest.mark.parametrize("name", BINARY)
@SETTINGS
@given(shapes=broadcast_pair(), dtypes=st.tuples(st.sampled_from(REAL), st.sampled_from(REAL)), seed=seeds,
       special=st.booleans())
def test_binary(device, name, shapes, dtypes, seed, special):
    assume(supported(device, *dtypes))
    a = values(shapes[0], dtypes[0], seed, special)
    b = _binary_safe(name, values(shapes[1], dtypes[1], seed + 1), dtypes[1])
    (x, t), (y, u) = make(a, device, dtypes[0]), make(b, device, dtypes[1])
    check(lambda: getattr(tdx, name)(x, y), lambda: getattr(torch, name)(t, u), msg=f"{name} {dtypes}",
          **tol(*dtypes))
    check(lambda: getattr(x, name)(y), lambda: getattr(t, name)(u), msg=f"Tensor.{name} {dtypes}", **tol(*dtypes))


@pytest.mark.parametrize("name", ["fmod", "remainder", "pow", "maximum", "eq", "lt", "add", "mul"])
@SETTINGS
@given(shape=shapes, dtype=st.sampled_from(REAL), seed=seeds,
       scalar=st.sampled_from([2, -3, 2.5, -1.5, True, 0.0]))
def test_binary_scalar(device, name, shape, dtype, seed, scalar):
    assume(supported(device, dtype))
    if name == "maximum":
        scalar = None
    if name in ("fmod", "remainder") and dtype in INTS + ["bool"] and scalar in (0, 0.0, False):
        scalar = 2
    x, t = make(values(shape, dtype, seed), device, dtype)
    if scalar is None:  # maximum takes tensors only: a 0-d one
        y, u = make(np.asarray(1.5, np.float32), device, "float32")
        check(lambda: tdx.maximum(x, y), lambda: torch.maximum(t, u), **tol(dtype))
        return
    check(lambda: getattr(tdx, name)(x, scalar), lambda: getattr(torch, name)(t, scalar),
          msg=f"{name}({dtype}, {scalar!r})", **tol(dtype, "float32"))


# reductions --------------------------------------------------------------------------------------
REDUCTIONS = ["sum", "mean", "prod", "amax", "amin", "std", "var", "any", "all", "logsumexp", "norm"]
# vector norm orders: -inf (min |x|), inf (max |x|), 0 (count of nonzeros), negative and fractional ones
NORM_ORDERS = ["fro", 1, 2, 3, 0.5, 0, -0.5, -1, -2, float("inf"), float("-inf")]


@pytest.mark.parametrize("name", REDUCTIONS)
@SETTINGS
@given(shape=shapes, dtype=st.sampled_from(REAL), seed=seeds, data=st.data(), keepdim=st.booleans())
def test_reduction(device, name, shape, dtype, seed, data, keepdim):
    assume(supported(device, dtype))
    # mx.mean / mx.var over an empty array intermittently never return (an MLX defect the executor's
    # mean/var/std do not yet guard against): keep empty inputs away from them on MLX
    assume(not (device.startswith("mlx") and name in ("mean", "std", "var") and 0 in shape))
    x, t = make(values(shape, dtype, seed, low=-2, high=3), device, dtype)
    dim = dim_of(data.draw, shape)
    if name == "norm":
        p = data.draw(st.sampled_from(NORM_ORDERS))
        fx, ft = _both("norm", x, t, p, dim, keepdim)
    else:
        fx, ft = _both(name, x, t, dim, keepdim=keepdim)
    check(fx, ft, msg=f"{name}({dim}) {dtype} {shape}", **tol(dtype, "float32" if dtype in INTS else dtype))


@pytest.mark.parametrize("name", ["max", "min", "argmax", "argmin"])
@SETTINGS
@given(shape=nonempty, dtype=st.sampled_from([d for d in REAL if d != "bool"]), seed=seeds, data=st.data())
def test_extremes(device, name, shape, dtype, seed, data):
    assume(supported(device, dtype))
    arr = values(shape, dtype, seed, low=-100, high=100)
    x, t = make(arr, device, dtype)
    check(lambda: getattr(tdx, name)(x), lambda: getattr(torch, name)(t), msg=name)
    dim = dim_of(data.draw, shape)
    got, want = getattr(x, name)(dim), getattr(t, name)(dim)
    if name in ("max", "min"):
        check(lambda: got.values, lambda: want.values, msg=f"{name} values")
        assert (x.gather(dim, got.indices.unsqueeze(dim)).squeeze(dim) == got.values).all().item()
    else:
        vals = x.gather(dim, got.unsqueeze(dim)).squeeze(dim)
        check(lambda: vals, lambda: getattr(torch, name[3:])(t, dim).values, msg=f"{name} picks")


@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
@SETTINGS
@given(shape=shapes, dtype=st.sampled_from(REAL + ["complex64"]), seed=seeds, data=st.data(),
       out=st.sampled_from([None, "float32", "int64"]))
def test_scan(device, name, shape, dtype, seed, data, out):
    assume(supported(device, dtype))
    x, t = make(values(shape, dtype, seed, low=-2, high=3), device, dtype)
    dim = dim_of(data.draw, shape)
    check(lambda: getattr(x, name)(dim, dtype=None if out is None else getattr(tdx, out)),
          lambda: getattr(t, name)(dim, dtype=None if out is None else getattr(torch, out)),
          msg=f"{name}({dim}) {dtype}->{out}", **tol(dtype))


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@SETTINGS
@given(shape=shapes, dtype=st.sampled_from(ALL), seed=seeds, data=st.data(),
       out=st.sampled_from([None, "float32", "float64"]))
@pytest.mark.float64
def test_softmax(device, name, shape, dtype, seed, data, out):
    assume(supported(device, dtype))
    x, t = make(values(shape, dtype, seed, special=data.draw(st.booleans())), device, dtype)
    dim = dim_of(data.draw, shape)
    check(lambda: getattr(tdx, name)(x, dim, dtype=None if out is None else getattr(tdx, out)),
          lambda: getattr(torch, name)(t, dim, dtype=None if out is None else getattr(torch, out)),
          msg=f"{name}({dim}) {dtype}->{out}", **tol(dtype, out or dtype))
    check(lambda: getattr(x, name)(dim), lambda: getattr(t, name)(dim), msg=f"Tensor.{name}", **tol(dtype))


# matrices ----------------------------------------------------------------------------------------
MAT_DTYPES = ["float32", "float64", "int64", "int32", "float16", "bfloat16", "bool", "complex64"]


@SETTINGS
@given(b=st.integers(0, 3), n=st.integers(0, 4), k=st.integers(0, 4), m=st.integers(0, 4),
       dtype=st.sampled_from(MAT_DTYPES), seed=seeds)
def test_products(device, b, n, k, m, dtype, seed):
    assume(supported(device, dtype))
    x, t = make(values((b, n, k), dtype, seed), device, dtype)
    y, u = make(values((b, k, m), dtype, seed + 1), device, dtype)
    loose = {"rtol": 2e-2, "atol": 5e-2} if dtype in ("float16", "bfloat16") else tol(dtype)
    check(lambda: tdx.bmm(x, y), lambda: torch.bmm(t, u), msg="bmm", **loose)
    check(lambda: x.bmm(y), lambda: t.bmm(u), msg="Tensor.bmm", **loose)
    check(lambda: tdx.matmul(x, y), lambda: torch.matmul(t, u), msg="matmul", **loose)
    check(lambda: tdx.einsum("bij,bjk->bik", x, y), lambda: torch.einsum("bij,bjk->bik", t, u), msg="einsum",
          **loose)
    check(lambda: tdx.einsum("bij->j", [x]), lambda: torch.einsum("bij->j", [t]), msg="einsum sum", **loose)
    if b:
        check(lambda: tdx.mm(x[0], y[0]), lambda: torch.mm(t[0], u[0]), msg="mm", **loose)
        check(lambda: tdx.outer(x[0, 0] if n else x[0, :, 0], y[0, 0]),
              lambda: torch.outer(t[0, 0] if n else t[0, :, 0], u[0, 0]), msg="outer", **loose)
    other = "float32" if dtype != "float32" else "int64"
    bad, ubad = make(values((b, k, m), other, seed), device, other)
    check(lambda: tdx.bmm(x, bad), lambda: torch.bmm(t, ubad), msg="bmm dtype mismatch")


@SETTINGS
@given(shape=st.lists(st.integers(0, 4), min_size=1, max_size=2).map(tuple), dtype=st.sampled_from(ALL),
       seed=seeds, diagonal=st.integers(-3, 3))
def test_diag_trace_tril(device, shape, dtype, seed, diagonal):
    assume(supported(device, dtype))
    x, t = make_on_twin(values(shape, dtype, seed), device, dtype)
    check(lambda: tdx.diag(x, diagonal), lambda: torch.diag(t, diagonal), msg="diag", **tol(dtype))
    check(lambda: x.diag(diagonal), lambda: t.diag(diagonal), msg="Tensor.diag", **tol(dtype))
    check(lambda: tdx.trace(x), lambda: torch.trace(t), msg="trace", **tol(dtype))
    if len(shape) == 2:
        check(lambda: tdx.tril(x, diagonal), lambda: torch.tril(t, diagonal), msg="tril")
        check(lambda: x.triu(diagonal), lambda: t.triu(diagonal), msg="triu")


# gather / scatter / masks ------------------------------------------------------------------------
@SETTINGS
@given(shape=nonempty, dtype=st.sampled_from(ALL), seed=seeds, data=st.data())
def test_gather_scatter(device, shape, dtype, seed, data):
    assume(supported(device, dtype))
    arr = values(shape, dtype, seed)
    x, t = make(arr, device, dtype)
    dim = dim_of(data.draw, shape)
    d = dim % len(shape)
    ishape = tuple(data.draw(st.integers(0, s)) for s in shape)
    rng = np.random.default_rng(seed)
    gidx = rng.integers(0, shape[d], size=ishape)
    gi, gu = make(gidx, device, "int64")
    check(lambda: tdx.gather(x, dim, gi), lambda: torch.gather(t, dim, gu), msg="gather")
    check(lambda: x.gather(dim, gi), lambda: t.gather(dim, gu), msg="Tensor.gather")
    # scatter: distinct targets along dim (torch leaves duplicates unspecified)
    rows = min(ishape[d], shape[d])
    perm = np.argsort(rng.random((*ishape[:d], shape[d], *ishape[d + 1:])), axis=d)
    sidx = np.take(perm, np.arange(rows), axis=d)
    si, su = make(sidx, device, "int64")
    src, tsrc = make(values(sidx.shape, dtype, seed + 7), device, dtype)
    check(lambda: tdx.scatter(x, dim, si, src), lambda: torch.scatter(t, dim, su, tsrc), msg="scatter")
    check(lambda: x.scatter(dim, si, 1), lambda: t.scatter(dim, su, 1), msg="scatter value")
    check(lambda: tdx.scatter_add(x, dim, gi, make(values(gidx.shape, dtype, 3), device, dtype)[0]),
          lambda: torch.scatter_add(t, dim, gu, make(values(gidx.shape, dtype, 3), device, dtype)[1]),
          msg="scatter_add", **tol(dtype))
    check(lambda: x.clone().scatter_(dim, si, src), lambda: t.clone().scatter_(dim, su, tsrc), msg="scatter_")
    bad, ubad = make(gidx + shape[d], device, "int64")
    if gidx.size and not tdx.backends.get(device).caps.device_side_checks:  # else a device-side assert
        check(lambda: tdx.gather(x, dim, bad), lambda: torch.gather(t, dim, ubad), msg="gather out of range")


@SETTINGS
@given(shape=shapes, dtype=st.sampled_from(ALL), seed=seeds, data=st.data())
def test_index_select_narrow_unbind(device, shape, dtype, seed, data):
    assume(supported(device, dtype))
    x, t = make(values(shape, dtype, seed), device, dtype)
    dim = dim_of(data.draw, shape)
    size = shape[dim] if shape else 1
    idx = np.random.default_rng(seed).integers(0, max(size, 1), size=data.draw(st.integers(0 if size else 0, 5)))
    if not size:
        idx = idx[:0]
    i, u = make(idx, device, data.draw(st.sampled_from(["int64", "int32"])))
    check(lambda: tdx.index_select(x, dim, i), lambda: torch.index_select(t, dim, u), msg="index_select")
    start = data.draw(st.integers(-size, size))
    length = data.draw(st.integers(0, size))
    check(lambda: tdx.narrow(x, dim, start, length), lambda: torch.narrow(t, dim, start, length), msg="narrow")
    check(lambda: tdx.unbind(x, dim), lambda: torch.unbind(t, dim), msg="unbind")


@SETTINGS
@given(shapes=broadcast_pair(), dtype=st.sampled_from(ALL), seed=seeds,
       value=st.sampled_from([0, 1, -2.5, True, "tensor"]))
def test_masks(device, shapes, dtype, seed, value):
    assume(supported(device, dtype))
    x, t = make(values(shapes[0], dtype, seed), device, dtype)
    m, n = make(values(shapes[1], "bool", seed + 1), device, "bool")
    if value == "tensor":
        v, w = make(np.asarray(3, np.int64), device, "int64")
        check(lambda: tdx.masked_fill(x, m, v), lambda: torch.masked_fill(t, n, w), msg="masked_fill 0-d")
    else:
        check(lambda: tdx.masked_fill(x, m, value), lambda: torch.masked_fill(t, n, value), msg="masked_fill")
        check(lambda: x.clone().masked_fill_(m, value), lambda: t.clone().masked_fill_(n, value),
              msg="masked_fill_")
    check(lambda: tdx.masked_select(x, m), lambda: torch.masked_select(t, n), msg="masked_select")
    check(lambda: x.nonzero(), lambda: t.nonzero(), msg="nonzero")
    check(lambda: tdx.nonzero(x, as_tuple=True), lambda: torch.nonzero(t, as_tuple=True), msg="nonzero tuple")
    check(lambda: tdx.where(m, x, 0), lambda: torch.where(n, t, 0), msg="where")
    bad, ubad = make(values(shapes[1], "int64", seed), device, "int64")
    check(lambda: x.masked_fill(bad, 1), lambda: t.masked_fill(ubad, 1), msg="non-bool mask")


# ordering ----------------------------------------------------------------------------------------
@SETTINGS
@given(shape=shapes, dtype=st.sampled_from(ALL), seed=seeds, data=st.data(), descending=st.booleans())
def test_sort_argsort(device, shape, dtype, seed, data, descending):
    assume(supported(device, dtype))
    x, t = make_on_twin(values(shape, dtype, seed, special=data.draw(st.booleans()), low=-3, high=3), device, dtype)
    dim = dim_of(data.draw, shape)
    kw = {"dim": dim, "descending": descending, "stable": True}
    check(lambda: tdx.sort(x, **kw), lambda: torch.sort(t, **kw), msg=f"sort {dtype}")
    check(lambda: x.sort(dim, descending), lambda: t.sort(dim, descending), msg="Tensor.sort")
    check(lambda: tdx.argsort(x, **kw), lambda: torch.argsort(t, **kw), msg="argsort")


@SETTINGS
@given(shape=shapes, dtype=st.sampled_from(ALL), seed=seeds, data=st.data(), largest=st.booleans())
def test_topk(device, shape, dtype, seed, data, largest):
    assume(supported(device, dtype))
    arr = values(shape, dtype, seed, low=-50, high=50)
    x, t = make_on_twin(arr, device, dtype)
    dim = dim_of(data.draw, shape)
    size = shape[dim] if shape else 1
    k = data.draw(st.integers(0, size + 1))
    try:
        want = torch.topk(t, k, dim, largest)
    except RuntimeError:
        with pytest.raises(RuntimeError) as info:
            tdx.topk(x, k, dim, largest)
        assert isinstance(info.value, tdx.TdxError)
        return
    got = tdx.topk(x, k, dim, largest)
    check(lambda: got.values, lambda: want.values, msg="topk values")
    if shape or k:  # k=0 of a 0-d tensor gives a 0-d result CPU's kernel fills with the value and cuda's leaves zero
        check(lambda: x.gather(dim, got.indices) if shape else x, lambda: want.values, msg="topk indices pick values")
    distinct = t.numel() == 0 or len(set(t.flatten().tolist())) == t.numel()
    if distinct:
        check(lambda: got.indices, lambda: want.indices, msg="topk indices")


@SETTINGS
@given(shape=shapes, dtype=st.sampled_from(REAL), seed=seeds, data=st.data())
def test_unique(device, shape, dtype, seed, data):
    assume(supported(device, dtype))
    x, t = make(values(shape, dtype, seed, low=-3, high=3), device, dtype)
    inv, counts = data.draw(st.booleans()), data.draw(st.booleans())
    check(lambda: tdx.unique(x, return_inverse=inv, return_counts=counts),
          lambda: torch.unique(t, return_inverse=inv, return_counts=counts), msg="unique")
    if shape:
        dim = dim_of(data.draw, shape)
        check(lambda: x.unique(dim=dim, return_inverse=True, return_counts=True),
              lambda: t.unique(dim=dim, return_inverse=True, return_counts=True), msg=f"unique dim={dim}")


# rearranging -------------------------------------------------------------------------------------
@SETTINGS
@given(shape=shapes, dtype=st.sampled_from(ALL), seed=seeds, data=st.data())
def test_rearrange(device, shape, dtype, seed, data):
    assume(supported(device, dtype))
    x, t = make(values(shape, dtype, seed), device, dtype)
    nd = len(shape)
    dims = tuple(data.draw(st.lists(st.integers(-max(nd, 1), max(nd, 1) - 1), max_size=2, unique=True)))
    shifts = tuple(data.draw(st.integers(-5, 5)) for _ in dims)
    check(lambda: tdx.roll(x, shifts, dims), lambda: torch.roll(t, shifts, dims), msg=f"roll {shifts} {dims}")
    check(lambda: x.roll(3), lambda: t.roll(3), msg="roll flat")
    check(lambda: tdx.flip(x, dims), lambda: torch.flip(t, dims), msg=f"flip {dims}")
    check(lambda: x.flip(*dims), lambda: t.flip(*dims), msg="Tensor.flip")
    reps = tuple(data.draw(st.lists(st.integers(0, 3), min_size=0, max_size=nd + 1)))
    check(lambda: x.repeat(*reps) if reps else x.repeat(()), lambda: t.repeat(*reps) if reps else t.repeat(()),
          msg=f"repeat {reps}")
    check(lambda: tdx.tile(x, reps), lambda: torch.tile(t, reps), msg=f"tile {reps}")
    r = data.draw(st.integers(0, 3))
    dim = data.draw(st.sampled_from([None, *range(-max(nd, 1), max(nd, 1))]))
    check(lambda: tdx.repeat_interleave(x, r, dim), lambda: torch.repeat_interleave(t, r, dim),
          msg=f"repeat_interleave {r} {dim}")
    if nd:
        d = dim_of(data.draw, shape)
        counts = np.random.default_rng(seed).integers(0, 3, size=shape[d])
        c, cu = make(counts, device, "int64")
        check(lambda: x.repeat_interleave(c, d), lambda: t.repeat_interleave(cu, d), msg="repeat_interleave t")
        check(lambda: tdx.repeat_interleave(c), lambda: torch.repeat_interleave(cu), msg="repeat_interleave(c)")
        perm = list(np.random.default_rng(seed).permutation(nd))
        src = data.draw(st.lists(st.integers(0, nd - 1), min_size=1, max_size=nd, unique=True))
        dst = [int(p) for p in perm[:len(src)]]
        check(lambda: tdx.movedim(x, src, dst), lambda: torch.movedim(t, src, dst), msg=f"movedim {src}->{dst}")
        check(lambda: x.movedim(src[0], -1), lambda: t.movedim(src[0], -1), msg="movedim int")


# conversions, copies, fills, in-place ----------------------------------------------------------------
CONVERSIONS = ["float", "half", "bfloat16", "long", "int", "bool", "double"]


@SETTINGS
@given(shape=shapes, dtype=st.sampled_from(REAL), target=st.sampled_from(ALL), seed=seeds)
def test_conversions_and_copies(device, shape, dtype, target, seed):
    assume(supported(device, dtype, target))
    x, t = make(values(shape, dtype, seed), device, dtype)
    for name in CONVERSIONS:
        if name == "double" and not supported(device, "float64"):
            continue
        check(lambda: getattr(x, name)(), lambda: getattr(t, name)(), msg=name)
    check(lambda: x.to(getattr(tdx, target)), lambda: t.to(getattr(torch, target)), msg=f"to {target}")
    check(lambda: x.clone(), lambda: t.clone(), msg="clone")
    check(lambda: x.detach(), lambda: t.detach(), msg="detach")
    y, u = make(values(shape, target, seed + 3), device, target)
    check(lambda: x.clone().copy_(y), lambda: t.clone().copy_(u), msg=f"copy_ {target}->{dtype}")
    check(lambda: x.clone().fill_(2.75), lambda: t.clone().fill_(2.75), msg="fill_")
    check(lambda: x.clone().zero_(), lambda: t.clone().zero_(), msg="zero_")
    if shape:
        row, urow = make(values(shape[-1:], target, seed), device, target)
        check(lambda: x.clone().copy_(row), lambda: t.clone().copy_(urow), msg="copy_ broadcast")


INPLACE_BINARY = ["add_", "sub_", "mul_", "div_", "pow_", "fmod_", "remainder_", "floor_divide_",
                  "eq_", "lt_", "logical_and_", "atan2_", "bitwise_and_"]
INPLACE_UNARY = ["neg_", "abs_", "exp_", "log_", "sqrt_", "sin_", "tanh_", "sigmoid_", "floor_", "ceil_", "round_",
                 "sign_", "reciprocal_", "rsqrt_", "erf_", "logical_not_", "relu_", "trunc_", "square_"]


@pytest.mark.parametrize("name", INPLACE_BINARY)
@SETTINGS
@given(shapes=broadcast_pair(), dtypes=st.tuples(st.sampled_from(REAL), st.sampled_from(REAL)), seed=seeds,
       alpha=st.sampled_from([None, 2]))
def test_inplace_binary(device, name, shapes, dtypes, seed, alpha):
    assume(supported(device, *dtypes))
    a = values(shapes[0], dtypes[0], seed)
    b = _binary_safe(name.rstrip("_").replace("floor_divide", "fmod"), values(shapes[1], dtypes[1], seed + 1),
                     dtypes[1])
    (x, t), (y, u) = make(a, device, dtypes[0]), make(b, device, dtypes[1])
    kw = {"alpha": alpha} if alpha and name in ("add_", "sub_") and "bool" not in dtypes else {}

    def run(m, v, w):
        out = v.clone()
        same = getattr(out, name)(w, **kw)
        assert same is out
        return out

    check(lambda: run(tdx, x, y), lambda: run(torch, t, u), msg=f"{name} {dtypes} {shapes}", **tol(*dtypes))
    check(lambda: run(tdx, x, 2), lambda: run(torch, t, 2), msg=f"{name} scalar", **tol(*dtypes))


@pytest.mark.parametrize("name", INPLACE_UNARY)
@SETTINGS
@given(shape=shapes, dtype=st.sampled_from(REAL), seed=seeds)
def test_inplace_unary(device, name, shape, dtype, seed):
    assume(supported(device, dtype))
    x, t = make_on_twin(values(shape, dtype, seed), device, dtype)  # cuda's abs_ takes bools, CPU's refuses them

    def run(v):
        out = v.clone()
        assert getattr(out, name)() is out
        return out

    check(lambda: run(x), lambda: run(t), msg=f"{name} {dtype}", **tol(dtype))


@SETTINGS
@given(shape=shapes, dtype=st.sampled_from(REAL), seed=seeds, lo=st.sampled_from([None, -1, 0.5]),
       hi=st.sampled_from([None, 2, 1.5]))
def test_clamp_inplace(device, shape, dtype, seed, lo, hi):
    assume(supported(device, dtype))
    x, t = make(values(shape, dtype, seed), device, dtype)
    check(lambda: x.clone().clamp_(lo, hi), lambda: t.clone().clamp_(lo, hi), msg=f"clamp_({lo}, {hi})")
    check(lambda: x.clone().clip_(min=lo, max=hi), lambda: t.clone().clip_(min=lo, max=hi), msg="clip_")


ALPHA_CASES = [("bool", "bool", 2), ("bool", "bool", 0), ("int64", "int64", True), ("float32", "float32", 1j),
               ("int64", "int64", -2), ("int64", "float32", 2), ("float32", "bool", 2), ("int32", "int64", 2.5),
               ("float16", "float32", 0.5), ("uint8", "int8", 3)]


@pytest.mark.parametrize("op", ["add", "sub"])
@pytest.mark.parametrize("case", ALPHA_CASES, ids=str)
def test_alpha_executor_ops(device, op, case):
    """``add_alpha``/``sub_alpha``: ``a +/- alpha * b`` with torch's promotion and alpha checks."""
    da, db, alpha = case
    (x, t), (y, u) = make(values((2, 3), da, 1), device, da), make(values((3,), db, 2), device, db)
    ex = x._ex

    def run():
        from tdx._errors import NATIVE_ERRORS
        from tdx._tensor.wrapping import wrap

        try:
            return wrap(getattr(ex, f"{op}_alpha")(x._n, y._n, alpha), ex)
        except NATIVE_ERRORS as err:
            raise ex.native_error(err) from None

    check(run, lambda: getattr(torch, op)(t, u, alpha=alpha), msg=f"{op} alpha={alpha!r}", **tol(da, db))


def test_inplace_rebinds_and_keeps_identity(device):
    x = tdx.ones(2, 3, device=device)
    same = x
    x.mul_(3).add_(1, alpha=2).clamp_(max=4.5)
    assert x is same and x.tolist() == [[4.5] * 3] * 2
    i = tdx.ones(3, dtype=tdx.int64, device=device)
    with pytest.raises(RuntimeError):
        i.div_(2)  # float result can't be cast back to int64, as torch
    with pytest.raises(RuntimeError):
        tdx.ones(3, device=device).add_(tdx.ones(2, 3, device=device))  # can't grow in place


def test_copy_across_devices(device):
    src = tdx.arange(6, device="cpu").reshape(2, 3)
    dst = tdx.zeros(2, 3, dtype=tdx.float32, device=device)
    dst.copy_(src)
    assert dst.device == tdx.backends.get(device).device
    assert dst.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]


def test_op_arguments_and_errors(device):
    # torch on the device's twin decides: cuda's kernels accept what CPU's refuse (fmod of an int by 0)
    x, t = make_on_twin(values((3, 4), "float32", 1), device, "float32")
    check(lambda: x.narrow(1, 4, 0), lambda: t.narrow(1, 4, 0), msg="narrow start out of range")
    check(lambda: x.narrow(1, 2, 3), lambda: t.narrow(1, 2, 3), msg="narrow too long")
    check(lambda: tdx.unbind(x[0, 0]), lambda: torch.unbind(t[0, 0]), msg="unbind 0-d")
    check(lambda: x.roll((1, 2), 0), lambda: t.roll((1, 2), 0), msg="roll misaligned")
    check(lambda: x.flip(0, 0), lambda: t.flip(0, 0), msg="flip repeated")
    check(lambda: x.repeat(2), lambda: t.repeat(2), msg="repeat too few")
    check(lambda: x.diag().diag().diag(), lambda: t.diag().diag().diag(), msg="diag")
    check(lambda: x[None].diag(), lambda: t[None].diag(), msg="diag 3-D")
    check(lambda: x[None].trace(), lambda: t[None].trace(), msg="trace 3-D")
    check(lambda: x.topk(5), lambda: t.topk(5), msg="topk k too big")
    check(lambda: x.softmax(2), lambda: t.softmax(2), msg="softmax bad dim")
    check(lambda: x.long().softmax(0), lambda: t.long().softmax(0), msg="softmax int")
    check(lambda: x.long().norm(), lambda: t.long().norm(), msg="norm int")
    check(lambda: tdx.fmod(x.long(), 0), lambda: torch.fmod(t.long(), 0), msg="fmod int by zero")
    check(lambda: tdx.einsum("ij,jk", x, x), lambda: torch.einsum("ij,jk", t, t), msg="einsum bad shapes")
    check(lambda: tdx.einsum("ij,jk", x, x.long().T), lambda: torch.einsum("ij,jk", t, t.long().T),
          msg="einsum dtypes")
    idx, u = make_on_twin(np.array([[0, 1]]), device, "int64")
    check(lambda: x.gather(1, idx.int()), lambda: t.gather(1, u.int()), msg="gather int32 index")
    check(lambda: x.gather(1, idx.short()), lambda: t.gather(1, u.short()), msg="gather int16 index")
    check(lambda: x.scatter(1, idx, x.long()), lambda: t.scatter(1, u, t.long()), msg="scatter dtypes")
    check(lambda: x.index_select(1, idx), lambda: t.index_select(1, u), msg="index_select 2-D index")
    check(lambda: x.masked_fill(x > 0, x), lambda: t.masked_fill(t > 0, t), msg="masked_fill 1-d value")
    check(lambda: x.movedim((0, 1), 0), lambda: t.movedim((0, 1), 0), msg="movedim misaligned")
    check(lambda: x.cumsum(2), lambda: t.cumsum(2), msg="cumsum bad dim")
    check(lambda: x.logsumexp((0, 1)), lambda: t.logsumexp((0, 1)), msg="logsumexp dims", **tol("float32"))
    check(lambda: x.norm(dim=(0, 1), p=3), lambda: t.norm(dim=(0, 1), p=3), msg="norm 2 dims", **tol("float32"))
    check(lambda: tdx.norm(x[:0], float("inf")), lambda: torch.norm(t[:0], float("inf")), msg="inf norm empty")
    check(lambda: tdx.norm(x[:0], float("-inf")), lambda: torch.norm(t[:0], float("-inf")), msg="-inf norm empty")
    check(lambda: x.fill_(x), lambda: t.fill_(t), msg="fill_ 1-d value")


@pytest.mark.parametrize("dtype, shape", [("int64", (2,)), ("int64", ()), ("int32", (2,)), ("float32", (2,)),
                                          ("int64", (1, 2))])
def test_tensor_split_by_a_tensor(device, dtype, shape):
    """Cut points given as a tensor: torch reads them on the host and takes only a 0-d or 1-d int64 tensor (on cuda
    its own index tensor on the device is refused too); tdx raises the same builtin, or gives the same pieces."""
    x, t = make_on_twin(values((3, 5), "float32", 2), device, "float32")
    cuts = np.full(shape, 2) if shape in ((), (1, 2)) else np.array([1, 3])
    idx, u = make_on_twin(cuts, device, dtype)
    check(lambda: x.tensor_split(idx, 1), lambda: t.tensor_split(u, 1), msg=f"tensor_split by {dtype} {shape}")
    check(lambda: tdx.tensor_split(x, idx.cpu(), 1), lambda: torch.tensor_split(t, u.cpu(), 1), msg="on the host")


@pytest.mark.parametrize("op", [operator.add, operator.mul])
def test_complex_and_half_paths(device, op):
    for dtype in ("complex64", "float16", "bfloat16"):
        if not supported(device, dtype):
            continue
        x, t = make(values((2, 3), dtype, 5), device, dtype)
        check(lambda: op(x, x).sum(1), lambda: op(t, t).sum(1), msg=dtype, **tol(dtype))
        check(lambda: x.cumsum(1), lambda: t.cumsum(1), msg=f"cumsum {dtype}", **tol(dtype))


def test_float64_refused_where_missing(device):
    ex = tdx.backends.get(device)
    if ex.caps.float64:
        assert tdx.zeros(2, device=device).double().dtype is tdx.float64
        return
    with pytest.raises(tdx.DtypeError, match="float64"):
        tdx.zeros(2, device=device).double()


def test_catalog_report(tmp_path):
    """``python -m tdx catalog``: a table per function and device, a summary, and the failures listed."""
    from tdx._cli import catalog as _catalog

    out = tmp_path / "catalog.md"
    assert _catalog.main(["--devices", "cpu,mlx:cpu,cuda", "--only", "torch.abs", "torch.sort", "Tensor.add_",
                          "-o", str(out)]) == 0
    text = out.read_text()
    assert "| function | cpu | mlx:cpu | cuda |" in text
    assert "| `torch.sort` |" in text and "## Summary" in text and "## Failures" in text
    cuda = any(r.device == "cuda" and r.available for r in tdx.backends.available())
    assert ("cuda: not run here" in text) is not cuda


def test_catalog_meets_the_bar():
    """At least 95% of the catalog passes on every device that runs here; failures name a reason."""
    from tdx._cli import catalog as _catalog

    devices = [d for d in ("cpu", "mlx:cpu") if any(r.device == d and r.available for r in tdx.backends.available())]
    results = _catalog.run(tuple(devices))
    for d in devices:
        passed = sum(row[d] is None for row in results.values())
        assert passed >= 0.95 * len(results), (d, {k: v[d] for k, v in results.items() if v[d]})
        assert all(isinstance(row[d], str) and row[d] for row in results.values() if row[d] is not None)


@pytest.mark.parametrize("dtype", ["complex64", "float32", "int64"])
def test_conj(device, dtype):
    if not supported(device, dtype):
        pytest.skip(f"{device} has no {dtype}")
    x, t = make(values((2, 3), dtype, 4), device, dtype)
    check(lambda: x.conj(), lambda: t.conj(), msg="conj")
    check(lambda: tdx.conj(x).resolve_conj(), lambda: torch.conj(t).resolve_conj(), msg="resolve_conj")
    check(lambda: x.conj() * x, lambda: t.conj() * t, msg="conj product", **tol(dtype))
    assert (x.conj() is x) == (t.conj() is t)
    assert not tdx.resolve_conj(x.conj()).is_conj()


@pytest.mark.parametrize("p", NORM_ORDERS)
@pytest.mark.parametrize("dim", [None, 0, 1, (0, 1)])
def test_norm_orders(device, p, dim):
    """Every vector order on values with a zero, ties and mixed signs, whole and along dims."""
    a = np.array([[0.5, -2.0, 3.0, -0.25], [0.0, 1.5, -1.0, 2.0], [-3.0, 0.75, 0.0, -0.5]], np.float32)
    for dtype in ("float32", "float64"):
        if not supported(device, dtype):
            continue
        x, t = make(a, device, dtype)
        check(lambda: tdx.norm(x, p, dim), lambda: torch.norm(t, p, dim), msg=f"norm {p} {dim} {dtype}")
        check(lambda: x[1:].norm(p, dim, True), lambda: t[1:].norm(p, dim, True), msg=f"norm {p} {dim} keepdim")
        check(lambda: x[:, :0].norm(p, dim), lambda: t[:, :0].norm(p, dim), msg=f"norm {p} {dim} empty")


@pytest.mark.parametrize("dim", [None, (0, 1), (1, 0), (-1, 0), 0])
def test_nuclear_norm(device, dim):
    a = np.array([[0.5, -2.0, 3.0], [0.0, 1.5, -1.0]], np.float32)
    for dtype in ("float32", "float64"):
        if not supported(device, dtype):
            continue
        x, t = make(a, device, dtype)
        check(lambda: tdx.norm(x, "nuc", dim), lambda: torch.norm(t, "nuc", dim), msg=f"nuc {dim} {dtype}",
              **tol(dtype))
        check(lambda: x.norm("nuc", dim, True), lambda: t.norm("nuc", dim, True), msg=f"nuc {dim} keepdim",
              **tol(dtype))
