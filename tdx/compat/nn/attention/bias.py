"""``tdx.nn.attention.bias`` (torch's ``torch.nn.attention.bias``): causal biases for ``scaled_dot_product_attention``.

``causal_upper_left(Tq, Tk)`` and ``causal_lower_right(Tq, Tk)`` return a :class:`CausalBias` to pass as
``attn_mask``: the upper-left variant runs as ``is_causal=True`` (query ``i`` sees keys ``j <= i``), the
lower-right one aligns the diagonal with the last key (query ``i`` sees keys ``j <= i + Tk - Tq``), as torch
dispatches them. Unlike torch's, the bias is not a Tensor subclass: ``scaled_dot_product_attention`` asks it
to run the call through its ``__tdx_sdpa__`` hook. This module must never import a framework.
"""

from __future__ import annotations

import enum

import tdx

from ...._errors import TdxTypeError, TdxValueError

__all__ = ["causal_upper_left", "causal_lower_right", "CausalVariant", "CausalBias"]


class CausalVariant(enum.IntEnum):
    """Which causal alignment a :class:`CausalBias` stands for (torch's values)."""

    UPPER_LEFT = 1
    LOWER_RIGHT = 2


class CausalBias:
    """A causal attention bias of ``seq_len_q`` queries by ``seq_len_kv`` keys.

    Args:
        variant: :class:`CausalVariant`.
        seq_len_q: number of queries.
        seq_len_kv: number of keys and values.
    """

    def __init__(self, variant, seq_len_q: int, seq_len_kv: int):
        if not isinstance(variant, CausalVariant):
            raise TdxTypeError(f"CausalBias: variant must be a CausalVariant, got {variant!r}")
        for name, n in (("seq_len_q", seq_len_q), ("seq_len_kv", seq_len_kv)):
            if isinstance(n, bool) or not isinstance(n, int) or n < 0:
                raise TdxValueError(f"CausalBias: {name} must be a non-negative int, got {n!r}")
        if variant is CausalVariant.LOWER_RIGHT and seq_len_q > seq_len_kv:
            import warnings

            warnings.warn("Lower right causal bias will produce NaNs in the output when seq_len_q > seq_len_kv!",
                          stacklevel=2)
        self.variant, self.seq_len_q, self.seq_len_kv = variant, seq_len_q, seq_len_kv

    def _upper_left(self, device):
        return tdx.ones(self.seq_len_q, self.seq_len_kv, device=device, dtype=tdx.bool).tril()

    def _lower_right(self, device):
        return tdx.ones(self.seq_len_q, self.seq_len_kv, device=device, dtype=tdx.bool).tril(
            diagonal=self.seq_len_kv - self.seq_len_q)

    def _materialize(self, device=None):
        """The boolean ``(seq_len_q, seq_len_kv)`` mask (True takes part) on ``device``."""
        return self._upper_left(device) if self.variant is CausalVariant.UPPER_LEFT else self._lower_right(device)

    def __tdx_sdpa__(self, query, key, value, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
        """Run ``scaled_dot_product_attention`` with this bias as the mask, as torch dispatches it."""
        from ....attention import scaled_dot_product_attention as sdpa

        if is_causal:
            raise TdxValueError("CausalBias should not be used with causal=True")
        if self.variant is CausalVariant.UPPER_LEFT or self.seq_len_q == self.seq_len_kv:
            return sdpa(query, key, value, None, dropout_p, True, scale, enable_gqa)
        return sdpa(query, key, value, self._materialize(query.device), dropout_p, False, scale, enable_gqa)

    def __repr__(self) -> str:
        return repr(self._materialize())


def _two(size, name):
    if len(size) != 2:
        raise TdxValueError(f"{name} only supports 2D tensors (seq_len_q, seq_len_kv), got size {size}")
    return size


def causal_upper_left(*size) -> CausalBias:
    """The upper-left causal bias of ``size == (seq_len_q, seq_len_kv)``."""
    q, kv = _two(size, "causal_upper_left")
    return CausalBias(CausalVariant.UPPER_LEFT, q, kv)


def causal_lower_right(*size) -> CausalBias:
    """The lower-right causal bias of ``size == (seq_len_q, seq_len_kv)``."""
    q, kv = _two(size, "causal_lower_right")
    return CausalBias(CausalVariant.LOWER_RIGHT, q, kv)
