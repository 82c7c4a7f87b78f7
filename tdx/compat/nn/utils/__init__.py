"""``tdx.nn.utils``: torch.nn.utils for tdx modules (clipping, parameter vectors, parametrize,
weight/spectral norm, conv/linear + batchnorm fusion).

Submodules (``parametrize``, ``parametrizations``, and ``rnn`` where present) import lazily.
Must never import torch or mlx.
"""

from __future__ import annotations

import importlib as _importlib

import tdx

from . import parametrizations, parametrize
from .clip_grad import clip_grad_norm, clip_grad_norm_, clip_grad_value_, clip_grads_with_norm_, get_total_norm
from .convert_parameters import parameters_to_vector, vector_to_parameters
from .fusion import fuse_conv_bn_eval, fuse_conv_bn_weights, fuse_linear_bn_eval, fuse_linear_bn_weights
from .weight_norm import remove_weight_norm, weight_norm

__all__ = ["clip_grad_norm", "clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_", "get_total_norm",
           "parameters_to_vector", "vector_to_parameters", "fuse_conv_bn_eval", "fuse_conv_bn_weights",
           "fuse_linear_bn_eval", "fuse_linear_bn_weights", "weight_norm", "remove_weight_norm", "parametrize",
           "parametrizations", "skip_init"]


def skip_init(module_cls, *args, **kwargs):
    """Build ``module_cls(*args, **kwargs)`` with uninitialized parameters and buffers.

    torch builds on the meta device and then allocates; tdx has no meta device, so the
    module is built normally and its tensors are then replaced by uninitialized ones.

    Raises:
        TdxTypeError: ``module_cls`` has no ``device`` argument (as torch requires).
    """
    import inspect

    from ..modules.module import Module

    if not issubclass(module_cls, Module):
        raise tdx.TdxTypeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise tdx.TdxTypeError("Module must support a 'device' arg to skip initialization")
    final_device = kwargs.pop("device", "cpu")
    module = module_cls(*args, device=final_device, **kwargs)
    return module.to_empty(device=final_device)


def __getattr__(name: str):
    try:
        module = _importlib.import_module(f"{__name__}.{name}")
    except ModuleNotFoundError as err:
        if err.name != f"{__name__}.{name}":
            raise
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    globals()[name] = module
    return module
