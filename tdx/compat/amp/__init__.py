"""``tdx.amp`` (``torch.amp``): automatic mixed precision on every executor.

``autocast`` regions run each op in the dtype torch's autocast policy gives it (torch's own autocast on the
torch executor; tdx's table of that policy, in :mod:`tdx.compat.amp.autocast_state`, on MLX), ``custom_fwd`` /
``custom_bwd`` carry a region into custom autograd Functions, and ``GradScaler`` scales losses, unscales
gradients, skips steps with inf/NaN gradients and adapts the scale, as torch's. The whole of autocast lives here,
as in torch's ``torch/amp/autocast_mode.py``: :mod:`.autocast_state` keeps each device type's per-thread state
(``tdx.is_autocast_enabled``...), mirrors it into torch's own on torch devices, and holds tdx's table of torch's
per-op cast lists, applied on executors without a native autocast. This package must never import a framework.
"""

from __future__ import annotations

from ...aliasing.lazy_names import attach as _attach

# autocast's state and per-op policy (one module) are loaded by ``import tdx`` (torch's top-level autocast
# functions); the region class and GradScaler's module on first use (tdx.aliasing.lazy_names)
_HOMES = {".autocast_mode": ("autocast", "custom_bwd", "custom_fwd", "is_autocast_available"),
          ".grad_scaler": ("GradScaler",), ".autocast_state": ()}
__getattr__, __dir__ = _attach(globals(), _HOMES)

__all__ = ["autocast", "custom_fwd", "custom_bwd", "GradScaler", "is_autocast_available", "autocast_mode",
           "grad_scaler"]
