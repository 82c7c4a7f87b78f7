"""``jacrev`` and ``jacfwd`` on tape executors (MLX): one ``vjp`` per output element, one ``jvp``
per input element, each Jacobian block shaped ``output.shape + input.shape`` as torch's.

Torch computes the rows in one ``vmap`` over a basis; here they are computed one at a time (the
same values). Must never import a framework, and never build a row torch would not (the basis
vectors are one-hot, in the order of ``reshape(-1)``).
"""

from __future__ import annotations

from ._tape import _is_tensor, _split_aux, jvp_call, vjp_call
from ._trees import flatten, unflatten

__all__ = ["jacrev_call", "jacfwd_call"]


def _one_hot(t, j):
    import tdx

    flat = tdx.zeros(t.numel(), dtype=t.dtype, device=t.device)
    flat[j] = 1
    return flat.reshape(t.shape)


def _arrange(blocks, ospec, in_specs, single):
    """The Jacobian tree: for each output leaf, the argument tree(s) of its blocks."""
    per_out = []
    for row in blocks:
        trees, k = [], 0
        for spec in in_specs:
            n = spec.num_leaves
            trees.append(unflatten(row[k:k + n], spec))
            k += n
        per_out.append(trees[0] if single else tuple(trees))
    return unflatten(per_out, ospec)


def _restrict(func, argnums, args, kwargs):
    """``(partial, picked)``: ``func`` as a function of the arguments at ``argnums`` only, and those arguments."""

    def partial(*picked):
        call = list(args)
        for i, a in zip(argnums, picked):
            call[i] = a
        return func(*call, **kwargs)

    return partial, tuple(args[i] for i in argnums)


def jacrev_call(func, argnums: tuple, single: bool, has_aux: bool, args, kwargs):
    """``jacrev(func, argnums, has_aux)(*args, **kwargs)`` (``argnums`` checked)."""
    import tdx

    partial, picked = _restrict(func, argnums, args, kwargs)
    res = vjp_call(partial, picked, has_aux)
    out, vjp_fn = res[0], res[1]
    flat_out, ospec = flatten(out)
    in_leaves = flatten(picked)[0]
    in_specs = [flatten(p)[1] for p in picked]
    blocks = []
    for o in flat_out:
        rows = []
        for j in range(o.numel()):
            cts = [_one_hot(x, j) if x is o else tdx.zeros_like(x) for x in flat_out]
            rows.append(flatten(vjp_fn(unflatten(cts, ospec)))[0])
        shapes = [tuple(o.shape) + tuple(x.shape) for x in in_leaves]
        blocks.append([(tdx.stack([r[k] for r in rows]) if rows else
                        tdx.zeros((0, *x.shape), dtype=x.dtype, device=x.device)).reshape(shapes[k])
                       for k, x in enumerate(in_leaves)])
    jac = _arrange(blocks, ospec, in_specs, single)
    return (jac, res[2]) if has_aux else jac


def jacfwd_call(func, argnums: tuple, single: bool, has_aux: bool, args, kwargs):
    """``jacfwd(func, argnums, has_aux)(*args, **kwargs)`` (``argnums`` checked)."""
    import tdx

    partial, picked = _restrict(func, argnums, args, kwargs)
    in_leaves, pspec = flatten(picked)
    for x in in_leaves:
        if not _is_tensor(x):
            from ..._errors import TdxValueError

            raise TdxValueError(f"jacfwd: Thing passed to transform API must be Tensor, got {type(x)}")
    cols = []  # per input leaf: per element: flat list of output tangents
    out = aux = ospec = None
    for k, x in enumerate(in_leaves):
        per = []
        for j in range(x.numel()):
            tangents = [_one_hot(y, j) if y is x else tdx.zeros_like(y) for y in in_leaves]
            res = jvp_call(partial, picked, unflatten(tangents, pspec), has_aux)
            out, ospec = res[0], flatten(res[0])[1]
            aux = res[2] if has_aux else None
            per.append(flatten(res[1])[0])
        cols.append(per)
    if out is None:  # every input is empty: one call for the output's structure
        out, aux = _split_aux(partial(*picked), has_aux, "jacfwd")
        ospec = flatten(out)[1]
    flat_out = flatten(out)[0]
    blocks = []
    for i, o in enumerate(flat_out):
        row = []
        for k, x in enumerate(in_leaves):
            shape = tuple(o.shape) + tuple(x.shape)
            row.append(tdx.stack([c[i] for c in cols[k]], dim=-1).reshape(shape) if cols[k] else
                       tdx.zeros(shape, dtype=o.dtype, device=o.device))
        blocks.append(row)
    jac = _arrange(blocks, ospec, [flatten(p)[1] for p in picked], single)
    return (jac, aux) if has_aux else jac
