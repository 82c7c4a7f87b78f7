"""The old-style ``weight_norm`` (a forward pre-hook recomputing ``<name>`` from ``<name>_g`` and
``<name>_v``), as torch.nn.utils.weight_norm; deprecated in torch in favour of
``parametrizations.weight_norm``. Must never import torch or mlx.
"""

from __future__ import annotations

import warnings

import tdx

from ..parameter import Parameter, UninitializedParameter
from .parametrizations import norm_except_dim, weight_norm_value

__all__ = ["WeightNorm", "weight_norm", "remove_weight_norm"]


class WeightNorm:
    """The forward pre-hook that recomputes the normalized weight."""

    name: str
    dim: int

    def __init__(self, name: str, dim) -> None:
        self.name = name
        self.dim = -1 if dim is None else dim

    def compute_weight(self, module):
        g = getattr(module, self.name + "_g")
        v = getattr(module, self.name + "_v")
        return weight_norm_value(v, g, self.dim)

    @staticmethod
    def apply(module, name: str, dim) -> "WeightNorm":
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, WeightNorm) and hook.name == name:
                raise tdx.TdxError(f"Cannot register two weight_norm hooks on the same parameter {name}")
        fn = WeightNorm(name, dim)
        weight = getattr(module, name)
        if isinstance(weight, UninitializedParameter):
            raise tdx.TdxValueError("The module passed to `WeightNorm` can't have uninitialized parameters. Make sure "
                                    "to run the dummy forward before applying weight normalization")
        del module._parameters[name]
        module.register_parameter(name + "_g", Parameter(norm_except_dim(weight, 2, fn.dim).detach()))
        module.register_parameter(name + "_v", Parameter(weight.detach()))
        setattr(module, name, fn.compute_weight(module))
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module) -> None:
        with tdx.no_grad():
            weight = self.compute_weight(module)
        delattr(module, self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        setattr(module, self.name, Parameter(weight.detach()))

    def __call__(self, module, inputs) -> None:
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module, name: str = "weight", dim=0):
    """Deprecated: weight normalization by a forward pre-hook (warns with a FutureWarning).

    Returns:
        ``module``, with parameters ``<name>_g`` and ``<name>_v`` in place of ``<name>``.
    """
    warnings.warn("`torch.nn.utils.weight_norm` is deprecated in favor of "
                  "`torch.nn.utils.parametrizations.weight_norm`.", FutureWarning, stacklevel=2)
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module, name: str = "weight"):
    """Undo :func:`weight_norm`: ``<name>`` becomes a plain parameter again.

    Raises:
        TdxValueError: no weight norm on ``name``.
    """
    for k, hook in module._forward_pre_hooks.items():
        if isinstance(hook, WeightNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise tdx.TdxValueError(f"weight_norm of '{name}' not found in {module}")
