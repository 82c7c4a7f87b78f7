"""torch.masked's normalizations (softmax, log_softmax, softmin, normalize) composed from tdx ops.

The masked-out elements take -inf (softmax, log_softmax) or +inf (softmin) before the ordinary
tdx function runs, so they get probability 0 and a fully masked slice is NaN, as torch's;
``normalize`` divides the kept elements (masked-out ones become 0) by their norm. Must never
import a framework.
"""

from __future__ import annotations

import tdx as _t

from .masking import canonical_dim, combine, tensor_first
from .reductions import norm

__all__ = ["log_softmax", "normalize", "softmax", "softmin"]


def _functional():
    import tdx.nn.functional as F

    return F


@tensor_first
def softmax(input, dim, *, dtype=None, mask=None):  # noqa: A002 - torch's name
    """Softmax along ``dim`` over the kept elements (0 where masked out; NaN for a fully masked slice)."""
    dtype = input.dtype if dtype is None else dtype
    d = canonical_dim(dim, input.ndim)[0]
    return _functional().softmax(combine("amax", input, mask), d, dtype=dtype)


@tensor_first
def log_softmax(input, dim, *, dtype=None, mask=None):  # noqa: A002
    """Log-softmax along ``dim`` over the kept elements (-inf where masked out)."""
    dtype = input.dtype if dtype is None else dtype
    d = canonical_dim(dim, input.ndim)[0]
    return _functional().log_softmax(combine("amax", input, mask), d, dtype=dtype)


@tensor_first
def softmin(input, dim, *, dtype=None, mask=None):  # noqa: A002
    """Softmin along ``dim`` over the kept elements (0 where masked out)."""
    dtype = input.dtype if dtype is None else dtype
    d = canonical_dim(dim, input.ndim)[0]
    return _functional().softmin(combine("amin", input, mask), d, dtype=dtype)


@tensor_first
def normalize(input, ord, dim, *, eps=1e-12, dtype=None, mask=None):  # noqa: A002
    """The kept elements divided by their ``ord`` norm along ``dim`` (at least ``eps``); masked-out ones are 0."""
    dtype = input.dtype if dtype is None else dtype
    kept = combine("sum", input, mask)
    nrm = norm(input, ord, dim, keepdim=True, dtype=dtype, mask=mask)
    return _t.divide(kept, _t.maximum(nrm, _t.full((), eps, dtype=nrm.dtype, device=nrm.device)))
