"""``tdx.optim.Muon``: momentum orthogonalized by a quintic Newton-Schulz iteration in
bfloat16, for 2-D parameters, as torch's ``torch.optim.Muon`` (same arithmetic order).
Works on the parameters' own executor; must never import torch or mlx.
"""

from __future__ import annotations

import math

import tdx

from .optimizer import Optimizer, check_lr, scalar

__all__ = ["Muon"]

_EPS = 1e-7
_A, _B, _C = 3.4445, -4.7750, 2.0315
_NS_STEPS = 5


def _newton_schulz(grad, coefficients, steps, eps):
    """The approximate orthogonalization ``U S' V^T`` of a 2-D ``grad``, computed in bfloat16."""
    if steps >= 100:
        raise tdx.TdxValueError(f"Number of steps must be less than 100 for computational efficiency, got {steps}")
    if len(grad.shape) != 2:
        raise tdx.TdxValueError(f"Input tensor gradient must be a 2D matrix, got shape {tuple(grad.shape)}")
    if len(coefficients) != 3:
        raise tdx.TdxValueError(f"Coefficients must be a tuple of exactly 3 values, got {coefficients}")
    a, b, c = coefficients
    ortho = grad.bfloat16()
    if grad.size(0) > grad.size(1):
        ortho = ortho.T
    ortho.div_(ortho.norm().clamp(min=eps))
    for _ in range(steps):
        gram = ortho @ ortho.T
        gram_update = tdx.addmm(gram, gram, gram, beta=b, alpha=c)
        ortho = tdx.addmm(ortho, gram_update, ortho, beta=a)
    if grad.size(0) > grad.size(1):
        ortho = ortho.T
    return ortho


def _adjust_lr(lr, adjust_lr_fn, shape):
    a, b = shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        ratio = math.sqrt(max(1, a / b))
    elif adjust_lr_fn == "match_rms_adamw":
        ratio = 0.2 * math.sqrt(max(a, b))
    else:
        ratio = 1.0
    return lr * ratio


class Muon(Optimizer):
    """Muon (torch's ``torch.optim.Muon``) for 2-D parameters.

    Args:
        params: 2-D parameters or param groups.
        lr: learning rate (default 1e-3).
        weight_decay: decoupled weight decay (default 0.1).
        momentum: momentum factor (default 0.95).
        nesterov: Nesterov momentum (default True).
        ns_coefficients: the Newton-Schulz polynomial's ``(a, b, c)``.
        eps: floor of the norm used for normalization (default 1e-7).
        ns_steps: Newton-Schulz iterations (default 5).
        adjust_lr_fn: ``None``/``"original"`` or ``"match_rms_adamw"``.
    """

    def __init__(self, params, lr=1e-3, weight_decay=0.1, momentum=0.95, nesterov=True,
                 ns_coefficients=(_A, _B, _C), eps=_EPS, ns_steps=_NS_STEPS, adjust_lr_fn=None):
        check_lr(lr, "Learning rate should be >= 0 but is: {lr}")
        if not 0.0 <= momentum:
            raise tdx.TdxValueError(f"momentum should be >= 0 but is: {momentum}")
        if not 0.0 <= weight_decay:
            raise tdx.TdxValueError(f"weight decay should be >= 0 but is: {weight_decay}")
        if adjust_lr_fn is not None and adjust_lr_fn not in ("original", "match_rms_adamw"):
            raise tdx.TdxValueError(
                f"Adjust learning rate function {adjust_lr_fn} is not supported "
                "(use None, 'original' or 'match_rms_adamw')")
        defaults = {"lr": lr, "weight_decay": weight_decay, "momentum": momentum, "nesterov": nesterov,
                    "ns_coefficients": ns_coefficients, "eps": eps, "ns_steps": ns_steps,
                    "adjust_lr_fn": adjust_lr_fn}
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                if p.ndim != 2:
                    raise tdx.TdxValueError(
                        f"Muon only supports 2D parameters whereas we found a parameter with size: {p.size()}")

    def _update_group(self, group):
        lr, wd, momentum = scalar(group["lr"]), group["weight_decay"], group["momentum"]
        for p, grad, state in self._grads(group):
            if "momentum_buffer" not in state:
                state["momentum_buffer"] = tdx.zeros_like(grad)
            if grad.ndim != 2:
                raise tdx.TdxValueError(f"Param gradient must be a 2D matrix, got shape {tuple(grad.shape)}")
            buf = state["momentum_buffer"]
            buf.lerp_(grad, 1 - momentum)
            update = grad.lerp(buf, momentum) if group["nesterov"] else buf
            update = _newton_schulz(update, group["ns_coefficients"], group["ns_steps"], group["eps"])
            adjusted_lr = _adjust_lr(lr, group["adjust_lr_fn"], p.shape)
            p.mul_(1 - lr * wd)
            p.add_(update, alpha=-adjusted_lr)
