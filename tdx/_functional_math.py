"""Module-level torch functions composed from the op surface (``tdx.addmm``, ``tdx.lerp``,
``tdx.isclose``, ``tdx.hstack``...), with torch's signatures.

Each forwards to a Tensor method or composes other tdx functions. Must never import a framework.
"""

from __future__ import annotations

__all__: list = []
