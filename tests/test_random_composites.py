"""Composites consume torch's generator as torch's do: attention with dropout, the transformer layers,
alpha dropout, rrelu and Gumbel-softmax.

Each case runs seeded under real torch on CPU and under tdx on every device: the values (and, with
gradients, every input's gradient) must be torch's, bit for bit on cpu and within float32 rounding on
MLX (whose draws are torch's CPU generator's under the default torch random stream), and the next
``rand`` after the call must be torch's next one, so every draw after the composite stays in step.
Attention runs on every kernel tdx can choose for dropout on the device.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import tdx
from conftest import torch_twin


def _host(t):
    return t.detach().cpu().numpy() if isinstance(t, torch.Tensor) else t.detach().numpy(force=True)


def _close(device, got, want, what, exact=True):
    """Bit for bit on a torch device (``exact``: torch's own kernel ran), else within float32 rounding."""
    got, want = _host(got), _host(want)
    assert got.shape == want.shape, what
    if exact and tdx.backends.get(device).name == "torch":
        np.testing.assert_array_equal(got, want, err_msg=what)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=what)


def _seeded(m, seed, build, twin):
    """``build(m, device)`` after ``m.manual_seed(seed)``: (its tensors, the next ``rand(4)``)."""
    m.manual_seed(seed)
    outs = build(m, twin)
    return outs, m.rand(4, device=twin)


def _attention_inputs(m, d, Hk, Tq, Tk, with_mask):
    q = m.randn(2, 4, Tq, 8, device=d, requires_grad=True)
    k = m.randn(2, Hk, Tk, 8, device=d, requires_grad=True)
    v = m.randn(2, Hk, Tk, 8, device=d, requires_grad=True)
    mask = (m.rand(Tq, Tk, device=d) > 0.2) if with_mask else None
    return q, k, v, mask


ATTENTION = {  # name -> (key/value heads, Tq, Tk, mask, is_causal, dropout_p)
    "plain": (4, 5, 7, False, False, 0.3),
    "causal": (4, 6, 6, False, True, 0.2),
    "mask": (4, 5, 7, True, False, 0.5),
    "gqa": (2, 5, 7, False, False, 0.3),
}


@pytest.mark.parametrize("name", sorted(ATTENTION))
def test_attention_dropout_is_torchs_on_every_kernel(device, name):
    """torch's output, gradients and next draw after SDPA with dropout, whichever kernel runs."""
    Hk, Tq, Tk, with_mask, causal, p = ATTENTION[name]
    twin = torch_twin(device)
    kw = dict(dropout_p=p, is_causal=causal, enable_gqa=Hk != 4)

    def build(m, d, kernel=None):
        q, k, v, mask = _attention_inputs(m, d, Hk, Tq, Tk, with_mask)
        if kernel is None:
            out = m.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask, **kw)
        else:
            with tdx.attention.sdpa_kernel([kernel]):
                out = m.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask, **kw)
        out.backward(m.cos(m.arange(out.numel(), dtype=out.dtype, device=d)).reshape(out.shape))
        return [out, q.grad, k.grad, v.grad]

    want, want_next = _seeded(torch, 0, build, twin)
    q, k, v, mask = _attention_inputs(tdx, device, Hk, Tq, Tk, with_mask)
    kernels = [x.backend for x in tdx.attention.explain(q, k, v, attn_mask=mask, **kw).verdicts if x.usable]
    assert kernels, f"no kernel runs attention with dropout on {device}"
    for kernel in [None] + kernels:  # None: tdx's own choice, which on a torch device is torch's kernel
        got, got_next = _seeded(tdx, 0, lambda m, d: build(m, d, kernel), device)
        for what, g, w in zip(("out", "dq", "dk", "dv"), got, want):
            _close(device, g, w, f"{what} of {name} on {device} with {kernel}",
                   exact=kernel is None or kernel.value < 100)  # torch's own kernels
        np.testing.assert_array_equal(_host(got_next), _host(want_next), err_msg=f"next draw after {kernel}")


def test_attention_dropout_on_mlx_functions_is_torchs_under_mx_vjp():
    """MLX's own ``mx.vjp`` over tdx's attention (as MLX code differentiates it) sees torch's mask too."""
    if not any(r.device == "mlx:cpu" and r.available for r in tdx.backends.available()):
        pytest.skip("no MLX executor")
    import mlx.core as mx

    from tdx._tensor.wrapping import wrap

    torch.manual_seed(3)
    tq = torch.randn(1, 2, 4, 8, requires_grad=True)
    want = torch.nn.functional.scaled_dot_product_attention(tq, tq, tq, dropout_p=0.4)
    (gq,) = torch.autograd.grad(want, [tq], torch.ones_like(want))
    want_next = torch.rand(3)
    ex = tdx.backends.get("mlx:cpu")
    tdx.manual_seed(3)
    q = tdx.randn(1, 2, 4, 8, device="mlx:cpu")
    outs, grads = mx.vjp(lambda qn: tdx.nn.functional.scaled_dot_product_attention(
        wrap(qn, ex), wrap(qn, ex), wrap(qn, ex), dropout_p=0.4)._n, [q._n], [mx.ones((1, 2, 4, 8))])
    np.testing.assert_allclose(np.array(outs[0]), want.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.array(grads[0]), gq.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(tdx.rand(3).numpy(), want_next.numpy())


def _loss_of(build):
    """A case's build whose module (or function) output is reduced and differentiated."""
    def run(m, d):
        out, params = build(m, d)
        out = out[0] if isinstance(out, tuple) else out
        weights = m.cos(m.arange(out.numel(), dtype=out.dtype, device=d)).reshape(out.shape)
        (out * weights).sum().backward()  # not a sum of squares: a layer norm's output makes that a constant
        return [out] + [x.grad for x in params if x.grad is not None]
    return run


def _module(make, *shapes):
    def build(m, d):
        mod = make(m, d).train()
        xs = [m.randn(*s, device=d, requires_grad=True) for s in shapes]
        return mod(*xs), xs + list(mod.parameters())
    return build


def _function(fn, shape):
    def build(m, d):
        x = m.randn(*shape, device=d, requires_grad=True)
        return fn(m, x), [x]
    return build


COMPOSITES = {
    "encoder_layer": _module(lambda m, d: m.nn.TransformerEncoderLayer(16, 4, 32, dropout=0.2, device=d), (3, 5, 16)),
    "encoder_layer_batch_first": _module(lambda m, d: m.nn.TransformerEncoderLayer(
        16, 4, 32, dropout=0.2, batch_first=True, norm_first=True, device=d), (3, 5, 16)),
    "decoder_layer": _module(lambda m, d: m.nn.TransformerDecoderLayer(16, 4, 32, dropout=0.2, device=d),
                             (3, 5, 16), (4, 5, 16)),
    "multihead_attention": _module(lambda m, d: m.nn.MultiheadAttention(16, 4, dropout=0.3, device=d),
                                   (5, 3, 16), (5, 3, 16), (5, 3, 16)),
    "dropout_on_a_transpose": _function(lambda m, x: m.nn.functional.dropout(x.transpose(0, 1), 0.4), (6, 5, 3)),
    "alpha_dropout": _function(lambda m, x: m.nn.functional.alpha_dropout(x, 0.3, training=True), (40,)),
    "alpha_dropout_on_a_transpose": _function(
        lambda m, x: m.nn.functional.alpha_dropout(x.t(), 0.3, training=True), (8, 5)),
    "feature_alpha_dropout": _function(lambda m, x: m.nn.functional.feature_alpha_dropout(x, 0.3, training=True),
                                       (4, 6, 3)),
    "rrelu": _function(lambda m, x: m.nn.functional.rrelu(x, training=True), (40,)),
    "rrelu_module": _module(lambda m, d: m.nn.RReLU(0.1, 0.4), (5, 8)),
    "gumbel_softmax": _function(lambda m, x: m.nn.functional.gumbel_softmax(x, tau=0.5), (4, 6)),
    "gumbel_softmax_hard": _function(lambda m, x: m.nn.functional.gumbel_softmax(x, hard=True, dim=0), (4, 6)),
}


@pytest.mark.parametrize("name", sorted(COMPOSITES))
def test_composite_draws_torchs_numbers(device, name):
    """Values, gradients and the next draw after a composite that draws, against torch."""
    twin = torch_twin(device)
    run = _loss_of(COMPOSITES[name])
    want, want_next = _seeded(torch, 1, run, twin)
    got, got_next = _seeded(tdx, 1, run, device)
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        _close(device, g, w, f"{name} tensor {i} on {device}")
    np.testing.assert_array_equal(_host(got_next), _host(want_next), err_msg=f"next draw after {name}")


def test_with_dropout_only_kernels_drawing_torchs_mask_may_run(monkeypatch):
    """The rule behind CUDA's choice, checked on cpu: a native kernel other than the one torch itself picks, or a
    kernel of tdx's own where torch fuses its dropout draw, is refused with the reason; without dropout both run."""
    from tdx.attention import SDPBackend, _kernels, _ops, _torch

    q = tdx.randn(1, 2, 4, 8)
    monkeypatch.setattr(_torch, "own_choice", lambda p: SDPBackend.EFFICIENT_ATTENTION)
    monkeypatch.setattr(_ops.TorchOps, "can_draw_noise", lambda self: False)
    _kernels.clear_cache()
    try:
        exp = tdx.attention.explain(q, q, q, dropout_p=0.3)
        assert "only the kernel torch runs draws torch's dropout mask" in exp.reasons[SDPBackend.MATH]
        assert "cannot draw torch's dropout mask" in exp.reasons[SDPBackend.CHUNKED]
        assert exp.kernel is None
        assert tdx.attention.explain(q, q, q).kernel is not None
    finally:
        monkeypatch.undo()
        _kernels.clear_cache()
    assert tdx.attention.explain(q, q, q, dropout_p=0.3).kernel is SDPBackend.MATH
