"""Margin, ranking and embedding losses of ``tdx.nn.functional``: cosine embedding, margin ranking,
triplet margin (with a p-norm or any distance function), hinge embedding, soft margin and the
multi-label and multi-class margin losses.

Each function has ``torch.nn.functional``'s signature (``size_average``/``reduce`` included),
checks, result dtype, ``reduction`` semantics and error kinds, and is composed from tdx tensor
ops, so it runs and differentiates on every executor (torch's autograd, or tdx's tape on MLX).

This module must never import torch or mlx, and never touches executor internals: only the
public ``tdx`` API and the shared nn helpers.
"""

from __future__ import annotations

import tdx
from . import _kernels
from ._activations import logsigmoid, need_tensor
from ..._errors import TdxRuntimeError
from ._losses import _reduce, _reduction, pairwise_distance

__all__ = ["cosine_embedding_loss", "margin_ranking_loss", "hinge_embedding_loss", "soft_margin_loss",
           "multilabel_soft_margin_loss", "multilabel_margin_loss", "multi_margin_loss", "triplet_margin_loss",
           "triplet_margin_with_distance_loss"]

_EPSILON = 1e-12  # torch's cosine_embedding_loss adds it to each squared magnitude


@_kernels.torch_kernel
def cosine_embedding_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None,
                          reduction="mean"):
    """``1 - cos(x1, x2)`` where ``target == 1`` and ``max(0, cos(x1, x2) - margin)`` where ``target == -1``.

    Args:
        input1: ``(N, D)`` or ``(D,)``.
        input2: of ``input1``'s shape.
        target: ``(N,)`` (or 0-d for 1-D inputs) of 1 or -1; other values give a zero loss.
        margin: in ``[-1, 1]``, usually ``[0, 0.5]``.
        size_average: deprecated (see ``reduction``).
        reduce: deprecated (see ``reduction``).
        reduction: ``"none"``, ``"mean"`` or ``"sum"``.

    Raises:
        TdxRuntimeError: the dims of the inputs and target do not fit together.
        TdxValueError: an unknown ``reduction``.
    """
    a = need_tensor(input1, "cosine_embedding_loss", "input1")
    b = need_tensor(input2, "cosine_embedding_loss", "input2")
    t = need_tensor(target, "cosine_embedding_loss", "target")
    reduction = _reduction(size_average, reduce, reduction)
    if t.ndim > 1:
        raise TdxRuntimeError(f"1D target tensor expected, multi-target not supported (got a {t.ndim}-D target)")
    if a.ndim != t.ndim + 1 or b.ndim != t.ndim + 1:
        raise TdxRuntimeError(f"{t.ndim}D target tensor expects {t.ndim + 1}D input tensors, but found inputs with "
                              f"sizes {list(a.shape)} and {list(b.shape)}.")
    dim = t.ndim
    prod = (a * b).sum(dim)
    denom = (((a * a).sum(dim) + _EPSILON) * ((b * b).sum(dim) + _EPSILON)).sqrt()
    cos = prod / denom
    zero = tdx.zeros_like(cos)
    loss = tdx.where(t == 1, 1 - cos, zero) + tdx.where(t == -1, (cos - margin).clamp_min(0), zero)
    return _reduce(loss, reduction)


@_kernels.torch_kernel
def margin_ranking_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"):
    """``max(0, -target * (input1 - input2) + margin)``: ``target == 1`` asks for ``input1`` to rank higher.

    Raises:
        TdxRuntimeError: the three tensors do not have the same number of dims.
        TdxValueError: an unknown ``reduction``.
    """
    a = need_tensor(input1, "margin_ranking_loss", "input1")
    b = need_tensor(input2, "margin_ranking_loss", "input2")
    t = need_tensor(target, "margin_ranking_loss", "target")
    reduction = _reduction(size_average, reduce, reduction)
    if not a.ndim == b.ndim == t.ndim:
        raise TdxRuntimeError(f"margin_ranking_loss : All input tensors should have same dimension but got sizes: "
                              f"input1: {list(a.shape)}, input2: {list(b.shape)}, target: {list(t.shape)} ")
    return _reduce((-t * (a - b) + margin).clamp_min(0), reduction)


@_kernels.torch_kernel
def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"):  # noqa: A002
    """``input`` where ``target == 1`` and ``max(0, margin - input)`` where ``target == -1``.

    Raises:
        TdxValueError: an unknown ``reduction``.
    """
    x = need_tensor(input, "hinge_embedding_loss")
    t = need_tensor(target, "hinge_embedding_loss", "target")
    reduction = _reduction(size_average, reduce, reduction)
    zero = tdx.zeros_like(x)
    loss = tdx.where(t != 1, (margin - x).clamp_min(0), zero) + tdx.where(t != -1, x, zero)
    return _reduce(loss, reduction)


@_kernels.torch_kernel
def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):  # noqa: A002
    """Two-class logistic loss ``log(1 + exp(-target * input))`` (targets 1 or -1).

    Raises:
        TdxValueError: an unknown ``reduction``.
    """
    x = need_tensor(input, "soft_margin_loss")
    t = need_tensor(target, "soft_margin_loss", "target")
    reduction = _reduction(size_average, reduce, reduction)
    return _reduce((-t * x).exp().log1p(), reduction)


@_kernels.torch_kernel
def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None,  # noqa: A002
                                reduction="mean"):
    """One-versus-all logistic loss over the ``C`` classes of the last dim, averaged over classes.

    Args:
        input: ``(N, C)`` or ``(C,)`` logits.
        target: 0/1 labels of ``input``'s shape.
        weight: optional, broadcastable to ``input`` (usually ``(C,)``).
        size_average: deprecated (see ``reduction``).
        reduce: deprecated (see ``reduction``).
        reduction: ``"none"``, ``"mean"`` or ``"sum"``.

    Raises:
        TdxValueError: an unknown ``reduction``.
    """
    x = need_tensor(input, "multilabel_soft_margin_loss")
    t = need_tensor(target, "multilabel_soft_margin_loss", "target")
    reduction = _reduction(size_average, reduce, reduction)
    loss = -(t * logsigmoid(x) + (1 - t) * logsigmoid(-x))
    if weight is not None:
        loss = loss * need_tensor(weight, "multilabel_soft_margin_loss", "weight")
    class_dim = x.ndim - 1
    loss = loss.sum(class_dim) / x.shape[class_dim]
    return _reduce(loss, reduction)


def _mean_of_none_is_zero(loss, reduction: str):
    """``loss`` reduced; the mean of an empty batch is 0 (torch's multi-margin kernels leave it
    uninitialized memory)."""
    if reduction == "mean" and loss.numel() == 0:
        return loss.sum()
    return _reduce(loss, reduction)


def _class_rows(x, op: str):
    """``x`` as ``(N, C)`` (a 1-D or 0-D input is one sample), checked as torch's."""
    if x.ndim > 2 or (x.ndim == 2 and x.shape[1] == 0) or (x.ndim == 1 and x.shape[0] == 0):
        raise TdxRuntimeError(f"{op}: Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
                              f"{list(x.shape)}")
    return x.reshape(1, -1) if x.ndim < 2 else x


@_kernels.torch_kernel
def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):  # noqa: A002
    """Multi-label hinge loss: ``sum_{j, i} max(0, 1 - (x[y_j] - x[i])) / C`` over the target classes
    ``y_j`` (the leading entries of ``target`` before the first -1) and the non-target classes ``i``.

    Args:
        input: ``(C,)`` or ``(N, C)``.
        target: int64 of ``input``'s shape, each row's class indices padded with -1.
        size_average: deprecated (see ``reduction``).
        reduce: deprecated (see ``reduction``).
        reduction: ``"none"``, ``"mean"`` or ``"sum"``.

    Raises:
        TdxRuntimeError: shapes that do not match, a non-int64 target, or a target class out of range.
        TdxValueError: an unknown ``reduction``.
    """
    x = need_tensor(input, "multilabel_margin_loss")
    t = need_tensor(target, "multilabel_margin_loss", "target")
    reduction = _reduction(size_average, reduce, reduction)
    rows = _class_rows(x, "multilabel_margin_loss")
    if tuple(t.shape) != tuple(x.shape) or (x.ndim == 0 and t.ndim != 0):
        raise TdxRuntimeError(f"multilabel_margin_loss: inconsistent target size: {list(t.shape)} for input of size: "
                              f"{list(x.shape)}")
    if t.dtype is not tdx.int64:
        raise TdxRuntimeError(f"multilabel_margin_loss: expected scalar type Long but found {t.dtype.name} (target)")
    n, c = rows.shape
    tt = t.reshape(n, c)
    valid = (tt < 0).long().cumsum(1) == 0  # the entries before the first -1
    if bool((valid & (tt >= c)).any().item()):
        raise TdxRuntimeError(f"multilabel_margin_loss: target out of range (classes are in [0, {c}))")
    safe = tt.masked_fill(valid.logical_not(), 0)
    is_target = ((safe.unsqueeze(-1) == tdx.arange(c, device=x.device)) & valid.unsqueeze(-1)).any(1)
    picked = rows.gather(1, safe)  # (N, J): x[y_j]
    margins = 1 - picked.unsqueeze(2) + rows.unsqueeze(1)  # (N, J, C)
    margins = tdx.where(margins > 0, margins, 0.0)  # torch's kernel: no gradient where a margin is exactly 0
    counted = valid.unsqueeze(2) & is_target.logical_not().unsqueeze(1)
    loss = tdx.where(counted, margins, 0.0).sum((1, 2)) / c
    if x.ndim < 2:
        loss = loss.reshape(())
    return _mean_of_none_is_zero(loss, reduction).to(x.dtype)


@_kernels.torch_kernel
def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None, reduce=None,  # noqa: A002
                      reduction="mean"):
    """Multi-class hinge loss ``sum_{i != y} max(0, margin - x[y] + x[i])**p * weight[y] / C``.

    Args:
        input: ``(C,)`` or ``(N, C)``.
        target: int64 class indices ``()``/``(1,)`` or ``(N,)``.
        p: 1 or 2.
        margin: the margin.
        weight: optional ``(C,)`` class weights.
        size_average: deprecated (see ``reduction``).
        reduce: deprecated (see ``reduction``).
        reduction: ``"none"``, ``"mean"`` or ``"sum"``.

    Raises:
        TdxValueError: ``p`` is not 1 or 2, ``weight`` is not 1-D, or an unknown ``reduction``.
        TdxRuntimeError: the target does not fit the input, or a class is out of range.
    """
    x = need_tensor(input, "multi_margin_loss")
    t = need_tensor(target, "multi_margin_loss", "target")
    reduction = _reduction(size_average, reduce, reduction)
    if p not in (1, 2):
        raise tdx.TdxValueError(f"only p == 1 and p == 2 supported (got p={p})")
    if weight is not None and need_tensor(weight, "multi_margin_loss", "weight").ndim != 1:
        raise tdx.TdxValueError(f"weight must be one-dimensional (got a {weight.ndim}-D weight)")
    rows = _class_rows(x, "multi_margin_loss")
    n, c = rows.shape
    if t.dtype is not tdx.int64:
        raise TdxRuntimeError(f"multi_margin_loss: expected scalar type Long but found {t.dtype.name} (target)")
    if t.ndim > 1 or t.numel() != n:
        raise TdxRuntimeError(f"inconsistent target size, expected {n} but got {list(t.shape)}")
    if weight is not None and weight.numel() != c:
        raise TdxRuntimeError(f"inconsistent weight size, expected {c} but got {list(weight.shape)}")
    tl = t.reshape(n).long()
    if n and bool(((tl < 0) | (tl >= c)).any().item()):
        raise TdxRuntimeError(f"target out of range (classes are in [0, {c}))")
    picked = rows.gather(1, tl.unsqueeze(1))
    z = margin - picked + rows
    z = tdx.where(z > 0, z, 0.0)  # torch's kernel: no gradient where a margin is exactly 0
    if p == 2:
        z = z * z
    if weight is not None:
        z = z * weight.index_select(0, tl).unsqueeze(1)
    others = tl.unsqueeze(1) != tdx.arange(c, device=x.device)
    loss = tdx.where(others, z, 0.0).sum(1) / c
    if x.ndim < 2:
        loss = loss.reshape(tuple(t.shape))  # the target's shape, () or (1,), as torch's
    return _mean_of_none_is_zero(loss, reduction).to(x.dtype)


def _triplet_dims(a, p, n, op: str) -> None:
    if not a.ndim == p.ndim == n.ndim:
        raise TdxRuntimeError(f"{op}: The anchor, positive, and negative tensors are expected to have the same number "
                              f"of dimensions, but got: anchor {a.ndim}D, positive {p.ndim}D, and negative {n.ndim}D "
                              "inputs")


@_kernels.torch_kernel
def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False, size_average=None,
                        reduce=None, reduction="mean"):
    """``max(0, margin + d(anchor, positive) - d(anchor, negative))`` with the ``p``-norm pairwise
    distance ``d`` (``swap``: the negative distance is the smaller of ``d(a, n)`` and ``d(p, n)``).

    Raises:
        TdxRuntimeError: the three tensors do not have the same number of dims.
        TdxValueError: an unknown ``reduction``.
    """
    a = need_tensor(anchor, "triplet_margin_loss", "anchor")
    pos = need_tensor(positive, "triplet_margin_loss", "positive")
    neg = need_tensor(negative, "triplet_margin_loss", "negative")
    reduction = _reduction(size_average, reduce, reduction)
    _triplet_dims(a, pos, neg, "triplet_margin_loss")
    d_pos = pairwise_distance(a, pos, p, eps)
    d_neg = pairwise_distance(a, neg, p, eps)
    if swap:
        d_neg = tdx.minimum(d_neg, pairwise_distance(pos, neg, p, eps))
    return _reduce((margin + d_pos - d_neg).clamp_min(0), reduction)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None, margin=1.0,
                                      swap=False, reduction="mean"):
    """:func:`triplet_margin_loss` with any ``distance_function(x1, x2)`` (default: pairwise distance).

    Raises:
        TdxValueError: ``margin`` is not positive, or an unknown ``reduction``.
        TdxRuntimeError: the three tensors do not have the same number of dims.
    """
    a = need_tensor(anchor, "triplet_margin_with_distance_loss", "anchor")
    pos = need_tensor(positive, "triplet_margin_with_distance_loss", "positive")
    neg = need_tensor(negative, "triplet_margin_with_distance_loss", "negative")
    if margin <= 0:
        raise tdx.TdxValueError(f"triplet_margin_with_distance_loss: expected margin to be greater than 0, got "
                                f"{margin} instead")
    reduction = _reduction(None, None, reduction)
    _triplet_dims(a, pos, neg, "triplet_margin_with_distance_loss")
    dist = pairwise_distance if distance_function is None else distance_function
    d_pos, d_neg = dist(a, pos), dist(a, neg)
    if swap:
        d_neg = tdx.minimum(d_neg, dist(pos, neg))
    return _reduce((margin + d_pos - d_neg).clamp_min(0), reduction)
