"""Autograd controls: ``no_grad``, ``enable_grad``, ``set_grad_enabled``, ``inference_mode``.

The torch executor records gradients with torch's own autograd, so these switches drive
torch's grad mode when torch is loaded, and keep tdx's own per-thread flag for
executors without a native tape. Must never import a framework.
"""

from __future__ import annotations

from .grad_mode import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "is_grad_enabled"]
