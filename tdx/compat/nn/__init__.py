"""``tdx.nn``: torch's ``torch.nn`` namespace for tdx tensors.

``Module``, ``Parameter``, ``Buffer`` and the containers are here; ``tdx.nn.init``,
``tdx.nn.utils``, ``tdx.nn.parameter``, ``tdx.nn.functional`` and ``tdx.nn.attention``
(which is :mod:`tdx.attention`) are submodules. Importing this package must never import
a framework.
"""

from __future__ import annotations

import importlib as _importlib

from ... import attention
from . import functional, parameter
from .modules import *  # noqa: F401,F403 - the module classes
from .modules import __all__ as _modules_all
from . import parallel
from .parallel import DataParallel
from .parameter import Buffer, Parameter, UninitializedBuffer, UninitializedParameter

_LAZY = ("init", "utils")


def __getattr__(name: str):
    if name in _LAZY:
        module = _importlib.import_module(f"{__name__}.{name}")
        globals()[name] = module
        return module
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["functional", "attention", "parameter", "init", "utils", "parallel", "DataParallel", "Parameter", "Buffer",
           "UninitializedParameter", "UninitializedBuffer", *_modules_all]
