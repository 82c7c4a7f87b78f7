"""The Adam family of ``tdx.optim``: Adam, AdamW, Adamax, NAdam, RAdam.

Each step reproduces torch's single-tensor arithmetic in the same order (``lerp_``,
``mul_().addcmul_()``, ``addcdiv_`` with Python-float bias corrections computed from the
float32 ``step`` counter), so on the torch CPU executor results are bit-identical to
``torch.optim``. Work runs on each parameter's own executor; this module must never import
torch or mlx.

Flags: ``foreach``, ``fused``, ``capturable`` and ``differentiable`` are torch's
implementation switches; they are stored in the groups (so state dicts round-trip) and do
not change the arithmetic here. Grouping: on an executor with an ``adam_update`` kernel (MLX)
Adam and AdamW update each parameter and its moments in one compiled call with the same
roundings as the per-op path (``differentiable=True`` keeps the per-op path); elsewhere the
ops run one by one per parameter (on torch's CPU, faster than torch's own foreach).
"""

from __future__ import annotations

import tdx

from . import kernels as K
from .optimizer import Optimizer, check_lr, OptimizerRuntimeError, advance_step, scalar, step_tensor

__all__ = ["Adam", "AdamW", "Adamax", "NAdam", "RAdam"]


_MOMENTS = ("exp_avg", "exp_avg_sq")
_AMSGRAD_MOMENTS = _MOMENTS + ("max_exp_avg_sq",)


def _begin_step(p, grad, state, maximize, moments, counter=None):
    """The start every optimizer of this family makes on one parameter: its state created on the first
    step in torch's layout and key order (``step``, NAdam's ``counter`` at 1, then the zero ``moments``),
    the gradient negated under ``maximize``, and the step counter advanced.

    Returns:
        ``(grad, step)``: the gradient to use and the new step count (a Python float).
    """
    _init_state(p, state, moments, counter)
    return (-grad if maximize else grad), advance_step(state["step"])


def _init_state(p, state, moments, counter=None):
    """``p``'s state on its first step, in torch's layout and key order: ``step``, NAdam's ``counter`` at 1,
    then the zero ``moments``."""
    if len(state) == 0:
        state["step"] = step_tensor(0.0, p)
        if counter is not None:
            state[counter] = step_tensor(1.0, p)
        for name in moments:
            state[name] = tdx.zeros_like(p)


def _check_common(lr, eps, betas, weight_decay):
    check_lr(lr)
    if not 0.0 <= eps:
        raise tdx.TdxValueError(f"Invalid epsilon value: {eps}")
    if not 0.0 <= betas[0] < 1.0:
        raise tdx.TdxValueError(f"Invalid beta parameter at index 0: {betas[0]}")
    if not 0.0 <= betas[1] < 1.0:
        raise tdx.TdxValueError(f"Invalid beta parameter at index 1: {betas[1]}")
    if not 0.0 <= weight_decay:
        raise tdx.TdxValueError(f"Invalid weight_decay value: {weight_decay}")


class Adam(Optimizer):
    """Adam (torch's ``torch.optim.Adam``), with AMSGrad, maximize and optional decoupled
    weight decay.

    Args:
        params: parameters or param groups.
        lr: learning rate (default 1e-3).
        betas: coefficients of the running averages of the gradient and its square.
        eps: term added to the denominator (default 1e-8).
        weight_decay: L2 penalty, or decoupled decay when ``decoupled_weight_decay``.
        amsgrad: use the maximum of past squared-gradient averages.
        foreach, maximize, capturable, differentiable, fused, decoupled_weight_decay: as torch.
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *,
                 foreach=None, maximize=False, capturable=False, differentiable=False, fused=None,
                 decoupled_weight_decay=False):
        _check_common(lr, eps, betas, weight_decay)
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay, "amsgrad": amsgrad,
                    "maximize": maximize, "foreach": foreach, "capturable": capturable,
                    "differentiable": differentiable, "fused": fused,
                    "decoupled_weight_decay": decoupled_weight_decay}
        super().__init__(params, defaults)
        if fused:
            if differentiable:
                raise OptimizerRuntimeError("`fused` does not support `differentiable`")
            if foreach:
                raise OptimizerRuntimeError("`fused` and `foreach` cannot be `True` together.")

    _group_defaults = {"amsgrad": False, "maximize": False, "foreach": None, "capturable": False,
                       "differentiable": False, "decoupled_weight_decay": False, "fused": None}

    def _update_group(self, group):
        beta1, beta2 = (scalar(b) for b in group["betas"])
        lr, eps, wd = scalar(group["lr"]), group["eps"], group["weight_decay"]
        amsgrad, maximize = group["amsgrad"], group["maximize"]
        decoupled = group["decoupled_weight_decay"]
        if self._update_group_at_once(group, amsgrad=amsgrad, beta1=beta1, beta2=beta2, lr=lr, weight_decay=wd,
                                      eps=eps, maximize=maximize, decoupled=decoupled):
            return
        for p, grad, state in self._grads(group):
            grad, step = _begin_step(p, grad, state, maximize, _AMSGRAD_MOMENTS if amsgrad else _MOMENTS)
            exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
            bias_correction1 = 1 - beta1 ** step
            bias_correction2 = 1 - beta2 ** step
            fused = not group["differentiable"] and K.adam_update_(
                p, grad, exp_avg, exp_avg_sq, state["max_exp_avg_sq"] if amsgrad else None,
                weight_decay="none" if wd == 0 else "decoupled" if decoupled else "l2", wd=wd, decay=1 - lr * wd,
                beta1=beta1, beta2=beta2, eps=eps, step_size=lr / bias_correction1, bc2_sqrt=bias_correction2 ** 0.5)
            if fused:
                continue  # one fused executor call (MLX): the same roundings as the ops below
            if wd != 0:
                if decoupled:
                    p.mul_(1 - lr * wd)
                else:
                    grad = grad.add(p, alpha=wd)
            exp_avg.lerp_(grad, 1 - beta1)
            exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
            step_size = lr / bias_correction1
            bias_correction2_sqrt = bias_correction2 ** 0.5
            if amsgrad:
                max_sq = state["max_exp_avg_sq"]
                max_sq.copy_(tdx.maximum(max_sq, exp_avg_sq))
                denom = (max_sq.sqrt() / bias_correction2_sqrt).add_(eps)
            else:
                denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
            p.addcdiv_(exp_avg, denom, value=-step_size)


    def _update_group_at_once(self, group, **settings) -> bool:
        """The group's step in one executor call where the executor has one (torch's own Adam on torch
        executors; ``differentiable``, ``capturable`` and ``fused`` keep the per-parameter path)."""
        if group["differentiable"] or group["capturable"] or group["fused"]:
            return False
        if not K.has_group_kernel(group["params"]):  # decided before any gradient is read
            return False
        rows = list(self._grads(group))
        if not rows:
            return True
        moments = _AMSGRAD_MOMENTS if settings["amsgrad"] else _MOMENTS
        for p, _, state in rows:
            _init_state(p, state, moments)
        return K.adam_group_(rows, moments, foreach=group["foreach"], **settings)


class AdamW(Adam):
    """AdamW (torch's ``torch.optim.AdamW``): Adam with decoupled weight decay (default 1e-2).

    Args:
        params, lr, betas, eps, weight_decay, amsgrad, maximize, foreach, capturable,
        differentiable, fused: as :class:`Adam`.
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False, *,
                 maximize=False, foreach=None, capturable=False, differentiable=False, fused=None):
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                         foreach=foreach, maximize=maximize, capturable=capturable,
                         differentiable=differentiable, fused=fused, decoupled_weight_decay=True)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group["decoupled_weight_decay"] = True


class Adamax(Optimizer):
    """Adamax, Adam's infinity-norm variant (torch's ``torch.optim.Adamax``).

    Args:
        params: parameters or param groups.
        lr: learning rate (default 2e-3).
        betas, eps, weight_decay: as torch.
        foreach, maximize, differentiable, capturable: accepted as torch (no effect here).
    """

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, foreach=None, *,
                 maximize=False, differentiable=False, capturable=False):
        _check_common(lr, eps, betas, weight_decay)
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay, "foreach": foreach,
                    "maximize": maximize, "differentiable": differentiable, "capturable": capturable}
        super().__init__(params, defaults)

    _group_defaults = {"foreach": None, "maximize": False, "differentiable": False, "capturable": False}

    def _update_group(self, group):
        beta1, beta2 = group["betas"]
        lr, eps, wd = scalar(group["lr"]), group["eps"], group["weight_decay"]
        for p, grad, state in self._grads(group):
            grad, step = _begin_step(p, grad, state, group["maximize"], ("exp_avg", "exp_inf"))
            exp_avg, exp_inf = state["exp_avg"], state["exp_inf"]
            if wd != 0:
                grad = grad.add(p, alpha=wd)
            exp_avg.lerp_(grad, 1 - beta1)
            exp_inf.copy_(tdx.maximum(exp_inf.mul_(beta2), grad.abs().add_(eps)))
            bias_correction = 1 - beta1 ** step
            clr = lr / bias_correction
            p.addcdiv_(exp_avg, exp_inf, value=-clr)


class NAdam(Optimizer):
    """NAdam, Adam with Nesterov momentum (torch's ``torch.optim.NAdam``).

    Args:
        params: parameters or param groups.
        lr: learning rate (default 2e-3).
        betas, eps, weight_decay: as torch.
        momentum_decay: the momentum schedule's decay (default 4e-3).
        decoupled_weight_decay: AdamW-style decay (NAdamW).
        foreach, maximize, capturable, differentiable: accepted as torch (no effect here).
    """

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False):
        _check_common(lr, eps, betas, weight_decay)
        if not 0.0 <= momentum_decay:
            raise tdx.TdxValueError(f"Invalid momentum_decay value: {momentum_decay}")
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "momentum_decay": momentum_decay, "decoupled_weight_decay": decoupled_weight_decay,
                    "maximize": maximize, "foreach": foreach, "capturable": capturable,
                    "differentiable": differentiable}
        super().__init__(params, defaults)

    _group_defaults = {"maximize": False, "foreach": None, "capturable": False, "differentiable": False,
                       "decoupled_weight_decay": False}

    def _update_group(self, group):
        beta1, beta2 = group["betas"]
        lr, eps, wd = scalar(group["lr"]), group["eps"], group["weight_decay"]
        momentum_decay = group["momentum_decay"]
        for p, grad, state in self._grads(group):
            grad, step = _begin_step(p, grad, state, group["maximize"], _MOMENTS, counter="mu_product")
            exp_avg, exp_avg_sq, mu_product = state["exp_avg"], state["exp_avg_sq"], state["mu_product"]
            bias_correction2 = 1 - beta2 ** step
            if wd != 0:
                if group["decoupled_weight_decay"]:
                    p.mul_(1 - lr * wd)
                else:
                    grad = grad.add(p, alpha=wd)
            mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * momentum_decay)))
            mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * momentum_decay)))
            mu_product *= mu
            exp_avg.lerp_(grad, 1 - beta1)
            exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
            denom = exp_avg_sq.div(bias_correction2).sqrt()
            mu_prod = mu_product.item()
            mu_product_next = mu_prod * mu_next
            denom.add_(eps)
            p.addcdiv_(grad, denom, value=(-lr * (1.0 - mu) / (1.0 - mu_prod)))
            p.addcdiv_(exp_avg, denom, value=(-lr * mu_next) / (1.0 - mu_product_next))


class RAdam(Optimizer):
    """RAdam, rectified Adam (torch's ``torch.optim.RAdam``).

    Args:
        params: parameters or param groups.
        lr: learning rate (default 1e-3).
        betas, eps, weight_decay, decoupled_weight_decay: as torch.
        foreach, maximize, capturable, differentiable: accepted as torch (no effect here).
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False):
        _check_common(lr, eps, betas, weight_decay)
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay, "maximize": maximize,
                    "foreach": foreach, "capturable": capturable,
                    "decoupled_weight_decay": decoupled_weight_decay, "differentiable": differentiable}
        super().__init__(params, defaults)

    _group_defaults = {"foreach": None, "maximize": False, "differentiable": False,
                       "decoupled_weight_decay": False, "capturable": False}

    def _update_group(self, group):
        beta1, beta2 = group["betas"]
        lr, eps, wd = scalar(group["lr"]), group["eps"], group["weight_decay"]
        for p, grad, state in self._grads(group):
            grad, step = _begin_step(p, grad, state, group["maximize"], _MOMENTS)
            exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
            if wd != 0:
                if group["decoupled_weight_decay"]:
                    p.mul_(1 - lr * wd)
                else:
                    grad = grad.add(p, alpha=wd)
            exp_avg.lerp_(grad, 1 - beta1)
            exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
            bias_correction1 = 1 - beta1 ** step
            bias_correction2 = 1 - beta2 ** step
            corrected = exp_avg / bias_correction1
            rho_inf = 2 / (1 - beta2) - 1
            rho_t = rho_inf - 2 * step * (beta2 ** step) / bias_correction2
            if rho_t > 5.0:
                rect = ((rho_t - 4) * (rho_t - 2) * rho_inf
                        / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
                adaptive = (bias_correction2 ** 0.5) / exp_avg_sq.sqrt().add_(eps)
                p.add_(corrected * lr * adaptive * rect, alpha=-1.0)
            else:
                p.add_(corrected * lr, alpha=-1.0)
