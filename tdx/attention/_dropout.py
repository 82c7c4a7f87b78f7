"""How attention draws its dropout mask: torch's mask from torch's generator, or a seed.

torch's math kernel drops attention weights as ``F.dropout`` does: on the ``(B, Hq, Tq, Tk)``
weights in the compute dtype (float32 for half inputs) it draws ``noise = empty_like(attn).bernoulli_(1 - p)``,
divides it by ``1 - p`` and multiplies. Where an executor's draws are torch's (the torch executors,
and MLX while the torch random stream is in force: :meth:`Ops.generator_key` names the generator),
the kernels tdx runs itself draw exactly that noise from that generator, so the values and the
generator's state after the call are torch's: the math and chunked kernels draw the whole noise at
once (:func:`draw`, a :class:`Noise` they multiply by, block by block for the chunked kernel), and
the bridge runs torch's own kernel on the shared generator (a :class:`HostState` replays it). Under
MLX's native stream a kernel draws a seed and its masks are a pure function of it (the chunked
kernel's memory then stays linear in the sequence length).

The token a call draws (a :class:`Noise`, a :class:`HostState` or an int seed) is fixed once per
call: tdx's tape records it with the call, so the backward pass sees the forward pass's mask.
This module must never import a framework and holds no kernel choice.
"""

from __future__ import annotations

__all__ = ["Noise", "HostState", "key", "exact", "draw", "apply"]


class Noise:
    """torch's scaled dropout noise for one call: a native ``(B, Hq, Tq, Tk)`` array of ``0`` and
    ``1 / (1 - p)`` in the compute dtype, drawn from torch's generator as torch's math kernel draws it."""

    __slots__ = ("array",)

    def __init__(self, array):
        self.array = array


class HostState:
    """The state of torch's generator before a bridged call drew its mask: the forward pass draws from
    the generator itself, a replay (the backward pass's recomputation) restores this state first."""

    __slots__ = ("state",)

    def __init__(self, state):
        self.state = state


def key(p):
    """The generator ``p``'s dropout must draw from as torch does (``"torch:cpu"``...), or None where a
    kernel may draw its own (no dropout to draw, MLX's native stream, an executor without an adapter)."""
    if not 0 < p.dropout_p < 1 or p.ops is None:
        return None
    return p.ops.generator_key()


def exact(p) -> bool:
    """Whether ``p``'s dropout must be torch's draw."""
    return key(p) is not None


def draw(p):
    """The dropout token of a math or chunked call on params ``p`` (``0 < dropout_p < 1``): torch's
    :class:`Noise` where the draws are torch's, else a seed from the executor's generator; None when
    the weights are empty (torch draws nothing for them)."""
    if p.B * p.Hq * p.Tq * p.Tk == 0:
        return None
    ops = p.ops
    if exact(p):
        cd = ops.compute_dtype(p.q)
        return Noise(ops.noise((p.B, p.Hq, p.Tq, p.Tk), p.dropout_p, cd))
    return ops.draw_seed()


def apply(ops, a, token, p: float, cd):
    """Attention weights ``a`` (any reshape of ``(B, Hq, Tq, Tk)``) with the dropout of ``token`` applied."""
    if token is None:
        return a
    if token.__class__ is Noise:
        return ops.mul(a, ops.reshape(token.array, ops.shape(a)))
    keep = ops.keep_mask(ops.shape(a), p, token)
    return ops.where(keep, ops.mul(a, 1.0 / (1.0 - p)), ops.scalar(0.0, cd))
