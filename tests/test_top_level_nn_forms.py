"""The ``torch.*`` forms of nn operations (ATen's argument orders: ``torch.batch_norm``,
``torch.dropout``, ``torch.lstm``, ``torch.kl_div`` with an int reduction...), on every device,
against torch on CPU.

float32 tolerances: 1e-5 relative where a reduction or a recurrence sums a few dozen terms;
1e-6 for elementwise forms.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import tdx
from conftest import torch_twin
from tdx.testing.parity import assert_close

RTOL = 1e-5
ATOL = 1e-6


def arr(*shape, seed=0, low=-2.0, high=2.0):
    return np.random.default_rng(seed).uniform(low, high, shape).astype(np.float32)


def both(device, a):
    return tdx.tensor(a, device=device), torch.tensor(a)


def same(name, device, *arrays, extra=(), kw=None, rtol=RTOL, atol=ATOL):
    """``tdx.<name>`` and ``torch.<name>`` on the same arrays (then ``extra`` plain arguments)."""
    kw = kw or {}
    ours = [tdx.tensor(a, device=device) if isinstance(a, np.ndarray) else a for a in arrays]
    theirs = [torch.tensor(a) if isinstance(a, np.ndarray) else a for a in arrays]
    got, want = getattr(tdx, name)(*ours, *extra, **kw), getattr(torch, name)(*theirs, *extra, **kw)
    if isinstance(want, (tuple, list)):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert_close(g, w, rtol=rtol, atol=atol, msg=name)
    else:
        assert_close(got, want, rtol=rtol, atol=atol, msg=name)
    return got


def test_batch_and_instance_norm(device):
    x = arr(4, 3, 5)
    w, b = arr(3, seed=1), arr(3, seed=2)
    rm, rv = arr(3, seed=3), arr(3, seed=4, low=0.5, high=2.0)
    same("batch_norm", device, x, w, b, rm, rv, extra=(False, 0.1, 1e-5, False))
    xs, ts = both(device, x)
    rm_x, rm_t = both(device, rm)
    rv_x, rv_t = both(device, rv)
    assert_close(tdx.batch_norm(xs, None, None, rm_x, rv_x, True, 0.3, 1e-5, True),
                 torch.batch_norm(ts, None, None, rm_t, rv_t, True, 0.3, 1e-5, True), rtol=RTOL, atol=ATOL)
    assert_close(rm_x, rm_t, rtol=RTOL, atol=ATOL) and assert_close(rv_x, rv_t, rtol=RTOL, atol=ATOL)
    same("instance_norm", device, x, w, b, None, None, extra=(True, 0.1, 1e-5, False))
    same("rms_norm", device, x, [5], arr(5, seed=5), kw={"eps": 1e-6})
    same("norm_except_dim", device, arr(3, 4), extra=(2, 0))
    same("norm_except_dim", device, arr(3, 4), extra=(2, 1))


def test_batch_norm_statistics_forms(device):
    x = arr(6, 3, 4)
    t = torch.tensor(x)
    # torch runs batch_norm_stats and batch_norm_elemt on CUDA only: the oracle is their definition in torch ops
    mean_t = t.mean((0, 2))
    invstd_t = (t.var((0, 2), correction=0) + 1e-5).rsqrt()
    mean, invstd = tdx.batch_norm_stats(tdx.tensor(x, device=device), 1e-5)
    assert_close(mean, mean_t, rtol=RTOL, atol=ATOL) and assert_close(invstd, invstd_t, rtol=RTOL, atol=ATOL)
    w, b = arr(3, seed=1), arr(3, seed=2)
    want = (t - mean_t[:, None]) * invstd_t[:, None] * torch.tensor(w)[:, None] + torch.tensor(b)[:, None]
    got = tdx.batch_norm_elemt(tdx.tensor(x, device=device), tdx.tensor(w, device=device),
                               tdx.tensor(b, device=device), mean, invstd, 1e-5)
    assert_close(got, want, rtol=RTOL, atol=ATOL)
    same("batch_norm_update_stats", device, x, arr(3, seed=3), arr(3, seed=4, low=0.5), extra=(0.1,))


def test_dropouts(device):
    x = arr(3, 4, 5) + 3
    for name in ("dropout", "feature_dropout"):
        same(name, device, x, extra=(0.5, False))
        same(name, device, x, extra=(0.0, True))
        same(name, device, x, extra=(1.0, True))
    for name in ("dropout_", "alpha_dropout_", "feature_alpha_dropout_", "feature_dropout_"):
        xs, _ = both(device, x)
        assert getattr(tdx, name)(xs, 0.5, False) is xs and xs.tolist() == x.tolist()
    tdx.manual_seed(0)
    big = tdx.ones(200, 50, 2, device=device)
    out = tdx.feature_dropout(big, 0.5, True)  # whole channels: every (n, c) row all zero or all 2
    rows = out.reshape(200 * 50, 2)
    assert ((rows[:, 0] == rows[:, 1]).all().item() and set(rows.unique().tolist()) == {0.0, 2.0})
    frac = (rows[:, 0] == 0).to(tdx.float32).mean().item()
    assert 0.45 < frac < 0.55  # 10000 channels: 5 standard deviations
    with pytest.raises(TypeError) as info:
        tdx.dropout(big, 0.5, 1)
    assert isinstance(info.value, tdx.TdxError)


def test_embedding_forms(device):
    w = arr(6, 3)
    idx = np.array([[0, 2], [5, 2]])
    got = same("embedding", device, w, idx)
    assert tuple(got.shape) == (2, 2, 3)
    same("embedding", device, w, idx, extra=(2,))
    ws, wt = both(device, w * 3)
    i_x, i_t = tdx.tensor(idx, device=device), torch.tensor(idx)
    assert tdx.embedding_renorm_(ws, i_x, 1.0, 2.0) is ws
    torch.embedding_renorm_(wt, i_t, 1.0, 2.0)
    assert_close(ws, wt, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("reduction", [0, 1, 2])
def test_losses_with_int_reductions(device, reduction):
    a, b, c = arr(4, 5), arr(4, 5, seed=1), arr(4, 5, seed=2)
    sign = np.where(arr(4, seed=3) > 0, 1.0, -1.0).astype(np.float32)
    sign5 = np.where(arr(4, 5, seed=4) > 0, 1.0, -1.0).astype(np.float32)
    same("kl_div", device, a, np.abs(b) / 4, extra=(reduction,))
    same("kl_div", device, a, b, extra=(reduction,), kw={"log_target": True})
    same("hinge_embedding_loss", device, a, sign5, extra=(1.0, reduction))
    same("margin_ranking_loss", device, a, b, sign5, extra=(0.2, reduction))
    same("cosine_embedding_loss", device, a, b, sign, extra=(0.1, reduction))
    same("triplet_margin_loss", device, a, b, c, extra=(1.0, 2.0, 1e-6, True, reduction))
    same("poisson_nll_loss", device, a, np.abs(b), extra=(True, True, 1e-8, reduction))
    same("binary_cross_entropy_with_logits", device, a, (b > 0).astype(np.float32), arr(5, seed=5, low=0.1),
         arr(5, seed=6, low=0.1), extra=(reduction,))


def test_ctc_loss(device):
    t_len, n, classes = 6, 2, 4
    logp = torch.tensor(arr(t_len, n, classes)).log_softmax(2).numpy()
    targets = np.array([[1, 2, 1], [3, 3, 0]])
    for reduction in (0, 1, 2):
        same("ctc_loss", device, logp, targets, [6, 5], [3, 2], extra=(0, reduction, False))


def test_activation_forms(device):
    x = arr(3, 7)
    same("rrelu", device, x)
    same("selu", device, x)
    same("threshold", device, x, extra=(0.5, -1.0))
    for name, extra in (("selu_", ()), ("threshold_", (0.5, -1.0)), ("rrelu_", ())):
        xs, ts = both(device, x)
        assert getattr(tdx, name)(xs, *extra) is xs
        getattr(torch, name)(ts, *extra)
        assert_close(xs, ts, rtol=1e-6, atol=1e-6)
    tdx.manual_seed(0)
    y = tdx.rrelu(tdx.full((4000,), -1.0, device=device), 0.1, 0.3, True)
    assert -0.3 <= y.min().item() and y.max().item() <= -0.1 and y.unique().numel() > 100


def test_convolution_forms(device):
    x, w, b = arr(2, 3, 9), arr(4, 3, 3, seed=1), arr(4, seed=2)
    same("convolution", device, x, w, b, extra=([2], [1], [1], False, [0], 1))
    same("convolution", device, arr(2, 4, 5), arr(4, 2, 3, seed=3), None, extra=([2], [1], [1], True, [1], 2))
    x2, w2 = arr(1, 2, 5, 5), arr(4, 1, 3, 3, seed=4)
    same("convolution", device, x2, w2, None, extra=([1, 1], [0, 1], [1, 1], False, [0, 0], 2))
    same("conv_tbc", device, arr(7, 2, 3), arr(3, 3, 5, seed=5), arr(5, seed=6), extra=(1,))
    same("affine_grid_generator", device, arr(2, 2, 3), extra=([2, 1, 4, 5], False))
    same("adaptive_max_pool1d", device, arr(2, 3, 10), extra=([4],))


def _rnn_params(mode, input_size, hidden, layers, bidirectional, seed):
    gates = {"lstm": 4, "gru": 3}.get(mode, 1)
    out = []
    for layer in range(layers):
        for _ in range(2 if bidirectional else 1):
            size_in = input_size if layer == 0 else hidden * (2 if bidirectional else 1)
            seed += 4
            out += [arr(gates * hidden, size_in, seed=seed, low=-0.5, high=0.5),
                    arr(gates * hidden, hidden, seed=seed + 1, low=-0.5, high=0.5),
                    arr(gates * hidden, seed=seed + 2, low=-0.5, high=0.5),
                    arr(gates * hidden, seed=seed + 3, low=-0.5, high=0.5)]
    return out


@pytest.mark.parametrize("mode", ["lstm", "gru", "rnn_tanh", "rnn_relu"])
@pytest.mark.parametrize("bidirectional,batch_first", [(False, False), (True, True)])
def test_recurrent_forms(device, mode, bidirectional, batch_first):
    layers, hidden, n, t_len, size_in = 2, 3, 2, 4, 5
    x = arr(n, t_len, size_in) if batch_first else arr(t_len, n, size_in)
    params = _rnn_params(mode, size_in, hidden, layers, bidirectional, 10)
    h0 = arr(layers * (2 if bidirectional else 1), n, hidden, seed=7)
    rest = (True, layers, 0.0, False, bidirectional, batch_first)
    twin = torch_twin(device)  # torch's fused recurrence on the device itself: cuDNN's (TF32) one on cuda

    def T(a):
        return torch.tensor(a, device=twin)

    if mode == "lstm":
        c0 = arr(*h0.shape, seed=8)
        got = tdx.lstm(tdx.tensor(x, device=device), [tdx.tensor(h0, device=device), tdx.tensor(c0, device=device)],
                       [tdx.tensor(p, device=device) for p in params], *rest)
        want = torch.lstm(T(x), [T(h0), T(c0)], [T(p) for p in params], *rest)
    else:
        got = getattr(tdx, mode)(tdx.tensor(x, device=device), tdx.tensor(h0, device=device),
                                 [tdx.tensor(p, device=device) for p in params], *rest)
        want = getattr(torch, mode)(T(x), T(h0), [T(p) for p in params], *rest)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert_close(g, w, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("mode", ["lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell"])
def test_recurrent_cells(device, mode):
    gates = {"lstm_cell": 4, "gru_cell": 3}.get(mode, 1)
    x, h = arr(2, 5), arr(2, 3, seed=1)
    w_ih, w_hh = arr(gates * 3, 5, seed=2, low=-0.5, high=0.5), arr(gates * 3, 3, seed=3, low=-0.5, high=0.5)
    b_ih, b_hh = arr(gates * 3, seed=4), arr(gates * 3, seed=5)
    if mode == "lstm_cell":
        c = arr(2, 3, seed=6)
        got = tdx.lstm_cell(tdx.tensor(x, device=device), [tdx.tensor(h, device=device), tdx.tensor(c, device=device)],
                            *(tdx.tensor(a, device=device) for a in (w_ih, w_hh, b_ih, b_hh)))
        want = torch.lstm_cell(torch.tensor(x), [torch.tensor(h), torch.tensor(c)],
                               *(torch.tensor(a) for a in (w_ih, w_hh, b_ih, b_hh)))
        for g, w in zip(got, want):
            assert_close(g, w, rtol=RTOL, atol=ATOL)
        return
    same(mode, device, x, h, w_ih, w_hh, b_ih, b_hh)
    same(mode, device, x, h, w_ih, w_hh)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_fake_quantize(device, dtype):
    x = arr(4, 5, low=-3, high=3).astype(dtype)
    x[0, :3] = [0.15, 0.25, -0.05]  # exact halves on the grid: round half to even, as ATen's nearbyint
    results = []
    for m, dev in ((tdx, device), (torch, "cpu")):
        a = m.tensor(x, device=dev, requires_grad=True)
        out = m.fake_quantize_per_tensor_affine(a, 0.1, 3, -10, 20)
        (out * out).sum().backward()
        scale, zp = m.tensor([0.1, 0.05, 0.2, 0.3], device=dev), m.tensor([0, 2, -1, 5], dtype=m.int32, device=dev)
        b = m.tensor(x, device=dev, requires_grad=True)
        per_channel = m.fake_quantize_per_channel_affine(b, scale, zp, 0, -8, 7)
        per_channel.sum().backward()
        tensor_qparams = m.fake_quantize_per_tensor_affine(a.detach(), m.tensor(0.2, device=dev),
                                                           m.tensor(1, dtype=m.int32, device=dev), 0, 15)
        results.append([v.detach().cpu().numpy() for v in (out, a.grad, per_channel, b.grad, tensor_qparams)])
    for got, want in zip(*results):
        np.testing.assert_array_equal(got, want)
    for bad in ((0.1, 30, -10, 20), (0.1, 0, 5, 2)):
        with pytest.raises(RuntimeError):
            torch.fake_quantize_per_tensor_affine(torch.tensor(x), *bad)
        with pytest.raises(RuntimeError) as info:
            tdx.fake_quantize_per_tensor_affine(tdx.tensor(x, device=device), *bad)
        assert isinstance(info.value, tdx.TdxError)
