"""The float32 per-op path: the facade calling an executor's declared float32 kernel itself.

Where an executor declares ``float32_kernels`` (MLX), an operator or ``tdx.<op>`` call on float32 operands
skips the op's method and keeps each tensor's dtype on the tensor (``_dt``). These tests hold that path to
the op it stands for, bit for bit, on special values, scalars, broadcasting and the cases it must leave to
the op (two vectors for ``matmul``, other dtypes, other executors), and check that a tensor whose data
takes another dtype (``p.data = ...``, ``module.half()``) computes in the new dtype, as torch.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import tdx
from tdx._tensor import wrapping
from tdx.testing.parity import assert_close

_SPECIAL = np.array([[0.0, -0.0, 1.5, -2.25], [np.inf, -np.inf, np.nan, 1e-45],
                     [3e38, -3e38, 7.0, 0.1], [1.0, -1.0, 2.0, 0.5]], dtype=np.float32)
_SCALARS = (2, -3, 0.5, -0.0, 1e30, float("nan"), 2 ** 40)


def _kernels(device):
    kernels = tdx.backends.get(device).float32_kernels
    if kernels is None:
        pytest.skip(f"{device} declares no float32 kernels: every call goes through its op")
    return kernels


def _same_bits(got, want, what):
    assert got.dtype is want.dtype, f"{what}: {got.dtype} != {want.dtype}"
    assert tuple(got.shape) == tuple(want.shape), what
    g, w = got.cpu().numpy(), want.cpu().numpy()
    if g.dtype.kind == "f":  # every bit, signed zeros included; a NaN only where the op has one
        nan = np.isnan(g)
        assert np.array_equal(nan, np.isnan(w)), what
        assert np.array_equal(g.view(np.uint32)[~nan], w.view(np.uint32)[~nan]), what
    else:
        assert np.array_equal(g, w), what


def _by_op(ex, name, *operands):
    natives = [o._n if isinstance(o, tdx.Tensor) else o for o in operands]
    return wrapping.wrap(getattr(ex, name)(*natives), ex)


def test_every_kernel_gives_its_op_bit_for_bit(device):
    kernels = _kernels(device)
    ex = tdx.backends.get(device)
    a = tdx.tensor(_SPECIAL, device=device)
    b = tdx.tensor(_SPECIAL[::-1].copy(), device=device)
    row = tdx.tensor(_SPECIAL[1], device=device)
    checked = 0
    for name, (kernel, result, scalars, vectors) in sorted(kernels.items()):
        unary = name not in ("add", "sub", "mul", "truediv", "matmul", "maximum", "eq", "ne", "lt", "le", "gt", "ge")
        if unary:
            got = wrapping.float32_unary([wrapping.NO_KERNEL], name, a)
            assert got is not None, name
            _same_bits(got, _by_op(ex, name, a), name)
            checked += 1
            continue
        for x, y in ((a, b), (a, row), (row, a)):
            got = wrapping.float32_binary([wrapping.NO_KERNEL], name, x, y)
            assert got is not None, f"{name}: the kernel did not run"
            _same_bits(got, _by_op(ex, name, x, y), f"{name}{tuple(x.shape)}{tuple(y.shape)}")
            checked += 1
        for s in _SCALARS if scalars else ():
            for reverse in (False, True):
                got = wrapping.float32_binary([wrapping.NO_KERNEL], name, a, s, reverse)
                if got is None:  # the kernel refused the scalar (too large for it): the op answers
                    continue
                want = _by_op(ex, name, s, a) if reverse else _by_op(ex, name, a, s)
                _same_bits(got, want, f"{name} with {s!r}{' reversed' if reverse else ''}")
                checked += 1
    assert checked > 40


def test_what_the_kernels_leave_to_the_op(device):
    kernels = _kernels(device)
    assert "matmul" in kernels and "add" in kernels
    v = tdx.tensor([1.0, 2.0, 3.0], device=device)
    assert wrapping.float32_binary([wrapping.NO_KERNEL], "matmul", v, v) is None  # torch's order of additions
    h = v.to(tdx.float16)
    assert wrapping.float32_binary([wrapping.NO_KERNEL], "add", h, h) is None
    assert wrapping.float32_binary([wrapping.NO_KERNEL], "add", v, h) is None
    assert wrapping.float32_binary([wrapping.NO_KERNEL], "add", v, True) is None  # a bool is no number here
    assert wrapping.float32_binary([wrapping.NO_KERNEL], "maximum", v, 2.0) is None  # torch wants a tensor
    cpu = tdx.tensor(1.0)
    assert wrapping.float32_binary([wrapping.NO_KERNEL], "add", v, cpu) is None  # a 0-d cpu operand: the op's rule


@pytest.mark.parametrize("expr", ["a + b", "a - 2", "3.0 * a", "a / b", "a @ b", "a @ b[0]", "a > b",
                                  "tdx.maximum(a, b)", "tdx.exp(a)", "a.exp()", "a.mul(b)", "a[0] @ b[1]"])
def test_operators_follow_torch(device, expr):
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((2, 3, 3)).astype(np.float32)
    got = eval(expr, {"tdx": tdx, "a": tdx.tensor(x, device=device), "b": tdx.tensor(y, device=device)})
    want = eval(expr.replace("tdx.", "torch."), {"torch": torch, "a": torch.tensor(x), "b": torch.tensor(y)})
    assert got.dtype.name == str(want.dtype).removeprefix("torch."), expr
    assert_close(got, want, msg=expr)


@pytest.mark.parametrize("kind", ["tensor", "parameter", "buffer"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "int32"])
def test_data_of_another_dtype_is_computed_in_it(device, dtype, kind):
    if kind == "tensor":
        tp, p = torch.ones(3) * 1.5, tdx.ones(3, device=device) * 1.5
    elif kind == "parameter":
        tp = torch.nn.Parameter(torch.ones(3) * 1.5, requires_grad=False)
        p = tdx.nn.Parameter(tdx.ones(3, device=device) * 1.5, requires_grad=False)
    else:
        tm, m = torch.nn.Module(), tdx.nn.Module()
        tm.register_buffer("b", torch.ones(3) * 1.5)
        m.register_buffer("b", tdx.ones(3, device=device) * 1.5)
        tp, p = tm.b, m.b
    for t in (p, tp):
        _ = t * 2.0, t + t  # the float32 path has read (and kept) the dtype
        t.data = t.data.to(getattr(torch if t is tp else tdx, dtype))
    for expr in ("p * 2.0", "p + p", "p > 1", "p.dtype"):
        got, want = eval(expr, {"p": p}), eval(expr, {"p": tp})
        if expr == "p.dtype":
            assert got.name == str(want).removeprefix("torch."), expr
            continue
        assert got.dtype.name == str(want.dtype).removeprefix("torch."), expr
        assert_close(got, want, msg=expr)


def test_module_half_after_a_float32_forward(device):
    rng = np.random.default_rng(1)
    w, bias, x = rng.standard_normal((4, 3)), rng.standard_normal(4), rng.standard_normal((2, 3))
    outs = []
    for m in (torch, tdx):
        lin = m.nn.Linear(3, 4)
        lin.load_state_dict({"weight": m.tensor(w, dtype=m.float32), "bias": m.tensor(bias, dtype=m.float32)})
        if m is tdx:
            lin = lin.to(device)
        xin = m.tensor(x, dtype=m.float32)
        xin = xin.to(device) if m is tdx else xin
        _ = lin(xin) + lin.weight.sum()  # float32 first
        lin.half()
        y = lin(xin.half()) * 2.0 + lin.bias
        outs.append(y)
    assert outs[1].dtype is tdx.float16 and outs[1].dtype.name == str(outs[0].dtype).removeprefix("torch.")
    assert_close(outs[1], outs[0], atol=1e-2, rtol=1e-2)


def test_a_subclass_view_keeps_the_dtype(device):
    class Mine(tdx.Tensor):
        pass

    a = tdx.ones(2, device=device)
    _ = a + a
    m = a.as_subclass(Mine)
    assert m.dtype is tdx.float32 and (m * 2).dtype is tdx.float32


def _both_ways(device, body):
    """``body(lib, kw)`` with tdx on ``device`` and torch on the CPU; returns both results (tdx's first)."""
    return body(tdx, {"device": device}), body(torch, {})


def _pick(got, want, what):
    assert got.dtype.name == str(want.dtype).removeprefix("torch."), what
    assert_close(got, want, msg=what)


def test_views_keep_the_old_values_when_their_root_takes_new_data(device):
    def body(lib, kw):
        p = lib.nn.Parameter(lib.ones(4, **kw), requires_grad=False)
        v, alias = p[0:2], p.data
        _ = v + v, alias * 2.0  # dtypes read and kept
        p.data = p.data.half()
        p.add_(1)
        return v * 3.0, alias * 2.0, p * 1.0

    for got, want, what in zip(*_both_ways(device, body), ("view", "data alias", "root")):
        _pick(got, want, what)


def test_a_view_given_new_data_leaves_its_root(device):
    def body(lib, kw):
        p = lib.ones(4, **kw)
        v = p[0:2]
        v.data = lib.zeros(5, **kw).half()
        p.add_(1)
        return p * 1.0, v + 1.0

    for got, want, what in zip(*_both_ways(device, body), ("root", "former view")):
        _pick(got, want, what)


@pytest.mark.parametrize("op", ["+=", "*=", "-="])
def test_recorded_in_place_result_keeps_the_tensor_dtype(device, op):
    def body(lib, kw):
        w = lib.ones(3, **kw).requires_grad_()
        x = (w * 2).half()
        _ = x + 1.0
        exec(f"x {op} lib.full((3,), 0.5, **kw)", {"x": x, "lib": lib, "kw": kw})
        y = x * 3.0
        y.float().sum().backward()
        return y, w.grad

    for got, want, what in zip(*_both_ways(device, body), ("result", "gradient")):
        _pick(got, want, f"{op} {what}")
    x = tdx.ones(3, device=device).requires_grad_() * 2
    with pytest.raises(RuntimeError, match="can't be cast"):
        x += tdx.ones(3, dtype=tdx.complex64, device=device)
