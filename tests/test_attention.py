"""Scaled-dot-product attention: every kernel on every device against torch's float64 math path.

The oracle is ``torch.nn.functional.scaled_dot_product_attention`` restricted to torch's math
kernel, on CPU, in float64. Each case runs through every kernel the device can reach
(``tdx.attention.explain`` lists them), forced with ``sdpa_kernel``; gradients go through torch's
autograd on torch devices, and on MLX devices both through ``mx.vjp`` of the kernel and through
``Tensor.backward`` on tdx's tape. Also: dropout
(determinism, expectation, the mask the backward pass uses), ``sdpa_kernel`` state (restore,
threads, asyncio tasks, priority), the global switches, the config's priority, ``explain`` and
``can_use_*`` reasons, and the typed errors for bad inputs.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import subprocess
import sys
import threading

import numpy as np
import pytest
import torch

import tdx
import tdx.attention as A
from tdx.attention import SDPBackend, sdpa_kernel
from tdx.attention import _chunked, _kernels
from tdx.testing.parity import TOLERANCE_TABLE

F = tdx.nn.functional
TOL = {d: rtol for d, (rtol, _) in TOLERANCE_TABLE["matmul"].items()}  # relative to the output's largest value


# --- fixtures ------------------------------------------------------------------------------

@pytest.fixture(autouse=True)
def _cpu_flash_declared():
    """Declare torch's CPU flash kernel on the cpu executor if its capabilities do not yet."""
    ex = tdx.backends.get("cpu")
    saved = ex.caps
    if "flash" not in saved.sdpa_kernels:
        ex.caps = dataclasses.replace(saved, sdpa_kernels=("flash",) + tuple(saved.sdpa_kernels))
    _kernels.clear_cache()
    yield
    ex.caps = saved
    _kernels.clear_cache()


@pytest.fixture
def small_blocks():
    """Blocks of 2..4 rows/columns, so the chunked kernel crosses many blocks on small inputs."""
    saved = _chunked.MIN_BLOCK, _chunked.MAX_BLOCK
    _chunked.MIN_BLOCK, _chunked.MAX_BLOCK = 2, 4
    yield
    _chunked.MIN_BLOCK, _chunked.MAX_BLOCK = saved


# --- helpers -------------------------------------------------------------------------------

def _quantize(a, dtype):
    """``a`` (float64) rounded to ``dtype`` and back, so every framework sees the same values."""
    return torch.tensor(a).to(getattr(torch, dtype)).double().numpy()


def _tdx(a, device, dtype):
    if a is None:
        return None
    if a.dtype == bool:
        return tdx.tensor(a, device=device)
    return tdx.tensor(a, dtype=getattr(tdx, dtype), device=device)


def _host(t):
    """``t`` as a float64 NumPy array on the host (``__array__`` copies a GPU tensor back; ``.numpy()`` refuses one,
    as torch's does)."""
    return np.asarray(t, np.float64)


def _oracle(q, k, v, mask=None, cot=None, **kw):
    """torch's math kernel in float64: the output and, given a cotangent, the input gradients."""
    ts = [torch.tensor(a, requires_grad=cot is not None) for a in (q, k, v)]
    m = None if mask is None else torch.tensor(mask)
    with torch.nn.attention.sdpa_kernel([torch.nn.attention.SDPBackend.MATH]):
        out = torch.nn.functional.scaled_dot_product_attention(*ts, attn_mask=m, **kw)
    if cot is None:
        return out.detach().numpy()
    grads = torch.autograd.grad(out, ts, torch.tensor(cot))
    return [out.detach().numpy()] + [g.numpy() for g in grads]


def _rel(got, want):
    scale = max(float(np.abs(want).max()), 1e-12) if want.size else 1.0
    return float(np.abs(got - want).max()) / scale if want.size else 0.0


def _usable(q, k, v, mask=None, **kw):
    exp = A.explain(q, k, v, attn_mask=mask, **kw)
    return [v_.backend for v_ in exp.verdicts if v_.usable]


def _case(name, E=16, dtype="float32", seed=0):
    """(q, k, v, mask, kwargs) as float64 arrays quantized to ``dtype``."""
    rng = np.random.default_rng(seed)
    B, H, Hk, Tq, Tk, Ev = 2, 3, 3, 5, 7, E
    kw, mask = {}, None
    if name.startswith("causal"):
        Tq, Tk = {"causal_short_q": (5, 7), "causal_square": (6, 6), "causal_long_q": (7, 5)}[name]
        kw["is_causal"] = True
    if name in ("gqa", "mqa"):
        H, Hk = 4, 2 if name == "gqa" else 1
        kw["enable_gqa"] = name == "gqa"
    if name == "value_dim":
        Ev = E + 8
    if name == "scale":
        kw["scale"] = 0.3
    if name == "empty_keys":
        Tk = 0
    qs, ks, vs = (B, H, Tq, E), (B, Hk, Tk, E), (B, Hk, Tk, Ev)
    if name == "rank3":
        qs, ks, vs = (H, Tq, E), (H, Tk, E), (H, Tk, Ev)
    if name == "rank2":
        qs, ks, vs = (Tq, E), (Tk, E), (Tk, Ev)
    if name == "rank5_broadcast":
        qs, ks, vs = (2, 1, H, Tq, E), (1, 2, H, Tk, E), (1, 2, H, Tk, Ev)
    q, k, v = (_quantize(rng.standard_normal(s), dtype) for s in (qs, ks, vs))
    if name == "bool_mask":
        mask = rng.random((B, H, Tq, Tk)) > 0.3
        mask[0, 1, 2] = False  # a row that sees no key
    if name == "float_mask":
        mask = np.where(rng.random((Tq, Tk)) > 0.3, rng.standard_normal((Tq, Tk)), -np.inf)
        mask[3] = -np.inf
        mask = _quantize(mask, dtype)
    if name == "broadcast_mask":
        mask = rng.random((B, 1, 1, Tk)) > 0.3
        mask[1, 0, 0] = False  # batch 1 sees no key at all
    if name == "float32_mask":
        mask = rng.standard_normal((1, H, Tq, 1)).astype(np.float32)
    return q, k, v, mask, kw


CASES = ["plain", "bool_mask", "float_mask", "broadcast_mask", "float32_mask", "causal_short_q",
         "causal_square", "causal_long_q", "gqa", "mqa", "scale", "value_dim", "rank2", "rank3",
         "rank5_broadcast", "empty_keys"]


def _mask_dtype(mask, dtype, name):
    if mask is None or mask.dtype == bool:
        return None
    return "float32" if name == "float32_mask" else dtype


# --- forward against the oracle ------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("name", CASES)
def test_forward_every_kernel(device, name, dtype, small_blocks):
    q, k, v, mask, kw = _case(name, dtype=dtype)
    want = _oracle(q, k, v, mask, **kw)
    md = _mask_dtype(mask, dtype, name)
    tq, tk, tv = (_tdx(a, device, dtype) for a in (q, k, v))
    tm = _tdx(mask, device, md or dtype)
    kernels = _usable(tq, tk, tv, tm, **kw)
    assert kernels, f"no kernel can run {name} on {device}"
    for b in kernels:
        with sdpa_kernel([b]):
            out = F.scaled_dot_product_attention(tq, tk, tv, attn_mask=tm, **kw)
        assert out.dtype == tq.dtype and tuple(out.shape) == want.shape, (b, out.shape, want.shape)
        err = _rel(_host(out), want)
        assert err <= TOL[dtype], f"{device} {b.name} {name} {dtype}: relative error {err:.3g}"
    auto = F.scaled_dot_product_attention(tq, tk, tv, attn_mask=tm, **kw)
    assert _rel(_host(auto), want) <= TOL[dtype]


def test_every_kernel_is_reachable(device):
    q, k, v, mask, kw = _case("plain")
    ex = tdx.backends.get(device)
    t = [_tdx(a, device, "float32") for a in (q, k, v)]
    got = set(_usable(*t))
    if "efficient" in ex.caps.sdpa_kernels:  # torch's CUDA kernels: flash runs float16/bfloat16 only
        got |= set(_usable(*(_tdx(a, device, "float16") for a in (q, k, v))))
    expect = {SDPBackend.MATH, SDPBackend.CHUNKED}
    if "flash" in ex.caps.sdpa_kernels:
        expect.add(SDPBackend.FLASH_ATTENTION)
    if "mlx_fused" in ex.caps.sdpa_kernels:
        expect.add(SDPBackend.MLX_FUSED)
    if ex.caps.dlpack_zero_copy_export and str(device) in ("mlx:cpu",):
        expect.add(SDPBackend.BRIDGE)
    assert expect <= got, f"{device}: reachable {sorted(b.name for b in got)}"


@pytest.mark.parametrize("E", [32, 64, 128, 256])
def test_head_dims(device, E):
    q, k, v, mask, kw = _case("causal_short_q", E=E, seed=E)
    want = _oracle(q, k, v, **kw)
    t = [_tdx(a, device, "float32") for a in (q, k, v)]
    for b in _usable(*t, **kw):
        with sdpa_kernel([b]):
            out = F.scaled_dot_product_attention(*t, **kw)
        assert _rel(_host(out), want) <= TOL["float32"], (device, b, E)


def test_float64(device):
    if not tdx.backends.get(device).caps.float64:
        pytest.skip(f"{device} has no float64")
    q, k, v, mask, kw = _case("bool_mask", dtype="float64")
    want = _oracle(q, k, v, mask, **kw)
    t = [_tdx(a, device, "float64") for a in (q, k, v)]
    tm = _tdx(mask, device, "float64")
    for b in _usable(*t, tm, **kw):
        with sdpa_kernel([b]):
            out = F.scaled_dot_product_attention(*t, attn_mask=tm, **kw)
        assert out.dtype == tdx.float64
        assert _rel(_host(out), want) <= TOL["float64"], (device, b, _rel(_host(out), want))
    if tdx.backends.get(device).caps.native_autograd:
        return
    cot = np.random.default_rng(3).standard_normal(want.shape)
    wants = _oracle(q, k, v, mask, cot=cot, **kw)
    for b in _usable(*t, tm, **kw):  # float64 gradients through the tape are float64-accurate too
        got = _grads_tape(device, b, q, k, v, mask, cot, "float64", None, kw)
        for what, g, w in zip(("out", "dq", "dk", "dv"), got, wants):
            assert _rel(g, w) <= TOL["float64"], f"{device} {b.name} {what}: {_rel(g, w):.3g}"


def test_fully_masked_rows_are_zeros(device, small_blocks):
    q, k, v, mask, kw = _case("bool_mask")
    t = [_tdx(a, device, "float32") for a in (q, k, v)]
    tm = _tdx(mask, device, "float32")
    for b in _usable(*t, tm):
        with sdpa_kernel([b]):
            out = _host(F.scaled_dot_product_attention(*t, attn_mask=tm))
        assert np.all(out[0, 1, 2] == 0) and np.isfinite(out).all(), (device, b)


# --- gradients -----------------------------------------------------------------------------

GRAD_CASES = ["plain", "bool_mask", "float_mask", "causal_short_q", "causal_long_q", "gqa", "mqa", "scale",
              "value_dim", "rank5_broadcast"]


def _grads_torch(device, b, q, k, v, mask, cot, dtype, md, kw):
    leaves = [_tdx(a, device, dtype).requires_grad_() for a in (q, k, v)]
    tm = _tdx(mask, device, md or dtype)
    with sdpa_kernel([b]):
        out = F.scaled_dot_product_attention(*leaves, attn_mask=tm, **kw)
    out.backward(_tdx(cot, device, dtype))
    return [_host(out.detach())] + [_host(x.grad) for x in leaves]


def _grads_mlx(device, b, q, k, v, mask, cot, dtype, md, kw):
    import mlx.core as mx

    from tdx._tensor.wrapping import wrap

    ex = tdx.backends.get(device)
    prim = [_tdx(a, device, dtype)._n for a in (q, k, v)]
    tm = _tdx(mask, device, md or dtype)

    def kernel(qn, kn, vn):
        with sdpa_kernel([b]):
            return F.scaled_dot_product_attention(wrap(qn, ex), wrap(kn, ex), wrap(vn, ex), attn_mask=tm, **kw)._n

    outs, grads = mx.vjp(kernel, prim, [_tdx(cot, device, dtype)._n])
    return [_host(wrap(x, ex)) for x in [outs[0], *grads]]


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("name", GRAD_CASES)
def test_gradients_every_kernel(device, name, dtype, small_blocks):
    q, k, v, mask, kw = _case(name, dtype=dtype, seed=1)
    want = _oracle(q, k, v, mask, cot=None, **kw)
    cot = _quantize(np.random.default_rng(2).standard_normal(want.shape), dtype)
    want = _oracle(q, k, v, mask, cot=cot, **kw)
    md = _mask_dtype(mask, dtype, name)
    ex = tdx.backends.get(device)
    t = [_tdx(a, device, dtype) for a in (q, k, v)]
    run = _grads_torch if ex.caps.native_autograd else _grads_mlx
    for b in _usable(*t, _tdx(mask, device, md or dtype), **kw):
        got = run(device, b, q, k, v, mask, cot, dtype, md, kw)
        for what, g, w in zip(("out", "dq", "dk", "dv"), got, want):
            assert g.shape == w.shape, (b, what, g.shape, w.shape)
            err = _rel(g, w)
            assert err <= TOL[dtype], f"{device} {b.name} {name} {dtype} {what}: relative error {err:.3g}"


def test_mask_gradient_on_torch():
    """A float mask that requires grad: flash refuses it, and torch's math kernel gives its gradient."""
    q, k, v, mask, kw = _case("float_mask")
    mask = np.where(np.isfinite(mask), mask, -30.0)
    cot = np.random.default_rng(5).standard_normal((2, 3, 5, 16))
    tm = torch.tensor(mask, requires_grad=True)
    with torch.nn.attention.sdpa_kernel([torch.nn.attention.SDPBackend.MATH]):
        out = torch.nn.functional.scaled_dot_product_attention(*(torch.tensor(a) for a in (q, k, v)), attn_mask=tm)
    (want,) = torch.autograd.grad(out, [tm], torch.tensor(cot))
    t = [_tdx(a, "cpu", "float32") for a in (q, k, v)]
    m = _tdx(mask, "cpu", "float32").requires_grad_()
    exp = A.explain(*t, attn_mask=m)
    assert "attn_mask" in exp.reasons[SDPBackend.FLASH_ATTENTION] and exp.kernel is SDPBackend.MATH
    F.scaled_dot_product_attention(*t, attn_mask=m).backward(_tdx(cot, "cpu", "float32"))
    assert _rel(_host(m.grad), want.numpy()) <= 1e-5


def test_torch_device_path_logic(monkeypatch):
    """The CUDA/MPS code path (torch's own choice, else torch's sdpa_kernel) run on CPU tensors."""
    from tdx.attention import _params, _torch

    q, k, v, mask, kw = _case("bool_mask")
    want = _oracle(q, k, v, mask)
    t = [_tdx(a, "cpu", "float32") for a in (q, k, v)]
    p = _params.prepare(*t, attn_mask=_tdx(mask, "cpu", "float32"))

    class Device:
        type = "cuda"

    class Executor:
        device = Device()

    p.ex = Executor()
    for b in (SDPBackend.MATH, SDPBackend.FLASH_ATTENTION):
        assert _rel(_torch.run(p, b).numpy(), want) <= 1e-5, b
    ok, why = _torch.cuda_can_use(SDPBackend.FLASH_ATTENTION, p)
    assert not ok and "can_use_flash_attention" in why and "float32" in why
    asked = []  # torch's debug answers print to stderr, which a native call never does: asked quietly
    monkeypatch.setattr(torch.backends.cuda, "can_use_flash_attention", lambda params, debug: asked.append(debug))
    assert _torch.cuda_can_use(SDPBackend.FLASH_ATTENTION, p)[0] is False and asked == [False]


def test_cuda_kernels_get_masks_they_read_as_math():
    """The masks tdx hands torch's CUDA kernels, built on CPU tensors: cuDNN reads a bool mask as torch's finite
    -65504 (a row seeing no key attends to every key) and a float32 mask as the query's half dtype; the efficient
    kernel refuses a float32 mask for a half query and a broadcast last dim. Each gets the math kernel's values in
    the query's dtype, the last dim written out; the other kernels get the mask as it is."""
    from tdx.attention import _params, _torch

    q, k, v, mask, kw = _case("bool_mask", dtype="float16")
    t = [_tdx(a, "cpu", "float16") for a in (q, k, v)]
    p = _params.prepare(*t, attn_mask=_tdx(mask, "cpu", "float16"))
    cudnn = _torch.kernel_mask(p, SDPBackend.CUDNN_ATTENTION)
    assert cudnn.dtype == torch.float16 and cudnn.shape == p.mask.shape
    assert torch.equal(cudnn, torch.where(p.mask, 0.0, float("-inf")).half())
    for b in (SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH, SDPBackend.FLASH_ATTENTION):
        assert _torch.kernel_mask(p, b) is p.mask, b  # torch's own -inf conversion serves these
    q, k, v, mask, kw = _case("float32_mask", dtype="float16")
    t = [_tdx(a, "cpu", "float16") for a in (q, k, v)]
    p = _params.prepare(*t, attn_mask=_tdx(mask, "cpu", "float32"))
    for b in (SDPBackend.EFFICIENT_ATTENTION, SDPBackend.CUDNN_ATTENTION):
        m = _torch.kernel_mask(p, b)
        assert m.dtype == torch.float16 and m.shape == (1, 3, 5, 7) and m.stride(-1) == 1, (b, m.dtype, m.stride())
        assert torch.equal(m, p.mask.half().expand(1, 3, 5, 7)), b
        qf, kf, vf = (a.float() for a in (p.q, p.k, p.v))
        got = torch.nn.functional.scaled_dot_product_attention(qf, kf, vf, attn_mask=m.float())
        assert _rel(got.numpy(), _oracle(q, k, v, mask)) <= TOL["float16"], b
    assert _torch.kernel_mask(p, SDPBackend.MATH) is p.mask


def _grads_tape(device, b, q, k, v, mask, cot, dtype, md, kw, mask_grad=False):
    """Gradients through ``Tensor.backward`` on an executor that records on tdx's tape."""
    leaves = [_tdx(a, device, dtype).requires_grad_() for a in (q, k, v)]
    tm = _tdx(mask, device, md or dtype)
    if mask_grad:
        tm.requires_grad_()
    with sdpa_kernel([b]):
        out = F.scaled_dot_product_attention(*leaves, attn_mask=tm, **kw)
    out.backward(_tdx(cot, device, dtype))  # outside the block: the recorded call keeps its kernel
    return [_host(out.detach())] + [_host(x.grad) for x in leaves + ([tm] if mask_grad else [])]


@pytest.mark.parametrize("name", ["plain", "bool_mask", "causal_short_q", "gqa", "value_dim"])
def test_tape_gradients(device, name, small_blocks):
    if tdx.backends.get(device).caps.native_autograd:
        pytest.skip(f"{device} records gradients natively (covered above)")
    q, k, v, mask, kw = _case(name, seed=6)
    cot = np.random.default_rng(7).standard_normal(_oracle(q, k, v, mask, **kw).shape)
    want = _oracle(q, k, v, mask, cot=cot, **kw)
    t = [_tdx(a, device, "float32").requires_grad_() for a in (q, k, v)]
    kernels = _usable(*t, _tdx(mask, device, "float32"), **kw)
    assert SDPBackend.MATH in kernels and SDPBackend.CHUNKED in kernels
    for b in kernels:
        got = _grads_tape(device, b, q, k, v, mask, cot, "float32", None, kw)
        for what, g, w in zip(("out", "dq", "dk", "dv"), got, want):
            assert _rel(g, w) <= 1e-5, f"{device} {b.name} {name} {what}: {_rel(g, w):.3g}"


def test_tape_mask_gradient(device):
    if tdx.backends.get(device).caps.native_autograd:
        pytest.skip(f"{device} records gradients natively (covered above)")
    q, k, v, mask, kw = _case("float_mask", seed=8)
    mask = np.where(np.isfinite(mask), mask, -30.0)
    cot = np.random.default_rng(9).standard_normal((2, 3, 5, 16))
    tm = torch.tensor(mask, requires_grad=True)
    ts = [torch.tensor(a, requires_grad=True) for a in (q, k, v)]
    with torch.nn.attention.sdpa_kernel([torch.nn.attention.SDPBackend.MATH]):
        out = torch.nn.functional.scaled_dot_product_attention(*ts, attn_mask=tm)
    want = [out.detach().numpy()] + [g.numpy() for g in torch.autograd.grad(out, ts + [tm], torch.tensor(cot))]
    t = [_tdx(a, device, "float32").requires_grad_() for a in (q, k, v)]
    m = _tdx(mask, device, "float32").requires_grad_()
    exp = A.explain(*t, attn_mask=m)
    bridge = (SDPBackend.BRIDGE,) if tdx.backends.get(device).caps.dlpack_zero_copy_export else ()  # else no bridge
    for b in (SDPBackend.MLX_FUSED, SDPBackend.CHUNKED) + bridge:
        assert "attn_mask" in exp.reasons.get(b, ""), (b, exp.reasons.get(b))
    assert exp.kernel == SDPBackend.MATH, exp.kernel
    got = _grads_tape(device, exp.kernel, q, k, v, mask, cot, "float32", None, {}, mask_grad=True)
    for what, g, w in zip(("out", "dq", "dk", "dv", "dmask"), got, want):
        assert _rel(g, w) <= 1e-5, (what, _rel(g, w))


# --- dropout -------------------------------------------------------------------------------

def _dropout_kernels(device, t):
    return [b for b in _usable(*t, dropout_p=0.3)]


def test_dropout_is_deterministic_per_seed(device, small_blocks):
    q, k, v, _, _ = _case("plain")
    t = [_tdx(a, device, "float32") for a in (q, k, v)]
    kernels = _dropout_kernels(device, t)
    assert SDPBackend.MLX_FUSED not in kernels and SDPBackend.FLASH_ATTENTION not in kernels
    assert kernels
    for b in kernels:
        outs = []
        for seed in (7, 7, 8):
            tdx.manual_seed(seed)
            with sdpa_kernel([b]):
                outs.append(_host(F.scaled_dot_product_attention(*t, dropout_p=0.3)))
        assert np.array_equal(outs[0], outs[1]), (device, b)
        assert not np.array_equal(outs[0], outs[2]), (device, b)


def test_dropout_expectation_matches_no_dropout(device, small_blocks):
    rng = np.random.default_rng(3)
    n, p = 3000, 0.25
    q, k, v = (np.broadcast_to(rng.standard_normal((1, 1, 4, 6)), (n, 1, 4, 6)).copy() for _ in range(3))
    t = [_tdx(a, device, "float32") for a in (q, k, v)]
    ref = _oracle(q[:1], k[:1], v[:1])[0]
    tdx.manual_seed(0)
    for b in _dropout_kernels(device, t):
        with sdpa_kernel([b]):
            out = _host(F.scaled_dot_product_attention(*t, dropout_p=p))
        mean, sem = out.mean(0), out.std(0) / np.sqrt(n)
        assert np.all(np.abs(mean - ref) <= 5 * sem + 1e-3), (device, b, np.abs(mean - ref).max())
        with sdpa_kernel([b]):
            zeros = _host(F.scaled_dot_product_attention(*t, dropout_p=1.0))
        assert np.all(zeros == 0), (device, b)


@pytest.mark.parametrize("is_causal", [True, False])
def test_dropout_expectation_3d_inputs(device, is_causal):
    # OpInfo's sample form: 3-D (batch, L, E) inputs, Lq < Lk, dropout_p=0.5 (causal or not)
    rng = np.random.default_rng(5)
    n = 4000
    q, k, v = rng.standard_normal((1, 3, 8)), rng.standard_normal((1, 6, 8)), rng.standard_normal((1, 6, 8))
    ref = torch.nn.functional.scaled_dot_product_attention(*(torch.tensor(a, dtype=torch.float32) for a in (q, k, v)),
                                                           is_causal=is_causal).numpy()[0]
    t = [_tdx(np.broadcast_to(a, (n,) + a.shape[1:]).copy(), device, "float32") for a in (q, k, v)]
    tdx.manual_seed(0)
    out = _host(F.scaled_dot_product_attention(*t, dropout_p=0.5, is_causal=is_causal))
    mean, sem = out.mean(0), out.std(0) / np.sqrt(n)
    assert np.all(np.abs(mean - ref) <= 5 * sem + 1e-3), (device, np.abs(mean - ref).max())
    assert not np.allclose(out[0], out[1])  # draws, not the dropout-free result


def test_dropout_backward_uses_forward_mask(device, small_blocks):
    """With ``v = I`` the output is the dropped attention matrix ``A``; ``dv`` must be ``A^T @ dout``."""
    rng = np.random.default_rng(4)
    B, H, Tq, Tk, E = 1, 2, 5, 6, 8
    q, k = rng.standard_normal((B, H, Tq, E)), rng.standard_normal((B, H, Tk, E))
    eye = np.broadcast_to(np.eye(Tk), (B, H, Tk, Tk)).copy()
    v = rng.standard_normal((B, H, Tk, Tk))
    cot = rng.standard_normal((B, H, Tq, Tk))
    ex = tdx.backends.get(device)
    t = [_tdx(a, device, "float32") for a in (q, k, v)]
    for b in _dropout_kernels(device, t):
        tdx.manual_seed(11)
        with sdpa_kernel([b]):
            attn = _host(F.scaled_dot_product_attention(t[0], t[1], _tdx(eye, device, "float32"), dropout_p=0.4))
        runs = [_grads_torch] if ex.caps.native_autograd else [_grads_mlx, _grads_tape]
        for run in runs:
            tdx.manual_seed(11)
            got = run(device, b, q, k, v, None, cot, "float32", None, {"dropout_p": 0.4})
            want_dv = np.swapaxes(attn, -1, -2) @ cot
            assert _rel(got[3], want_dv) <= 1e-5, (device, b, run.__name__)


# --- sdpa_kernel state -------------------------------------------------------------------------

def test_sdpa_kernel_restores_even_on_error():
    before = A.enabled_backends()
    with pytest.raises(KeyError):
        with sdpa_kernel([SDPBackend.CHUNKED]):
            assert A.enabled_backends() == (SDPBackend.CHUNKED,)
            with sdpa_kernel(SDPBackend.MATH):
                assert A.enabled_backends() == (SDPBackend.MATH,)
            assert A.enabled_backends() == (SDPBackend.CHUNKED,)
            raise KeyError("boom")
    assert A.enabled_backends() == before and A.context_backends() is None


def test_sdpa_kernel_as_decorator_and_torch_members():
    @sdpa_kernel([torch.nn.attention.SDPBackend.MATH, "chunked"])
    def inner():
        return A.enabled_backends()

    assert inner() == (SDPBackend.MATH, SDPBackend.CHUNKED)
    assert inner() == (SDPBackend.MATH, SDPBackend.CHUNKED)
    with pytest.raises(TypeError):
        with sdpa_kernel([3.5]):
            pass


def test_sdpa_kernel_is_per_thread():
    barrier = threading.Barrier(2, timeout=10)
    seen = {}

    def worker():
        with sdpa_kernel([SDPBackend.CHUNKED]):
            barrier.wait()
            seen["worker"] = A.enabled_backends()
            barrier.wait()

    th = threading.Thread(target=worker)
    th.start()
    barrier.wait()
    seen["main"] = A.enabled_backends()
    barrier.wait()
    th.join()
    assert seen["worker"] == (SDPBackend.CHUNKED,)
    assert len(seen["main"]) > 1 and A.context_backends() is None


def test_sdpa_kernel_is_per_asyncio_task():
    async def task(backend, out):
        with sdpa_kernel([backend]):
            for _ in range(3):
                await asyncio.sleep(0)
                out.append(A.enabled_backends())

    async def main():
        a, b = [], []
        await asyncio.gather(task(SDPBackend.MATH, a), task(SDPBackend.CHUNKED, b))
        return a, b

    a, b = asyncio.run(main())
    assert set(a) == {(SDPBackend.MATH,)} and set(b) == {(SDPBackend.CHUNKED,)}


def test_set_priority_orders_the_choice(device):
    q, k, v, _, _ = _case("plain")
    t = [_tdx(a, device, "float32") for a in (q, k, v)]
    with sdpa_kernel([SDPBackend.CHUNKED, SDPBackend.MATH], set_priority=True):
        assert A.explain(*t).kernel is SDPBackend.CHUNKED
    with sdpa_kernel([SDPBackend.MATH, SDPBackend.CHUNKED], set_priority=True):
        assert A.explain(*t).kernel is SDPBackend.MATH


def test_automatic_choice_prefers_fast_kernels(device):
    t = [tdx.randn(1, 8, 256, 64, device=device) for _ in range(3)]
    ex = tdx.backends.get(device)
    chosen = A.explain(*t).kernel
    usable = _usable(*t)
    fused = [b for b in (SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION) if b in usable]
    if fused:  # the fastest fused kernel that runs the inputs (CUDA's flash refuses float32: efficient then)
        assert chosen is fused[0], (chosen, usable)
    if str(device) == "mlx:cpu" and ex.caps.dlpack_zero_copy_export:  # (not under --mlx-as-gpu)
        assert chosen is SDPBackend.BRIDGE  # MLX's CPU kernels are far slower than torch's
    with sdpa_kernel([SDPBackend.MATH, SDPBackend.CHUNKED]):
        assert A.explain(*t).kernel is SDPBackend.MATH  # small inputs: the materializing kernel is cheaper
    tiny = [tdx.randn(1, 1, 4, 8, device=device) for _ in range(3)]
    if "mlx_fused" in ex.caps.sdpa_kernels:
        assert A.explain(*tiny).kernel is SDPBackend.MLX_FUSED  # the bridge's fixed cost dominates


def test_choosing_a_kernel_hands_no_array_over(device, monkeypatch):
    """The automatic choice weighs the bridge (the peer executor's kernels) from shapes, dtypes and flags: no
    input is handed to the peer while a kernel is only being chosen (on MLX that would evaluate the pending
    graph of every new shape's call, a blocking read inside an op); the values stay torch's."""
    import tdx.interop as interop

    handed = []
    real = interop.transfer
    monkeypatch.setattr(interop, "transfer", lambda x, *a, **k: handed.append(x) or real(x, *a, **k))
    ex = tdx.backends.get(device)
    gen = np.random.default_rng(7)
    for shape, mask in (((1, 2, 5, 8), None), ((2, 4, 3, 16), "bool"), ((1, 8, 96, 64), None)):
        q, k, v = (gen.standard_normal(shape).astype(np.float32) for _ in range(3))
        m = None if mask is None else gen.random((shape[-2], shape[-2])) > 0.3
        t = [tdx.tensor(a, device=device) for a in (q, k, v)]
        tm = None if m is None else tdx.tensor(m, device=device)
        chosen = A.explain(*t, attn_mask=tm).kernel
        handed.clear()
        out = None
        if chosen is SDPBackend.BRIDGE:  # its run hands the arrays over; only a choice must not
            A.explain(*t, attn_mask=tm)
        else:
            out = F.scaled_dot_product_attention(*t, attn_mask=tm)
        assert handed == [], (device, shape, chosen, ex.caps.dlpack_zero_copy_export)
        if out is not None:
            want = torch.nn.functional.scaled_dot_product_attention(
                *(torch.from_numpy(a) for a in (q, k, v)), attn_mask=None if m is None else torch.from_numpy(m))
            np.testing.assert_allclose(out.cpu().numpy(), want.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kind", ["bool", "float"])
def test_masked_calls_reuse_their_plan(device, kind, monkeypatch):
    """A decode loop with a rank-4 mask (a static KV cache's, or padding): each call's own mask and key length
    give torch's values, while the checked parameters are made once per length class, not every call."""
    from tdx.attention import _plan

    made = []
    real = _plan.prepare
    monkeypatch.setattr(_plan, "prepare", lambda *a, **k: made.append(1) or real(*a, **k))
    _plan.clear()
    gen = np.random.default_rng(11)
    q = gen.standard_normal((1, 4, 2, 8)).astype(np.float32)
    for tk in range(17, 24):  # one length class: 16..31
        k, v = (gen.standard_normal((1, 4, tk, 8)).astype(np.float32) for _ in range(2))
        m = gen.random((1, 1, 2, tk)) > 0.4
        m[..., 0] = True
        mask = m if kind == "bool" else np.where(m, gen.standard_normal(m.shape), -np.inf).astype(np.float32)
        out = F.scaled_dot_product_attention(*(tdx.tensor(a, device=device) for a in (q, k, v)),
                                             attn_mask=tdx.tensor(mask, device=device))
        want = torch.nn.functional.scaled_dot_product_attention(*(torch.from_numpy(a) for a in (q, k, v)),
                                                                 attn_mask=torch.from_numpy(mask))
        np.testing.assert_allclose(out.cpu().numpy(), want.numpy(), rtol=1e-5, atol=1e-5)
    assert len(made) == 1, made


def test_no_kernel_left_is_a_typed_error(device):
    q, k, v, _, _ = _case("plain")
    t = [_tdx(a, device, "float32") for a in (q, k, v)]
    with sdpa_kernel([]):
        with pytest.raises(A.NoKernelError) as info:
            F.scaled_dot_product_attention(*t)
    assert isinstance(info.value, RuntimeError) and isinstance(info.value, tdx.TdxError)
    assert "not listed" in str(info.value) and SDPBackend.MATH in info.value.reasons
    with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
        with pytest.raises(A.NoKernelError, match="cudnn"):
            F.scaled_dot_product_attention(*t)


def test_global_switches_govern_every_executor(device):
    cuda = pytest.importorskip("tdx.backends.cuda")
    q, k, v, _, _ = _case("plain")
    t = [_tdx(a, device, "float32") for a in (q, k, v)]
    cuda.enable_math_sdp(False)
    try:
        exp = A.explain(*t)
        assert "enable_math_sdp(False)" in exp.reasons[SDPBackend.MATH]
        with sdpa_kernel([SDPBackend.MATH]):  # an explicit block overrides the switch, as torch's does
            assert A.explain(*t).kernel is SDPBackend.MATH
    finally:
        cuda.enable_math_sdp(True)
    assert SDPBackend.MATH in A.enabled_backends()


def test_mlx_fused_switch(device):
    if "mlx_fused" not in tdx.backends.get(device).caps.sdpa_kernels:
        pytest.skip(f"{device} has no MLX fused kernel")
    mlx_flags = pytest.importorskip("tdx.backends.mlx")
    q, k, v, _, _ = _case("plain")
    t = [_tdx(a, device, "float32") for a in (q, k, v)]
    with mlx_flags.flags(fused_sdpa=False):
        assert "fused" in A.explain(*t).reasons[SDPBackend.MLX_FUSED]
    assert SDPBackend.MLX_FUSED in A.enabled_backends()


def test_config_priority(device, tmp_path, monkeypatch):
    (tmp_path / "tdx.toml").write_text('[attention]\npriority = ["chunked", "math"]\n')
    monkeypatch.chdir(tmp_path)
    q, k, v, _, _ = _case("plain")
    t = [_tdx(a, device, "float32") for a in (q, k, v)]
    tdx.config.reload()
    try:
        exp = A.explain(*t)
        assert exp.kernel is SDPBackend.CHUNKED
        assert "priority" in exp.reasons[SDPBackend.MLX_FUSED if str(device).startswith("mlx")
                                          else SDPBackend.FLASH_ATTENTION]
    finally:
        monkeypatch.undo()
        tdx.config.reload()


@contextlib.contextmanager
def _switched_off(enable):
    """A global switch (``enable_flash_sdp``) off for a ``with`` block."""
    enable(False)
    try:
        yield
    finally:
        enable(True)


def test_repeated_calls_follow_every_change_of_state(device, tmp_path, monkeypatch):
    """A call repeated with the same shapes (a cached plan) still runs the kernel the state in force
    picks: after a global switch turns its kernel off, inside ``sdpa_kernel`` blocks, under a config
    priority, and back. Every run matches torch."""
    from tdx.attention import _kernels, _plan

    ran = []
    real, real_direct = _kernels.pick, _kernels.direct

    def direct(p, backend):  # a planned call running its kernel directly records it too
        fn = real_direct(p, backend)
        return None if fn is None else (lambda *a: ran.append(backend) or fn(*a))

    monkeypatch.setattr(_kernels, "pick", lambda *a, **k: ran.append(real(*a, **k)) or ran[-1])
    monkeypatch.setattr(_kernels, "direct", direct)
    _plan.clear()  # plans made before hold no recording runner
    q, k, v, _, _ = _case("plain")
    want = _oracle(q, k, v, is_causal=True)
    t = [_tdx(a, device, "float32") for a in (q, k, v)]

    def run(expected=None):
        ran.clear()
        got = _host(F.scaled_dot_product_attention(*t, is_causal=True))
        assert _rel(got, want) < 1e-5
        assert ran[0] is (expected or A.explain(*t, is_causal=True).kernel)
        return ran[0]

    auto = run()
    assert run() is auto  # the planned call picks what the full path picked
    with sdpa_kernel([SDPBackend.CHUNKED, SDPBackend.MATH], set_priority=True):
        run(SDPBackend.CHUNKED)
    with sdpa_kernel([SDPBackend.MATH, SDPBackend.CHUNKED], set_priority=True):
        run(SDPBackend.MATH)
    assert run() is auto
    if auto is SDPBackend.FLASH_ATTENTION:
        off = _switched_off(pytest.importorskip("tdx.backends.cuda").enable_flash_sdp)
    elif auto is SDPBackend.MLX_FUSED:
        off = pytest.importorskip("tdx.backends.mlx").flags(fused_sdpa=False)
    else:
        off = None
    if off is not None:
        with off:
            assert run() is not auto
        assert run() is auto
    (tmp_path / "tdx.toml").write_text('[attention]\npriority = ["chunked", "math"]\n')
    here = os.getcwd()
    os.chdir(tmp_path)
    tdx.config.reload()
    try:
        run(SDPBackend.CHUNKED)
    finally:
        os.chdir(here)
        tdx.config.reload()
    assert run() is auto


@pytest.mark.parametrize("kernel", [None, SDPBackend.MATH, SDPBackend.CHUNKED], ids=str)
@pytest.mark.parametrize("gqa", [False, True])
def test_a_growing_kv_cache_matches_torch_at_every_length(device, gqa, kernel):
    """A generation's decode step: one query against a key/value cache one longer at each call (plans
    are kept per length class, so most calls reuse a plan built at another length). Every length gives
    torch's output and gradients; a key and value of unequal lengths in one class still raise."""
    rng = np.random.default_rng(3)
    Hq, Hk, E = 4, 2 if gqa else 4, 8
    q = rng.standard_normal((1, Hq, 1, E)).astype(np.float32).astype(np.float64)
    cache = rng.standard_normal((2, 1, Hk, 19, E)).astype(np.float32).astype(np.float64)
    with contextlib.ExitStack() as block:  # one block for every call: a plan is kept per block in force
        if kernel is not None:
            block.enter_context(sdpa_kernel([kernel]))
        for T in range(1, 20):
            k, v = cache[0, :, :, :T], cache[1, :, :, :T]
            kr = np.repeat(k, Hq // Hk, axis=1)
            vr = np.repeat(v, Hq // Hk, axis=1)
            cot = rng.standard_normal((1, Hq, 1, E))
            want, *wants = _oracle(q, kr, vr, cot=cot)
            t = [_tdx(a, device, "float32").requires_grad_(T % 2 == 0) for a in (q, k, v)]
            out = F.scaled_dot_product_attention(*t, enable_gqa=gqa)
            assert _rel(_host(out), want) < 1e-5, T
            if T % 2 == 0:
                out.backward(_tdx(cot, device, "float32"))
                assert _rel(_host(t[0].grad), wants[0]) < 1e-4, T
                for g, w in zip((t[1].grad, t[2].grad), wants[1:]):  # the repeated heads' gradients summed back
                    assert _rel(_host(g), w.reshape(1, Hk, Hq // Hk, T, E).sum(2)) < 1e-4, T
    k5, v6 = (_tdx(a, device, "float32") for a in (cache[0, :, :, :5], cache[1, :, :, :6]))
    with pytest.raises(RuntimeError):  # 5 and 6 share a class: the full path still checks them
        F.scaled_dot_product_attention(_tdx(q, device, "float32"), k5, v6, enable_gqa=gqa)


# --- explain, can_use, warnings ------------------------------------------------------------------

def test_explain_names_every_refusal(device):
    q, k, v, _, _ = _case("plain")
    t = [_tdx(a, device, "float32") for a in (q, k, v)]
    exp = A.explain(*t, dropout_p=0.2)
    assert exp.kernel is not None and exp.kernel not in (SDPBackend.FLASH_ATTENTION, SDPBackend.MLX_FUSED)
    ex = tdx.backends.get(device)
    for b in (SDPBackend.FLASH_ATTENTION, SDPBackend.MLX_FUSED):
        if b is SDPBackend.FLASH_ATTENTION and "flash" not in ex.caps.sdpa_kernels:
            continue
        if b is SDPBackend.MLX_FUSED and "mlx_fused" not in ex.caps.sdpa_kernels:
            continue
        if b is SDPBackend.FLASH_ATTENTION and "efficient" in ex.caps.sdpa_kernels:
            # CUDA's flash kernel has dropout: torch's own can_use_flash_attention refuses these float32 inputs
            assert "dtype" in exp.reasons[b], exp.reasons[b]
        else:
            assert "dropout" in exp.reasons[b], exp.reasons[b]
    cudnn = exp.reasons[SDPBackend.CUDNN_ATTENTION]
    if "cudnn" in ex.caps.sdpa_kernels:  # torch's can_use_cudnn_attention gives the reason (float32 inputs)
        assert isinstance(cudnn, str) and cudnn, cudnn
    else:
        assert "has no native 'cudnn' kernel" in cudnn, cudnn
    text = str(exp)
    assert exp.kernel.name in text and "->" in text


def test_can_use_reports_reasons(device):
    q, k, v, _, _ = _case("plain")
    t = [_tdx(a, device, "float32") for a in (q, k, v)]
    params = A.SDPAParams(*t, None, 0.5, False, False)
    assert not A.can_use_cudnn_attention(params)
    with pytest.warns(UserWarning, match="cannot be used"):
        A.can_use_flash_attention(params, debug=True)
    if tdx.device(device).type in ("cuda", "mps"):  # torch draws attention dropout inside its fused kernels there
        assert not A.can_use(SDPBackend.CHUNKED, params)
        assert "dropout" in A.explain(*t, dropout_p=0.5).reasons[SDPBackend.CHUNKED]
    else:
        assert A.can_use(SDPBackend.CHUNKED, params)
    assert A.can_use("math", A.SDPAParams(*t))


def test_warn_for_unfused_kernels(monkeypatch):
    q, k, v, _, _ = _case("plain")
    t = [_tdx(a, "cpu", "float32") for a in (q, k, v)]
    monkeypatch.setattr(A, "WARN_FOR_UNFUSED_KERNELS", True)
    for _ in range(2):  # the first call works the choice out in full, the second reuses its plan
        with pytest.warns(UserWarning, match="unfused math kernel") as caught:
            with sdpa_kernel([SDPBackend.MATH]):
                F.scaled_dot_product_attention(*t)
        assert [w.filename for w in caught] == [__file__]  # the warning points at the caller's line


def test_chunked_memory_is_bounded():
    for B, H, L in [(1, 8, 16384), (4, 32, 8192), (1, 1, 131072)]:
        bq, bk = _chunked.block_sizes(B, H, L, L)
        assert B * H * bq * bk <= max(_chunked.BLOCK_BUDGET, B * H * _chunked.MIN_BLOCK ** 2)
        assert B * H * bq * bk * 4 * 8 < B * H * L * L * 4 / 4  # well under a quarter of the scores


def test_import_loads_no_framework():
    code = ("import sys, tdx.attention, tdx.compat.nn.functional, tdx.compat.nn; "
            "assert 'torch' not in sys.modules and 'mlx' not in sys.modules, "
            "[m for m in sys.modules if m.startswith(('torch', 'mlx'))]")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    subprocess.run([sys.executable, "-c", code], check=True, env=env)


# --- bad inputs ----------------------------------------------------------------------------

def _bad(device, qs=(2, 4, 8, 16), ks=(2, 4, 8, 16), vs=(2, 4, 8, 16), dtype="float32", mask=None, **kw):
    rng = np.random.default_rng(0)
    t = [_tdx(rng.standard_normal(s), device, dtype) for s in (qs, ks, vs)]
    return lambda: F.scaled_dot_product_attention(*t, attn_mask=mask, **kw)


BAD = {
    "batch": (dict(ks=(3, 4, 8, 16), vs=(3, 4, 8, 16)), A.AttentionShapeError, "batch dims"),
    "heads": (dict(ks=(2, 3, 8, 16), vs=(2, 3, 8, 16)), A.AttentionShapeError, "head dims"),
    "gqa_not_divisible": (dict(ks=(2, 3, 8, 16), vs=(2, 3, 8, 16), enable_gqa=True), A.AttentionShapeError,
                          "must divide"),
    "gqa_hint": (dict(ks=(2, 2, 8, 16), vs=(2, 2, 8, 16)), A.AttentionShapeError, "enable_gqa=True"),
    "feature": (dict(ks=(2, 4, 8, 8), vs=(2, 4, 8, 8)), A.AttentionShapeError, "embedding dim"),
    "kv_length": (dict(vs=(2, 4, 9, 16)), A.AttentionShapeError, "same sequence length"),
    "rank1": (dict(qs=(16,), ks=(16,), vs=(16,)), A.AttentionShapeError, "at least 2 dimensional"),
    "int_dtype": (dict(dtype="int64"), A.AttentionDtypeError, "floating-point"),
    "dropout": (dict(dropout_p=1.5), A.AttentionValueError, "between 0 and 1"),
}


@pytest.mark.parametrize("name", list(BAD))
def test_bad_inputs_raise_typed_errors(device, name):
    kw, err, text = BAD[name]
    with pytest.raises(err, match=text) as info:
        _bad(device, **kw)()
    assert isinstance(info.value, tdx.TdxError)
    assert isinstance(info.value, RuntimeError if err is not A.AttentionValueError else ValueError)


def test_bad_masks_and_mixtures(device):
    mask = tdx.ones(3, 8, dtype=tdx.bool, device=device)
    with pytest.raises(A.AttentionShapeError, match=r"\[3, 8\] does not broadcast"):
        _bad(device, mask=mask)()
    with pytest.raises(A.AttentionDtypeError, match="attn_mask dtype"):
        _bad(device, mask=tdx.ones(8, 8, dtype=tdx.int64, device=device))()
    with pytest.raises(A.SDPAError, match="is_causal"):
        _bad(device, mask=tdx.ones(8, 8, dtype=tdx.bool, device=device), is_causal=True)()
    rng = np.random.default_rng(0)
    q = _tdx(rng.standard_normal((2, 4, 8, 16)), device, "float32")
    with pytest.raises(A.AttentionDtypeError, match="same dtype"):
        F.scaled_dot_product_attention(q, q.double() if tdx.backends.get(device).caps.float64 else q.half(), q)
    with pytest.raises(TypeError):
        F.scaled_dot_product_attention(q, q, np.zeros((2, 4, 8, 16)))
    other = "mlx:cpu" if str(device) == "cpu" else "cpu"
    if any(r.device == other and r.available for r in tdx.backends.available()):
        with pytest.raises(tdx.DeviceMismatchError):
            F.scaled_dot_product_attention(q, q, q.to(other))
