"""``DataParallel`` as a single-device wrapper and ``data_parallel``.

tdx runs one executor per tensor and has no multi-device scatter/gather, so ``DataParallel``
runs its module on the one device it lives on: a model wrapped for ``cuda`` code runs unchanged
(``model.module`` and the state dict's ``module.`` prefix as torch's). More than one device id
is refused rather than silently ignored. ``DistributedDataParallel`` is in
:mod:`.distributed`. This module must never import torch or mlx.
"""

from __future__ import annotations

import tdx
from ..modules.module import Module

__all__ = ["DataParallel", "data_parallel"]


def _one_device(device_ids, output_device):
    ids = list(device_ids) if device_ids is not None else []
    if len(ids) > 1:
        raise tdx.TdxValueError(f"DataParallel: tdx runs on one device per module; got device_ids={ids} (pass at "
                                "most one)")
    return ids, output_device


class DataParallel(Module):
    """Runs ``module`` on its own device (tdx's single-device form of torch's ``DataParallel``).

    Args:
        module: the module to run.
        device_ids: at most one device.
        output_device: accepted for torch's signature; outputs stay where the module computes them.
        dim: the batch dim torch would scatter along (kept as an attribute).

    Raises:
        TdxValueError: more than one device id.
    """

    def __init__(self, module, device_ids=None, output_device=None, dim=0) -> None:
        super().__init__()
        self.device_ids, self.output_device = _one_device(device_ids, output_device)
        self.dim = dim
        self.module = module

    def forward(self, *inputs, **kwargs):
        """``module(*inputs, **kwargs)``."""
        return self.module(*inputs, **kwargs)


def data_parallel(module, inputs, device_ids=None, output_device=None, dim=0, module_kwargs=None):
    """``module(*inputs, **module_kwargs)`` on one device (see :class:`DataParallel`)."""
    _one_device(device_ids, output_device)
    if not isinstance(inputs, tuple):
        inputs = (inputs,)
    return module(*inputs, **(module_kwargs or {}))
