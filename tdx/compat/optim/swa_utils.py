"""``tdx.optim.swa_utils``: stochastic weight averaging and EMA (AveragedModel, SWALR,
update_bn and the averaging-function factories), with torch's arithmetic and layout
(``n_averaged`` is an int64 buffer). Works on the tensors' own executors; must never
import torch or mlx.

update_bn recognizes batch-norm layers by torch's _BatchNorm interface (``running_mean``,
``running_var``, ``momentum``, ``reset_running_stats``), since tdx's layer modules live on
another branch; any module offering that interface is reset and re-estimated.
"""

from __future__ import annotations

import itertools
import math
import warnings
from copy import deepcopy

import tdx
from tdx.nn import Module

from .lr_scheduler.schedules import LRScheduler, _format_param

__all__ = ["AveragedModel", "update_bn", "SWALR", "get_ema_multi_avg_fn", "get_swa_multi_avg_fn",
           "get_ema_avg_fn", "get_swa_avg_fn"]


def _check_decay(decay):
    if decay < 0.0 or decay > 1.0:
        raise tdx.TdxValueError(f"Invalid decay value {decay} provided. Please provide a value in [0,1] range.")


def get_ema_multi_avg_fn(decay=0.999):
    """An in-place EMA update over lists of tensors: ``ema = lerp(ema, current, 1 - decay)``.

    Args:
        decay: the EMA decay in [0, 1].

    Returns:
        ``fn(ema_list, current_list, num_averaged) -> None``.
    """
    _check_decay(decay)

    def ema_update(ema_list, current_list, _num_averaged):
        with tdx.no_grad():
            if ema_list[0].is_floating_point() or ema_list[0].is_complex():
                for e, c in zip(ema_list, current_list):
                    e.lerp_(c, 1 - decay)
            else:
                for e, c in zip(ema_list, current_list):
                    e.copy_(e * decay + c * (1 - decay))

    return ema_update


def get_swa_multi_avg_fn():
    """An in-place running mean over lists of tensors.

    Returns:
        ``fn(averaged_list, current_list, num_averaged) -> None``.
    """

    def swa_update(averaged_list, current_list, num_averaged):
        with tdx.no_grad():
            if averaged_list[0].is_floating_point() or averaged_list[0].is_complex():
                n = num_averaged.item() if isinstance(num_averaged, tdx.Tensor) else num_averaged
                for a, c in zip(averaged_list, current_list):
                    a.lerp_(c, 1 / (n + 1))
            else:
                for a, c in zip(averaged_list, current_list):
                    diff = c - a
                    if isinstance(num_averaged, tdx.Tensor):
                        a.addcdiv_(diff, num_averaged + 1)
                    else:
                        a.add_(diff, alpha=1.0 / (num_averaged + 1))

    return swa_update


def get_ema_avg_fn(decay=0.999):
    """An EMA of one tensor: ``decay * ema + (1 - decay) * current``.

    Args:
        decay: the EMA decay in [0, 1].

    Returns:
        ``fn(ema, current, num_averaged) -> Tensor``.
    """
    _check_decay(decay)

    def ema_update(ema_param, current_param, num_averaged):
        with tdx.no_grad():
            return decay * ema_param + (1 - decay) * current_param

    return ema_update


def get_swa_avg_fn():
    """The running mean of one tensor: ``avg + (current - avg) / (n + 1)``.

    Returns:
        ``fn(averaged, current, num_averaged) -> Tensor``.
    """

    def swa_update(averaged_param, current_param, num_averaged):
        with tdx.no_grad():
            return averaged_param + (current_param - averaged_param) / (num_averaged + 1)

    return swa_update


class AveragedModel(Module):
    """A copy of ``model`` whose parameters (and buffers, with ``use_buffers``) hold an average.

    Args:
        model: the model to average (deep-copied).
        device: where to keep the copy (default: the model's devices).
        avg_fn: per-tensor ``fn(averaged, current, n) -> Tensor``.
        multi_avg_fn: in-place ``fn(averaged_list, current_list, n)``; exclusive with ``avg_fn``.
        use_buffers: average buffers too (otherwise they are copied).
    """

    def __init__(self, model, device=None, avg_fn=None, multi_avg_fn=None, use_buffers=False):
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise tdx.TdxValueError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", tdx.tensor(0, dtype=tdx.long, device=device))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args, **kwargs):
        """Run the averaged copy."""
        return self.module(*args, **kwargs)

    def update_parameters(self, model):
        """Fold ``model``'s current parameters into the average (the first call copies them)."""
        if self.use_buffers:
            mine = itertools.chain(self.module.parameters(), self.module.buffers())
            theirs = itertools.chain(model.parameters(), model.buffers())
        else:
            mine, theirs = self.parameters(), model.parameters()
        averaged, current = [], []
        first = bool(self.n_averaged == 0)
        with tdx.no_grad():
            for p_avg, p_model in zip(mine, theirs):
                p_model_ = p_model.detach().to(p_avg.device)
                averaged.append(p_avg.detach())
                current.append(p_model_)
                if first:
                    p_avg.detach().copy_(p_model_)
            if self.n_averaged > 0:
                if self.multi_avg_fn is not None or self.avg_fn is None:
                    groups: dict = {}
                    for a, c in zip(averaged, current):
                        groups.setdefault((str(a.device), a.dtype), ([], []))
                        groups[(str(a.device), a.dtype)][0].append(a)
                        groups[(str(a.device), a.dtype)][1].append(c)
                    for (device, _), (avg_list, cur_list) in groups.items():
                        n = self.n_averaged.to(device)
                        if self.multi_avg_fn is not None:
                            self.multi_avg_fn(avg_list, cur_list, n)
                        else:
                            fn = get_swa_avg_fn()
                            for a, c in zip(avg_list, cur_list):
                                a.copy_(fn(a, c, n))
                else:
                    for a, c in zip(averaged, current):
                        a.detach().copy_(self.avg_fn(a.detach(), c, self.n_averaged.to(a.device)))
            if not self.use_buffers:
                for b_swa, b_model in zip(self.module.buffers(), model.buffers()):
                    b_swa.detach().copy_(b_model.detach().to(b_swa.device))
            self.n_averaged += 1


def _is_batch_norm(module):
    return all(hasattr(module, a) for a in ("running_mean", "running_var", "momentum", "reset_running_stats"))


def update_bn(loader, model, device=None):
    """Re-estimate batch-norm running statistics with one pass over ``loader``.

    Args:
        loader: an iterable of inputs (or of tuples/lists whose first item is the input).
        model: the model whose batch-norm layers are updated.
        device: move each input there before the forward pass.
    """
    with tdx.no_grad():
        momenta = {}
        for module in model.modules():
            if _is_batch_norm(module):
                module.reset_running_stats()
                momenta[module] = module.momentum
        if not momenta:
            return
        was_training = model.training
        model.train()
        for module in momenta:
            module.momentum = None
        for batch in loader:
            if isinstance(batch, (list, tuple)):
                batch = batch[0]
            if device is not None:
                batch = batch.to(device)
            model(batch)
        for module, momentum in momenta.items():
            module.momentum = momentum
        model.train(was_training)


class SWALR(LRScheduler):
    """Anneals each group's lr to ``swa_lr`` over ``anneal_epochs`` epochs, then holds it."""

    def __init__(self, optimizer, swa_lr, anneal_epochs=10, anneal_strategy="cos", last_epoch=-1):
        for value, group in zip(_format_param("swa_lr", optimizer, swa_lr), optimizer.param_groups):
            group["swa_lr"] = value
        if anneal_strategy not in ["cos", "linear"]:
            raise tdx.TdxValueError(
                f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}")
        self._set_anneal_func(anneal_strategy)
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise tdx.TdxValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _linear_anneal(t):
        return t

    @staticmethod
    def _cosine_anneal(t):
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr, swa_lr, alpha):
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self):
        if not self._get_lr_called_within_step:
            warnings.warn("To get the last learning rate computed by the scheduler, please use `get_last_lr()`.",
                          UserWarning, stacklevel=2)
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_t = max(0, min(1, (step - 1) / max(1, self.anneal_epochs)))
        prev_alpha = self.anneal_func(prev_t)
        prev_lrs = [self._get_initial_lr(g["lr"], g["swa_lr"], prev_alpha) for g in self.optimizer.param_groups]
        t = max(0, min(1, step / max(1, self.anneal_epochs)))
        alpha = self.anneal_func(t)
        return [g["swa_lr"] * alpha + lr * (1 - alpha) for g, lr in zip(self.optimizer.param_groups, prev_lrs)]

    def _set_anneal_func(self, anneal_strategy):
        self._anneal_strategy = anneal_strategy
        self.anneal_func = self._cosine_anneal if anneal_strategy == "cos" else self._linear_anneal

    def state_dict(self):
        """Attributes except the optimizer and the anneal function (torch's layout)."""
        return {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "anneal_func")}

    def load_state_dict(self, state_dict):
        """Restore attributes saved by :meth:`state_dict`."""
        self.__dict__.update(state_dict)
        self._set_anneal_func(self._anneal_strategy)
