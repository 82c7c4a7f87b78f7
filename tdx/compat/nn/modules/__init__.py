"""``tdx.nn.modules``: the module classes (base ``Module``, containers, flatten/identity).

Must never import torch or mlx.
"""

from __future__ import annotations

from .container import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from .flatten import Flatten, Identity, Unflatten
from .module import Module

__all__ = ["Module", "Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict", "Identity",
           "Flatten", "Unflatten"]
