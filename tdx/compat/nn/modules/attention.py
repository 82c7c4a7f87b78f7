"""``tdx.nn.MultiheadAttention`` and its output projection ``NonDynamicallyQuantizableLinear``.

Parameter names, shapes, registration order and default initialisation are torch's
(``in_proj_weight`` xavier-uniform, zero ``in_proj_bias`` and ``out_proj.bias``, the output
projection's Linear init drawn first, at construction), so a torch state dict loads and the same
seed gives torch's parameters on the cpu executor. The forward pass is
:func:`tdx.nn.functional.multi_head_attention_forward`.

This module must never import torch or mlx.
"""

from __future__ import annotations

import math

import tdx

from .._multihead import canonical_mask, multi_head_attention_forward
from ..parameter import Parameter
from .linear import NonDynamicallyQuantizableLinear
from .module import Module

__all__ = ["MultiheadAttention", "NonDynamicallyQuantizableLinear"]


def _fans(t) -> tuple:
    """``(fan_in, fan_out)`` of a weight, as ``nn.init._calculate_fan_in_and_fan_out``."""
    receptive = 1
    for s in t.shape[2:]:
        receptive *= s
    return t.shape[1] * receptive, t.shape[0] * receptive


def _xavier_uniform_(t):
    fan_in, fan_out = _fans(t)
    a = math.sqrt(3.0) * (1.0 * math.sqrt(2.0 / float(fan_in + fan_out)))
    with tdx.no_grad():
        return t.uniform_(-a, a)


def _xavier_normal_(t):
    fan_in, fan_out = _fans(t)
    with tdx.no_grad():
        return t.normal_(0, 1.0 * math.sqrt(2.0 / float(fan_in + fan_out)))


class MultiheadAttention(Module):
    """Multi-head attention (torch's ``nn.MultiheadAttention``).

    Args:
        embed_dim: model width ``E``; num_heads: heads (must divide ``E``).
        dropout: dropout on the attention weights (training only).
        bias: biases on the input and output projections.
        add_bias_kv: learn ``bias_k``/``bias_v`` appended to keys and values.
        add_zero_attn: append a zero key and value.
        kdim, vdim: key and value widths (default ``E``; different widths use separate q/k/v projections).
        batch_first: inputs and outputs are ``(N, L, E)``.
        device, dtype: where and how parameters are created.

    ``forward(query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
    average_attn_weights=True, is_causal=False)`` returns ``(attn_output, attn_weights or None)``.

    Raises:
        TdxValueError: ``embed_dim`` or ``num_heads`` not positive.
        MHAShapeError: ``embed_dim`` not divisible by ``num_heads`` (an AssertionError, as torch).
    """

    __constants__ = ["batch_first"]

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False, add_zero_attn=False,
                 kdim=None, vdim=None, batch_first=False, device=None, dtype=None):
        if embed_dim <= 0 or num_heads <= 0:
            raise tdx.TdxValueError(f"embed_dim and num_heads must be greater than 0, got embed_dim={embed_dim} and "
                                    f"num_heads={num_heads} instead")
        super().__init__()
        factory = {"device": device, "dtype": dtype}
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != embed_dim:
            from .._multihead import MHAShapeError
            raise MHAShapeError(f"embed_dim must be divisible by num_heads (got embed_dim={embed_dim}, "
                                f"num_heads={num_heads})")
        if not self._qkv_same_embed_dim:
            self.q_proj_weight = Parameter(tdx.empty((embed_dim, embed_dim), **factory))
            self.k_proj_weight = Parameter(tdx.empty((embed_dim, self.kdim), **factory))
            self.v_proj_weight = Parameter(tdx.empty((embed_dim, self.vdim), **factory))
            self.register_parameter("in_proj_weight", None)
        else:
            self.in_proj_weight = Parameter(tdx.empty((3 * embed_dim, embed_dim), **factory))
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(tdx.empty((3 * embed_dim,), **factory))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias, **factory)
        if add_bias_kv:
            self.bias_k = Parameter(tdx.empty((1, 1, embed_dim), **factory))
            self.bias_v = Parameter(tdx.empty((1, 1, embed_dim), **factory))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        if self._qkv_same_embed_dim:
            _xavier_uniform_(self.in_proj_weight)
        else:
            _xavier_uniform_(self.q_proj_weight)
            _xavier_uniform_(self.k_proj_weight)
            _xavier_uniform_(self.v_proj_weight)
        with tdx.no_grad():
            if self.in_proj_bias is not None:
                self.in_proj_bias.fill_(0.0)
                self.out_proj.bias.fill_(0.0)
        if self.bias_k is not None:
            _xavier_normal_(self.bias_k)
        if self.bias_v is not None:
            _xavier_normal_(self.bias_v)

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
                average_attn_weights=True, is_causal=False):
        """Attend from ``query`` to ``key``/``value``; see :func:`tdx.nn.functional.multi_head_attention_forward`."""
        is_batched = query.ndim == 3
        key_padding_mask = canonical_mask(key_padding_mask, "key_padding_mask",
                                          None if attn_mask is None else attn_mask.dtype, "attn_mask", query.dtype)
        attn_mask = canonical_mask(attn_mask, "attn_mask", None, "", query.dtype, check_other=False)
        if self.batch_first and is_batched:
            if key is value:
                if query is key:
                    query = key = value = query.transpose(1, 0)
                else:
                    query, key = (x.transpose(1, 0) for x in (query, key))
                    value = key
            else:
                query, key, value = (x.transpose(1, 0) for x in (query, key, value))
        common = dict(training=self.training, key_padding_mask=key_padding_mask, need_weights=need_weights,
                      attn_mask=attn_mask, average_attn_weights=average_attn_weights, is_causal=is_causal)
        if not self._qkv_same_embed_dim:
            out, weights = multi_head_attention_forward(
                query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight, self.in_proj_bias,
                self.bias_k, self.bias_v, self.add_zero_attn, self.dropout, self.out_proj.weight, self.out_proj.bias,
                use_separate_proj_weight=True, q_proj_weight=self.q_proj_weight, k_proj_weight=self.k_proj_weight,
                v_proj_weight=self.v_proj_weight, **common)
        else:
            out, weights = multi_head_attention_forward(
                query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight, self.in_proj_bias,
                self.bias_k, self.bias_v, self.add_zero_attn, self.dropout, self.out_proj.weight, self.out_proj.bias,
                **common)
        if self.batch_first and is_batched:
            return out.transpose(1, 0), weights
        return out, weights

    def merge_masks(self, attn_mask, key_padding_mask, query):
        """The ``(N, num_heads, L, S)`` float mask combining both masks, and its kind (torch's helper)."""
        mask_type = None
        merged = None
        if key_padding_mask is not None:
            mask_type = 1
            merged = key_padding_mask
        if attn_mask is not None:
            batch, seq = query.shape[0], query.shape[1]
            mask_type = 2
            if attn_mask.ndim == 3:
                attn_mask_expanded = attn_mask.view(batch, -1, seq, seq)
            else:
                attn_mask_expanded = attn_mask.view(1, 1, seq, seq).expand(batch, self.num_heads, -1, -1)
            merged = attn_mask_expanded
            if key_padding_mask is not None:
                kpm = key_padding_mask.view(batch, 1, 1, seq).expand(-1, self.num_heads, -1, -1)
                merged = attn_mask_expanded + kpm
        return merged, mask_type
