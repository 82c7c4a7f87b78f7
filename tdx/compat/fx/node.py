"""``torch.fx.node``: torch's own module's public names (graph machinery that holds no tensors), at
tdx's path, so ``from torch.fx.node import ...`` works under tdx. Must never re-export a module
object of torch (``torch`` itself stays out of this namespace).
"""

from __future__ import annotations

import types as _types

from torch.fx import node as _torch_node

globals().update({k: v for k, v in vars(_torch_node).items()
                  if not k.startswith("__") and not isinstance(v, _types.ModuleType)})
__all__ = list(getattr(_torch_node, "__all__", [k for k in vars(_torch_node) if not k.startswith("_")]))
