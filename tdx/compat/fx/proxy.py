"""``torch.fx.proxy``: torch's own module's public names (graph machinery that holds no tensors), at
tdx's path, so ``from torch.fx.proxy import ...`` works under tdx. Must never re-export a module
object of torch (``torch`` itself stays out of this namespace).
"""

from __future__ import annotations

import types as _types

from torch.fx import proxy as _torch_proxy

globals().update({k: v for k, v in vars(_torch_proxy).items()
                  if not k.startswith("__") and not isinstance(v, _types.ModuleType)})
__all__ = list(getattr(_torch_proxy, "__all__", [k for k in vars(_torch_proxy) if not k.startswith("_")]))
