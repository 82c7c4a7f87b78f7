"""``tdx.optim.SparseAdam``: torch's lazy Adam for sparse gradients.

tdx tensors have no sparse layout, so every gradient a tdx parameter can hold is dense and
``step`` refuses it exactly as torch refuses dense gradients (RuntimeError, pointing to
Adam). Construction validates like torch. Must never import torch or mlx.
"""

from __future__ import annotations

import tdx

from .optimizer import Optimizer, check_lr, OptimizerRuntimeError

__all__ = ["SparseAdam"]


class SparseAdam(Optimizer):
    """SparseAdam (torch's ``torch.optim.SparseAdam``): only sparse gradients are accepted.

    Args:
        params: parameters or param groups (dense, real).
        lr: learning rate (default 1e-3).
        betas: running-average coefficients (default (0.9, 0.999)).
        eps: denominator term (default 1e-8).
        maximize: maximize the objective.
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, maximize=False):
        check_lr(lr, positive=True)
        if not 0.0 < eps:
            raise tdx.TdxValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise tdx.TdxValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise tdx.TdxValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        defaults = {"lr": lr, "betas": betas, "eps": eps, "maximize": maximize}
        super().__init__(params, defaults)
        complex_params = []
        for index, group in enumerate(self.param_groups):
            for d_index, p in enumerate(group["params"]):
                if p.is_complex():
                    complex_params.append([index, d_index])
        if complex_params:
            raise tdx.TdxValueError(
                f"Complex params at indices {complex_params}: SparseAdam does not support complex parameters")

    def _update_group(self, group):
        """Refuse the dense gradients tdx parameters carry, as torch does.

        Raises:
            RuntimeError: a parameter has a (necessarily dense) gradient.
        """
        for p in group["params"]:
            if p.grad is not None:
                raise OptimizerRuntimeError(
                    "SparseAdam does not support dense gradients, please consider Adam instead "
                    "(tdx tensors have no sparse layout)")
