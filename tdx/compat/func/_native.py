"""``tdx.func`` on executors with native autograd (torch): torch's own ``torch.func`` over natives.

Each transform hands torch's the user's function wrapped so that it takes and returns natives:
the natives torch passes in (batched or gradient-tracking wrappers) become tdx Tensors for the
user's code, and the tdx Tensors it returns go back as their natives. So vmap, grad, vjp, jvp,
jacrev, jacfwd and hessian keep torch's exact semantics, randomness modes and errors (as tdx's
typed errors). Imports torch: the transforms import this module on a torch executor's first use
only. Must never touch a tape executor's tensors.
"""

from __future__ import annotations

import functools

import torch

from ..._errors import NATIVE_ERRORS, translate
from ..._tensor.wrapping import Tensor, wrap
from ._trees import tree_map

__all__ = ["transform"]


def to_natives(tree):
    """``tree`` with each tdx Tensor replaced by its native."""
    return tree_map(lambda x: x._n if isinstance(x, Tensor) else x, tree)


def to_tensors(tree, ex):
    """``tree`` with each torch tensor replaced by a tdx Tensor of ``ex`` around it."""
    return tree_map(lambda x: wrap(x, ex) if isinstance(x, torch.Tensor) else x, tree)


def _over_natives(func, ex):
    """``func`` as a function of natives returning natives (what torch.func transforms)."""

    @functools.wraps(func)
    def native_func(*args, **kwargs):
        return to_natives(func(*to_tensors(args, ex), **to_tensors(kwargs, ex)))

    return native_func


def _call(thunk):
    try:
        return thunk()
    except NATIVE_ERRORS as err:
        raise translate(err) from None


def transform(name: str, func, ex, args, kwargs, options: dict):
    """Apply ``torch.func.<name>(func, **options)`` to ``args``/``kwargs`` on executor ``ex``.

    Returns:
        The transform's result with natives as tdx Tensors; for ``vjp`` its ``vjp_fn`` takes
        and returns tdx Tensors.

    Raises:
        TdxError: what torch raises, as the typed error of the same builtin kind.
    """
    nfunc = _over_natives(func, ex)
    nargs, nkwargs = to_natives(args), to_natives(kwargs)
    if name == "vjp":
        res = _call(lambda: torch.func.vjp(nfunc, *nargs, **options))
        out, vjp_fn = res[0], res[1]
        wrapped_fn = functools.wraps(vjp_fn)(
            lambda *cts, **kw: to_tensors(_call(lambda: vjp_fn(*to_natives(cts), **kw)), ex))
        return (to_tensors(out, ex), wrapped_fn, *to_tensors(res[2:], ex))
    if name == "jvp":
        return to_tensors(_call(lambda: torch.func.jvp(nfunc, *nargs, **options)), ex)
    transformed = getattr(torch.func, name)(nfunc, **options)
    return to_tensors(_call(lambda: transformed(*nargs, **nkwargs)), ex)
