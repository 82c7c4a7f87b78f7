"""``vmap`` by slices, on every executor: the function called on each slice of the batch and the
outputs stacked. The fallback where the executor's own vmap cannot run the function (MLX's tracing
forbids reading values; torch's vmap forbids ``.item()`` and data-dependent control flow, which
some tdx composites use to check their arguments): the same values, one call per slice.

``randomness="error"`` raises when the first slice drew from the default random state;
``"same"`` restores that state before every slice. An in-place write during the first slice into a
tensor that outlives the call (running statistics) is refused: it would happen once per slice.
Must never import a framework.
"""

from __future__ import annotations

from ..._errors import TdxRuntimeError, TdxValueError
from ._checks import fn_name
from ._trees import broadcast_prefix, describe, flatten, unflatten

__all__ = ["vmap_by_slices", "out_dims_per_leaf", "check_output", "RANDOM_ERROR"]

RANDOM_ERROR = ("vmap: called random operation while in randomness error mode. Please either use the 'same' or "
                "'different' randomness flags on vmap or perform the randomness operation out of vmap")


def _is_tensor(x) -> bool:
    from ..._tensor.wrapping import Tensor

    return isinstance(x, Tensor)


def out_dims_per_leaf(func, out_dims, out):
    """One out_dim per leaf of ``out`` (TdxValueError when the structures differ)."""
    if not isinstance(out_dims, (tuple, list, dict)):
        return [out_dims] * flatten(out)[1].num_leaves
    per = broadcast_prefix(out_dims, out, lambda v: not isinstance(v, (tuple, list, dict)))
    if per is None and isinstance(out_dims, tuple) and len(out_dims) == 1 and not isinstance(out, (tuple, list)):
        per = broadcast_prefix(out_dims[0], out, lambda v: not isinstance(v, (tuple, list, dict)))
    if per is None:
        raise TdxValueError(f"vmap({fn_name(func)}, ..., out_dims={out_dims})(<inputs>): out_dims is not compatible "
                            f"with the structure of `outputs`. out_dims has structure {describe(flatten(out_dims)[1])}"
                            f" but outputs has structure {describe(flatten(out)[1])}.")
    return per


def check_output(func, o, d):
    """Raises TdxValueError for a mapped output that is not a tensor, TdxIndexError for an out_dim out of range."""
    if not _is_tensor(o) and d is not None:
        raise TdxValueError(f"vmap({fn_name(func)}, ...): `{fn_name(func)}` must only return Tensors, got type "
                            f"{type(o)}. Did you mean to set out_dims= to None for output?")
    if d is not None and not -(o.dim() + 1) <= d <= o.dim():
        from ..._errors import TdxIndexError

        raise TdxIndexError(f"Dimension out of range (expected to be in range of [{-(o.dim() + 1)}, {o.dim()}], but "
                            f"got {d})")


def _first_slice(func, args, kwargs):
    """``func(*args, **kwargs)``, refusing an in-place write into a tensor that outlives the call
    and is not among its outputs (a module's running statistics): torch's vmap writes such a tensor
    once or refuses; a call per slice would write it once per slice."""
    import weakref

    from ..._tensor import views

    written = {}  # id -> (weak reference, the value before the first write)

    def watch(t):
        if id(t) not in written:
            written[id(t)] = (weakref.ref(t), t._n)

    views.WRITE_WATCHERS.append(watch)
    try:
        out = func(*args, **kwargs)
    finally:
        views.WRITE_WATCHERS.remove(watch)
    mine = {id(o) for o in flatten(out)[0]} if written else ()

    def survivors():
        found = []
        for ref, old in written.values():
            t = ref()
            root = t if t is None or t._view is None else t._view.root
            if t is not None and id(t) not in mine and id(root) not in mine:
                found.append((t, old))
        return found

    outside = survivors()
    if outside:  # a tensor made inside the call may live on only in a reference cycle (a tape's nodes and
        import gc  # leaves, jacrev's basis): collected, it outlives nothing

        del outside
        gc.collect()
        outside = survivors()
    if outside:
        import tdx

        with tdx.no_grad():
            for t, old in reversed(outside):  # arrays are values here: the old one is the old content
                views.assign(t, old)
        t = outside[0][0]
        raise TdxRuntimeError(
            f"vmap({fn_name(func)}): the function wrote in place into a tensor of shape {tuple(t.shape)} that "
            f"outlives it (a module's running statistics, a counter); on {t.device} tdx maps this function one "
            "slice at a time and would write it once per slice. Write out of place and return the value, put the "
            "module in eval mode, or use tdx.func.replace_all_batch_norm_modules_")
    return out


def vmap_by_slices(func, dims, size, leaves, spec, kwargs, out_dims, randomness, ex):
    """``vmap(func)`` on the flattened arguments ``leaves`` (mapped along ``dims``, checked): ``func``
    called on each slice, the outputs stacked along ``out_dims``."""
    from ..._tensor.shape import stack

    if size == 0:
        raise TdxValueError(f"vmap({fn_name(func)}): the mapped dimension has size 0; tdx maps a function over at "
                            "least one slice on this executor")
    rng0 = ex.default_rng_state()
    results = []
    for b in range(size):
        if randomness == "same" and b:
            ex.set_default_rng_state(rng0)
        sliced = [a if d is None else a.select(d, b) for a, d in zip(leaves, dims)]
        if b:
            results.append(func(*unflatten(sliced, spec), **kwargs))
            continue
        results.append(_first_slice(func, unflatten(sliced, spec), kwargs))
        if randomness == "error" and ex.default_rng_state() != rng0:
            ex.set_default_rng_state(rng0)
            raise TdxRuntimeError(RANDOM_ERROR)
    first, ospec = flatten(results[0])
    per = out_dims_per_leaf(func, out_dims, results[0])
    flat = [flatten(r)[0] for r in results]
    out = []
    for i, (o, d) in enumerate(zip(first, per)):
        check_output(func, o, d)
        out.append(o if d is None else stack([f[i] for f in flat], dim=d))
    return unflatten(out, ospec)
