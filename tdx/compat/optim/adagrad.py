"""Adaptive-rate optimizers of ``tdx.optim``: Adagrad, Adadelta, RMSprop, Rprop, ASGD.

Each step follows torch's single-tensor arithmetic in the same order, so on the torch CPU
executor results are bit-identical to ``torch.optim``. Work runs on each parameter's own
executor; this module must never import torch or mlx. ``foreach``, ``capturable``,
``differentiable`` and ``fused`` are accepted and stored in the groups, and do not change the
arithmetic (grouping note: the per-parameter ops could be batched per executor as torch's
foreach does).
"""

from __future__ import annotations

import tdx

from .optimizer import (Optimizer, OptimizerRuntimeError, advance_step, check_lr, count_step, refuse_complex,
                        scalar, step_tensor)

__all__ = ["Adagrad", "Adadelta", "RMSprop", "Rprop", "ASGD"]


class Adagrad(Optimizer):
    """Adagrad (torch's ``torch.optim.Adagrad``); state is created at construction, as torch.

    Args:
        params: parameters or param groups.
        lr: learning rate (default 1e-2).
        lr_decay: learning-rate decay per step.
        weight_decay: L2 penalty.
        initial_accumulator_value: starting value of the squared-gradient sums.
        eps: term added to the denominator (default 1e-10).
        foreach, maximize, differentiable, fused: as torch (the switches have no effect here).
    """

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10,
                 foreach=None, *, maximize=False, differentiable=False, fused=None):
        check_lr(lr)
        if not 0.0 <= lr_decay:
            raise tdx.TdxValueError(f"Invalid lr_decay value: {lr_decay}")
        if not 0.0 <= weight_decay:
            raise tdx.TdxValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= initial_accumulator_value:
            raise tdx.TdxValueError(f"Invalid initial_accumulator_value value: {initial_accumulator_value}")
        if not 0.0 <= eps:
            raise tdx.TdxValueError(f"Invalid epsilon value: {eps}")
        defaults = {"lr": lr, "lr_decay": lr_decay, "eps": eps, "weight_decay": weight_decay,
                    "initial_accumulator_value": initial_accumulator_value, "foreach": foreach,
                    "maximize": maximize, "differentiable": differentiable, "fused": fused}
        super().__init__(params, defaults)
        if fused:
            if differentiable:
                raise OptimizerRuntimeError("`fused` does not support `differentiable`")
            if foreach:
                raise OptimizerRuntimeError("`fused` and `foreach` cannot be `True` together.")
        for group in self.param_groups:
            for p in group["params"]:
                refuse_complex(p, "Adagrad")
                state = self.state[p]
                state["step"] = step_tensor(0.0, p)
                state["sum"] = tdx.full_like(p, initial_accumulator_value)

    _group_defaults = {"foreach": None, "maximize": False, "differentiable": False, "fused": None}

    def share_memory(self):
        """Move the state to shared memory (a no-op here: tdx tensors are process-local)."""

    def _update_group(self, group):
        lr, lr_decay, wd, eps = scalar(group["lr"]), group["lr_decay"], group["weight_decay"], group["eps"]
        for p, grad, state in self._grads(group, negate_for_maximize=True):
            step_t, state_sum = state["step"], state["sum"]
            step = advance_step(step_t)
            if wd != 0:
                grad = grad.add(p, alpha=wd)
            clr = lr / (1 + (step - 1) * lr_decay)
            state_sum.addcmul_(grad, grad, value=1)
            std = state_sum.sqrt().add_(eps)
            p.addcdiv_(grad, std, value=-clr)


class Adadelta(Optimizer):
    """Adadelta (torch's ``torch.optim.Adadelta``).

    Args:
        params: parameters or param groups.
        lr: coefficient scaling the update (default 1.0).
        rho: running-average coefficient (default 0.9).
        eps: term added for numerical stability (default 1e-6).
        weight_decay: L2 penalty.
        foreach, capturable, maximize, differentiable: as torch (switches have no effect here).
    """

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *, capturable=False,
                 maximize=False, differentiable=False):
        check_lr(lr)
        if not 0.0 <= rho <= 1.0:
            raise tdx.TdxValueError(f"Invalid rho value: {rho}")
        if not 0.0 <= eps:
            raise tdx.TdxValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= weight_decay:
            raise tdx.TdxValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = {"lr": lr, "rho": rho, "eps": eps, "weight_decay": weight_decay, "maximize": maximize,
                    "capturable": capturable, "foreach": foreach, "differentiable": differentiable}
        super().__init__(params, defaults)

    _group_defaults = {"foreach": None, "maximize": False, "differentiable": False, "capturable": False}

    def _update_group(self, group):
        lr, rho, eps, wd = scalar(group["lr"]), group["rho"], group["eps"], group["weight_decay"]
        for p, grad, state in self._grads(group, negate_for_maximize=True):
            if len(state) == 0:
                state["step"] = step_tensor(0.0, p)
                state["square_avg"] = tdx.zeros_like(p)
                state["acc_delta"] = tdx.zeros_like(p)
            square_avg, acc_delta = state["square_avg"], state["acc_delta"]
            count_step(state["step"])
            if wd != 0:
                grad = grad.add(p, alpha=wd)
            square_avg.mul_(rho).addcmul_(grad, grad, value=1 - rho)
            std = square_avg.add(eps).sqrt_()
            delta = acc_delta.add(eps).sqrt_()
            delta.div_(std).mul_(grad)
            acc_delta.mul_(rho).addcmul_(delta, delta, value=1 - rho)
            p.add_(delta, alpha=-lr)


class RMSprop(Optimizer):
    """RMSprop (torch's ``torch.optim.RMSprop``), plain, centered or with momentum.

    Args:
        params: parameters or param groups.
        lr: learning rate (default 1e-2).
        alpha: smoothing constant (default 0.99).
        eps: term added to the denominator (default 1e-8).
        weight_decay: L2 penalty.
        momentum: momentum factor.
        centered: normalize by the estimated variance of the gradient.
        capturable, foreach, maximize, differentiable: as torch (switches have no effect here).
    """

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        check_lr(lr)
        if not 0.0 <= eps:
            raise tdx.TdxValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= momentum:
            raise tdx.TdxValueError(f"Invalid momentum value: {momentum}")
        if not 0.0 <= weight_decay:
            raise tdx.TdxValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= alpha:
            raise tdx.TdxValueError(f"Invalid alpha value: {alpha}")
        defaults = {"lr": lr, "momentum": momentum, "alpha": alpha, "eps": eps, "centered": centered,
                    "weight_decay": weight_decay, "capturable": capturable, "foreach": foreach,
                    "maximize": maximize, "differentiable": differentiable}
        super().__init__(params, defaults)

    _group_defaults = {"momentum": 0, "centered": False, "foreach": None, "maximize": False,
                       "differentiable": False, "capturable": False}

    def _update_group(self, group):
        lr, alpha, eps = scalar(group["lr"]), group["alpha"], group["eps"]
        wd, momentum, centered = group["weight_decay"], group["momentum"], group["centered"]
        for p, grad, state in self._grads(group, negate_for_maximize=True):
            if len(state) == 0:
                state["step"] = step_tensor(0.0, p)
                state["square_avg"] = tdx.zeros_like(p)
                if momentum > 0:
                    state["momentum_buffer"] = tdx.zeros_like(p)
                if centered:
                    state["grad_avg"] = tdx.zeros_like(p)
            square_avg = state["square_avg"]
            count_step(state["step"])
            if wd != 0:
                grad = grad.add(p, alpha=wd)
            square_avg.mul_(alpha).addcmul_(grad, grad, value=1 - alpha)
            if centered:
                grad_avg = state["grad_avg"]
                grad_avg.lerp_(grad, 1 - alpha)
                avg = square_avg.addcmul(grad_avg, grad_avg, value=-1).sqrt_()
            else:
                avg = square_avg.sqrt()
            avg = avg.add_(eps)
            if momentum > 0:
                buf = state["momentum_buffer"]
                buf.mul_(momentum).addcdiv_(grad, avg)
                p.add_(buf, alpha=-lr)
            else:
                p.addcdiv_(grad, avg, value=-lr)


class Rprop(Optimizer):
    """Resilient backpropagation (torch's ``torch.optim.Rprop``).

    Args:
        params: parameters or param groups.
        lr: initial step size (default 1e-2).
        etas: (decrease, increase) factors, ``0 < etaminus < 1 < etaplus``.
        step_sizes: (minimal, maximal) step sizes.
        capturable, foreach, maximize, differentiable: as torch (switches have no effect here).
    """

    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *, capturable=False,
                 foreach=None, maximize=False, differentiable=False):
        check_lr(lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise tdx.TdxValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = {"lr": lr, "etas": etas, "step_sizes": step_sizes, "foreach": foreach,
                    "maximize": maximize, "differentiable": differentiable, "capturable": capturable}
        super().__init__(params, defaults)

    _group_defaults = {"foreach": None, "maximize": False, "differentiable": False, "capturable": False}

    def _update_group(self, group):
        etaminus, etaplus = group["etas"]
        step_size_min, step_size_max = group["step_sizes"]
        for p, grad, state in self._grads(group, negate_for_maximize=True):
            if len(state) == 0:
                state["step"] = step_tensor(0.0, p)
                state["prev"] = tdx.zeros_like(p)
                state["step_size"] = tdx.full_like(grad, scalar(group["lr"]))
            prev, step_size = state["prev"], state["step_size"]
            count_step(state["step"])
            sign = grad.mul(prev).sign()
            sign = tdx.where(sign.gt(0), etaplus, sign)
            sign = tdx.where(sign.lt(0), etaminus, sign)
            sign = tdx.where(sign.eq(0), 1.0, sign)
            step_size.mul_(sign).clamp_(step_size_min, step_size_max)
            grad = tdx.where(sign.eq(etaminus), 0.0, grad)
            p.addcmul_(grad.sign(), step_size, value=-1)
            prev.copy_(grad)


class ASGD(Optimizer):
    """Averaged stochastic gradient descent (torch's ``torch.optim.ASGD``).

    Args:
        params: parameters or param groups.
        lr: learning rate (default 1e-2).
        lambd: decay term (default 1e-4).
        alpha: power for the eta update (default 0.75).
        t0: step at which averaging starts (default 1e6).
        weight_decay: L2 penalty.
        foreach, maximize, differentiable, capturable: as torch (switches have no effect here).
    """

    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0, foreach=None,
                 maximize=False, differentiable=False, capturable=False):
        check_lr(lr)
        if not 0.0 <= weight_decay:
            raise tdx.TdxValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = {"lr": lr, "lambd": lambd, "alpha": alpha, "t0": t0, "weight_decay": weight_decay,
                    "foreach": foreach, "maximize": maximize, "differentiable": differentiable,
                    "capturable": capturable}
        super().__init__(params, defaults)

    _group_defaults = {"foreach": None, "maximize": False, "differentiable": False, "capturable": False}

    def _update_group(self, group):
        lr, lambd, alpha, t0 = scalar(group["lr"]), group["lambd"], group["alpha"], group["t0"]
        wd = group["weight_decay"]
        for p, grad, state in self._grads(group, negate_for_maximize=True):
            if len(state) == 0:
                state["step"] = step_tensor(0.0, p)
                state["eta"] = step_tensor(lr, p)
                state["mu"] = step_tensor(1.0, p)
                state["ax"] = tdx.zeros_like(p)
            mu, ax, eta, step_t = state["mu"], state["ax"], state["eta"], state["step"]
            step_t += 1
            if wd != 0:
                grad = grad.add(p, alpha=wd)
            eta_value = eta.item()
            p.mul_(1 - lambd * eta_value)
            p.add_(grad, alpha=-eta_value)
            if mu.item() != 1:
                ax.add_(p.sub(ax).mul_(mu))
            else:
                ax.copy_(p)
            step = step_t.item()
            eta.fill_(lr / ((1 + lambd * lr * step) ** alpha))
            mu.fill_(1 / max(1, step - t0))
