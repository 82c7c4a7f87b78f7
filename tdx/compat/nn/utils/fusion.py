"""Folding an eval-mode BatchNorm into the preceding conv or linear layer, as torch.nn.utils.fusion.

Works on any modules with torch's attribute names (``weight``, ``bias``, ``running_mean``,
``running_var``, ``eps``...). Must never import torch or mlx.
"""

from __future__ import annotations

import copy

import tdx

from ..parameter import Parameter

__all__ = ["fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval", "fuse_linear_bn_weights",
           "FusionError"]


class FusionError(tdx.TdxError, AssertionError):
    """The modules cannot be fused (torch raises ``AssertionError``)."""


def fuse_conv_bn_eval(conv, bn, transpose: bool = False):
    """A copy of ``conv`` whose weight and bias apply ``bn`` too (both modules in eval mode).

    Raises:
        FusionError: a module is in training mode or ``bn`` has no running statistics.
    """
    if conv.training or bn.training:
        raise FusionError("Fusion only for eval!")
    fused = copy.deepcopy(conv)
    if bn.running_mean is None or bn.running_var is None:
        raise FusionError("bn.running_mean and bn.running_var must not be None")
    fused.weight, fused.bias = fuse_conv_bn_weights(fused.weight, fused.bias, bn.running_mean, bn.running_var,
                                                    bn.eps, bn.weight, bn.bias, transpose)
    return fused


def fuse_conv_bn_weights(conv_w, conv_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b, transpose: bool = False):
    """The fused ``(weight, bias)`` Parameters of a conv followed by a BatchNorm.

    ``conv_b``, ``bn_w`` and ``bn_b`` may be None (zeros, ones, zeros).
    """
    w_dtype = conv_w.dtype
    b_dtype = conv_b.dtype if conv_b is not None else w_dtype
    if conv_b is None:
        conv_b = tdx.zeros_like(bn_rm)
    if bn_w is None:
        bn_w = tdx.ones_like(bn_rm)
    if bn_b is None:
        bn_b = tdx.zeros_like(bn_rm)
    rsqrt = tdx.rsqrt(bn_rv + bn_eps)
    extra = [1] * (len(conv_w.shape) - 2)
    shape = [1, -1, *extra] if transpose else [-1, 1, *extra]
    fused_w = (conv_w * (bn_w * rsqrt).reshape(shape)).to(w_dtype)
    fused_b = ((conv_b - bn_rm) * rsqrt * bn_w + bn_b).to(b_dtype)
    return Parameter(fused_w, conv_w.requires_grad), Parameter(fused_b, conv_b.requires_grad)


def fuse_linear_bn_eval(linear, bn):
    """A copy of ``linear`` whose weight and bias apply ``bn`` too (both modules in eval mode).

    Raises:
        FusionError: a module is training, the feature counts differ, or ``bn`` has no running statistics.
    """
    if linear.training or bn.training:
        raise FusionError("Fusion only for eval!")
    fused = copy.deepcopy(linear)
    if not (linear.out_features == bn.num_features or bn.num_features == 1):
        raise FusionError("To fuse, linear.out_features == bn.num_features or bn.num_features == 1 (got "
                          f"{linear.out_features} and {bn.num_features})")
    if bn.running_mean is None or bn.running_var is None:
        raise FusionError("bn.running_mean and bn.running_var must not be None")
    fused.weight, fused.bias = fuse_linear_bn_weights(fused.weight, fused.bias, bn.running_mean, bn.running_var,
                                                      bn.eps, bn.weight, bn.bias)
    return fused


def fuse_linear_bn_weights(linear_w, linear_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b):
    """The fused ``(weight, bias)`` Parameters of a linear layer followed by a BatchNorm."""
    w_dtype = linear_w.dtype
    b_dtype = linear_b.dtype if linear_b is not None else w_dtype
    if linear_b is None:
        linear_b = tdx.zeros_like(bn_rm)
    scale = bn_w * tdx.rsqrt(bn_rv + bn_eps)
    fused_w = linear_w * scale.unsqueeze(-1).to(w_dtype)
    fused_b = ((linear_b - bn_rm) * scale + bn_b).to(b_dtype)
    return Parameter(fused_w, linear_w.requires_grad), Parameter(fused_b, linear_b.requires_grad)
