"""``tdx.cuda.amp`` (``torch.cuda.amp``): torch's deprecated CUDA spellings of :mod:`tdx.amp`.

``autocast(...)`` is ``tdx.amp.autocast("cuda", ...)``, ``GradScaler(...)`` is
``tdx.amp.GradScaler("cuda", ...)``, ``custom_fwd``/``custom_bwd`` take ``device_type="cuda"``; each warns
the ``FutureWarning`` torch's does. Without CUDA (or under a pin to a device that is no CUDA device),
an enabled ``autocast`` or ``GradScaler`` warns and disables itself, as torch's on a machine without CUDA.
This module must never import a framework.
"""

from __future__ import annotations

import functools
import warnings

from ..amp import GradScaler as _GradScaler, autocast as _autocast
from ..amp.autocast_mode import custom_bwd as _custom_bwd, custom_fwd as _custom_fwd
from ..autocast_state import get_autocast_gpu_dtype as _gpu_dtype

__all__ = ["autocast", "custom_fwd", "custom_bwd", "GradScaler"]


class autocast(_autocast):  # noqa: N801 - torch's name
    """``torch.cuda.amp.autocast(args...)``: deprecated for ``torch.amp.autocast("cuda", args...)``."""

    def __init__(self, enabled=True, dtype=None, cache_enabled=True):
        warnings.warn("`torch.cuda.amp.autocast(args...)` is deprecated. Please use "
                      "`torch.amp.autocast('cuda', args...)` instead.", FutureWarning, stacklevel=2)
        super().__init__("cuda", dtype=_gpu_dtype() if dtype is None else dtype, enabled=enabled,
                         cache_enabled=cache_enabled)


class GradScaler(_GradScaler):
    """``torch.cuda.amp.GradScaler(args...)``: deprecated for ``torch.amp.GradScaler("cuda", args...)``."""

    def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000,
                 enabled=True):
        warnings.warn("`torch.cuda.amp.GradScaler(args...)` is deprecated. Please use "
                      "`torch.amp.GradScaler('cuda', args...)` instead.", FutureWarning, stacklevel=2)
        super().__init__("cuda", init_scale=init_scale, growth_factor=growth_factor,
                         backoff_factor=backoff_factor, growth_interval=growth_interval, enabled=enabled)


def custom_fwd(fwd=None, *, cast_inputs=None):
    """``torch.cuda.amp.custom_fwd``: deprecated for ``torch.amp.custom_fwd(device_type="cuda")``."""
    warnings.warn("`torch.cuda.amp.custom_fwd(args...)` is deprecated. Please use "
                  "`torch.amp.custom_fwd(args..., device_type='cuda')` instead.", FutureWarning, stacklevel=2)
    return functools.partial(_custom_fwd, device_type="cuda")(fwd=fwd, cast_inputs=cast_inputs)


def custom_bwd(bwd):
    """``torch.cuda.amp.custom_bwd``: deprecated for ``torch.amp.custom_bwd(device_type="cuda")``."""
    warnings.warn("`torch.cuda.amp.custom_bwd(args...)` is deprecated. Please use "
                  "`torch.amp.custom_bwd(args..., device_type='cuda')` instead.", FutureWarning, stacklevel=2)
    return functools.partial(_custom_bwd, device_type="cuda")(bwd)
