"""The masking rules shared by :mod:`tdx.compat.masked`'s functions: dims, masks and identities.

torch.masked's canonical dims (sorted, all of them for None), canonical mask (broadcast to the
input, bool) and the identity each operation gives masked-out elements. Must never import a
framework.
"""

from __future__ import annotations

import tdx as _t

from ..._errors import OpDtypeError, TdxIndexError, TdxRuntimeError, TdxTypeError
from ..._tensor.tensor import Tensor

__all__ = ["canonical_dim", "combine", "identity", "input_mask", "promoted", "tensor_first"]

_PROMOTED = ("uint8", "bool", "int8", "int16", "int32")  # sum/prod of these default to int64, as torch's
_INT_RANGE = {"uint8": (0, 255), "int8": (-2 ** 7, 2 ** 7 - 1), "int16": (-2 ** 15, 2 ** 15 - 1),
              "int32": (-2 ** 31, 2 ** 31 - 1), "int64": (-2 ** 63, 2 ** 63 - 1)}


def promoted(dtype):
    """The default result dtype of a masked sum or product of ``dtype`` (int64 for small integers)."""
    return _t.int64 if _name(dtype) in _PROMOTED else dtype


def _name(dtype) -> str:
    return str(dtype).rsplit(".", 1)[-1]


def canonical_dim(dim, ndim: int) -> tuple:
    """torch.masked's sorted tuple of non-negative dims (all of them for ``None`` or ``()``).

    Raises:
        TdxRuntimeError: a dim appears twice.
        TdxIndexError: a dim is out of range.
    """
    if dim is None or dim == ():
        return tuple(range(ndim))
    ndim = max(ndim, 1)
    out = []
    for d in (dim,) if isinstance(dim, int) else dim:
        if d in out or d % ndim in out:
            raise TdxRuntimeError(f"dim={d} appears multiple times in the list of dims")
        if not -ndim <= d < ndim:
            raise TdxIndexError(f"Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}], "
                                f"but got {d})")
        out.append(d % ndim)
    return tuple(sorted(out))


def input_mask(input, mask):  # noqa: A002 - torch's name
    """``mask`` broadcast to ``input``'s shape, as bool (torch's canonical input mask).

    Raises:
        TdxTypeError: ``mask`` is not a tdx Tensor.
        TdxIndexError: ``mask`` has more dims than ``input``.
    """
    if not isinstance(mask, Tensor):
        raise TdxTypeError(f"mask must be a Tensor of bools broadcastable to the input, got {type(mask).__name__}")
    if tuple(mask.shape) != tuple(input.shape):
        if mask.ndim > input.ndim:
            raise TdxIndexError("_input_mask expected broadcastable mask (got mask dimensionality higher than of "
                                f"the input: {mask.ndim} > {input.ndim})")
        mask = _t.broadcast_to(mask, input.shape)
    return mask.to(_t.bool)


def identity(op: str, input, ord=2.0):  # noqa: A002
    """The value masked-out elements take for ``op`` (torch.masked's reduction identity).

    Raises:
        OpDtypeError: ``op`` has no identity for ``input``'s dtype (bool for max/min; torch's RuntimeError).
    """
    if op in ("sum", "norm"):
        return float("inf") if op == "norm" and ord == float("-inf") else 0
    if op == "prod":
        return 1
    lowest = op in ("amax", "logsumexp")
    if input.dtype.is_floating_point or input.dtype.is_complex:
        return float("-inf") if lowest else float("inf")
    rng = _INT_RANGE.get(_name(input.dtype))
    if rng is None:
        raise OpDtypeError(f"masked {op}: no identity for {input.dtype}; accepted: floating point and integer "
                         "(not bool) inputs")
    return rng[0] if lowest else rng[1]


def combine(op: str, input, mask, ord=2.0):  # noqa: A002
    """``input`` with the elements ``mask`` drops replaced by ``op``'s identity (``input`` when no mask)."""
    if not isinstance(input, Tensor):
        raise TdxTypeError(f"masked {op}(): input must be a Tensor, got {type(input).__name__}")
    if mask is None:
        return input
    fill = _t.full((), identity(op, input, ord), dtype=input.dtype, device=input.device)
    return _t.where(input_mask(input, mask), input, fill)


def tensor_first(fn):
    """``fn`` refusing a first argument that is not a tdx Tensor with a typed error naming it."""
    import functools

    @functools.wraps(fn)
    def checked(input, *args, **kwargs):  # noqa: A002 - torch's name
        if not isinstance(input, Tensor):
            raise TdxTypeError(f"masked.{fn.__name__}(): input must be a Tensor, got {type(input).__name__}")
        return fn(input, *args, **kwargs)

    return checked
