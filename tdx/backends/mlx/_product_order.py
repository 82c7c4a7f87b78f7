"""float16/bfloat16 products on MLX's CPU multiplied in the order torch's x86 CPU kernel multiplies them,
so that ``prod`` of half-precision values gives torch's result bit for bit.

Why: a half-precision product is rounded to half after every multiplication (torch's CPU kernel and
MLX's both do), so its value depends on the order of the multiplications; MLX's ``prod`` takes another
order than torch's and lands up to a percent away on a few hundred values. The order reproduced here,
measured against torch 2.13 on x86-64 (AVX2 and the default capability, both 16 half lanes):

* a reduction over the innermost dimension (or over every element of a tensor, read as one row): the
  row is read as vectors of 16 in groups of 4 (4 accumulators); each accumulator multiplies its
  vectors in turn; the accumulators are combined as ``(a0 * a1) * (a2 * a3)``; the 16 lanes of that
  are multiplied left to right, then the scalar tail. A row shorter than 64 is multiplied left to right.
* a reduction over any other dimension runs down it: each result multiplies its values left to right.

MLX's CPU scan (``cumprod``) multiplies left to right, rounding each step, so each level is a scan.
Reductions larger than aten's grain (32768 elements, where torch may split the work between threads)
keep MLX's own order. Must never import torch or the facade; used only by the MLX executor on CPU
streams while this order is in force (``_torch_order.in_force("prod")``: the config's summation switch, and
verified against torch's kernels on the running CPU).
"""

from __future__ import annotations

import mlx.core as mx

LANES = 16  # half values per vector in torch's CPU product kernel
GRAIN = 32768  # aten's GRAIN_SIZE: larger reductions may be split between threads (another order)


def applies(x, dim) -> bool:
    """Whether :func:`prod` reproduces torch's order for ``x`` reduced over ``dim`` (None or one int)."""
    return 0 < x.size <= GRAIN and (dim is None or isinstance(dim, int))


def _last(x, axis: int, s):
    """The left-to-right product of ``x`` along ``axis`` (the last value of MLX's sequential scan)."""
    return mx.take(mx.cumprod(x, axis=axis, stream=s), x.shape[axis] - 1, axis=axis, stream=s)


def prod(x, dim, keepdim: bool, s):
    """The product of the half-precision ``x`` over ``dim`` (None: every element) in torch's order."""
    shape = x.shape
    if dim is None:
        out = prod(mx.reshape(x, (-1,), stream=s), 0, False, s)
        return mx.reshape(out, (1,) * len(shape), stream=s) if keepdim else out
    axis = dim % max(x.ndim, 1)
    if x.ndim == 0:
        return x
    if any(d != 1 for d in shape[axis + 1:]):  # an outer dimension: each result runs down it
        out = _last(x, axis, s)
    else:  # innermost (what follows is all ones): torch's vectorized row
        row = x if axis == x.ndim - 1 else mx.moveaxis(x, axis, -1, stream=s)
        n = row.shape[-1]
        step = 4 * LANES
        k = n // step
        if k:
            head = mx.reshape(row[..., : k * step], (*row.shape[:-1], k, 4, LANES), stream=s)
            acc = _last(head, head.ndim - 3, s)
            lanes = mx.multiply(mx.multiply(acc[..., 0, :], acc[..., 1, :], stream=s),
                                mx.multiply(acc[..., 2, :], acc[..., 3, :], stream=s), stream=s)
            row = mx.concatenate([lanes, row[..., k * step:]], axis=-1, stream=s)
        out = _last(row, row.ndim - 1, s)
    return mx.expand_dims(out, axis, stream=s) if keepdim else out
