"""Fused neural-network kernels of the torch executor, a mixin of :class:`TorchExecutor`.

``tdx.nn.functional`` composes layer_norm, gelu, cross_entropy, embedding and linear from
tensor ops so that they run on every executor. On torch executors those composites cost
more time and autograd memory than torch's own kernels (a composed layer_norm saves five
tensors for its backward; torch's saves two), so the functions call these kernels when the
executor sets ``fused_nn`` (see :mod:`tdx.compat.nn._fused`). Each method takes natives and
has ``torch.nn.functional``'s semantics; a bad argument raises torch's own exception, and
the caller then runs its composite to raise tdx's typed error. Must never import MLX.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


class TorchNNOps:
    """torch's fused kernels for the hot functions of ``tdx.nn.functional`` and the optimizers."""

    fused_nn = True

    def _dtype_arg(self, dtype):
        """The native dtype for a tdx ``dtype`` (None stays None); TypeError for anything else."""
        if dtype is None:
            return None
        native = self._to_native.get(dtype)
        if native is None:
            raise TypeError(f"not a dtype this executor holds: {dtype!r}")
        return native

    @staticmethod
    def nn_linear(x, weight, bias=None):
        return F.linear(x, weight, bias)

    @staticmethod
    def nn_layer_norm(x, weight, bias, normalized_shape, eps):
        return F.layer_norm(x, normalized_shape, weight, bias, eps)

    @staticmethod
    def nn_gelu(x, approximate):
        return F.gelu(x, approximate=approximate)

    @staticmethod
    def nn_embedding(idx, weight, padding_idx, scale_grad_by_freq):
        return F.embedding(idx, weight, padding_idx, None, 2.0, scale_grad_by_freq, False)

    @staticmethod
    def nn_cross_entropy(x, target, weight, ignore_index, reduction, label_smoothing):
        return F.cross_entropy(x, target, weight, None, ignore_index, None, reduction, label_smoothing)

    def nn_softmax(self, x, dim, dtype):
        return torch.softmax(x, dim, dtype=self._dtype_arg(dtype))

    def nn_log_softmax(self, x, dim, dtype):
        return torch.log_softmax(x, dim, dtype=self._dtype_arg(dtype))

    @staticmethod
    def addcmul(x, t1, t2, value):
        return torch.addcmul(x, t1, t2, value=value)

    @staticmethod
    def addcdiv(x, t1, t2, value):
        return torch.addcdiv(x, t1, t2, value=value)
