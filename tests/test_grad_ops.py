"""Property-based gradients: every differentiable op of the op surface, against torch's autograd on CPU.

Hypothesis draws shapes (0-d and 0-size included), broadcasting pairs, floating dtypes, values
and op arguments. Each op runs forward on the device with leaves that require grad, the
output is weighted by a drawn cotangent and summed, and ``backward()`` must give every leaf
the gradient torch gives (or no gradient where torch gives none). Where torch raises, in the
forward or the backward, tdx must raise a TdxError of the same builtin kind.
"""

from __future__ import annotations

import ast
import inspect
import os
import sys

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, assume, given, settings, strategies as st

import tdx
from conftest import BUILTINS, broadcast_pair, dim_of, nonempty, seeds, shapes, torch_twin
from tdx.testing.parity import TOLERANCE_TABLE, assert_close

_EXAMPLES = int(os.environ.get("TDX_HYPOTHESIS_EXAMPLES", "0"))
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")
SETTINGS = settings(max_examples=_EXAMPLES or 20, deadline=None, derandomize=not _EXAMPLES,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
DTYPES = ["float32", "float64", "float16", "bfloat16"]
# (rtol, atol) of gradients: a backward pass chains several roundings, so looser than a forward
TOL = TOLERANCE_TABLE["gradient"]


def supported(device, dtype):
    return dtype in tdx.backends.get(device).caps.dtypes


def floats(shape, seed, low=-2.0, high=2.0):
    """Distinct-enough float32 values in [low, high) (no ties, so max/sort gradients are defined)."""
    return np.random.default_rng(seed).uniform(low, high, size=shape).astype(np.float32)


def _outputs(out):
    """The differentiable tensors of an op's result (a tensor, a tuple, or a named tuple)."""
    if isinstance(out, (tuple, list)):
        return [o for o in out if o.dtype.is_floating_point]
    return [out]


def grad_check(device, dtype, arrays, fn, seed=0, loose=False, twin=False):
    """Run ``fn(module, *leaves)`` on tdx (``device``) and on torch; compare outputs and gradients.

    float16 and bfloat16 results may match either torch in that dtype or torch computing in
    float32 from the same rounded inputs (the exact answer rounded once to the dtype): half
    precision backward passes of ill-conditioned ops (std of two close values, a product
    over many elements) differ by more than their rounding from one implementation to the
    next, and either answer is torch's. ``loose`` widens their tolerance for ops whose half
    precision gradient is ill-conditioned by nature (std/var: ``x - mean`` of close values).
    ``twin`` runs torch on the device's torch twin rather than on CPU, for ops whose cuda kernels pick
    other elements among ties (topk) or accumulate otherwise (half precision matmuls).
    """
    tol = dict(zip(("rtol", "atol"), TOL[dtype]))
    half = dtype in ("float16", "bfloat16")
    if half and loose:
        tol = {"rtol": 0.25, "atol": 0.25}
    kw = {"device": device}
    xs = [tdx.tensor(a, **kw).to(getattr(tdx, dtype)).requires_grad_() for a in arrays]

    def leaves(exact):
        ts = [torch.tensor(a).to(getattr(torch, dtype)).to(torch_twin(device) if twin else "cpu") for a in arrays]
        return [(t.float() if exact else t).requires_grad_() for t in ts]

    def run(m, leaves):
        outs = _outputs(fn(m, *leaves))
        weights = [floats(tuple(o.shape), seed + 11 + i) for i, o in enumerate(outs)]
        if m is torch:
            make = lambda w, o: torch.tensor(w).to(getattr(torch, dtype)).to(o.device, o.dtype)  # noqa: E731
        else:
            make = lambda w, o: tdx.tensor(w, **kw).to(o.dtype)  # noqa: E731
        if outs:  # an op with no outputs (unbind of an empty dim) has nothing to differentiate
            sum((o * make(w, o)).sum() for o, w in zip(outs, weights)).backward()
        return outs

    oracles = []
    for exact in ((False, True) if half else (False,)):
        ts = leaves(exact)
        try:
            oracles.append((run(torch, ts), ts))
        except BUILTINS as err:
            kind = next(b for b in BUILTINS if isinstance(err, b))
            with pytest.raises(kind) as info:
                run(tdx, xs)
            assert isinstance(info.value, tdx.TdxError), f"raised untyped {info.value!r}"
            return
    got = run(tdx, xs)

    def close(actual, expected, msg):
        errors = []
        for e in expected:
            try:
                return assert_close(actual, e.detach().to(getattr(torch, actual.dtype.name)), msg=msg, **tol)
            except AssertionError as err:
                errors.append(str(err))
        raise AssertionError(" / ".join(errors))

    for i, g in enumerate(got):
        close(g, [outs[i] for outs, _ in oracles], f"output {i}")
    for i, x in enumerate(xs):
        grads = [ts[i].grad for _, ts in oracles]
        if grads[0] is None:
            assert x.grad is None, f"input {i}: tdx has a gradient torch lacks"
        else:
            assert x.grad is not None, f"input {i}: no gradient, torch has one"
            assert x.grad.dtype == x.dtype, f"input {i}: gradient is {x.grad.dtype}, input {x.dtype}"
            close(x.grad, grads, f"grad of input {i}")


dtypes = st.sampled_from(DTYPES)

# elementwise ---------------------------------------------------------------------------------------------------
# name -> (low, high) of the inputs: inside each op's domain, away from its kinks
UNARY = {**dict.fromkeys(("abs", "neg", "exp", "exp2", "expm1", "sin", "cos", "tan", "atan", "sinh", "cosh",
                          "tanh", "sigmoid", "relu", "erf", "floor", "ceil", "round", "trunc", "frac", "sign",
                          "sgn", "square", "positive"), (-1.4, 1.4)),
         **dict.fromkeys(("log", "log2", "log10", "sqrt", "rsqrt", "reciprocal"), (0.3, 3.0)),
         "log1p": (-0.6, 2.0), "asin": (-0.9, 0.9), "acos": (-0.9, 0.9)}


@pytest.mark.parametrize("name", sorted(UNARY))
@SETTINGS
@given(shape=shapes, dtype=dtypes, seed=seeds, method=st.booleans())
def test_unary_grad(device, name, shape, dtype, seed, method):
    assume(supported(device, dtype))
    fn = (lambda m, x: getattr(x, name)()) if method else (lambda m, x: getattr(m, name)(x))
    grad_check(device, dtype, [floats(shape, seed, *UNARY[name])], fn, seed)


# name -> (call, (low, high) of the first input, of the second)
BINARY = {
    "add": (lambda m, a, b: m.add(a, b, alpha=1.5), (-2, 2), (-2, 2)),
    "sub": (lambda m, a, b: a.sub(b, alpha=-0.5), (-2, 2), (-2, 2)),
    "mul": (lambda m, a, b: a * b, (-2, 2), (-2, 2)),
    "div": (lambda m, a, b: a / b, (-2, 2), (0.5, 2)),
    "pow": (lambda m, a, b: m.pow(a, b), (0.5, 2), (-2, 2)),
    "maximum": (lambda m, a, b: m.maximum(a, b), (-2, 2), (-2, 2)),
    "minimum": (lambda m, a, b: m.minimum(a, b), (-2, 2), (-2, 2)),
    "fmod": (lambda m, a, b: m.fmod(a, b), (-3, 3), (0.7, 1.3)),
    "remainder": (lambda m, a, b: m.remainder(a, b), (-3, 3), (-1.3, -0.7)),
    "atan2": (lambda m, a, b: m.atan2(a, b), (-2, 2), (0.5, 2)),
    "where": (lambda m, a, b: m.where(a > 0, a, b), (-2, 2), (-2, 2)),
    "rpow-rsub-rdiv": (lambda m, a, b: 2.0 ** a - (1 - b) + 3 / (b + 3), (-2, 2), (-1, 1)),
}


@pytest.mark.parametrize("name", sorted(BINARY))
@SETTINGS
@given(shapes=broadcast_pair(), dtype=dtypes, seed=seeds)
def test_binary_grad(device, name, shapes, dtype, seed):
    assume(supported(device, dtype))
    fn, lo, hi = BINARY[name]
    grad_check(device, dtype, [floats(shapes[0], seed, *lo), floats(shapes[1], seed + 1, *hi)], fn, seed)


@pytest.mark.parametrize("name", ["pow", "mul", "maximum", "fmod", "clamp", "masked_fill"])
@SETTINGS
@given(shape=shapes, dtype=dtypes, seed=seeds, scalar=st.sampled_from([2, -1.5, 0.5, 3]))
def test_scalar_arg_grad(device, name, shape, dtype, seed, scalar):
    assume(supported(device, dtype))
    calls = {"pow": lambda m, x: x ** scalar, "mul": lambda m, x: x * scalar,
             "maximum": lambda m, x: m.maximum(x, m.tensor(0.25) if m is torch else
                                                m.tensor(0.25, device=device)),
             "fmod": lambda m, x: m.fmod(x, scalar), "clamp": lambda m, x: x.clamp(-abs(scalar) / 2, abs(scalar)),
             "masked_fill": lambda m, x: x.masked_fill(x > 0.5, scalar)}
    grad_check(device, dtype, [floats(shape, seed, 0.2, 2.0)], calls[name], seed)


# reductions ----------------------------------------------------------------------------------------------------
REDUCTIONS = ["sum", "mean", "prod", "amax", "amin", "std", "var", "logsumexp", "cumsum", "cumprod", "softmax",
              "log_softmax", "max", "min", "norm"]


@pytest.mark.parametrize("name", REDUCTIONS)
@SETTINGS
@given(shape=shapes, dtype=dtypes, seed=seeds, data=st.data(), keepdim=st.booleans())
def test_reduction_grad(device, name, shape, dtype, seed, data, keepdim):
    assume(supported(device, dtype))
    dim = dim_of(data.draw, shape)
    whole = data.draw(st.booleans()) and name not in ("cumsum", "cumprod", "softmax", "log_softmax", "logsumexp")
    if name in ("cumsum", "cumprod", "softmax", "log_softmax"):
        fn = lambda m, x: getattr(x, name)(dim)  # noqa: E731
    elif name == "norm":
        p = data.draw(st.sampled_from(["fro", 1, 2, 3, 0.5, -1, -2, float("inf"), float("-inf")]))
        fn = (lambda m, x: x.norm(p)) if whole else (lambda m, x: m.norm(x, p, dim, keepdim))
    elif name in ("max", "min"):
        fn = (lambda m, x: getattr(x, name)()) if whole else (lambda m, x: getattr(x, name)(dim, keepdim))
    elif whole:
        fn = lambda m, x: getattr(x, name)()  # noqa: E731
    else:
        fn = lambda m, x: getattr(m, name)(x, dim, keepdim=keepdim)  # noqa: E731
    low = 0.5 if name in ("prod", "cumprod", "norm") else -2.0
    grad_check(device, dtype, [floats(shape, seed, low, 2.0)], fn, seed, loose=name in ("std", "var"))


# matrices ------------------------------------------------------------------------------------------------------
@SETTINGS
@given(b=st.integers(0, 3), n=st.integers(0, 4), k=st.integers(0, 4), m=st.integers(0, 4), dtype=dtypes,
       seed=seeds, data=st.data())
def test_product_grads(device, b, n, k, m, dtype, seed, data):
    assume(supported(device, dtype))
    x, y = floats((b, n, k), seed), floats((b, k, m), seed + 1)
    kw = {"twin": True}  # cuBLAS and cuda's reductions accumulate (half precision most) otherwise than CPU's
    grad_check(device, dtype, [x, y], lambda mod, p, q: mod.bmm(p, q), seed, **kw)
    grad_check(device, dtype, [x, y[:1]], lambda mod, p, q: p @ q, seed, **kw)  # batch broadcast
    grad_check(device, dtype, [x, y], lambda mod, p, q: mod.einsum("bij,bjk->ik", p, q), seed, **kw)
    grad_check(device, dtype, [floats((k,), seed + 3), floats((k, m), seed + 4)], lambda mod, p, q: p @ q, seed,
               **kw)
    grad_check(device, dtype, [floats((n, k), seed + 3), floats((k,), seed + 4)], lambda mod, p, q: p @ q, seed,
               **kw)
    grad_check(device, dtype, [floats((n,), seed + 3), floats((m,), seed + 4)], lambda mod, p, q: mod.outer(p, q),
               seed, **kw)
    if b:
        grad_check(device, dtype, [x[0], y[0]], lambda mod, p, q: mod.mm(p, q), seed, **kw)
    d = data.draw(st.integers(-3, 3))
    sq = floats((n, k), seed + 2)
    grad_check(device, dtype, [sq], lambda mod, p: p.tril(d) + p.triu(-d) * 2, seed, **kw)
    grad_check(device, dtype, [sq], lambda mod, p: mod.diag(p, d), seed, **kw)
    grad_check(device, dtype, [sq[0] if n else sq.reshape(-1)], lambda mod, p: mod.diag(p, d), seed, **kw)
    grad_check(device, dtype, [sq], lambda mod, p: mod.trace(p), seed, **kw)


# shape, gather, scatter ---------------------------------------------------------------------------------------
@SETTINGS
@given(shape=nonempty, dtype=dtypes, seed=seeds, data=st.data())
def test_gather_scatter_grads(device, shape, dtype, seed, data):
    assume(supported(device, dtype))
    rng = np.random.default_rng(seed)
    dim = dim_of(data.draw, shape)
    d = dim % len(shape)
    ishape = tuple(data.draw(st.integers(0, s)) for s in shape)
    gidx = rng.integers(0, shape[d], size=ishape)
    perm = np.argsort(rng.random((*ishape[:d], shape[d], *ishape[d + 1:])), axis=d)
    sidx = np.take(perm, np.arange(min(ishape[d], shape[d])), axis=d)

    def idx(m, a):
        return torch.tensor(a) if m is torch else tdx.tensor(a, device=device)

    x = floats(shape, seed)
    grad_check(device, dtype, [x], lambda m, v: v.gather(dim, idx(m, gidx)), seed)
    grad_check(device, dtype, [x, floats(sidx.shape, seed + 3)],
               lambda m, v, s: m.scatter(v, dim, idx(m, sidx), s), seed)
    grad_check(device, dtype, [x, floats(gidx.shape, seed + 4)],
               lambda m, v, s: v.scatter_add(dim, idx(m, gidx), s), seed)
    sel = rng.integers(0, shape[d], size=data.draw(st.integers(0, 5)))
    grad_check(device, dtype, [x], lambda m, v: m.index_select(v, dim, idx(m, sel)), seed)
    mask = rng.integers(0, 2, size=shape[d:]).astype(bool)
    grad_check(device, dtype, [x], lambda m, v: v.masked_select(idx(m, mask)), seed)
    grad_check(device, dtype, [x], lambda m, v: v.masked_fill(idx(m, mask), 0.5), seed)
    grad_check(device, dtype, [x, floats(shape, seed + 5)], lambda m, v, w: m.where(idx(m, mask), v, w), seed)


@SETTINGS
@given(shape=shapes, dtype=dtypes, seed=seeds, data=st.data(), flag=st.booleans())
def test_sort_topk_grads(device, shape, dtype, seed, data, flag):
    assume(supported(device, dtype))
    x = floats(shape, seed)
    dim = dim_of(data.draw, shape)
    size = shape[dim] if shape else 1
    k = data.draw(st.integers(0, size))
    # cuda's sort and topk place equal values (half precision rounds values together) by their own kernels; a 0-d
    # input's topk(0) is CPU's (test_topk_0_of_a_0d_tensor): cuda's kernel leaves it unwritten
    grad_check(device, dtype, [x], lambda m, v: v.sort(dim, descending=flag).values, seed, twin=True)
    grad_check(device, dtype, [x], lambda m, v: m.topk(v, k, dim, largest=flag).values, seed, twin=bool(shape or k))


@pytest.mark.parametrize("largest", [True, False])
def test_topk_0_of_a_0d_tensor(device, largest, monkeypatch):
    """torch's meta function gives ``topk(x, 0)`` of a 0-d ``x`` a 0-d result; torch's CPU kernel fills it with the
    element (index 0), its CUDA kernel returns it unwritten, and the backward's scatter at that index is a device
    assert. tdx gives CPU's answer on every device (on torch executors also with a kernel that behaves as CUDA's)."""
    grad_check(device, "float32", [np.float32(1.5)], lambda m, v: m.topk(v, 0, largest=largest), 3)
    x = tdx.tensor(-2.5, device=device)
    if tdx.backends.get(device).name == "torch":
        real = torch.topk

        def cuda_like(t, k, *args):  # CUDA's kernel: nothing written for k=0
            if k:
                return real(t, k, *args)
            return torch.return_types.topk((torch.full_like(t, float("nan")), torch.full_like(t, 7, dtype=torch.long)))

        monkeypatch.setattr(torch, "topk", cuda_like)
    values, indices = x.topk(0, largest=largest)
    monkeypatch.undo()
    assert values.shape == indices.shape == () and values.item() == -2.5 and indices.item() == 0


@SETTINGS
@given(shape=shapes, dtype=dtypes, seed=seeds, data=st.data())
def test_rearrange_grads(device, shape, dtype, seed, data):
    assume(supported(device, dtype))
    x = floats(shape, seed)
    nd = len(shape)
    dims = tuple(data.draw(st.lists(st.integers(-max(nd, 1), max(nd, 1) - 1), max_size=2, unique=True)))
    shifts = tuple(data.draw(st.integers(-5, 5)) for _ in dims)
    grad_check(device, dtype, [x], lambda m, v: m.roll(v, shifts, dims), seed)
    grad_check(device, dtype, [x], lambda m, v: m.flip(v, dims), seed)
    reps = tuple(data.draw(st.lists(st.integers(0, 3), min_size=nd, max_size=nd + 1)))
    grad_check(device, dtype, [x], lambda m, v: v.repeat(*reps) if reps else v.repeat(()), seed)
    grad_check(device, dtype, [x], lambda m, v: m.tile(v, reps), seed)
    r = data.draw(st.integers(0, 3))
    rdim = data.draw(st.sampled_from([None, *range(-max(nd, 1), max(nd, 1))]))
    grad_check(device, dtype, [x], lambda m, v: m.repeat_interleave(v, r, rdim), seed)
    if nd:
        d = dim_of(data.draw, shape)
        start = data.draw(st.integers(-shape[d], shape[d]))
        length = data.draw(st.integers(0, shape[d]))
        grad_check(device, dtype, [x], lambda m, v: v.narrow(d, start, length), seed)
        grad_check(device, dtype, [x], lambda m, v: m.unbind(v, d), seed)
        grad_check(device, dtype, [x], lambda m, v: m.movedim(v, d, -1), seed)
        grad_check(device, dtype, [x], lambda m, v: m.stack(v.chunk(2, d) if shape[d] % 2 == 0 and shape[d]
                                                            else (v, v), d), seed)


# conversions, copies and in-place ------------------------------------------------------------------------------
CONVERT = {"float": lambda m, x: x.float(), "half": lambda m, x: x.half(), "bfloat16": lambda m, x: x.bfloat16(),
           "double": lambda m, x: x.double(), "to": lambda m, x: x.to(m.float16) * 2,
           "clone": lambda m, x: x.clone() * x, "detach": lambda m, x: x.detach() * x}


@pytest.mark.parametrize("name", sorted(CONVERT))
@SETTINGS
@given(shape=shapes, dtype=dtypes, seed=seeds)
@pytest.mark.float64
def test_conversion_grads(device, name, shape, dtype, seed):
    assume(supported(device, dtype) and (name != "double" or supported(device, "float64")))
    grad_check(device, dtype, [floats(shape, seed)], CONVERT[name], seed)


INPLACE = {
    "add_": lambda h, o: h.add_(o, alpha=2), "sub_": lambda h, o: h.sub_(o), "mul_": lambda h, o: h.mul_(o),
    "div_": lambda h, o: h.div_(o.abs() + 1), "pow_": lambda h, o: h.abs().pow_(o), "copy_": lambda h, o: h.copy_(o),
    "clamp_": lambda h, o: h.clamp_(-0.5, 0.5), "fill_": lambda h, o: h.fill_(0.25), "zero_": lambda h, o: h.zero_(),
    "exp_": lambda h, o: h.exp_(), "sigmoid_": lambda h, o: h.sigmoid_(), "neg_": lambda h, o: h.neg_(),
    "masked_fill_": lambda h, o: h.masked_fill_(o > 0, 1.0), "setitem": lambda h, o: h.__setitem__(..., o * 3),
}


@pytest.mark.parametrize("name", sorted(INPLACE))
@SETTINGS
@given(shapes=broadcast_pair(), dtype=dtypes, seed=seeds)
def test_inplace_grads(device, name, shapes, dtype, seed):
    """In-place ops on a non-leaf (``h = a * 1``) with a broadcast operand ``b``: both get torch's gradient."""
    assume(supported(device, dtype))

    def fn(m, a, b):
        h = a * 1.5
        out = INPLACE[name](h, b)
        return (h if out is None else out) * a

    grad_check(device, dtype, [floats(shapes[0], seed), floats(shapes[1], seed + 1)], fn, seed)


# the differentiable ops of the op surface's point one: each needs a gradient test above
POINT_ONE = {"abs", "neg", "exp", "exp2", "log", "log1p", "log2", "sqrt", "rsqrt", "sin", "cos", "tanh", "sigmoid",
             "erf", "pow", "floor", "ceil", "round", "sign", "reciprocal", "maximum", "minimum", "fmod", "remainder",
             "sum", "mean", "prod", "max", "min", "amax", "amin", "std", "var", "norm", "logsumexp", "cumsum",
             "cumprod", "softmax", "log_softmax", "matmul", "mm", "bmm", "einsum", "outer", "tril", "triu", "diag",
             "trace", "gather", "scatter", "scatter_add", "index_select", "masked_fill", "masked_select", "topk",
             "sort", "roll", "flip", "repeat", "repeat_interleave", "tile", "narrow", "unbind", "movedim", "where",
             "float", "half", "bfloat16", "to", "clone", "detach", "copy", "fill", "zero", "add", "sub", "mul", "div"}
_OPERATORS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div", ast.Pow: "pow",
              ast.MatMult: "matmul"}
_HELPERS = {"supported", "floats", "_outputs", "grad_check", "test_every_point_one_op_has_a_gradient_test"}


def _exercised_ops():
    """Op names this module's gradient tests really call, read from its source.

    Counted: methods and functions called (``m.trace(p)``, ``x.sort(...)``), operators
    (``p @ q`` is matmul) and the names the tables dispatch through ``getattr`` (UNARY,
    REDUCTIONS), anywhere but in the helpers and in this check.
    """
    tree = ast.parse(inspect.getsource(sys.modules[__name__]))
    seen = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name in _HELPERS:
            continue
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "POINT_ONE" for t in node.targets):
            continue
        dispatched = isinstance(node, ast.Assign) and any(getattr(t, "id", "") in ("UNARY", "REDUCTIONS")
                                                          for t in node.targets)
        for sub in ast.walk(node):
            if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute):
                seen.add(sub.func.attr.rstrip("_"))
            elif isinstance(sub, (ast.BinOp, ast.AugAssign)) and type(sub.op) in _OPERATORS:
                seen.add(_OPERATORS[type(sub.op)])
            elif dispatched and isinstance(sub, ast.Constant) and isinstance(sub.value, str):
                seen.add(sub.value)
    return seen


def test_every_point_one_op_has_a_gradient_test():
    """The differentiable ops of the op surface are each called by one of the gradient tests above."""
    missing = POINT_ONE - _exercised_ops()
    assert not missing, f"no gradient test calls {sorted(missing)}"
    surface = set(dir(tdx.Tensor)) | set(dir(tdx))
    absent = {n for n in POINT_ONE if n not in surface and n + "_" not in surface}
    assert not absent, f"not on tdx's surface: {sorted(absent)}"


TIES = {
    "maximum": lambda m, a, b: m.maximum(a, b), "minimum": lambda m, a, b: m.minimum(a, b),
    "clamp ends": lambda m, a, b: a.clamp(1.0, 2.0) * b, "clamp tensor bounds": lambda m, a, b: a.clamp(b, b + 1),
    "max dim": lambda m, a, b: a.max(1).values * b[0], "min dim keepdim": lambda m, a, b: a.min(0, True).values,
    "amax": lambda m, a, b: a.amax(1) * b[0], "max all": lambda m, a, b: a.max() * b.sum(),
    "sort": lambda m, a, b: a.sort(dim=1, stable=True).values * b, "topk": lambda m, a, b: a.topk(2).values,
    "relu at 0": lambda m, a, b: (a - 1).relu() * b, "abs at 0": lambda m, a, b: (a - 1).abs() * b,
    "norms of zeros": lambda m, a, b: (a * 0).norm(dim=1) + (b * 0).norm(3) + (a - 1).norm(dim=0).sum(),
}


@pytest.mark.parametrize("name", sorted(TIES))
def test_gradients_at_ties_and_kinks(device, name):
    """Equal values and kinks, where frameworks pick different subgradients: torch's are the answer."""
    a = np.array([[1.0, 2.0, 2.0], [1.0, 1.0, 3.0]], np.float32)
    b = np.array([[1.0, 2.0, 1.5], [1.0, 0.5, 3.0]], np.float32)
    grad_check(device, "float32", [a, b], TIES[name], twin=name == "topk")  # cuda's topk picks another equal value


def test_clamp_gradient_follows_torch_everywhere(device):
    """x's gradient where min <= x <= max; a bound's where it wins; none through NaN, as torch."""
    nan = float("nan")
    x = np.array([0, 1, 2, 3, 5, nan, 1, 1, 2, 0, 3, 2], np.float32)
    lo = np.array([1, 1, 1, 1, 1, 1, nan, 2, 2, 2, 2, 3], np.float32)
    hi = np.array([4, 4, 4, 3, 4, 4, 4, nan, 2, 2, 2, 1], np.float32)
    grad_check(device, "float32", [x, lo, hi], lambda m, a, b, c: a.clamp(b, c))
    grad_check(device, "float32", [x, lo], lambda m, a, b: a.clamp(min=b))
    grad_check(device, "float32", [x, hi], lambda m, a, c: a.clamp(max=c))
    grad_check(device, "float32", [x], lambda m, a: a.clamp(1.0, 1.5) + a.clamp(min=nan))


def test_float64_gradients_at_the_extremes(device):
    """Where exp overflows or underflows, gradients stay finite and exact, as torch's."""
    if not supported(device, "float64"):
        pytest.skip(f"{device} has no float64")
    x = np.array([-800.0, -40.0, 0.0, 3.0, 40.0, 800.0])
    for fn in (lambda m, a: a.sigmoid(), lambda m, a: a.exp() * 0 + a.softmax(0), lambda m, a: a.logsumexp(0),
               lambda m, a: a.log_softmax(0), lambda m, a: m.sin(a) * m.cos(a), lambda m, a: a.erf()):
        grad_check(device, "float64", [x], fn)


def test_where_gradient_with_an_infinite_cotangent(device):
    """The branch not taken gets exactly zero, even where the incoming gradient is infinite."""
    a, b = np.array([1.0, 2.0, 3.0], np.float32), np.array([[3.0], [4.0]], np.float32)

    def fn(m, x, y):
        big = m.tensor([[1e38, 1.0, 1.0], [1.0, 1.0, 1e38]]) if m is torch else \
            tdx.tensor([[1e38, 1.0, 1.0], [1.0, 1.0, 1e38]], device=device)
        mask = m.tensor([True, False, True]) if m is torch else tdx.tensor([True, False, True], device=device)
        return m.where(mask, x, y) * big * 10

    grad_check(device, "float32", [a, b], fn)
