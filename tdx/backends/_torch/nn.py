"""Torch-executor neural-network kernels, a mixin of the torch executor.

``nn_functional`` runs one of torch's own ``torch.nn.functional`` kernels (convolution,
pooling, padding, resampling, batch norm...) on native tensors, so that on cpu, cuda and mps
``tdx.nn.functional`` gives torch's results, gradients (torch's autograd records the call) and
errors bit for bit; the hot functions (linear, layer_norm, gelu, embedding, cross_entropy,
softmax) take it first, before tdx's own argument checks. Its presence on an executor is the
capability the facade checks; executors without it get tdx's composed kernels. ``addcmul``,
``addcdiv`` and ``lerp`` (``update_kernels``) are torch's one-pass kernels for the optimizers' updates. Must never
import MLX or tdx's facade.
"""

from __future__ import annotations

import torch
import torch.nn.functional as _F

from ..._errors import UnsupportedOpError

# the torch.nn.functional kernels the facade may route here
NN_KERNELS = frozenset((
    "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "pad",
    "max_pool1d", "max_pool2d", "max_pool3d", "max_pool1d_with_indices", "max_pool2d_with_indices",
    "max_pool3d_with_indices", "avg_pool1d", "avg_pool2d", "avg_pool3d", "adaptive_avg_pool1d",
    "adaptive_avg_pool2d", "adaptive_avg_pool3d", "adaptive_max_pool1d", "adaptive_max_pool2d",
    "adaptive_max_pool3d", "lp_pool1d", "lp_pool2d", "lp_pool3d", "max_unpool1d", "max_unpool2d", "max_unpool3d",
    "fractional_max_pool2d", "fractional_max_pool3d", "unfold", "fold", "pixel_shuffle", "pixel_unshuffle",
    "interpolate", "batch_norm", "instance_norm", "cross_entropy", "layer_norm", "gelu", "linear", "embedding",
    "softmax", "log_softmax",
    # the losses (torch's kernels and reductions, bit for bit)
    "nll_loss", "multi_margin_loss", "multilabel_margin_loss", "multilabel_soft_margin_loss", "soft_margin_loss",
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div", "ctc_loss", "poisson_nll_loss",
    "gaussian_nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "hinge_embedding_loss",
    "margin_ranking_loss", "cosine_embedding_loss", "triplet_margin_loss",
    # activations and norms tdx composes elsewhere
    "elu", "selu", "celu", "silu", "mish", "hardsigmoid", "hardswish", "logsigmoid", "softplus", "glu", "group_norm",
    "rms_norm", "local_response_norm", "pdist", "grid_sample", "bilinear", "conv_tbc", "dropout", "alpha_dropout",
    "rrelu", "gumbel_softmax"))


class TorchNNOps:
    """torch.nn.functional's kernels on native tensors."""

    __slots__ = ()
    update_kernels = True
    linear_kernel = staticmethod(_F.linear)  # nn.Linear's per-call path: torch's kernel, no argument repacking

    def nn_functional(self, name: str, args: tuple, kwargs: dict):
        """``torch.nn.functional.<name>(*args, **kwargs)`` on natives (a tdx dtype argument becomes torch's).

        Raises:
            UnsupportedOpError: ``name`` is not one of :data:`NN_KERNELS`.
        """
        if name not in NN_KERNELS:
            raise UnsupportedOpError(f"nn_functional: {name!r} is not a routed kernel; known: {sorted(NN_KERNELS)}")
        if kwargs and kwargs.get("dtype") is not None and not isinstance(kwargs["dtype"], torch.dtype):
            kwargs = {**kwargs, "dtype": self.native_dtype(kwargs["dtype"])}  # a tdx dtype
        return getattr(_F, name)(*args, **kwargs)

    def nn_kernel(self, name: str):
        """``torch.nn.functional.<name>`` itself for a caller passing natives and plain (non-tensor, non-dtype)
        arguments, or None where ``name`` is not one of :data:`NN_KERNELS`."""
        return getattr(_F, name) if name in NN_KERNELS else None

    @staticmethod
    def addcmul(x, t1, t2, value):
        return torch.addcmul(x, t1, t2, value=value)

    @staticmethod
    def addcdiv(x, t1, t2, value):
        return torch.addcdiv(x, t1, t2, value=value)

    @staticmethod
    def lerp(x, end, weight):
        return torch.lerp(x, end, weight)
