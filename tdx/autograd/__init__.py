"""Autograd controls: ``no_grad``, ``enable_grad``, ``set_grad_enabled``, ``inference_mode``.

The torch executor records gradients with torch's own autograd, so these switches drive
torch's grad mode when torch is loaded, and keep tdx's own per-thread flag for
executors without a native tape. Must never import a framework.
"""

from __future__ import annotations

from .grad_mode import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "is_grad_enabled"]


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, allow_unused=None):
    """Gradients of ``outputs`` with respect to ``inputs``, without touching ``.grad`` (as torch's).

    Raises:
        TdxRuntimeError: an input was not used and ``allow_unused`` is false, or devices differ.
    """
    from .._errors import TdxRuntimeError, UnsupportedOpError
    from .._tensor.wrapping import wrap
    from . import tape

    outputs = [outputs] if not isinstance(outputs, (list, tuple)) else list(outputs)
    inputs = [inputs] if not isinstance(inputs, (list, tuple)) else list(inputs)
    if grad_outputs is not None and not isinstance(grad_outputs, (list, tuple)):
        grad_outputs = [grad_outputs]
    ex = outputs[0]._ex
    if ex.caps.native_autograd:
        import torch

        gs = None if grad_outputs is None else [None if g is None else g._n for g in grad_outputs]
        res = torch.autograd.grad([o._n for o in outputs], [i._n for i in inputs], gs, retain_graph=retain_graph,
                                  create_graph=create_graph, allow_unused=allow_unused)
        return tuple(None if r is None else wrap(r, ex) for r in res)
    if create_graph:
        raise UnsupportedOpError(f"create_graph=True is not supported on {ex.device}")
    import mlx.core as mx

    roots = []
    for i, o in enumerate(outputs):
        g = grad_outputs[i] if grad_outputs is not None and grad_outputs[i] is not None else None
        if g is None and o.numel() != 1:
            raise TdxRuntimeError("grad can be implicitly created only for scalar outputs")
        roots.append(mx.ones(o._n.shape, o._n.dtype) if g is None else g._n)
    res = tape.run_backward(outputs, roots, retain_graph=bool(retain_graph), inputs=inputs)
    if not allow_unused and any(r is None for r in res):
        raise TdxRuntimeError("One of the differentiated Tensors appears to not have been used in the graph. "
                              "Set allow_unused=True if this is the desired behavior.")
    return tuple(None if r is None else wrap(r, ex) for r in res)


__all__.append("grad")
