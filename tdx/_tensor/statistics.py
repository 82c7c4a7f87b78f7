"""Order statistics, moments and histograms: ``median``/``nanmedian``, ``quantile``/``nanquantile``,
``kthvalue``, ``mode``, ``var_mean``/``std_mean``, ``bincount``, ``histc``, ``histogram``, ``cov`` and
``corrcoef``, as ``torch.*`` functions and ``Tensor`` methods.

Executors with a kernel of torch's signature run it (torch's own); elsewhere the composites
here, written with tdx ops (sorting, gathers, scatter-adds), compute torch's result: its tie and
NaN rules, result dtypes and shapes. This module must never import a framework.
"""

from __future__ import annotations

from .. import _dtypes as D, return_types
from .._errors import TdxIndexError, TdxRuntimeError, TdxValueError
from ..backends.base import norm_dim
from .kernels import install
from .tensor import Tensor

__all__: list = []


def _dim_last(x, dim):
    """``x`` flattened (dim None) or with ``dim`` moved last; the normalized dim (or None)."""
    if dim is None:
        return x.reshape(-1), None
    d = norm_dim(dim, x.ndim)  # an out-of-range dim is torch's IndexError, never wrapped
    return (x.movedim(d, -1) if x.ndim else x.reshape(1)), d


def _restore(v, x, d, keepdim):
    """A reduction result over the last dim, put back where ``d`` was (kept as size 1 with keepdim)."""
    if x.ndim == 0:
        return v.reshape(())
    if keepdim:
        return v.unsqueeze(-1).movedim(-1, d)
    return v


def _select_sorted(x, dim, keepdim, k_of, name):
    """(values, indices) of the element of rank ``k_of(sorted, valid_count)`` along ``dim``."""
    y, d = _dim_last(x, dim)
    if y.shape[-1] == 0:
        raise TdxIndexError(f"{name}(): Expected reduction dim {dim} to have non-zero size.")
    vals, idx = y.sort(-1, stable=True)
    valid = vals.isnan().logical_not().sum(-1, keepdim=True) if vals.dtype.is_floating_point else None
    k = k_of(vals, valid)
    v, i = vals.gather(-1, k).squeeze(-1), idx.gather(-1, k).squeeze(-1)
    if dim is None:
        return v.reshape(()), None
    return _restore(v, x, d, keepdim), _restore(i, x, d, keepdim)


def _median(input, dim=None, keepdim=False, *, nan=False):  # noqa: A002 - torch's name
    n_name = "nanmedian" if nan else "median"

    def k_of(vals, valid):
        n = vals.shape[-1]
        shape = (*vals.shape[:-1], 1)
        if valid is None:
            return vals.new_full(shape, (n - 1) // 2, dtype=D.int64)
        if nan:
            return ((valid - 1).clamp(min=0)) // 2
        return valid.where(valid < n, (n - 1) // 2)  # a NaN present: the first NaN

    v, i = _select_sorted(input, dim, keepdim, k_of, n_name)
    if dim is None:
        return _split_among_ties(input, v, nan) if input.requires_grad else v
    return getattr(return_types, n_name)(v, i)


def _split_among_ties(input, v, nan):  # noqa: A002 - torch's name
    """``v``, the median of all of ``input``, with torch's gradient: shared evenly by every element
    equal to it (NaN ones for a NaN median), where ``median(dim)`` gives it to the selected index.

    The value stays ``v`` exactly (``v`` plus a sum of zeros); only the gradient's path differs.
    """
    vd = v.detach()
    ties = input == vd
    if not nan and input.dtype.is_floating_point:
        ties = ties | (input.isnan() & vd.isnan())
    offsets = (input - vd).where(ties, 0)
    return vd + offsets.sum() / ties.sum()


def median(input, dim=None, keepdim=False):  # noqa: A002
    """The lower median (NaN where a NaN is present), with its index when ``dim`` is given."""
    return _median(input, dim, keepdim)


def nanmedian(input, dim=None, keepdim=False):  # noqa: A002
    """The lower median of the non-NaN values, with its index when ``dim`` is given."""
    return _median(input, dim, keepdim, nan=True)


def kthvalue(input, k, dim=-1, keepdim=False):  # noqa: A002
    """(values, indices) of the ``k``-th smallest element along ``dim``."""
    n = input.shape[dim] if input.ndim else 1
    if not 1 <= k <= n:  # torch's RuntimeError (a dim out of range is the IndexError, above)
        raise TdxRuntimeError(f"kthvalue(): selected number k out of range for dimension {dim} (k = {k}, size {n})")
    v, i = _select_sorted(input, dim, keepdim, lambda vals, _: vals.new_full((*vals.shape[:-1], 1), k - 1,
                                                                              dtype=D.int64), "kthvalue")
    return return_types.kthvalue(v, i)


def mode(input, dim=-1, keepdim=False):  # noqa: A002
    """(values, indices): the most frequent value along ``dim`` (the smallest on ties) and its last index."""
    y, d = _dim_last(input, dim)
    n = y.shape[-1]
    yd = y.detach()  # the index is found on values that carry no gradient; the value is gathered at it
    counts = (yd.unsqueeze(-1) == yd.unsqueeze(-2)).sum(-1)
    top = counts.amax(-1, keepdim=True)
    big = yd.new_full((), float("inf")) if yd.dtype.is_floating_point else yd.amax(-1, keepdim=True)
    best = yd.where(counts == top, big).amin(-1, keepdim=True)
    pos = input.new_tensor(list(range(n)), dtype=D.int64)
    i = pos.where(yd == best, -1).amax(-1, keepdim=True)
    v = y.gather(-1, i).squeeze(-1)
    i = i.squeeze(-1)
    return return_types.mode(_restore(v, input, d, keepdim), _restore(i, input, d, keepdim))


def _moment_mean(which):
    def fn(input, dim=None, unbiased=None, keepdim=False, *, correction=None):  # noqa: A002
        if isinstance(dim, bool) and unbiased is None:
            dim, unbiased = None, dim
        m = getattr(input, which)(dim, unbiased, keepdim, correction=correction)
        mean = input.mean(dim, keepdim=keepdim) if dim is not None else input.mean()
        if dim is None and keepdim:
            mean = mean.reshape((1,) * input.ndim)
        return m, mean

    fn.__name__ = f"{which}_mean"
    fn.__doc__ = f"(``{which}``, ``mean``) over ``dim``, as ``torch.{which}_mean``."
    return fn


def _quantile(input, q, dim=None, keepdim=False, *, interpolation="linear", nan=False):  # noqa: A002
    name = "nanquantile" if nan else "quantile"
    if interpolation not in ("linear", "lower", "higher", "midpoint", "nearest"):
        raise TdxValueError(f"{name}() interpolation must be one of linear, lower, higher, midpoint or nearest. "
                            f"Got {interpolation}")
    if not input.dtype.is_floating_point:
        raise TdxRuntimeError(f"{name}() input tensor must be either float or double dtype")
    scalar_q = not isinstance(q, Tensor)
    qt = input.new_tensor([float(q)] if scalar_q else 0.0).reshape(-1) if scalar_q else q.reshape(-1)
    if qt.numel() and bool(((qt < 0) | (qt > 1)).any()):
        raise TdxRuntimeError(f"{name}() q values must be in the range [0, 1]")
    y, d = _dim_last(input, dim)
    if y.shape[-1] == 0:
        raise TdxIndexError(f"{name}() input tensor must be non-empty")
    vals = y.sort(-1)[0]
    n = vals.shape[-1]
    nans = vals.isnan().sum(-1, keepdim=True)
    count = (n - nans) if nan else vals.new_full((*vals.shape[:-1], 1), n, dtype=D.int64)
    last = (count - 1).clamp(min=0).to(vals.dtype)
    rank = last.unsqueeze(0) * qt.to(vals.dtype).reshape((-1,) + (1,) * vals.ndim)  # (Q, ..., 1)
    if interpolation == "nearest":
        rank = rank.round()
    lo, hi = rank.floor(), rank.ceil()
    if interpolation == "lower":
        hi = lo
    elif interpolation == "higher":
        lo = hi
    big = vals.unsqueeze(0).expand(rank.shape[0], *vals.shape)
    a = big.gather(-1, lo.long())
    b = big.gather(-1, hi.long())
    w = (rank - lo) if interpolation == "linear" else (rank - lo) * 0 + 0.5 if interpolation == "midpoint" \
        else rank * 0
    out = a.lerp(b, w) if interpolation in ("linear", "midpoint") else a
    bad = (nans > 0) if not nan else (count == 0)
    out = out.where(bad.unsqueeze(0).logical_not(), float("nan")).squeeze(-1)  # (Q, ...)
    if input.ndim == 0:
        out = out.reshape(-1)
    elif dim is None:
        out = out.reshape(out.shape[0], *((1,) * input.ndim)) if keepdim else out.reshape(-1)
    elif keepdim:
        out = out.unsqueeze(-1).movedim(-1, d + 1)
    return out[0] if scalar_q or q.ndim == 0 else out


def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):  # noqa: A002
    """The ``q``-th quantiles along ``dim`` (NaN where a NaN is present)."""
    return _quantile(input, q, dim, keepdim, interpolation=interpolation)


def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):  # noqa: A002
    """The ``q``-th quantiles of the non-NaN values along ``dim``."""
    return _quantile(input, q, dim, keepdim, interpolation=interpolation, nan=True)


def bincount(input, weights=None, minlength=0):  # noqa: A002
    """Counts (or summed ``weights``) of each value of a 1-D non-negative integer tensor."""
    if input.ndim != 1 or input.dtype.is_floating_point or input.dtype.is_complex or input.dtype is D.bool_:
        raise TdxRuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if minlength < 0:
        raise TdxRuntimeError(f"bincount(): minlength should be >= 0, got {minlength}")
    if input.numel() and int(input.amin()) < 0:
        raise TdxRuntimeError("bincount(): input must contain only non-negative values")
    size = max(int(input.amax()) + 1 if input.numel() else 0, minlength)
    if weights is None:
        return input.new_zeros((size,), dtype=D.int64).scatter_add(0, input.long(), input.new_ones(
            input.shape, dtype=D.int64))
    dt = weights.dtype if weights.dtype.is_floating_point else D.float64
    w = weights.to(dt)
    return w.new_zeros((size,)).scatter_add(0, input.long(), w)


def histc(input, bins=100, min=0, max=0):  # noqa: A002 - torch's names
    """Histogram of ``input`` in ``bins`` equal bins over [min, max] (the data's range when equal)."""
    if not input.dtype.is_floating_point:
        raise TdxRuntimeError(f"torch.histogram: input tensor and bins tensors should have the same dtype, "
                              f"histc() not implemented for '{input.dtype.name}'")
    if bins <= 0:
        raise TdxRuntimeError(f"torch.histc: bins must be > 0, but got {bins} for dimension 0")
    lo, hi = float(min), float(max)
    if lo == hi and input.numel():
        lo, hi = float(input.amin()), float(input.amax())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if lo > hi:
        raise TdxRuntimeError(f"torch.histc: max must be larger than min, got min {lo} and max {hi}")
    x = input.reshape(-1)
    inside = (x >= lo) & (x <= hi)
    idx = ((x - lo) * (bins / (hi - lo))).floor().clamp(0, bins - 1).long()
    ones = inside.to(input.dtype)
    return x.new_zeros((bins,)).scatter_add(0, idx.where(inside, 0), ones)


def _moments_input(input, name):
    if input.ndim > 2:
        raise TdxRuntimeError(f"{name}(): expected input to have two or fewer dimensions but got an input with "
                              f"{input.ndim} dimensions")
    return input if input.ndim == 2 else input.reshape(1, -1)


def cov(input, *, correction=1, fweights=None, aweights=None):  # noqa: A002
    """The covariance matrix of the variables in the rows of ``input`` (observations in columns)."""
    x = _moments_input(input, "cov")
    if not (x.dtype.is_floating_point or x.dtype.is_complex):
        x = x.to(D.get_default_dtype())
    n = x.shape[1]
    w = None
    if fweights is not None:
        w = fweights
    if aweights is not None:
        w = aweights if w is None else w * aweights
    if w is None:
        avg = x.mean(1, keepdim=True)
        total = float(n)
        norm = total - correction
    else:
        total = w.sum()  # in the weights' dtype, as torch
        avg = (x * w).sum(1, keepdim=True) / total
        norm = total - correction * ((w * aweights).sum() / total if aweights is not None else 1)
    xc = x - avg
    xw = xc if w is None else xc * w
    prods = (xw.unsqueeze(1) * xc.conj().unsqueeze(0)).sum(-1)  # not matmul: float64 stays exact on every executor
    c = prods / (norm.clamp(min=0) if isinstance(norm, Tensor) else max(norm, 0))
    return c.squeeze()


def corrcoef(input):  # noqa: A002
    """Pearson correlation coefficients of the variables in the rows of ``input``, clipped to [-1, 1]."""
    c = cov(input)
    if c.ndim == 0:
        return c / c
    d = c.diagonal().sqrt()
    c = c / d.unsqueeze(1) / d.unsqueeze(0)
    return c.clamp(-1, 1) if not c.dtype.is_complex else c


def _histogram(input, bins=100, *, range=None, weight=None, density=False):  # noqa: A002 - torch's names
    if isinstance(bins, Tensor):
        edges = bins.to(input.dtype)
    else:
        if range is not None:
            lo, hi = float(range[0]), float(range[1])
        elif input.numel():
            lo, hi = float(input.amin()), float(input.amax())
        else:
            lo, hi = 0.0, 0.0
        if lo == hi:
            lo, hi = lo - 0.5, hi + 0.5
        edges = input.new_tensor([lo + (hi - lo) * i / bins for i in _range(bins + 1)]).to(input.dtype)
    nb = edges.numel() - 1
    x = input.reshape(-1)
    idx = (x.unsqueeze(-1) >= edges[1:].unsqueeze(0)).sum(-1)  # bins whose right edge is passed
    inside = (x >= edges[0]) & (x <= edges[-1])
    idx = idx.clamp(max=nb - 1)
    w = inside.to(input.dtype) if weight is None else weight.reshape(-1).to(input.dtype) * inside.to(input.dtype)
    hist = x.new_zeros((nb,)).scatter_add(0, idx.where(inside, 0), w)
    if density:
        hist = hist / (hist.sum() * (edges[1:] - edges[:-1]))
    return return_types.histogram(hist, edges)


_range = range

_TABLE = {
    "median": (median, median.__doc__), "nanmedian": (nanmedian, nanmedian.__doc__),
    "quantile": (quantile, quantile.__doc__), "nanquantile": (nanquantile, nanquantile.__doc__),
    "kthvalue": (kthvalue, kthvalue.__doc__), "mode": (mode, mode.__doc__),
    "var_mean": (_moment_mean("var"), "(var, mean) over ``dim``."),
    "std_mean": (_moment_mean("std"), "(std, mean) over ``dim``."),
    "bincount": (bincount, bincount.__doc__), "histc": (histc, histc.__doc__),
    "histogram": (_histogram, "(hist, bin_edges) of ``input``, as ``torch.histogram``."),
    "cov": (cov, cov.__doc__), "corrcoef": (corrcoef, corrcoef.__doc__),
}
install(globals(), __all__, _TABLE, methods=set(_TABLE) - {"var_mean", "std_mean"})
