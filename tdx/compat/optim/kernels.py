"""The optimizers' fused update kernel: one Adam/AdamW step of a parameter and its moments.

The element-wise updates (``lerp_``, ``addcmul_``, ``addcdiv_``) are the tensors' own in-place
methods: they round as torch's CPU kernels do (one fused multiply-add for ``lerp`` and
``addcmul``) on every executor, torch's own kernels on torch executors. What this module adds is
:func:`adam_update_`, the whole Adam step in one executor call where the executor has one (MLX).
This module must never import torch or mlx, and never moves data between devices.

Used only on optimizer-owned state, inside ``tdx.no_grad()``.
"""

from __future__ import annotations

__all__ = ["adam_update_"]


def adam_update_(p, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, *, weight_decay: str, wd: float, decay: float,
                 beta1: float, beta2: float, eps: float, step_size: float, bc2_sqrt: float) -> bool:
    """One Adam step of ``p`` and its moments by the executor's ``adam_update`` kernel, in place.

    Args:
        p, grad, exp_avg, exp_avg_sq: the parameter, its gradient and moments (one executor).
        max_exp_avg_sq: AMSGrad's running maximum, or None.
        weight_decay: "none", "decoupled" or "l2"; wd, decay: its coefficient and ``1 - lr * wd``.
        beta1, beta2, eps, step_size, bc2_sqrt: the step's numbers (see the Adam optimizer).

    Returns:
        True when the kernel ran (every tensor now holds its new value); False when the executor has
        no such kernel or declines these tensors, and nothing was written: the caller composes the step.
    """
    ex = p._ex
    if not hasattr(ex, "adam_update"):
        return False
    tensors = [p, grad, exp_avg, exp_avg_sq] + ([] if max_exp_avg_sq is None else [max_exp_avg_sq])
    if any(t._ex is not ex for t in tensors):
        return False
    out = ex.adam_update(p._n, grad._n, exp_avg._n, exp_avg_sq._n,
                         None if max_exp_avg_sq is None else max_exp_avg_sq._n, weight_decay=weight_decay, wd=wd,
                         decay=decay, beta1=beta1, beta2=beta2, eps=eps, step_size=step_size, bc2_sqrt=bc2_sqrt)
    if out is None:
        return False
    for t, native in zip((p, exp_avg, exp_avg_sq, max_exp_avg_sq), out):
        if t is not None:
            t._rebind(native, "adam")
    return True
