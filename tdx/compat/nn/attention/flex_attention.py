"""``tdx.nn.attention.flex_attention`` (torch's ``torch.nn.attention.flex_attention``), computed eagerly.

``flex_attention(q, k, v, score_mod=..., block_mask=...)`` is ``softmax(score_mod(q @ k.mT * scale) + mask) @ v``
on every executor: the score and mask functions are called once on broadcast index tensors
(``b: (B,1,1,1)``, ``h: (1,H,1,1)``, ``q_idx: (1,1,Tq,1)``, ``kv_idx: (1,1,1,Tk)``), which gives torch's
meaning for every function written with tensor ops (what torch's compiled kernel also requires). A query
that sees no key outputs zeros and a log-sum-exp of ``-inf``, as torch's. :class:`BlockMask` keeps the mask
function and shape (tdx has no block-sparse kernel, so the mask is applied densely); torch's kernel options
and auxiliary outputs (``AuxRequest``) refuse by name. This module must never import a framework.
"""

from __future__ import annotations

import inspect
import math

import tdx

from ...._errors import TdxValueError

__all__ = ["flex_attention", "create_block_mask", "create_mask", "BlockMask", "and_masks", "or_masks", "noop_mask"]
__tdx_partial__ = True  # torch's other names here refuse at use (tdx.aliasing.torch_paths)
_DEFAULT_SPARSE_BLOCK_SIZE = 128  # torch's block size, which libraries (transformers) import as a default


def noop_mask(b, h, q_idx, kv_idx):
    """The mask function letting every query see every key."""
    return tdx.ones((), dtype=tdx.bool, device=b.device)


def and_masks(*mask_mods):
    """The mask function true where every one of ``mask_mods`` is."""
    def mask(b, h, q_idx, kv_idx):
        out = noop_mask(b, h, q_idx, kv_idx)
        for mod in mask_mods:
            out = out & mod(b, h, q_idx, kv_idx)
        return out
    return mask


def or_masks(*mask_mods):
    """The mask function true where any one of ``mask_mods`` is."""
    def mask(b, h, q_idx, kv_idx):
        out = tdx.zeros((), dtype=tdx.bool, device=b.device)
        for mod in mask_mods:
            out = out | mod(b, h, q_idx, kv_idx)
        return out
    return mask


def _indices(B, H, Q, KV, device):
    def idx(n, dim):
        shape = [1, 1, 1, 1]
        shape[dim] = n
        return tdx.arange(n, device=device).reshape(shape)
    return idx(B, 0), idx(H, 1), idx(Q, 2), idx(KV, 3)


def _arity(fn) -> int:
    try:
        return len(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return 4


def create_mask(mod_fn, B, H, Q_LEN, KV_LEN, device=None):
    """The dense boolean mask ``(B, H, Q_LEN, KV_LEN)`` of a mask function (or of a score function: where it
    leaves a score finite); ``B``/``H`` None means 1."""
    B, H = B or 1, H or 1
    b, h, q, kv = _indices(B, H, Q_LEN, KV_LEN, device)
    if _arity(mod_fn) == 5:
        out = mod_fn(tdx.zeros(B, H, Q_LEN, KV_LEN, device=device), b, h, q, kv)
        return (~tdx.isneginf(out)).expand(B, H, Q_LEN, KV_LEN)
    return tdx.broadcast_to(mod_fn(b, h, q, kv), (B, H, Q_LEN, KV_LEN))


class BlockMask:
    """A mask function with the shape it applies to (torch's block-sparse mask; tdx applies it densely).

    Attributes:
        mask_mod: the mask function ``(b, h, q_idx, kv_idx) -> bool tensor``.
        shape: ``(B, H, Q_LEN, KV_LEN)``.
        BLOCK_SIZE: ``(Q_BLOCK, KV_BLOCK)``, used by :meth:`to_dense`.
    """

    def __init__(self, mask_mod, shape, BLOCK_SIZE=(128, 128), device=None):  # noqa: N803 - torch's name
        self.mask_mod, self.shape, self.device = mask_mod, tuple(shape), device
        self.BLOCK_SIZE = (BLOCK_SIZE, BLOCK_SIZE) if isinstance(BLOCK_SIZE, int) else tuple(BLOCK_SIZE)
        self.seq_lengths = self.shape[-2:]

    def dense(self):
        """The element-level boolean mask ``shape``."""
        B, H, Q, KV = self.shape
        return create_mask(self.mask_mod, B, H, Q, KV, self.device)

    def to_dense(self):
        """The block-level mask: ``(B, H, ceil(Q/Q_BLOCK), ceil(KV/KV_BLOCK))`` int32, 1 where a block has a
        visible element."""
        B, H, Q, KV = self.shape
        qb, kb = self.BLOCK_SIZE
        nq, nk = math.ceil(Q / qb), math.ceil(KV / kb)
        dense = tdx.nn.functional.pad(self.dense().to(tdx.int32), (0, nk * kb - KV, 0, nq * qb - Q))
        return dense.reshape(B, H, nq, qb, nk, kb).amax(dim=(3, 5))

    def __repr__(self) -> str:
        return f"BlockMask(shape={self.shape}, BLOCK_SIZE={self.BLOCK_SIZE}, mask_mod={self.mask_mod.__name__})"


def create_block_mask(mask_mod, B, H, Q_LEN, KV_LEN, device=None, BLOCK_SIZE=128, _compile=False,  # noqa: N803
                      separate_full_blocks=True, compute_dq_write_order=False, dq_kv_order=True) -> BlockMask:
    """The :class:`BlockMask` of ``mask_mod`` over ``(B or 1, H or 1, Q_LEN, KV_LEN)``."""
    if _arity(mask_mod) != 4:
        raise TdxValueError("create_block_mask: mask_mod must take (b, h, q_idx, kv_idx); got a function of "
                            f"{_arity(mask_mod)} arguments (a score_mod goes to flex_attention's score_mod=)")
    return BlockMask(mask_mod, (B or 1, H or 1, Q_LEN, KV_LEN), BLOCK_SIZE, device)


def flex_attention(query, key, value, score_mod=None, block_mask=None, scale=None, enable_gqa=False,
                   return_lse=False, kernel_options=None, *, return_aux=None):
    """Attention with a score function and a mask, with torch's meaning, on any executor.

    Args:
        query: ``(B, Hq, Tq, E)``; key: ``(B, Hk, Tk, E)``; value: ``(B, Hk, Tk, Ev)``.
        score_mod: ``(score, b, h, q_idx, kv_idx) -> score``, applied to the scaled scores.
        block_mask: a :class:`BlockMask` (from :func:`create_block_mask`).
        scale: defaults to ``1 / sqrt(E)``.
        enable_gqa: allow ``Hk`` to divide ``Hq``.
        return_lse: also return the log-sum-exp of the scores ``(B, Hq, Tq)``.

    Returns:
        ``(B, Hq, Tq, Ev)``, and the log-sum-exp when ``return_lse``.
    """
    if return_aux is not None:
        from ...._errors import UnsupportedOpError

        raise UnsupportedOpError("flex_attention(return_aux=...) is not supported by tdx: auxiliary outputs come "
                                 "from torch's compiled kernel; use return_lse=True")
    if query.dim() != 4 or key.dim() != 4 or value.dim() != 4:
        raise TdxValueError(f"flex_attention: query, key and value must be 4-D (B, H, T, E); got shapes "
                            f"{tuple(query.shape)}, {tuple(key.shape)}, {tuple(value.shape)}")
    B, Hq, Tq, E = query.shape
    Hk, Tk = key.shape[1], key.shape[2]
    if Hq != Hk:
        if not enable_gqa or Hq % Hk:
            raise TdxValueError(f"flex_attention: query has {Hq} heads and key {Hk}; pass enable_gqa=True when "
                                f"{Hk} divides {Hq}")
        key, value = key.repeat_interleave(Hq // Hk, dim=1), value.repeat_interleave(Hq // Hk, dim=1)
    scale = 1.0 / math.sqrt(E) if scale is None else scale
    scores = (query @ key.transpose(-2, -1)) * scale
    if score_mod is not None or block_mask is not None:
        b, h, q, kv = _indices(B, Hq, Tq, Tk, query.device)
        if score_mod is not None:
            scores = score_mod(scores, b, h, q, kv)
        if block_mask is not None:
            visible = block_mask.mask_mod(b, h, q, kv)
            scores = scores.masked_fill(~tdx.broadcast_to(visible, scores.shape), float("-inf"))
    lse = scores.logsumexp(dim=-1)
    seen = tdx.isfinite(lse).unsqueeze(-1)
    weights = tdx.where(seen, (scores - tdx.where(seen, lse.unsqueeze(-1), 0.0)).exp(), 0.0)
    out = (weights.to(value.dtype) @ value)
    return (out, lse) if return_lse else out
