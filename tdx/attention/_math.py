"""The math reference kernel, written once over :mod:`tdx.attention._ops`.

It materializes the ``Tq x Tk`` score matrix, exactly as torch's math path: scores in
float32 (float64 for float64 inputs), masks applied, a softmax whose fully-masked rows are
zeros (torch's ``_safe_softmax``), then dropout (torch's own mask where the draws are torch's:
:mod:`._dropout`) and the product with value. Also holds the score-masking helpers the chunked
kernel shares. It must never import a framework at module level and holds no kernel choice.
"""

from __future__ import annotations

__all__ = ["run", "apply_mask", "causal_keep", "grouped", "ungrouped"]

NEG_INF = float("-inf")


def grouped(ops, x, B, Hk, G):
    """``(B, Hk*G, T, E)`` as ``(B, Hk, G, T, E)`` (query heads ``hk*G .. hk*G+G-1`` share key head ``hk``)."""
    s = ops.shape(x)
    return ops.reshape(x, (B, Hk, G) + tuple(s[2:]))


def ungrouped(ops, x):
    s = ops.shape(x)
    return ops.reshape(x, (s[0], s[1] * s[2]) + tuple(s[3:]))


def grouped_mask(ops, mask, Hk, G):
    """A canonical rank-4 mask ``(b, h, tq, tk)`` as rank 5 matching grouped scores."""
    b, h, tq, tk = ops.shape(mask)
    if h == 1:
        return ops.reshape(mask, (b, 1, 1, tq, tk))
    return ops.reshape(mask, (b, Hk, G, tq, tk))


def causal_keep(ops, q0, q1, k0, k1):
    """Bool ``(q1-q0, k1-k0)``: True where key ``j`` may be seen by query ``i`` (``j <= i``, top-left)."""
    rows = ops.reshape(ops.arange(q0, q1), (q1 - q0, 1))
    cols = ops.reshape(ops.arange(k0, k1), (1, k1 - k0))
    return ops.ge(rows, cols)


def apply_mask(ops, s, mask, kind, cd):
    """Scores ``s`` with a mask block applied: bool masks keep True, float masks are added."""
    if mask is None:
        return s
    if kind == "bool":
        return ops.where(mask, s, ops.scalar(NEG_INF, cd))
    return ops.add(s, ops.astype(mask, cd))


def safe_softmax(ops, s, cd):
    """Softmax over the last axis whose rows of only ``-inf`` are zeros, as torch's."""
    m = ops.amax(s, -1)
    zero = ops.scalar(0.0, cd)
    m = ops.where(ops.isfinite(m), m, zero)
    e = ops.exp(ops.sub(s, m))
    denom = ops.sum(e, -1)
    return ops.div(e, ops.where(ops.gt(denom, zero), denom, ops.scalar(1.0, cd)))


def run(p):
    """Attention by the definition; returns the canonical ``(B, Hq, Tq, Ev)`` native result."""
    ops = p.ops
    q, k, v = p.q, p.k, p.v
    dt = q.dtype
    if p.Tk == 0:  # no key: every row sees nothing, and torch returns zeros
        return ops.zeros((p.B, p.Hq, p.Tq, p.Ev), dt)
    cd = ops.compute_dtype(q)
    G = p.groups
    qs = ops.mul(ops.astype(q, cd), p.scale)
    qs = grouped(ops, qs, p.B, p.Hk, G)                       # (B, Hk, G, Tq, E)
    kk = ops.reshape(ops.astype(k, cd), (p.B, p.Hk, 1, p.Tk, p.E))
    vv = ops.reshape(ops.astype(v, cd), (p.B, p.Hk, 1, p.Tk, p.Ev))
    s = ops.matmul(qs, ops.mT(kk))                            # (B, Hk, G, Tq, Tk)
    if p.mask is not None:
        s = apply_mask(ops, s, grouped_mask(ops, p.mask, p.Hk, G), p.mask_kind, cd)
    if p.is_causal:
        s = ops.where(causal_keep(ops, 0, p.Tq, 0, p.Tk), s, ops.scalar(NEG_INF, cd))
    a = safe_softmax(ops, s, cd)
    if p.dropout_p > 0:
        if p.dropout_p >= 1:
            a = ops.mul(a, 0.0)
        else:
            from . import _dropout

            token = p.seed if p.seed is not None else _dropout.draw(p)
            a = _dropout.apply(ops, a, token, p.dropout_p, cd)
    out = ops.matmul(a, vv)                                    # (B, Hk, G, Tq, Ev)
    return ops.astype(ungrouped(ops, out), dt)
