"""Searching sorted data and membership: ``searchsorted``, ``bucketize``, ``isin`` and
``unique_consecutive``, as ``torch.*`` functions and ``Tensor`` methods.

Executors with a kernel of torch's signature run it; elsewhere the composites here count
comparisons (a broadcast compare-and-sum, exact for every dtype, NaN ordered last as torch's
sort does). This module must never import a framework.
"""

from __future__ import annotations

from .. import _dtypes as D
from .._errors import TdxRuntimeError, TdxValueError
from .kernels import install
from .tensor import Tensor

__all__: list = []


def _rank(seq, v, right: bool):
    """How many of ``seq``'s last-dim elements sort before ``v`` (ties after with ``right``), NaN last."""
    s, x = seq.unsqueeze(-2), v.unsqueeze(-1)
    before = (s <= x) if right else (s < x)
    if seq.dtype.is_floating_point or v.dtype.is_floating_point:
        s_nan, x_nan = s.isnan(), x.isnan()
        before = (before & s_nan.logical_not()) | (x_nan & s_nan.logical_not())
        if right:
            before = before | (x_nan & s_nan)
    return before.sum(-1)


def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None, sorter=None):  # noqa: A002
    """Insertion indices of ``input`` into ``sorted_sequence`` along its last dim."""
    if side is not None:
        if side not in ("left", "right"):
            raise TdxRuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but got {side}")
        if right and side == "left":
            raise TdxRuntimeError("torch.searchsorted(): side and right can't be set to opposites, got side of "
                                  "left while right was True")
        right = side == "right"
    seq = sorted_sequence
    if sorter is not None:
        seq = seq.gather(-1, sorter)
    scalar = not isinstance(input, Tensor)
    v = seq.new_tensor(input) if scalar else input
    if seq.ndim > 1 and v.ndim and tuple(seq.shape[:-1]) != tuple(v.shape[:-1]):
        raise TdxRuntimeError(f"torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
                              f"dimensions of boundaries tensor and input value tensor must match, but we got "
                              f"boundaries tensor {list(seq.shape)} and input value tensor {list(v.shape)}")
    if seq.ndim <= 1:
        out = _rank(seq.reshape(-1), v.reshape(-1), right).reshape(v.shape)
    else:
        out = _rank(seq, v, right)
    return out.to(D.int32 if out_int32 else D.int64)


def bucketize(input, boundaries, *, out_int32=False, right=False):  # noqa: A002
    """The bucket of each element of ``input`` among 1-D ``boundaries``."""
    if boundaries.ndim != 1:
        raise TdxRuntimeError(f"bucketize(): boundaries tensor must be 1 dimension, but got dim({boundaries.ndim})")
    scalar = not isinstance(input, Tensor)
    v = boundaries.new_tensor(input) if scalar else input
    out = _rank(boundaries, v.reshape(-1), right).reshape(v.shape)
    return out.to(D.int32 if out_int32 else D.int64)


def isin(elements, test_elements, *, assume_unique=False, invert=False):
    """Whether each of ``elements`` is among ``test_elements`` (either may be a scalar)."""
    if not isinstance(elements, Tensor):
        elements = test_elements.new_tensor(elements)
    if not isinstance(test_elements, Tensor):
        test_elements = elements.new_tensor(test_elements)
    hit = (elements.unsqueeze(-1) == test_elements.reshape(-1)).any(-1) if test_elements.numel() else \
        elements.new_zeros(elements.shape, dtype=D.bool_)
    return hit.logical_not() if invert else hit


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):  # noqa: A002
    """Values with consecutive repeats removed (along ``dim``, or flattened)."""
    if dim is not None:
        raise TdxValueError("unique_consecutive(dim=...) is not supported on this executor; flatten first")
    x = input.reshape(-1)
    n = x.numel()
    if n == 0:
        vals, inv, counts = x, input.new_zeros(input.shape, dtype=D.int64), x.new_zeros((0,), dtype=D.int64)
    else:
        start = (x[1:] != x[:-1]).to(D.int64)
        group = _cat0(x.new_zeros((1,), dtype=D.int64), start.cumsum(0))
        first = _cat0(x.new_ones((1,), dtype=D.bool_), start.to(D.bool_))
        vals = x[first]
        inv = group.reshape(input.shape)
        counts = x.new_zeros((vals.numel(),), dtype=D.int64).scatter_add(0, group, x.new_ones((n,), dtype=D.int64))
    out = [vals]
    if return_inverse:
        out.append(inv)
    if return_counts:
        out.append(counts)
    return out[0] if len(out) == 1 else tuple(out)


def _cat0(a, b):
    from .shape import cat

    return cat([a, b])


_TABLE = {
    "searchsorted": (searchsorted, searchsorted.__doc__), "bucketize": (bucketize, bucketize.__doc__),
    "isin": (isin, isin.__doc__), "unique_consecutive": (unique_consecutive, unique_consecutive.__doc__),
}
install(globals(), __all__, _TABLE, methods=("unique_consecutive",))
