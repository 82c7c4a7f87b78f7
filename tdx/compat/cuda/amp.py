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

from ..amp import autocast_mode, grad_scaler
from ..amp.autocast_mode import custom_bwd as _custom_bwd, custom_fwd as _custom_fwd
from ..amp.autocast_state import get_autocast_gpu_dtype

__all__ = ["autocast", "custom_fwd", "custom_bwd", "GradScaler"]

autocast = autocast_mode.device_spelling("cuda", __name__, get_autocast_gpu_dtype)
GradScaler = grad_scaler.device_spelling("cuda", __name__)


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
