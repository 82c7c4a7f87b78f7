"""torch.masked's reductions (sum, prod, cumsum, cumprod, amax, amin, argmax, argmin, mean, median,
logsumexp, logaddexp, norm, var, std) composed from tdx ops.

Masked-out elements take the operation's identity (:mod:`.masking`) before the ordinary tdx
reduction runs, so fully masked slices give torch's values (0, 1, -inf/+inf, NaN for mean, var and
median) and gradients reach only the kept elements. Must never import a framework.
"""

from __future__ import annotations

import tdx as _t

from ..._errors import OpDtypeError, TdxRuntimeError, TdxValueError
from .masking import canonical_dim, combine, input_mask, promoted, tensor_first

__all__ = ["amax", "amin", "argmax", "argmin", "cumprod", "cumsum", "logaddexp", "logsumexp", "mean", "median",
           "norm", "prod", "std", "sum", "var"]


def _reduce_dims(dims, ndim):
    """``dims`` as the reducing ops take them (None for every dim of a tensor)."""
    return None if dims == tuple(range(ndim)) else dims


@tensor_first
def sum(input, dim=None, *, keepdim=False, dtype=None, mask=None):  # noqa: A001, A002 - torch's names
    """Sum of the kept elements over ``dim`` (0 for a fully masked slice); small ints sum as int64."""
    if dtype is None:
        dtype = promoted(input.dtype)
    dims = canonical_dim(dim, input.ndim)
    return _t.sum(combine("sum", input, mask), _reduce_dims(dims, input.ndim), bool(keepdim), dtype=dtype)


@tensor_first
def prod(input, dim=None, *, keepdim=False, dtype=None, mask=None):  # noqa: A002
    """Product of the kept elements over ``dim`` (1 for a fully masked slice); small ints as int64."""
    if dtype is None:
        dtype = promoted(input.dtype)
    dims = canonical_dim(dim, input.ndim)
    out = combine("prod", input, mask).to(dtype)
    for d in reversed(dims):
        out = out.prod(dim=d, keepdim=bool(keepdim))
    return out


def _no_bool_scan(op, dtype):
    if dtype is bool or dtype == _t.bool:  # torch's cumsum/cumprod have no bool kernel
        raise OpDtypeError(f'"{op}_out_cpu" not implemented for \'Bool\'; accepted: numeric dtypes')


@tensor_first
def cumsum(input, dim, *, dtype=None, mask=None):  # noqa: A002
    """Cumulative sum along ``dim`` where masked-out elements count as 0.

    Raises:
        OpDtypeError: the result dtype is bool (torch's RuntimeError).
    """
    dtype = input.dtype if dtype is None else dtype
    _no_bool_scan("cumsum", dtype)
    d = canonical_dim(dim, input.ndim)[0]
    return _t.cumsum(combine("sum", input, mask), d, dtype=dtype).to(dtype)


@tensor_first
def cumprod(input, dim, *, dtype=None, mask=None):  # noqa: A002
    """Cumulative product along ``dim`` where masked-out elements count as 1.

    Raises:
        OpDtypeError: the result dtype is bool (torch's RuntimeError).
    """
    dtype = input.dtype if dtype is None else dtype
    _no_bool_scan("cumprod", dtype)
    d = canonical_dim(dim, input.ndim)[0]
    return _t.cumprod(combine("prod", input, mask), d, dtype=dtype).to(dtype)


@tensor_first
def amax(input, dim=None, *, keepdim=False, dtype=None, mask=None):  # noqa: A002
    """Maximum of the kept elements over ``dim`` (-inf, or the dtype's minimum, when fully masked)."""
    dtype = input.dtype if dtype is None else dtype
    dims = canonical_dim(dim, input.ndim)
    return _t.amax(combine("amax", input, mask), dims, bool(keepdim)).to(dtype)


@tensor_first
def amin(input, dim=None, *, keepdim=False, dtype=None, mask=None):  # noqa: A002
    """Minimum of the kept elements over ``dim`` (+inf, or the dtype's maximum, when fully masked)."""
    dtype = input.dtype if dtype is None else dtype
    dims = canonical_dim(dim, input.ndim)
    return _t.amin(combine("amin", input, mask), dims, bool(keepdim)).to(dtype)


@tensor_first
def argmax(input, dim=None, *, keepdim=False, dtype=None, mask=None):  # noqa: A002
    """Index of the maximum kept element along ``dim``, in ``dtype`` (``input``'s dtype by default, as torch)."""
    dtype = input.dtype if dtype is None else dtype
    return _t.argmax(combine("amax", input, mask), dim, bool(keepdim)).to(dtype)


@tensor_first
def argmin(input, dim=None, *, keepdim=False, dtype=None, mask=None):  # noqa: A002
    """Index of the minimum kept element along ``dim``, in ``dtype`` (``input``'s dtype by default, as torch)."""
    dtype = input.dtype if dtype is None else dtype
    return _t.argmin(combine("amin", input, mask), dim, bool(keepdim)).to(dtype)


def _count(input, dim, keepdim, mask):
    if mask is None:
        return sum(_t.ones(tuple(input.shape), dtype=_t.int64, device=input.device), dim, keepdim=keepdim)
    return input_mask(input, mask).sum(dim=dim, keepdim=bool(keepdim))


@tensor_first
def mean(input, dim=None, *, keepdim=False, dtype=None, mask=None):  # noqa: A002
    """Mean of the kept elements over ``dim`` (NaN for a fully masked slice).

    Raises:
        TdxValueError: the result dtype is neither floating point nor complex.
    """
    source = "Optional" if dtype is not None else "Input"
    dtype = input.dtype if dtype is None else dtype
    if not (dtype.is_floating_point or dtype.is_complex):
        raise TdxValueError(f"mean(): Could not infer output dtype. {source} dtype must be either a floating point "
                            f"or complex dtype. Got: {dtype}")
    count = _count(input, dim, keepdim, mask)
    return sum(input, dim, keepdim=keepdim, dtype=dtype, mask=mask) / count


@tensor_first
def median(input, dim=-1, *, keepdim=False, dtype=None, mask=None):  # noqa: A002
    """Lower median of the kept, non-NaN elements along ``dim`` (NaN for a fully masked slice).

    Raises:
        TdxValueError: an integer input has a fully masked slice (its median has no integer value).
    """
    dtype = input.dtype if dtype is None else dtype
    d = canonical_dim(dim, input.ndim)[0]
    is_float = input.dtype.is_floating_point
    x = input if is_float else input.to(_t.float32)
    keep = ~_t.isnan(x) if mask is None else input_mask(x, mask) & ~_t.isnan(x)
    if x.ndim == 0:
        out = _t.where(keep, x, _t.full((), float("nan"), dtype=x.dtype, device=x.device))
    else:
        inf = _t.full((), float("inf"), dtype=x.dtype, device=x.device)
        ordered = _t.sort(_t.where(keep, x, inf), d).values
        count = keep.sum(dim=d, keepdim=True)
        pos = _t.clamp((count - 1) // 2, min=0)
        out = _t.gather(ordered, d, pos)
        out = _t.where(count > 0, out, _t.full((), float("nan"), dtype=x.dtype, device=x.device))
        if not keepdim:
            out = out.squeeze(d)
    if is_float:
        return out
    if bool(_t.isnan(out).any()):
        raise TdxValueError("masked median expects no fully masked out rows if dtype is not floating point")
    return out.to(dtype)


@tensor_first
def logsumexp(input, dim=None, *, keepdim=False, dtype=None, mask=None):  # noqa: A002
    """``log(sum(exp(x)))`` of the kept elements over ``dim`` (-inf for a fully masked slice)."""
    dtype = input.dtype if dtype is None else dtype
    dims = canonical_dim(dim, input.ndim)
    return _t.logsumexp(combine("logsumexp", input, mask), dims, keepdim=bool(keepdim)).to(dtype)


@tensor_first
def logaddexp(input, other, *, dtype=None, input_mask=None, other_mask=None):  # noqa: A002
    """``log(exp(input) + exp(other))`` with each operand's masked-out elements as -inf."""
    dtype = input.dtype if dtype is None else dtype
    return _t.logaddexp(combine("amax", input, input_mask), combine("amax", other, other_mask)).to(dtype)


@tensor_first
def norm(input, ord=2.0, dim=None, *, keepdim=False, dtype=None, mask=None):  # noqa: A002
    """The ``ord`` vector norm of the kept elements over ``dim`` (0 for a fully masked slice)."""
    import tdx.linalg as _linalg

    dtype = input.dtype if dtype is None else dtype
    dims = canonical_dim(dim, input.ndim)
    return _linalg.vector_norm(combine("norm", input, mask, ord), ord, dims, bool(keepdim), dtype=dtype)


def _std_var(input, dim, unbiased, correction, keepdim, dtype, mask, take_sqrt):  # noqa: A002
    if unbiased is not None and correction is not None:
        raise TdxRuntimeError("masked std/var: only one of unbiased and correction may be given")
    corr = 1.0 if unbiased is None else (1.0 if unbiased else 0.0)
    if correction is not None:
        corr = float(correction)
    if dtype is None:
        dtype = input.dtype if input.dtype.is_floating_point or input.dtype.is_complex else _t.float32
    compute = dtype if dtype.is_floating_point or dtype.is_complex else _t.float32
    count = _count(input, dim, True, mask)
    total = sum(input, dim, keepdim=True, dtype=dtype, mask=mask)
    x = input - total / count
    out = sum(x * x.conj(), dim, keepdim=keepdim, dtype=compute, mask=mask)
    if not keepdim:
        count = count.reshape(tuple(out.shape))
    if corr != 0:
        count = _t.clamp(count.to(out.real.dtype if compute.is_complex else compute) - corr, min=0)
    out = (out / count).to(dtype)
    return out.sqrt() if take_sqrt else out


@tensor_first
def var(input, dim=None, unbiased=None, *, correction=None, keepdim=False, dtype=None, mask=None):  # noqa: A002
    """Variance of the kept elements over ``dim`` (divisor ``count - correction``, at least 0)."""
    return _std_var(input, dim, unbiased, correction, keepdim, dtype, mask, False)


@tensor_first
def std(input, dim=None, unbiased=None, *, correction=None, keepdim=False, dtype=None, mask=None):  # noqa: A002
    """Standard deviation of the kept elements over ``dim`` (divisor ``count - correction``, at least 0)."""
    return _std_var(input, dim, unbiased, correction, keepdim, dtype, mask, True)
