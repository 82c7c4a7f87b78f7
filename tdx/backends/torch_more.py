"""Torch-executor adapters for the wider surface, a mixin of the torch executor.

Ops whose tdx signature is torch's are bound directly in ``torch_executor``; only the ones
needing an adapter live here. Must never import MLX.
"""

from __future__ import annotations


class TorchMoreOps:
    """Further torch ops whose tdx signature differs from torch's."""
