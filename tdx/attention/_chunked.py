"""The chunked online-softmax attention kernel, written once over :mod:`tdx.attention._ops`.

Queries are processed in blocks of ``bq`` rows and keys in blocks of ``bk`` columns; each
query block keeps a running row maximum, a running normalizer and an output accumulator, so
no more than one ``bq x bk`` block of scores exists at a time and memory grows linearly with
the sequence length. Causal blocks entirely above the diagonal are skipped. The backward
pass recomputes each block from the saved log-sum-exp (the same recurrences, no ``Tq x Tk``
storage); dropout masks are a pure function of a seed and the block index, so the backward
pass sees the masks the forward pass used. Where the draws must be torch's (:mod:`._dropout`),
the whole of torch's dropout noise is drawn first and each block takes its slice of it (the
memory of one ``Tq x Tk`` array, as torch's math kernel needs for it). Gradients: torch through an
``autograd.Function``, MLX through ``mx.custom_function`` (``mx.vjp``/``mx.grad`` work).

This module must never import a framework at module level and holds no kernel choice.
"""

from __future__ import annotations

import math

from . import _dropout
from ._dropout import Noise
from ._math import NEG_INF, apply_mask, causal_keep, grouped, grouped_mask, ungrouped

__all__ = ["run", "block_sizes", "forward", "backward"]

# elements of one block of scores across the batch and heads (float32: 32 MiB)
BLOCK_BUDGET = 1 << 23
MAX_BLOCK = 1024
MIN_BLOCK = 64


def block_sizes(B, H, Tq, Tk):
    """(bq, bk): powers of two with ``B*H*bq*bk`` within :data:`BLOCK_BUDGET`, at most the lengths."""
    side = int(math.sqrt(BLOCK_BUDGET / max(1, B * H)))
    side = max(MIN_BLOCK, min(MAX_BLOCK, 1 << max(0, side.bit_length() - 1)))
    return max(1, min(side, Tq)), max(1, min(side, Tk))


def _block_seed(seed, i, j):
    return (seed * 1_000_003 + i * 65_537 + j) % (1 << 62)


class _Job:
    """Non-array arguments of one chunked call (shared by forward and backward)."""

    __slots__ = ("B", "Hk", "G", "Tq", "Tk", "E", "Ev", "scale", "causal", "kind", "p", "seed", "bq", "bk")


def _job(p, seed):
    j = _Job()
    j.B, j.Hk, j.G, j.Tq, j.Tk, j.E, j.Ev = p.B, p.Hk, p.groups, p.Tq, p.Tk, p.E, p.Ev
    j.scale, j.causal, j.kind, j.p, j.seed = p.scale, p.is_causal, p.mask_kind, p.dropout_p, seed
    j.bq, j.bk = block_sizes(p.B, p.Hq, p.Tq, p.Tk)
    return j


def _blocks(j):
    """(query block start/end, [key block start/end ...]) pairs, skipping blocks above the diagonal."""
    for qi, q0 in enumerate(range(0, j.Tq, j.bq)):
        q1 = min(q0 + j.bq, j.Tq)
        kend = min(j.Tk, q1) if j.causal else j.Tk
        yield qi, q0, q1, [(ki, k0, min(k0 + j.bk, j.Tk)) for ki, k0 in enumerate(range(0, kend, j.bk))]


def _scores(ops, j, qs, kb, mask, q0, q1, k0, k1, cd):
    s = ops.matmul(qs, ops.mT(kb))                              # (B, Hk, G, nq, nk)
    if mask is not None:
        mq = (slice(None),) * 3 + ((slice(q0, q1) if ops.shape(mask)[3] > 1 else slice(None)),
                                   (slice(k0, k1) if ops.shape(mask)[4] > 1 else slice(None)))
        s = apply_mask(ops, s, mask[mq], j.kind, cd)
    if j.causal and k1 - 1 > q0:                                # the block crosses the diagonal
        s = ops.where(causal_keep(ops, q0, q1, k0, k1), s, ops.scalar(NEG_INF, cd))
    return s


def _dropped(ops, j, x, qi, ki, q0, q1, k0, k1, scaled: bool):
    """Block ``x`` of weights (or of their gradient) with the block's dropout applied; ``scaled``: with
    the ``1 / (1 - p)`` factor (a seed's masks leave it to the end of the forward pass)."""
    if j.seed is None:  # nothing drawn: empty weights
        return x
    if j.seed.__class__ is Noise:
        noise = ops.reshape(j.seed.array, (j.B, j.Hk, j.G, j.Tq, j.Tk))[:, :, :, q0:q1, k0:k1]
        return ops.mul(x, noise)
    keep = ops.keep_mask(ops.shape(x), j.p, _block_seed(j.seed, qi, ki))
    drop = 0.0 if j.p >= 1 else 1.0 / (1.0 - j.p)
    return ops.where(keep, ops.mul(x, drop) if scaled else x, ops.scalar(0.0, x.dtype))


def _prepare(ops, j, q, k, v, mask):
    cd = ops.compute_dtype(q)
    qs = grouped(ops, ops.mul(ops.astype(q, cd), j.scale), j.B, j.Hk, j.G)   # (B, Hk, G, Tq, E)
    kk = ops.reshape(ops.astype(k, cd), (j.B, j.Hk, 1, j.Tk, j.E))
    vv = ops.reshape(ops.astype(v, cd), (j.B, j.Hk, 1, j.Tk, j.Ev))
    mm = None if mask is None else grouped_mask(ops, mask, j.Hk, j.G)
    return cd, qs, kk, vv, mm


def forward(ops, j, q, k, v, mask):
    """Canonical inputs -> (output ``(B, Hq, Tq, Ev)`` in the input dtype, lse ``(B, Hk, G, Tq, 1)``).

    ``lse`` is ``+inf`` on rows that see no key (their output and gradients are zeros).
    """
    dt = q.dtype
    cd, qs, kk, vv, mm = _prepare(ops, j, q, k, v, mask)
    zero = ops.scalar(0.0, cd)
    outs, lses = [], []
    for qi, q0, q1, kblocks in _blocks(j):
        nq = q1 - q0
        qb = qs[:, :, :, q0:q1]
        m = ops.full((j.B, j.Hk, j.G, nq, 1), NEG_INF, cd)
        l = ops.zeros((j.B, j.Hk, j.G, nq, 1), cd)
        acc = ops.zeros((j.B, j.Hk, j.G, nq, j.Ev), cd)
        for ki, k0, k1 in kblocks:
            s = _scores(ops, j, qb, kk[:, :, :, k0:k1], mm, q0, q1, k0, k1, cd)
            m_new = ops.maximum(m, ops.amax(s, -1))
            m_safe = ops.where(ops.isfinite(m_new), m_new, zero)
            alpha = ops.exp(ops.sub(m, m_safe))
            e = ops.exp(ops.sub(s, m_safe))
            l = ops.add(ops.mul(l, alpha), ops.sum(e, -1))
            if j.p > 0:
                e = _dropped(ops, j, e, qi, ki, q0, q1, k0, k1, False)
            acc = ops.add(ops.mul(acc, alpha), ops.matmul(e, vv[:, :, :, k0:k1]))
            m = m_new
            if ops.lazy:
                ops.eval(m, l, acc)
        seen = ops.gt(l, zero)
        scale_out = 0.0 if j.p >= 1 else 1.0 if j.seed.__class__ is Noise or j.p == 0 else 1.0 / (1.0 - j.p)
        safe_l = ops.where(seen, l, ops.scalar(1.0, cd))
        outs.append(ops.where(seen, ops.mul(ops.div(acc, safe_l), scale_out), zero))
        m_safe = ops.where(ops.isfinite(m), m, zero)
        lses.append(ops.where(seen, ops.add(m_safe, ops.log(safe_l)), ops.scalar(float("inf"), cd)))
        if ops.lazy:
            ops.eval(outs[-1], lses[-1])
    if not outs:
        return ops.zeros((j.B, j.Hk * j.G, j.Tq, j.Ev), dt), ops.zeros((j.B, j.Hk, j.G, j.Tq, 1), cd)
    out = outs[0] if len(outs) == 1 else ops.cat(outs, 3)
    lse = lses[0] if len(lses) == 1 else ops.cat(lses, 3)
    return ops.astype(ungrouped(ops, out), dt), lse


def backward(ops, j, q, k, v, mask, out, lse, dout):
    """Gradients (dq, dk, dv) of the canonical inputs, recomputing each block of scores."""
    cd, qs, kk, vv, mm = _prepare(ops, j, q, k, v, mask)
    zero = ops.scalar(0.0, cd)
    do = grouped(ops, ops.astype(dout, cd), j.B, j.Hk, j.G)                 # (B, Hk, G, Tq, Ev)
    o = grouped(ops, ops.astype(out, cd), j.B, j.Hk, j.G)
    delta = ops.sum(ops.mul(do, o), -1)                                     # (B, Hk, G, Tq, 1)
    dq_blocks = []
    dk = [None] * len(range(0, j.Tk, j.bk))
    dv = [None] * len(dk)
    for qi, q0, q1, kblocks in _blocks(j):
        qb = qs[:, :, :, q0:q1]
        dob = do[:, :, :, q0:q1]
        lb = lse[:, :, :, q0:q1]
        db = delta[:, :, :, q0:q1]
        dqb = ops.zeros((j.B, j.Hk, j.G, q1 - q0, j.E), cd)
        for ki, k0, k1 in kblocks:
            kb, vb = kk[:, :, :, k0:k1], vv[:, :, :, k0:k1]
            s = _scores(ops, j, qb, kb, mm, q0, q1, k0, k1, cd)
            prob = ops.exp(ops.sub(s, lb))                                  # softmax block
            dpd = ops.matmul(dob, ops.mT(vb))                               # d(dropped probs)
            if 0 < j.p < 1:
                pd = _dropped(ops, j, prob, qi, ki, q0, q1, k0, k1, True)
                dp = _dropped(ops, j, dpd, qi, ki, q0, q1, k0, k1, True)
            elif j.p >= 1:
                pd, dp = ops.mul(prob, 0.0), ops.mul(dpd, 0.0)
            else:
                pd, dp = prob, dpd
            ds = ops.mul(prob, ops.sub(dp, db))
            gv = ops.sum(ops.matmul(ops.mT(pd), dob), 2, keepdims=False)    # (B, Hk, nk, Ev)
            gk = ops.sum(ops.matmul(ops.mT(ds), qb), 2, keepdims=False)     # (B, Hk, nk, E)
            dv[ki] = gv if dv[ki] is None else ops.add(dv[ki], gv)
            dk[ki] = gk if dk[ki] is None else ops.add(dk[ki], gk)
            dqb = ops.add(dqb, ops.matmul(ds, kb))
            if ops.lazy:
                ops.eval(dqb, dv[ki], dk[ki])
        dq_blocks.append(ops.mul(dqb, j.scale))
    dt = q.dtype
    dq = ops.astype(ungrouped(ops, _cat(ops, dq_blocks, 3, (j.B, j.Hk, j.G, 0, j.E), cd)), dt)
    sizes = [(k0, min(k0 + j.bk, j.Tk)) for k0 in range(0, j.Tk, j.bk)]
    dk = [ops.zeros((j.B, j.Hk, k1 - k0, j.E), cd) if g is None else g for g, (k0, k1) in zip(dk, sizes)]
    dv = [ops.zeros((j.B, j.Hk, k1 - k0, j.Ev), cd) if g is None else g for g, (k0, k1) in zip(dv, sizes)]
    dkk = ops.astype(_cat(ops, dk, 2, (j.B, j.Hk, 0, j.E), cd), dt)
    dvv = ops.astype(_cat(ops, dv, 2, (j.B, j.Hk, 0, j.Ev), cd), dt)
    return dq, dkk, dvv


def _cat(ops, xs, axis, empty_shape, cd):
    if not xs:
        return ops.zeros(empty_shape, cd)
    return xs[0] if len(xs) == 1 else ops.cat(xs, axis)


def run(p):
    """The chunked kernel on canonical params: the ``(B, Hq, Tq, Ev)`` native result, differentiable
    through the executor's own autograd (torch) or ``mx.vjp`` (MLX)."""
    ops = p.ops
    seed = (p.seed if p.seed is not None else _dropout.draw(p)) if 0 < p.dropout_p < 1 else 0
    j = _job(p, seed)
    if ops.lazy:
        return _mlx_run(ops, j, p)
    if p.requires_grad:
        return _torch_function()(ops, j, p.q, p.k, p.v, p.mask)
    return forward(ops, j, p.q, p.k, p.v, p.mask)[0]


_fn_cache: list = []


def _torch_function():
    """The torch ``autograd.Function`` of the chunked kernel (built once, on first use)."""
    if _fn_cache:
        return _fn_cache[0].apply
    import torch

    class ChunkedAttention(torch.autograd.Function):
        @staticmethod
        def forward(ctx, ops, j, q, k, v, mask):
            out, lse = forward(ops, j, q, k, v, mask)
            ctx.ops, ctx.j = ops, j
            ctx.save_for_backward(q, k, v, mask, out, lse)
            return out

        @staticmethod
        @torch.autograd.function.once_differentiable
        def backward(ctx, dout):
            q, k, v, mask, out, lse = ctx.saved_tensors
            dq, dk, dv = backward(ctx.ops, ctx.j, q, k, v, mask, out, lse, dout)
            return None, None, dq, dk, dv, None

    _fn_cache.append(ChunkedAttention)
    return ChunkedAttention.apply


def _mlx_run(ops, j, p):
    mx = ops.mx
    mask = p.mask

    @mx.custom_function
    def attend(q, k, v):
        return forward(ops, j, q, k, v, mask)

    @attend.vjp
    def attend_vjp(primals, cotangents, outputs):
        q, k, v = primals
        dout = cotangents[0] if isinstance(cotangents, (tuple, list)) else cotangents
        out, lse = outputs
        return backward(ops, j, q, k, v, mask, out, lse, dout)

    return attend(p.q, p.k, p.v)[0]
