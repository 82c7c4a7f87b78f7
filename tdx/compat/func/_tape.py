"""``tdx.func`` on tape executors (MLX): the transforms composed on tdx's autograd, and MLX's own
``mx.vmap``/``mx.jvp`` where they fit the tape.

``grad``/``vjp`` make fresh leaves of the differentiated arguments, run the function with grad
enabled and take :func:`tdx.autograd.grad`; where an argument already requires grad (a transform
nested in another, or MAML's inner step) or the function reads a tensor requiring grad (a
parameter it closes over), the arguments keep their history and the gradients are built with
``create_graph``, so outer transforms and ``backward`` differentiate through them. ``jvp`` is ``mx.jvp`` over the
function's natives when nothing in it records on the tape, else the double-vjp trick. ``vmap`` is
``mx.vmap`` over the natives when the function fits MLX's tracing (no read of an array's values,
no in-place write, no output on the tape, ``randomness`` not ``"different"``) and otherwise
:func:`._slices.vmap_by_slices`: the same values, slower. Must never import a framework
at module level, and never change the arguments it is given.
"""

from __future__ import annotations

from ..._errors import NATIVE_ERRORS, TdxRuntimeError, TdxValueError, translate
from ._slices import RANDOM_ERROR, check_output, out_dims_per_leaf
from ._trees import describe, flatten, tree_map, unflatten

__all__ = ["vmap_call", "grad_and_value_call", "vjp_call", "jvp_call"]


class _NoFit(Exception):
    """The function does something MLX's tracing cannot carry (its output is on tdx's tape)."""


def _is_tensor(x) -> bool:
    from ..._tensor.wrapping import Tensor

    return isinstance(x, Tensor)


def vmap_call(func, dims, size, leaves, spec, kwargs, out_dims, randomness, ex):
    """``vmap(func)`` applied to the flattened arguments ``leaves`` mapped along ``dims`` (checked)."""
    if randomness != "different" and getattr(ex, "taped", False):
        out = _mlx_vmap(func, dims, leaves, spec, kwargs, out_dims, randomness, ex)
        if out is not None:
            return out[0]
    from ._slices import vmap_by_slices

    return vmap_by_slices(func, dims, size, leaves, spec, kwargs, out_dims, randomness, ex)


def _mlx_vmap(func, dims, leaves, spec, kwargs, out_dims, randomness, ex):
    """``(result,)`` by ``mx.vmap`` over the natives, or None when the function does not fit MLX's tracing."""
    import mlx.core as mx

    from ..._tensor.wrapping import wrap

    if any(d is None for d in flatten(out_dims)[0]):
        return None
    if any(_is_tensor(a) and a.requires_grad for a in leaves):
        return None
    mapped = [i for i, d in enumerate(dims) if d is not None]
    found = {}

    def traced(*natives):
        args = list(leaves)
        for i, n in zip(mapped, natives):
            args[i] = wrap(n, ex)
        out = func(*unflatten(args, spec), **kwargs)
        flat, ospec = flatten(out)
        if not flat or any(not _is_tensor(o) or o.requires_grad for o in flat):
            raise _NoFit
        found["out"] = out
        found["spec"] = ospec
        return [o._n for o in flat]

    from ..._tensor import views

    def watch(t):
        raise _NoFit  # an in-place write: into a tensor that may outlive the trace (running stats)

    rng0 = ex.default_rng_state()
    views.WRITE_WATCHERS.append(watch)
    try:
        res = mx.vmap(traced, in_axes=tuple(dims[i] for i in mapped), out_axes=0)(*[leaves[i]._n for i in mapped])
    except _NoFit:
        ex.set_default_rng_state(rng0)
        return None
    except NATIVE_ERRORS as err:
        if "Attempting to eval" in str(err):  # the function reads values: map it slice by slice
            ex.set_default_rng_state(rng0)
            return None
        raise translate(err) from None
    finally:
        views.WRITE_WATCHERS.remove(watch)
    if randomness == "error" and ex.default_rng_state() != rng0:
        ex.set_default_rng_state(rng0)
        raise TdxRuntimeError(RANDOM_ERROR)
    per = out_dims_per_leaf(func, out_dims, found["out"])
    outs = []
    for n, d, o in zip(res, per, flatten(found["out"])[0]):
        check_output(func, o, d)
        t = wrap(n, ex)
        outs.append(t if d in (0, -(o.dim() + 1)) else t.movedim(0, d))
    return (unflatten(outs, found["spec"]),)


# grad and vjp ----------------------------------------------------------------------------------
def _prepare(x, nested: bool, where: str):
    if not _is_tensor(x):
        raise TdxValueError(f"{where}: Thing passed to transform API must be Tensor, got {type(x)}")
    if nested and x.requires_grad:
        return x.view_as(x)
    if not (x.dtype.is_floating_point or x.dtype.is_complex):
        raise TdxRuntimeError(f"{where}: only Tensors of floating point dtype can require gradients, got a tensor of "
                              f"dtype {x.dtype}")
    return x.detach().requires_grad_(True)


def _nested(trees) -> bool:
    import tdx

    return tdx.is_grad_enabled() and any(_is_tensor(x) and x.requires_grad for x in flatten(trees)[0])


def _outer(outs, fresh) -> bool:
    """Whether the recording of ``outs`` reaches a tensor requiring grad other than the ``fresh``
    leaves (a parameter the function closes over): then the results keep their graph, as torch's
    transforms lift them to the outer level."""
    from ...autograd.recompute import closure_leaves

    taped = [o for o in flatten(outs)[0] if _is_tensor(o) and o.requires_grad]
    own = {id(x) for x in flatten(fresh)[0] if _is_tensor(x)}
    return bool(taped) and bool(closure_leaves(taped, own))


def _grads(outs, cts, ins, create_graph: bool):
    """``d(outs)/d(ins)`` contracted with ``cts``; zeros for inputs the outputs do not reach."""
    import tdx
    from tdx.autograd import grad

    pairs = [(o, c) for o, c in zip(outs, cts) if o.requires_grad]
    res = grad([o for o, _ in pairs], list(ins), [c for _, c in pairs], retain_graph=True,
               create_graph=create_graph, allow_unused=True) if pairs else (None,) * len(ins)
    out = []
    for g, x in zip(res, ins):
        g = tdx.zeros_like(x) if g is None else g
        out.append(g if create_graph else g.detach())
    return out


def _keep(tree, nested: bool):
    return tree if nested else tree_map(lambda x: x.detach() if _is_tensor(x) else x, tree)


def grad_and_value_call(func, argnums: tuple, single: bool, has_aux: bool, args, kwargs):
    """``grad_and_value(func, argnums, has_aux)(*args, **kwargs)`` on the tape (``argnums`` checked)."""
    import tdx

    where = "grad_and_value(f)(*args)"
    picked = [args[i] for i in argnums]
    nested = _nested(picked)
    with tdx.enable_grad():
        fresh = [tree_map(lambda x: _prepare(x, nested, where), a) for a in picked]
        call = list(args)
        for i, a in zip(argnums, fresh):
            call[i] = a
        out = func(*call, **kwargs)
    aux = None
    if has_aux:
        if not (isinstance(out, tuple) and len(out) == 2):
            raise TdxRuntimeError(f"{where}: output of function f should be a tuple: (output, aux) if has_aux is True")
        out, aux = out
    if not _is_tensor(out):
        raise TdxRuntimeError(f"{where}: Expected f(*args) to return a Tensor, got {type(out)}")
    if out.dim() != 0:
        raise TdxRuntimeError(f"{where}: Expected f(*args) to return a scalar Tensor, got tensor with {out.dim()} "
                              "dims. Maybe you wanted to use the vjp or jacrev APIs instead?")
    leaves, pspec = flatten(fresh)
    nested = nested or (tdx.is_grad_enabled() and _outer(out, fresh))
    with tdx.enable_grad():
        gs = _grads([out], [tdx.ones_like(out)], leaves, nested)
    grads = unflatten(gs, pspec)
    grads = grads[0] if single else tuple(grads)
    value = _keep(out, nested)
    return (grads, (value, _keep(aux, nested))) if has_aux else (grads, value)


def vjp_call(func, primals, has_aux: bool):
    """``vjp(func, *primals, has_aux)``: ``(output, vjp_fn[, aux])`` on the tape."""
    import tdx

    where = "vjp(f, *primals)"
    nested = _nested(primals)
    with tdx.enable_grad():
        fresh = tree_map(lambda x: _prepare(x, nested, where), tuple(primals))
        out = func(*fresh)
    aux = None
    if has_aux:
        if not (isinstance(out, tuple) and len(out) == 2):
            raise TdxRuntimeError("vjp(f, *primals): output of function f should be a tuple: (output, aux) if "
                                  "has_aux is True")
        out, aux = out
    flat_out, ospec = flatten(out)
    bad = next((o for o in flat_out if not _is_tensor(o)), None) if flat_out else out
    if bad is not None or not flat_out:
        raise TdxRuntimeError(f"vjp(f, *primals): expected f(*primals) to return only tensors, got unsupported type "
                              f"{type(bad)}")
    leaves, pspec = flatten(fresh)
    nested = nested or (tdx.is_grad_enabled() and _outer(flat_out, fresh))

    def vjp_fn(cotangents, *, retain_graph=True, create_graph=None):
        cts, cspec = flatten(cotangents)
        if cspec != ospec:
            raise TdxRuntimeError(f"Expected pytree structure of cotangents to be the same as pytree structure of "
                                  f"outputs to the function. cotangents: {describe(cspec)}, primal output: "
                                  f"{describe(ospec)}")
        for c in cts:
            if not _is_tensor(c):
                raise TdxRuntimeError(f"vjp_fn: expected the cotangents to be Tensors, got {type(c)}")
        cg = nested or any(c.requires_grad for c in cts) if create_graph is None else bool(create_graph)
        with tdx.enable_grad():
            return unflatten(_grads(flat_out, cts, leaves, cg), pspec)

    res = (_keep(out, nested), vjp_fn)
    return (*res, _keep(aux, nested)) if has_aux else res


# jvp -------------------------------------------------------------------------------------------
def jvp_call(func, primals, tangents, has_aux: bool):
    """``jvp(func, primals, tangents, has_aux)``: ``(output, jvp_out[, aux])`` on the tape (arguments checked)."""
    res = _mlx_jvp(func, primals, tangents, has_aux)
    return res if res is not None else _double_vjp(func, primals, tangents, has_aux)


def _split_aux(out, has_aux, where):
    if not has_aux:
        return out, None
    if not (isinstance(out, tuple) and len(out) == 2):
        raise TdxRuntimeError(f"{where}: output of function f should be a tuple: (output, aux) if has_aux is True")
    return out


def _check_outputs(flat, where):
    if not flat or any(not _is_tensor(o) for o in flat):
        bad = next((o for o in flat if not _is_tensor(o)), None)
        raise TdxRuntimeError(f"{where}: expected f(*primals) to return only tensors, got unsupported type {type(bad)}")


def _mlx_jvp(func, primals, tangents, has_aux):
    """``mx.jvp`` over the natives, or None when the function records on tdx's tape."""
    import mlx.core as mx

    from ..._tensor.wrapping import wrap

    where = "jvp(f, primals, tangents)"
    leaves, pspec = flatten(primals)
    if not all(_is_tensor(x) for x in leaves) or any(x.requires_grad for x in leaves):
        return None
    ex = leaves[0]._ex
    found = {}

    def traced(*natives):
        out, aux = _split_aux(func(*unflatten([wrap(n, ex) for n in natives], pspec)), has_aux, where)
        flat, ospec = flatten(out)
        _check_outputs(flat, where)
        if any(o.requires_grad for o in flat):
            raise _NoFit
        found.update(spec=ospec, aux=aux)
        return [o._n for o in flat]

    try:
        outs, jvps = mx.jvp(traced, [x._n for x in leaves], [t._n for t in flatten(tangents)[0]])
    except _NoFit:
        return None
    except NATIVE_ERRORS as err:
        raise translate(err) from None
    res = (unflatten([wrap(o, ex) for o in outs], found["spec"]), unflatten([wrap(j, ex) for j in jvps], found["spec"]))
    return (*res, found["aux"]) if has_aux else res


def _double_vjp(func, primals, tangents, has_aux):
    import tdx

    where = "jvp(f, primals, tangents)"
    nested = _nested(primals) or _nested(tangents)
    with tdx.enable_grad():
        fresh = tree_map(lambda x: _prepare(x, nested, where), primals)
        out, aux = _split_aux(func(*fresh), has_aux, where)
        flat, ospec = flatten(out)
        _check_outputs(flat, where)
        leaves = flatten(fresh)[0]
        nested = nested or _outer(flat, fresh)
        dummies = [tdx.zeros_like(o).requires_grad_(True) for o in flat]
        back = _grads(flat, dummies, leaves, True)
        jv = _grads(back, flatten(tangents)[0], dummies, nested)
    res = (_keep(out, nested), unflatten(jv, ospec))
    return (*res, _keep(aux, nested)) if has_aux else res
