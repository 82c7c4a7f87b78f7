"""``tdx.nn.functional.embedding_bag``: sums, means or maxima of bags of embedding rows, without
building the intermediate embeddings one bag at a time.

Bags come from a 2-D index tensor (one bag per row) or from a 1-D index tensor cut at
``offsets``. Sums and means are scatter-adds; maxima scatter each bag's rows into a
``(bags, longest bag, dim)`` buffer and reduce it. Composed from tdx ops, so it
runs and differentiates on every executor. This module must never import torch or mlx.
"""

from __future__ import annotations

import tdx
from ._activations import need_tensor
from ..._errors import TdxNotImplementedError, TdxRuntimeError
from ._layers import _renorm_rows, scale_grad_by_count

__all__ = ["embedding_bag"]


def _bag_ids(idx, offsets, include_last_offset: bool):
    """(bag of each index, number of bags, mask of the indices inside some bag, position of each index in
    its bag) for 1-D ``idx``."""
    n = idx.shape[0]
    off = offsets.long()
    n_bags = off.shape[0] - 1 if include_last_offset else off.shape[0]
    if off.numel() and int(off[0].item()) != 0:
        raise TdxRuntimeError(f"offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from "
                              f"position 0. However, got {int(off[0].item())}")
    if off.numel() and int(off[-1].item()) > n:
        raise TdxRuntimeError(f"offsets[-1] can not be greater than input's length {n}, but got offsets[-1] of "
                              f"{int(off[-1].item())}")
    starts = off[:n_bags] if include_last_offset else off
    inside = tdx.ones(n, dtype=tdx.bool, device=idx.device)
    if include_last_offset and off.numel():
        inside = tdx.arange(n, device=idx.device) < off[-1]
    marks = tdx.zeros(n + 1, dtype=tdx.int64, device=idx.device)
    if starts.numel():
        marks = marks.scatter_add(0, starts, tdx.ones_like(starts))
    bag = (marks[:n].cumsum(0) - 1).clamp_min(0)
    pos = tdx.arange(n, device=idx.device) - (starts.index_select(0, bag) if starts.numel() else 0)
    return bag, n_bags, inside, pos


def _bag_max(picked, bag, pos, keep, n_bags: int):
    """Per-bag maxima of the rows ``picked`` (zeros for a bag with no kept row).

    Each kept row is scattered to its (bag, position) slot of a ``(bags, longest bag, dim)`` buffer
    of -inf (the others to a spare slot dropped after), whose maximum over positions is the result.
    """
    n, dim = picked.shape
    if n == 0:
        return picked.new_zeros((n_bags, dim))
    longest = int(pos.max().item()) + 1
    slots = n_bags * longest
    target = tdx.where(keep, bag * longest + pos, slots)
    buf = picked.new_full((slots + 1, dim), -float("inf"))
    buf = buf.scatter(0, target.unsqueeze(1).expand(n, dim), picked)
    top = buf[:slots].reshape(n_bags, longest, dim).amax(1)
    counts = tdx.zeros(n_bags + 1, dtype=tdx.int64, device=picked.device).scatter_add(
        0, tdx.where(keep, bag, n_bags), tdx.ones_like(bag))
    return tdx.where((counts[:n_bags] > 0).unsqueeze(1), top, 0.0)


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False,  # noqa: A002
                  mode="mean", sparse=False, per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """Reduce bags of rows of ``weight`` by ``mode`` (``"sum"``, ``"mean"`` or ``"max"``).

    Args:
        input: ``(B, N)`` indices (B bags of N), or 1-D indices with ``offsets``.
        weight: ``(num_embeddings, embedding_dim)``.
        offsets: with 1-D ``input``, where each bag starts (``offsets[0]`` must be 0).
        max_norm: rows looked up whose norm exceeds this are rescaled to it in ``weight``, in place.
        norm_type: the norm's exponent for ``max_norm``.
        scale_grad_by_freq: divide each row's gradient by how often its index occurs in ``input``.
        mode: ``"sum"``, ``"mean"`` or ``"max"``; an empty bag gives zeros.
        sparse: not supported (raises when true: tdx gradients are dense).
        per_sample_weights: weights of ``input``'s shape multiplying each row (``mode="sum"`` only).
        include_last_offset: ``offsets`` holds one more entry, the end of the last bag.
        padding_idx: indices of this row are left out of every bag (and its mean's count).

    Returns:
        ``(B, embedding_dim)``.

    Raises:
        TdxValueError: ``input``/``offsets`` of the wrong dims, or an unknown ``mode``.
        TdxNotImplementedError: ``per_sample_weights`` with a mode other than ``"sum"``.
        TdxRuntimeError: bad offsets, indices or index dtypes, or ``weight`` not 2-D.
        UnsupportedOpError: ``sparse`` is true.
    """
    idx = need_tensor(input, "embedding_bag")
    w = need_tensor(weight, "embedding_bag", "weight")
    if w.ndim != 2:
        raise tdx.TdxValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension {w.ndim}")
    if idx.dtype not in (tdx.int64, tdx.int32):
        raise TdxRuntimeError(f"expected input of type Long or Int for embedding_bag, got {idx.dtype.name}")
    psw = None if per_sample_weights is None else need_tensor(per_sample_weights, "embedding_bag",
                                                              "per_sample_weights")
    if psw is not None and tuple(psw.shape) != tuple(idx.shape):
        raise tdx.TdxValueError(f"embedding_bag: If per_sample_weights ({list(psw.shape)}) is not None, then it must "
                                f"have the same shape as the input ({list(idx.shape)})")
    if idx.ndim == 2:
        if offsets is not None:
            raise tdx.TdxValueError(f"if input is 2D, then offsets has to be None, as input is treated is a mini-batch "
                                    f"of fixed length sequences. However, found offsets of type "
                                    f"{type(offsets).__name__}")
        b, per = idx.shape
        flat = idx.reshape(-1)
        bag = tdx.arange(b, device=idx.device).repeat_interleave(per) if per else flat.long()
        n_bags, inside = b, tdx.ones(flat.shape[0], dtype=tdx.bool, device=idx.device)
        pos = tdx.arange(flat.shape[0], device=idx.device) % max(per, 1)
        psw = None if psw is None else psw.reshape(-1)
    elif idx.ndim == 1:
        if offsets is None:
            raise tdx.TdxValueError("offsets has to be a 1D Tensor but got None")
        off = need_tensor(offsets, "embedding_bag", "offsets")
        if off.ndim != 1:
            raise tdx.TdxValueError(f"offsets has to be a 1D Tensor (got a {off.ndim}-D one)")
        if off.dtype not in (tdx.int64, tdx.int32):
            raise TdxRuntimeError(f"expected offsets of type Long or Int for embedding_bag, got {off.dtype.name}")
        flat = idx
        bag, n_bags, inside, pos = _bag_ids(idx, off, include_last_offset)
    else:
        raise tdx.TdxValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {idx.ndim}")
    if mode not in ("sum", "mean", "max"):
        raise tdx.TdxValueError(f"mode has to be one of sum, mean or max (got {mode!r})")
    if mode == "max" and scale_grad_by_freq:
        raise tdx.TdxValueError("max mode does not support scaling the gradient by the frequency")
    if mode == "max" and sparse:
        raise tdx.TdxValueError("max mode does not support sparse weights")
    if sparse:
        raise tdx.UnsupportedOpError("embedding_bag(): sparse=True is not supported by tdx (gradients are dense); "
                                     "pass False")
    if psw is not None and mode != "sum":
        raise TdxNotImplementedError(f"embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                                     f"supported for mode='sum' (got mode='{mode}').")
    rows_n, dim = w.shape
    if padding_idx is not None:
        if not -rows_n <= padding_idx < rows_n:
            raise tdx.TdxValueError(f"padding_idx must be within the number of embeddings, -{rows_n} through "
                                    f"{rows_n - 1}, but got {padding_idx}")
        padding_idx %= rows_n
    if flat.numel() and bool(((flat < 0) | (flat >= rows_n)).any().item()):
        bad = int(flat.masked_select((flat < 0) | (flat >= rows_n))[0].item())
        raise TdxRuntimeError(f"embedding_bag: index {bad} is out of range for {rows_n} embeddings")
    if max_norm is not None and flat.numel():
        _renorm_rows(w, flat.long(), max_norm, norm_type)
    keep = inside if padding_idx is None else inside & (flat != padding_idx)
    picked = w.index_select(0, flat.long())  # (L, dim)
    if scale_grad_by_freq and flat.numel():
        picked = scale_grad_by_count(picked, flat.long(), rows_n)
    if psw is not None:
        picked = picked * psw.unsqueeze(1)
    if mode == "max":
        return _bag_max(picked, bag, pos, keep, n_bags)
    picked = tdx.where(keep.unsqueeze(1), picked, 0.0)
    out = w.new_zeros((n_bags, dim))
    if flat.numel():
        out = out.scatter_add(0, bag.unsqueeze(1).expand(flat.shape[0], dim), picked)
    if mode == "sum":
        return out
    counts = tdx.zeros(n_bags, dtype=w.dtype, device=w.device)
    if flat.numel():
        counts = counts.scatter_add(0, bag, keep.to(w.dtype))
    return out / counts.clamp_min(1).unsqueeze(1)
