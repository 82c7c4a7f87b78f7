"""Elementwise operators and math against torch on CPU (on the device itself where tdx runs torch's kernels there,
for the checks of what those kernels do otherwise: rounding, dtypes refused): broadcasting, promotion, scalars."""

from __future__ import annotations

import operator

import numpy as np
import pytest
import torch

import tdx
from tdx.testing.parity import tolerance
from conftest import check, pair, sample, torch_order, torch_twin

SHAPES = [((3, 4), (3, 4)), ((3, 1), (1, 4)), ((2, 3, 4), (4,)), ((), (3,)), ((5,), ()),
          ((0, 3), (1, 3)), ((), ())]
DTYPE_PAIRS = [("float32", "float32"), ("int64", "int64"), ("bool", "bool"), ("float32", "int64"),
               ("int64", "bool"), ("int32", "int64"), ("uint8", "int8"), ("float16", "float32")]
OPS = {"add": operator.add, "sub": operator.sub, "mul": operator.mul, "truediv": operator.truediv,
       "floordiv": operator.floordiv, "mod": operator.mod, "pow": operator.pow, "eq": operator.eq,
       "ne": operator.ne, "lt": operator.lt, "le": operator.le, "gt": operator.gt, "ge": operator.ge,
       "and": operator.and_, "or": operator.or_, "xor": operator.xor}


def _divisor_safe(name, arr, dtype):
    if name in ("floordiv", "mod") and dtype == "bool":
        arr[...] = True  # integer division by zero raises in torch; keep divisors non-zero
    if name in ("floordiv", "mod") and dtype.startswith(("int", "uint")):
        arr[arr == 0] = 3
    if name == "pow" and dtype.startswith(("int", "uint")):
        arr[...] = abs(arr) % 3
    return arr


@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("dtypes", DTYPE_PAIRS, ids=lambda d: f"{d[0]}-{d[1]}")
@pytest.mark.parametrize("shapes", SHAPES, ids=str)
def test_binary_operator(device, op, dtypes, shapes):
    fn = OPS[op]
    a = sample(shapes[0], dtypes[0], seed=1)
    b = _divisor_safe(op, sample(shapes[1], dtypes[1], seed=2), dtypes[1])
    xa, ta = pair(a, device, dtypes[0])
    xb, tb = pair(b, device, dtypes[1])
    check(lambda: fn(xa, xb), lambda: fn(ta, tb), msg=f"{op} {dtypes} {shapes}")


@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("dtype", ["float32", "int64", "bool", "int32", "float16"])
@pytest.mark.parametrize("scalar", [2, 2.5, True, -3])
def test_scalar_promotion(device, op, dtype, scalar):
    fn = OPS[op]
    a = _divisor_safe(op, sample((2, 3), dtype, seed=3), dtype)
    if op == "pow" and isinstance(scalar, int) and scalar < 0:
        scalar = 2
    x, t = pair(a, device, dtype)
    check(lambda: fn(x, scalar), lambda: fn(t, scalar), msg=f"x {op} {scalar!r}")
    if op not in ("pow", "floordiv", "mod", "truediv"):
        check(lambda: fn(scalar, x), lambda: fn(scalar, t), msg=f"{scalar!r} {op} x")


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int16", "int32", "int64"])
@pytest.mark.parametrize("scalar", [1, 127, 300, -1, -129, 2**40])
def test_integer_tensors_with_ints_in_and_out_of_their_range(device, dtype, scalar):
    """An integer tensor with a Python int keeps its dtype, as torch's: an int it holds (a position moved by one)
    and one it does not (torch wraps it into the dtype) give torch's values in arithmetic and comparisons."""
    a = np.array([[44, 0, 1], [100, 7, 120]])
    x, t = pair(a, device, dtype)
    for name in ("add", "sub", "mul", "eq", "ne", "lt", "ge"):
        fn = getattr(operator, name)
        check(lambda: fn(x, scalar), lambda: fn(t, scalar), msg=f"x {name} {scalar!r}")


@pytest.mark.parametrize("zero_dtype", ["int64", "float64", "int32"])
@pytest.mark.parametrize("dtype", ["int32", "float16", "uint8", "float32"])
def test_zero_dim_tensors_promote_like_scalars(device, dtype, zero_dtype):
    x, t = pair(sample((3,), dtype, seed=4), device, dtype)
    if zero_dtype == "float64" and not tdx.backends.get(device).caps.float64:
        pytest.skip(f"{device} has no float64")
    z, tz = pair(sample((), zero_dtype, seed=5), device, zero_dtype)
    check(lambda: x + z, lambda: t + tz, msg="dim + zero-dim")
    check(lambda: z * x, lambda: tz * t, msg="zero-dim * dim")


UNARY = ["neg", "abs", "exp", "log", "sqrt", "sin", "cos", "tanh", "sigmoid", "relu", "floor", "ceil",
         "round", "trunc", "sign", "reciprocal", "rsqrt", "log1p", "expm1", "log2", "exp2", "erf",
         "square", "logical_not", "isnan", "isinf", "isfinite", "bitwise_not", "frac", "tan", "atan"]


@pytest.mark.parametrize("name", UNARY)
@pytest.mark.parametrize("dtype", ["float32", "int64", "bool"])
def test_unary(device, name, dtype):
    x, t = pair(sample((3, 4), dtype, seed=6), device, dtype)
    t = t.to(torch_twin(device))  # torch on cuda takes abs of bool, which its CPU kernel refuses
    check(lambda: getattr(x, name)(), lambda: getattr(t, name)(), msg=f"{name}")
    check(lambda: getattr(tdx, name)(x), lambda: getattr(torch, name)(t), msg=f"tdx.{name}")


@pytest.mark.parametrize("dtype", ["float32", "int64"])
def test_special_values(device, dtype):
    vals = [0.0, -0.0, 1.5, -2.5, float("inf"), float("-inf"), float("nan")] if dtype == "float32" else [0, -7, 7]
    x, t = pair(vals, device, dtype)
    for name in ("exp", "log", "sqrt", "abs", "isnan", "isinf", "floor", "sign", "neg", "sigmoid"):
        check(lambda: getattr(x, name)(), lambda: getattr(t, name)(), msg=name)


@pytest.mark.parametrize("dtype", ["float32", "int64"])
def test_where_clamp_maximum(device, dtype):
    a, ta = pair(sample((3, 4), dtype, seed=7), device, dtype)
    b, tb = pair(sample((4,), dtype, seed=8), device, dtype)
    c, tc = pair(sample((3, 1), "bool", seed=9), device, "bool")
    check(lambda: tdx.where(c, a, b), lambda: torch.where(tc, ta, tb))
    check(lambda: tdx.where(c, a, 0.5), lambda: torch.where(tc, ta, 0.5))
    check(lambda: tdx.where(c, 2, a), lambda: torch.where(tc, 2, ta))
    check(lambda: a.clamp(-1, 2), lambda: ta.clamp(-1, 2))
    check(lambda: a.clamp(min=-0.5), lambda: ta.clamp(min=-0.5))
    check(lambda: a.clamp(max=b), lambda: ta.clamp(max=tb))
    check(lambda: tdx.clamp(a), lambda: torch.clamp(ta))
    check(lambda: tdx.maximum(a, b), lambda: torch.maximum(ta, tb))
    check(lambda: tdx.minimum(a, b), lambda: torch.minimum(ta, tb))
    check(lambda: a.add(b, alpha=2), lambda: ta.add(tb, alpha=2))
    check(lambda: a.sub(b, alpha=3), lambda: ta.sub(tb, alpha=3))
    nz_b = b.clone()
    nz_b[nz_b == 0] = 3
    nz_tb = tb.clone()
    nz_tb[nz_tb == 0] = 3
    for mode in (None, "floor", "trunc"):
        check(lambda: a.div(nz_b, rounding_mode=mode), lambda: ta.div(nz_tb, rounding_mode=mode),
              msg=f"div {mode}")


@pytest.mark.parametrize("shapes", [((3, 4), (4, 5)), ((2, 3, 4), (4, 5)), ((4,), (4,)), ((2, 3, 4), (2, 4, 2)),
                                    ((4,), (4, 3)), ((3, 4), (4,)), ((1, 3, 4), (5, 4, 2)), ((3, 4), (5, 2))],
                         ids=str)
@pytest.mark.parametrize("dtype", ["float32", "int64"])
def test_matmul(device, shapes, dtype):
    a, ta = pair(sample(shapes[0], dtype, seed=10), device, dtype)
    b, tb = pair(sample(shapes[1], dtype, seed=11), device, dtype)
    ta, tb = ta.to(torch_twin(device)), tb.to(torch_twin(device))  # torch on cuda has no integer matmul
    rtol, atol = tolerance(dtype, "matmul")  # exact for int64
    check(lambda: a @ b, lambda: ta @ tb, rtol=rtol, atol=atol)
    check(lambda: tdx.matmul(a, b), lambda: torch.matmul(ta, tb), rtol=rtol, atol=atol)


def test_matmul_dtype_mismatch_raises(device):
    a, _ = pair(sample((2, 2), "float32"), device, "float32")
    b, _ = pair(sample((2, 2), "int64"), device, "int64")
    with pytest.raises(RuntimeError):
        a @ b


@pytest.mark.parametrize("op", ["add", "sub", "mul", "truediv"])
@pytest.mark.parametrize("dtype", ["float32", "int64"])
def test_inplace_operators(device, op, dtype):
    fn = getattr(operator, f"i{op}")
    x, t = pair(sample((3, 4), dtype, seed=12), device, dtype)
    y, u = pair(sample((4,), dtype, seed=13) + 5, device, dtype)

    def run(a, b):
        a = a.clone()
        a = fn(a, b)
        return a

    check(lambda: run(x, y), lambda: run(t, u), msg=f"i{op}")
    check(lambda: run(x, 1.5), lambda: run(t, 1.5), msg=f"i{op} float scalar")
    small, tsmall = pair(sample((4,), dtype), device, dtype)
    check(lambda: run(small, x), lambda: run(tsmall, t), msg="broadcast into smaller")


def test_inplace_keeps_identity(device):
    x = tdx.zeros(3, device=device)
    same = x
    x += 1
    assert x is same
    assert x.tolist() == [1.0, 1.0, 1.0]


@pytest.mark.parametrize("op", ["addcmul", "addcdiv"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("value", [1, 0.1, -3])
@pytest.mark.float64
def test_addcmul_addcdiv_round_as_torch(device, op, dtype, value):
    """The optimizers' update ops, out of place and in place (broadcast operands too), bit for bit
    torch's: ``self + value * t1 * t2`` (or ``/ t2``) rounded in torch's kernel's order. torch's
    ``addcmul`` ends in a fused multiply-add where built with FMA (float32 bit for bit where that rounding is
    verified on this CPU); MLX has none for float64, so there float64 ``addcmul``
    rounds the product and the sum apart (measured max 3.6e-15: 2 ulp of results near 10)."""
    rng = np.random.default_rng(3)  # full-precision values: every product has low bits to round
    s, t1 = rng.standard_normal((64, 33)).astype(dtype), rng.standard_normal((64, 33)).astype(dtype)
    t2 = (rng.standard_normal(33) + 2.5).astype(dtype)
    twin = torch_twin(device)  # torch's kernel on the device rounds as its own compiler fused it
    ts, tt1, tt2 = (torch.from_numpy(a).to(twin) for a in (s, t1, t2))
    xs, xt1, xt2 = (tdx.tensor(a, device=device) for a in (s, t1, t2))
    expect = getattr(torch, op)(ts, tt1, tt2, value=value).cpu()
    got = getattr(tdx, op)(xs, xt1, xt2, value=value)
    getattr(xs, op + "_")(xt1, xt2, value=value)
    promised, why = torch_order(device, "multiply_add")  # torch's rounding verified on this CPU
    for out in (got, xs):
        if op == "addcmul" and dtype == "float64":  # (exact on cpu)
            torch.testing.assert_close(torch.from_numpy(out.numpy(force=True)), expect, rtol=0, atol=4e-15)
        elif op == "addcmul" and not promised:
            torch.testing.assert_close(torch.from_numpy(out.numpy(force=True)), expect, rtol=1e-6, atol=1e-6, msg=why)
        else:
            assert torch.equal(torch.from_numpy(out.numpy(force=True)), expect)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("weight", [0.1, 0.001, -0.7, 0.5, 0.9, 2.5])
@pytest.mark.float64
def test_lerp_rounds_as_torch(device, dtype, weight):
    """``lerp`` with a number weight (the optimizers' moving averages), out of place, in place and
    its gradients: float32 bit for bit torch's (one fused multiply-add, ``weight - 1`` from 0.5 up, or
    rounded apart where torch's kernels are built without FMA) where that rounding is verified on this CPU;
    float64 on an executor without a fused multiply-add within 2 ulp."""
    rng = np.random.default_rng(7)
    a, b = rng.standard_normal((40, 33)).astype(dtype), rng.standard_normal(33).astype(dtype)
    twin = torch_twin(device)  # torch's kernel on the device rounds as its own compiler fused it
    ta, tb = torch.from_numpy(a).to(twin).requires_grad_(), torch.from_numpy(b).to(twin).requires_grad_()
    xa, xb = (tdx.tensor(v, device=device, requires_grad=True) for v in (a, b))
    on_twin, got = torch.lerp(ta, tb, weight), tdx.lerp(xa, xb, weight)
    expect = on_twin.cpu()
    inplace = tdx.tensor(a, device=device).lerp_(tdx.tensor(b, device=device), weight)
    promised, why = torch_order(device, "multiply_add")  # torch's rounding verified on this CPU
    exact = (dtype == "float32" and promised) or xa._ex.caps.native_autograd
    for out in (got, inplace):
        if exact:
            assert torch.equal(torch.from_numpy(out.detach().numpy(force=True)), expect.detach())
        elif dtype == "float32":
            torch.testing.assert_close(torch.from_numpy(out.detach().numpy(force=True)), expect.detach(),
                                       rtol=1e-6, atol=1e-6, msg=why)
        else:
            torch.testing.assert_close(torch.from_numpy(out.detach().numpy(force=True)), expect.detach(),
                                       rtol=0, atol=2 * 8.9e-16)
    g = np.random.default_rng(8).standard_normal((40, 33)).astype(dtype)
    on_twin.backward(torch.from_numpy(g).to(twin))
    got.backward(tdx.tensor(g, device=device))
    # ``b``'s gradient sums over the broadcast rows: a reduction's tolerance (measured on mlx:cpu with
    # ATEN_CPU_CAPABILITY=default: 1.5e-5 relative on a sum that cancels)
    for x, t, kind in ((xa, ta, "elementwise"), (xb, tb, "reduction")):
        rtol, atol = tolerance(dtype, kind)
        torch.testing.assert_close(torch.from_numpy(x.grad.numpy(force=True)), t.grad.cpu(), rtol=rtol, atol=atol)
