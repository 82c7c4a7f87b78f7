"""``tdx.func`` (torch.func): composable function transforms with torch's semantics on every executor.

``vmap``, ``grad``, ``grad_and_value``, ``vjp``, ``jvp``, ``jacrev``, ``jacfwd``, ``hessian``,
``linearize``, ``functional_call``, ``stack_module_state``, ``functionalize``. Arguments are
checked here first (:mod:`._checks`, torch's messages as tdx's typed errors), then the transform
runs where the tensors live: on executors with native autograd (torch) it is torch's own
``torch.func`` over the natives (:mod:`._native`), and ``vmap`` of a function that reads values
(which torch's vmap refuses, and some tdx composites do to check arguments) maps slice by slice
(:mod:`._slices`); on tape executors (MLX) it is composed on
tdx's autograd, with ``mx.vmap``/``mx.jvp`` where the function fits MLX's tracing
(:mod:`._tape`, :mod:`._jacobians`). Must never import a framework at module level.
"""

from __future__ import annotations

import functools

from . import _checks
from ._module_state import functional_call, stack_module_state

__all__ = ["vmap", "grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian", "linearize",
           "functional_call", "stack_module_state", "functionalize", "replace_all_batch_norm_modules_", "debug_unwrap"]


_VALUE_READ = "vmap: It looks like you're either (1) calling .item()"  # torch's error for a read of values


def _on_native_autograd(ex) -> bool:
    return ex.caps.native_autograd


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """``func`` mapped over a dimension of its inputs (torch.func.vmap).

    Args:
        func: the function; it sees one slice of each mapped input.
        in_dims: per positional argument, the mapped dimension or None (an int for all, or a tuple
            matching the arguments' structure; a nested entry matches a container argument).
        out_dims: where the mapped dimension goes in each output (None: an output that is not mapped).
        randomness: ``"error"`` (random ops raise), ``"different"`` (each slice draws its own) or
            ``"same"`` (every slice draws the same values).
        chunk_size: map this many slices at a time (torch executors; a memory bound only).

    Raises:
        TdxValueError: bad ``in_dims``/``out_dims``/``chunk_size``, sizes that differ, a non-tensor output.
        TdxRuntimeError: an unknown ``randomness``, or a random op under ``randomness="error"``.
    """
    _checks.check_randomness(randomness)
    _checks.check_chunk_size(chunk_size)
    _checks.check_out_dims(func, out_dims)

    @functools.wraps(func)
    def vmapped(*args, **kwargs):
        from ._trees import flatten

        dims, size = _checks.batch_dims(func, in_dims, args)
        leaves, spec = flatten(args)
        ex = next(a for a, d in zip(leaves, dims) if d is not None)._ex
        if _on_native_autograd(ex):
            from ..._errors import TdxRuntimeError
            from ._native import transform

            try:
                return transform("vmap", func, ex, args, kwargs, {"in_dims": in_dims, "out_dims": out_dims,
                                                                  "randomness": randomness, "chunk_size": chunk_size})
            except TdxRuntimeError as err:
                if not str(err).startswith(_VALUE_READ):
                    raise
            from ._slices import vmap_by_slices  # the function reads values (a tdx composite's checks)

            return vmap_by_slices(func, dims, size, leaves, spec, kwargs, out_dims, randomness, ex)
        from ._tape import vmap_call

        return vmap_call(func, dims, size, leaves, spec, kwargs, out_dims, randomness, ex)

    return vmapped


def _argnums(argnums, args):
    nums = _checks.argnums_tuple(argnums, len(args))
    return nums, not isinstance(argnums, tuple)


def grad_and_value(func, argnums=0, has_aux=False):
    """A function returning ``(gradient, value)`` of the scalar ``func`` (torch.func.grad_and_value).

    Args:
        func: returns a 0-dim tensor (with ``has_aux``: ``(tensor, aux)``).
        argnums: the positional argument(s) differentiated: an int, or a tuple giving a tuple of gradients.
        has_aux: ``func`` returns an auxiliary value too, passed through as ``(value, aux)``.

    Raises:
        TdxRuntimeError: bad ``argnums``, a non-tensor or non-scalar output, an aux output that is
            not a pair, or an integer argument.
    """

    @functools.wraps(func)
    def transformed(*args, **kwargs):
        nums, single = _argnums(argnums, args)
        ex = _checks.executor_of([args[i] for i in nums], "grad_and_value(f)(*args)")
        if _on_native_autograd(ex):
            from ._native import transform

            return transform("grad_and_value", func, ex, args, kwargs, {"argnums": argnums, "has_aux": has_aux})
        from ._tape import grad_and_value_call

        return grad_and_value_call(func, nums, single, has_aux, args, kwargs)

    return transformed


def grad(func, argnums=0, has_aux=False):
    """A function returning the gradient of the scalar ``func`` (torch.func.grad); see :func:`grad_and_value`."""
    gv = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def transformed(*args, **kwargs):
        g, value = gv(*args, **kwargs)
        return (g, value[1]) if has_aux else g

    return transformed


def vjp(func, *primals, has_aux=False):
    """``(func(*primals), vjp_fn[, aux])``; ``vjp_fn(cotangents)`` gives one gradient per primal (torch.func.vjp).

    Raises:
        TdxRuntimeError: a non-tensor output, or (from ``vjp_fn``) cotangents of another structure or shape.
    """
    ex = _checks.executor_of(primals, "vjp(f, *primals)")
    if _on_native_autograd(ex):
        from ._native import transform

        return transform("vjp", func, ex, primals, {}, {"has_aux": has_aux})
    from ._tape import vjp_call

    return vjp_call(func, primals, has_aux)


def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    """``(func(*primals), J @ tangents[, aux])``, forward-mode (torch.func.jvp).

    Raises:
        TdxRuntimeError: ``primals``/``tangents`` not tuples of the same structure and shapes, or a
            non-tensor output.
    """
    from ..._errors import TdxRuntimeError
    from ._trees import describe, flatten

    for what, value in (("primals", primals), ("tangents", tangents)):
        if not isinstance(value, tuple):
            raise TdxRuntimeError(f"jvp(f, primals, tangents): Expected {what} to be a tuple. E.g. it should be valid "
                                  f"to call f(*primals).")
    (pl, ps), (tl, ts) = flatten(primals), flatten(tangents)
    if ps != ts:
        raise TdxRuntimeError("jvp(f, primals, tangents): Expected primals and tangents to have the same python "
                              "structure. For example, if primals is a tuple of 3 tensors, tangents also must be. "
                              f"Got primals with structure {describe(ps)} and tangents with structure {describe(ts)}")
    for p, t in zip(pl, tl):
        if hasattr(p, "shape") and hasattr(t, "shape") and tuple(p.shape) != tuple(t.shape):
            raise TdxRuntimeError("Trying to set a forward gradient that has a different size than that of the "
                                  f"original Tensor, this is not supported. Tensor is of size {list(p.shape)} while "
                                  f"the given forward gradient is of size {list(t.shape)}.")
    ex = _checks.executor_of(primals, "jvp(f, primals, tangents)")
    if _on_native_autograd(ex):
        from ._native import transform

        return transform("jvp", func, ex, (primals, tangents), {}, {"strict": strict, "has_aux": has_aux})
    from ._tape import jvp_call

    return jvp_call(func, primals, tangents, has_aux)


def _jacobian(name, func, argnums, has_aux, options):
    @functools.wraps(func)
    def transformed(*args, **kwargs):
        nums, single = _argnums(argnums, args)
        ex = _checks.executor_of([args[i] for i in nums], f"{name}(f)(*args)")
        if _on_native_autograd(ex):
            from ._native import transform

            return transform(name, func, ex, args, kwargs, {"argnums": argnums, "has_aux": has_aux, **options})
        from . import _jacobians

        return getattr(_jacobians, f"{name}_call")(func, nums, single, has_aux, args, kwargs)

    return transformed


def jacrev(func, argnums=0, *, has_aux=False, chunk_size=None, _preallocate_and_copy=False):
    """The Jacobian of ``func`` by reverse mode (torch.func.jacrev): per output, ``out.shape + in.shape``."""
    _checks.check_chunk_size(chunk_size)
    return _jacobian("jacrev", func, argnums, has_aux, {"chunk_size": chunk_size})


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error"):
    """The Jacobian of ``func`` by forward mode (torch.func.jacfwd): per output, ``out.shape + in.shape``."""
    _checks.check_randomness(randomness)
    return _jacobian("jacfwd", func, argnums, has_aux, {"randomness": randomness})


def hessian(func, argnums=0):
    """The Hessian of the scalar ``func``: ``jacfwd(jacrev(func, argnums), argnums)`` (torch.func.hessian)."""
    return jacfwd(jacrev(func, argnums), argnums)


def linearize(func, *primals):
    """``(func(*primals), jvp_fn)``: ``jvp_fn(*tangents)`` is the Jacobian-vector product at ``primals``
    (torch.func.linearize; here each call of ``jvp_fn`` runs one ``jvp``)."""
    out = func(*primals)

    def jvp_fn(*tangents):
        return jvp(func, primals, tangents)[1]

    return out, jvp_fn


def functionalize(func, *, remove="mutations"):
    """``func`` itself: eager tdx has no mutation to remove, so the function computes the same values
    (torch.func.functionalize).

    Raises:
        TdxRuntimeError: ``remove`` is not ``"mutations"`` or ``"mutations_and_views"``.
    """
    from ..._errors import TdxRuntimeError

    if remove not in ("mutations", "mutations_and_views"):
        raise TdxRuntimeError(f"functionalize(f, remove='mutations'): received invalid argument for remove={remove}. "
                              "Valid options are:\n     remove='mutations': all inplace and out= operators will be "
                              "removed from the program, and replaced with their out-of-place equivalents.\n     "
                              "remove='mutations_and_views': In addition to the above, all aliasing operators "
                              "{view} will be replaced with their non-aliasing counterparts, {view}_copy.\n")
    return func


def replace_all_batch_norm_modules_(root):
    """Stop every batch-norm module under ``root`` from tracking running statistics (in place; returns ``root``)."""
    from ..nn.modules.batchnorm import _BatchNorm

    for m in root.modules():
        if isinstance(m, _BatchNorm):
            m.running_mean = None
            m.running_var = None
            m.num_batches_tracked = None
            m.track_running_stats = False
    return root


def debug_unwrap(tensor, *, recurse=True):
    """``tensor`` without the wrappers transforms put around it (torch.func.debug_unwrap): inside a
    transform on a torch executor the underlying batched or gradient-tracking value; elsewhere the
    tensor itself."""
    ex = getattr(tensor, "_ex", None)
    if ex is None or not _on_native_autograd(ex):
        return tensor
    import torch

    from ..._tensor.wrapping import wrap

    native = torch.func.debug_unwrap(tensor._n, recurse=recurse)
    return tensor if native is tensor._n else wrap(native, ex)
