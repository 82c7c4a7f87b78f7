"""``tdx.nn.MultiheadAttention`` and the transformer modules against torch on CPU, on every device.

Each test builds the torch module on CPU, loads its state dict into the tdx module, moves it with
``model.to(device)`` and compares outputs, attention weights, input and parameter gradients
(float32, and float64 where the device has it) across masks (bool/float, 2-D/3-D, key padding,
causal), ``batch_first``, ``kdim``/``vdim``, ``add_bias_kv``, ``add_zero_attn`` and unbatched
inputs. Parameter names and the seeded default init must equal torch's on cpu.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import tdx
import tdx.nn as xnn
from nn_oracle import torch_repr
from tdx.testing.parity import TOLERANCE_TABLE, assert_close

# float32: attention sums over keys in kernel-specific order (tdx's SDPA kernels, MLX's BLAS), so
# 1e-5 relative with 1e-5 absolute for values of order one
TOL = {d: dict(zip(("rtol", "atol"), tol)) for d, tol in TOLERANCE_TABLE["recurrence"].items()}
pytestmark = pytest.mark.filterwarnings("ignore:enable_nested_tensor:UserWarning")


def to_tdx(t, device, grad=False):
    x = tdx.tensor(t.detach().numpy(), device=device)
    return x.requires_grad_(True) if grad else x


def rand(*shape, seed=1, dtype="float32"):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g, dtype=getattr(torch, dtype))


def make_pair(cls, device, dtype, *args, **kwargs):
    torch.manual_seed(0)
    tm = getattr(torch.nn, cls)(*args, **kwargs).to(getattr(torch, dtype))
    xm = getattr(xnn, cls)(*args, **kwargs)
    xm.load_state_dict({k: to_tdx(v, "cpu") for k, v in tm.state_dict().items()})
    xm.to(device)
    xm.to(getattr(tdx, dtype))
    return tm, xm


def check_grads(xm, tm, dtype, tol=None):
    for (n, p), (n2, q) in zip(xm.named_parameters(), tm.named_parameters()):
        assert n == n2
        if q.grad is None:
            assert p.grad is None, n
        else:
            assert_close(p.grad, q.grad, msg=n, **(tol or TOL[dtype]))


def backward_both(a, e, seed=50):
    w = rand(*e.shape, seed=seed, dtype=str(e.dtype).split(".")[-1])
    (e * w).sum().backward()
    (a * to_tdx(w, str(a.device))).sum().backward()


def mha_tol(device, dtype, need_weights):
    """TOL, except float64 through tdx's SDPA on MLX: its fused MLX kernel is only float32-accurate in float64
    (about 5e-8 absolute against torch, a known core limitation), so 1e-6 there."""
    if dtype == "float64" and not need_weights and device.startswith("mlx"):
        return dict(rtol=1e-6, atol=1e-6)
    return TOL[dtype]


def skip_f64(device, dtype):
    if dtype == "float64" and device.startswith("mlx:gpu"):
        pytest.skip("MLX has no float64 on its GPU")


MHA_CASES = [
    dict(),
    dict(kw=dict(batch_first=True)),
    dict(kw=dict(add_bias_kv=True, add_zero_attn=True)),
    dict(kw=dict(kdim=3, vdim=5)),
    dict(kw=dict(bias=False), self_attn=True),
    dict(mask="bool2d", kpm="bool"),
    dict(mask="float3d", kpm="float"),
    dict(mask="causal", causal=True, self_attn=True),
    dict(kpm="bool", kw=dict(add_zero_attn=True)),
]


def _masks(case, L, S, B, H):
    mask = kpm = None
    if case.get("mask") == "bool2d":
        mask = rand(L, S, seed=7) > 0.8
        mask[:, 0] = False
    elif case.get("mask") == "float3d":
        mask = rand(B * H, L, S, seed=7)
    elif case.get("mask") == "causal":
        mask = torch.nn.Transformer.generate_square_subsequent_mask(L)
    if case.get("kpm") == "bool":
        kpm = torch.tensor([[False] * (S - 1) + [True], [False, True] + [False] * (S - 2)])
    elif case.get("kpm") == "float":
        kpm = rand(B, S, seed=8)
    return mask, kpm


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("need_weights", [True, False])
@pytest.mark.parametrize("case", MHA_CASES, ids=lambda c: "-".join(f"{k}" for k in (c.get("kw") or {})) +
                         "-".join(str(c.get(k, "")) for k in ("mask", "kpm", "self_attn")) or "plain")
def test_multihead_attention_matches_torch(device, dtype, need_weights, case):
    skip_f64(device, dtype)
    E, H, L, S, B = 8, 2, 4, 5, 2
    kw = case.get("kw", {})
    tm, xm = make_pair("MultiheadAttention", device, dtype, E, H, **kw)
    if case.get("self_attn"):
        S = L
    mask, kpm = _masks(case, L, S, B, H)
    bf = kw.get("batch_first", False)
    shape = (lambda n, e: (B, n, e)) if bf else (lambda n, e: (n, B, e))
    q_t = rand(*shape(L, E), dtype=dtype).requires_grad_(True)
    if case.get("self_attn"):
        k_t = v_t = q_t
    else:
        k_t = rand(*shape(S, kw.get("kdim", E)), seed=2, dtype=dtype).requires_grad_(True)
        v_t = rand(*shape(S, kw.get("vdim", E)), seed=3, dtype=dtype).requires_grad_(True)
    q = to_tdx(q_t, device, grad=True)
    k, v = (q, q) if case.get("self_attn") else (to_tdx(k_t, device, grad=True), to_tdx(v_t, device, grad=True))
    m_t = None if mask is None else (mask if mask.dtype == torch.bool else mask.to(getattr(torch, dtype)))
    kp_t = None if kpm is None else (kpm if kpm.dtype == torch.bool else kpm.to(getattr(torch, dtype)))
    conv = (lambda t: None if t is None else to_tdx(t, device))
    args = dict(need_weights=need_weights, is_causal=bool(case.get("causal")))
    t_out, t_w = tm(q_t, k_t, v_t, attn_mask=m_t, key_padding_mask=kp_t, **args)
    x_out, x_w = xm(q, k, v, attn_mask=conv(m_t), key_padding_mask=conv(kp_t), **args)
    tol = mha_tol(device, dtype, need_weights)
    assert_close(x_out, t_out.detach(), **tol)
    if need_weights:
        assert_close(x_w, t_w.detach(), **tol)
    else:
        assert x_w is None and t_w is None
    backward_both(x_out, t_out)
    assert_close(q.grad, q_t.grad, **tol)
    if not case.get("self_attn"):
        assert_close(k.grad, k_t.grad, **tol)
        assert_close(v.grad, v_t.grad, **tol)
    check_grads(xm, tm, dtype, tol)


def test_multihead_attention_unbatched_and_per_head_weights(device):
    tm, xm = make_pair("MultiheadAttention", device, "float32", 6, 3)
    q_t, k_t = rand(4, 6), rand(5, 6, seed=2)
    t_out, t_w = tm(q_t, k_t, k_t, average_attn_weights=False)
    x_out, x_w = xm(to_tdx(q_t, device), to_tdx(k_t, device), to_tdx(k_t, device), average_attn_weights=False)
    assert tuple(x_w.shape) == (3, 4, 5)
    assert_close(x_out, t_out.detach(), **TOL["float32"])
    assert_close(x_w, t_w.detach(), **TOL["float32"])


def test_functional_multi_head_attention_forward(device):
    E, H = 6, 2
    g = torch.Generator().manual_seed(4)
    w, b = torch.randn(3 * E, E, generator=g) * 0.3, torch.randn(3 * E, generator=g) * 0.1
    ow, ob = torch.randn(E, E, generator=g) * 0.3, torch.randn(E, generator=g) * 0.1
    q, k = rand(3, 2, E), rand(4, 2, E, seed=2)
    t_out, t_w = torch.nn.functional.multi_head_attention_forward(q, k, k, E, H, w, b, None, None, False, 0.0, ow, ob)
    c = (lambda t: to_tdx(t, device))
    x_out, x_w = tdx.nn.functional.multi_head_attention_forward(c(q), c(k), c(k), E, H, c(w), c(b), None, None, False,
                                                                0.0, c(ow), c(ob))
    assert_close(x_out, t_out, **TOL["float32"])
    assert_close(x_w, t_w, **TOL["float32"])


def test_attention_dropout_is_training_only(device):
    tm, xm = make_pair("MultiheadAttention", device, "float32", 8, 2, dropout=0.5)
    q = rand(4, 2, 8)
    tm.eval()
    xm.eval()
    assert_close(xm(to_tdx(q, device), to_tdx(q, device), to_tdx(q, device))[0], tm(q, q, q)[0].detach(),
                 **TOL["float32"])
    xm.train()
    a = xm(to_tdx(q, device), to_tdx(q, device), to_tdx(q, device))[1]
    assert float((a == 0).sum()) > 0  # some weights dropped, the rest scaled by 2
    assert float(a.max()) > float(tm(q, q, q)[1].max())


@pytest.mark.parametrize("cls,args,kw", [
    ("MultiheadAttention", (8, 2), {}), ("MultiheadAttention", (8, 4), dict(kdim=3, vdim=5, add_bias_kv=True)),
    ("MultiheadAttention", (6, 3), dict(bias=False)),
    ("TransformerEncoderLayer", (8, 2, 16), {}), ("TransformerDecoderLayer", (8, 2, 16), dict(norm_first=True)),
    ("Transformer", (8, 2, 2, 1, 16), {})])
def test_names_and_seeded_init_equal_torch(cls, args, kw):
    torch.manual_seed(5)
    tm = getattr(torch.nn, cls)(*args, **kw)
    tdx.manual_seed(5)
    xm = getattr(xnn, cls)(*args, **kw, device="cpu")  # where torch builds it (tdx's default may be cuda)
    assert list(xm.state_dict()) == list(tm.state_dict())
    for (n, p), (_, q) in zip(xm.named_parameters(), tm.named_parameters()):
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy(), err_msg=n)
    assert torch_repr(xm) == repr(tm)


LAYER_CASES = [dict(), dict(norm_first=True, activation="gelu"), dict(batch_first=True),
               dict(activation=torch.nn.functional.gelu, bias=False)]


def _act(kw):
    kw = dict(kw)
    if kw.get("activation") is torch.nn.functional.gelu:
        kw["activation"] = tdx.nn.functional.gelu
    return kw


@pytest.mark.parametrize("kw", LAYER_CASES, ids=lambda k: "-".join(k) or "default")
@pytest.mark.parametrize("masked", [False, True])
def test_encoder_layer_and_stack(device, kw, masked):
    torch.manual_seed(0)
    t_layer = torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, **kw)
    tm = torch.nn.TransformerEncoder(t_layer, 2, norm=torch.nn.LayerNorm(8))
    xm = xnn.TransformerEncoder(xnn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, **_act(kw)), 2,
                                norm=xnn.modules.normalization.LayerNorm(8))  # torch's path to it too
    xm.load_state_dict({k: to_tdx(v, "cpu") for k, v in tm.state_dict().items()})
    xm.to(device)
    bf = kw.get("batch_first", False)
    src_t = rand(*((2, 5, 8) if bf else (5, 2, 8))).requires_grad_(True)
    src = to_tdx(src_t, device, grad=True)
    masks_t = {}
    if masked:
        masks_t = dict(mask=torch.nn.Transformer.generate_square_subsequent_mask(5),
                       src_key_padding_mask=torch.tensor([[False] * 4 + [True], [False] * 5]))
    t_out = tm(src_t, **masks_t)
    x_out = xm(src, **{k: to_tdx(v, device) for k, v in masks_t.items()})
    assert_close(x_out, t_out.detach(), **TOL["float32"])
    backward_both(x_out, t_out)
    assert_close(src.grad, src_t.grad, **TOL["float32"])
    check_grads(xm, tm, "float32")


@pytest.mark.parametrize("kw", LAYER_CASES, ids=lambda k: "-".join(k) or "default")
def test_transformer_end_to_end(device, kw):
    tm, xm = make_pair("Transformer", device, "float32", 8, 2, 1, 1, 16, dropout=0.0, **kw) if \
        not callable(kw.get("activation")) else (None, None)
    if tm is None:
        torch.manual_seed(0)
        tm = torch.nn.Transformer(8, 2, 1, 1, 16, dropout=0.0, **kw)
        xm = xnn.Transformer(8, 2, 1, 1, 16, dropout=0.0, **_act(kw))
        xm.load_state_dict({k: to_tdx(v, "cpu") for k, v in tm.state_dict().items()})
        xm.to(device)
    bf = kw.get("batch_first", False)
    src_t = rand(*((2, 5, 8) if bf else (5, 2, 8))).requires_grad_(True)
    tgt_t = rand(*((2, 4, 8) if bf else (4, 2, 8)), seed=3).requires_grad_(True)
    src, tgt = to_tdx(src_t, device, grad=True), to_tdx(tgt_t, device, grad=True)
    tgt_mask = torch.nn.Transformer.generate_square_subsequent_mask(4)
    mkpm = torch.tensor([[False] * 4 + [True], [False] * 5])
    t_out = tm(src_t, tgt_t, tgt_mask=tgt_mask, memory_key_padding_mask=mkpm, tgt_is_causal=True)
    x_out = xm(src, tgt, tgt_mask=to_tdx(tgt_mask, device), memory_key_padding_mask=to_tdx(mkpm, device),
               tgt_is_causal=True)
    assert_close(x_out, t_out.detach(), **TOL["float32"])
    backward_both(x_out, t_out)
    assert_close(src.grad, src_t.grad, **TOL["float32"])
    assert_close(tgt.grad, tgt_t.grad, **TOL["float32"])
    check_grads(xm, tm, "float32")


def test_unbatched_decoder_layer(device):
    tm, xm = make_pair("TransformerDecoderLayer", device, "float32", 8, 2, 16, dropout=0.0)
    tgt, mem = rand(3, 8), rand(5, 8, seed=2)
    assert_close(xm(to_tdx(tgt, device), to_tdx(mem, device)), tm(tgt, mem).detach(), **TOL["float32"])


def test_generate_square_subsequent_mask(device):
    expected = torch.nn.Transformer.generate_square_subsequent_mask(4)
    got = xnn.Transformer.generate_square_subsequent_mask(4, device=device)
    assert got.dtype is tdx.float32 and got.device == tdx.device(device)
    assert_close(got, expected, rtol=0, atol=0)
    got64 = xnn.Transformer.generate_square_subsequent_mask(3, dtype=tdx.float64)
    assert got64.dtype is tdx.float64


def test_errors_are_typed(device):
    with pytest.raises(AssertionError) as e:
        xnn.MultiheadAttention(10, 3)
    assert isinstance(e.value, tdx.TdxError)
    with pytest.raises(ValueError) as e:
        xnn.MultiheadAttention(0, 1)
    assert isinstance(e.value, tdx.TdxError)
    mha = xnn.MultiheadAttention(8, 2).to(device)
    q = tdx.zeros(4, 2, 8, device=device)
    with pytest.raises(RuntimeError, match="2D attn_mask") as e:
        mha(q, q, q, attn_mask=tdx.zeros(3, 3, device=device))
    assert isinstance(e.value, tdx.TdxError)
    with pytest.raises(RuntimeError, match="Need attn_mask") as e:
        mha(q, q, q, is_causal=True)
    assert isinstance(e.value, tdx.TdxError)
    with pytest.raises(AssertionError, match="only bool and floating"):
        mha(q, q, q, attn_mask=tdx.zeros(4, 4, dtype=tdx.int64, device=device))
    with pytest.raises(RuntimeError, match="activation should be relu/gelu") as e:
        xnn.TransformerEncoderLayer(8, 2, activation="tanh")
    assert isinstance(e.value, tdx.TdxError)
    tr = xnn.Transformer(8, 2, 1, 1, 16).to(device)
    with pytest.raises(RuntimeError, match="batch number") as e:
        tr(tdx.zeros(3, 2, 8, device=device), tdx.zeros(3, 3, 8, device=device))
    assert isinstance(e.value, tdx.TdxError)
