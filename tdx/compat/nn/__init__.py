"""``tdx.nn``: torch's ``torch.nn`` namespace for tdx tensors.

``Module``, ``Parameter``, ``Buffer`` and the containers are here; ``tdx.nn.init``,
``tdx.nn.utils``, ``tdx.nn.parameter``, ``tdx.nn.functional`` and ``tdx.nn.attention``
(which is :mod:`tdx.attention`) are submodules. Importing this package must never import
a framework.
"""

from __future__ import annotations

from ... import attention
from ...aliasing.lazy_names import attach as _attach
from . import functional, parameter
from .modules import __all__ as _modules_all
from .parameter import Buffer, Parameter, UninitializedBuffer, UninitializedParameter

# the module classes, DataParallel and the submodules init, utils, parallel: imported on first use
__getattr__, __dir__ = _attach(globals(), {".modules": tuple(_modules_all), ".parallel": ("DataParallel",),
                                          ".init": (), ".utils": ()})

__all__ = ["functional", "attention", "parameter", "init", "utils", "parallel", "DataParallel", "Parameter", "Buffer",
           "UninitializedParameter", "UninitializedBuffer", *_modules_all]
