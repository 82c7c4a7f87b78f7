"""``tdx.amp`` (``torch.amp``): automatic mixed precision on every executor.

``autocast`` regions run each op in the dtype torch's autocast policy gives it (torch's own autocast on the
torch executor; tdx's table of that policy, :mod:`tdx.compat.autocast_policy`, on MLX), ``custom_fwd`` /
``custom_bwd`` carry a region into custom autograd Functions, and ``GradScaler`` scales losses, unscales
gradients, skips steps with inf/NaN gradients and adapts the scale, as torch's. This package must never
import a framework.
"""

from __future__ import annotations

from . import autocast_mode, grad_scaler
from .autocast_mode import autocast, custom_bwd, custom_fwd, is_autocast_available
from .grad_scaler import GradScaler

__all__ = ["autocast", "custom_fwd", "custom_bwd", "GradScaler", "is_autocast_available", "autocast_mode",
           "grad_scaler"]
