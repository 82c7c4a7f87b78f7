"""``tdx.nn`` recurrent layers and ``tdx.nn.utils.rnn`` against torch, on every device.

Each test builds the torch module on CPU, loads its state dict into the tdx module, moves it with
``model.to(device)`` and compares outputs, final states, input, state and parameter gradients
(float32, and float64 where the device has it) with torch's run on the device's ``torch_twin``
(the device itself for the torch executor, whose recurrent layers are torch's fused kernels: cuDNN's,
TF32 in float32, on cuda; CPU for MLX). Parameter names, order and the seeded default
init must be torch's bit for bit on cpu, and a 2-layer LSTM language model trained 20 SGD steps
must reproduce torch's losses exactly on cpu and within 1e-4 relative on mlx:cpu.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.utils.rnn as TR

import tdx
import tdx.nn as xnn
import tdx.nn.utils.rnn as XR
from conftest import torch_twin
from tdx.testing.parity import TOLERANCE_TABLE, assert_close

# float32 recurrences over a few steps: accumulated rounding differs between BLAS kernels (MLX's
# reference BLAS, torch's oneDNN LSTM), so float32 uses 1e-5 relative / 1e-5 absolute
TOL = {d: dict(zip(("rtol", "atol"), tol)) for d, tol in TOLERANCE_TABLE["recurrence"].items()}
DTYPES = ["float32", "float64"]


def to_tdx(t, device, dtype=None, grad=False):
    x = tdx.tensor(t.detach().cpu().numpy(), device=device)
    if dtype is not None:
        x = x.to(getattr(tdx, dtype))
    if grad:
        x.requires_grad_(True)
    return x


def make_pair(name, device, dtype, *args, **kwargs):
    """(torch module on ``device``'s torch twin, tdx module on ``device`` holding the same state) for
    ``nn.<name>``."""
    torch.manual_seed(0)
    tm = getattr(torch.nn, name)(*args, **kwargs).to(getattr(torch, dtype))
    xm = getattr(xnn, name)(*args, **kwargs, device="cpu")
    xm.load_state_dict({k: to_tdx(v, "cpu") for k, v in tm.state_dict().items()})
    xm.to(device)
    xm.to(getattr(tdx, dtype))
    return tm.to(torch_twin(device)), xm


def rand(*shape, seed=1, dtype="float32", on="cpu"):
    """Standard normal draws from a seeded CPU generator, placed on ``on``."""
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g, dtype=getattr(torch, dtype)).to(on)


def leaf(t):
    return t.clone().requires_grad_(True)


def flat(out):
    """All tensors of a (possibly nested) result."""
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in flat(o)]
    if isinstance(out, (TR.PackedSequence, XR.PackedSequence)):
        return [out.data]
    return [out]


def compare(x_out, t_out, dtype):
    xs, ts = flat(x_out), flat(t_out)
    assert len(xs) == len(ts)
    for a, e in zip(xs, ts):
        assert tuple(a.shape) == tuple(e.shape)
        assert_close(a, e.detach(), **TOL[dtype])


def backward_both(x_out, t_out):
    """Backward of the same weighted sum of every output on both sides."""
    total_t, total_x = 0, 0
    for k, (a, e) in enumerate(zip(flat(x_out), flat(t_out))):
        w = rand(*e.shape, seed=100 + k, dtype=str(e.dtype).split(".")[-1], on=e.device)
        total_t = total_t + (e * w).sum()
        total_x = total_x + (a * to_tdx(w, a.device.type if a.device.type == "cpu" else str(a.device))).sum()
    total_t.backward()
    total_x.backward()


def compare_grads(xm, tm, dtype):
    for (n, p), (n2, q) in zip(xm.named_parameters(), tm.named_parameters()):
        assert n == n2
        assert p.grad is not None, n
        assert_close(p.grad, q.grad, msg=n, **TOL[dtype])


def skip_f64(device, dtype):
    if dtype == "float64" and device.startswith("mlx:gpu"):
        pytest.skip("MLX has no float64 on its GPU")


CASES = [
    ("RNN", dict(num_layers=2)),
    ("RNN", dict(nonlinearity="relu", bidirectional=True)),
    ("LSTM", dict(num_layers=2, bidirectional=True)),
    ("LSTM", dict(num_layers=2, proj_size=3, batch_first=True)),
    ("GRU", dict(num_layers=2, bidirectional=True, batch_first=True)),
    ("GRU", dict(bias=False)),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name,kw", CASES, ids=[f"{n}-{'-'.join(k)}" for n, k in CASES])
def test_layers_match_torch(device, dtype, name, kw):
    skip_f64(device, dtype)
    tm, xm = make_pair(name, device, dtype, 4, 5, **kw)
    tw = torch_twin(device)
    dirs = 2 if kw.get("bidirectional") else 1
    layers = kw.get("num_layers", 1)
    hsize = kw.get("proj_size") or 5
    x_t = leaf(rand(3, 6, 4, dtype=dtype, on=tw) if kw.get("batch_first") else rand(6, 3, 4, dtype=dtype, on=tw))
    h_t = leaf(rand(layers * dirs, 3, hsize, seed=2, dtype=dtype, on=tw))
    hx_t = (h_t, leaf(rand(layers * dirs, 3, 5, seed=3, dtype=dtype, on=tw))) if name == "LSTM" else h_t
    x = to_tdx(x_t, device, grad=True)
    hx = tuple(to_tdx(h, device, grad=True) for h in hx_t) if name == "LSTM" else to_tdx(hx_t, device, grad=True)
    t_out, x_out = tm(x_t, hx_t), xm(x, hx)
    compare(x_out, t_out, dtype)
    backward_both(x_out, t_out)
    assert_close(x.grad, x_t.grad, **TOL[dtype])
    for a, e in zip(hx if name == "LSTM" else (hx,), hx_t if name == "LSTM" else (hx_t,)):
        assert_close(a.grad, e.grad, **TOL[dtype])
    compare_grads(xm, tm, dtype)


@pytest.mark.parametrize("name,kw", [("LSTM", dict(num_layers=2, bidirectional=True)),
                                     ("LSTM", dict(proj_size=2, bidirectional=True)),
                                     ("GRU", dict(bidirectional=True)), ("RNN", dict(num_layers=2))])
def test_packed_input_and_output(device, name, kw):
    tm, xm = make_pair(name, device, "float32", 4, 5, **kw)
    tw = torch_twin(device)
    lengths = [3, 5, 1, 4]  # unsorted: enforce_sorted=False keeps the permutation
    x_t = leaf(rand(5, 4, 4, on=tw))
    x = to_tdx(x_t, device, grad=True)
    tp = TR.pack_padded_sequence(x_t, lengths, enforce_sorted=False)
    xp = XR.pack_padded_sequence(x, tdx.tensor(lengths), enforce_sorted=False)
    assert xp.batch_sizes.tolist() == tp.batch_sizes.tolist()
    assert xp.sorted_indices.tolist() == tp.sorted_indices.tolist()
    dirs, layers = (2 if kw.get("bidirectional") else 1), kw.get("num_layers", 1)
    h0_t = leaf(rand(dirs * layers, 4, kw.get("proj_size") or 5, seed=4, on=tw))  # in the batch's original order
    hx_t = (h0_t, leaf(rand(dirs * layers, 4, 5, seed=5, on=tw))) if name == "LSTM" else h0_t
    hx = tuple(to_tdx(h, device, grad=True) for h in hx_t) if name == "LSTM" else to_tdx(hx_t, device, grad=True)
    t_out, t_h = tm(tp, hx_t)
    x_out, x_h = xm(xp, hx)
    assert isinstance(x_out, XR.PackedSequence)
    compare((x_out, x_h), (t_out, t_h), "float32")
    t_pad, t_len = TR.pad_packed_sequence(t_out, batch_first=True, total_length=6)
    x_pad, x_len = XR.pad_packed_sequence(x_out, batch_first=True, total_length=6)
    assert x_len.tolist() == t_len.tolist()
    compare(x_pad, t_pad, "float32")
    backward_both((x_pad, x_h), (t_pad, t_h))
    assert_close(x.grad, x_t.grad, **TOL["float32"])
    for a, e in zip(flat(hx), flat(hx_t)):
        assert_close(a.grad, e.grad, **TOL["float32"])
    compare_grads(xm, tm, "float32")


@pytest.mark.parametrize("name", ["RNN", "LSTM", "GRU"])
def test_unbatched_and_default_state(device, name):
    tm, xm = make_pair(name, device, "float32", 3, 4)
    x_t = rand(5, 3, on=torch_twin(device))
    compare(xm(to_tdx(x_t, device)), tm(x_t), "float32")
    x_t = rand(5, 2, 3, on=torch_twin(device))
    compare(xm(to_tdx(x_t, device)), tm(x_t), "float32")


@pytest.mark.parametrize("name", ["RNNCell", "LSTMCell", "GRUCell"])
@pytest.mark.parametrize("batched", [True, False])
def test_cells(device, name, batched):
    tm, xm = make_pair(name, device, "float32", 3, 4)
    tw = torch_twin(device)
    x_t = leaf(rand(2, 3, on=tw) if batched else rand(3, on=tw))
    h_t = leaf(rand(2, 4, seed=5, on=tw) if batched else rand(4, seed=5, on=tw))
    state_t = (h_t, leaf(rand(*h_t.shape, seed=6, on=tw))) if name == "LSTMCell" else h_t
    x = to_tdx(x_t, device, grad=True)
    state = tuple(to_tdx(s, device, grad=True) for s in state_t) if name == "LSTMCell" else \
        to_tdx(state_t, device, grad=True)
    t_out, x_out = tm(x_t, state_t), xm(x, state)
    compare(x_out, t_out, "float32")
    backward_both(x_out, t_out)
    assert_close(x.grad, x_t.grad, **TOL["float32"])
    compare_grads(xm, tm, "float32")
    compare(xm(x), tm(x_t), "float32")  # default zero state


@pytest.mark.parametrize("name,args,kw", [
    ("LSTM", (4, 6, 2), dict(bidirectional=True, proj_size=3)), ("GRU", (3, 5, 3), dict(bias=False)),
    ("RNN", (2, 3), dict(nonlinearity="relu")), ("LSTMCell", (3, 5), {}), ("GRUCell", (3, 5), {}),
    ("RNNCell", (3, 5), dict(bias=False))])
def test_names_shapes_and_seeded_init_equal_torch(name, args, kw):
    torch.manual_seed(7)
    tm = getattr(torch.nn, name)(*args, **kw)
    tdx.manual_seed(7)
    xm = getattr(xnn, name)(*args, **kw, device="cpu")  # where torch builds it (tdx's default may be cuda)
    t_params, x_params = list(tm.named_parameters()), list(xm.named_parameters())
    assert [n for n, _ in x_params] == [n for n, _ in t_params]
    assert list(xm.state_dict()) == list(tm.state_dict())
    for (n, p), (_, q) in zip(x_params, t_params):
        assert isinstance(p, xnn.Parameter)
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy(), err_msg=n)
    assert repr(xm) == repr(tm)


def test_mlx_init_is_in_range(device):
    xm = xnn.LSTM(3, 16, num_layers=2, device=device)
    for p in xm.parameters():
        assert p.device == tdx.device(device)
        assert float(p.abs().max()) <= 0.25
    assert len({round(float(p.std()), 3) for p in xm.parameters()}) > 1


def test_dropout_between_layers(device):
    tm, xm = make_pair("LSTM", device, "float32", 3, 4, num_layers=3, dropout=0.5)
    x_t = rand(5, 2, 3, on=torch_twin(device))
    tm.eval()
    xm.eval()
    compare(xm(to_tdx(x_t, device)), tm(x_t), "float32")
    xm.train()
    tdx.manual_seed(11)
    a = xm(to_tdx(x_t, device))[0]
    tdx.manual_seed(11)
    b = xm(to_tdx(x_t, device))[0]
    assert_close(a, b.numpy(force=True), rtol=0, atol=0)  # the same seed drops the same units
    if device == "cpu":  # torch's own kernel and generator: the draws are torch's
        tm.train()
        torch.manual_seed(11)
        assert_close(a, tm(x_t)[0].detach(), rtol=0, atol=0)


@pytest.mark.float64
def test_errors_are_typed(device):
    xm = xnn.LSTM(3, 4).to(device)
    with pytest.raises(RuntimeError, match="input.size\\(-1\\) must be equal to input_size") as e:
        xm(tdx.zeros(5, 2, 7, device=device))
    assert isinstance(e.value, tdx.TdxError)
    with pytest.raises(RuntimeError, match="Expected hidden\\[0\\] size") as e:
        xm(tdx.zeros(5, 2, 3, device=device), (tdx.zeros(1, 3, 4, device=device), tdx.zeros(1, 2, 4, device=device)))
    assert isinstance(e.value, tdx.TdxError)
    with pytest.raises(ValueError, match="Expected input to be 2D or 3D") as e:
        xm(tdx.zeros(1, 5, 2, 3, device=device))
    assert isinstance(e.value, tdx.TdxError)
    with pytest.raises(ValueError, match="input must have the type"):
        xm(tdx.zeros(5, 2, 3, device=device, dtype=tdx.float64))
    for bad, kind in [(lambda: xnn.GRU(3, 4, proj_size=2), ValueError), (lambda: xnn.LSTM(3, 4, proj_size=4), ValueError),
                      (lambda: xnn.RNN(3, 4, dropout=1.5), ValueError), (lambda: xnn.RNN(3, 0), ValueError),
                      (lambda: xnn.RNN(3, 4.0), TypeError), (lambda: xnn.RNN(3, 4, nonlinearity="gelu"), ValueError)]:
        with pytest.raises(kind) as e:
            bad()
        assert isinstance(e.value, tdx.TdxError)
    with pytest.raises(ValueError, match="Expected input to be 1D or 2D"):
        xnn.GRUCell(3, 4).to(device)(tdx.zeros(1, 2, 3, device=device))


# nn.utils.rnn -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("side", ["right", "left"])
def test_pad_sequence(device, batch_first, side):
    seqs_t = [leaf(rand(n, 2, seed=n)) for n in (3, 1, 4)]
    seqs = [to_tdx(s, device, grad=True) for s in seqs_t]
    t = TR.pad_sequence(seqs_t, batch_first=batch_first, padding_value=-1.5, padding_side=side)
    x = XR.pad_sequence(seqs, batch_first=batch_first, padding_value=-1.5, padding_side=side)
    assert_close(x, t.detach(), rtol=0, atol=0)
    backward_both(x, t)
    for a, e in zip(seqs, seqs_t):
        assert_close(a.grad, e.grad, rtol=0, atol=0)
    with pytest.raises(ValueError, match="padding_side") as err:
        XR.pad_sequence(seqs, padding_side="middle")
    assert isinstance(err.value, tdx.TdxError)


@pytest.mark.parametrize("batch_first", [False, True])
def test_pack_and_pad_roundtrip(device, batch_first):
    lengths = [4, 4, 2, 1]
    x_t = leaf(rand(4, 4, 3) if batch_first else rand(4, 4, 3, seed=9))
    x = to_tdx(x_t, device, grad=True)
    tp = TR.pack_padded_sequence(x_t, torch.tensor(lengths), batch_first=batch_first)
    xp = XR.pack_padded_sequence(x, lengths, batch_first=batch_first)
    assert xp.sorted_indices is None and xp.unsorted_indices is None
    assert_close(xp.data, tp.data.detach(), rtol=0, atol=0)
    t_pad, t_len = TR.pad_packed_sequence(tp, batch_first=batch_first, padding_value=2.0)
    x_pad, x_len = XR.pad_packed_sequence(xp, batch_first=batch_first, padding_value=2.0)
    assert_close(x_pad, t_pad.detach(), rtol=0, atol=0)
    assert x_len.tolist() == t_len.tolist() and x_len.dtype is tdx.int64
    backward_both(x_pad, t_pad)
    assert_close(x.grad, x_t.grad, rtol=0, atol=0)
    with pytest.raises(RuntimeError, match="must be sorted in decreasing order") as err:
        XR.pack_padded_sequence(x, [1, 4, 4, 2], batch_first=batch_first)
    assert isinstance(err.value, tdx.TdxError)
    with pytest.raises(ValueError, match="total_length"):
        XR.pad_packed_sequence(xp, total_length=2)


@pytest.mark.float64
def test_pack_sequence_and_unpack(device):
    seqs_t = [rand(n, 3, seed=n) for n in (2, 5, 3)]
    seqs = [to_tdx(s, device) for s in seqs_t]
    tp = TR.pack_sequence(seqs_t, enforce_sorted=False)
    xp = XR.pack_sequence(seqs, enforce_sorted=False)
    assert_close(xp.data, tp.data, rtol=0, atol=0)
    assert xp.unsorted_indices.tolist() == tp.unsorted_indices.tolist()
    for a, e in zip(XR.unpack_sequence(xp), TR.unpack_sequence(tp)):
        assert_close(a, e, rtol=0, atol=0)
    padded_t = TR.pad_sequence(seqs_t)
    for a, e in zip(XR.unpad_sequence(to_tdx(padded_t, device), tdx.tensor([2, 5, 3])),
                    TR.unpad_sequence(padded_t, torch.tensor([2, 5, 3]))):
        assert_close(a, e, rtol=0, atol=0)
    moved = xp.to(tdx.float64)
    assert moved.data.dtype is tdx.float64 and isinstance(moved, XR.PackedSequence)
    assert xp.to(tdx.float32) is xp


# a language model trained 20 steps --------------------------------------------------------------------------
def _lm_losses(m, device, steps=20, lr=0.5):
    """Losses of a 2-layer LSTM LM (embedding, LSTM, linear head) trained by hand-written SGD in ``m``."""
    nn, F = (torch.nn, torch.nn.functional) if m is torch else (xnn, tdx.nn.functional)
    vocab, emb, hid = 11, 6, 8
    torch.manual_seed(0)
    ref = torch.nn.LSTM(emb, hid, num_layers=2)
    g = torch.Generator().manual_seed(1)
    emb_w = torch.randn(vocab, emb, generator=g)
    head_w = torch.randn(vocab, hid, generator=g) * 0.3
    head_b = torch.zeros(vocab)
    tokens = torch.randint(0, vocab, (7, 3), generator=g)
    if m is torch:
        lstm, conv = ref, (lambda t: t.clone().requires_grad_(True))
        ids = tokens
    else:
        lstm = nn.LSTM(emb, hid, num_layers=2)
        lstm.load_state_dict({k: to_tdx(v, "cpu") for k, v in ref.state_dict().items()})
        lstm.to(device)
        conv = (lambda t: nn.Parameter(to_tdx(t, device)))
        ids = to_tdx(tokens, device)
    emb_p, head_p, bias_p = conv(emb_w), conv(head_w), conv(head_b)
    params = [emb_p, head_p, bias_p, *lstm.parameters()]
    losses = []
    for _ in range(steps):
        out, _ = lstm(F.embedding(ids[:-1], emb_p))
        logits = F.linear(out, head_p, bias_p)
        # cross-entropy spelled out: tdx's F.nll_loss mean reduction is not torch's to the last bit (a
        # separate, known difference), and this test is about the LSTM
        loss = -F.log_softmax(logits.reshape(-1, vocab), -1).gather(1, ids[1:].reshape(-1, 1)).mean()
        loss.backward()
        with (torch.no_grad() if m is torch else tdx.no_grad()):
            for p in params:
                p.data.add_(p.grad, alpha=-lr)
                p.grad = None
        losses.append(float(loss.item()))
    return losses


def test_lstm_language_model_follows_torch(device):
    expected = _lm_losses(torch, "cpu")
    got = _lm_losses(tdx, device)
    assert expected[-1] < expected[0] * 0.95  # it learns
    if device == "cpu":
        assert got == expected  # bit for bit
    else:
        np.testing.assert_allclose(got, expected, rtol=1e-4)


# the composed recurrence (what non-torch executors run) checked on cpu too ------------------------------------
@pytest.mark.parametrize("mode,cls,kw", [("LSTM", "LSTM", dict(proj_size=2)), ("GRU", "GRU", {}),
                                         ("RNN_RELU", "RNN", dict(nonlinearity="relu")), ("LSTM", "LSTM", {})])
@pytest.mark.parametrize("packed", [False, True])
def test_composed_recurrence_on_cpu(mode, cls, kw, packed):
    from tdx.compat.nn._recurrent import run_rnn  # the executor-independent core the torch executor bypasses

    tm, xm = make_pair(cls, "cpu", "float32", 3, 4, num_layers=2, bidirectional=True, **kw)
    x_t = leaf(rand(5, 3, 3))
    x = to_tdx(x_t, "cpu", grad=True)
    hs = kw.get("proj_size") or 4
    hx = tdx.zeros(4, 3, hs, device="cpu")
    hx = (hx, tdx.zeros(4, 3, 4, device="cpu")) if mode == "LSTM" else hx
    lengths = [5, 3, 2]
    if packed:
        tp = TR.pack_padded_sequence(x_t, lengths)
        t_out, t_h = tm(tp)
        t_out = t_out.data
        data = XR.pack_padded_sequence(x, lengths)
        x_out, x_h = run_rnn(mode, data.data, hx, xm._weights_per_direction(), 2, 0.0, True, True, data.batch_sizes.tolist())
    else:
        t_out, t_h = tm(x_t)
        x_out, x_h = run_rnn(mode, x, hx, xm._weights_per_direction(), 2, 0.0, True, True)
    compare((x_out, x_h), (t_out, t_h), "float32")
    backward_both((x_out, x_h), (t_out, t_h))
    assert_close(x.grad, x_t.grad, **TOL["float32"])
    compare_grads(xm, tm, "float32")


@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
@pytest.mark.parametrize("packed", [False, True])
def test_gates_kernels_are_the_composed_cells_bit_for_bit(device, mode, packed, monkeypatch):
    """Where an executor has the ``lstm_gates``/``gru_gates`` kernels (MLX) a step's gates run as one tape
    node: the same outputs and gradients as the composed cell bit for bit, torch's within tolerance. The
    composed cells compute in float32 everywhere: on cuda torch's layer is asked for float32 too (cuDNN's
    recurrences take TF32 by default)."""
    from tdx.compat.nn import _recurrent

    tm, xm = make_pair(mode, device, "float32", 3, 4, num_layers=2, bidirectional=True)
    x_t = leaf(rand(5, 3, 3, on=torch_twin(device)))
    lengths = [5, 3, 2]

    def run():
        x = to_tdx(x_t, device, grad=True)
        hx = tdx.zeros(4, 3, 4, device=device)
        hx = (hx, tdx.zeros(4, 3, 4, device=device)) if mode == "LSTM" else hx
        for p in xm.parameters():
            p.grad = None
        if packed:
            data = XR.pack_padded_sequence(x, lengths)
            out = _recurrent.run_rnn(mode, data.data, hx, xm._weights_per_direction(), 2, 0.0, True, True,
                                     data.batch_sizes.tolist())
        else:
            out = _recurrent.run_rnn(mode, x, hx, xm._weights_per_direction(), 2, 0.0, True, True)
        return out, x

    def run_torch():
        with torch.backends.cudnn.flags(enabled=torch.backends.cudnn.enabled, allow_tf32=False):
            t_out, t_h = tm(TR.pack_padded_sequence(x_t, lengths) if packed else x_t)
        return t_out.data if packed else t_out, t_h

    fused, x = run()
    t_out, t_h = run_torch()
    compare(fused, (t_out, t_h), "float32")
    backward_both(fused, (t_out, t_h))
    assert_close(x.grad, x_t.grad, **TOL["float32"])
    compare_grads(xm, tm, "float32")
    got = [t.tolist() for t in (*flat(fused), x.grad, *(p.grad for p in xm.parameters()))]
    for name in ("fused_lstm_gates", "fused_gru_gates"):
        monkeypatch.setattr(_recurrent, name, lambda *a: _recurrent.NOT_NATIVE)
    composed, x = run()
    backward_both(composed, run_torch())
    assert got == [t.tolist() for t in (*flat(composed), x.grad, *(p.grad for p in xm.parameters()))]
    monkeypatch.undo()
    cell = getattr(xnn, mode + "Cell")(3, 4).to(device)
    out = cell(to_tdx(x_t[0], device, grad=True))
    names = [t.grad_fn.name() for t in (out if mode == "LSTM" else (out,))]
    kernel = hasattr(tdx.backends.get(device), mode.lower() + "_gates")
    fused_name = "ThnnFused" + mode.capitalize() + "CellBackward0"  # torch's fused cells' nodes
    assert names == ([fused_name] * len(names) if kernel else ["MulBackward0", "AddBackward0"][:len(names)]
                     if mode == "LSTM" else ["AddBackward0"])


def test_importing_the_modules_loads_no_framework():
    import subprocess
    import sys

    code = ("import sys, tdx.nn, tdx.nn.utils.rnn, tdx.nn.functional; from tdx.nn import LSTM, Transformer, "
            "MultiheadAttention; assert 'torch' not in sys.modules and 'mlx' not in sys.modules, "
            "[m for m in sys.modules if m.startswith(('torch', 'mlx'))][:3]")
    subprocess.run([sys.executable, "-c", code], check=True)
