"""The one place ``tdx.nn`` reaches into tdx internals; everything else uses public names.

Holds only re-exports (no logic) so a core restructure changes one line here. Must never
import torch or mlx.
"""

from __future__ import annotations

try:
    from tdx import TdxRuntimeError  # public once the core exports it
except ImportError:  # pragma: no cover - depends on the core's export list
    from tdx._errors import TdxRuntimeError

__all__ = ["TdxRuntimeError"]
