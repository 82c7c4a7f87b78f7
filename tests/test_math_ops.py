"""Property-based agreement with real torch for the composite math ops (addmm, lerp, isclose, hstack...).

Hypothesis draws shapes (0-d and 0-size included), broadcasting shapes, dtypes, values (with NaN,
infinities and zeros for floats) and op arguments; each op runs through tdx on the device and
through torch on the device's torch twin (CPU, or cuda itself), and must give the same values, dtype and shape, or raise a TdxError of the
builtin kind torch raises. Half precision results may match either torch in that dtype or torch
computing in float32 from the same inputs (the exact answer rounded once), as tdx's composites
compute them. Gradients of every differentiable composite are checked against torch's autograd.
"""

from __future__ import annotations

import os
import warnings

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, assume, given, settings, strategies as st

import tdx
from tdx._errors import TdxNotImplementedError
from conftest import check, torch_twin
from test_grad_ops import floats, grad_check
from test_ops_more import dim_of, make, seeds, shapes, supported, tol, values

_EXAMPLES = int(os.environ.get("TDX_HYPOTHESIS_EXAMPLES", "0"))
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")  # torch warns on degenerate inputs by design
SETTINGS = settings(max_examples=_EXAMPLES or 25, deadline=None, derandomize=not _EXAMPLES,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
GRAD_SETTINGS = settings(SETTINGS, max_examples=_EXAMPLES or 6)
DTYPES = ["float32", "float64", "float16", "bfloat16", "int64", "int32", "bool"]
FLOATS = ["float32", "float64", "float16", "bfloat16"]
HALF = (torch.float16, torch.bfloat16)
dtypes = st.sampled_from(DTYPES)


def _widen(x):
    if isinstance(x, torch.Tensor) and x.dtype in HALF:
        return x.float()
    if isinstance(x, (list, tuple)):
        return type(x)(_widen(v) for v in x)
    return x


def _has_half(xs) -> bool:
    return any(_has_half(x) if isinstance(x, (list, tuple)) else isinstance(x, torch.Tensor) and x.dtype in HALF
               for x in xs)


def check_wide(tdx_fn, torch_fn, inputs, msg="", **tolerance):
    """``check(tdx_fn, lambda: torch_fn(*inputs))``; with half precision inputs the result may instead match
    torch computing in float32 from the same inputs, rounded once to torch's result dtype."""
    try:
        return check(tdx_fn, lambda: torch_fn(*inputs), msg, **tolerance)
    except AssertionError:
        if not _has_half(inputs):
            raise
    want = torch_fn(*inputs)
    wide = torch_fn(*_widen(list(inputs)))
    if isinstance(want, tuple):
        wide = tuple(w.to(e.dtype) for w, e in zip(wide, want))
    else:
        wide = wide.to(want.dtype)
    return check(tdx_fn, lambda: wide, f"{msg} (float32 oracle)", **tolerance)


def pairs(arrays, device, dtypes_):
    """(tdx tensors, torch tensors) for ``arrays`` as ``dtypes_``, the torch ones on the device's torch twin: on
    cuda, torch's own kernels there are the oracle (no integer matmul, int32 addcmul scaling in int64...)."""
    made = [make(a, device, d) for a, d in zip(arrays, dtypes_)]
    twin = torch_twin(device)
    return [m[0] for m in made], [m[1].to(twin) for m in made]


def _no_nan(arr):
    """``arr`` with NaN made +inf: a NaN's sign bit is out of reach of tdx's composites (signbit, copysign),
    and torch's bfloat16 conversion gives NaN a negative sign."""
    return np.where(np.isnan(arr), np.inf, arr) if arr.dtype.kind == "f" else arr


@st.composite
def broadcastable(draw, n):
    """``n`` shapes that broadcast together: each dim of a base shape kept or made 1, leading dims dropped."""
    base = draw(shapes)
    out = []
    for _ in range(n):
        s = [draw(st.sampled_from([d, 1])) for d in base]
        out.append(tuple(s[draw(st.integers(0, len(s))):]))
    return out


# fused pointwise -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["addcmul", "addcdiv"])
@SETTINGS
@given(shape3=broadcastable(3), dts=st.tuples(dtypes, dtypes, dtypes), seed=seeds,
       value=st.sampled_from([1, 2, -0.5, True, 0, 1.5]))
def test_addcmul_addcdiv(device, name, shape3, dts, seed, value):
    assume(supported(device, *dts))
    xs, ts = pairs([values(s, d, seed + i) for i, (s, d) in enumerate(zip(shape3, dts))], device, dts)
    check_wide(lambda: getattr(tdx, name)(*xs, value=value), lambda *a: getattr(torch, name)(*a, value=value), ts,
               f"{name} {dts} value={value}", **tol(*dts))
    check_wide(lambda: getattr(xs[0], name)(xs[1], xs[2]), lambda a, b, c: getattr(a, name)(b, c), ts,
               f"Tensor.{name} {dts}", **tol(*dts))


@SETTINGS
@given(shape3=broadcastable(3), dtype=dtypes, seed=seeds, special=st.booleans(), data=st.data())
def test_lerp(device, shape3, dtype, seed, special, data):
    end_dtype = data.draw(st.sampled_from([dtype, dtype, "float64"]))
    assume(supported(device, dtype, end_dtype))
    (x, e), (t, u) = pairs([values(shape3[0], dtype, seed, special), values(shape3[1], end_dtype, seed + 1)],
                           device, [dtype, end_dtype])
    weight = data.draw(st.sampled_from(["tensor", "0-d float64", 0.25, 0.75, -0.5, 1.5, 0, 1]))
    if weight == "0-d float64" and not supported(device, "float64"):
        weight = 0.3
    if weight == "tensor":
        (w,), (v,) = pairs([values(shape3[2], dtype, seed + 2, low=-1, high=2)], device, [dtype])
    elif weight == "0-d float64":
        (w,), (v,) = pairs([np.float64(0.3)], device, ["float64"])
    else:
        w = v = weight
    check_wide(lambda: tdx.lerp(x, e, w), torch.lerp, [t, u, v], f"lerp {dtype}/{end_dtype} w={weight}",
               **tol(dtype))
    check_wide(lambda: x.lerp(e, w), lambda a, b, c: a.lerp(b, c), [t, u, v], "Tensor.lerp", **tol(dtype))


# addmm family ------------------------------------------------------------------------------------------
def _blas_shapes(name, b, n, k, p, pick):
    """(input shape, operand shapes) of an addmm-family op, the input broadcastable to the result."""
    if name == "addmm":
        return pick([(n, p), (p,), (1, p), (), (n, 1)]), [(n, k), (k, p)]
    if name == "addmv":
        return pick([(n,), (1,), ()]), [(n, k), (k,)]
    if name == "addr":
        return pick([(n, p), (p,), ()]), [(n,), (p,)]
    if name == "baddbmm":
        return pick([(b, n, p), (n, p), (p,), ()]), [(b, n, k), (b, k, p)]
    return pick([(n, p), (p,), ()]), [(b, n, k), (b, k, p)]  # addbmm


@pytest.mark.parametrize("name", ["addmm", "addmv", "addr", "baddbmm", "addbmm"])
@SETTINGS
@given(dims=st.tuples(st.integers(0, 3), st.integers(0, 4), st.integers(0, 4), st.integers(0, 4)), dtype=dtypes,
       seed=seeds, beta=st.sampled_from([1, 0, 0.5, 2, True]), alpha=st.sampled_from([1, 0, -1.5, 3]),
       data=st.data())
def test_addmm_family(device, name, dims, dtype, seed, beta, alpha, data):
    in_dtype = data.draw(st.sampled_from([dtype, dtype, dtype, "float64", "int64"]))
    assume(supported(device, dtype, in_dtype))
    ishape, oshapes = _blas_shapes(name, *dims, lambda opts: data.draw(st.sampled_from(opts)))
    xs, ts = pairs([values(ishape, in_dtype, seed)] + [values(s, dtype, seed + i + 1) for i, s in
                                                        enumerate(oshapes)], device, [in_dtype, dtype, dtype])
    msg = f"{name} {in_dtype}/{dtype} beta={beta} alpha={alpha}"
    check_wide(lambda: getattr(tdx, name)(*xs, beta=beta, alpha=alpha),
               lambda *a: getattr(torch, name)(*a, beta=beta, alpha=alpha), ts, msg, **tol(dtype, in_dtype))
    check_wide(lambda: getattr(xs[0], name)(*xs[1:]), lambda a, *r: getattr(a, name)(*r), ts, f"Tensor.{msg}",
               **tol(dtype, in_dtype))


SCALAR_CASES = [(name, dtype, kw) for name in ("addmm", "addmv", "addr", "baddbmm", "addbmm", "addcmul")
                for dtype in ("int64", "int32", "float32", "bool")
                for kw in ({"alpha": 0.5}, {"beta": 2.5}, {"alpha": True}, {"beta": False}, {"alpha": 1j},
                           {"alpha": float("nan")}, {"alpha": 2 ** 40})]


@pytest.mark.parametrize("case", SCALAR_CASES, ids=lambda c: f"{c[0]}-{c[1]}-{c[2]}")
def test_scalar_arguments_convert_as_torch(device, case):
    """alpha/beta/value truncate for integer results and refuse what the result dtype cannot hold."""
    name, dtype, kw = case
    if not supported(device, dtype):
        pytest.skip(f"{device} has no {dtype}")
    ishape, oshapes = _blas_shapes(name, 2, 2, 3, 2, lambda opts: opts[0])
    if name == "addcmul":
        ishape, oshapes = (2,), [(2,), (2,)]
        kw = {"value": next(iter(kw.values()))}
    xs, ts = pairs([values(ishape, dtype, 1)] + [values(s, dtype, i + 2) for i, s in enumerate(oshapes)], device,
                   [dtype] * 3)
    check(lambda: getattr(tdx, name)(*xs, **kw), lambda: getattr(torch, name)(*ts, **kw), f"{name} {dtype} {kw}")


@pytest.mark.parametrize("name", ["addmm", "addmv", "addbmm"])
def test_integer_product_refused_whatever_alpha(device, monkeypatch, name):
    """torch's CUDA kernels have no integer product and refuse one before they look at alpha: with alpha=0 (which
    drops the product) tdx still asks its executor for the integer product, so a device without one refuses as
    torch's. Planted here on any device: a matmul refusing integers, as CUDA's."""
    real = tdx.Tensor.matmul

    def matmul(a, b):
        if not a.dtype.is_floating_point:
            raise TdxNotImplementedError(f'"addmm_cuda" not implemented for {a.dtype}')
        return real(a, b)

    ishape, oshapes = _blas_shapes(name, 2, 2, 3, 2, lambda opts: opts[0])
    xs, _ = pairs([values(ishape, "int64", 1)] + [values(s, "int64", i + 2) for i, s in enumerate(oshapes)], device,
                  ["int64"] * 3)
    want = getattr(tdx, name)(*xs, alpha=0)  # beta * input, the product dropped
    assert want.dtype is tdx.int64 and want.tolist() == (xs[0].expand(want.shape) * 1).tolist()
    monkeypatch.setattr(tdx.Tensor, "matmul", matmul)
    ex = tdx.backends.get(device)
    if ex.addmm_kernel is not None:  # torch's fused addmm, on natives: it refuses integers on cuda as well

        def addmm(x, m1, m2, **kw):
            raise NotImplementedError(f'"addmm_cuda" not implemented for {m1.dtype}')

        monkeypatch.setattr(ex, "addmm_kernel", addmm)
    with pytest.raises(NotImplementedError):
        getattr(tdx, name)(*xs, alpha=0)
    floats_ = [x.float() for x in xs]
    assert getattr(tdx, name)(*floats_, alpha=0).tolist() == want.float().tolist()  # a float product is skipped


# elementwise ------------------------------------------------------------------------------------------
BINARY = ["logaddexp", "logaddexp2", "hypot", "fmax", "fmin", "copysign", "xlogy", "heaviside", "float_power"]


@pytest.mark.parametrize("name", BINARY)
@SETTINGS
@given(shape2=broadcastable(2), dts=st.tuples(dtypes, dtypes), seed=seeds, special=st.booleans())
@pytest.mark.float64
def test_binary(device, name, shape2, dts, seed, special):
    assume(supported(device, *dts) and (name != "float_power" or supported(device, "float64")))
    if name == "heaviside" and special:
        dts = (dts[0], dts[0])
    arrays = [values(shape2[0], dts[0], seed, special), values(shape2[1], dts[1], seed + 1, special)]
    if name == "copysign":
        arrays = [_no_nan(a) for a in arrays]
    xs, ts = pairs(arrays, device, dts)
    check_wide(lambda: getattr(tdx, name)(*xs), getattr(torch, name), ts, f"{name} {dts}", **tol(*dts))
    check_wide(lambda: getattr(xs[0], name)(xs[1]), lambda a, b: getattr(a, name)(b), ts, f"Tensor.{name}",
               **tol(*dts))


@pytest.mark.parametrize("name", ["xlogy", "copysign", "float_power", "hypot", "fmax"])
@SETTINGS
@given(shape=shapes, dtype=dtypes, seed=seeds, scalar=st.sampled_from([2, -1.5, 0.0, -0.0, True, 2.5]),
       first=st.booleans())
@pytest.mark.float64
def test_binary_with_number(device, name, shape, dtype, seed, scalar, first):
    assume(supported(device, dtype) and (name != "float_power" or supported(device, "float64")))
    (x,), (t,) = pairs([values(shape, dtype, seed, special=True)], device, [dtype])
    args = (scalar, x) if first else (x, scalar)
    targs = (scalar, t) if first else (t, scalar)
    check_wide(lambda: getattr(tdx, name)(*args), lambda *a: getattr(torch, name)(*a), targs,
               f"{name}{'(number, t)' if first else '(t, number)'} {dtype} {scalar}", **tol(dtype, "float32"))
    if not first:
        check_wide(lambda: getattr(x, name)(scalar), lambda a: getattr(a, name)(scalar), [t], f"Tensor.{name}",
                   **tol(dtype, "float32"))


UNARY = {"signbit": (), "deg2rad": (), "rad2deg": (), "isposinf": (), "isneginf": (), "argwhere": (), "msort": (),
         "fliplr": (), "flipud": (), "count_nonzero": (), "logit": (), "logit-eps": (0.1,), "logit-big-eps": (0.7,),
         "logit-neg-eps": (-1.0,), "nan_to_num": (), "nan_to_num-args": (1.5, 100.0, -2.0),
         "nan_to_num-huge": (0.0, 1e6, None), "nan_to_num-half-edges": (65510.0, 65520.0, -65519.9),
         "nan_to_num-past-max": (3.5e38, -1e39, 3.4028235677973366e38)}


@pytest.mark.parametrize("case", sorted(UNARY))
@SETTINGS
@given(shape=shapes, dtype=dtypes, seed=seeds, special=st.booleans())
def test_unary(device, case, shape, dtype, seed, special):
    assume(supported(device, dtype))
    name, args = case.split("-")[0], UNARY[case]
    low, high = (-0.5, 1.5) if name == "logit" else (-4, 4)
    arr = values(shape, dtype, seed, special, low, high)
    (x,), (t,) = pairs([_no_nan(arr) if name == "signbit" else arr], device, [dtype])
    check_wide(lambda: getattr(tdx, name)(x, *args), lambda a: getattr(torch, name)(a, *args), [t],
               f"{case} {dtype}", **tol(dtype))
    check_wide(lambda: getattr(x, name)(*args), lambda a: getattr(a, name)(*args), [t], f"Tensor.{case}",
               **tol(dtype))


# reductions and scans -----------------------------------------------------------------------------------
def _dims(draw, shape):
    """None, one dim, or a tuple of distinct dims of ``shape``."""
    kind = draw(st.sampled_from(["none", "int", "tuple"]))
    if kind == "none":
        return None
    if kind == "int":
        return dim_of(draw, shape)
    n = max(len(shape), 1)
    picked = draw(st.lists(st.integers(0, n - 1), unique=True, max_size=n))
    return tuple(d - n if draw(st.booleans()) else d for d in picked)


@pytest.mark.parametrize("name", ["nansum", "nanmean", "count_nonzero"])
@SETTINGS
@given(shape=shapes, dtype=dtypes, seed=seeds, keepdim=st.booleans(), data=st.data(),
       out=st.sampled_from([None, "float64", "float32", "int64"]))
def test_nan_reductions(device, name, shape, dtype, seed, keepdim, data, out):
    assume(supported(device, dtype) and (out is None or supported(device, out)))
    (x,), (t,) = pairs([values(shape, dtype, seed, special=True)], device, [dtype])
    dim = _dims(data.draw, shape)
    if name == "count_nonzero":
        check(lambda: tdx.count_nonzero(x, dim), lambda: torch.count_nonzero(t, dim), f"count_nonzero {dim}")
        check(lambda: x.count_nonzero(dim=dim), lambda: t.count_nonzero(dim=dim), "Tensor.count_nonzero")
        return
    kw = {"dtype": None if out is None else getattr(tdx, out)}
    tkw = {"dtype": None if out is None else getattr(torch, out)}
    check_wide(lambda: getattr(tdx, name)(x, dim, keepdim, **kw),
               lambda a: getattr(torch, name)(a, dim, keepdim, **tkw), [t],
               f"{name}({dim}, {keepdim}) {dtype}->{out}", **tol(dtype, out or dtype))
    check_wide(lambda: getattr(x, name)(), lambda a: getattr(a, name)(), [t], f"Tensor.{name}", **tol(dtype))


@SETTINGS
@given(shape=shapes, dtype=dtypes, seed=seeds, keepdim=st.booleans(), data=st.data())
def test_aminmax(device, shape, dtype, seed, keepdim, data):
    assume(supported(device, dtype))
    (x,), (t,) = pairs([values(shape, dtype, seed, special=data.draw(st.booleans()))], device, [dtype])
    dim = data.draw(st.sampled_from([None, dim_of(data.draw, shape)]))
    got = check(lambda: tdx.aminmax(x, dim=dim, keepdim=keepdim), lambda: torch.aminmax(t, dim=dim, keepdim=keepdim),
                f"aminmax({dim}, {keepdim}) {dtype}")
    if got is not None:
        assert type(got).__name__ == "aminmax" and got.min is got[0] and got.max is got[1]
    check(lambda: x.aminmax(dim=dim), lambda: t.aminmax(dim=dim), "Tensor.aminmax")


@pytest.mark.parametrize("name", ["cummax", "cummin", "logcumsumexp"])
@SETTINGS
@given(shape=shapes, dtype=dtypes, seed=seeds, data=st.data(), ties=st.booleans(), special=st.booleans())
def test_scans(device, name, shape, dtype, seed, data, ties, special):
    assume(supported(device, dtype))
    arr = values(shape, dtype, seed, special)
    if ties and dtype in FLOATS:
        arr = np.round(arr / 2)  # repeated values: the index of the last one wins
    (x,), (t,) = pairs([arr], device, [dtype])
    dim = dim_of(data.draw, shape) if data.draw(st.booleans()) else data.draw(st.integers(-3, 3))
    got = check_wide(lambda: getattr(tdx, name)(x, dim), lambda a: getattr(torch, name)(a, dim), [t],
                     f"{name}({dim}) {dtype}", **tol(dtype))
    if got is not None and name != "logcumsumexp":
        assert type(got).__name__ == name and got.values is got[0] and got.indices is got[1]
    check_wide(lambda: getattr(x, name)(dim), lambda a: getattr(a, name)(dim), [t], f"Tensor.{name}",
               **tol(dtype))


# products and comparisons -------------------------------------------------------------------------------
@SETTINGS
@given(n=st.integers(0, 4), k=st.integers(0, 4), dts=st.tuples(dtypes, st.sampled_from(DTYPES + ["same"] * 4)),
       seed=seeds, data=st.data())
def test_products(device, n, k, dts, seed, data):
    dts = (dts[0], dts[0] if dts[1] == "same" else dts[1])
    assume(supported(device, *dts))
    for name, sa, sb in (("dot", (k,), (k,)), ("mv", (n, k), (k,)), ("dot", (k,), (n,)), ("mv", (n, k), (n,)),
                         ("dot", (n, k), (k,))):
        xs, ts = pairs([values(sa, dts[0], seed), values(sb, dts[1], seed + 1)], device, dts)
        check_wide(lambda: getattr(tdx, name)(*xs), getattr(torch, name), ts, f"{name} {sa} {sb} {dts}",
                   **tol(*dts))
        check_wide(lambda: getattr(xs[0], name)(xs[1]), lambda a, b: getattr(a, name)(b), ts, f"Tensor.{name}",
                   **tol(*dts))
    sa = data.draw(shapes)
    sb = data.draw(shapes)
    if sa and sb and data.draw(st.booleans()):
        sb = sb[:-1] + sa[-1:]  # matching last dims (else inner refuses, unless one is 0-d)
    for name in ("inner", "kron"):
        xs, ts = pairs([values(sa, dts[0], seed + 2), values(sb, dts[1], seed + 3)], device, dts)
        check_wide(lambda: getattr(tdx, name)(*xs), getattr(torch, name), ts, f"{name} {sa} {sb} {dts}",
                   **tol(*dts))
        check_wide(lambda: getattr(xs[0], name)(xs[1]), lambda a, b: getattr(a, name)(b), ts, f"Tensor.{name}",
                   **tol(*dts))


@SETTINGS
@given(shape2=broadcastable(2), dtype=dtypes, seed=seeds, data=st.data(),
       rtol=st.sampled_from([1e-05, 0.0, 0.1, 1.0]), atol=st.sampled_from([1e-08, 0.0, 0.05, 2.0]),
       equal_nan=st.booleans())
def test_isclose_allclose_equal(device, shape2, dtype, seed, data, rtol, atol, equal_nan):
    other = data.draw(st.sampled_from([dtype, dtype, dtype, "float64", "int32"]))
    assume(supported(device, dtype, other))
    a = values(shape2[0], dtype, seed, special=True)
    rng = np.random.default_rng(seed)
    if data.draw(st.booleans()):  # a near copy of ``a``: some elements close, some not
        if dtype in FLOATS:
            b = a + rng.uniform(-0.1, 0.1, a.shape).astype(np.float32) * rng.integers(0, 2, a.shape)
        else:
            b = a ^ (rng.integers(0, 3, a.shape) == 0) if dtype == "bool" else a + rng.integers(-1, 2, a.shape)
    else:
        b = values(shape2[1], other, seed + 1, special=True)
    (x, y), (t, u) = pairs([a, b], device, [dtype, other])
    kw = {"rtol": rtol, "atol": atol, "equal_nan": equal_nan}
    check(lambda: tdx.isclose(x, y, **kw), lambda: torch.isclose(t, u, **kw), f"isclose {dtype}/{other} {kw}")
    check(lambda: x.isclose(y, rtol, atol, equal_nan), lambda: t.isclose(u, rtol, atol, equal_nan),
          "Tensor.isclose")
    for fn in (lambda m, p, q: m.allclose(p, q, **kw), lambda m, p, q: p.allclose(q, **kw),
               lambda m, p, q: m.equal(p, q), lambda m, p, q: p.equal(q), lambda m, p, q: m.equal(p, p)):
        try:
            want = fn(torch, t, u)
        except RuntimeError:
            with pytest.raises(RuntimeError) as info:
                fn(tdx, x, y)
            assert isinstance(info.value, tdx.TdxError)
            continue
        got = fn(tdx, x, y)
        assert type(got) is bool and got == want, (dtype, other, kw, got, want)


# rearranging -------------------------------------------------------------------------------------------
@SETTINGS
@given(shape=shapes, dtype=dtypes, seed=seeds, n=st.integers(-1, 4), data=st.data())
def test_diff(device, shape, dtype, seed, n, data):
    extra = data.draw(st.sampled_from([dtype, "float32", "int64"]))
    assume(supported(device, dtype, extra))
    (x,), (t,) = pairs([values(shape, dtype, seed)], device, [dtype])
    dim = dim_of(data.draw, shape)
    kw, tkw = {}, {}
    for i, name in enumerate(("prepend", "append")):
        if shape and data.draw(st.booleans()):
            s = list(shape)
            s[dim] = data.draw(st.integers(0, 2))
            if data.draw(st.integers(0, 5)) == 0:  # sometimes a shape torch refuses
                s = s[1:] if data.draw(st.booleans()) else [v + 1 for v in s]
            (p,), (q,) = pairs([values(tuple(s), extra, seed + i + 1)], device, [extra])
            kw[name], tkw[name] = p, q
    check(lambda: tdx.diff(x, n, dim, **kw), lambda: torch.diff(t, n, dim, **tkw), f"diff(n={n}, dim={dim}) {dtype}")
    check(lambda: x.diff(n=n, dim=dim, **kw), lambda: t.diff(n=n, dim=dim, **tkw), "Tensor.diff")


@SETTINGS
@given(shape=shapes, dtype=dtypes, seed=seeds, k=st.integers(-5, 5), dims=st.tuples(st.integers(-3, 2),
                                                                                      st.integers(-3, 2)))
def test_rot90(device, shape, dtype, seed, k, dims):
    assume(supported(device, dtype))
    (x,), (t,) = pairs([values(shape, dtype, seed)], device, [dtype])
    check(lambda: tdx.rot90(x, k, dims), lambda: torch.rot90(t, k, dims), f"rot90(k={k}, dims={dims}) {shape}")
    check(lambda: x.rot90(k, list(dims)), lambda: t.rot90(k, list(dims)), "Tensor.rot90")
    check(lambda: x.rot90(), lambda: t.rot90(), "Tensor.rot90()")


@SETTINGS
@given(shape=shapes, ishape=shapes, dtype=dtypes, seed=seeds, oob=st.integers(0, 4),
       idtype=st.sampled_from(["int64", "int64", "int32"]))
def test_take(device, shape, ishape, dtype, seed, oob, idtype):
    assume(supported(device, dtype))
    size = int(np.prod(shape))
    rng = np.random.default_rng(seed)
    idx = rng.integers(-size, max(size, 1), size=ishape) if size else np.zeros(ishape, dtype=np.int64)
    if oob == 0 and idx.size:  # one index past either end
        idx.reshape(-1)[0] = size if seed % 2 else -size - 1
    (x, i), (t, u) = pairs([values(shape, dtype, seed), idx], device, [dtype, idtype])
    check(lambda: tdx.take(x, i), lambda: torch.take(t, u), f"take {shape} {ishape} {idtype}")
    check(lambda: x.take(i), lambda: t.take(u), "Tensor.take")


@SETTINGS
@given(shape3=broadcastable(3), dtype=dtypes, seed=seeds, data=st.data())
def test_broadcasting(device, shape3, dtype, seed, data):
    assume(supported(device, dtype))
    xs, ts = pairs([values(s, dtype, seed + i) for i, s in enumerate(shape3)], device, [dtype] * 3)
    target = tuple(torch.broadcast_shapes(*shape3))
    if target and data.draw(st.booleans()):
        target = data.draw(st.sampled_from([(2,) + target, (-1,) * len(target), target[:-1] + (target[-1] + 1,)]))
    check(lambda: tdx.broadcast_to(xs[0], target), lambda: torch.broadcast_to(ts[0], target), f"broadcast_to {target}")
    check(lambda: xs[1].broadcast_to(target), lambda: ts[1].broadcast_to(target), "Tensor.broadcast_to")
    check(lambda: tdx.broadcast_tensors(*xs), lambda: torch.broadcast_tensors(*ts), f"broadcast_tensors {shape3}")
    got = tdx.broadcast_shapes(*shape3, *[s[-1] for s in shape3 if s])
    assert isinstance(got, tdx.Size) and tuple(got) == tuple(torch.broadcast_shapes(*shape3,
                                                                                      *[s[-1] for s in shape3 if s]))


@pytest.mark.parametrize("shapes_", [((3,), (4,)), ((2, 3), (3, 2)), ((-1,), (1,)), ((0,), (2,)), ((2.0,), (2,)),
                                     ("ab",), ((0,), (1,)), ()])
def test_broadcast_shapes_errors_as_torch(shapes_):
    try:
        want = torch.broadcast_shapes(*shapes_)
    except (TypeError, ValueError, RuntimeError) as err:
        kind = next(k for k in (TypeError, ValueError, RuntimeError) if isinstance(err, k))
        with pytest.raises(kind) as info:
            tdx.broadcast_shapes(*shapes_)
        assert isinstance(info.value, tdx.TdxError)
        return
    got = tdx.broadcast_shapes(*shapes_)
    assert isinstance(got, tdx.Size) and tuple(got) == tuple(want)


# stacking, grids and index sets -------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["atleast_1d", "atleast_2d", "atleast_3d", "hstack", "vstack", "row_stack",
                                  "dstack", "column_stack"])
@SETTINGS
@given(shape=shapes, dts=st.lists(dtypes, min_size=1, max_size=3), seed=seeds, form=st.sampled_from([0, 1, 2]),
       grow=st.integers(0, 2))
def test_rank_and_stacking(device, name, shape, dts, seed, form, grow):
    assume(supported(device, *dts))
    # tensors of one shape, except the first may differ along the joined dim (or more, which torch refuses)
    arrs = [values(shape, d, seed + i) for i, d in enumerate(dts)]
    if grow and shape:
        arrs[0] = values(shape[:-1] + (shape[-1] + grow,), dts[0], seed)
    xs, ts = pairs(arrs, device, dts)
    if name.startswith("atleast"):
        for args, targs in ((xs[:1], ts[:1]), (xs, ts), ([xs], [ts]), ((), ())):
            check(lambda: getattr(tdx, name)(*args), lambda: getattr(torch, name)(*targs), f"{name} {len(args)}")
        return
    seq = (list, tuple)[form % 2]
    check(lambda: getattr(tdx, name)(seq(xs)), lambda: getattr(torch, name)(seq(ts)), f"{name} {shape} {dts}")


@SETTINGS
@given(sizes=st.lists(st.integers(0, 3), min_size=1, max_size=3), dts=st.lists(dtypes, min_size=3, max_size=3),
       zero_d=st.booleans(), indexing=st.sampled_from(["ij", "xy", None]), seed=seeds, same=st.booleans())
def test_meshgrid_cartesian_prod(device, sizes, dts, zero_d, indexing, seed, same):
    dts = [dts[0]] * 3 if same else dts
    assume(supported(device, *dts))
    shapes_ = [(s,) for s in sizes]
    if zero_d:
        shapes_[0] = ()
    xs, ts = pairs([values(s, d, seed + i) for i, (s, d) in enumerate(zip(shapes_, dts))], device, dts)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(lambda: tdx.meshgrid(*xs, indexing=indexing), lambda: torch.meshgrid(*ts, indexing=indexing),
              f"meshgrid {shapes_} {indexing}")
        check(lambda: tdx.meshgrid(xs, indexing="xy"), lambda: torch.meshgrid(ts, indexing="xy"), "meshgrid(list)")
    check(lambda: tdx.cartesian_prod(*xs), lambda: torch.cartesian_prod(*ts), f"cartesian_prod {shapes_}")


def test_meshgrid_warns_without_indexing_as_torch():
    x = tdx.arange(3)
    with pytest.warns(UserWarning, match="indexing"):
        tdx.meshgrid(x, x)
    with pytest.raises(RuntimeError) as info:
        tdx.meshgrid(x, indexing="yx")
    assert isinstance(info.value, tdx.TdxError) and "yx" in str(info.value)


@pytest.mark.parametrize("name", ["tril_indices", "triu_indices"])
@SETTINGS
@given(row=st.integers(-1, 5), col=st.integers(0, 5), offset=st.integers(-6, 6),
       dtype=st.sampled_from(["int64", "int32", "float32", "int16"]))
def test_triangle_indices(device, name, row, col, offset, dtype):
    check(lambda: getattr(tdx, name)(row, col, offset, dtype=getattr(tdx, dtype), device=device),
          lambda: getattr(torch, name)(row, col, offset, dtype=getattr(torch, dtype)),
          f"{name}({row}, {col}, {offset}) {dtype}")
    got = getattr(tdx, name)(3, 4, device=device)
    assert got.dtype == tdx.int64 and got.device == tdx.device(device)


# in place ----------------------------------------------------------------------------------------------
INPLACE = {
    "addmm_": (((2, 2), (2, 3), (3, 2)), lambda x, a, b: x.addmm_(a, b, beta=0.5, alpha=2)),
    "addmv_": (((2,), (2, 3), (3,)), lambda x, a, b: x.addmv_(a, b, alpha=-1)),
    "addr_": (((2, 3), (2,), (3,)), lambda x, a, b: x.addr_(a, b)),
    "baddbmm_": (((2, 2, 2), (2, 2, 3), (2, 3, 2)), lambda x, a, b: x.baddbmm_(a, b, beta=2)),
    "addbmm_": (((2, 2), (2, 2, 3), (2, 3, 2)), lambda x, a, b: x.addbmm_(a, b)),
    "addcmul_": (((2, 3), (3,), (2, 1)), lambda x, a, b: x.addcmul_(a, b, value=-2)),
    "addcdiv_": (((2, 3), (3,), (2, 1)), lambda x, a, b: x.addcdiv_(a, b, value=0.5)),
    "addcmul_-broadcast": (((3,), (2, 3), (3,)), lambda x, a, b: x.addcmul_(a, b)),
    "lerp_": (((2, 3), (2, 3), (3,)), lambda x, a, b: x.lerp_(a, 0.3)),
    "lerp_-tensor": (((2, 3), (2, 3), (3,)), lambda x, a, b: x.lerp_(a, b)),
    "hypot_": (((2, 3), (3,), ()), lambda x, a, b: x.hypot_(a)),
    "xlogy_": (((2, 3), (3,), ()), lambda x, a, b: x.xlogy_(a)),
    "copysign_": (((2, 3), (3,), ()), lambda x, a, b: x.copysign_(a)),
    "heaviside_": (((2, 3), (3,), ()), lambda x, a, b: x.heaviside_(a)),
    "deg2rad_": (((2, 3), (), ()), lambda x, a, b: x.deg2rad_()),
    "rad2deg_": (((2, 3), (), ()), lambda x, a, b: x.rad2deg_()),
    "logit_": (((2, 3), (), ()), lambda x, a, b: x.logit_(0.1)),
    "nan_to_num_": (((2, 3), (), ()), lambda x, a, b: x.nan_to_num_(posinf=5.0)),
    "clamp_min_": (((2, 3), (3,), ()), lambda x, a, b: x.clamp_min_(a)),
    "clamp_max_": (((2, 3), (), ()), lambda x, a, b: x.clamp_max_(0.5)),
    "float_power_": (((2, 3), (), ()), lambda x, a, b: x.float_power_(2)),
}


@pytest.mark.parametrize("case", sorted(INPLACE))
@SETTINGS
@given(dts=st.tuples(dtypes, dtypes), seed=seeds)
@pytest.mark.float64
def test_inplace(device, case, dts, seed):
    """In-place variants write into self, with torch's cast and no-broadcast-of-self rules."""
    assume(supported(device, *dts) and (case != "float_power_" or supported(device, "float64")))
    shapes3, fn = INPLACE[case]
    dts3 = (dts[0], dts[1], dts[0] if case.startswith(("lerp", "heaviside")) else dts[1])
    xs, ts = pairs([values(s, d, seed + i, special=i == 0) for i, (s, d) in enumerate(zip(shapes3, dts3))], device,
                   dts3)

    def run(x, *rest):
        c = x.clone()
        out = fn(c, *rest)
        assert out is c, "an in-place method returns self"
        return c

    check_wide(lambda: run(*xs), run, ts, f"{case} {dts3}", **tol(*dts3))


# errors --------------------------------------------------------------------------------------------------
def _error_cases():
    f, d, i, b = (np.ones((2, 3), np.float32), "float32"), (np.ones((2, 3)), "float64"), (np.ones((2, 3), int),
                                                                                           "int64"), (np.ones(3, bool),
                                                                                                      "bool")
    v, m, e = (np.ones(3, np.float32), "float32"), (np.ones((3, 2), np.float32), "float32"), (np.ones(0), "float32")
    s = (np.float32(2.0), "float32")
    return {
        "addmm-1d-mat": ([m, v, m], lambda M, x, a, c: M.addmm(x, a, c)),
        "addmm-3d-input": ([(np.ones((1, 3, 3)), "float32"), f, m], lambda M, x, a, c: M.addmm(x, a, c)),
        "addmm-dtype": ([d, f, m], lambda M, x, a, c: M.addmm(x[:, :2], a, c)),
        "addmv-bad-input": ([f, m, v], lambda M, x, a, c: M.addmv(x, a.t(), c)),
        "baddbmm-2d": ([v, f, m], lambda M, x, a, c: M.baddbmm(x, a, c)),
        "addcmul-number": ([f, f, f], lambda M, x, a, c: M.addcmul(x, 2, c)),
        "addcdiv-ints": ([f, i, i], lambda M, x, a, c: M.addcdiv(x, a, c)),
        "lerp-int": ([i, i, i], lambda M, x, a, c: M.lerp(x, a, 0.5)),
        "lerp-complex-weight": ([f, f, f], lambda M, x, a, c: M.lerp(x, a, 1j)),
        "logaddexp-number": ([f, f, f], lambda M, x, a, c: M.logaddexp(x, 2.0)),
        "hypot-ints": ([i, i, i], lambda M, x, a, c: M.hypot(x, a)),
        "xlogy-numbers": ([f, f, f], lambda M, x, a, c: M.xlogy(2, 3)),
        "copysign-number-first": ([f, f, f], lambda M, x, a, c: M.copysign(1.0, x)),
        "nanmean-int": ([i, i, i], lambda M, x, a, c: M.nanmean(x)),
        "nanmean-int-dtype": ([f, f, f], lambda M, x, a, c: M.nanmean(x, dtype=M.int64)),
        "count_nonzero-dup-dims": ([f, f, f], lambda M, x, a, c: M.count_nonzero(x, (0, -2))),
        "isclose-dtypes": ([f, d, f], lambda M, x, a, c: M.isclose(x, a)),
        "isclose-neg-rtol": ([f, f, f], lambda M, x, a, c: M.isclose(x, a, rtol=-1.0)),
        "allclose-shapes": ([f, v, f], lambda M, x, a, c: M.allclose(x, a[:2])),
        "equal-number": ([f, f, f], lambda M, x, a, c: M.equal(x, 1)),
        "dot-2d": ([f, f, f], lambda M, x, a, c: M.dot(x, a)),
        "dot-dtypes": ([v, (np.ones(3), "float64"), v], lambda M, x, a, c: M.dot(x, a)),
        "dot-bool": ([b, b, b], lambda M, x, a, c: M.dot(x, a)),
        "mv-1d": ([v, v, v], lambda M, x, a, c: M.mv(x, a)),
        "inner-last-dims": ([f, m, f], lambda M, x, a, c: M.inner(x, a)),
        "diff-0d": ([s, s, s], lambda M, x, a, c: M.diff(x)),
        "diff-number-prepend": ([v, v, v], lambda M, x, a, c: M.diff(x, prepend=1)),
        "diff-0d-prepend": ([v, s, v], lambda M, x, a, c: M.diff(x, prepend=a)),
        "diff-bool-n": ([v, v, v], lambda M, x, a, c: M.diff(x, n=True)),
        "fliplr-1d": ([v, v, v], lambda M, x, a, c: M.fliplr(x)),
        "flipud-0d": ([s, s, s], lambda M, x, a, c: M.flipud(x)),
        "rot90-three-dims": ([f, f, f], lambda M, x, a, c: M.rot90(x, 1, [0, 1, 1])),
        "take-int32": ([f, (np.zeros(2, np.int32), "int32"), f], lambda M, x, a, c: M.take(x, a)),
        "take-empty": ([e, (np.zeros(2, int), "int64"), e], lambda M, x, a, c: M.take(x, a)),
        "cummax-0d-dim": ([s, s, s], lambda M, x, a, c: M.cummax(x, 1)),
        "logcumsumexp-int": ([i, i, i], lambda M, x, a, c: M.logcumsumexp(x, 0)),
        "aminmax-empty": ([e, e, e], lambda M, x, a, c: M.aminmax(x)),
        "aminmax-empty-dim": ([(np.ones((0, 3)), "float32"), e, e], lambda M, x, a, c: M.aminmax(x, dim=0)),
        "aminmax-tuple-dim": ([f, f, f], lambda M, x, a, c: M.aminmax(x, dim=(0, 1))),
        "signbit-complex": ([(np.ones(3, np.complex64), "complex64"), f, f], lambda M, x, a, c: M.signbit(x)),
        "heaviside-dtypes": ([f, d, f], lambda M, x, a, c: M.heaviside(x, a)),
        "clamp_min-none": ([f, f, f], lambda M, x, a, c: M.clamp_min(x, None)),
        "broadcast_tensors-bad": ([f, v, f], lambda M, x, a, c: M.broadcast_tensors(x, a[:2])),
        "broadcast_tensors-list": ([f, f, f], lambda M, x, a, c: M.broadcast_tensors([x, a])),
        "hstack-empty": ([f, f, f], lambda M, x, a, c: M.hstack([])),
        "hstack-tensor": ([f, f, f], lambda M, x, a, c: M.hstack(x)),
        "column_stack-ranks": ([f, (np.ones((2, 1, 1)), "float32"), f], lambda M, x, a, c: M.column_stack([x, a])),
        "meshgrid-empty": ([f, f, f], lambda M, x, a, c: M.meshgrid(indexing="ij")),
        "meshgrid-2d": ([f, v, f], lambda M, x, a, c: M.meshgrid(x, a, indexing="ij")),
        "cartesian_prod-0d": ([s, v, f], lambda M, x, a, c: M.cartesian_prod(x, a)),
        "cartesian_prod-none": ([s, v, f], lambda M, x, a, c: M.cartesian_prod()),
        "tril_indices-negative": ([f, f, f], lambda M, x, a, c: M.tril_indices(-1, 2)),
        "triu_indices-float-row": ([f, f, f], lambda M, x, a, c: M.triu_indices(2.0, 2)),
        "addcmul_-cast": ([i, f, f], lambda M, x, a, c: x.addcmul_(a, c)),
        "lerp_-broadcast": ([v, f, f], lambda M, x, a, c: x.lerp_(a, 0.5)),
        "clamp_min_-cast": ([i, f, f], lambda M, x, a, c: x.clamp_min_(0.5)),
        "float_power_-float32": ([f, f, f], lambda M, x, a, c: x.float_power_(2)),
        "addmm_-leaf": ([(np.ones((2, 2), np.float32), "float32"), f, m],
                        lambda M, x, a, c: x.requires_grad_().addmm_(a, c)),
    }


ERRORS = _error_cases()


@pytest.mark.parametrize("case", sorted(ERRORS))
@pytest.mark.float64
def test_errors_match_torch(device, case):
    """Where torch raises, tdx raises a TdxError of the same builtin kind (naming what was wrong)."""
    arrays, fn = ERRORS[case]
    dts = [dt for _, dt in arrays]
    if not supported(device, *dts):
        pytest.skip(f"{device} lacks one of {dts}")
    xs, ts = pairs([a for a, _ in arrays], device, dts)
    with pytest.raises(Exception) as expected:
        fn(torch, *ts)
    kind = next(k for k in (IndexError, TypeError, ValueError, RuntimeError) if isinstance(expected.value, k))
    with pytest.raises(kind) as info:
        fn(tdx, *xs)
    assert isinstance(info.value, tdx.TdxError), f"{case}: untyped {info.value!r}"
    assert str(info.value), case


# gradients ---------------------------------------------------------------------------------------------
# name -> (input shapes, (low, high) of each input, call)
GRADS = {
    "addmm": ([(2,), (2, 3), (3, 2)], None, lambda m, x, a, b: m.addmm(x, a, b, beta=0.5, alpha=2)),
    "addmm-zero-alpha": ([(2, 2), (2, 3), (3, 2)], None, lambda m, x, a, b: x.addmm(a, b, alpha=0)),
    "addmv": ([(2,), (2, 3), (3,)], None, lambda m, x, a, b: m.addmv(x, a, b, beta=-1)),
    "addr": ([(2, 3), (2,), (3,)], None, lambda m, x, a, b: m.addr(x, a, b, alpha=0.5)),
    "baddbmm": ([(2, 2), (3, 2, 4), (3, 4, 2)], None, lambda m, x, a, b: m.baddbmm(x, a, b, alpha=-1)),
    "addbmm": ([(2, 2), (3, 2, 4), (3, 4, 2)], None, lambda m, x, a, b: m.addbmm(x, a, b, beta=2)),
    "addcmul": ([(2, 3), (3,), (2, 1)], None, lambda m, x, a, b: m.addcmul(x, a, b, value=-0.5)),
    "addcdiv": ([(2, 3), (3,), (2, 1)], [None, None, (0.5, 2)], lambda m, x, a, b: m.addcdiv(x, a, b, value=2)),
    "lerp": ([(2, 3), (3,), (2, 1)], None, lambda m, x, a, w: m.lerp(x, a, w)),
    "lerp-number": ([(2, 3), (3,)], None, lambda m, x, a: m.lerp(x, a, 0.7)),
    "logaddexp": ([(2, 3), (3,)], None, lambda m, x, a: m.logaddexp(x, a)),
    "logaddexp2": ([(2, 3), (3,)], None, lambda m, x, a: m.logaddexp2(x, a)),
    "hypot": ([(2, 3), (3,)], None, lambda m, x, a: m.hypot(x, a)),
    "xlogy": ([(2, 3), (3,)], [None, (0.5, 2)], lambda m, x, a: m.xlogy(x, a)),
    "fmax": ([(2, 3), (3,)], None, lambda m, x, a: m.fmax(x, a)),
    "fmin": ([(2, 3), (3,)], None, lambda m, x, a: m.fmin(x, a)),
    "copysign": ([(2, 3), (3,)], None, lambda m, x, a: m.copysign(x, a)),
    "float_power": ([(2, 3)], [(0.5, 2)], lambda m, x: m.float_power(x, 1.5)),
    "deg2rad": ([(2, 3)], None, lambda m, x: m.deg2rad(x)),
    "rad2deg": ([(2, 3)], None, lambda m, x: x.rad2deg()),
    "logit": ([(2, 3)], [(0.05, 0.95)], lambda m, x: m.logit(x, 0.2)),
    "nan_to_num": ([(2, 3)], None, lambda m, x: m.nan_to_num(m.log(x))),
    "nansum": ([(2, 3)], None, lambda m, x: m.nansum(m.log(x), 1)),
    "nanmean": ([(2, 3)], None, lambda m, x: m.nanmean(m.log(x), 0, True)),
    "aminmax": ([(2, 3)], None, lambda m, x: m.aminmax(x, dim=1)),
    "cummax": ([(2, 3)], None, lambda m, x: m.cummax(x, 1)),
    "cummin": ([(3, 2)], None, lambda m, x: m.cummin(x, 0)),
    "logcumsumexp": ([(2, 5)], None, lambda m, x: m.logcumsumexp(x, -1)),
    "msort": ([(3, 2)], None, lambda m, x: m.msort(x)),
    "dot": ([(3,), (3,)], None, lambda m, x, a: m.dot(x, a)),
    "mv": ([(2, 3), (3,)], None, lambda m, x, a: m.mv(x, a)),
    "inner": ([(2, 3), (4, 3)], None, lambda m, x, a: m.inner(x, a)),
    "kron": ([(2, 1), (2, 3)], None, lambda m, x, a: m.kron(x, a)),
    "diff": ([(2, 4), (2, 1)], None, lambda m, x, a: m.diff(x, 2, prepend=a)),
    "broadcast_to": ([(3,)], None, lambda m, x: m.broadcast_to(x, (2, 3))),
    "broadcast_tensors": ([(3,), (2, 1)], None, lambda m, x, a: m.broadcast_tensors(x, a)),
    "clamp_min": ([(2, 3), (3,)], None, lambda m, x, a: m.clamp_min(x, a)),
    "clamp_max": ([(2, 3)], None, lambda m, x: m.clamp_max(x, 0.5)),
    "fliplr": ([(2, 3)], None, lambda m, x: m.fliplr(x)),
    "flipud": ([(2, 3)], None, lambda m, x: m.flipud(x)),
    "rot90": ([(2, 3)], None, lambda m, x: m.rot90(x, 3)),
    "take": ([(2, 3)], None, lambda m, x: m.take(x, m.tensor([[0, -1], [5, 0]]) if m is torch else
                                                 m.tensor([[0, -1], [5, 0]], device=x.device))),
    "atleast_3d": ([(3,)], None, lambda m, x: m.atleast_3d(x)),
    "hstack": ([(2, 3), (2, 1)], None, lambda m, x, a: m.hstack([x, a])),
    "vstack": ([(3,), (2, 3)], None, lambda m, x, a: m.vstack((x, a))),
    "dstack": ([(2, 3), (2, 3)], None, lambda m, x, a: m.dstack([x, a])),
    "column_stack": ([(2,), (2, 3)], None, lambda m, x, a: m.column_stack([x, a])),
    "meshgrid": ([(2,), (3,)], None, lambda m, x, a: m.meshgrid(x, a, indexing="xy")),
    "cartesian_prod": ([(2,), (3,)], None, lambda m, x, a: m.cartesian_prod(x, a)),
    "addcmul_": ([(2, 3), (3,), (2, 1)], None, lambda m, x, a, b: (x * 1).addcmul_(a, b, value=2)),
    "lerp_": ([(2, 3), (2, 3)], None, lambda m, x, a: (x + 0).lerp_(a, 0.25)),
    "hypot_": ([(2, 3), (3,)], None, lambda m, x, a: (x * 2).hypot_(a)),
}


def _torch_differentiates(fn) -> bool:
    """Whether the installed torch has a derivative for ``fn`` (torch 2.11 has none for aminmax, 2.13 has one)."""
    x = torch.ones(2, 3, requires_grad=True)
    try:
        fn(x).sum().backward()
    except (RuntimeError, NotImplementedError):
        return False
    return True


_UNDIFFERENTIATED = {name for name, fn in {"aminmax": lambda x: torch.aminmax(x, dim=1).min}.items()
                     if not _torch_differentiates(fn)}


@pytest.mark.parametrize("name", sorted(GRADS))
@GRAD_SETTINGS
@given(dtype=st.sampled_from(FLOATS), seed=seeds)
@pytest.mark.float64
def test_grads(device, name, dtype, seed):
    assume(supported(device, dtype) and (name != "float_power" or supported(device, "float64")))
    if name in _UNDIFFERENTIATED:
        pytest.skip(f"the installed torch {torch.__version__} has no derivative for {name} to compare with")
    shapes_, ranges, fn = GRADS[name]
    ranges = ranges or [None] * len(shapes_)
    arrays = [floats(s, seed + i, *(r or (-2.0, 2.0))) for i, (s, r) in enumerate(zip(shapes_, ranges))]
    if name.startswith("nan"):  # one NaN from log of a negative (a slice of NaNs only has torch's NaN gradient)
        arrays[0] = np.abs(arrays[0])
        arrays[0].reshape(-1)[seed % arrays[0].size] *= -1
    grad_check(device, dtype, arrays, fn, seed)


def test_every_composite_has_a_gradient_test():
    """The differentiable composites all appear in ``GRADS``."""
    differentiable = {"addmm", "addmv", "addr", "baddbmm", "addbmm", "addcmul", "addcdiv", "lerp", "logaddexp",
                      "logaddexp2", "hypot", "xlogy", "fmax", "fmin", "copysign", "float_power", "deg2rad",
                      "rad2deg", "logit", "nan_to_num", "nansum", "nanmean", "aminmax", "cummax", "cummin",
                      "logcumsumexp", "msort", "dot", "mv", "inner", "kron", "diff", "broadcast_to",
                      "broadcast_tensors", "clamp_min", "clamp_max", "fliplr", "flipud", "rot90", "take",
                      "atleast_3d", "hstack", "vstack", "dstack", "column_stack", "meshgrid", "cartesian_prod"}
    covered = {n.split("-")[0] for n in GRADS}
    assert differentiable <= covered, sorted(differentiable - covered)


def test_composites_record_one_tape_node(device):
    """On executors that record on tdx's tape, a composite is one node named after it."""
    if tdx.backends.get(device).caps.native_autograd:
        pytest.skip(f"{device} records natively")
    x = tdx.tensor([[0.5, 1.5], [2.0, -1.0]], device=device).requires_grad_()
    for out, name in ((x.addcmul(x, x), "AddcmulBackward0"), (tdx.hstack([x, x]), "HstackBackward0"),
                      (x.cummax(0).values, "CummaxBackward0"), (tdx.lerp(x, x * 2, 0.3), "LerpBackward0")):
        assert out.grad_fn.name() == name
        assert [m.node for m in out.grad_fn.metas] == [None] * len(out.grad_fn.metas) or name == "LerpBackward0"
