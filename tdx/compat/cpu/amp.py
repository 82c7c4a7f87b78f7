"""``tdx.cpu.amp`` (``torch.cpu.amp``): torch's deprecated CPU spelling of ``tdx.amp.autocast("cpu", ...)``
(and of ``GradScaler("cpu", ...)``), each warning the ``FutureWarning`` torch's does. This module must never
import a framework.
"""

from __future__ import annotations

from ..amp import autocast_mode, grad_scaler
from ..amp.autocast_state import get_autocast_cpu_dtype

__all__ = ["autocast", "GradScaler"]

autocast = autocast_mode.device_spelling("cpu", __name__, get_autocast_cpu_dtype)
GradScaler = grad_scaler.device_spelling("cpu", __name__)
