"""The optimizers' fused update kernel: one Adam/AdamW step of a parameter and its moments.

The element-wise updates (``lerp_``, ``addcmul_``, ``addcdiv_``) are the tensors' own in-place
methods: they round as torch's CPU kernels do (one fused multiply-add for ``lerp`` and
``addcmul``) on every executor, torch's own kernels on torch executors. What this module adds is
:func:`adam_update_`, the whole Adam step of one parameter in one executor call where the executor
has one (MLX), and :func:`adam_group_`, the step of a whole param group in one executor call (torch
executors: torch's own Adam, multi-tensor on CUDA as torch chooses).
This module must never import torch or mlx, and never moves data between devices.

Used only on optimizer-owned state, inside ``tdx.no_grad()``.
"""

from __future__ import annotations

__all__ = ["adam_update_", "adam_group_", "has_group_kernel"]


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


def has_group_kernel(params) -> bool:
    """Whether the executor of the first of ``params`` has an ``adam_group_update`` kernel (see
    :func:`adam_group_`); False for no parameters."""
    return bool(params) and hasattr(params[0]._ex, "adam_group_update")


def adam_group_(rows, moments, *, foreach, amsgrad: bool, beta1: float, beta2: float, lr: float, weight_decay: float,
                eps: float, maximize: bool, decoupled: bool) -> bool:
    """One Adam step of a whole param group by the executor's ``adam_group_update`` kernel, in place.

    Args:
        rows: ``(param, grad, state)`` of the group's parameters with a gradient, their state created
            (``step`` and ``moments`` in torch's layout); the kernel advances the step counters.
        moments: the state keys of the moments, ``max_exp_avg_sq`` last under AMSGrad.
        foreach: the group's flag (None: the executor's framework chooses, as torch does).
        amsgrad, beta1, beta2, lr, weight_decay, eps, maximize: the step's settings (Python numbers).
        decoupled: AdamW's decoupled weight decay.

    Returns:
        True when the kernel ran; False when the executor has none or the tensors are not all its own
        (nothing was written: the caller steps parameter by parameter).
    """
    ex = rows[0][0]._ex
    if not has_group_kernel([rows[0][0]]):
        return False
    if any(p._ex is not ex or g._ex is not ex for p, g, _ in rows):
        return False
    natives = {name: [state[name]._n for _, _, state in rows] for name in moments}
    ex.adam_group_update([p._n for p, _, _ in rows], [g._n for _, g, _ in rows], natives["exp_avg"],
                         natives["exp_avg_sq"], natives.get("max_exp_avg_sq", []),
                         [state["step"]._n for _, _, state in rows], foreach=foreach, amsgrad=amsgrad, beta1=beta1,
                         beta2=beta2, lr=lr, weight_decay=weight_decay, eps=eps, maximize=maximize,
                         decoupled=decoupled)
    return True
