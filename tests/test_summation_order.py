"""float32 reductions that add in torch's order, so their last bit is torch's: ``sum`` and ``mean``
(over everything, trailing dims, leading dims), ``dot``, and the gradient of a broadcast ``+``/``-``
(a bias's gradient: torch's ``sum_to``). On the torch executor these are torch's own kernels; on
MLX's CPU the order is reproduced (``tdx/backends/mlx/_summation_order.py``) where it was verified
against torch's kernels on the running CPU (``tdx/backends/mlx/_torch_order.py``): every check here
compares bit for bit where ``conftest.torch_order`` says torch's order is in force, and within float32
tolerance (naming why) where it is not (another CPU's order, an MLX GPU stream). Sizes cover the vector
tail, the 4-way interleave and the 16-chunk cascade of aten's sum kernel and MKL's sdot tails. The
reference is real torch on ``torch_twin(device)``: on cuda, torch's CUDA kernels (their own order of
additions), compared on the host."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import tdx
from conftest import torch_order, torch_twin

RNG = np.random.default_rng(11)


def _same(device, op, got, expect, scale, what=""):
    """``got`` equals ``expect`` bit for bit where torch's order of ``op`` is in force on ``device``, else
    within float32 rounding of sums whose terms' magnitudes add up to ``scale``."""
    promised, why = torch_order(device, op)
    g, e = np.atleast_1d(_bits(got)), np.atleast_1d(_bits(expect))
    if promised:
        assert g.shape == e.shape and np.array_equal(g.view(np.uint32), e.view(np.uint32)), what
    else:
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6 * scale,
                                   err_msg=f"{what} (torch's order is not in force: {why})")


def _bits(x):
    return x.detach().numpy(force=True) if isinstance(x, tdx.Tensor) else x.detach().cpu().numpy()


def _twin(device):
    """``torch.tensor`` building the reference where tdx promises torch's numbers for ``device``."""
    twin = torch_twin(device)
    return lambda data, **kw: torch.tensor(data, device=twin, **kw)


def _data(shape, rng=RNG):
    # magnitudes spread over 2**-6..2**6: every order of additions rounds differently
    return (rng.standard_normal(shape) * np.exp2(rng.integers(-6, 7, shape))).astype(np.float32)


@pytest.mark.parametrize("n", [1, 3, 7, 8, 9, 16, 17, 48, 64, 100, 257, 1023, 4000])
@pytest.mark.float64
def test_sum_and_mean_of_everything(device, n):
    ref = _twin(device)
    for _ in range(3):  # fresh data each time: the first call builds the order, later ones run it compiled
        a = _data(n)
        x, t = tdx.tensor(a, device=device), ref(a)
        scale = float(np.abs(a).sum())
        _same(device, "sum", x.sum(), t.sum(), scale, "sum")
        _same(device, "sum", x.mean(), t.mean(), scale / n, "mean")
    m = _data((n, 3))  # a matrix reads as one contiguous run
    _same(device, "sum", tdx.tensor(m, device=device).mean(), ref(m).mean(), float(np.abs(m).mean()), "matrix")


@pytest.mark.parametrize("shape", [(16, 8), (16, 3), (32, 16), (32, 1), (20, 70), (100, 5), (7, 33), (256, 20)])
@pytest.mark.float64
def test_sum_over_first_and_last_dims(device, shape):
    ref = _twin(device)
    a = _data(shape)
    x, t = tdx.tensor(a, device=device), ref(a)
    scale = float(np.abs(a).sum())
    for dim in (0, 1, -1, (0, 1)):
        for keepdim in (False, True):
            _same(device, "sum", x.sum(dim, keepdim), t.sum(dim, keepdim), scale, (dim, keepdim))
    _same(device, "sum", x.mean(0), t.mean(0), scale, "mean(0)")
    b = _data((2,) + shape)  # leading dims together (a batch of rows), trailing dims together
    xb, tb = tdx.tensor(b, device=device), ref(b)
    _same(device, "sum", xb.sum((0, 1)), tb.sum((0, 1)), float(np.abs(b).sum()), (0, 1))
    _same(device, "sum", xb.sum((1, 2)), tb.sum((1, 2)), float(np.abs(b).sum()), (1, 2))


@pytest.mark.parametrize("n", [4, 8, 12, 16, 28, 44, 64, 100, 1000, 4092])
@pytest.mark.float64
def test_dot(device, n):
    ref = _twin(device)
    for _ in range(3):  # fresh data each time: the first call builds the order, later ones run it compiled
        a, b = _data(n), _data(n)
        _same(device, "dot", tdx.tensor(a, device=device).dot(tdx.tensor(b, device=device)), ref(a).dot(ref(b)),
              float(np.abs(a * b).sum()))


@pytest.mark.parametrize("rows,cols", [(16, 8), (32, 16), (40, 3), (64, 40)])
@pytest.mark.float64
def test_bias_gradient_sums_as_torch(device, rows, cols):
    """``h + b`` and ``h - b`` with a broadcast ``b`` (1-D, and as a ``(1, cols)`` row): ``b``'s
    gradient is the cotangent summed over the rows, in torch's order."""
    ref = _twin(device)
    h, b, w = _data((rows, cols)), _data(cols), _data((rows, cols))
    for shape in ((cols,), (1, cols)):
        for op in ("add", "sub"):
            xb = tdx.tensor(b.reshape(shape), device=device, requires_grad=True)
            tb = ref(b.reshape(shape), requires_grad=True)
            xh = tdx.tensor(h, device=device, requires_grad=True)
            th = ref(h, requires_grad=True)
            (getattr(xh, op)(xb) * tdx.tensor(w, device=device)).sum().backward()
            (getattr(th, op)(tb) * ref(w)).sum().backward()
            _same(device, "sum", xb.grad, tb.grad, float(np.abs(w).sum()), (shape, op))
            assert np.array_equal(_bits(xh.grad), _bits(th.grad)), (shape, op)  # no sum: exact in any order
    # the broadcast operand first, and a 3-D batch summed over two leading dims
    x3, t3 = _data((2, rows, cols)), None
    xb = tdx.tensor(b, device=device, requires_grad=True)
    tb = ref(b, requires_grad=True)
    (xb + tdx.tensor(x3, device=device)).square().sum().backward()
    t3 = ref(x3)
    (tb + t3).square().sum().backward()
    _same(device, "sum", xb.grad, tb.grad, float(np.abs(2 * (x3 + b)).sum()), "3-D batch")


@pytest.mark.float64
def test_mlp_first_evaluation_is_torch_bit_for_bit(device):
    """One forward and backward of a tanh MLP with a mean loss: loss and every gradient equal
    torch's bit for bit where torch's order of sums and tanh's rounding are in force (the mean, the
    bias gradient, tanh and its derivative; the products' sums are short enough that MLX's matmul
    adds as torch's here), else within float32 tolerance. The data is the test's own (a fixed seed,
    whatever ran before): torch's tanh misses the correctly rounded value in ~1 element of 2000, on
    which its bits are not promised."""
    rng = np.random.default_rng(2)
    x, y = _data((16, 4), rng), _data((16, 3), rng)
    w1, b1, w2 = _data((4, 8), rng) * 0.1, _data(8, rng) * 0.1, _data((8, 3), rng) * 0.1
    grads = []
    for lib, kw in ((tdx, {"device": device}), (torch, {"device": torch_twin(device)})):
        p = [lib.tensor(v, requires_grad=True, **kw) for v in (w1, b1, w2)]
        loss = ((lib.tensor(x, **kw) @ p[0] + p[1]).tanh() @ p[2] - lib.tensor(y, **kw)).square().mean()
        loss.backward()
        grads.append([_bits(loss)] + [_bits(q.grad) for q in p])
    promised, why = torch_order(device, "sum", "tanh", "multiply_add")
    for name, got, expect in zip(("loss", "w1", "b1", "w2"), *grads):
        if promised:
            assert np.array_equal(np.atleast_1d(got).view(np.uint32), np.atleast_1d(expect).view(np.uint32)), name
        else:
            np.testing.assert_allclose(got, expect, rtol=1e-5, atol=1e-6 * float(np.abs(expect).max()),
                                       err_msg=f"{name} (torch's order is not in force: {why})")


# shapes whose sum takes each plan of _summation_order.plan: MLX's own sum where torch's order is left to
# right (rows of 2..4 or 8, columns of up to 16 rows in whole blocks), three sums of a reshape (rows of
# 32..512 in whole vectors), the compiled graph (the rest); a sum of one element stays torch's +0.0
@pytest.mark.parametrize("shape,dim", [((6, 8), 1), ((5, 3), -1), ((16, 32), 0), ((4, 7), 0), ((3, 64), 1),
                                       ((64,), None), ((8, 8), None), ((2, 2, 96), (1, 2)), ((512,), 0),
                                       ((5,), None), ((17, 32), 0), ((1,), None), ((3, 1), 1), ((9, 3), 0)])
def test_each_summation_plan_is_torch_bit_for_bit(device, shape, dim):
    ref = _twin(device)
    for _ in range(3):  # the first call decides the plan, later ones reuse it
        a = _data(shape)
        x, t = tdx.tensor(a, device=device), ref(a)
        scale = float(np.abs(a).sum())
        _same(device, "sum", x.sum(dim), t.sum(dim), scale, "sum")
        _same(device, "sum", x.mean(dim), t.mean(dim), scale, "mean")
    zeros = -np.zeros(shape, np.float32)  # torch's accumulators start at +0.0: a sum of -0.0s is +0.0
    _same(device, "sum", tdx.tensor(zeros, device=device).sum(dim), ref(zeros).sum(dim), 0.0, "-0.0s")


def _has_mlx_cpu() -> bool:
    return any(r.available for r in tdx.backends.available() if r.device == "mlx:cpu")


def test_native_summation_is_a_choice(monkeypatch):
    """``[backends.mlx] summation = "native"`` (``TDX_MLX_SUMMATION``): MLX's own order, one MLX sum; the
    default is torch's where verified on this CPU (else MLX's own too). The 8x8 sum and a 1-D dot add in
    another order in MLX than in torch."""
    if not _has_mlx_cpu():
        pytest.skip("needs mlx:cpu")
    import mlx.core as mx

    rng = np.random.default_rng(3)
    data = [(rng.standard_normal((8, 8)) * np.exp2(rng.integers(-12, 13, (8, 8)))).astype(np.float32)
            for _ in range(16)]
    monkeypatch.setenv("TDX_MLX_SUMMATION", "native")
    tdx.config.reload()
    try:
        assert tdx.config.current()["backends.mlx.summation"] == "native"
        assert torch_order("mlx:cpu", "sum") == (False, "[backends.mlx] summation is not \"torch\"")
        for a in data:  # MLX's own sum, bit for bit
            x = tdx.tensor(a, device="mlx:cpu")
            assert _bits(x.sum()).view(np.uint32) == np.array(mx.sum(mx.array(a))).view(np.uint32)
            assert _bits(x[0] @ x[1]).view(np.uint32) == np.array(mx.matmul(mx.array(a[0]), mx.array(a[1]))).view(
                np.uint32)
    finally:
        monkeypatch.delenv("TDX_MLX_SUMMATION")
        tdx.config.reload()
    differ = 0
    promised, why = torch_order("mlx:cpu", "sum")
    for a in data:  # back to torch's order (the plans cached under "native" were dropped)
        x = tdx.tensor(a, device="mlx:cpu")
        got, own = _bits(x.sum()).view(np.uint32), np.array(mx.sum(mx.array(a))).view(np.uint32)
        if promised:
            assert got == _bits(torch.tensor(a).sum()).view(np.uint32)
            differ += got != own
        else:  # torch's order not verified on this CPU: MLX's own
            assert got == own, why
    assert differ or not promised, "the data should tell the two orders apart"


def _disagreeing_reference(host, arr):
    """A reference that is not torch's: torch's kernels on the values reversed (another order of additions,
    other elements), so no probe can match."""
    return host.from_host(arr[::-1].copy(), None)


@pytest.mark.float64
def test_an_order_torch_does_not_take_here_is_switched_off(monkeypatch):
    """Where the probe finds torch taking another order (forced: the reference disagrees), every op class
    is switched off: sums and 1-D dots are MLX's own, multiply-adds round the product and the sum apart,
    tanh's derivative too; results stay within float32 tolerance of torch's. The verdict names why."""
    if not _has_mlx_cpu():
        pytest.skip("needs mlx:cpu")
    import mlx.core as mx

    from tdx.backends.mlx import _torch_order

    monkeypatch.setattr(_torch_order, "_torch", _disagreeing_reference)
    _torch_order._forget()
    tdx.config.reload()  # drops the MLX executor's cached sum plans
    try:
        verdicts = _torch_order.report()
        assert not any(v.torch_bits for v in verdicts.values()), verdicts
        assert verdicts["sum"].order == verdicts["dot"].order == "native"
        assert verdicts["multiply_add"].order == verdicts["tanh"].order == "rounded"
        assert "another order" in verdicts["sum"].reason and "capability" in verdicts["sum"].reason
        assert torch_order("mlx:cpu", "sum")[0] is False
        rng = np.random.default_rng(4)
        differ = 0
        for shape in ((8, 8), (100,), (16, 33)):
            a = _data(shape, rng)
            got = _bits(tdx.tensor(a, device="mlx:cpu").sum())
            assert got.view(np.uint32) == np.array(mx.sum(mx.array(a))).view(np.uint32)  # MLX's own
            np.testing.assert_allclose(got, torch.tensor(a).sum().numpy(), rtol=1e-5, atol=1e-6 * np.abs(a).sum())
            differ += got.view(np.uint32) != torch.tensor(a).sum().numpy().view(np.uint32)
        u, v = _data(1000, rng), _data(1000, rng)
        got = _bits(tdx.tensor(u, device="mlx:cpu").dot(tdx.tensor(v, device="mlx:cpu")))
        assert got.view(np.uint32) == np.array(mx.matmul(mx.array(u), mx.array(v))).view(np.uint32)
        np.testing.assert_allclose(got, torch.tensor(u).dot(torch.tensor(v)).numpy(), rtol=1e-5,
                                   atol=1e-6 * np.abs(u * v).sum())
        got = _bits(tdx.add(tdx.tensor(u, device="mlx:cpu"), tdx.tensor(v, device="mlx:cpu"), alpha=0.37))
        assert np.array_equal(got, u + np.float32(0.37) * v)  # the product rounded, then the sum
        np.testing.assert_allclose(got, torch.add(torch.tensor(u), torch.tensor(v), alpha=0.37).numpy(),
                                   rtol=1e-6, atol=1e-6)
        x = tdx.tensor(u / 16, device="mlx:cpu", requires_grad=True)
        x.tanh().backward(tdx.tensor(v, device="mlx:cpu"))
        y = np.tanh((u / 16).astype(np.float64)).astype(np.float32)
        assert np.array_equal(_bits(x.grad), v * (np.float32(1) - y * y))
        assert differ, "the data should tell the two orders apart"
    finally:
        monkeypatch.undo()
        _torch_order._forget()
        tdx.config.reload()
    assert _torch_order.report()["sum"].reason != verdicts["sum"].reason  # probed again with torch itself


def test_the_probe_touches_no_generator_and_no_torch_setting():
    """Verifying the orders (once per process, on first need) draws from no generator (torch's, NumPy's,
    MLX's global key), leaves torch's threads and grad mode as they were, and answers every op class with
    torch's CPU capability in its reason."""
    if not _has_mlx_cpu():
        pytest.skip("needs mlx:cpu")
    import mlx.core as mx

    from tdx.backends.mlx import _torch_order

    torch.manual_seed(5)
    np.random.seed(5)
    mx.random.seed(5)
    before = (torch.get_rng_state().clone(), np.random.get_state()[1].copy(), np.array(mx.random.state[0]),
              torch.get_num_threads(), torch.get_num_interop_threads(), torch.is_grad_enabled())
    _torch_order._forget()
    with torch.no_grad():
        verdicts = _torch_order.report()
        assert not torch.is_grad_enabled()
    after = (torch.get_rng_state(), np.random.get_state()[1], np.array(mx.random.state[0]), torch.get_num_threads(),
             torch.get_num_interop_threads(), torch.is_grad_enabled())
    assert torch.equal(before[0], after[0]) and np.array_equal(before[1], after[1])
    assert np.array_equal(before[2], after[2]) and before[3:] == after[3:]
    capability = torch.backends.cpu.get_cpu_capability()
    assert set(verdicts) == set(_torch_order.OP_CLASSES)
    assert all(capability in v.reason for v in verdicts.values()), verdicts
    assert set(_torch_order.probe_seconds()) == set(_torch_order.OP_CLASSES)


def test_without_torch_no_order_is_claimed(monkeypatch):
    """Where torch is not installed (the registry has no torch executor) nothing is verified: every op class
    keeps MLX's own arithmetic and a sum is MLX's own sum."""
    if not _has_mlx_cpu():
        pytest.skip("needs mlx:cpu")
    import mlx.core as mx

    from tdx.backends.mlx import _torch_order

    monkeypatch.setattr(_torch_order, "_host", lambda: (None, None))
    _torch_order._forget()
    tdx.config.reload()
    try:
        verdicts = _torch_order.report()
        assert [v.torch_bits for v in verdicts.values()] == [False] * len(_torch_order.OP_CLASSES)
        assert all("torch is not installed" in v.reason for v in verdicts.values())
        a = _data((8, 8), np.random.default_rng(6))
        got = _bits(tdx.tensor(a, device="mlx:cpu").sum())
        assert got.view(np.uint32) == np.array(mx.sum(mx.array(a))).view(np.uint32)
    finally:
        monkeypatch.undo()
        _torch_order._forget()
        tdx.config.reload()


def test_bad_summation_is_a_config_error(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tdx.toml").write_text('[backends.mlx]\nsummation = "fast"\n')
    with pytest.raises(tdx.ConfigError, match=r"backends.mlx.summation.*'torch', 'native'"):
        tdx.config.reload()
    (tmp_path / "tdx.toml").unlink()
    monkeypatch.setenv("TDX_MLX_SUMMATION", "pairwise")
    with pytest.raises(tdx.ConfigError, match="TDX_MLX_SUMMATION"):
        tdx.config.reload()
    monkeypatch.delenv("TDX_MLX_SUMMATION")
    tdx.config.reload()
