"""``parameters_to_vector`` and ``vector_to_parameters``, as torch.nn.utils.

Must never import torch or mlx.
"""

from __future__ import annotations

import tdx

from ..parameter import set_data

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def _check_device(param, device):
    if device is None:
        return param.device
    if param.device != device:
        raise tdx.TdxTypeError(f"Found two parameters on different devices ({device} and {param.device}), this is "
                               "currently not supported.")
    return device


def parameters_to_vector(parameters):
    """One 1-D tensor holding every parameter's values, flattened and concatenated.

    Raises:
        TdxTypeError: the parameters live on different devices.
    """
    device = None
    parts = []
    for param in parameters:
        device = _check_device(param, device)
        parts.append(param.reshape(-1))
    return tdx.cat(parts)


def vector_to_parameters(vec, parameters) -> None:
    """Give each parameter, in order, the next ``numel`` values of ``vec`` (its ``.data`` is replaced).

    Raises:
        TdxTypeError: ``vec`` is not a tensor, or the parameters live on different devices.
    """
    if not isinstance(vec, tdx.Tensor):
        raise tdx.TdxTypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    device = None
    pointer = 0
    for param in parameters:
        device = _check_device(param, device)
        n = param.numel()
        set_data(param, vec[pointer:pointer + n].view_as(param).detach())
        pointer += n
