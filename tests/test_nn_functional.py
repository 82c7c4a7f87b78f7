"""``tdx.nn.functional`` against ``torch.nn.functional`` on CPU, on every device.

Hypothesis draws shapes (0-d and 0-size included), floating dtypes, values (NaN and infinities
in forward passes) and each function's arguments; every function runs through tdx on the device
and through torch on CPU and must give the same values, dtype and shape within per-dtype
tolerances, or raise a TdxError of the builtin kind torch raises. Gradients of every
differentiable function are compared with torch's autograd (``grad_check``), kinks included.
A two-layer MLP trained for 30 SGD steps must follow torch's loss curve.
"""

from __future__ import annotations

import inspect
import math
import os

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from hypothesis import HealthCheck, assume, given, settings, strategies as st

import tdx
from conftest import BUILTINS, broadcast_pair, check, dim_of, seeds, shapes, skip_value_checked, torch_twin
from test_grad_ops import floats, grad_check
from test_ops_more import make, supported, tol, values

XF = tdx.nn.functional
_EXAMPLES = int(os.environ.get("TDX_HYPOTHESIS_EXAMPLES", "0"))
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")  # size mismatch and deprecation warnings by design
SETTINGS = settings(max_examples=_EXAMPLES or 20, deadline=None, derandomize=not _EXAMPLES,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
GRAD_SETTINGS = settings(SETTINGS, max_examples=_EXAMPLES or 10)
FLOATS = ["float32", "float16", "bfloat16", "float64"]
floats_dt = st.sampled_from(FLOATS)
reductions = st.sampled_from(["none", "mean", "sum"])


def _kw(choices):
    """A strategy of keyword arguments, each drawn from its list in ``choices``."""
    return st.fixed_dictionaries({k: st.sampled_from(v) for k, v in choices.items()})


def _combos(choices):
    """The keyword argument sets of ``choices`` taken position by position (at least one)."""
    return [dict(zip(choices, vals)) for vals in zip(*choices.values())] if choices else [{}]


def const(m, arr, dtype, device, like=None):
    """A constant tensor (not a leaf) of ``arr`` for module ``m`` (torch on CPU, tdx on ``device``),
    rounded through ``dtype``, then cast to ``like``'s dtype when given."""
    arr = np.asarray(arr)
    t = torch.tensor(arr).to(getattr(torch, dtype)) if m is torch else \
        tdx.tensor(arr, dtype=getattr(tdx, dtype), device=device)
    return t if like is None else t.to(like.dtype)


def nnf(m):
    """torch.nn.functional for torch, tdx.nn.functional for tdx."""
    return TF if m is torch else XF


def raises_like(tdx_fn, torch_fn, msg=""):
    """torch raises a builtin error, and tdx raises a TdxError of the same kind."""
    with pytest.raises(BUILTINS) as expected:
        torch_fn()
    kind = next(b for b in BUILTINS if isinstance(expected.value, b))
    with pytest.raises(kind) as got:
        tdx_fn()
    assert isinstance(got.value, tdx.TdxError), f"{msg}: raised untyped {got.value!r}"


def check_op(tdx_fn, torch_fn, torch_args, dtype, msg=""):
    """``check`` of ``tdx_fn()`` against ``torch_fn(*torch_args)``. For half precision, torch computing in
    float32 from the same rounded inputs (the exact answer, rounded once) is accepted too, as in
    ``grad_check``: tdx computes half precision in float32 where torch's composite rounds in between."""
    try:
        return check(tdx_fn, lambda: torch_fn(*torch_args), msg=msg, **tol(dtype))
    except AssertionError:
        if dtype not in ("float16", "bfloat16"):
            raise
    half = getattr(torch, dtype)
    up = [a.float() if isinstance(a, torch.Tensor) and a.dtype == half else a for a in torch_args]
    return check(tdx_fn, lambda: torch_fn(*up).to(half), msg=f"{msg} (float32 oracle)", **tol(dtype))


# names and signatures ----------------------------------------------------------------------------------
def test_names_exist_in_torch():
    extra = [n for n in XF.__all__ if not hasattr(TF, n)]
    assert not extra, f"tdx.nn.functional exports names torch.nn.functional lacks: {extra}"
    assert len(set(XF.__all__)) == len(XF.__all__)


def test_signatures_match_torch():
    for name in XF.__all__:
        try:
            want = list(inspect.signature(getattr(TF, name)).parameters)
        except (TypeError, ValueError):  # a builtin without a Python signature
            continue
        if want == ["args", "kwargs"]:  # torch's boolean_dispatch wrappers (max_pool*d...) hide their signature
            continue
        got = list(inspect.signature(getattr(XF, name)).parameters)
        assert got == want, f"{name}: {got} != torch's {want}"


# activations -------------------------------------------------------------------------------------------
# name -> (call(F, x, **kw), {argument: values to draw from}, (low, high) of gradient inputs)
ACT = {
    "relu": (lambda F, x: F.relu(x), {}, (-2, 2)),
    "relu6": (lambda F, x: F.relu6(x), {}, (-1, 7)),
    "leaky_relu": (lambda F, x, s: F.leaky_relu(x, s), dict(s=[0.01, 0.2, -0.3]), (-2, 2)),
    "elu": (lambda F, x, a: F.elu(x, a), dict(a=[1.0, 0.5, 2.0]), (-3, 2)),
    "selu": (lambda F, x: F.selu(x), {}, (-3, 2)),
    "celu": (lambda F, x, a: F.celu(x, a), dict(a=[1.0, 0.5, 2.0]), (-3, 2)),
    "gelu": (lambda F, x, a: F.gelu(x, approximate=a), dict(a=["none", "tanh"]), (-3, 3)),
    "silu": (lambda F, x: F.silu(x), {}, (-4, 4)),
    "mish": (lambda F, x: F.mish(x), {}, (-4, 4)),
    "softplus": (lambda F, x, b, t: F.softplus(x, b, t), dict(b=[1.0, 0.5, 2.0], t=[20.0, 1.0, 5.0]), (-4, 4)),
    "softsign": (lambda F, x: F.softsign(x), {}, (-3, 3)),
    "logsigmoid": (lambda F, x: F.logsigmoid(x), {}, (-5, 5)),
    "sigmoid": (lambda F, x: F.sigmoid(x), {}, (-3, 3)),
    "tanh": (lambda F, x: F.tanh(x), {}, (-3, 3)),
    "hardtanh": (lambda F, x, lo, hi: F.hardtanh(x, lo, hi), dict(lo=[-1.0, -0.5], hi=[1.0, 2.0]), (-3, 3)),
    "hardsigmoid": (lambda F, x: F.hardsigmoid(x), {}, (-4, 4)),
    "hardswish": (lambda F, x: F.hardswish(x), {}, (-4, 4)),
    "tanhshrink": (lambda F, x: F.tanhshrink(x), {}, (-3, 3)),
    "softshrink": (lambda F, x, lam: F.softshrink(x, lam), dict(lam=[0.5, 0.1, 1.0]), (-2, 2)),
    "hardshrink": (lambda F, x, lam: F.hardshrink(x, lam), dict(lam=[0.5, 0.1, 1.0]), (-2, 2)),
    "threshold": (lambda F, x, th, v: F.threshold(x, th, v), dict(th=[0.5, 0.0, -1.0], v=[-1.0, 0.0, 2.5]), (-2, 2)),
    "glu": (lambda F, x, d: F.glu(x, d), dict(d=[-1, 0]), (-3, 3)),
}


@pytest.mark.parametrize("name", sorted(ACT))
@SETTINGS
@given(shape=shapes, dtype=floats_dt, seed=seeds, special=st.booleans(), data=st.data())
def test_activation(device, name, shape, dtype, seed, special, data):
    assume(supported(device, dtype))
    fn, choices, _ = ACT[name]
    kw = data.draw(_kw(choices))
    arr = np.array(values(shape, dtype, seed, special))
    if name == "gelu":  # torch's float32 and bfloat16 kernels give NaN for +inf (its float64 one gives inf, as tdx)
        arr[np.isposinf(arr)] = np.nan
    x, t = make(arr, device, dtype)
    t = t.to(torch_twin(device))  # torch's kernels on the device (cuda's float64 hardswish: a float32 1/6)
    check(lambda: fn(XF, x, **kw), lambda: fn(TF, t, **kw), msg=f"{name} {dtype} {kw}", **tol(dtype))


@pytest.mark.parametrize("name", sorted(ACT))
@GRAD_SETTINGS
@given(shape=shapes, dtype=floats_dt, seed=seeds, data=st.data())
def test_activation_grad(device, name, shape, dtype, seed, data):
    assume(supported(device, dtype))
    fn, choices, span = ACT[name]
    kw = data.draw(_kw(choices))
    if name == "hardsigmoid" and dtype == "float64":  # see test_hardsigmoid_float64_grad
        dtype = "float32"
    if name == "hardswish" and dtype == "float64" and torch_twin(device) != "cpu":
        dtype = "float32"  # torch's float64 kernel there multiplies by a float32 1/6: test_nn_edge_forms checks it
    grad_check(device, dtype, [floats(shape, seed, *span)], lambda m, x: fn(nnf(m), x, **kw), seed)


def test_hardsigmoid_float64_grad(device):
    """torch's float64 backward multiplies by 1/6 rounded to float32; tdx's gradient is the exact 1/6."""
    if not supported(device, "float64"):
        pytest.skip(f"{device} has no float64")
    x = tdx.tensor([-2.5, 0.0, 1.0, 2.9], dtype=tdx.float64, device=device).requires_grad_()
    XF.hardsigmoid(x).sum().backward()
    t = torch.tensor([-2.5, 0.0, 1.0, 2.9], dtype=torch.float64, requires_grad=True)
    TF.hardsigmoid(t).sum().backward()
    check(lambda: x.grad, lambda: t.grad, rtol=1e-7, atol=1e-9)
    assert np.allclose(x.grad.tolist(), [1 / 6] * 4, rtol=1e-15)


# values at each activation's kinks and bounds, where torch's backward picks a side
KINKS = {"relu": [0.0], "relu6": [0.0, 6.0], "leaky_relu": [0.0], "elu": [0.0], "selu": [0.0], "celu": [0.0],
         "hardtanh": [-1.0, 1.0, -0.5, 2.0], "hardsigmoid": [-3.0, 3.0], "hardswish": [-3.0, 3.0],
         "softshrink": [0.5, -0.5, 0.1, 1.0], "hardshrink": [0.5, -0.5, 0.1, 1.0], "threshold": [0.5, 0.0, -1.0],
         "softplus": [20.0, 1.0, 5.0, 10.0, 2.5, 0.0], "logsigmoid": [0.0], "mish": [0.0], "softsign": [0.0]}


@pytest.mark.parametrize("name", sorted(KINKS))
def test_activation_grad_at_kinks(device, name):
    fn, choices, _ = ACT[name]
    x = np.array(KINKS[name] + [-100.0, 100.0, 1e-3], dtype=np.float32)
    for kw in _combos(choices):
        grad_check(device, "float32", [x], lambda m, v: fn(nnf(m), v, **kw))


EDGE_DTYPES = ["int64", "int32", "uint8", "bool", "complex64"]


def test_activation_dtypes(device):
    """Integer, bool and complex inputs: torch's result dtype, or torch's error kind."""
    for dtype in EDGE_DTYPES:
        if not supported(device, dtype):
            continue
        x, t = make(values((2, 3), dtype, 0, low=-3, high=4), device, dtype)
        for name, (fn, choices, _) in ACT.items():
            kw = _combos(choices)[0]
            check(lambda: fn(XF, x, **kw), lambda: fn(TF, t, **kw), msg=f"{name} {dtype}")


@SETTINGS
@given(shape=shapes, dtype=floats_dt, seed=seeds, data=st.data(), cast=st.sampled_from([None, "float32", "float64"]))
def test_softmax_family(device, shape, dtype, seed, data, cast):
    assume(supported(device, dtype) and (cast is None or supported(device, cast)))
    dim = dim_of(data.draw, shape)
    x, t = make(values(shape, dtype, seed, data.draw(st.booleans())), device, dtype)
    for name in ("softmax", "log_softmax", "softmin"):
        check(lambda: getattr(XF, name)(x, dim, dtype=cast and getattr(tdx, cast)),
              lambda: getattr(TF, name)(t, dim, dtype=cast and getattr(torch, cast)), msg=name,
              **tol(dtype, cast or dtype))
    grad_check(device, dtype, [floats(shape, seed)], lambda m, v: nnf(m).log_softmax(v, dim) * 2
               + nnf(m).softmin(v, dim), seed)


def test_softmax_implicit_dim_warns(device):
    for shape in [(), (3,), (2, 3), (2, 3, 4), (2, 1, 3, 2)]:
        x, t = make(values(shape, "float32", 1), device, "float32")
        with pytest.warns(UserWarning, match="Implicit dimension"):
            got = XF.softmax(x)
        check(lambda: got, lambda: TF.softmax(t), msg=str(shape), **tol("float32"))


@SETTINGS
@given(shape=shapes, dtype=floats_dt, seed=seeds, per_channel=st.booleans())
def test_prelu(device, shape, dtype, seed, per_channel):
    assume(supported(device, dtype))
    n = (shape[1] if len(shape) >= 2 else 1) if per_channel else 1
    slopes = np.linspace(-0.5, 0.5, n).astype(np.float32)
    x, t = make(values(shape, dtype, seed), device, dtype)
    w, tw = make(slopes, device, dtype)
    check(lambda: XF.prelu(x, w), lambda: TF.prelu(t, tw), msg="prelu", **tol(dtype))
    grad_check(device, dtype, [floats(shape, seed), slopes], lambda m, v, s: nnf(m).prelu(v, s), seed)


# in-place forms ---------------------------------------------------------------------------------------
INPLACE = {
    "relu_": lambda F, x: F.relu_(x), "elu_": lambda F, x: F.elu_(x, 0.5), "selu_": lambda F, x: F.selu_(x),
    "celu_": lambda F, x: F.celu_(x, 2.0), "leaky_relu_": lambda F, x: F.leaky_relu_(x, 0.1),
    "hardtanh_": lambda F, x: F.hardtanh_(x, -0.5, 0.5), "threshold_": lambda F, x: F.threshold_(x, 0.1, 2.0),
    **{f"{n}(inplace=True)": (lambda n: lambda F, x: getattr(F, n)(x, inplace=True))(n)
       for n in ("relu", "relu6", "leaky_relu", "elu", "selu", "celu", "silu", "mish", "hardtanh", "hardsigmoid",
                 "hardswish")},
    "threshold(inplace=True)": lambda F, x: F.threshold(x, 0.0, -1.0, inplace=True),
    "dropout(eval, inplace=True)": lambda F, x: F.dropout(x, 0.3, training=False, inplace=True),
}


@pytest.mark.parametrize("name", sorted(INPLACE))
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_inplace(device, name, dtype):
    if not supported(device, dtype):
        pytest.skip(f"{device} has no {dtype}")
    fn = INPLACE[name]
    x, t = make(values((3, 4), dtype, 3), device, dtype)
    got, want = fn(XF, x), fn(TF, t)
    assert got is x, f"{name} must return its input"
    check(lambda: x, lambda: t, msg=name, **tol(dtype))
    check(lambda: got, lambda: want, msg=name, **tol(dtype))
    # a leaf that requires grad may not be written in place
    leaf, tleaf = make(values((3,), dtype, 4), device, dtype)
    if "eval" not in name:
        raises_like(lambda: fn(XF, leaf.requires_grad_()), lambda: fn(TF, tleaf.requires_grad_()), msg=name)
    # through a non-leaf, the gradient is the out-of-place function's
    grad_check(device, dtype, [floats((2, 3), 5)], lambda m, v: fn(nnf(m), v * 1.5))


# layers ------------------------------------------------------------------------------------------------
@SETTINGS
@given(lead=shapes, n_in=st.integers(0, 4), n_out=st.integers(0, 4), dtype=floats_dt, seed=seeds,
       bias=st.booleans(), vector=st.booleans())
def test_linear(device, lead, n_in, n_out, dtype, seed, bias, vector):
    assume(supported(device, dtype))
    xs, ws, bs = lead + (n_in,), (n_in,) if vector else (n_out, n_in), () if vector else (n_out,)
    x, t = make(values(xs, dtype, seed), device, dtype)
    w, tw = make(values(ws, dtype, seed + 1), device, dtype)
    b, tb = make(values(bs, dtype, seed + 2), device, dtype) if bias else (None, None)
    check(lambda: XF.linear(x, w, b), lambda: TF.linear(t, tw, tb), msg="linear", **tol(dtype))
    arrays = [floats(xs, seed), floats(ws, seed + 1)] + ([floats(bs, seed + 2)] if bias else [])
    grad_check(device, dtype, arrays, lambda m, *a: nnf(m).linear(*a), seed)


@SETTINGS
@given(lead=shapes, n1=st.integers(1, 3), n2=st.integers(1, 3), n_out=st.integers(0, 3), dtype=floats_dt,
       seed=seeds, bias=st.booleans())
def test_bilinear(device, lead, n1, n2, n_out, dtype, seed, bias):
    assume(supported(device, dtype))
    shapes_ = [lead + (n1,), lead + (n2,), (n_out, n1, n2)] + ([(n_out,)] if bias else [])
    pairs = [make(values(s, dtype, seed + i, low=-1, high=1), device, dtype) for i, s in enumerate(shapes_)]
    check_op(lambda: XF.bilinear(*[p[0] for p in pairs]), TF.bilinear, [p[1] for p in pairs], dtype, msg="bilinear")
    grad_check(device, dtype, [floats(s, seed + i) for i, s in enumerate(shapes_)],
               lambda m, *a: nnf(m).bilinear(*a), seed)


def _well_conditioned(arr, k):
    """Whether every slice over the last ``k`` dims of ``arr`` has values far enough apart that the
    gradient of its normalization is well-conditioned in float32. Nearly equal values give
    gradients that torch's float32 kernels and tdx's compute to only about 3 digits (tdx's is
    often the closer to float64), so those are left to the forward comparison."""
    if arr.ndim < k or arr.size == 0:
        return True
    flat = arr.reshape(-1, math.prod(arr.shape[arr.ndim - k:]))
    return flat.shape[1] <= 1 or flat.var(-1).min() >= 0.05


@SETTINGS
@given(shape=shapes, dtype=floats_dt, seed=seeds, data=st.data(), affine=st.sampled_from(["none", "w", "wb", "b"]),
       eps=st.sampled_from([1e-5, 0.1]))
def test_layer_norm(device, shape, dtype, seed, data, affine, eps):
    assume(supported(device, dtype))
    k = data.draw(st.integers(0, len(shape)))
    norm_shape = list(shape[len(shape) - k:])
    if data.draw(st.integers(0, 5)) == 0:  # a normalized_shape that does not fit
        norm_shape = norm_shape + [2]
    x, t = make(values(shape, dtype, seed, data.draw(st.booleans())), device, dtype)
    w, tw = make(values(norm_shape, dtype, seed + 1), device, dtype) if "w" in affine else (None, None)
    b, tb = make(values(norm_shape, dtype, seed + 2), device, dtype) if "b" in affine else (None, None)
    check(lambda: XF.layer_norm(x, norm_shape, w, b, eps), lambda: TF.layer_norm(t, norm_shape, tw, tb, eps),
          msg="layer_norm", **tol(dtype))
    check(lambda: XF.rms_norm(x, norm_shape, w), lambda: TF.rms_norm(t, norm_shape, tw), msg="rms_norm",
          **tol(dtype))
    arrays = [floats(shape, seed)] + [floats(norm_shape, seed + i + 1) for i, f in enumerate("wb") if f in affine]
    if not _well_conditioned(arrays[0], len(norm_shape)):
        return

    def ln(m, v, *p):
        params = dict(zip([f for f in "wb" if f in affine], p))
        return nnf(m).layer_norm(v, norm_shape, params.get("w"), params.get("b"), eps)

    grad_check(device, dtype, arrays, ln, seed, loose=True)
    rms_arrays = [floats(shape, seed)] + ([floats(norm_shape, seed + 1)] if "w" in affine else [])
    grad_check(device, dtype, rms_arrays, lambda m, v, *p: nnf(m).rms_norm(v, norm_shape, *p, eps=eps), seed)


def test_norm_mixed_dtypes(device):
    """Half precision input with float32 parameters (allowed, as torch's), and rejected mixes."""
    for dtype, pdtype in [("float16", "float32"), ("bfloat16", "float32"), ("float32", "float64"),
                          ("float32", "float16"), ("float16", "float64")]:
        if not supported(device, dtype) or not supported(device, pdtype):
            continue
        x, t = make(values((2, 3, 4), dtype, 1), device, dtype)
        w, tw = make(values((4,), pdtype, 2), device, pdtype)
        c, tc = make(values((3,), pdtype, 3), device, pdtype)
        cases = {"ln": (lambda: XF.layer_norm(x, (4,), w, w), lambda d: TF.layer_norm(t.to(d), (4,), tw.to(d),
                                                                                      tw.to(d))),
                 "rms": (lambda: XF.rms_norm(x, (4,), w), lambda d: TF.rms_norm(t.to(d), (4,), tw.to(d))),
                 "gn": (lambda: XF.group_norm(x, 3, c, c), lambda d: TF.group_norm(t.to(d), 3, tc.to(d), tc.to(d)))}
        for name, (ours, theirs) in cases.items():
            _like_the_device(device, ours, theirs, f"{name} {dtype}/{pdtype}", **tol(dtype))


def _like_the_device(device, tdx_fn, torch_fn, msg, **tol):
    """``check`` of ``tdx_fn()`` against ``torch_fn(d)``, real torch on the device's torch twin ``d``. Where
    torch's kernel there refuses what its CPU kernel accepts (cuda's layer and group norm read their parameters
    in the input's dtype), tdx raises the same kind, or computes torch's CPU answer."""
    twin = torch_twin(device)
    if twin != "cpu":
        try:
            torch_fn(twin)
        except BUILTINS as err:
            kind = next(b for b in BUILTINS if isinstance(err, b))
            try:
                got = tdx_fn()
            except BUILTINS as mine:
                assert isinstance(mine, kind) and isinstance(mine, tdx.TdxError), f"{msg}: raised {mine!r}"
                return
            check(lambda: got, lambda: torch_fn("cpu"), msg=f"{msg} (torch's CPU answer)", **tol)
            return
    check(tdx_fn, lambda: torch_fn(twin), msg=msg, **tol)


@SETTINGS
@given(n=st.integers(0, 3), groups=st.integers(1, 3), per=st.integers(1, 3), spatial=st.sampled_from(
    [(), (3,), (2, 2), (0,)]), dtype=floats_dt, seed=seeds, affine=st.booleans())
def test_group_norm(device, n, groups, per, spatial, dtype, seed, affine):
    assume(supported(device, dtype))
    shape, c = (n, groups * per) + spatial, groups * per
    x, t = make(values(shape, dtype, seed), device, dtype)
    w, tw = make(values((c,), dtype, seed + 1), device, dtype) if affine else (None, None)
    # a group of one value normalizes to exactly 0 in tdx; torch's kernel leaves rounding error scaled by
    # 1/sqrt(eps) there
    single = per * math.prod(spatial) == 1
    check(lambda: XF.group_norm(x, groups, w, w), lambda: TF.group_norm(t, groups, tw, tw), msg="group_norm",
          **({"rtol": 1e-3, "atol": 1e-3} if single and dtype in ("float32", "float64") else tol(dtype)))
    if 0 in spatial:
        return  # torch's weight gradient over an empty input is NaN (tdx gives 0, the sum over nothing)
    arrays = [floats(shape, seed)] + ([floats((c,), seed + 1), floats((c,), seed + 2)] if affine else [])
    if not _well_conditioned(arrays[0].reshape(n, groups, per * math.prod(spatial)), 1):
        return
    grad_check(device, dtype, arrays, lambda m, v, *p: nnf(m).group_norm(v, groups, *p), seed, loose=True)


@SETTINGS
@given(shape=shapes, dtype=floats_dt, seed=seeds, data=st.data(), p=st.sampled_from([2.0, 1.0, 3.0, math.inf]),
       eps=st.sampled_from([1e-12, 0.5]))
def test_normalize(device, shape, dtype, seed, data, p, eps):
    assume(supported(device, dtype))
    dim = dim_of(data.draw, shape) if data.draw(st.booleans()) else 1
    arr = values(shape, dtype, seed)
    if arr.ndim >= 2 and arr.shape[0] and (eps > 1e-3 or dtype in ("float32", "float64")):
        arr[0] = 0  # an all-zero slice (where eps does not underflow): the norm's gradient there is zero, as torch's
    x, t = make(arr, device, dtype)
    check(lambda: XF.normalize(x, p, dim, eps), lambda: TF.normalize(t, p, dim, eps), msg="normalize", **tol(dtype))
    grad_check(device, dtype, [arr], lambda m, v: nnf(m).normalize(v, p, dim, eps), seed)


def test_normalize_out(device):
    x, t = make(values((3, 4), "float32", 5), device, "float32")
    out = tdx.empty((3, 4), device=device)
    assert XF.normalize(x, dim=0, out=out) is out
    check(lambda: out, lambda: TF.normalize(t, dim=0), **tol("float32"))
    with pytest.raises(RuntimeError):
        XF.normalize(x, out=tdx.empty((2, 4), device=device))


@SETTINGS
@given(rows=st.integers(1, 5), width=st.integers(0, 3), ishape=shapes, idtype=st.sampled_from(["int64", "int32"]),
       pad_idx=st.sampled_from([None, 0, -1, 2]), dtype=floats_dt, seed=seeds)
def test_embedding(device, rows, width, ishape, idtype, pad_idx, dtype, seed):
    assume(supported(device, dtype))
    assume(pad_idx is None or -rows <= pad_idx < rows)
    idx = np.random.default_rng(seed).integers(0, rows, size=ishape)
    i, ti = make(idx, device, idtype)
    w, tw = make(values((rows, width), dtype, seed), device, dtype)
    check(lambda: XF.embedding(i, w, pad_idx), lambda: TF.embedding(ti, tw, pad_idx), msg="embedding", **tol(dtype))
    grad_check(device, dtype, [floats((rows, width), seed)],
               lambda m, v: nnf(m).embedding(const(m, idx, idtype, device), v, pad_idx), seed)


@pytest.mark.parametrize("kw", [{}, {"max_norm": 1.0}, {"scale_grad_by_freq": True}], ids=["plain", "max_norm", "freq"])
def test_embedding_of_a_zero_width_table(device, kw):
    """torch's CUDA embedding kernels read a zero-width table's rows as one element wide (backward, max_norm's
    renorm): a device fault. Such a table takes tdx's composed lookup on every device, with torch's result and
    gradient (empty, of the table's shape)."""
    idx = np.array([[0, 3], [1, 1]])
    w, tw = make(np.zeros((4, 0), np.float32), device, "float32")
    i, ti = make(idx, device, "int64")
    w.requires_grad_(True)
    tw.requires_grad_(True)
    out, want = XF.embedding(i, w, **kw), TF.embedding(ti, tw, **kw)
    assert tuple(out.shape) == tuple(want.shape) == (2, 2, 0)
    assert "Embedding" not in type(out.grad_fn).__name__ + (out.grad_fn.name() if out.grad_fn else "")
    out.sum().backward()
    want.sum().backward()
    assert tuple(w.grad.shape) == tuple(tw.grad.shape) == (4, 0)


def test_embedding_max_norm(device):
    arr = values((5, 3), "float32", 7)
    idx = np.array([[0, 2], [2, 4]])
    w, tw = make(arr, device, "float32")
    i, ti = make(idx, device, "int64")
    check(lambda: XF.embedding(i, w, max_norm=1.0), lambda: TF.embedding(ti, tw, max_norm=1.0), **tol("float32"))
    check(lambda: w, lambda: tw, msg="weight renormalized in place", **tol("float32"))
    w.requires_grad_(True)
    tw.requires_grad_(True)
    rep, trep = make(np.array([[0, 2, 2], [2, 4, 2]]), device, "int64")
    XF.embedding(rep, w, scale_grad_by_freq=True).pow(2).sum().backward()
    TF.embedding(trep, tw, scale_grad_by_freq=True).pow(2).sum().backward()
    check(lambda: w.grad, lambda: tw.grad, msg="gradient divided by each index's count", **tol("float32"))
    with pytest.raises(NotImplementedError):
        XF.embedding(i, w, sparse=True)


@SETTINGS
@given(shape=shapes, num_classes=st.sampled_from([-1, 0, 3, 5]), seed=seeds, low=st.sampled_from([0, -1]))
def test_one_hot(device, shape, num_classes, seed, low):
    x, t = make(np.random.default_rng(seed).integers(low, 4, size=shape), device, "int64")
    check(lambda: XF.one_hot(x, num_classes), lambda: TF.one_hot(t, num_classes), msg="one_hot")


@SETTINGS
@given(shape=shapes, dtype=st.sampled_from(FLOATS + ["int64", "bool"]), seed=seeds, data=st.data(),
       value=st.sampled_from([None, 0.5, -2.0, 1.0]))
def test_pad(device, shape, dtype, seed, data, value):
    assume(supported(device, dtype))
    n = data.draw(st.integers(0, len(shape) + 1))
    amounts = data.draw(st.lists(st.integers(-2, 2), min_size=2 * n, max_size=2 * n + data.draw(st.sampled_from(
        [0, 0, 0, 1]))))
    x, t = make(values(shape, dtype, seed), device, dtype)
    check(lambda: XF.pad(x, amounts, value=value), lambda: TF.pad(t, amounts, value=value), msg=f"pad {amounts}",
          **tol(dtype))
    if dtype in FLOATS:
        grad_check(device, dtype, [floats(shape, seed)], lambda m, v: nnf(m).pad(v, amounts, value=value), seed)


def test_pad_modes(device):
    x, t = make(values((2, 3, 4), "float32", 0), device, "float32")
    with pytest.raises(NotImplementedError) as info:  # the other modes: tests/test_nn_conv.py
        XF.pad(x, (1, 1), mode="bogus")
    assert isinstance(info.value, tdx.TdxError) and "bogus" in str(info.value)
    check(lambda: XF.pad(x, [1, 0, 0, 2], "constant", 3.0), lambda: TF.pad(t, [1, 0, 0, 2], "constant", 3.0))


def test_dropout(device):
    x = tdx.ones(4000, device=device)
    for p in (0.0, 0.25, 0.5, 0.9):
        y = XF.dropout(x, p)
        kept = (y != 0).float().mean().item()
        assert abs(kept - (1 - p)) < 0.05, (p, kept)
        nz = y[y != 0]
        assert nz.numel() == 0 or bool(((nz - 1 / (1 - p)).abs() < 1e-5).all().item())
    assert XF.dropout(x, 0.5, training=False) is x
    assert bool((XF.dropout(x, 1.0) == 0).all().item())
    z = tdx.ones(50, device=device) * 3
    out = XF.dropout(z, 0.5, inplace=True)
    assert out is z and bool(((z == 0) | (z == 6)).all().item())
    raises_like(lambda: XF.dropout(x, 1.5), lambda: TF.dropout(torch.ones(3), 1.5))
    raises_like(lambda: XF.dropout(x, -0.1, training=False), lambda: TF.dropout(torch.ones(3), -0.1, False))
    # the gradient is the mask, scaled
    leaf = tdx.ones(200, device=device).requires_grad_()
    y = XF.dropout(leaf * 2, 0.4)
    y.sum().backward()
    assert bool(((leaf.grad - (y != 0).float() * 2 / 0.6).abs() < 1e-5).all().item())


def test_alpha_dropout(device):
    x = tdx.tensor(np.random.default_rng(0).standard_normal(20000).astype(np.float32), device=device)
    assert XF.alpha_dropout(x, 0.5) is x  # training defaults to False, as torch's
    y = XF.alpha_dropout(x, 0.2, training=True)
    assert abs(y.mean().item()) < 0.05 and abs(y.std().item() - 1) < 0.05
    alpha = -1.7580993408473766
    a = 1 / math.sqrt((alpha ** 2 * 0.2 + 1) * 0.8)
    dropped = (y - (alpha * a + -alpha * a * 0.2)).abs() < 1e-5
    assert abs(dropped.float().mean().item() - 0.2) < 0.02
    assert bool((XF.alpha_dropout(x, 1.0, training=True) == 0).all().item())
    raises_like(lambda: XF.alpha_dropout(x, 2.0), lambda: TF.alpha_dropout(torch.ones(3), 2.0))


# regression losses --------------------------------------------------------------------------------------
REGRESSION = {
    "mse_loss": lambda F, x, y, r, w: F.mse_loss(x, y, reduction=r, weight=w),
    "l1_loss": lambda F, x, y, r, w: F.l1_loss(x, y, reduction=r, weight=w),
    "smooth_l1_loss": lambda F, x, y, r, w: F.smooth_l1_loss(x, y, reduction=r, beta=0.5),
    "smooth_l1_loss(beta=0)": lambda F, x, y, r, w: F.smooth_l1_loss(x, y, reduction=r, beta=0.0),
    "huber_loss": lambda F, x, y, r, w: F.huber_loss(x, y, reduction=r, delta=0.8, weight=w),
}


@pytest.mark.parametrize("name", sorted(REGRESSION))
@SETTINGS
@given(pair=broadcast_pair(), dtype=floats_dt, seed=seeds, reduction=reductions, weighted=st.booleans(),
       special=st.booleans())
def test_regression_loss(device, name, pair, dtype, seed, reduction, weighted, special):
    assume(supported(device, dtype))
    fn = REGRESSION[name]
    x, t = make(values(pair[0], dtype, seed, special), device, dtype)
    y, ty = make(values(pair[1], dtype, seed + 1), device, dtype)
    w, tw = make(values(pair[0], dtype, seed + 2, low=0, high=2), device, dtype) if weighted else (None, None)
    check(lambda: fn(XF, x, y, reduction, w), lambda: fn(TF, t, ty, reduction, tw), msg=name, **tol(dtype))
    wa = values(pair[0], "float32", seed + 2, low=0.5, high=2) if weighted else None
    grad_check(device, dtype, [floats(pair[0], seed), floats(pair[1], seed + 1, -1, 1)],
               lambda m, a, b: fn(nnf(m), a, b, reduction, None if wa is None else const(m, wa, dtype, device, a)),
               seed)


# classification losses ---------------------------------------------------------------------------------
@SETTINGS
@given(shape=shapes, dtype=floats_dt, seed=seeds, reduction=reductions, data=st.data())
def test_binary_cross_entropy(device, shape, dtype, seed, reduction, data):
    assume(supported(device, dtype))
    wshape = shape[data.draw(st.integers(0, len(shape))):] if data.draw(st.booleans()) else None
    p = values(shape, dtype, seed, low=0, high=1)
    x, t = make(p, device, dtype)
    y, ty = make(values(shape, dtype, seed + 1, low=0, high=1), device, dtype)
    w, tw = make(values(wshape, dtype, seed + 2, low=0, high=2), device, dtype) if wshape is not None else (None,
                                                                                                            None)
    check(lambda: XF.binary_cross_entropy(x, y, w, reduction=reduction),
          lambda: TF.binary_cross_entropy(t, ty, tw, reduction=reduction), msg="bce", **tol(dtype))
    wa = None if wshape is None else values(wshape, "float32", seed + 2, low=0.5, high=2)
    grad_check(device, dtype, [floats(shape, seed, 0.05, 0.95), floats(shape, seed + 1, 0, 1)],
               lambda m, a, b: nnf(m).binary_cross_entropy(
                   a, b, None if wa is None else const(m, wa, dtype, device, a), reduction=reduction), seed)


@SETTINGS
@given(shape=shapes, dtype=floats_dt, seed=seeds, reduction=reductions, data=st.data(), special=st.booleans())
def test_binary_cross_entropy_with_logits(device, shape, dtype, seed, reduction, data, special):
    assume(supported(device, dtype))
    wshape = shape[data.draw(st.integers(0, len(shape))):] if data.draw(st.booleans()) else None
    pshape = shape[-1:] if data.draw(st.booleans()) else None
    x, t = make(values(shape, dtype, seed, special, low=-30, high=30), device, dtype)
    y, ty = make(values(shape, dtype, seed + 1, low=0, high=1), device, dtype)
    w, tw = make(values(wshape, dtype, seed + 2, low=0, high=2), device, dtype) if wshape is not None else (None,
                                                                                                            None)
    pw, tpw = make(values(pshape, dtype, seed + 3, low=0, high=3), device, dtype) if pshape is not None else (None,
                                                                                                              None)
    check_op(lambda: XF.binary_cross_entropy_with_logits(x, y, w, reduction=reduction, pos_weight=pw),
             lambda a, b, c, d: TF.binary_cross_entropy_with_logits(a, b, c, reduction=reduction, pos_weight=d),
             [t, ty, tw, tpw], dtype, msg="bcel")
    wa = None if wshape is None else values(wshape, "float32", seed + 2, low=0.5, high=2)
    pa = None if pshape is None else values(pshape, "float32", seed + 3, low=0.5, high=3)
    grad_check(device, dtype, [floats(shape, seed, -6, 6), floats(shape, seed + 1, 0, 1)],
               lambda m, a, b: nnf(m).binary_cross_entropy_with_logits(
                   a, b, None if wa is None else const(m, wa, dtype, device, a), reduction=reduction,
                   pos_weight=None if pa is None else const(m, pa, dtype, device, a)), seed)


def _class_case(data, seed, ignore=-100):
    """(input shape, target array, class count) for nll_loss / cross_entropy: every target a class, or
    ``ignore`` at one drawn position (ignored). Targets out of range are :func:`test_nll_loss_bad_targets`'s."""
    n_classes = data.draw(st.integers(1, 4))
    kind = data.draw(st.sampled_from(["1d", "2d", "2d", "3d", "4d"]))
    batch = data.draw(st.integers(0, 3))
    extra = {"1d": (), "2d": (), "3d": (data.draw(st.integers(0, 3)),), "4d": (2, data.draw(st.integers(1, 2)))}[kind]
    ishape = (n_classes,) if kind == "1d" else (batch, n_classes) + extra
    tshape = () if kind == "1d" else (batch,) + extra
    rng = np.random.default_rng(seed)
    target = rng.integers(0, n_classes, size=tshape)
    if target.size and data.draw(st.booleans()):
        target.reshape(-1)[rng.integers(0, target.size)] = ignore
    return ishape, target, n_classes


@SETTINGS
@given(dtype=floats_dt, seed=seeds, reduction=reductions, data=st.data(), weighted=st.booleans(),
       tdtype=st.sampled_from(["int64", "int64", "uint8"]))
def test_nll_loss(device, dtype, seed, reduction, data, weighted, tdtype):
    assume(supported(device, dtype))
    ishape, target, n_classes = _class_case(data, seed, ignore=0 if tdtype == "uint8" else -100)
    x, t = make(values(ishape, dtype, seed, low=-4, high=0), device, dtype)
    y, ty = make(target, device, tdtype)
    wa = values((n_classes,), "float32", seed + 2, low=0.5, high=2) if weighted else None
    w, tw = make(wa, device, dtype) if weighted else (None, None)
    check(lambda: XF.nll_loss(x, y, w, reduction=reduction), lambda: TF.nll_loss(t, ty, tw, reduction=reduction),
          msg="nll_loss", **tol(dtype))
    if tdtype == "uint8" and len(ishape) > 2:
        return  # torch's backward refuses uint8 spatial targets that its forward let through (no targets)
    grad_check(device, dtype, [floats(ishape, seed, -4, 0)],
               lambda m, a: nnf(m).nll_loss(a, const(m, target, tdtype, device),
                                                None if wa is None else const(m, wa, dtype, device, a),
                                                reduction=reduction), seed)


@SETTINGS
@given(dtype=floats_dt, seed=seeds, reduction=reductions, data=st.data(), weighted=st.booleans(),
       smoothing=st.sampled_from([0.0, 0.0, 0.1, 0.5]), ignore=st.sampled_from([-100, 1]))
def test_cross_entropy_indices(device, dtype, seed, reduction, data, weighted, smoothing, ignore):
    assume(supported(device, dtype))
    ishape, target, n_classes = _class_case(data, seed, ignore)
    x, t = make(values(ishape, dtype, seed, data.draw(st.booleans()) and smoothing == 0), device, dtype)
    y, ty = make(target, device, "int64")
    wa = values((n_classes,), "float32", seed + 2, low=0.5, high=2) if weighted else None
    w, tw = make(wa, device, dtype) if weighted else (None, None)
    kw = dict(reduction=reduction, label_smoothing=smoothing, ignore_index=ignore)
    check(lambda: XF.cross_entropy(x, y, w, **kw), lambda: TF.cross_entropy(t, ty, tw, **kw), msg="ce",
          **tol(dtype))
    grad_check(device, dtype, [floats(ishape, seed, -3, 3)],
               lambda m, a: nnf(m).cross_entropy(a, const(m, target, "int64", device),
                                                     None if wa is None else const(m, wa, dtype, device, a), **kw),
               seed)


# a class target out of range: torch's IndexError (cpu, MLX); on cuda an assert inside the kernel
BAD_TARGETS = [((3,), 3), ((3,), -1), ((2, 3), [0, 3]), ((2, 3), [-2, 1]), ((2, 3, 2), [[0, 1], [2, 7]]),
               ((1, 2, 2, 2), [[[0, 1], [-5, 1]]])]


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("ishape,target", BAD_TARGETS, ids=[f"{len(s)}d-{t}" for s, t in BAD_TARGETS])
def test_nll_loss_bad_targets(device, ishape, target, reduction):
    skip_value_checked(device, "nll_loss's class targets")
    x, t = make(values(ishape, "float32", 3, low=-4, high=0), device, "float32")
    y, ty = make(np.asarray(target), device, "int64")
    check(lambda: XF.nll_loss(x, y, reduction=reduction), lambda: TF.nll_loss(t, ty, reduction=reduction),
          msg="nll_loss")


@pytest.mark.parametrize("smoothing", [0.0, 0.1])
@pytest.mark.parametrize("ishape,target", BAD_TARGETS, ids=[f"{len(s)}d-{t}" for s, t in BAD_TARGETS])
def test_cross_entropy_bad_targets(device, ishape, target, smoothing):
    """A target past the last class, or negative and not ``ignore_index`` (-100 with ``ignore_index=1``)."""
    skip_value_checked(device, "cross_entropy's class targets")
    x, t = make(values(ishape, "float32", 4), device, "float32")
    for tgt, ignore in ((np.asarray(target), -100), (np.full(np.shape(target), -100), 1)):
        y, ty = make(tgt, device, "int64")
        check(lambda: XF.cross_entropy(x, y, ignore_index=ignore, label_smoothing=smoothing),
              lambda: TF.cross_entropy(t, ty, ignore_index=ignore, label_smoothing=smoothing), msg="ce")


@SETTINGS
@given(dtype=floats_dt, seed=seeds, reduction=reductions, data=st.data(), weighted=st.booleans(),
       smoothing=st.sampled_from([0.0, 0.2]), tdtype=st.sampled_from(["same", "float32", "float64"]))
def test_cross_entropy_probabilities(device, dtype, seed, reduction, data, weighted, smoothing, tdtype):
    tdtype = dtype if tdtype == "same" else tdtype
    assume(supported(device, dtype) and supported(device, tdtype))
    ishape, _, n_classes = _class_case(data, seed)
    cdim = 0 if len(ishape) == 1 else 1
    probs = torch.tensor(values(ishape, "float32", seed + 1)).softmax(cdim).numpy()
    x, t = make(values(ishape, dtype, seed), device, dtype)
    y, ty = make(probs, device, tdtype)
    wa = values((n_classes,), "float32", seed + 2, low=0.5, high=2) if weighted else None
    w, tw = make(wa, device, dtype) if weighted else (None, None)
    kw = dict(reduction=reduction, label_smoothing=smoothing)
    check(lambda: XF.cross_entropy(x, y, w, **kw), lambda: TF.cross_entropy(t, ty, tw, **kw), msg="ce probs",
          **tol(dtype, tdtype))
    grad_check(device, dtype, [floats(ishape, seed, -3, 3), probs],
               lambda m, a, b: nnf(m).cross_entropy(a, b, None if wa is None else const(m, wa, dtype, device, a),
                                                        **kw), seed)


@SETTINGS
@given(pair=broadcast_pair(), dtype=floats_dt, seed=seeds, reduction=st.sampled_from(["none", "mean", "sum",
                                                                                        "batchmean"]),
       log_target=st.booleans())
def test_kl_div(device, pair, dtype, seed, reduction, log_target):
    assume(supported(device, dtype))
    x, t = make(values(pair[0], dtype, seed, low=-3, high=0), device, dtype)
    y, ty = make(values(pair[1], dtype, seed + 1, low=-3 if log_target else 0, high=1 if log_target else 2),
                 device, dtype)
    kw = dict(reduction=reduction, log_target=log_target)
    check(lambda: XF.kl_div(x, y, **kw), lambda: TF.kl_div(t, ty, **kw), msg="kl_div", **tol(dtype))
    grad_check(device, dtype, [floats(pair[0], seed, -3, 0), floats(pair[1], seed + 1, 0.1 if not log_target else -2,
                                                                      2)],
               lambda m, a, b: nnf(m).kl_div(a, b, **kw), seed)


@SETTINGS
@given(pair=broadcast_pair(), dtype=floats_dt, seed=seeds, data=st.data(), eps=st.sampled_from([1e-8, 0.5]))
def test_cosine_similarity(device, pair, dtype, seed, data, eps):
    assume(supported(device, dtype))
    ndim = max(len(pair[0]), len(pair[1]))
    dim = data.draw(st.integers(-max(ndim, 1), max(ndim, 1) - 1))
    x, t = make(values(pair[0], dtype, seed), device, dtype)
    y, ty = make(values(pair[1], dtype, seed + 1), device, dtype)
    check(lambda: XF.cosine_similarity(x, y, dim, eps), lambda: TF.cosine_similarity(t, ty, dim, eps), msg="cos",
          **tol(dtype))
    grad_check(device, dtype, [floats(pair[0], seed), floats(pair[1], seed + 1)],
               lambda m, a, b: nnf(m).cosine_similarity(a, b, dim, eps), seed)


@SETTINGS
@given(pair=broadcast_pair(), dtype=floats_dt, seed=seeds, p=st.sampled_from([2.0, 1.0, 3.0, math.inf]),
       keepdim=st.booleans())
def test_pairwise_distance(device, pair, dtype, seed, p, keepdim):
    assume(supported(device, dtype))
    x, t = make(values(pair[0], dtype, seed), device, dtype)
    y, ty = make(values(pair[1], dtype, seed + 1), device, dtype)
    check(lambda: XF.pairwise_distance(x, y, p, keepdim=keepdim), lambda: TF.pairwise_distance(t, ty, p,
                                                                                                 keepdim=keepdim),
          msg="pairwise_distance", **tol(dtype))
    grad_check(device, dtype, [floats(pair[0], seed), floats(pair[1], seed + 1)],
               lambda m, a, b: nnf(m).pairwise_distance(a, b, p, keepdim=keepdim), seed)


def test_loss_dtype_rules(device):
    """Mixed dtypes: torch's promotions, in-place result dtypes and refusals."""
    cases = [("float32", "float64"), ("float64", "float32"), ("float16", "float32"), ("float32", "float16"),
             ("float32", "int64"), ("int64", "int64"), ("bool", "bool"), ("float32", "bool")]
    for da, db in cases:
        if not (supported(device, da) and supported(device, db)):
            continue
        x, t = make(values((2, 3), da, 1, low=0, high=1), device, da)
        y, ty = make(values((2, 3), db, 2, low=0, high=1), device, db)
        for name in ("mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy",
                     "binary_cross_entropy_with_logits", "kl_div", "cosine_similarity", "pairwise_distance"):
            for reduction in (("sum", "mean") if "loss" in name or "entropy" in name or name == "kl_div" else (None,)):
                kw = {} if reduction is None else {"reduction": reduction}
                check(lambda: getattr(XF, name)(x, y, **kw), lambda: getattr(TF, name)(t, ty, **kw),
                      msg=f"{name} {da} {db} {kw}", **tol(*(d for d in (da, db) if d in FLOATS)))


# errors --------------------------------------------------------------------------------------------------
ERRORS = {
    "mse bad reduction": lambda F, T: F.mse_loss(T([1.0, 2.0]), T([1.0, 0.0]), reduction="avg"),
    "mse weighted bad reduction": lambda F, T: F.mse_loss(T([1.0]), T([1.0]), reduction="avg", weight=T([1.0])),
    "mse weight shape": lambda F, T: F.mse_loss(T([1.0, 2.0]), T([1.0, 0.0]), weight=T([1.0])),
    "mse shapes": lambda F, T: F.mse_loss(T([1.0, 2.0]), T([1.0, 0.0, 3.0])),
    "l1 bad reduction": lambda F, T: F.l1_loss(T([1.0]), T([1.0]), reduction=None),
    "smooth_l1 negative beta": lambda F, T: F.smooth_l1_loss(T([1.0]), T([1.0]), beta=-1.0),
    "huber zero delta": lambda F, T: F.huber_loss(T([1.0]), T([1.0]), delta=0.0),
    "huber bad reduction": lambda F, T: F.huber_loss(T([1.0]), T([1.0]), reduction="batchmean"),
    "bce out of range": lambda F, T: F.binary_cross_entropy(T([0.5, 1.5]), T([1.0, 0.0])),
    "bce nan": lambda F, T: F.binary_cross_entropy(T([0.5, math.nan]), T([1.0, 0.0])),
    "bce target shape": lambda F, T: F.binary_cross_entropy(T([0.5, 0.5]), T([1.0])),
    "bce target dtype": lambda F, T: F.binary_cross_entropy(T([0.5, 0.5]), T([1, 0], "int64")),
    "bce weight shape": lambda F, T: F.binary_cross_entropy(T([0.5, 0.5]), T([1.0, 0.0]), T([1.0, 1.0, 1.0])),
    "bce bad reduction": lambda F, T: F.binary_cross_entropy(T([0.5]), T([1.0]), reduction="x"),
    "bcel target shape": lambda F, T: F.binary_cross_entropy_with_logits(T([0.5, 0.5]), T([[1.0, 0.0]])),
    "bcel int target": lambda F, T: F.binary_cross_entropy_with_logits(T([0.5, 0.5]), T([1, 0], "int64")),
    "bcel int input": lambda F, T: F.binary_cross_entropy_with_logits(T([1, 0], "int64"), T([1.0, 0.0])),
    "bcel pos_weight shape": lambda F, T: F.binary_cross_entropy_with_logits(T([0.5, 0.5]), T([1.0, 0.0]),
                                                                             pos_weight=T([1.0, 2.0, 3.0])),
    "nll float target": lambda F, T: F.nll_loss(T([[0.5, 0.5]]), T([1.0])),
    "nll int32 target": lambda F, T: F.nll_loss(T([[0.5, 0.5]]), T([1], "int32")),
    "nll class out of range": lambda F, T: F.nll_loss(T([[0.5, 0.5]]), T([2], "int64")),
    "nll negative class": lambda F, T: F.nll_loss(T([[0.5, 0.5]]), T([-1], "int64")),
    "nll batch mismatch": lambda F, T: F.nll_loss(T([[0.5, 0.5], [0.1, 0.2]]), T([1], "int64")),
    "nll 0-d input": lambda F, T: F.nll_loss(T(0.5), T(0, "int64")),
    "nll 2-d target": lambda F, T: F.nll_loss(T([[0.5, 0.5]]), T([[1]], "int64")),
    "nll 1-d input, 2 targets": lambda F, T: F.nll_loss(T([0.5, 0.5]), T([1, 0], "int64")),
    "nll spatial target": lambda F, T: F.nll_loss(T(np.zeros((2, 3, 4))), T(np.zeros((2, 5)), "int64")),
    "nll 4-d input, 2-d target": lambda F, T: F.nll_loss(T(np.zeros((2, 3, 4, 1))), T(np.zeros((2, 4)), "int64")),
    "nll weight size": lambda F, T: F.nll_loss(T([[0.5, 0.5]]), T([1], "int64"), weight=T([1.0, 1.0, 1.0])),
    "nll weight dtype": lambda F, T: F.nll_loss(T([[0.5, 0.5]]), T([1], "int64"), weight=T([1.0, 1.0], "float64")),
    "nll int input": lambda F, T: F.nll_loss(T([[1, 0]], "int64"), T([1], "int64")),
    "nll bad reduction": lambda F, T: F.nll_loss(T([[0.5, 0.5]]), T([1], "int64"), reduction="mean "),
    "ce class out of range": lambda F, T: F.cross_entropy(T([[0.5, 0.5]]), T([5], "int64")),
    "ce smoothed, out of range": lambda F, T: F.cross_entropy(T([[0.5, 0.5]]), T([5], "int64"), label_smoothing=0.1),
    "ce smoothing > 1": lambda F, T: F.cross_entropy(T([[0.5, 0.5]]), T([1], "int64"), label_smoothing=1.5),
    "ce probs smoothing > 1": lambda F, T: F.cross_entropy(T([[0.5, 0.5]]), T([[0.5, 0.5]]), label_smoothing=2.0),
    "ce int probabilities": lambda F, T: F.cross_entropy(T([[0.5, 0.5]]), T([[1, 0]], "int64")),
    "ce probabilities, ignore_index": lambda F, T: F.cross_entropy(T([[0.5, 0.5]]), T([[1.0, 0.0]]), ignore_index=0),
    "ce probabilities, weight size": lambda F, T: F.cross_entropy(T([[0.5, 0.5]]), T([[1.0, 0.0]]), T([1.0])),
    "ce int32 target": lambda F, T: F.cross_entropy(T([[0.5, 0.5]]), T([1], "int32")),
    "ce int input": lambda F, T: F.cross_entropy(T([[1, 0]], "int64"), T([1], "int64")),
    "ce 0-d input": lambda F, T: F.cross_entropy(T(0.5), T([1], "int64")),
    "ce 0-d probabilities": lambda F, T: F.cross_entropy(T(0.5), T(0.5)),
    "ce bad reduction": lambda F, T: F.cross_entropy(T([[0.5, 0.5]]), T([1], "int64"), reduction="SUM"),
    "kl bad reduction": lambda F, T: F.kl_div(T([0.5]), T([0.5]), reduction="batchsum"),
    "kl int": lambda F, T: F.kl_div(T([1], "int64"), T([1], "int64"), reduction="sum"),
    "layer_norm shape": lambda F, T: F.layer_norm(T(np.zeros((2, 3))), (2,)),
    "layer_norm int shape": lambda F, T: F.layer_norm(T(np.zeros((2, 3))), 3),
    "layer_norm empty shape": lambda F, T: F.layer_norm(T(np.zeros((2, 3))), ()),
    "layer_norm long shape": lambda F, T: F.layer_norm(T(np.zeros((2, 3))), (1, 2, 3)),
    "layer_norm weight shape": lambda F, T: F.layer_norm(T(np.zeros((2, 3))), (3,), T([1.0, 1.0])),
    "layer_norm weight dtype": lambda F, T: F.layer_norm(T(np.zeros((2, 3))), (3,), T([1.0, 1.0, 1.0], "float64")),
    "layer_norm int input": lambda F, T: F.layer_norm(T(np.zeros((2, 3)), "int64"), (3,)),
    "rms_norm shape": lambda F, T: F.rms_norm(T(np.zeros((2, 3))), [2]),
    "rms_norm weight shape": lambda F, T: F.rms_norm(T(np.zeros((2, 3))), [3], T([1.0])),
    "rms_norm int input": lambda F, T: F.rms_norm(T(np.zeros((2, 3)), "int64"), [3]),
    "group_norm 1-d": lambda F, T: F.group_norm(T([1.0, 2.0]), 1),
    "group_norm groups": lambda F, T: F.group_norm(T(np.zeros((2, 3))), 2),
    "group_norm one value": lambda F, T: F.group_norm(T(np.zeros((1, 2))), 2),
    "group_norm weight size": lambda F, T: F.group_norm(T(np.zeros((2, 4))), 2, T([1.0, 1.0])),
    "group_norm int input": lambda F, T: F.group_norm(T(np.zeros((2, 4)), "int64"), 2),
    "linear shapes": lambda F, T: F.linear(T(np.zeros((2, 3))), T(np.zeros((4, 2)))),
    "linear 0-d": lambda F, T: F.linear(T(1.0), T(np.zeros((4, 2)))),
    "linear 3-d weight": lambda F, T: F.linear(T(np.zeros((2, 3))), T(np.zeros((2, 4, 3)))),
    "linear dtypes": lambda F, T: F.linear(T(np.zeros((2, 3))), T(np.zeros((4, 3)), "float64")),
    "linear bias dtype": lambda F, T: F.linear(T(np.zeros((2, 3))), T(np.zeros((4, 3))), T(np.zeros(4), "float64")),
    "linear bias shape": lambda F, T: F.linear(T(np.zeros((2, 3))), T(np.zeros((4, 3))), T(np.zeros(3))),
    "bilinear sizes": lambda F, T: F.bilinear(T(np.zeros((2, 3))), T(np.zeros((2, 3))), T(np.zeros((2, 4, 3)))),
    "bilinear batch": lambda F, T: F.bilinear(T(np.zeros((2, 3))), T(np.zeros((3, 3))), T(np.zeros((2, 3, 3)))),
    "bilinear ndim": lambda F, T: F.bilinear(T(np.zeros((2, 3))), T(np.zeros(3)), T(np.zeros((2, 3, 3)))),
    "bilinear bias": lambda F, T: F.bilinear(T(np.zeros((2, 3))), T(np.zeros((2, 3))), T(np.zeros((2, 3, 3))),
                                             T(np.zeros(3))),
    "embedding float indices": lambda F, T: F.embedding(T([0.0]), T(np.zeros((3, 2)))),
    "embedding out of range": lambda F, T: F.embedding(T([3], "int64"), T(np.zeros((3, 2)))),
    "embedding negative": lambda F, T: F.embedding(T([-1], "int64"), T(np.zeros((3, 2)))),
    "embedding 1-d weight": lambda F, T: F.embedding(T([0], "int64"), T(np.zeros(3))),
    "one_hot int32": lambda F, T: F.one_hot(T([0, 1], "int32")),
    "one_hot empty": lambda F, T: F.one_hot(T(np.zeros(0), "int64")),
    "one_hot negative": lambda F, T: F.one_hot(T([-1, 1], "int64")),
    "one_hot too few classes": lambda F, T: F.one_hot(T([0, 3], "int64"), 3),
    "pad odd": lambda F, T: F.pad(T(np.zeros((2, 3))), (1,)),
    "pad too long": lambda F, T: F.pad(T(np.zeros((2, 3))), (1, 1, 1, 1, 1, 1)),
    "pad negative size": lambda F, T: F.pad(T(np.zeros((2, 3))), (-2, -2)),
    "pad float amounts": lambda F, T: F.pad(T(np.zeros((2, 3))), (1.0, 1)),
    "pad reflect": lambda F, T: F.pad(T(np.zeros((2, 3))), (1, 1, 1), mode="reflect"),
    "normalize int": lambda F, T: F.normalize(T([[1, 2]], "int64")),
    "normalize dim": lambda F, T: F.normalize(T([1.0, 2.0]), dim=1),
    "cosine int": lambda F, T: F.cosine_similarity(T([[1, 2]], "int64"), T([[1, 2]], "int64")),
    "cosine dim": lambda F, T: F.cosine_similarity(T([[1.0, 2.0]]), T([[1.0, 2.0]]), dim=2),
    "cosine shapes": lambda F, T: F.cosine_similarity(T(np.zeros((2, 3))), T(np.zeros((3, 3)))),
    "gelu approximate": lambda F, T: F.gelu(T([1.0]), approximate="erf"),
    "hardtanh bounds": lambda F, T: F.hardtanh(T([1.0]), 1.0, -1.0),
    "hardtanh uint8": lambda F, T: F.hardtanh(T([1], "uint8")),
    "celu zero alpha": lambda F, T: F.celu(T([1.0]), 0.0),
    "glu odd": lambda F, T: F.glu(T(np.zeros((2, 3)))),
    "glu 0-d": lambda F, T: F.glu(T(1.0)),
    "glu dim": lambda F, T: F.glu(T(np.zeros((2, 2))), 2),
    "softshrink negative": lambda F, T: F.softshrink(T([1.0]), -0.5),
    "prelu weight size": lambda F, T: F.prelu(T(np.zeros((2, 3))), T([1.0, 1.0])),
    "prelu weight dtype": lambda F, T: F.prelu(T(np.zeros((2, 3))), T([1.0], "float64")),
    "prelu 2-d weight": lambda F, T: F.prelu(T(np.zeros((2, 3))), T([[1.0]])),
    "softmax dim": lambda F, T: F.softmax(T([1.0]), 1),
    "softmax int": lambda F, T: F.softmax(T([1], "int64"), 0),
    "relu not a tensor": lambda F, T: F.relu(1.0),
    "dropout p": lambda F, T: F.dropout(T([1.0]), p=1.5),
}


VALUE_CHECKED = {"nll class out of range", "nll negative class", "ce class out of range", "ce smoothed, out of range",
                 "embedding out of range", "embedding negative", "bce out of range", "bce nan", "one_hot negative",
                 "one_hot too few classes"}  # checked inside the kernel on CUDA (a device-side assert)


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors(device, name):
    if name in VALUE_CHECKED:
        skip_value_checked(device, name)
    fn = ERRORS[name]

    def maker(m):
        def T(arr, dtype="float32"):
            if m is torch:
                return torch.tensor(np.asarray(arr)).to(getattr(torch, dtype))
            return tdx.tensor(np.asarray(arr), dtype=getattr(tdx, dtype), device=device)
        return T

    if "float64" in inspect.getsource(fn) and not supported(device, "float64"):
        pytest.skip(f"{device} has no float64")
    raises_like(lambda: fn(XF, maker(tdx)), lambda: fn(TF, maker(torch)), msg=name)


def test_legacy_reduction_arguments(device):
    x, t = make(values((3, 4), "float32", 1), device, "float32")
    y, ty = make(values((3, 4), "float32", 2), device, "float32")
    for sa, rd in [(False, None), (None, False), (True, True), (False, True)]:
        with pytest.warns(UserWarning, match="deprecated"):
            got = XF.mse_loss(x, y, size_average=sa, reduce=rd)
        check(lambda: got, lambda: TF.mse_loss(t, ty, size_average=sa, reduce=rd), **tol("float32"))
    with pytest.warns(UserWarning, match="batchmean"):
        XF.kl_div(x, y)


# end to end ----------------------------------------------------------------------------------------------
def _train_mlp(m, F, device, steps=30, lr=0.5):
    rng = np.random.default_rng(0)
    data = rng.standard_normal((64, 8)).astype(np.float32)
    labels = (data[:, 0] > 0).astype(np.int64) + (data[:, 1] > 0.5)
    init = [rng.standard_normal(s).astype(np.float32) * 0.4 for s in ((16, 8), (16,), (3, 16), (3,))]
    init.insert(2, np.ones(16, np.float32))
    init.insert(3, np.zeros(16, np.float32))
    kw = {} if m is torch else {"device": device}
    params = [m.tensor(a, **kw).requires_grad_() for a in init]
    x, y = m.tensor(data, **kw), m.tensor(labels, **kw)
    w1, b1, g, beta, w2, b2 = params
    losses = []
    for _ in range(steps):
        h = F.layer_norm(F.gelu(F.linear(x, w1, b1)), (16,), g, beta)
        loss = F.cross_entropy(F.linear(h, w2, b2), y)
        loss.backward()
        with m.no_grad():
            for p in params:
                p -= lr * p.grad
                p.grad = None
        losses.append(loss.item())
    return losses, [p.detach() for p in params]


def test_mlp_training_matches_torch(device):
    got, params = _train_mlp(tdx, XF, device)
    want, tparams = _train_mlp(torch, TF, device)
    assert want[-1] < want[0] * 0.5, "the reference run does not learn"
    np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-5)
    for p, tp in zip(params, tparams):
        check(lambda: p, lambda: tp, rtol=1e-3, atol=1e-4)
