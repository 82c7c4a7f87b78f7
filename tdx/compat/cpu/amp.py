"""``tdx.cpu.amp`` (``torch.cpu.amp``): torch's deprecated CPU spelling of ``tdx.amp.autocast("cpu", ...)``
(and of ``GradScaler("cpu", ...)``), each warning the ``FutureWarning`` torch's does. This module must never
import a framework.
"""

from __future__ import annotations

import warnings

from ..amp import GradScaler as _GradScaler, autocast as _autocast
from ..autocast_state import get_autocast_cpu_dtype as _cpu_dtype

__all__ = ["autocast", "GradScaler"]


class autocast(_autocast):  # noqa: N801 - torch's name
    """``torch.cpu.amp.autocast(args...)``: deprecated for ``torch.amp.autocast("cpu", args...)``."""

    def __init__(self, enabled=True, dtype=None, cache_enabled=True):
        warnings.warn("`torch.cpu.amp.autocast(args...)` is deprecated. Please use "
                      "`torch.amp.autocast('cpu', args...)` instead.", FutureWarning, stacklevel=2)
        super().__init__("cpu", dtype=_cpu_dtype() if dtype is None else dtype, enabled=enabled,
                         cache_enabled=cache_enabled)


class GradScaler(_GradScaler):
    """``torch.cpu.amp.GradScaler(args...)``: deprecated for ``torch.amp.GradScaler("cpu", args...)``."""

    def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000,
                 enabled=True):
        warnings.warn("`torch.cpu.amp.GradScaler(args...)` is deprecated. Please use "
                      "`torch.amp.GradScaler('cpu', args...)` instead.", FutureWarning, stacklevel=2)
        super().__init__("cpu", init_scale=init_scale, growth_factor=growth_factor,
                         backoff_factor=backoff_factor, growth_interval=growth_interval, enabled=enabled)
