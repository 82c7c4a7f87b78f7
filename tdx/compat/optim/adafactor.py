"""``tdx.optim.Adafactor``: factored second-moment optimizer, torch's single-tensor
arithmetic in the same order (row/column variance ``lerp_``, relative step size, update
clipping by RMS). Works on the parameters' own executor; must never import torch or mlx.
``foreach`` is accepted and has no effect (grouping note: torch's foreach batches by
device, dtype and dimensionality).
"""

from __future__ import annotations

import tdx

from .optimizer import Optimizer, check_lr, scalar, step_tensor

__all__ = ["Adafactor"]

_EPS = {"float64": 2.220446049250313e-16, "float32": 1.1920928955078125e-07,
        "float16": 0.0009765625, "bfloat16": 0.0078125}


def _machine_eps(dtype) -> float:
    """``torch.finfo(dtype).eps`` for the floating dtypes tdx parameters can have."""
    name = str(dtype).rsplit(".", 1)[-1]
    if name not in _EPS:
        raise tdx.DtypeError(f"Adafactor needs a floating-point parameter, got dtype {dtype}")
    return _EPS[name]


class Adafactor(Optimizer):
    """Adafactor (torch's ``torch.optim.Adafactor``).

    Args:
        params: parameters or param groups.
        lr: learning rate cap of the relative step (default 1e-2).
        beta2_decay: decay exponent of the second-moment coefficient (default -0.8).
        eps: ``(eps1, eps2)``; ``eps1=None`` uses the parameter dtype's machine epsilon.
        d: update clipping threshold (default 1.0).
        weight_decay: decoupled weight decay.
        foreach: accepted (no effect here).
        maximize: maximize the objective.
    """

    def __init__(self, params, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0, weight_decay=0.0, *,
                 foreach=None, maximize=False):
        check_lr(lr, "Learning rate should be >= 0 but is: {lr}")
        if not 0.0 >= beta2_decay:
            raise tdx.TdxValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise tdx.TdxValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise tdx.TdxValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise tdx.TdxValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise tdx.TdxValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        defaults = {"lr": lr, "beta2_decay": beta2_decay, "eps": eps, "d": d, "weight_decay": weight_decay,
                    "foreach": foreach, "maximize": maximize}
        super().__init__(params, defaults)

    _group_defaults = {"foreach": None, "maximize": False}

    def _update_group(self, group):
        lr, beta2_decay, d, wd = scalar(group["lr"]), group["beta2_decay"], group["d"], group["weight_decay"]
        eps1, eps2 = group["eps"]
        for p, grad, state in self._grads(group):
            if len(state) == 0:
                state["step"] = step_tensor(0.0, p)
                if grad.dim() > 1:
                    row_shape = list(grad.shape)
                    row_shape[-1] = 1
                    state["row_var"] = grad.new_zeros(row_shape)
                    col_shape = list(grad.shape)
                    col_shape[-2] = 1
                    state["col_var"] = grad.new_zeros(col_shape)
                else:
                    state["variance"] = tdx.zeros_like(grad)
            if group["maximize"]:
                grad = -grad
            if eps1 is None:
                eps1 = _machine_eps(p.dtype)
            step_t = state["step"]
            step_t += 1
            step_float = step_t.item()
            one_minus_beta2_t = step_float ** beta2_decay
            rho_t = min(lr, 1 / (step_float ** 0.5))
            alpha = max(eps2, p.norm(2).item() / (p.numel() ** 0.5)) * rho_t
            if wd != 0:
                p.mul_(1 - lr * wd)
            if grad.dim() > 1:
                row_var, col_var = state["row_var"], state["col_var"]
                row_mean = tdx.norm(grad, dim=-1, keepdim=True).square_().div_(grad.size(-1))
                row_var.lerp_(row_mean, one_minus_beta2_t)
                col_mean = tdx.norm(grad, dim=-2, keepdim=True).square_().div_(grad.size(-2))
                col_var.lerp_(col_mean, one_minus_beta2_t)
                var_estimate = row_var @ col_var
                var_estimate.div_(row_var.mean(dim=-2, keepdim=True).clamp_(min=eps1))
            else:
                variance = state["variance"]
                variance.lerp_(grad * grad, one_minus_beta2_t)
                var_estimate = variance.clone()
            update = var_estimate.clamp_(min=eps1 * eps1).rsqrt_()
            update.mul_(grad)
            denom = max(1.0, update.norm(2).item() / ((update.numel() ** 0.5) * d))
            p.add_(update, alpha=-alpha / denom)
