"""Argument checks of ``tdx.func``'s transforms, with torch's messages, shared by every executor.

The checks run before any transform does, so a bad ``in_dims`` or ``argnums`` raises the same
typed error (``TdxValueError``/``TdxRuntimeError``, also the builtin torch raises) whatever
executor the tensors live on. Must never import a framework.
"""

from __future__ import annotations

from ..._errors import TdxRuntimeError, TdxValueError
from ._trees import broadcast_prefix, describe, flatten

__all__ = ["fn_name", "batch_dims", "check_randomness", "check_chunk_size", "check_out_dims", "argnums_tuple",
           "executor_of"]


def fn_name(func) -> str:
    """The name torch's messages give ``func``."""
    return getattr(func, "__name__", None) or repr(func)


def _is_dim(d) -> bool:
    return d is None or (isinstance(d, int) and not isinstance(d, bool))


def batch_dims(func, in_dims, args):
    """Per leaf of ``args``: its mapped dimension (normalized to be non-negative) or None, and the batch size.

    Returns:
        ``(dims, size)``.

    Raises:
        TdxValueError: ``in_dims`` is not an int or a tuple matching ``args``, a dimension is out of a
            tensor's range or given for a non-tensor, no input is mapped, or mapped sizes differ.
    """
    from ..._tensor.wrapping import Tensor

    where = f"vmap({fn_name(func)}, in_dims={in_dims}, ...)(<inputs>)"
    if not args:
        raise TdxValueError(f"vmap({fn_name(func)})(<inputs>): got no inputs. Maybe you forgot to add inputs, or you "
                            "are trying to vmap over a function with no inputs. The latter is unsupported.")
    if not ((isinstance(in_dims, int) and not isinstance(in_dims, bool)) or isinstance(in_dims, tuple)):
        raise TdxValueError(f"{where}: expected `in_dims` to be int or a (potentially nested) tuple matching the "
                            f"structure of inputs, got: {type(in_dims)}.")
    leaves, spec = flatten(args)
    if isinstance(in_dims, int):
        dims = [in_dims] * len(leaves)
    else:
        dims = broadcast_prefix(in_dims, args, lambda v: not isinstance(v, (tuple, list, dict))) \
            if len(in_dims) == len(args) else None
        if dims is None:
            raise TdxValueError(f"{where}: in_dims is not compatible with the structure of `inputs`. in_dims has "
                                f"structure {describe(flatten(in_dims)[1])} but inputs has structure "
                                f"{describe(spec)}.")
    out, sizes = [], []
    for d, a in zip(dims, leaves):
        if not _is_dim(d):
            raise TdxValueError(f"{where}: Got in_dim={d} for an input but in_dim must be either an integer dimension "
                                "or None.")
        if d is not None and not isinstance(a, Tensor):
            raise TdxValueError(f"{where}: Got in_dim={d} for an input but the input is of type {type(a)}. We cannot "
                                "vmap over non-Tensor arguments, please use None as the respective in_dim")
        if d is not None:
            n = a.dim()
            if not -n <= d < n:
                raise TdxValueError(f"{where}: Got in_dim={d} for some input, but that input is a Tensor of "
                                    f"dimensionality {n} so expected in_dim to satisfy -{n} <= in_dim < {n}.")
            d %= n
            sizes.append(a.shape[d])
        out.append(d)
    if not sizes:
        raise TdxValueError(f"{where}: at least one input must be mapped over: in_dims is None for every input, "
                            "and vmap needs a Tensor input with a mapped dimension")
    if len(set(sizes)) > 1:
        raise TdxValueError(f"vmap: Expected all tensors to have the same size in the mapped dimension, got sizes "
                            f"{sizes} for the mapped dimension")
    return out, sizes[0]


def check_randomness(randomness) -> None:
    """Raises TdxRuntimeError unless ``randomness`` is one of torch's three modes."""
    if randomness not in ("error", "different", "same"):
        raise TdxRuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. "
                              f"Got {randomness}")


def check_chunk_size(chunk_size) -> None:
    """Raises TdxValueError unless ``chunk_size`` is None or a positive int."""
    if chunk_size is not None and (not isinstance(chunk_size, int) or isinstance(chunk_size, bool)
                                   or chunk_size <= 0):
        raise TdxValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")


def check_out_dims(func, out_dims) -> None:
    """Raises TdxValueError unless ``out_dims`` is an int, None or a container of them."""
    leaves, _ = flatten(out_dims)
    if not all(_is_dim(d) for d in leaves):
        raise TdxValueError(f"vmap({fn_name(func)}, ..., out_dims={out_dims}): `out_dims` must be an int, None or a "
                            "python collection of ints representing where in the outputs the vmapped dimension "
                            "should appear.")


def argnums_tuple(argnums, nargs: int) -> tuple:
    """``argnums`` as a tuple of non-negative positions into ``nargs`` positional arguments.

    Raises:
        TdxRuntimeError: ``argnums`` is not an int or a non-empty tuple of distinct ints in range.
    """
    many = isinstance(argnums, tuple)
    items = argnums if many else (argnums,)
    for a in items:
        if not isinstance(a, int) or isinstance(a, bool):
            raise TdxRuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(a)}")
    if many and not items:
        raise TdxRuntimeError("argnums must be non-empty")
    if many and len(set(items)) != len(items):
        raise TdxRuntimeError(f"argnums elements must be unique, got {argnums}")
    out = []
    for a in items:
        if not -nargs <= a < nargs:
            raise TdxRuntimeError(f"Got argnum={a}, but only {nargs} positional inputs")
        out.append(a % nargs)
    return tuple(out)


def executor_of(tree, what: str):
    """The executor of the first tdx Tensor in ``tree``.

    Raises:
        TdxValueError: ``tree`` holds no tdx Tensor.
    """
    from ..._tensor.wrapping import Tensor

    for leaf in flatten(tree)[0]:
        if isinstance(leaf, Tensor):
            return leaf._ex
    found = ", ".join(sorted({type(x).__name__ for x in flatten(tree)[0]})) or "nothing"
    raise TdxValueError(f"{what}: Thing passed to transform API must be Tensor, got {found}")
