"""float32 reductions that add in torch's order, so their last bit is torch's: ``sum`` and ``mean``
(over everything, trailing dims, leading dims), ``dot``, and the gradient of a broadcast ``+``/``-``
(a bias's gradient: torch's ``sum_to``). On the torch executor these are torch's own kernels; on
MLX's CPU (x86-64) the order is reproduced (``tdx/backends/mlx/_summation_order.py``). Sizes
cover the vector tail, the 4-way interleave and the 16-chunk cascade of aten's sum kernel and
MKL's sdot tails; elsewhere (other machines, larger reductions) MLX's own order is kept and the
results only agree to an ulp, so those cases skip. The reference is real torch on ``torch_twin(device)``:
on cuda, torch's CUDA kernels (their own order of additions), compared on the host."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import tdx
from conftest import torch_twin

RNG = np.random.default_rng(11)


def _exact(device):
    if device.startswith("mlx") and not tdx.backends.get(device).caps.float64:  # an MLX GPU stream
        pytest.skip("torch's order of additions is reproduced on MLX's CPU streams only")
    if device.startswith("mlx"):
        from tdx.backends.mlx import _summation_order

        if not _summation_order.ENABLED:
            pytest.skip("torch's order of additions is reproduced on x86-64 only")


def _bits(x):
    return x.detach().numpy(force=True) if isinstance(x, tdx.Tensor) else x.detach().cpu().numpy()


def _twin(device):
    """``torch.tensor`` building the reference where tdx promises torch's numbers for ``device``."""
    twin = torch_twin(device)
    return lambda data, **kw: torch.tensor(data, device=twin, **kw)


def _data(shape):
    # magnitudes spread over 2**-6..2**6: every order of additions rounds differently
    return (RNG.standard_normal(shape) * np.exp2(RNG.integers(-6, 7, shape))).astype(np.float32)


@pytest.mark.parametrize("n", [1, 3, 7, 8, 9, 16, 17, 48, 64, 100, 257, 1023, 4000])
@pytest.mark.float64
def test_sum_and_mean_of_everything(device, n):
    _exact(device)
    ref = _twin(device)
    for _ in range(3):  # fresh data each time: the first call builds the order, later ones run it compiled
        a = _data(n)
        x, t = tdx.tensor(a, device=device), ref(a)
        assert np.array_equal(_bits(x.sum()), _bits(t.sum()))
        assert np.array_equal(_bits(x.mean()), _bits(t.mean()))
    m = _data((n, 3))  # a matrix reads as one contiguous run
    assert np.array_equal(_bits(tdx.tensor(m, device=device).mean()), _bits(ref(m).mean()))


@pytest.mark.parametrize("shape", [(16, 8), (16, 3), (32, 16), (32, 1), (20, 70), (100, 5), (7, 33), (256, 20)])
@pytest.mark.float64
def test_sum_over_first_and_last_dims(device, shape):
    _exact(device)
    ref = _twin(device)
    a = _data(shape)
    x, t = tdx.tensor(a, device=device), ref(a)
    for dim in (0, 1, -1, (0, 1)):
        for keepdim in (False, True):
            assert np.array_equal(_bits(x.sum(dim, keepdim)), _bits(t.sum(dim, keepdim))), (dim, keepdim)
    assert np.array_equal(_bits(x.mean(0)), _bits(t.mean(0)))
    b = _data((2,) + shape)  # leading dims together (a batch of rows), trailing dims together
    xb, tb = tdx.tensor(b, device=device), ref(b)
    assert np.array_equal(_bits(xb.sum((0, 1))), _bits(tb.sum((0, 1))))
    assert np.array_equal(_bits(xb.sum((1, 2))), _bits(tb.sum((1, 2))))


@pytest.mark.parametrize("n", [4, 8, 12, 16, 28, 44, 64, 100, 1000, 4092])
@pytest.mark.float64
def test_dot(device, n):
    _exact(device)
    ref = _twin(device)
    for _ in range(3):  # fresh data each time: the first call builds the order, later ones run it compiled
        a, b = _data(n), _data(n)
        assert np.array_equal(_bits(tdx.tensor(a, device=device).dot(tdx.tensor(b, device=device))),
                              _bits(ref(a).dot(ref(b))))


@pytest.mark.parametrize("rows,cols", [(16, 8), (32, 16), (40, 3), (64, 40)])
@pytest.mark.float64
def test_bias_gradient_sums_as_torch(device, rows, cols):
    """``h + b`` and ``h - b`` with a broadcast ``b`` (1-D, and as a ``(1, cols)`` row): ``b``'s
    gradient is the cotangent summed over the rows, in torch's order."""
    _exact(device)
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
            assert np.array_equal(_bits(xb.grad), _bits(tb.grad)), (shape, op)
            assert np.array_equal(_bits(xh.grad), _bits(th.grad)), (shape, op)
    # the broadcast operand first, and a 3-D batch summed over two leading dims
    x3, t3 = _data((2, rows, cols)), None
    xb = tdx.tensor(b, device=device, requires_grad=True)
    tb = ref(b, requires_grad=True)
    (xb + tdx.tensor(x3, device=device)).square().sum().backward()
    t3 = ref(x3)
    (tb + t3).square().sum().backward()
    assert np.array_equal(_bits(xb.grad), _bits(tb.grad))


@pytest.mark.float64
def test_mlp_first_evaluation_is_torch_bit_for_bit(device):
    """One forward and backward of a tanh MLP with a mean loss: loss and every gradient equal
    torch's bit for bit (the mean, the bias gradient; the products' sums are short enough that
    MLX's matmul adds as torch's here)."""
    _exact(device)
    x, y = _data((16, 4)), _data((16, 3))
    w1, b1, w2 = _data((4, 8)) * 0.1, _data(8) * 0.1, _data((8, 3)) * 0.1
    grads = []
    for lib, kw in ((tdx, {"device": device}), (torch, {"device": torch_twin(device)})):
        p = [lib.tensor(v, requires_grad=True, **kw) for v in (w1, b1, w2)]
        loss = ((lib.tensor(x, **kw) @ p[0] + p[1]).tanh() @ p[2] - lib.tensor(y, **kw)).square().mean()
        loss.backward()
        grads.append([_bits(loss)] + [_bits(q.grad) for q in p])
    for got, expect in zip(*grads):
        assert np.array_equal(got, expect)


# shapes whose sum takes each plan of _summation_order.plan: MLX's own sum where torch's order is left to
# right (rows of 2..4 or 8, columns of up to 16 rows in whole blocks), three sums of a reshape (rows of
# 32..512 in whole vectors), the compiled graph (the rest); a sum of one element stays torch's +0.0
@pytest.mark.parametrize("shape,dim", [((6, 8), 1), ((5, 3), -1), ((16, 32), 0), ((4, 7), 0), ((3, 64), 1),
                                       ((64,), None), ((8, 8), None), ((2, 2, 96), (1, 2)), ((512,), 0),
                                       ((5,), None), ((17, 32), 0), ((1,), None), ((3, 1), 1), ((9, 3), 0)])
def test_each_summation_plan_is_torch_bit_for_bit(device, shape, dim):
    _exact(device)
    ref = _twin(device)
    for _ in range(3):  # the first call decides the plan, later ones reuse it
        a = _data(shape)
        x, t = tdx.tensor(a, device=device), ref(a)
        assert np.array_equal(_bits(x.sum(dim)).view(np.uint32), _bits(t.sum(dim)).view(np.uint32))
        assert np.array_equal(_bits(x.mean(dim)).view(np.uint32), _bits(t.mean(dim)).view(np.uint32))
    zeros = -np.zeros(shape, np.float32)  # torch's accumulators start at +0.0: a sum of -0.0s is +0.0
    got = _bits(tdx.tensor(zeros, device=device).sum(dim))
    assert np.array_equal(np.atleast_1d(got).view(np.uint32), np.atleast_1d(_bits(ref(zeros).sum(dim))).view(np.uint32))


def test_native_summation_is_a_choice(monkeypatch):
    """``[backends.mlx] summation = "native"`` (``TDX_MLX_SUMMATION``): MLX's own order, one MLX sum; the
    default is torch's. The 8x8 sum and a 1-D dot add in another order in MLX than in torch."""
    if not any(r.available for r in tdx.backends.available() if r.device == "mlx:cpu"):
        pytest.skip("needs mlx:cpu")
    _exact("mlx:cpu")
    import mlx.core as mx

    rng = np.random.default_rng(3)
    data = [(rng.standard_normal((8, 8)) * np.exp2(rng.integers(-12, 13, (8, 8)))).astype(np.float32)
            for _ in range(16)]
    monkeypatch.setenv("TDX_MLX_SUMMATION", "native")
    tdx.config.reload()
    try:
        assert tdx.config.current()["backends.mlx.summation"] == "native"
        for a in data:  # MLX's own sum, bit for bit
            x = tdx.tensor(a, device="mlx:cpu")
            assert _bits(x.sum()).view(np.uint32) == np.array(mx.sum(mx.array(a))).view(np.uint32)
            assert _bits(x[0] @ x[1]).view(np.uint32) == np.array(mx.matmul(mx.array(a[0]), mx.array(a[1]))).view(
                np.uint32)
    finally:
        monkeypatch.delenv("TDX_MLX_SUMMATION")
        tdx.config.reload()
    differ = 0
    for a in data:  # back to torch's order (the plans cached under "native" were dropped)
        x = tdx.tensor(a, device="mlx:cpu")
        assert _bits(x.sum()).view(np.uint32) == _bits(torch.tensor(a).sum()).view(np.uint32)
        differ += _bits(x.sum()).view(np.uint32) != np.array(mx.sum(mx.array(a))).view(np.uint32)
    assert differ, "the data should tell the two orders apart"


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
