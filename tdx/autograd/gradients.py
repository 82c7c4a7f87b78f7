"""``tdx.autograd.grad`` and ``tdx.autograd.backward``: the gradients of outputs with respect to inputs.

On a torch executor the call is torch's own ``torch.autograd`` over the native tensors; on an executor without a
native tape (MLX) it walks tdx's (:mod:`tdx._tensor.recording`). Both take torch's arguments (``grad_outputs``,
``retain_graph``, ``create_graph``, ``allow_unused``, ``is_grads_batched``...) and raise torch's errors. A module
of its own, below the package, so that what differentiates through ``grad`` (``gradcheck``) never reaches back up
into the package. Must never import a framework at module level.
"""

from __future__ import annotations


def _as_list(x, what: str) -> list:
    from .._errors import TdxTypeError
    from .function import _is_tensor

    items = [x] if _is_tensor(x) else list(x) if isinstance(x, (list, tuple)) else None
    if items is None:
        raise TdxTypeError(f"{what} must be a Tensor or a sequence of Tensors, not {type(x).__name__}")
    return items


def _executor(tensors, op: str):
    from .._errors import mismatch

    ex = tensors[0]._ex
    for t in tensors[1:]:
        if t is not None and t._ex is not ex:
            raise mismatch(op, ex.device, t._ex.device)
    return ex


def _roots(outputs, grad_outputs, ex, create_graph, op: str) -> list:
    """The cotangents of ``outputs`` on the tape: ones for scalars, else the given ones (checked)."""
    import mlx.core as mx

    from .._errors import TdxRuntimeError
    from .._tensor.wrapping import wrap

    roots = []
    for i, o in enumerate(outputs):
        g = grad_outputs[i] if grad_outputs is not None else None
        if g is None:
            if o.numel() != 1:
                raise TdxRuntimeError("grad can be implicitly created only for scalar outputs")
            n = mx.ones(o._n.shape, o._n.dtype)
            roots.append(wrap(n, ex) if create_graph else n)
            continue
        if g._ex is not ex:
            from .._errors import mismatch

            raise mismatch(op, ex.device, g._ex.device)
        if tuple(g.shape) != tuple(o.shape):
            raise TdxRuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of {tuple(g.shape)} and "
                                  f"output[{i}] has a shape of {tuple(o.shape)}.")
        roots.append(g if create_graph else g._n)
    return roots


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, only_inputs=True,
         allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """Gradients of ``outputs`` with respect to ``inputs``, without touching ``.grad`` (as torch's).

    Args:
        outputs: tensor(s) to differentiate.
        inputs: tensor(s) whose gradients are returned.
        grad_outputs: the vector of the vector-Jacobian product, one per output (None: ones for a
            scalar output).
        retain_graph: keep the graph for another backward. Default: ``create_graph``.
        create_graph: record the gradients' own graph, for higher-order derivatives (every executor).
        only_inputs: deprecated and ignored, as torch's.
        allow_unused: return None for an input the outputs do not depend on, rather than raise.
            Default: ``materialize_grads``.
        is_grads_batched: the first dimension of each grad_output is a batch of vectors.
        materialize_grads: zeros instead of None for unused inputs.

    Raises:
        TdxRuntimeError: an input was not used and ``allow_unused`` is false, an input does not require
            grad, or a grad_output's shape differs from its output's.
        TdxValueError: ``materialize_grads`` with ``allow_unused=False``.
    """
    from .._errors import NATIVE_ERRORS, TdxRuntimeError, TdxValueError
    from .._tensor.wrapping import wrap

    outputs = _as_list(outputs, "outputs")
    inputs = _as_list(inputs, "inputs")
    if grad_outputs is not None:
        grad_outputs = _as_list(grad_outputs, "grad_outputs")
        if len(grad_outputs) != len(outputs):
            raise TdxRuntimeError(f"grad requires one grad_output per output: got {len(grad_outputs)} grad_outputs "
                                  f"and {len(outputs)} outputs")
    if materialize_grads and allow_unused is False:
        raise TdxValueError("Expected allow_unused to be True or not passed when materialize_grads=True, but got: "
                            "allow_unused=False.")
    allow_unused = materialize_grads if allow_unused is None else allow_unused
    ex = _executor(outputs + inputs + [g for g in (grad_outputs or ()) if g is not None], "autograd.grad")
    if ex.caps.native_autograd:
        import torch

        gs = None if grad_outputs is None else [None if g is None else g._n for g in grad_outputs]
        try:
            res = torch.autograd.grad([o._n for o in outputs], [i._n for i in inputs], gs, retain_graph=retain_graph,
                                      create_graph=create_graph, allow_unused=allow_unused,
                                      is_grads_batched=is_grads_batched, materialize_grads=materialize_grads)
        except NATIVE_ERRORS as err:
            raise ex.native_error(err) from None
        return tuple(None if r is None else wrap(r, ex) for r in res)
    if is_grads_batched:
        return _batched(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused, materialize_grads)
    from .._tensor import recording

    for i, t in enumerate(inputs):
        if not t.requires_grad:
            raise TdxRuntimeError(f"One of the differentiated Tensors (input {i}) does not require grad")
    roots = _roots(outputs, grad_outputs, ex, create_graph, "autograd.grad")
    retain = create_graph if retain_graph is None else bool(retain_graph)
    res = recording.run_backward(outputs, roots, retain_graph=retain, inputs=inputs, create_graph=create_graph,
                                 accumulate=False)
    if not allow_unused and any(r is None for r in res):
        raise TdxRuntimeError("One of the differentiated Tensors appears to not have been used in the graph. "
                              "Set allow_unused=True if this is the desired behavior.")
    out = []
    for r, t in zip(res, inputs):
        if r is None and materialize_grads:
            import mlx.core as mx

            r = mx.zeros(t._n.shape, t._n.dtype)
        out.append(r if r is None or hasattr(r, "_n") else wrap(r, ex))
    return tuple(out)


def _batched(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused, materialize_grads):
    """``grad(..., is_grads_batched=True)`` on the tape: one vector-Jacobian product per batch row."""
    from .._errors import TdxRuntimeError
    from .._tensor.shape import stack

    if grad_outputs is None or any(g is None for g in grad_outputs):
        raise TdxRuntimeError("is_grads_batched=True needs every grad_output given, batched on dimension 0")
    n = grad_outputs[0].shape[0]
    rows = []
    for b in range(n):
        rows.append(grad(outputs, inputs, [g[b] for g in grad_outputs], retain_graph=True if b < n - 1 else
                         retain_graph, create_graph=create_graph, allow_unused=allow_unused,
                         materialize_grads=materialize_grads))
    return tuple(None if rows[0][k] is None else stack([r[k] for r in rows]) for k in range(len(inputs)))


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, grad_variables=None, inputs=None):
    """Accumulate into ``.grad`` of the leaves (or of ``inputs``) the gradients of ``tensors``, as torch's.

    Args:
        tensors: tensor(s) to differentiate.
        grad_tensors: one vector per tensor (None: ones for a scalar tensor).
        retain_graph: keep the graph for another backward. Default: ``create_graph``.
        create_graph: record the gradients' graph (higher-order derivatives).
        grad_variables: torch's deprecated name of ``grad_tensors``.
        inputs: accumulate only into these tensors' ``.grad``.

    Raises:
        TdxRuntimeError: a tensor does not require grad, or ``inputs`` is empty.
    """
    from .._errors import NATIVE_ERRORS, TdxRuntimeError
    from .._tensor.wrapping import Tensor

    if grad_variables is not None:
        if grad_tensors is not None:
            raise TdxRuntimeError("'grad_tensors' and 'grad_variables' (deprecated) arguments both passed to "
                                  "backward(). Please only use 'grad_tensors'.")
        grad_tensors = grad_variables
    tensors = _as_list(tensors, "tensors")
    if grad_tensors is not None:
        grad_tensors = [grad_tensors] if isinstance(grad_tensors, Tensor) else list(grad_tensors)
    if inputs is not None:
        inputs = _as_list(inputs, "inputs")
        if not inputs:
            raise TdxRuntimeError("'inputs' argument to backward() cannot be empty.")
    ex = _executor(tensors + list(inputs or ()), "autograd.backward")
    if ex.caps.native_autograd:
        import torch

        gs = None if grad_tensors is None else [None if g is None else g._n for g in grad_tensors]
        try:
            torch.autograd.backward([t._n for t in tensors], gs, retain_graph=retain_graph,
                                    create_graph=create_graph, inputs=None if inputs is None else [t._n for t in inputs])
        except NATIVE_ERRORS as err:
            raise ex.native_error(err) from None
        return
    from .._tensor import recording

    roots = _roots(tensors, grad_tensors, ex, create_graph, "autograd.backward")
    retain = create_graph if retain_graph is None else bool(retain_graph)
    recording.run_backward(tensors, roots, retain_graph=retain, inputs=inputs, create_graph=create_graph)
