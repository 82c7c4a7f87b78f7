"""``tdx.autograd.functional``: ``vjp``, ``jvp``, ``jacobian``, ``hessian``, ``hvp``, ``vhp``, as torch's.

All are built on :func:`tdx.autograd.grad`, so they run on every executor; the forward-mode ones
(``jvp``) use the double-vjp trick torch uses, and second order uses ``create_graph=True``, which
tdx's tape supports too. Results are detached unless ``create_graph``. Must never import a framework.
"""

from __future__ import annotations

from .._errors import TdxRuntimeError, TdxValueError

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]


def _as_tuple(x, what: str, fn: str):
    from .._errors import TdxTypeError
    from .function import _is_tensor

    if _is_tensor(x):
        return False, (x,)
    if isinstance(x, (tuple, list)) and all(_is_tensor(t) for t in x):
        return True, tuple(x)
    raise TdxTypeError(f"The {what} given to {fn} must be either a Tensor or a tuple of Tensors but the value "
                       f"got is {type(x).__name__}")


def _prepare(inputs, create_graph: bool):
    """Fresh differentiable inputs: views that keep their history with ``create_graph``, else detached."""
    out = []
    for t in inputs:
        if create_graph and t.requires_grad:
            out.append(t.view_as(t))
        else:
            out.append(t.detach().requires_grad_(True) if t.dtype.is_floating_point or t.dtype.is_complex
                       else t.detach())
    return tuple(out)


def _finish(tensors, create_graph: bool):
    return tuple(None if t is None else t if create_graph else t.detach() for t in tensors)


def _grad(outputs, inputs, grad_outputs, create_graph, strict, fn, stage="output"):
    """``autograd.grad`` with unused inputs as zeros (or an error in ``strict`` mode)."""
    import tdx

    from . import grad

    outs = [o for o in outputs if o.requires_grad]
    gos = [g for o, g in zip(outputs, grad_outputs)] if grad_outputs is not None else None
    gos = None if gos is None else [g for o, g in zip(outputs, gos) if o.requires_grad]
    diff = [t for t in inputs if t.requires_grad]
    res = grad(outs, diff, gos, retain_graph=True, create_graph=create_graph, allow_unused=True) if outs and diff \
        else (None,) * len(diff)
    it = iter(res)
    full = [next(it) if t.requires_grad else None for t in inputs]
    for i, (g, t) in enumerate(zip(full, inputs)):
        if g is None:
            if strict:
                raise TdxRuntimeError(f"The {stage} of the user-provided function is independent of input {i}. This "
                                      "is not allowed in strict mode.")
            full[i] = tdx.zeros_like(t)
    return full


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """The function's output and the vector-Jacobian product ``v^T J`` at ``inputs``.

    Raises:
        TdxRuntimeError: ``v`` is missing for a non-scalar output, its shape differs, or (``strict``)
            an output is independent of an input.
    """
    is_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
    inputs = _prepare(inputs, create_graph)
    out_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function", "vjp")
    vs = _vectors(v, outputs, out_tuple, "vjp")
    g = _grad(outputs, inputs, vs, create_graph, strict, "vjp")
    res = _finish(g, create_graph)
    outs = _finish(outputs, create_graph)
    return (outs if out_tuple else outs[0]), (res if is_tuple else res[0])


def _vectors(v, outputs, out_tuple, fn):
    import tdx

    if v is None:
        if len(outputs) != 1 or outputs[0].numel() != 1:
            raise TdxRuntimeError(f"The vector v can only be None if the user-provided function returns a single "
                                  f"Tensor with a single element ({fn}).")
        return [tdx.ones_like(outputs[0])]
    _, vs = _as_tuple(v, "v", fn)
    if len(vs) != len(outputs):
        raise TdxRuntimeError(f"v is a tuple of invalid length: should be {len(outputs)} but got {len(vs)}.")
    for i, (a, o) in enumerate(zip(vs, outputs)):
        if tuple(a.shape) != tuple(o.shape):
            raise TdxRuntimeError(f"Entry {i} in v has invalid size: should be {tuple(o.shape)} but got "
                                  f"{tuple(a.shape)}.")
    return list(vs)


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """The function's output and the Jacobian-vector product ``J v`` at ``inputs`` (by a double vjp).

    Raises:
        TdxRuntimeError: ``v`` is missing for a non-scalar input, or its shape differs.
    """
    import tdx

    is_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
    inputs = _prepare(inputs, create_graph)
    vs = _vectors(v, inputs, is_tuple, "jvp")
    out_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function", "jvp")
    dummies = [tdx.zeros_like(o).requires_grad_(True) for o in outputs]
    g = _grad(outputs, inputs, dummies, True, strict, "jvp")
    res = _grad(g, dummies, vs, create_graph, strict, "jvp", stage="gradient")
    res = _finish(res, create_graph)
    outs = _finish(outputs, create_graph)
    return (outs if out_tuple else outs[0]), (res if out_tuple else res[0])


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False, strategy="reverse-mode"):
    """The Jacobian of ``func`` at ``inputs``: for each output and input, ``output.shape + input.shape``.

    ``vectorize`` and ``strategy="forward-mode"`` (with ``vectorize``) give the same values, computed
    row by row in reverse mode.

    Raises:
        TdxValueError: an unknown ``strategy``, or forward-mode without ``vectorize``.
    """
    import tdx

    if strategy not in ("forward-mode", "reverse-mode"):
        raise TdxValueError('Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your '
                            'function has more outputs than inputs, "forward-mode" tends to be more performant. '
                            'Otherwise, prefer to use "reverse-mode".')
    if strategy == "forward-mode" and not vectorize:
        raise TdxValueError("torch.autograd.functional.jacobian: `strategy=\"forward-mode\"` requires "
                            "`vectorize=True`.")
    is_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
    inputs = _prepare(inputs, create_graph)
    out_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function", "jacobian")
    table = []
    for i, o in enumerate(outputs):
        rows = [[] for _ in inputs]
        flat = o.reshape(-1)
        for j in range(flat.numel()):
            gs = _grad([flat[j]], inputs, None, create_graph, False, "jacobian")
            for k, (g, t) in enumerate(zip(gs, inputs)):
                if strict and o.requires_grad and not _depends(flat[j], t):
                    raise TdxRuntimeError(f"Output {i} of the user-provided function is independent of input {k}. "
                                          "This is not allowed in strict mode.")
                rows[k].append(g)
        per_in = []
        for k, t in enumerate(inputs):
            j = tdx.stack(rows[k]) if rows[k] else tdx.zeros((0, *t.shape), dtype=t.dtype, device=t.device)
            per_in.append(j.reshape(tuple(o.shape) + tuple(t.shape)))
        table.append(_finish(per_in, create_graph))
    if out_tuple:
        return tuple(row if is_tuple else row[0] for row in table)
    return table[0] if is_tuple else table[0][0]


def _depends(out, t) -> bool:
    from . import grad

    if not out.requires_grad:
        return False
    return grad(out, t, retain_graph=True, allow_unused=True)[0] is not None


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False, outer_jacobian_strategy="reverse-mode"):
    """The Hessian of the scalar function ``func`` at ``inputs`` (``input.shape + input.shape`` per pair).

    Raises:
        TdxRuntimeError: ``func`` does not return a single-element tensor.
    """
    is_tuple, inputs_t = _as_tuple(inputs, "inputs", "hessian")

    def jac(*ins):
        _, outs = _as_tuple(func(*ins), "outputs of the user-provided function", "hessian")
        if len(outs) != 1 or outs[0].numel() != 1:
            raise TdxRuntimeError("The function given to hessian should return a single element Tensor")
        return tuple(_grad(outs, ins, None, True, strict, "hessian"))

    res = jacobian(jac, inputs_t, create_graph=create_graph, strict=strict, vectorize=vectorize,
                   strategy=outer_jacobian_strategy)
    return res if is_tuple else res[0][0]


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """The function's (scalar) output and the vector-Hessian product ``v^T H`` at ``inputs``.

    Raises:
        TdxRuntimeError: ``func`` does not return a single-element tensor, or ``v`` is missing
            for a non-scalar input.
    """
    is_tuple, inputs = _as_tuple(inputs, "inputs", "vhp")
    inputs = _prepare(inputs, create_graph)
    vs = _vectors(v, inputs, is_tuple, "vhp")
    _, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function", "vhp")
    if len(outputs) != 1 or outputs[0].numel() != 1:
        raise TdxRuntimeError("The function given to vhp should return a single element Tensor")
    g = _grad(outputs, inputs, None, True, strict, "vhp")
    res = _finish(_grad(g, inputs, vs, create_graph, strict, "vhp", stage="jacobian"), create_graph)
    out = _finish(outputs, create_graph)[0]
    return out, (res if is_tuple else res[0])


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """The function's (scalar) output and the Hessian-vector product ``H v`` at ``inputs`` (by a
    double vjp, as torch's: correct for non-symmetric second derivatives too).

    Raises:
        TdxRuntimeError: as :func:`vhp`.
    """
    import tdx

    is_tuple, inputs = _as_tuple(inputs, "inputs", "hvp")
    inputs = _prepare(inputs, create_graph)
    vs = _vectors(v, inputs, is_tuple, "hvp")
    _, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function", "hvp")
    if len(outputs) != 1 or outputs[0].numel() != 1:
        raise TdxRuntimeError("The function given to hvp should return a single element Tensor")
    g = _grad(outputs, inputs, None, True, strict, "hvp")
    dummies = [tdx.zeros_like(t).requires_grad_(True) for t in inputs]
    back = _grad(g, inputs, dummies, True, strict, "hvp", stage="jacobian")
    res = _finish(_grad(back, dummies, vs, create_graph, strict, "hvp", stage="jacobian"), create_graph)
    out = _finish(outputs, create_graph)[0]
    return out, (res if is_tuple else res[0])
