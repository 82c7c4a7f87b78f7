"""Activation checkpointing on the tape (MLX): a block recorded as one node that recomputes itself.

:func:`checkpoint` runs the block once while recording, finds the leaves it reads (its tensor
inputs and the parameters it closes over), and replaces its recorded ops by one custom-Function
node whose inputs are those tensors. The block's intermediates are then held by nothing (MLX
frees them once the outputs are evaluated, which happens at the block's end); the node's backward
re-runs the block with the random state of the first run, differentiates that fresh recording and
evaluates the gradients, so one block's recomputation is alive at a time. ``torch.utils.checkpoint`` on tape
executors is this; on torch executors it is torch's own. Must never import a framework, and never
touch executors that record natively.
"""

from __future__ import annotations

import warnings

from .._errors import NATIVE_ERRORS, TdxRuntimeError
from .._tensor import recording as _recording
from . import tape as _tape

__all__ = ["checkpoint", "CheckpointError", "closure_leaves"]


class CheckpointError(TdxRuntimeError):
    """The recomputed block differs from the first run (torch.utils.checkpoint.CheckpointError)."""


_REENTRANT_GRAD = ("When use_reentrant=True, torch.utils.checkpoint is incompatible with .grad() or passing an "
                   "`inputs` parameter to .backward(). To resolve this error, you can either set use_reentrant=False, "
                   "or call .backward() without passing the `inputs` argument.")


def _is_tensor(x) -> bool:
    return isinstance(x, _recording._tensor_class())


def _fresh(x):
    """A leaf standing for block input ``x``: its value, requiring grad as ``x`` does."""
    if not _is_tensor(x):
        return x
    d = x.detach()
    return d.requires_grad_(True) if x.requires_grad else d


def closure_leaves(outs, own: set) -> list:
    """The tensors requiring grad that the recording of ``outs`` reaches and the block did not make:
    parameters it closes over, and the leaves behind any outer tensor it reads."""
    leaves, seen, found = [], set(), set()
    stack = [o._ag.node for o in outs if o._ag.node is not None]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        for t, m in zip(getattr(node, "inputs", ()), getattr(node, "metas", ())):
            if m.node is not None:
                stack.append(m.node)
            elif m.requires_grad and id(t) not in own and id(t) not in found:
                found.add(id(t))
                leaves.append(t)
    return leaves


def _evaluate(ex, natives) -> None:
    """Compute ``natives`` now, unless a function transform (``mx.vmap``) is tracing them, where
    evaluation is forbidden and they are computed with the traced graph."""
    try:
        ex.evaluate(natives)
    except NATIVE_ERRORS as err:
        if "Attempting to eval" not in str(err):
            raise


def _meta(t) -> tuple:
    return tuple(t.shape), t.dtype, t.device


def checkpoint(function, args, kwargs, *, reentrant: bool, preserve_rng_state: bool, context_fn, determinism_check):
    """``function(*args, **kwargs)`` whose intermediates are recomputed in backward rather than kept.

    ``args``/``kwargs`` may hold tensors at the top level or in lists, tuples and dicts.

    Raises:
        TdxRuntimeError: (in backward) ``reentrant`` and the backward is ``autograd.grad`` or has ``inputs``.
        CheckpointError: (in backward) ``determinism_check="default"`` and the recomputed outputs'
            shapes, dtypes or devices differ from the first run's.
    """
    from ..compat.func._trees import flatten, unflatten
    from .function import Function
    from .grad_mode import enable_grad, is_grad_enabled

    (flat_in, in_spec) = flatten((tuple(args), dict(kwargs)))
    tensors_in = [t for t in flat_in if _is_tensor(t)]
    if reentrant and not any(t.requires_grad for t in tensors_in):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None", stacklevel=3)
        if is_grad_enabled():
            from .grad_mode import no_grad

            with no_grad():
                return function(*args, **kwargs)
    if not is_grad_enabled() or not tensors_in and reentrant:
        return function(*args, **kwargs)
    ex = tensors_in[0]._ex if tensors_in else None
    rng = ex.default_rng_state() if preserve_rng_state and ex is not None else None
    forward_ctx, recompute_ctx = context_fn()
    fresh = [_fresh(x) for x in flat_in]
    with forward_ctx:
        out = function(*unflatten(fresh, in_spec)[0], **unflatten(fresh, in_spec)[1])
    flat_out, out_spec = flatten(out)
    taped = [i for i, o in enumerate(flat_out) if _is_tensor(o) and o.requires_grad]
    if not taped:
        return out
    own = {id(t) for t in fresh if _is_tensor(t)}
    closure = closure_leaves([flat_out[i] for i in taped], own)
    metas = [_meta(flat_out[i]) for i in taped]
    firsts = [flat_out[i].detach() for i in taped]
    if ex is not None:  # computed now, the block's intermediates are freed now (on lazy executors)
        _evaluate(ex, [t._n for t in firsts])
    grad_in = [t for t in flat_in if _is_tensor(t) and t.requires_grad]

    class _Block(Function):
        @staticmethod
        def forward(ctx, *tensors):
            return tuple(firsts)

        @staticmethod
        def backward(ctx, *grads):
            if reentrant and not _tape.current_pass()[1]:
                raise TdxRuntimeError(_REENTRANT_GRAD)
            create_graph = is_grad_enabled()
            # with create_graph the recomputation hangs off the inputs themselves, so that the gradients
            # it gives can be differentiated back to them (double backward)
            redo = [x.view_as(x) if create_graph and _is_tensor(x) and x.requires_grad else _fresh(x)
                    for x in flat_in]
            now = ex.default_rng_state() if rng is not None else None
            try:
                if rng is not None:
                    ex.set_default_rng_state(rng)
                with enable_grad(), recompute_ctx:
                    again = flatten(function(*unflatten(redo, in_spec)[0], **unflatten(redo, in_spec)[1]))[0]
            finally:
                if now is not None:
                    ex.set_default_rng_state(now)
            outs = [again[i] for i in taped]
            if determinism_check == "default":
                for k, (o, m) in enumerate(zip(outs, metas)):
                    if not _is_tensor(o) or _meta(o) != m:
                        raise CheckpointError(f"torch.utils.checkpoint: Recomputed values for the following tensors "
                                              f"have different metadata than during the forward pass.\noutput {k}: "
                                              f"forward {m}, recompute {_meta(o) if _is_tensor(o) else type(o)}")
            pairs = [(o, g) for o, g in zip(outs, grads) if g is not None and o.requires_grad]
            wrt = [r for r, x in zip(redo, flat_in) if _is_tensor(x) and x.requires_grad] + closure
            from . import grad

            res = grad([o for o, _ in pairs], wrt, [g for _, g in pairs], retain_graph=True,
                       create_graph=create_graph, allow_unused=True) if pairs and wrt else (None,) * len(wrt)
            if ex is not None:  # this block's recomputation is freed before the next block's
                _evaluate(ex, [g._n for g in res if g is not None])
            return tuple(res)

    results = _Block.apply(*grad_in, *closure)
    results = results if isinstance(results, tuple) else (results,)
    flat_out = list(flat_out)
    for i, r in zip(taped, results):
        flat_out[i] = r
    return unflatten(flat_out, out_spec)
