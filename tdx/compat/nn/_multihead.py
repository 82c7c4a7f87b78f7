"""``F.multi_head_attention_forward``: torch's multi-head attention, composed from tdx ops.

The op order is torch's (``torch/nn/functional.py``): packed or separate input projections,
``bias_k``/``bias_v`` and zero-attention columns, boolean masks turned into ``-inf`` float masks
and summed with the key-padding mask, then either explicit weights (``baddbmm`` of the scaled
queries, softmax, dropout, ``bmm``) when ``need_weights``, or tdx's
``scaled_dot_product_attention`` (each executor's own kernel) when not. Runs and differentiates on
every executor.

This module must never import torch or mlx.
"""

from __future__ import annotations

import math
import warnings

import tdx

from ...attention import scaled_dot_product_attention
from ._activations import softmax
from ._layers import dropout, linear, pad

__all__ = ["multi_head_attention_forward", "canonical_mask", "MHAShapeError"]


class MHAShapeError(tdx.TdxError, AssertionError):
    """A shape or argument combination torch's multi-head attention refuses with an AssertionError."""


def _check(cond, message):
    if not cond:
        raise MHAShapeError(message)


def canonical_mask(mask, mask_name, other_type, other_name, target_type, check_other=True):
    """A boolean mask as a float mask of ``target_type`` (True -> ``-inf``); float masks pass through.

    Raises:
        MHAShapeError: a mask that is neither boolean nor floating (an AssertionError, as torch's).
    """
    if mask is None:
        return None
    if not mask.dtype.is_floating_point and mask.dtype is not tdx.bool:
        raise MHAShapeError(f"only bool and floating types of {mask_name} are supported, got {mask.dtype}")
    if check_other and other_type is not None and mask.dtype is not other_type:
        warnings.warn(f"Support for mismatched {mask_name} and {other_name} is deprecated. Use same type for both "
                      "instead.", UserWarning, stacklevel=3)
    if mask.dtype is tdx.bool:
        return tdx.zeros(tuple(mask.shape), dtype=target_type, device=mask.device).masked_fill(mask, float("-inf"))
    return mask


def _dtype_or_none(t):
    return None if t is None else t.dtype


def _shape_check(query, key, value, key_padding_mask, attn_mask, num_heads) -> bool:
    """Whether the inputs are batched (torch's ``_mha_shape_check``)."""
    if query.ndim == 3:
        _check(key.ndim == 3 and value.ndim == 3, "For batched (3-D) `query`, expected `key` and `value` to be 3-D "
               f"but found {key.ndim}-D and {value.ndim}-D tensors respectively")
        if key_padding_mask is not None:
            _check(key_padding_mask.ndim == 2, "For batched (3-D) `query`, expected `key_padding_mask` to be `None` "
                   f"or 2-D but found {key_padding_mask.ndim}-D tensor instead")
        if attn_mask is not None:
            _check(attn_mask.ndim in (2, 3), "For batched (3-D) `query`, expected `attn_mask` to be `None`, 2-D or "
                   f"3-D but found {attn_mask.ndim}-D tensor instead")
        return True
    if query.ndim == 2:
        _check(key.ndim == 2 and value.ndim == 2, "For unbatched (2-D) `query`, expected `key` and `value` to be "
               f"2-D but found {key.ndim}-D and {value.ndim}-D tensors respectively")
        if key_padding_mask is not None:
            _check(key_padding_mask.ndim == 1, "For unbatched (2-D) `query`, expected `key_padding_mask` to be "
                   f"`None` or 1-D but found {key_padding_mask.ndim}-D tensor instead")
        if attn_mask is not None:
            _check(attn_mask.ndim in (2, 3), "For unbatched (2-D) `query`, expected `attn_mask` to be `None`, 2-D "
                   f"or 3-D but found {attn_mask.ndim}-D tensor instead")
            if attn_mask.ndim == 3:
                expected = (num_heads, query.shape[0], key.shape[0])
                _check(tuple(attn_mask.shape) == expected,
                       f"Expected `attn_mask` shape to be {expected} but got {tuple(attn_mask.shape)}")
        return False
    raise MHAShapeError(f"query should be unbatched 2D or batched 3D tensor but received {query.ndim}-D query tensor")


def _packed_projection(q, k, v, w, b):
    e = q.shape[-1]
    if k is v:
        if q is k:  # self-attention: one projection, split into q, k, v
            proj = linear(q, w, b)
            proj = proj.unflatten(-1, (3, e)).unsqueeze(0).transpose(0, -2).squeeze(-2).contiguous()
            return proj[0], proj[1], proj[2]
        w_q, w_kv = w.split([e, e * 2])
        b_q, b_kv = (None, None) if b is None else b.split([e, e * 2])
        kv = linear(k, w_kv, b_kv)
        kv = kv.unflatten(-1, (2, e)).unsqueeze(0).transpose(0, -2).squeeze(-2).contiguous()
        return linear(q, w_q, b_q), kv[0], kv[1]
    w_q, w_k, w_v = w.chunk(3)
    b_q, b_k, b_v = (None, None, None) if b is None else b.chunk(3)
    return linear(q, w_q, b_q), linear(k, w_k, b_k), linear(v, w_v, b_v)


def _separate_projection(q, k, v, w_q, w_k, w_v, b_q, b_k, b_v):
    eq, ek, ev = q.shape[-1], k.shape[-1], v.shape[-1]
    _check(tuple(w_q.shape) == (eq, eq), f"expecting query weights shape of {(eq, eq)}, but got {tuple(w_q.shape)}")
    _check(tuple(w_k.shape) == (eq, ek), f"expecting key weights shape of {(eq, ek)}, but got {tuple(w_k.shape)}")
    _check(tuple(w_v.shape) == (eq, ev), f"expecting value weights shape of {(eq, ev)}, but got {tuple(w_v.shape)}")
    return linear(q, w_q, b_q), linear(k, w_k, b_k), linear(v, w_v, b_v)


def _static(t, name, bsz, num_heads, head_dim):
    _check(t.shape[0] == bsz * num_heads, f"expecting {name}.size(0) of {bsz * num_heads}, but got {t.shape[0]}")
    _check(t.shape[2] == head_dim, f"expecting {name}.size(2) of {head_dim}, but got {t.shape[2]}")
    return t


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads, in_proj_weight,  # noqa: PLR0913
                                 in_proj_bias, bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight,
                                 out_proj_bias, training=True, key_padding_mask=None, need_weights=True,
                                 attn_mask=None, use_separate_proj_weight=False, q_proj_weight=None,
                                 k_proj_weight=None, v_proj_weight=None, static_k=None, static_v=None,
                                 average_attn_weights=True, is_causal=False):
    """Multi-head attention with torch's signature and semantics (sequence-first layout).

    Args:
        query: ``(L, N, E)`` or unbatched ``(L, E)``; ``key``/``value``: ``(S, N, E_k/E_v)`` or ``(S, E_*)``.
        embed_dim_to_check: ``E``; num_heads: heads (``E`` must divide evenly).
        in_proj_weight, in_proj_bias: the packed ``(3E, E)`` projection (or q/k/v_proj_weight with
            ``use_separate_proj_weight``).
        bias_k, bias_v: ``(1, 1, E)`` biases appended to the keys and values, or None.
        add_zero_attn: append a zero key and value.
        dropout_p: dropout on the attention weights (only when ``training``).
        out_proj_weight, out_proj_bias: the output projection.
        key_padding_mask: ``(N, S)`` (``(S,)`` unbatched), bool (True = ignore) or float (added).
        need_weights: also return the attention weights (computed explicitly); otherwise tdx's SDPA runs.
        attn_mask: ``(L, S)`` or ``(N * num_heads, L, S)``, bool or float.
        static_k, static_v: precomputed ``(N * num_heads, S, E / num_heads)`` keys and values.
        average_attn_weights: average the returned weights over heads.
        is_causal: a hint that ``attn_mask`` is the causal mask (an ``attn_mask`` is still required).

    Returns:
        ``(attn_output, attn_weights)``; weights are None unless ``need_weights``.

    Raises:
        MHAShapeError: shapes torch asserts on (an AssertionError).
        ShapeError: an ``attn_mask`` of the wrong shape or rank (a RuntimeError).
        TdxRuntimeError-kind ``UnsupportedOpError``: ``is_causal`` without ``attn_mask``.
    """
    is_batched = _shape_check(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not is_batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    src_len = key.shape[0]
    key_padding_mask = canonical_mask(key_padding_mask, "key_padding_mask", _dtype_or_none(attn_mask), "attn_mask",
                                      query.dtype)
    if is_causal and attn_mask is None:
        raise tdx.UnsupportedOpError("Need attn_mask if specifying the is_causal hint. You may use the Transformer "
                                     "module method `generate_square_subsequent_mask` to create this mask.")
    if is_causal and key_padding_mask is None and not need_weights:
        attn_mask = None  # SDPA builds the causal mask itself
    else:
        attn_mask = canonical_mask(attn_mask, "attn_mask", None, "", query.dtype, check_other=False)
        if key_padding_mask is not None:
            is_causal = False
    _check(embed_dim == embed_dim_to_check,
           f"was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}")
    head_dim = embed_dim // num_heads
    _check(head_dim * num_heads == embed_dim, f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if use_separate_proj_weight:
        _check(tuple(key.shape[:2]) == tuple(value.shape[:2]), f"key's sequence and batch dims {tuple(key.shape[:2])}"
               f" do not match value's {tuple(value.shape[:2])}")
    else:
        _check(tuple(key.shape) == tuple(value.shape),
               f"key shape {tuple(key.shape)} does not match value shape {tuple(value.shape)}")

    if not use_separate_proj_weight:
        _check(in_proj_weight is not None, "use_separate_proj_weight is False but in_proj_weight is None")
        q, k, v = _packed_projection(query, key, value, in_proj_weight, in_proj_bias)
    else:
        _check(q_proj_weight is not None, "use_separate_proj_weight is True but q_proj_weight is None")
        _check(k_proj_weight is not None, "use_separate_proj_weight is True but k_proj_weight is None")
        _check(v_proj_weight is not None, "use_separate_proj_weight is True but v_proj_weight is None")
        b_q, b_k, b_v = (None, None, None) if in_proj_bias is None else in_proj_bias.chunk(3)
        q, k, v = _separate_projection(query, key, value, q_proj_weight, k_proj_weight, v_proj_weight, b_q, b_k, b_v)

    if attn_mask is not None:
        if attn_mask.ndim == 2:
            if tuple(attn_mask.shape) != (tgt_len, src_len):
                raise tdx.ShapeError(f"The shape of the 2D attn_mask is {tuple(attn_mask.shape)}, but should be "
                                     f"{(tgt_len, src_len)}.")
            attn_mask = attn_mask.unsqueeze(0)
        elif attn_mask.ndim == 3:
            if tuple(attn_mask.shape) != (bsz * num_heads, tgt_len, src_len):
                raise tdx.ShapeError(f"The shape of the 3D attn_mask is {tuple(attn_mask.shape)}, but should be "
                                     f"{(bsz * num_heads, tgt_len, src_len)}.")
        else:
            raise tdx.ShapeError(f"attn_mask's dimension {attn_mask.ndim} is not supported (expected 2 or 3)")

    if bias_k is not None and bias_v is not None:
        _check(static_k is None, "bias cannot be added to static key.")
        _check(static_v is None, "bias cannot be added to static value.")
        k = tdx.cat([k, bias_k.repeat(1, bsz, 1)])
        v = tdx.cat([v, bias_v.repeat(1, bsz, 1)])
        if attn_mask is not None:
            attn_mask = pad(attn_mask, (0, 1))
        if key_padding_mask is not None:
            key_padding_mask = pad(key_padding_mask, (0, 1))
    else:
        _check(bias_k is None and bias_v is None, "bias_k and bias_v must both be given or both be None")

    q = q.view(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
    if static_k is None:
        k = k.view(k.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
    else:
        k = _static(static_k, "static_k", bsz, num_heads, head_dim)
    if static_v is None:
        v = v.view(v.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
    else:
        v = _static(static_v, "static_v", bsz, num_heads, head_dim)

    if add_zero_attn:
        zeros = (bsz * num_heads, 1, head_dim)
        k = tdx.cat([k, tdx.zeros(zeros, dtype=k.dtype, device=k.device)], 1)
        v = tdx.cat([v, tdx.zeros(zeros, dtype=v.dtype, device=v.device)], 1)
        if attn_mask is not None:
            attn_mask = pad(attn_mask, (0, 1))
        if key_padding_mask is not None:
            key_padding_mask = pad(key_padding_mask, (0, 1))

    src_len = k.shape[1]
    if key_padding_mask is not None:
        _check(tuple(key_padding_mask.shape) == (bsz, src_len), f"expecting key_padding_mask shape of "
               f"{(bsz, src_len)}, but got {tuple(key_padding_mask.shape)}")
        key_padding_mask = key_padding_mask.view(bsz, 1, 1, src_len).expand(-1, num_heads, -1, -1) \
            .reshape(bsz * num_heads, 1, src_len)
        attn_mask = key_padding_mask if attn_mask is None else attn_mask + key_padding_mask

    if not training:
        dropout_p = 0.0

    if need_weights:
        _, _, e = q.shape
        q_scaled = q * math.sqrt(1.0 / float(e))
        _check(not (is_causal and attn_mask is None), "is_causal is not implemented for need_weights without a mask")
        if attn_mask is not None:
            weights = tdx.baddbmm(attn_mask, q_scaled, k.transpose(-2, -1))
        else:
            weights = tdx.bmm(q_scaled, k.transpose(-2, -1))
        weights = softmax(weights, dim=-1)
        if dropout_p > 0.0:
            weights = dropout(weights, p=dropout_p)
        out = tdx.bmm(weights, v)
        out = out.transpose(0, 1).contiguous().view(tgt_len * bsz, embed_dim)
        out = linear(out, out_proj_weight, out_proj_bias)
        out = out.view(tgt_len, bsz, out.shape[1])
        weights = weights.view(bsz, num_heads, tgt_len, src_len)
        if average_attn_weights:
            weights = weights.mean(dim=1)
        if not is_batched:
            out, weights = out.squeeze(1), weights.squeeze(0)
        return out, weights

    if attn_mask is not None:
        if attn_mask.shape[0] == 1 and attn_mask.ndim == 3:
            attn_mask = attn_mask.unsqueeze(0)
        else:
            attn_mask = attn_mask.view(bsz, num_heads, -1, src_len)
    q = q.view(bsz, num_heads, tgt_len, head_dim)
    k = k.view(bsz, num_heads, src_len, head_dim)
    v = v.view(bsz, num_heads, src_len, head_dim)
    out = scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal)
    out = out.permute(2, 0, 1, 3).contiguous().view(bsz * tgt_len, embed_dim)
    out = linear(out, out_proj_weight, out_proj_bias)
    out = out.view(tgt_len, bsz, out.shape[1])
    if not is_batched:
        out = out.squeeze(1)
    return out, None
