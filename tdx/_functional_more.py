"""Module-level torch functions for the wider surface (``tdx.gather``, ``tdx.topk``...).

Must never import a framework.
"""

from __future__ import annotations

__all__: list = []
