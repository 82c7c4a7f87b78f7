"""``tdx.optim``: torch's ``torch.optim`` namespace for tdx tensors.

Every optimizer of torch 2.13, ``lr_scheduler`` and ``swa_utils``. Optimizers step each
parameter on its own executor with torch's single-tensor arithmetic. Importing this package
must never import torch or mlx.
"""

from __future__ import annotations

from . import lr_scheduler, swa_utils
from .adafactor import Adafactor
from .adagrad import ASGD, Adadelta, Adagrad, RMSprop, Rprop
from .adam import Adam, Adamax, AdamW, NAdam, RAdam
from .lbfgs import LBFGS
from .muon import Muon
from .optimizer import Optimizer, register_optimizer_step_post_hook, register_optimizer_step_pre_hook
from .sgd import SGD
from .sparse_adam import SparseAdam
from .stateless import swap_in_optimizer_params_and_state

__all__ = [
    "ASGD", "Adadelta", "Adafactor", "Adagrad", "Adam", "AdamW", "Adamax", "LBFGS", "Muon", "NAdam",
    "Optimizer", "RAdam", "RMSprop", "Rprop", "SGD", "SparseAdam", "lr_scheduler", "swa_utils",
    "register_optimizer_step_pre_hook", "register_optimizer_step_post_hook", "swap_in_optimizer_params_and_state",
]
