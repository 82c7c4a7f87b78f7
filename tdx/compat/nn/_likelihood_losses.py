"""Likelihood losses of ``tdx.nn.functional``: Poisson and Gaussian negative log likelihood, the
connectionist temporal classification loss (``ctc_loss``) and the cross entropy of a linear
layer's logits (``linear_cross_entropy``).

Each function has ``torch.nn.functional``'s signature, checks, ``reduction`` semantics and error
kinds, and is composed from tdx tensor ops, so it runs and differentiates on every executor.
``ctc_loss`` runs the log-space alpha recursion one time step at a time; its gradient is the
exact derivative with respect to ``log_probs`` (torch's kernel returns one that is exact only
after a ``log_softmax``; both agree on the gradient of the logits before it).

This module must never import torch or mlx, and never touches executor internals: only the
public ``tdx`` API and the shared nn helpers.
"""

from __future__ import annotations

import math

import tdx
from . import _kernels
from ._activations import need_tensor
from ..._errors import TdxRuntimeError
from ._layers import linear as F_linear
from ._losses import _reduce, _reduction, cross_entropy

__all__ = ["poisson_nll_loss", "gaussian_nll_loss", "ctc_loss", "linear_cross_entropy"]

_UNREACHABLE = -1e30  # the log-probability of an unreachable CTC state: finite, so no gradient turns NaN


@_kernels.torch_kernel
def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8,  # noqa: A002
                     reduce=None, reduction="mean"):
    """Negative log likelihood of ``target ~ Poisson(rate)``.

    Args:
        input: the log of the rate when ``log_input`` (loss ``exp(input) - target * input``), else the
            rate (loss ``input - target * log(input + eps)``).
        target: counts, broadcastable with ``input``.
        log_input: see ``input``.
        full: add Stirling's approximation of ``log(target!)`` (for targets above 1).
        size_average: deprecated (see ``reduction``).
        eps: keeps the log finite when ``log_input`` is false.
        reduce: deprecated (see ``reduction``).
        reduction: ``"none"``, ``"mean"`` or ``"sum"``.

    Raises:
        TdxValueError: an unknown ``reduction``.
    """
    x = need_tensor(input, "poisson_nll_loss")
    t = need_tensor(target, "poisson_nll_loss", "target")
    reduction = _reduction(size_average, reduce, reduction)
    loss = x.exp() - t * x if log_input else x - t * (x + eps).log()
    if full:
        safe = tdx.where(t > 1, t, 1.0)  # Stirling's term counts for targets above 1 only
        stirling = safe * safe.log() - safe + 0.5 * (2 * math.pi * safe).log()
        loss = loss + tdx.where(t > 1, stirling, 0.0)
    return _reduce(loss, reduction)


@_kernels.torch_kernel
def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):  # noqa: A002
    """Negative log likelihood of ``target ~ N(input, var)``: ``0.5 * (log(var) + (input - target)**2 / var)``.

    Args:
        input: the expectations.
        target: samples of ``input``'s shape.
        var: the variances: of ``input``'s shape, one dim short of it (one variance for the last dim), with
            a single dim of size 1 where ``input``'s differs, or a float.
        full: add the constant ``0.5 * log(2 * pi)``.
        eps: ``var`` is clamped to at least this (the clamp passes gradients through, as torch's).
        reduction: ``"none"``, ``"mean"`` or ``"sum"``.

    Raises:
        TdxValueError: ``var`` has a negative entry or a size that does not fit, or an unknown ``reduction``.
    """
    x = need_tensor(input, "gaussian_nll_loss")
    t = need_tensor(target, "gaussian_nll_loss", "target")
    if isinstance(var, (int, float)) and not isinstance(var, bool):
        if var < 0:
            raise tdx.TdxValueError(f"var has negative entry/entries (got var={var})")
        v = tdx.ones_like(x) * var
    else:
        v = need_tensor(var, "gaussian_nll_loss", "var")
        if v.numel() and bool((v < 0).any().item()):
            raise tdx.TdxValueError("var has negative entry/entries")
    if tuple(v.shape) != tuple(x.shape):
        if tuple(x.shape[:-1]) == tuple(v.shape):
            v = v.unsqueeze(-1)
        elif not (x.ndim == v.ndim and sum(b for a, b in zip(x.shape, v.shape) if a != b) == 1):
            raise tdx.TdxValueError(f"var is of incorrect size: {list(v.shape)} for an input of size {list(x.shape)}")
    if reduction not in ("none", "mean", "sum"):
        raise tdx.TdxValueError(f"{reduction} is not valid (expected 'none', 'mean' or 'sum')")
    v = v + (v.clamp_min(eps) - v).detach()  # clamped, with the gradient passed through
    loss = 0.5 * (v.log() + (x - t) ** 2 / v)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


def _lengths(value, n: int, name: str) -> list:
    """CTC's input or target lengths as a list of ``n`` Python ints."""
    if isinstance(value, tdx.Tensor):
        if value.dtype.is_floating_point or value.dtype.is_complex:
            raise TdxRuntimeError(f"ctc_loss: {name} must be integral, got {value.dtype.name}")
        vals = [int(v) for v in value.reshape(-1).tolist()]
    else:
        vals = [int(v) for v in value]
    if len(vals) != n:
        raise TdxRuntimeError(f"ctc_loss: Expected {name} to have value at most/size {n}, but got size {len(vals)}")
    return vals


@_kernels.torch_kernel
def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean",
             zero_infinity=False):
    """Connectionist temporal classification loss: ``-log`` of the summed probability of every
    alignment of each target sequence to its input.

    Args:
        log_probs: ``(T, N, C)`` (or ``(T, C)`` unbatched) log-probabilities, e.g. ``log_softmax`` outputs.
        targets: ``(N, S)`` padded targets, or the targets of the batch concatenated in one 1-D tensor.
        input_lengths: ``N`` lengths (a tensor or a sequence of ints), each at most ``T``.
        target_lengths: ``N`` target lengths.
        blank: the blank class.
        reduction: ``"none"``, ``"mean"`` (each loss divided by its target length, then the batch mean) or
            ``"sum"``.
        zero_infinity: impossible alignments (infinite losses) give 0 and no gradient.

    Raises:
        TdxRuntimeError: shapes or lengths that do not fit, or ``blank`` out of range.
        TdxValueError: an unknown ``reduction``.
    """
    lp = need_tensor(log_probs, "ctc_loss", "log_probs")
    tg = need_tensor(targets, "ctc_loss", "targets")
    reduction = _reduction(None, None, reduction)
    unbatched = lp.ndim == 2
    if unbatched:
        lp = lp.unsqueeze(1)
        tg = tg.unsqueeze(0) if tg.ndim == 1 else tg
    if lp.ndim != 3:
        raise TdxRuntimeError(f"ctc_loss: log_probs must be 3-D (T, N, C) or 2-D (T, C), got {lp.ndim}-D")
    if not lp.dtype.is_floating_point:
        raise TdxRuntimeError(f"ctc_loss: log_probs must be floating point, got {lp.dtype.name}")
    n_time, batch, n_classes = lp.shape
    if not 0 <= blank < n_classes:
        raise TdxRuntimeError(f"blank must be in label range (got blank={blank} for {n_classes} classes)")
    in_lens = _lengths([input_lengths] if unbatched and not isinstance(input_lengths, (tdx.Tensor, list, tuple))
                       else input_lengths, batch, "input_lengths")
    tg_lens = _lengths([target_lengths] if unbatched and not isinstance(target_lengths, (tdx.Tensor, list, tuple))
                       else target_lengths, batch, "target_lengths")
    for i, (t_len, s_len) in enumerate(zip(in_lens, tg_lens)):
        if not 0 <= t_len <= n_time:
            raise TdxRuntimeError(f"Expected input_lengths to have value at most {n_time}, but got value {t_len} "
                                  f"(while checking arguments for ctc_loss_cpu, batch item {i})")
        if s_len < 0:
            raise TdxRuntimeError(f"ctc_loss: target length {s_len} of batch item {i} is negative")
    max_s = max(tg_lens, default=0)
    # targets padded to (N, max_s), from the 2-D or the concatenated 1-D form
    if tg.ndim == 2 and not (unbatched and tg.shape[0] != 1):
        if tg.shape[1] < max_s:
            raise TdxRuntimeError(f"Expected tensor to have size at least {max_s} at dimension 1, but got size "
                                  f"{tg.shape[1]} for argument #2 'targets' (while checking arguments for ctc_loss)")
        padded = tg[:, :max_s].long()
    elif tg.ndim == 1:
        if tg.shape[0] < sum(tg_lens):
            raise TdxRuntimeError(f"ctc_loss: the concatenated targets hold {tg.shape[0]} labels, the target lengths "
                                  f"ask for {sum(tg_lens)}")
        rows, start = [], 0
        for s_len in tg_lens:
            row = tg[start:start + s_len].long()
            start += s_len
            if s_len < max_s:
                row = tdx.cat([row, tdx.full((max_s - s_len,), blank, dtype=tdx.int64, device=lp.device)])
            rows.append(row)
        padded = tdx.stack(rows) if rows else tdx.zeros((0, max_s), dtype=tdx.int64, device=lp.device)
    else:
        raise TdxRuntimeError(f"ctc_loss: targets must be 2-D (N, S) or 1-D (concatenated), got {tg.ndim}-D")
    dev = lp.device
    n_states = 2 * max_s + 1
    # extended labels: blank, l1, blank, l2, ..., blank
    ext = tdx.full((batch, n_states), blank, dtype=tdx.int64, device=dev)
    if max_s:
        ext[:, 1::2] = padded
    prev2 = tdx.full((batch, n_states), blank, dtype=tdx.int64, device=dev)
    if n_states > 2:
        prev2[:, 2:] = ext[:, :-2]
    skip_ok = (ext != blank) & (ext != prev2)
    skip_ok[:, :2] = False
    neg = _UNREACHABLE
    alpha = None
    gather_idx = ext.unsqueeze(0).expand(n_time, batch, n_states)
    emit = lp.gather(2, gather_idx)  # (T, N, states): log p_t(l'_s)
    lens = tdx.tensor(in_lens, dtype=tdx.int64, device=dev)
    start_mask = tdx.arange(n_states, device=dev) < 2
    for step in range(n_time):
        if alpha is None:
            alpha = tdx.where(start_mask, emit[0], neg)
            continue
        pad1 = alpha.new_full((batch, 1), neg)
        pad2 = alpha.new_full((batch, 2), neg)
        a1 = tdx.cat([pad1, alpha[:, :-1]], 1)
        a2 = tdx.where(skip_ok, tdx.cat([pad2, alpha[:, :-2]], 1), neg)
        top = tdx.maximum(tdx.maximum(alpha, a1), a2).detach()
        summed = ((alpha - top).exp() + (a1 - top).exp() + (a2 - top).exp()).log() + top
        new = summed + emit[step]
        alpha = tdx.where((step < lens).unsqueeze(1), new, alpha)
    ends = tdx.tensor([[2 * s, max(2 * s - 1, 0)] for s in tg_lens], dtype=tdx.int64, device=dev).reshape(batch, 2)
    if alpha is None:  # no time steps: every alignment is impossible
        ll = lp.new_full((batch,), neg)
    else:
        last = alpha.gather(1, ends)
        both = tdx.tensor([s > 0 for s in tg_lens], device=dev)
        last = tdx.where(tdx.stack([tdx.ones_like(both), both], 1), last, neg)
        ll = last.logsumexp(1)
    zero_len = tdx.tensor([t == 0 for t in in_lens], device=dev)
    impossible = (ll < neg / 2) | (zero_len & tdx.tensor([s > 0 for s in tg_lens], device=dev))
    loss = tdx.where(zero_len & impossible.logical_not(), 0.0, -ll)  # empty input, empty target: probability 1
    # torch's derivative is the one through a log_softmax (``exp(lp) - exp(alpha + beta + nll - lp)``, per
    # time step within the input length): its exp(lp) part is added here with the value 0
    within = (tdx.arange(n_time, device=dev).unsqueeze(1) < lens.unsqueeze(0)).unsqueeze(2)
    probs = lp.exp()
    loss = loss + ((probs - probs.detach()) * within).sum((0, 2))
    if zero_infinity:
        loss = tdx.where(impossible, 0.0, loss)
    else:
        loss = tdx.where(impossible, math.inf, loss)
    if unbatched:
        loss = loss.reshape(())
    if reduction == "mean":
        denom = tdx.tensor(tg_lens, dtype=lp.dtype, device=dev).clamp_min(1)
        return (loss / (denom.reshape(()) if unbatched else denom)).mean()
    return _reduce(loss, reduction)


def linear_cross_entropy(input, linear_weight, target, *, linear_bias=None, weight=None, reduction="mean",  # noqa: A002
                         ignore_index=None, label_smoothing=0.0, options=None):
    """``cross_entropy(linear(input, linear_weight, linear_bias), target, ...)``, torch's reference path.

    Args:
        input: ``(in_features,)`` or ``(N, in_features)``.
        linear_weight: ``(C, in_features)``, or ``(C, d1, ..., dK, in_features)`` for a K-dimensional loss
            (then ``input`` must be batched).
        target: class indices or probabilities, as :func:`cross_entropy` takes for the logits.
        linear_bias: optional, ``(C, d1, ..., dK)``.
        weight: optional ``(C,)`` class weights.
        reduction: ``"none"``, ``"mean"`` or ``"sum"``.
        ignore_index: a class index to skip (-100 when None); not allowed with probabilities.
        label_smoothing: in ``[0, 1]``.
        options: torch's chunking options: a memory strategy with no effect on the values; tdx accepts
            and ignores it (it computes the reference path).

    Raises:
        TdxRuntimeError: shapes that do not fit, or ``ignore_index`` with probability targets.
    """
    x = need_tensor(input, "linear_cross_entropy")
    w = need_tensor(linear_weight, "linear_cross_entropy", "linear_weight")
    t = need_tensor(target, "linear_cross_entropy", "target")
    if not 1 <= x.ndim <= 2:
        raise TdxRuntimeError(f"expected input with dimensionality 1 or 2, got {x.ndim}")
    if w.ndim < 2:
        raise TdxRuntimeError(f"expected linear_weight with dimensionality at least 2, got {w.ndim}")
    batches, in_features = tuple(x.shape[:-1]), x.shape[-1]
    if in_features != w.shape[-1]:
        raise TdxRuntimeError(f"expected equal input and linear_weight last dimensions (in_features), got "
                              f"{in_features} and {w.shape[-1]}, respectively")
    n_classes, out_features = w.shape[0], tuple(w.shape[1:-1])
    if linear_bias is not None and tuple(linear_bias.shape) != (n_classes, *out_features):
        raise TdxRuntimeError(f"expected linear_bias shape {(n_classes, *out_features)}, got "
                              f"{tuple(linear_bias.shape)}")
    if out_features and not batches:
        raise TdxRuntimeError(f"K-dimensional loss defined by linear_weight shape {tuple(w.shape)} requires batched "
                              f"input, (N, {in_features}), got unbatched input with shape {tuple(x.shape)}")
    logits_shape = (*batches, n_classes, *out_features)
    if tuple(t.shape) == logits_shape and ignore_index is not None:
        raise TdxRuntimeError("ignore_index cannot be specified when target contains probabilities")
    rows = math.prod(out_features) * n_classes
    if out_features:
        w = w.reshape(rows, in_features)
        linear_bias = None if linear_bias is None else linear_bias.reshape(rows)
    logits = F_linear(x, w, linear_bias).reshape(logits_shape)
    return cross_entropy(logits, t, weight=weight, reduction=reduction,
                         ignore_index=-100 if ignore_index is None else ignore_index, label_smoothing=label_smoothing)
