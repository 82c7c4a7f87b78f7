"""``tdx.optim``: torch's ``torch.optim`` namespace for tdx tensors.

Every optimizer of torch 2.13, ``lr_scheduler`` and ``swa_utils``. Optimizers step each
parameter on its own executor with torch's single-tensor arithmetic. Importing this package
must never import torch or mlx.
"""

from __future__ import annotations

from ...aliasing.lazy_names import attach as _attach

# each optimizer's module, lr_scheduler and swa_utils are imported on first use (tdx.aliasing.lazy_names)
__getattr__, __dir__ = _attach(globals(), {
    ".adafactor": ("Adafactor",), ".adagrad": ("ASGD", "Adadelta", "Adagrad", "RMSprop", "Rprop"),
    ".adam": ("Adam", "Adamax", "AdamW", "NAdam", "RAdam"), ".kernels": (), ".lbfgs": ("LBFGS",), ".lr_scheduler": (),
    ".muon": ("Muon",), ".optimizer": ("Optimizer", "register_optimizer_step_post_hook",
                                       "register_optimizer_step_pre_hook"),
    ".sgd": ("SGD",), ".sparse_adam": ("SparseAdam",), ".stateless": ("swap_in_optimizer_params_and_state",),
    ".swa_utils": ()})

__all__ = [
    "ASGD", "Adadelta", "Adafactor", "Adagrad", "Adam", "AdamW", "Adamax", "LBFGS", "Muon", "NAdam",
    "Optimizer", "RAdam", "RMSprop", "Rprop", "SGD", "SparseAdam", "lr_scheduler", "swa_utils",
    "register_optimizer_step_pre_hook", "register_optimizer_step_post_hook", "swap_in_optimizer_params_and_state",
]
