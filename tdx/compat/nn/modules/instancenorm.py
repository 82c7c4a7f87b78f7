"""``torch.nn.modules.instancenorm``: the instance-norm layers and their base ``_InstanceNorm`` (which libraries
subclass), defined in :mod:`.batchnorm`. Must never import a framework.
"""

from __future__ import annotations

from .batchnorm import (InstanceNorm1d, InstanceNorm2d, InstanceNorm3d, LazyInstanceNorm1d, LazyInstanceNorm2d,
                        LazyInstanceNorm3d, _InstanceNorm)  # noqa: F401 - _InstanceNorm: libraries subclass it

__tdx_partial__ = True  # torch's names here that tdx has not built refuse at use (tdx.compat.torch_paths)
__all__ = ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "LazyInstanceNorm1d", "LazyInstanceNorm2d",
           "LazyInstanceNorm3d"]
