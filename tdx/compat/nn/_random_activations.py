"""Randomized activations and distance helpers of ``tdx.nn.functional``: ``rrelu`` (a random leaky
slope while training), ``gumbel_softmax`` (differentiable sampling from a categorical) and
``pdist`` (the condensed matrix of pairwise distances between rows).

Random draws are torch's own: on a torch device torch's kernels run; elsewhere the draws are the
ones torch's kernels make, in their order (``rrelu``'s slopes from the executor's ``rrelu_noise``,
Gumbel noise as ``-log`` of ``exponential_`` draws), from the executor's generator (torch's CPU
generator under the torch random stream). This module must never import torch or mlx.
"""

from __future__ import annotations

import warnings

import tdx
from . import _kernels
from ._activations import need_float, need_tensor, torch_name, write_inplace
from ..._errors import TdxNotImplementedError, TdxRuntimeError
from ._layers import _norm
from ..._tensor.random import rrelu_noise

__all__ = ["rrelu", "rrelu_", "gumbel_softmax", "pdist"]


@_kernels.torch_kernel
def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):  # noqa: A002 - torch's name
    """Leaky ReLU whose negative slope is drawn from ``U(lower, upper)`` per element while ``training``,
    and is ``(lower + upper) / 2`` otherwise.

    Raises:
        TdxNotImplementedError: ``input`` is not floating point.
        TdxRuntimeError: ``lower`` is greater than ``upper``.
    """
    x = need_float(input, "rrelu", "rrelu_with_noise")
    if lower > upper:
        raise TdxRuntimeError(f"Lower bound should be less than or equal to the upper bound (got lower={lower}, "
                              f"upper={upper})")

    def compute(s):
        if training:  # torch's output: input * noise, the slopes drawn where input <= 0 and 1 elsewhere
            return s * rrelu_noise(s, lower, upper)
        return tdx.where(s >= 0, s, s * ((lower + upper) / 2))

    return write_inplace(x, compute) if inplace else compute(x)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):  # noqa: A002 - torch's name
    """In-place :func:`rrelu`."""
    return rrelu(input, lower, upper, training, inplace=True)


@_kernels.torch_kernel
def gumbel_softmax(logits, tau=1.0, hard=False, eps=1e-10, dim=-1):
    """A sample of the Gumbel-softmax distribution: ``softmax((logits + g) / tau)`` with Gumbel(0, 1) noise
    ``g``; ``hard`` returns the one-hot of the arg max with the soft sample's gradient (straight through).

    Args:
        logits: unnormalized log-probabilities.
        tau: the temperature.
        hard: return one-hot samples.
        eps: deprecated and unused, as torch's (a warning when it is not the default).
        dim: the class dim.
    """
    x = need_tensor(logits, "gumbel_softmax", "logits")
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.", stacklevel=2)
    with tdx.no_grad():  # torch's -empty_like(logits).exponential_().log(): a constant to autograd
        gumbels = -tdx.empty(tuple(x.shape), dtype=x.dtype, device=x.device).exponential_().log()
    y_soft = ((x + gumbels) / tau).softmax(dim)
    if not hard:
        return y_soft
    index = y_soft.argmax(dim, keepdim=True)
    y_hard = tdx.zeros_like(x).scatter(dim, index, 1.0)
    return y_hard - y_soft.detach() + y_soft


@_kernels.torch_kernel
def pdist(input, p=2.0):  # noqa: A002 - torch's name
    """The ``p``-norm distances between every pair of rows ``i < j`` of a ``(N, M)`` input, in row-major
    order of the pairs (``N * (N - 1) / 2`` values).

    Raises:
        TdxRuntimeError: ``input`` is not 2-D or not floating point, or ``p`` is negative.
        TdxNotImplementedError: ``input`` is half precision (as torch's kernel).
    """
    x = need_tensor(input, "pdist")
    if x.ndim != 2:
        raise TdxRuntimeError(f"pdist only supports 2D tensors, got: {x.ndim}D")
    if not x.dtype.is_floating_point:
        raise TdxRuntimeError(f"pdist only supports floating-point dtypes (got {x.dtype.name})")
    if x.dtype not in (tdx.float32, tdx.float64):
        raise TdxNotImplementedError(f"\"pdist\" not implemented for '{torch_name(x.dtype)}' (pdist takes float32 "
                                     "or float64)")
    if p < 0:
        raise TdxRuntimeError(f"pdist only supports non-negative p values (got p={p})")
    n = x.shape[0]
    rows = [i for i in range(n) for _ in range(i + 1, n)]
    cols = [j for i in range(n) for j in range(i + 1, n)]
    if not rows:  # no pair: still an output of ``x`` for autograd, as torch's
        return x.flatten()[:0].clone()
    ii = tdx.tensor(rows, dtype=tdx.int64, device=x.device)
    jj = tdx.tensor(cols, dtype=tdx.int64, device=x.device)
    diff = x.index_select(0, ii) - x.index_select(0, jj)
    return _norm(diff, p, 1, "pdist").squeeze(1)
