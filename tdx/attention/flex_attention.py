"""``tdx.nn.attention.flex_attention``: torch's flex attention names; the mask helpers work, the kernel is refused.

``or_masks``, ``and_masks`` and ``noop_mask`` compose mask functions (plain Python over index
tensors) and work as torch's. ``BlockMask`` is a class ``isinstance`` answers False for, and
``flex_attention``/``create_block_mask`` raise :class:`tdx.UnsupportedOpError` from
``tdx.compat.refused``: libraries that test for flex attention take their SDPA path. Never imports
a framework.
"""

from __future__ import annotations

from ..compat.refused import namespace_names

__all__ = ["BlockMask", "flex_attention", "AuxOutput", "AuxRequest", "FlexKernelOptions", "create_block_mask",
           "create_mask", "or_masks", "and_masks", "noop_mask"]

globals().update(namespace_names("torch.nn.attention.flex_attention"))

_DEFAULT_SPARSE_BLOCK_SIZE = 128  # torch's block size, which libraries read as a default


def noop_mask(batch, head, token_q, token_kv):
    """The mask function that keeps every position (a 0-d True tensor on ``batch``'s device)."""
    from .._dtypes import bool_
    from .._tensor.creation import ones

    return ones((), dtype=bool_, device=batch.device)


def or_masks(*mask_mods):
    """A mask function keeping a position where any of ``mask_mods`` keeps it."""
    def combined(b, h, q_idx, kv_idx):
        out = mask_mods[0](b, h, q_idx, kv_idx)
        for mod in mask_mods[1:]:
            out = out | mod(b, h, q_idx, kv_idx)
        return out

    return combined


def and_masks(*mask_mods):
    """A mask function keeping a position where every one of ``mask_mods`` keeps it."""
    def combined(b, h, q_idx, kv_idx):
        out = mask_mods[0](b, h, q_idx, kv_idx)
        for mod in mask_mods[1:]:
            out = out & mod(b, h, q_idx, kv_idx)
        return out

    return combined
