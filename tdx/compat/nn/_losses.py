"""Loss functions of ``tdx.nn.functional``: regression (mse, l1, smooth l1, huber), binary and
multi-class classification (binary cross entropy with or without logits, nll, cross entropy),
distribution (kl_div) and similarity (cosine similarity, pairwise distance) losses.

Each function has ``torch.nn.functional``'s signature (``size_average`` and ``reduce``
included, with torch's deprecation warning), checks, result dtype, ``reduction`` semantics
(the mean of an empty loss is NaN) and error kinds. They are composed from tdx tensor ops,
so they run on every executor and are differentiable wherever those ops are (through
torch's autograd, or tdx's tape on MLX). Half precision inputs are computed in float32 and
rounded once; logits go through stable log-sigmoid and log-softmax forms.

This module must never import torch or mlx, and never touches executor internals: only
the public ``tdx`` API.
"""

from __future__ import annotations

import math
import warnings

import tdx
from ..._errors import ShapeError, TdxIndexError, TdxNotImplementedError, TdxRuntimeError, TdxValueError
from . import _kernels
from ..compiler import is_compiling as _compiling
from ._activations import log1pexp, need_float, need_tensor, opmath, torch_name, wants_grad
from ._layers import _norm

__all__ = ["mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy",
           "binary_cross_entropy_with_logits", "nll_loss", "cross_entropy", "kl_div", "cosine_similarity",
           "pairwise_distance"]

_REDUCTIONS = ("none", "mean", "sum")


# reductions -------------------------------------------------------------------------------------------
def _reduction(size_average, reduce, reduction: str, allowed=_REDUCTIONS) -> str:
    """The reduction to apply: torch's legacy ``size_average``/``reduce`` pair (with its warning) wins.

    Raises:
        TdxValueError: ``reduction`` is not one of ``allowed``.
    """
    if size_average is not None or reduce is not None:
        size_average = True if size_average is None else size_average
        reduce = True if reduce is None else reduce
        reduction = "mean" if size_average and reduce else "sum" if reduce else "none"
        warnings.warn(f"size_average and reduce args will be deprecated, please use reduction='{reduction}' "
                      "instead.", stacklevel=3)
    if reduction not in allowed:
        raise TdxValueError(f"{reduction} is not a valid value for reduction (expected one of "
                            f"{', '.join(repr(r) for r in allowed)})")
    return reduction


def _reduce(loss, reduction: str):
    if reduction == "mean":
        return loss.mean()
    return loss.sum() if reduction == "sum" else loss


def _divide(total_loss, total):
    """``total_loss / total`` (NaN for a zero ``total``, as torch's), with a zero gradient, not NaN,
    when nothing counts (every target ignored), on every executor."""
    none = total == 0
    return tdx.where(none, math.nan, total_loss / tdx.where(none, 1, total))


def _work(dtype):
    """The dtype a loss of ``dtype`` computes in: float32 for half precision."""
    return tdx.float32 if dtype in (tdx.float16, tdx.bfloat16) else dtype


def _pair(input, target, op: str):
    """(input, target) broadcast together, with torch's warning when their sizes differ."""
    x, t = need_tensor(input, op), need_tensor(target, op, "target")
    if tuple(t.shape) != tuple(x.shape):
        warnings.warn(f"Using a target size ({t.shape}) that is different to the input size ({x.shape}). This "
                      "will likely lead to incorrect results due to broadcasting. Please ensure they have the same "
                      "size.", stacklevel=3)
        x, t = tdx.broadcast_tensors(x, t)
    return x, t


def _weighted(loss, weight, input, reduction: str, mean_by_weight: bool):
    """``loss * weight`` reduced as torch's weighted regression losses reduce it.

    Raises:
        TdxValueError: ``weight``'s shape is not ``input``'s, or ``reduction`` is unknown.
    """
    w = need_tensor(weight, "loss", "weight")
    if tuple(w.shape) != tuple(input.shape):
        raise TdxValueError(f"Weights and input must have the same size (got weight {list(w.shape)}, input "
                            f"{list(input.shape)}).")
    loss = loss * w
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    if reduction == "mean":
        return loss.sum() / w.sum() if mean_by_weight else loss.mean()
    raise TdxValueError(f"Invalid reduction mode: {reduction}. Expected one of 'none', 'mean', 'sum'.")


def _regression(input, target, op: str, kernel: str, size_average, reduce, reduction, weight, pointwise,
                ints_ok=False, mean_by_weight=True, input_dtype=False):
    """The shared body of the elementwise regression losses: ``pointwise(input - target)`` reduced.

    The result has the promoted dtype of input and target, or ``input``'s with ``input_dtype``
    (torch's huber_loss writes into a tensor like its input).
    """
    x, t = _pair(input, target, op)
    if weight is None or size_average is not None or reduce is not None:  # else _weighted checks it, as torch
        reduction = _reduction(size_average, reduce, reduction)
    rt = tdx.promote_types(x.dtype, t.dtype)
    if input_dtype and rt.is_floating_point and not x.dtype.is_floating_point:
        raise TdxRuntimeError(f"result type {torch_name(rt)} can't be cast to the desired output type "
                              f"{torch_name(x.dtype)} ({op} takes a floating point input)")
    rt = x.dtype if input_dtype else rt
    if not rt.is_floating_point and not ints_ok:  # l1's integers (and bools) fail as torch's ops fail
        raise TdxNotImplementedError(f"\"{kernel}\" not implemented for '{torch_name(rt)}' ({op} takes floating "
                                     "point tensors)")
    work = _work(rt)
    # l1 subtracts in the operands' own dtypes, as torch's (so bools refuse to subtract, as there)
    loss = pointwise((x - t).to(work) if ints_ok else x.to(work) - t.to(work))
    if weight is None:
        return _reduce(loss, reduction).to(rt)
    out_dtype = tdx.promote_types(rt, weight.dtype)
    return _weighted(loss, weight, input, reduction, mean_by_weight).to(out_dtype)


# regression --------------------------------------------------------------------------------------------
@_kernels.torch_kernel
def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):  # noqa: A002
    """Mean squared error ``(input - target)**2``, reduced by ``reduction``.

    Args:
        input: predictions (floating point).
        target: values broadcastable with ``input`` (a warning when the sizes differ, as torch).
        size_average: deprecated (see ``reduction``).
        reduce: deprecated (see ``reduction``).
        reduction: ``"none"``, ``"mean"`` or ``"sum"``.
        weight: optional per-element weights of ``input``'s shape; ``"mean"`` then divides by their sum.

    Raises:
        TdxValueError: an unknown ``reduction``, or ``weight`` of another shape.
        TdxNotImplementedError: the promoted dtype is not floating point.
    """
    return _regression(input, target, "mse_loss", "mse_cpu", size_average, reduce, reduction, weight,
                       lambda d: d * d)


@_kernels.torch_kernel
def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):  # noqa: A002
    """Mean absolute error ``|input - target|``, reduced by ``reduction`` (arguments as :func:`mse_loss`).

    Integer inputs are accepted as torch accepts them (their ``"mean"`` raises as ``mean`` does).
    """
    return _regression(input, target, "l1_loss", "l1_loss", size_average, reduce, reduction, weight,
                       lambda d: d.abs(), ints_ok=True)


@_kernels.torch_kernel
def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):  # noqa: A002
    """``0.5 * d**2 / beta`` where ``|d| < beta``, else ``|d| - 0.5 * beta`` (``d = input - target``);
    ``beta == 0`` is :func:`l1_loss`.

    Raises:
        TdxRuntimeError: ``beta`` is negative.
        TdxValueError: an unknown ``reduction``.
        TdxNotImplementedError: the promoted dtype is not floating point.
    """
    if beta == 0.0:
        return l1_loss(input, target, size_average, reduce, reduction)
    if beta < 0:
        raise TdxRuntimeError(f"smooth_l1_loss does not support negative values for beta (got {beta}).")

    def pointwise(d):
        z = d.abs()
        return tdx.where(z < beta, 0.5 * z * z / beta, z - 0.5 * beta)

    return _regression(input, target, "smooth_l1_loss", "smooth_l1_cpu", size_average, reduce, reduction, None,
                       pointwise)


@_kernels.torch_kernel
def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):  # noqa: A002
    """``0.5 * d**2`` where ``|d| < delta``, else ``delta * (|d| - 0.5 * delta)``; a weighted
    ``"mean"`` is the plain mean of the weighted losses, and the result has ``input``'s dtype, as torch's.

    Raises:
        TdxRuntimeError: ``delta`` is not positive.
        TdxValueError: an unknown ``reduction``, or ``weight`` of another shape than ``input``.
        TdxNotImplementedError: the promoted dtype is not floating point.
    """
    if delta <= 0:
        raise TdxRuntimeError(f"huber_loss does not support non-positive values for delta (got {delta}).")

    def pointwise(d):
        z = d.abs()
        return tdx.where(z < delta, 0.5 * z * z, (z - 0.5 * delta) * delta)

    return _regression(input, target, "huber_loss", "huber_cpu", None, None, reduction, weight, pointwise,
                       mean_by_weight=False, input_dtype=True)


# binary classification --------------------------------------------------------------------------------
def _expand_weight(weight, shape, op: str, arg: str = "weight"):
    """``weight`` broadcast to ``shape``, which it may not enlarge (torch applies it in place)."""
    w = need_tensor(weight, op, arg)
    out = tdx.broadcast_shapes(tuple(w.shape), tuple(shape))
    if tuple(out) != tuple(shape):
        raise ShapeError(f"{op}(): output with shape {list(shape)} doesn't match the broadcast shape {list(out)} "
                         f"of {arg} {list(w.shape)}")
    return w


@_kernels.torch_kernel
def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,  # noqa: A002
                         reduction="mean"):
    """``-weight * (target * log(input) + (1 - target) * log(1 - input))``, each log clamped at -100.

    Args:
        input: probabilities in ``[0, 1]`` (floating point).
        target: of ``input``'s shape and dtype.
        weight: optional, broadcastable to ``input``'s shape.
        size_average: deprecated (see ``reduction``).
        reduce: deprecated (see ``reduction``).
        reduction: ``"none"``, ``"mean"`` or ``"sum"``.

    Raises:
        TdxValueError: an unknown ``reduction``, or ``target``'s shape differs from ``input``'s.
        TdxRuntimeError: ``target``'s dtype differs, or an input is outside ``[0, 1]`` (or NaN).
        ShapeError: ``weight`` does not broadcast to ``input``'s shape.
        TdxNotImplementedError: ``input`` is not floating point.
    """
    x, t = need_tensor(input, "binary_cross_entropy"), need_tensor(target, "binary_cross_entropy", "target")
    reduction = _reduction(size_average, reduce, reduction)
    if tuple(t.shape) != tuple(x.shape):
        raise TdxValueError(f"Using a target size ({t.shape}) that is different to the input size ({x.shape}) is "
                            "deprecated. Please ensure they have the same size.")
    need_float(x, "binary_cross_entropy")
    if t.dtype is not x.dtype:
        raise TdxRuntimeError(f"Found dtype {torch_name(t.dtype)} but expected {torch_name(x.dtype)} "
                              "(binary_cross_entropy takes a target of the input's dtype)")
    if weight is not None:
        weight = _expand_weight(weight, x.shape, "binary_cross_entropy")
    if x.numel() and bool(((x >= 0) & (x <= 1)).logical_not().any().item()):
        raise TdxRuntimeError("all elements of input should be between 0 and 1")
    w, tt = opmath(x), opmath(t)
    loss = (tt - 1) * (-w).log1p().clamp_min(-100) - tt * w.log().clamp_min(-100)
    if weight is not None:
        loss = loss * weight.to(w.dtype)
    return _reduce(loss, reduction).to(x.dtype)


@_kernels.torch_kernel
def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,  # noqa: A002
                                     reduction="mean", pos_weight=None):
    """:func:`binary_cross_entropy` of ``sigmoid(input)``, computed stably from the logits:
    ``(1 - target) * input - log_weight * logsigmoid(input)`` with
    ``log_weight = (pos_weight - 1) * target + 1``.

    Args:
        input: logits (floating point).
        target: of ``input``'s shape, floating point; the result takes its dtype, as torch's.
        weight: optional, broadcastable to ``input``'s shape.
        size_average: deprecated (see ``reduction``).
        reduce: deprecated (see ``reduction``).
        reduction: ``"none"``, ``"mean"`` or ``"sum"``.
        pos_weight: optional weight of positive examples, broadcastable with ``target`` (usually one per
            class, along the last dim).

    Raises:
        TdxValueError: an unknown ``reduction``, or ``target``'s shape differs from ``input``'s.
        TdxRuntimeError: ``target`` is not floating point.
        ShapeError: ``weight`` or ``pos_weight`` does not broadcast to ``input``'s shape.
        TdxNotImplementedError: ``input`` is not floating point.
    """
    op = "binary_cross_entropy_with_logits"
    x, t = need_tensor(input, op), need_tensor(target, op, "target")
    reduction = _reduction(size_average, reduce, reduction)
    if tuple(t.shape) != tuple(x.shape):
        raise TdxValueError(f"Target size ({t.shape}) must be the same as input size ({x.shape})")
    need_float(x, op, "log_sigmoid_cpu")
    if not t.dtype.is_floating_point:
        raise TdxRuntimeError(f"result type {torch_name(tdx.promote_types(x.dtype, t.dtype))} can't be cast to the "
                              f"desired output type {torch_name(t.dtype)} ({op} takes a floating point target)")
    work = _work(tdx.promote_types(x.dtype, t.dtype))
    w, tt = x.to(work), t.to(work)
    log_sig = -log1pexp(-w)
    if pos_weight is not None:
        pw = _expand_weight(pos_weight, x.shape, op, "pos_weight")
        log_sig = log_sig * ((pw.to(work) - 1) * tt + 1)
    loss = (1 - tt) * w - log_sig
    if weight is not None:
        loss = loss * _expand_weight(weight, x.shape, op).to(work)
    return _reduce(loss, reduction).to(t.dtype)


# multi-class classification ---------------------------------------------------------------------------
def _nll_check(x, t, weight, op: str, reduction: str) -> int:
    """torch's checks of nll_loss's arguments; returns the class dim."""
    if x.ndim < 1:
        raise TdxValueError(f"Expected 1 or more dimensions (got {x.ndim})")
    if x.ndim != 1 and (t.ndim == 0 or x.shape[0] != t.shape[0]):
        raise TdxValueError(f"Expected input batch_size ({x.shape[0]}) to match target batch_size "
                            f"({t.shape[0] if t.ndim else 0}).")
    if x.ndim <= 2:
        if t.ndim > 1:
            raise TdxRuntimeError(f"0D or 1D target tensor expected, multi-target not supported (got a {t.ndim}-D "
                                  "target)")
        if x.ndim == 1 and t.ndim == 1 and t.shape[0] != 1:
            raise TdxValueError(f"For 1D input, 1D target must have size 1, but got target size: {t.shape[0]}")
    elif x.ndim == 4 and t.ndim != 3:
        raise TdxRuntimeError(f"only batches of spatial targets supported (3D tensors) but got targets of "
                              f"dimension: {t.ndim}")
    elif tuple(t.shape[1:]) != tuple(x.shape[2:]):
        raise TdxRuntimeError(f"Expected target size {[x.shape[0], *x.shape[2:]]}, got {list(t.shape)}")
    if t.dtype not in (tdx.int64, tdx.uint8):
        raise TdxRuntimeError(f"expected target dtype to be Long or Byte, but got {torch_name(t.dtype)}")
    if t.dtype is tdx.uint8 and x.ndim > 2 and (t.numel() or reduction == "none"):
        # torch's spatial kernel takes int64 targets only (it returns before checking for no targets)
        raise TdxRuntimeError("expected scalar type Long but found Byte (targets of an input with more than 2 dims "
                              "must be int64)")
    cdim = 0 if x.ndim == 1 else 1
    if weight is not None:
        n = x.shape[cdim]
        if need_tensor(weight, op, "weight").ndim != 1 or weight.numel() != n:
            raise TdxRuntimeError(f"weight tensor should be defined either for all {n} classes or no classes but "
                                  f"got weight tensor of shape: {list(weight.shape)}")
    need_float(x, op, "nll_loss_out_frame")
    if weight is not None and weight.dtype is not x.dtype:
        raise TdxRuntimeError(f"expected scalar type {torch_name(x.dtype)} but found {torch_name(weight.dtype)} "
                              f"({op}'s weight must have the input's dtype)")
    return cdim


def _check_targets(tl, valid, n_classes: int) -> None:
    """torch's IndexError for a counted target outside ``[0, n_classes)``."""
    if tl.numel() and not _compiling():  # a compiled step cannot read values (torch's compiled kernels assert)
        bad = valid & ((tl < 0) | (tl >= n_classes))
        if bool(bad.any().item()):
            raise TdxIndexError(f"Target {int(tl.masked_select(bad)[0].item())} is out of bounds.")


def _nll(x, logp, t, weight, ignore_index: int, reduction: str, op: str):
    """nll_loss of the (float32 for half precision) log-probabilities ``logp`` of ``x``.

    Returns:
        (loss reduced, target as int64, mask of the targets that count, class weights per target or None).
    """
    cdim = _nll_check(x, t, weight, op, reduction)
    n_classes = x.shape[cdim]
    tl = t.long()
    if x.ndim == 1:
        tl = tl.reshape(())
    valid = tl != ignore_index
    _check_targets(tl, valid, n_classes)
    safe = tl.masked_fill(valid.logical_not(), 0)
    if n_classes == 0:  # every target is ignored (any other raised above)
        picked = logp.new_zeros(tuple(tl.shape))
    elif x.ndim == 1:
        picked = logp.gather(0, safe.reshape(1)).reshape(())
    else:
        picked = logp.gather(1, safe.unsqueeze(1)).squeeze(1)
    w_t = None
    if weight is not None:
        w_t = weight.to(logp.dtype).index_select(0, safe.reshape(-1)).reshape(tuple(safe.shape))
        if n_classes == 0:
            w_t = picked
    loss = tdx.where(valid, -picked if w_t is None else -picked * w_t, 0.0)
    if reduction == "mean":
        total = valid.sum() if w_t is None else tdx.where(valid, w_t, 0.0).sum()
        out = _divide(loss.sum(), total)
    else:
        out = _reduce(loss, reduction)
    return out, tl, valid, w_t


@_kernels.torch_kernel
def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,  # noqa: A002
             reduction="mean"):
    """Negative log likelihood ``-weight[c] * input[n, c]`` for the target class ``c`` of each item.

    Args:
        input: log-probabilities ``(C,)``, ``(N, C)`` or ``(N, C, d1, ...)`` (classes along dim 1).
        target: int64 (or uint8) class indices ``()``, ``(N,)`` or ``(N, d1, ...)``.
        weight: optional ``(C,)`` class weights of ``input``'s dtype.
        size_average: deprecated (see ``reduction``).
        ignore_index: targets of this value count for nothing (not in the mean's denominator either).
        reduce: deprecated (see ``reduction``).
        reduction: ``"none"``, ``"mean"`` (divided by the summed weights of the counted targets) or
            ``"sum"``.

    Raises:
        TdxValueError: an unknown ``reduction``, 0-D input, or mismatched batch sizes.
        TdxRuntimeError: a target of another shape or dtype, or a weight of another size or dtype.
        TdxIndexError: a target class out of ``[0, C)``.
        TdxNotImplementedError: ``input`` is not floating point.
    """
    x, t = need_tensor(input, "nll_loss"), need_tensor(target, "nll_loss", "target")
    reduction = _reduction(size_average, reduce, reduction)
    return _nll(x, opmath(x), t, weight, ignore_index, reduction, "nll_loss")[0].to(x.dtype)


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,  # noqa: A002
                  reduction="mean", label_smoothing=0.0):
    """Cross entropy of the logits ``input`` against class indices or class probabilities.

    ``target`` of ``input``'s shape holds probabilities (floating point); otherwise it holds class
    indices, and the loss is :func:`nll_loss` of ``log_softmax(input)`` along the class dim (dim 1,
    or 0 for 1-D input). ``label_smoothing`` mixes the target with the uniform distribution.

    Args:
        input: logits ``(C,)``, ``(N, C)`` or ``(N, C, d1, ...)``.
        target: class indices (as :func:`nll_loss`) or probabilities of ``input``'s shape.
        weight: optional ``(C,)`` class weights.
        size_average: deprecated (see ``reduction``).
        ignore_index: class index targets to skip (not allowed, other than negative, with probabilities).
        reduce: deprecated (see ``reduction``).
        reduction: ``"none"``, ``"mean"`` or ``"sum"``.
        label_smoothing: in ``[0, 1]``.

    Raises:
        TdxValueError: an unknown ``reduction``, or the errors of :func:`nll_loss`.
        TdxRuntimeError: ``label_smoothing`` is outside ``[0, 1]``, probabilities are not floating point or
            come with a non-negative ``ignore_index``, or a weight of the wrong size.
        TdxIndexError: a target class out of range.
        TdxNotImplementedError: ``input`` is not floating point.
    """
    if size_average is None and reduce is None:
        done = _kernels.fast("cross_entropy", input, target, weight, ignore_index=ignore_index, reduction=reduction,
                             label_smoothing=label_smoothing)
        if done is not _kernels.NOT_NATIVE:
            return done
    x, t = need_tensor(input, "cross_entropy"), need_tensor(target, "cross_entropy", "target")
    reduction = _reduction(size_average, reduce, reduction)
    if x.dtype.is_floating_point:  # torch's kernel where the executor has it (its mean's rounding included)
        done = _kernels.native("cross_entropy", x, t, weight, ignore_index=ignore_index, reduction=reduction,
                               label_smoothing=label_smoothing)
        if done is not _kernels.NOT_NATIVE:
            return done
    cdim = 0 if x.ndim == 1 else 1
    if tuple(x.shape) == tuple(t.shape):
        return _cross_entropy_probs(x, t, weight, ignore_index, reduction, label_smoothing, cdim)
    _smoothing(label_smoothing)
    if x.ndim == 0:
        raise TdxIndexError("cross_entropy(): Dimension out of range (expected to be in range of [-1, 0], but got 1): "
                            "the input has no class dim")
    need_float(x, "cross_entropy", "log_softmax_lastdim_kernel_impl")
    if (label_smoothing <= 0.0 and weight is None and x.ndim == 2 and x.dtype is tdx.float32
            and _kernels.has_rows_cross_entropy(x)):  # one fused node: no (N, C) log-probabilities held
        _nll_check(x, t, weight, "cross_entropy", reduction)
        tl = t.long()
        _check_targets(tl, tl != ignore_index, x.shape[1])
        return _kernels.rows_cross_entropy(x, tl, ignore_index, reduction)
    logp = opmath(x).log_softmax(cdim)
    nll, tl, valid, w_t = _nll(x, logp, t, weight, ignore_index, reduction, "cross_entropy")
    if label_smoothing <= 0.0:  # torch ignores a negative smoothing
        return nll.to(x.dtype)
    n_classes = x.shape[cdim]
    if weight is not None:
        smooth = -(logp * weight.to(logp.dtype).reshape((n_classes,) + (1,) * (x.ndim - cdim - 1))).sum(cdim)
    else:
        smooth = -logp.sum(cdim)
    smooth = tdx.where(valid, smooth, 0.0)
    if reduction == "mean":
        total = valid.sum() if w_t is None else tdx.where(valid, w_t, 0.0).sum()
        smooth = _divide(smooth.sum(), total)
    else:
        smooth = _reduce(smooth, reduction)
    return (nll * (1 - label_smoothing) + smooth * (label_smoothing / n_classes)).to(x.dtype)


def _smoothing(label_smoothing) -> None:
    if label_smoothing > 1.0:  # torch treats a negative smoothing as none
        raise TdxRuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")


def _cross_entropy_probs(x, t, weight, ignore_index, reduction, label_smoothing, cdim):
    """cross_entropy against class probabilities ``t`` (of ``x``'s shape)."""
    if not t.dtype.is_floating_point:
        raise TdxRuntimeError(f"Expected floating point type for target with class probabilities, got "
                              f"{torch_name(t.dtype)}")
    if ignore_index >= 0:
        raise TdxRuntimeError(f"ignore_index is not supported for floating point target (got {ignore_index})")
    _smoothing(label_smoothing)
    if x.ndim == 0:
        raise TdxIndexError("cross_entropy(): Dimension specified as 1 but tensor has no dimensions (the input has "
                            "no class dim)")
    need_float(x, "cross_entropy", "log_softmax_lastdim_kernel_impl")
    logp = opmath(x).log_softmax(cdim)
    n_classes = x.shape[cdim]
    rt = tdx.promote_types(x.dtype, t.dtype)
    if weight is not None:
        if need_tensor(weight, "cross_entropy", "weight").ndim != 1 or weight.numel() != n_classes:
            raise TdxRuntimeError(f"cross_entropy: weight tensor should be defined either for all {n_classes} "
                                  f"classes or no classes but got weight tensor of shape: {list(weight.shape)}")
        rt = tdx.promote_types(rt, weight.dtype)
    work = _work(rt)
    tt = t.to(work)
    if label_smoothing > 0:
        tt = tt * (1 - label_smoothing) + label_smoothing / n_classes
    prod = logp.to(work) * tt
    if weight is not None:
        prod = prod * weight.to(work).reshape((n_classes,) + (1,) * (x.ndim - cdim - 1))
    if reduction == "none":
        out = -prod.sum(cdim)
    elif reduction == "sum":
        out = -prod.sum()
    elif x.numel() == 0:
        out = prod.sum() * math.nan
    else:
        out = -prod.sum() / (x.numel() // n_classes)
    return out.to(rt)


# distributions and similarity -------------------------------------------------------------------------
@_kernels.torch_kernel
def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):  # noqa: A002
    """Pointwise KL divergence ``target * (log(target) - input)`` of log-probabilities ``input``.

    Args:
        input: log-probabilities.
        target: probabilities (log-probabilities when ``log_target``), broadcastable with ``input``.
        size_average: deprecated (see ``reduction``).
        reduce: deprecated (see ``reduction``).
        reduction: ``"none"``, ``"mean"`` (over all elements, with torch's warning), ``"sum"`` or
            ``"batchmean"`` (the sum divided by ``input.size(0)``: the true KL divergence).
        log_target: ``target`` holds log-probabilities.

    Raises:
        TdxValueError: an unknown ``reduction``.
        TdxRuntimeError: an integral (or bool) input or target.
    """
    x, t = need_tensor(input, "kl_div"), need_tensor(target, "kl_div", "target")
    if size_average is None and reduce is None and reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the support size."
                      "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
                      "'mean' will be changed to behave the same as 'batchmean' in the next major release.",
                      stacklevel=2)
    reduction = _reduction(size_average, reduce, reduction, _REDUCTIONS + ("batchmean",))
    if not (x.dtype.is_floating_point or x.dtype.is_complex) or not (t.dtype.is_floating_point
                                                                      or t.dtype.is_complex):
        raise TdxRuntimeError(f"kl_div: Integral inputs not supported (got {x.dtype.name} and {t.dtype.name}).")
    rt = tdx.promote_types(x.dtype, t.dtype)
    w, tt = x.to(_work(rt)), t.to(_work(rt))
    loss = tt.exp() * (tt - w) if log_target else tdx.xlogy(tt, tt) - tt * w
    if reduction == "batchmean":
        loss = loss.sum() / x.shape[0] if x.ndim else loss.sum()
    else:
        loss = _reduce(loss, reduction)
    return loss.to(rt)


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """``sum(x1 * x2) / (max(||x1||, eps) * max(||x2||, eps))`` along ``dim`` (inputs broadcast).

    Each input is divided by its clamped norm first, as torch's; the clamp passes gradients
    through, as torch's (it clamps outside autograd).

    Raises:
        TdxRuntimeError: the promoted dtype is not floating point.
    """
    a, b = need_tensor(x1, "cosine_similarity", "x1"), need_tensor(x2, "cosine_similarity", "x2")
    rt = tdx.promote_types(a.dtype, b.dtype)
    if not rt.is_floating_point:
        raise TdxRuntimeError(f"expected common dtype to be floating point, yet common dtype is {torch_name(rt)}")
    if tuple(a.shape) != tuple(b.shape):
        a, b = tdx.broadcast_tensors(a, b)
    wa, wb = a.to(_work(a.dtype) if a.dtype.is_floating_point else rt), b.to(_work(b.dtype)
                                                                              if b.dtype.is_floating_point else rt)

    def unit(v):
        n = _norm(v, 2, dim, "cosine_similarity")
        if wants_grad(v):
            n = tdx.where(n < eps, n - n.detach() + eps, n)
        else:
            n = n.clamp_min(eps)
        return v / n

    return (unit(wa) * unit(wb)).sum(dim).to(rt)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """The ``p``-norm of ``x1 - x2 + eps`` over the last dim (inputs broadcast)."""
    a, b = need_tensor(x1, "pairwise_distance", "x1"), need_tensor(x2, "pairwise_distance", "x2")
    dim = max(a.ndim, b.ndim) - 1
    diff = a - b + eps
    n = _norm(diff, p, dim, "pairwise_distance")
    return n if keepdim or n.ndim == 0 else n.squeeze(dim)
