"""``tdx.optim.SGD``: stochastic gradient descent with momentum, dampening, Nesterov and
weight decay, in torch's single-tensor arithmetic order (bit-identical on the torch CPU
executor). Works on each parameter's own executor; must never import torch or mlx.

Grouping note: torch's foreach path batches the per-parameter ops into one kernel per list;
tdx runs one op per parameter (``foreach`` is accepted and has no effect).
"""

from __future__ import annotations

import tdx

from .optimizer import Optimizer, check_lr, OptimizerRuntimeError, scalar

__all__ = ["SGD"]


class SGD(Optimizer):
    """Stochastic gradient descent (torch's ``torch.optim.SGD``).

    Args:
        params: parameters or param groups.
        lr: learning rate (default 1e-3).
        momentum: momentum factor (default 0).
        dampening: dampening of the momentum (default 0).
        weight_decay: L2 penalty (default 0).
        nesterov: Nesterov momentum (needs momentum > 0 and zero dampening).
        maximize: maximize the objective instead of minimizing it.
        foreach, differentiable, fused: torch's implementation switches, accepted for
            compatibility and stored in the groups; they do not change tdx's arithmetic
            (``fused`` and ``differentiable`` together are refused as torch refuses them).
    """

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, *,
                 maximize=False, foreach=None, differentiable=False, fused=None):
        check_lr(lr, nan_ok=True)  # torch's SGD checks lr < 0.0 only
        if momentum < 0.0:
            raise tdx.TdxValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise tdx.TdxValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = {"lr": lr, "momentum": momentum, "dampening": dampening, "weight_decay": weight_decay,
                    "nesterov": nesterov, "maximize": maximize, "foreach": foreach,
                    "differentiable": differentiable, "fused": fused}
        if nesterov and (momentum <= 0 or dampening != 0):
            raise tdx.TdxValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)
        if fused:
            if differentiable:
                raise OptimizerRuntimeError("`fused` does not support `differentiable`")
            if foreach:
                raise OptimizerRuntimeError("`fused` and `foreach` cannot be `True` together.")

    _group_defaults = {"nesterov": False, "maximize": False, "foreach": None, "differentiable": False,
                       "fused": False}

    def _update_group(self, group):
        lr = scalar(group["lr"])
        wd, momentum = group["weight_decay"], group["momentum"]
        dampening, nesterov, maximize = group["dampening"], group["nesterov"], group["maximize"]
        for p in group["params"]:
            grad = p.grad
            if grad is None:
                continue
            if maximize:
                grad = -grad
            if wd != 0:
                grad = grad.add(p, alpha=scalar(wd))
            if momentum != 0:
                state = self.state[p]
                buf = state.get("momentum_buffer")
                if buf is None:
                    buf = grad.detach().clone()
                    state["momentum_buffer"] = buf
                else:
                    buf.mul_(momentum).add_(grad, alpha=1 - dampening)
                grad = grad.add(buf, alpha=momentum) if nesterov else buf
            p.add_(grad, alpha=-lr)
