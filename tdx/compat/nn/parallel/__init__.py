"""``tdx.nn.parallel``: torch.nn.parallel's data parallelism for tdx modules: ``DistributedDataParallel``
across processes (:mod:`.distributed`) and the single-device ``DataParallel`` (:mod:`.data_parallel`).

Must never import a framework.
"""

from __future__ import annotations

from .data_parallel import DataParallel, data_parallel
from .distributed import DistributedDataParallel

__all__ = ["DataParallel", "data_parallel", "DistributedDataParallel"]
