"""``tdx.nn.AdaptiveLogSoftmaxWithLoss``: the adaptive softmax of "Efficient softmax approximation for GPUs".

Frequent classes (below the first cutoff) are scored by a head layer together with one logit per cluster of
rarer classes; each cluster has its own two-layer projection of shrinking width (``in_features //
div_value ** (i + 1)``). A target's log-probability is its head log-probability, or its cluster's head
log-probability plus its log-probability within the cluster. Parameters are made and initialised in torch's
order (head, then each cluster's two layers), so a seeded model starts with torch's weights. Composed of
``nn.Linear``, ``log_softmax``, ``gather`` and index updates: it runs and differentiates on every executor.
This module must never import torch or mlx.
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Sequence

import tdx
from ...._errors import TdxRuntimeError, TdxValueError
from .. import functional as F
from .container import ModuleList, Sequential
from .linear import Linear
from .module import Module

__all__ = ["AdaptiveLogSoftmaxWithLoss"]

_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


class AdaptiveLogSoftmaxWithLoss(Module):
    """Log-probabilities of targets over ``n_classes`` classes split by ``cutoffs`` into a head and clusters.

    Args:
        in_features (int): the input's feature count.
        n_classes (int): the number of classes.
        cutoffs (Sequence[int]): increasing class indices in ``(0, n_classes - 1)`` where clusters start.
        div_value (float): each cluster's hidden width is ``in_features // div_value ** (i + 1)``. Default: 4.0.
        head_bias (bool): whether the head layer has a bias. Default: False.

    Raises:
        TdxValueError: ``cutoffs`` is not increasing, unique, positive and below ``n_classes - 1``.
    """

    def __init__(self, in_features: int, n_classes: int, cutoffs: Sequence[int], div_value: float = 4.0,
                 head_bias: bool = False, device=None, dtype=None) -> None:
        super().__init__()
        cutoffs = list(cutoffs)
        if len(cutoffs) == 0:
            raise TdxValueError("cutoffs should be a sequence of length larger than 0")
        if (cutoffs != sorted(cutoffs) or min(cutoffs) <= 0 or max(cutoffs) > n_classes - 1
                or len(set(cutoffs)) != len(cutoffs) or any(int(c) != c for c in cutoffs)):
            raise TdxValueError("cutoffs should be a sequence of unique, positive integers sorted in an increasing "
                                "order, where each value is between 1 and n_classes-1")
        factory = {"device": device, "dtype": dtype}
        self.in_features, self.n_classes = in_features, n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value, self.head_bias = div_value, head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head = Linear(in_features, self.head_size, bias=head_bias, **factory)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hidden = int(in_features // (div_value ** (i + 1)))
            out = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(Sequential(Linear(in_features, hidden, bias=False, **factory),
                                        Linear(hidden, out, bias=False, **factory)))

    def reset_parameters(self) -> None:
        """Re-initialise the head and every cluster's layers as at construction."""
        self.head.reset_parameters()
        for first, second in self.tail:
            first.reset_parameters()
            second.reset_parameters()

    def forward(self, input_, target_):
        """The log-probability of each target and the mean negative log-likelihood.

        Args:
            input_ (Tensor): ``(batch, in_features)`` or ``(in_features,)``.
            target_ (Tensor): ``(batch,)`` or ``()`` class indices.

        Returns:
            ``(output, loss)``: ``output`` of the target's shape, ``loss`` a scalar.

        Raises:
            TdxRuntimeError: the shapes do not match, or a target is outside ``[0, n_classes - 1]``.
        """
        batched = target_.dim() > 0
        if target_.dim() == 1:
            if input_.dim() != 2:
                raise TdxRuntimeError("1D target tensor expects 2D input tensors, but found inputs with size "
                                      f"{tuple(input_.shape)}")
            if input_.shape[0] != target_.shape[0]:
                raise TdxRuntimeError("Input and target should have the same size in the batch dimension.")
        elif target_.dim() == 0:
            if input_.dim() != 1:
                raise TdxRuntimeError("0D target tensor expects 1D input tensors, but found inputs with size "
                                      f"{tuple(input_.shape)}")
        else:
            raise TdxRuntimeError("0D or 1D target tensor expected, multi-target not supported")
        input = input_ if batched else input_.unsqueeze(0)
        target = target_ if batched else target_.unsqueeze(0)
        used = 0
        output = input.new_zeros(target.shape[0])
        gather_at = target.new_empty(target.shape[0])
        bounds = [0] + self.cutoffs
        for i in range(len(bounds) - 1):
            low, high = bounds[i], bounds[i + 1]
            mask = (target >= low) & (target < high)
            rows = mask.nonzero().squeeze()
            if rows.numel() == 0:
                continue
            if i == 0:
                gather_at = gather_at.index_copy(0, rows, target[mask])
            else:
                relative = target[mask] - low
                cluster_out = self.tail[i - 1](input.index_select(0, rows))
                gather_at = gather_at.index_fill(0, rows, self.shortlist_size + i - 1)
                local = F.log_softmax(cluster_out, dim=1).gather(1, relative.unsqueeze(1))
                output = output.index_copy(0, rows, local.squeeze(1))
            used += rows.numel()
        if used != target.shape[0]:
            raise TdxRuntimeError(f"Target values should be in [0, {self.n_classes - 1}], but values in range "
                                  f"[{target.min().item()}, {target.max().item()}] were found. ")
        head_logprob = F.log_softmax(self.head(input), dim=1)
        output = output + head_logprob.gather(1, gather_at.unsqueeze(1)).squeeze()
        loss = (-output).mean()
        if not batched:
            output = output.squeeze(0)
        return _ASMoutput(output, loss)

    def _full_log_prob(self, input, head_output):
        out = input.new_empty((head_output.shape[0], self.n_classes))
        head_logprob = F.log_softmax(head_output, dim=1)
        out[:, :self.shortlist_size] = head_logprob[:, :self.shortlist_size]
        for i, (start, stop) in enumerate(zip(self.cutoffs, self.cutoffs[1:])):
            cluster_logprob = F.log_softmax(self.tail[i](input), dim=1)
            out[:, start:stop] = cluster_logprob + head_logprob[:, self.shortlist_size + i].unsqueeze(1)
        return out

    def log_prob(self, input):
        """The log-probabilities of every class: ``(batch, n_classes)`` (or ``(n_classes,)``)."""
        batched = input.dim() > 1
        x = input if batched else input.unsqueeze(0)
        out = self._full_log_prob(x, self.head(x))
        return out if batched else out.squeeze(0)

    def predict(self, input):
        """The most likely class of each row, equal to ``log_prob(input).argmax(dim=1)``."""
        batched = input.dim() > 1
        x = input if batched else input.unsqueeze(0)
        head_output = self.head(x)
        output = head_output.argmax(dim=1)
        not_in_shortlist = output >= self.shortlist_size
        if bool(not_in_shortlist.any()):
            full = self._full_log_prob(x, head_output).argmax(dim=1)
            output = tdx.where(not_in_shortlist, full, output)
        return output if batched else output.squeeze(0)
