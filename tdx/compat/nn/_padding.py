"""The non-constant modes of ``tdx.nn.functional.pad``: ``reflect``, ``replicate`` and ``circular``.

On an executor with torch's kernels the call is torch's own ``pad``; elsewhere each padded
dim is one ``index_select`` with the source index of every output position (differentiable on
every executor: the gradient of a padded element flows back to the element it copies).
This module must never import torch or mlx.
"""

from __future__ import annotations

import numpy as np

import tdx
from ..._errors import TdxNotImplementedError, TdxRuntimeError
from . import _kernels

__all__ = ["pad_mode"]

_MODES = ("reflect", "replicate", "circular")


def _source(mode: str, left: int, n: int, right: int):
    """The source index of every output position ``-left .. n + right - 1`` of one padded dim (int64)."""
    p = np.arange(-left, n + right, dtype=np.int64)
    if mode == "reflect":
        return np.where(p < 0, -p, np.where(p >= n, 2 * (n - 1) - p, p))
    if mode == "replicate":
        return np.clip(p, 0, n - 1)
    return p % n


def pad_mode(x, amounts: list, mode: str, value):
    """``pad(x, amounts, mode)`` for ``mode`` in reflect, replicate, circular (``amounts`` already a list of ints).

    Raises:
        TdxRuntimeError: a ``value`` is given, a reflect pad not smaller than its dim, a circular pad
            wrapping more than once, or an empty dim.
        TdxNotImplementedError: the pad length and the input's dims are not one of torch's combinations
            (2 for 2-D/3-D input, 4 for 3-D/4-D, 6 for 4-D/5-D).
    """
    if value is not None and value != 0:
        raise TdxRuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument (got value={value!r})')
    k = len(amounts) // 2
    if k not in (1, 2, 3) or x.ndim not in (k + 1, k + 2):
        raise TdxNotImplementedError(
            f"Padding size {len(amounts)} is not supported for {x.ndim}D input tensor.\nSupported combinations for "
            "non-constant padding:\n  - 2D or 3D input: padding size = 2 (pads last dimension)\n  - 3D or 4D input: "
            "padding size = 4 (pads last 2 dimensions)\n  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")
    done = _kernels.native("pad", x, tuple(amounts), mode)
    if done is not _kernels.NOT_NATIVE:
        return done
    out = list(x.shape)
    for i in range(k):
        d, left, right = x.ndim - 1 - i, amounts[2 * i], amounts[2 * i + 1]
        n = x.shape[d]
        out[d] = n + left + right
        if mode == "reflect" and (left >= n or right >= n):
            raise TdxRuntimeError(f"Argument #4: Padding size should be less than the corresponding input dimension, "
                                  f"but got: padding ({left}, {right}) at dimension {d} of input {list(x.shape)}")
        if mode == "circular" and (left > n or right > n):
            raise TdxRuntimeError(f"Padding value causes wrapping around more than once (padding ({left}, {right}) "
                                  f"at dimension {d} of input {list(x.shape)}).")
        if n == 0 or n + left + right < 0:
            raise TdxRuntimeError(f"{mode} padding of dimension {d}: input size {n} with padding ({left}, {right}) "
                                  "gives no valid output")
    tdx.empty(tuple(out), dtype=x.dtype, device=x.device)  # a result too large is refused before any index is made
    for i in range(k):
        d, left, right = x.ndim - 1 - i, amounts[2 * i], amounts[2 * i + 1]
        n = x.shape[d]
        if mode == "circular" and (left < 0 or right < 0):  # torch crops first, then wraps within what is left
            x = x.narrow(d, max(-left, 0), n + min(left, 0) + min(right, 0))
            n, left, right = x.shape[d], max(left, 0), max(right, 0)
        x = x.index_select(d, tdx.tensor(_source(mode, left, n, right), dtype=tdx.int64, device=x.device))
    return x
