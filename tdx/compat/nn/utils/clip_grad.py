"""Gradient clipping: ``clip_grad_norm_``, ``clip_grad_value_``, ``get_total_norm``,
``clip_grads_with_norm_``, as torch.nn.utils.

Each gradient is read once, scaled or clamped in place and stored back through
``p.grad = ...`` (so executors whose ``p.grad`` hands out a fresh wrapper keep the
result). ``foreach`` is accepted and has no effect: tdx has one code path. Must never
import torch or mlx.
"""

from __future__ import annotations

import types
import warnings

import tdx

from ...._errors import TdxRuntimeError

__all__ = ["clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "get_total_norm", "clip_grads_with_norm_"]


def _as_list(tensors) -> list:
    return [tensors] if isinstance(tensors, tdx.Tensor) else list(tensors)


def get_total_norm(tensors, norm_type: float = 2.0, error_if_nonfinite: bool = False, foreach=None):
    """The ``norm_type`` norm of the norms of ``tensors`` (the norm of all their elements together).

    Args:
        tensors: a tensor or an iterable of tensors (typically gradients).
        norm_type: the p of the p-norm; ``inf`` for the max norm.
        error_if_nonfinite: raise when the total norm is nan or inf.
        foreach: accepted for torch's sake; no effect.

    Returns:
        A 0-d tensor on the first tensor's device (``tdx.tensor(0.)`` for no tensors).

    Raises:
        TdxRuntimeError: ``error_if_nonfinite`` and the total norm is not finite.
    """
    tensors = _as_list(tensors)
    norm_type = float(norm_type)
    if not tensors:
        return tdx.tensor(0.0)
    first_device = tensors[0].device
    with tdx.no_grad():
        norms = [t.norm(norm_type).to(first_device) for t in tensors]
        total = tdx.stack(norms).norm(norm_type)
    if error_if_nonfinite and bool(total.isnan() | total.isinf()):
        raise TdxRuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, "
                              "so it cannot be clipped. To disable this error and scale the gradients by the "
                              "non-finite norm anyway, set `error_if_nonfinite=False`")
    return total


def clip_grads_with_norm_(parameters, max_norm: float, total_norm, foreach=None) -> None:
    """Scale the gradients of ``parameters`` by ``min(1, max_norm / (total_norm + 1e-6))`` in place.

    Args:
        parameters: a tensor or an iterable of tensors whose ``.grad`` is scaled.
        max_norm: the norm to clip to.
        total_norm: the total norm of the gradients (e.g. from :func:`get_total_norm`).
        foreach: accepted for torch's sake; no effect.
    """
    params = [p for p in _as_list(parameters) if p.grad is not None]
    if not params:
        return
    max_norm = float(max_norm)
    with tdx.no_grad():
        coef = (max_norm / (total_norm + 1e-6)).clamp(max=1.0)
        for p in params:
            g = p.grad
            g.mul_(coef.to(g.device))
            p.grad = g


def clip_grad_norm_(parameters, max_norm: float, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                    foreach=None):
    """Clip the gradient norm of ``parameters`` (all gradients as one vector) to ``max_norm``, in place.

    Args:
        parameters: a tensor or an iterable of tensors with gradients.
        max_norm: the largest allowed norm.
        norm_type: the p of the p-norm; ``inf`` for the max norm.
        error_if_nonfinite: raise when the total norm is nan or inf.
        foreach: accepted for torch's sake; no effect.

    Returns:
        The total norm of the gradients before clipping (a 0-d tensor).

    Raises:
        TdxRuntimeError: ``error_if_nonfinite`` and the total norm is not finite.
    """
    if isinstance(parameters, tdx.Tensor):
        parameters = [parameters]
    else:
        is_generator = isinstance(parameters, types.GeneratorType)
        parameters = list(parameters)
        if is_generator and not parameters:
            warnings.warn("`parameters` is an empty generator, no gradient clipping will occur.", stacklevel=2)
    grads = [p.grad for p in parameters if p.grad is not None]
    total_norm = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(parameters, max_norm, total_norm, foreach)
    return total_norm


def clip_grad_norm(parameters, max_norm: float, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                   foreach=None):
    """Deprecated alias of :func:`clip_grad_norm_` (warns with a FutureWarning)."""
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of `torch.nn.utils.clip_grad_norm_`.",
                  FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters, clip_value: float, foreach=None) -> None:
    """Clamp every gradient of ``parameters`` to ``[-clip_value, clip_value]`` in place.

    Args:
        parameters: a tensor or an iterable of tensors with gradients.
        clip_value: the bound.
        foreach: accepted for torch's sake; no effect.
    """
    clip_value = float(clip_value)
    with tdx.no_grad():
        for p in _as_list(parameters):
            g = p.grad
            if g is None:
                continue
            g.clamp_(min=-clip_value, max=clip_value)
            p.grad = g
