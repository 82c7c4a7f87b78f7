"""torch-semantics MLX ops for the wider surface, a mixin of the MLX executor.

Same conventions as ``tdx.backends.mlx_ops``. Must never import torch.
"""

from __future__ import annotations


class MLXMoreOps:
    """Further MLX ops with torch's semantics."""
