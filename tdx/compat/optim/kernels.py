"""Fused in-place update kernels shared by the optimizers: ``lerp_``, ``addcmul_``, ``addcdiv_``.

torch's CPU kernels for ``lerp`` and ``addcmul`` round once (fused multiply-add); so do the
executors' own ``lerp``/``addcmul`` with a number weight (MLX's CPU through float64), while
tdx's portable composites round at every step, which would make an optimizer drift from
``torch.optim`` by an ulp per step. On the torch executor these helpers call
the wrapped torch tensor's own in-place method (``Tensor.native``, public API) on state and
gradient tensors, which writes the same memory tdx sees; on other executors they use tdx's
ops. This module must never import torch or mlx, and never moves data between devices.

Used only on optimizer-owned state, inside ``tdx.no_grad()``.
"""

from __future__ import annotations

import tdx

__all__ = ["lerp_", "lerp", "addcmul_", "addcmul", "addcdiv_", "adam_update_"]


def _torch_native(t):
    """The wrapped torch tensor of ``t`` when ``t`` lives on a torch executor, else None."""
    return t.native if isinstance(t, tdx.Tensor) and t.executor.name == "torch" else None


def lerp_(t: "tdx.Tensor", end: "tdx.Tensor", weight: float) -> "tdx.Tensor":
    """In place ``t += weight * (end - t)`` with torch's rounding on torch executors.

    Args:
        t: the tensor updated in place.
        end: the target tensor (same device).
        weight: a Python number.

    Returns:
        ``t``.
    """
    native, end_native = _torch_native(t), _torch_native(end)
    if native is not None and end_native is not None and not isinstance(weight, tdx.Tensor):
        native.lerp_(end_native, weight)
        return t
    return t.lerp_(end, weight)


def lerp(t: "tdx.Tensor", end: "tdx.Tensor", weight: float) -> "tdx.Tensor":
    """Out-of-place :func:`lerp_` (on a clone of ``t``)."""
    return lerp_(t.clone(), end, weight)


def addcmul_(t: "tdx.Tensor", t1: "tdx.Tensor", t2: "tdx.Tensor", value: float = 1) -> "tdx.Tensor":
    """In place ``t += value * t1 * t2`` with torch's rounding on torch executors.

    Args:
        t: the tensor updated in place.
        t1, t2: the factors (same device).
        value: a Python number.

    Returns:
        ``t``.
    """
    natives = [_torch_native(x) for x in (t, t1, t2)]
    if all(n is not None for n in natives) and not isinstance(value, tdx.Tensor):
        natives[0].addcmul_(natives[1], natives[2], value=value)
        return t
    return t.addcmul_(t1, t2, value=value)


def addcmul(t: "tdx.Tensor", t1: "tdx.Tensor", t2: "tdx.Tensor", value: float = 1) -> "tdx.Tensor":
    """Out-of-place :func:`addcmul_` (on a clone of ``t``)."""
    return addcmul_(t.clone(), t1, t2, value=value)


def addcdiv_(t: "tdx.Tensor", t1: "tdx.Tensor", t2: "tdx.Tensor", value: float = 1) -> "tdx.Tensor":
    """In place ``t += value * t1 / t2``: one fused pass on torch executors (tdx's composite
    takes four), tdx's op elsewhere.

    Args:
        t: the tensor updated in place.
        t1, t2: numerator and denominator (same device).
        value: a Python number.

    Returns:
        ``t``.
    """
    natives = [_torch_native(x) for x in (t, t1, t2)]
    if all(n is not None for n in natives) and not isinstance(value, tdx.Tensor):
        natives[0].addcdiv_(natives[1], natives[2], value=value)
        return t
    return t.addcdiv_(t1, t2, value=value)


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

