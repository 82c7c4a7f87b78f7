"""``tdx.nn.parallel``: torch.nn.parallel's data parallelism for tdx modules.

Must never import a framework.
"""

from __future__ import annotations

from .distributed import DistributedDataParallel

__all__ = ["DistributedDataParallel"]
