"""``tdx.signal``: torch.signal's namespace, whose one member is :mod:`.windows` (the window functions).

Must never import a framework.
"""

from __future__ import annotations

from . import windows

__all__ = ["windows"]
