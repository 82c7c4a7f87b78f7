"""``tdx.nn.modules``: the module classes (base ``Module``, containers, flatten/identity).

Must never import torch or mlx.
"""

from __future__ import annotations

from .module import Module

__all__ = ["Module"]
