"""MLX shape ops with torch's semantics: reshape, transpose, expand, split and the views' layouts.

Every op names its stream (``self.s``), follows torch's promotion and checks, and raises typed errors.
Must never import torch or the facade.
"""

from __future__ import annotations

import functools
import math

import mlx.core as mx
import numpy as np

from ... import _dtypes as D
from ..._errors import ShapeError
from ..base import norm_dim
from ._memory import _INT32_MAX, check_dims
from ._value_bounds import KNOWN, carry as carry_bounds, carry_all as carry_all_bounds


@functools.lru_cache(maxsize=1024)
def _permutation(dims: tuple, ndim: int) -> tuple:
    """``dims`` made non-negative, checked to be a permutation of ``ndim`` dims (as torch's ``permute``).

    Raises:
        TdxIndexError: a dim is out of range.
        ShapeError: ``dims`` is not a permutation.
    """
    key = (dims, ndim)
    out = _PERMUTATIONS.get(key)
    if out is None:
        out = [norm_dim(d, ndim) for d in dims]
        if sorted(out) != list(range(ndim)):
            raise ShapeError(f"permute(): dims {list(out)} are not a permutation of the {ndim} dims of the input")
        if len(_PERMUTATIONS) >= 4096:  # a bound, not a policy: programs use a handful
            _PERMUTATIONS.clear()
        out = _PERMUTATIONS[key] = tuple(out)
    return out


_PERMUTATIONS: dict = {}  # (dims as given, ndim) -> the checked non-negative permutation: the per-op path
_SHAPE_PRODUCTS: dict = {}  # a requested shape -> _shape_product's answer: reshape's per-op check, one lookup


def _shape_product(shape: tuple) -> int:
    """What ``reshape`` needs to know of a requested ``shape`` at once: the product of its dims when all are
    positive; minus the product of the others when one is -1 and the others are positive; else 0 (a shape
    for the checked path: zeros, other negatives, several -1, ints too large for MLX). Kept per shape."""
    p, inferred = 1, False
    for d in shape:
        if d.__class__ is not int or d > _INT32_MAX:
            p = 0
            break
        if d == -1 and not inferred:
            inferred = True
        elif d > 0:
            p *= d
        else:
            p = 0
            break
    p = -p if inferred else p
    if p > _INT32_MAX or p < -_INT32_MAX:  # no array that fits can match it
        p = 0
    if len(_SHAPE_PRODUCTS) >= 4096:  # a bound, not a policy: programs use a handful
        _SHAPE_PRODUCTS.clear()
    _SHAPE_PRODUCTS[shape] = p
    return p


class MLXShapeOps:
    """MLX shape ops with torch's semantics: reshape, transpose, expand, split and the views' layouts."""

    __slots__ = ()

    # shapes ---------------------------------------------------------------------------
    def reshape(self, x, shape):
        if shape.__class__ is not tuple:
            shape = tuple(shape)
        # the common cases: positive dims (MLX's own check, that their product is the size, is torch's), or one
        # -1 beside positive dims whose product divides a size 0 < size <= INT32_MAX
        p = _SHAPE_PRODUCTS.get(shape)
        if p is None:
            p = _shape_product(shape)
        if p > 0:
            try:
                out = mx.reshape(x, shape, stream=self._stream or self.s)
            except ValueError:  # another size: torch's error below
                out = None
            if out is not None:
                return carry_bounds(x, out) if KNOWN and id(x) in KNOWN else out
        size = x.size
        # mutate: equivalent (the -1 case's divisibility: MLX refuses a -1 it cannot fill)
        if p < 0 and not size % p and 0 < size <= _INT32_MAX:
            out = mx.reshape(x, shape, stream=self._stream or self.s)
            return carry_bounds(x, out) if KNOWN and id(x) in KNOWN else out
        if shape and max(shape) > _INT32_MAX:
            check_dims(shape, "reshape")
        if shape and min(shape) < -1:
            at = next(i for i, s in enumerate(shape) if s < -1)
            raise ShapeError(f"invalid shape dimension {shape[at]} at index {at} of shape {list(shape)}")
        if -1 not in shape and math.prod(shape) == size:
            return carry_bounds(x, mx.reshape(x, shape, stream=self.s))
        known = math.prod(s for s in shape if s != -1)
        if shape.count(-1) > 1:
            raise ShapeError("only one dimension can be inferred")
        if (-1 in shape and (known == 0 or x.size % known)) or (-1 not in shape and known != x.size):
            raise ShapeError(f"shape '{list(shape)}' is invalid for input of size {x.size}")
        if -1 in shape:
            shape = tuple(x.size // known if s == -1 else s for s in shape)
        return carry_bounds(x, mx.reshape(x, shape, stream=self.s))

    view = reshape

    def permute(self, x, dims):
        out = mx.transpose(x, _permutation(tuple(dims), x.ndim), stream=self._stream or self.s)
        return carry_bounds(x, out) if KNOWN and id(x) in KNOWN else out

    def transpose(self, x, dim0, dim1):
        n = x.ndim
        if n >= 2 and -n <= dim0 < n and -n <= dim1 < n:  # norm_dim's checks, inlined for the per-op path
            out = mx.swapaxes(x, dim0 % n, dim1 % n, stream=self._stream or self.s)
            return carry_bounds(x, out) if KNOWN and id(x) in KNOWN else out
        if x.ndim < 2:
            norm_dim(dim0, x.ndim), norm_dim(dim1, x.ndim)
            return x
        return carry_bounds(x, mx.swapaxes(x, norm_dim(dim0, x.ndim), norm_dim(dim1, x.ndim), stream=self.s))

    def unsqueeze(self, x, dim):
        n = x.ndim + 1
        if dim.__class__ is not int or not -n <= dim < n:  # norm_dim's checks, inlined for the per-op path
            dim = norm_dim(dim, n)
        out = mx.expand_dims(x, dim % n, stream=self._stream or self.s)
        return carry_bounds(x, out) if KNOWN and id(x) in KNOWN else out

    def squeeze(self, x, dim=None):
        if dim is None:
            axes = [i for i, s in enumerate(x.shape) if s == 1]
        else:
            dims = [dim] if isinstance(dim, int) else list(dim)
            axes = [d for d in (norm_dim(d, x.ndim) for d in dims) if x.ndim and x.shape[d] == 1]
        return carry_bounds(x, mx.squeeze(x, axes, stream=self.s)) if axes else x

    def flatten(self, x, start_dim=0, end_dim=-1):
        if x.ndim == 0:
            return carry_bounds(x, mx.reshape(x, (1,), stream=self.s))
        a, b = norm_dim(start_dim, x.ndim), norm_dim(end_dim, x.ndim)
        if a > b:
            raise ShapeError("flatten() has invalid args: start_dim cannot come after end_dim")
        shape = [*x.shape[:a], math.prod(x.shape[a:b + 1]), *x.shape[b + 1:]]
        return carry_bounds(x, mx.reshape(x, shape, stream=self.s))

    def expand(self, x, shape):
        shape = list(shape)
        if max(shape, default=0) > _INT32_MAX:
            check_dims(shape, "expand")
        if len(shape) < x.ndim:
            raise ShapeError(f"expand: the number of sizes provided ({len(shape)}) must be greater or "
                             f"equal to the number of dimensions in the tensor ({x.ndim})")
        lead = len(shape) - x.ndim
        for i, have in enumerate(x.shape):
            want = shape[lead + i]
            if want == -1:
                shape[lead + i] = have
            elif have != 1 and want != have:
                raise ShapeError(f"The expanded size of the tensor ({want}) must match the existing size "
                                 f"({have}) at non-singleton dimension {lead + i}.  Target sizes: "
                                 f"{list(shape)}.  Tensor sizes: {list(x.shape)}")
        if any(s < 0 for s in shape):
            raise ShapeError(f"expand: -1 is not allowed in a leading, non-existing dimension: {shape}")
        return carry_bounds(x, mx.broadcast_to(x, shape, stream=self.s))

    def contiguous(self, x):
        return x

    def _same_dtype(self, xs):
        rt = D.result_type([self._tdx(x) for x in xs])
        return [self._cast(x, rt) for x in xs]

    def cat(self, xs, dim=0):
        # plain loops, no generator: the per-token path of a KV cache growing by cat
        first = xs[0].dtype
        for x in xs:
            if x.dtype != first or x.size == 0 and x.ndim == 1:  # to promote, or a legacy empty input to drop
                xs = self._same_dtype(xs)  # before dropping empty 1-D inputs: they still promote
                xs = [x for x in xs if not (x.ndim == 1 and x.size == 0)] or xs[:1]
                break
        n = xs[0].ndim
        d = dim % n if dim.__class__ is int and -n <= dim < n else norm_dim(dim, n)  # norm_dim's, inlined
        try:
            out = mx.concatenate(xs, axis=d, stream=self._stream or self.s)
        except (ValueError, IndexError):  # MLX checks what torch checks (a rank of 1 or more, the same for all, and
            # equal sizes but at d); the error in torch's words
            _check_cat_shapes(xs, d)
            raise
        return carry_all_bounds(xs, out) if KNOWN and id(xs[0]) in KNOWN else out  # the union needs every input's

    def stack(self, xs, dim=0):
        ref = xs[0]
        for i, x in enumerate(xs):
            if x.shape != ref.shape:
                raise ShapeError(f"stack expects each tensor to be equal size, but got {list(ref.shape)} "
                                 f"at entry 0 and {list(x.shape)} at entry {i}")
        xs = self._same_dtype(xs)
        return carry_all_bounds(xs, mx.stack(xs, axis=norm_dim(dim, ref.ndim + 1), stream=self.s))

    def split(self, x, sizes, dim=0):
        d = norm_dim(dim, x.ndim)
        if sum(sizes) != x.shape[d]:
            raise ShapeError(f"split_with_sizes expects split_sizes to sum exactly to {x.shape[d]} "
                             f"(input tensor's size at dimension {d}), but got split_sizes={list(sizes)}")
        cuts = list(np.cumsum(sizes)[:-1])
        return tuple(mx.split(x, [int(c) for c in cuts], axis=d, stream=self.s)) if cuts else (x,)


def _check_cat_shapes(xs, d: int) -> None:
    """Raise torch's error for the first input that is 0-d, or whose rank or sizes (but at ``d``) differ from the
    first input's."""
    ref = xs[0].shape
    for i, x in enumerate(xs):
        s = x.shape
        if not s:
            raise ShapeError(f"zero-dimensional tensor (at position {i}) cannot be concatenated")
        if len(s) != len(ref) or s[:d] != ref[:d] or s[d + 1:] != ref[d + 1:]:
            raise ShapeError(f"Sizes of tensors must match except in dimension {d}. Expected "
                             f"{list(ref)} but got {list(s)} for tensor number {i} in the list.")
