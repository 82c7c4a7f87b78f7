"""Index updates and reducing scatters: ``index_add``/``index_copy``/``index_fill``/``index_put``/
``index_reduce``, ``scatter_reduce``, ``take_along_dim``, ``masked_scatter``, ``put`` and the
``*_scatter`` embeddings (``diagonal_scatter``, ``select_scatter``, ``slice_scatter``), with their
in-place forms.

Executors with a kernel of torch's signature run it; elsewhere the composites here express each op
with ``scatter``/``scatter_add``/``gather`` and masks. This module must never import a framework.
"""

from __future__ import annotations

from .. import _dtypes as D
from .._errors import TdxIndexError, TdxRuntimeError, TdxTypeError, TdxValueError
from ..backends.base import norm_dim
from .kernels import install
from .tensor import Tensor
from .tracing import TRACE

__all__: list = []


def _along(index, dim: int, like):
    """1-D ``index`` laid along ``dim`` and expanded to ``like``'s shape (a scatter index)."""
    if like.ndim == 0:
        return index.reshape(())
    shape = [1] * like.ndim
    shape[dim] = -1
    return index.reshape(shape).expand(*like.shape)


def _dim(dim, t):
    return norm_dim(dim, t.ndim)


def _check_index(index, op):
    if index.ndim > 1:
        raise TdxIndexError(f"{op}(): Index is supposed to be a vector")
    if index.dtype not in (D.int64, D.int32):
        raise TdxRuntimeError(f"{op}(): Expected dtype int32/int64 for index")


def _in_range(index, input, d: int, op: str, low: int = 0):
    """Refuse an index outside ``[low, size)`` of ``input``'s dim ``d`` as torch does (IndexError; the
    scatter these ops lower to would say RuntimeError, as torch's scatter does). Returns the index's bounds
    where its executor knows them without a read (then fitting: nothing was read), else None."""
    n = input.shape[d] if input.ndim else 1
    if index.numel():
        known = index._ex.known_bounds(index._n)  # a lazy executor's facts: fitting them, nothing is read
        if known is not None and low <= known[0] and known[1] < n:
            return known
        if TRACE.tracing:  # a traced step reads no value: the check runs where the step runs eagerly
            return None
        lo, hi = int(index.min()), int(index.max())
        if lo < low or hi >= n:
            raise TdxIndexError(f"{op}(): index {hi if hi >= n else lo} is out of bounds for dimension {d} with "
                                f"size {n}")


def index_add(input, dim, index, source, *, alpha=1):  # noqa: A002
    """``input`` with ``alpha * source`` slices added at ``index`` along ``dim``."""
    _check_index(index, "index_add")
    d = _dim(dim, input)
    _in_range(index, input, d, "index_add_")
    src = source if alpha == 1 else source * alpha
    if input.ndim == 0:
        return input + src.reshape(())
    return input.scatter_add(d, _along(index.long(), d, src), src.to(input.dtype))


def index_copy(input, dim, index, source):  # noqa: A002
    """``input`` with ``source`` slices written at ``index`` along ``dim``."""
    _check_index(index, "index_copy")
    d = _dim(dim, input)
    known = _in_range(index, input, d, "index_copy_")
    if input.ndim == 0:
        return source.reshape(()).to(input.dtype)
    if known is not None and known[0] == known[1] and index.ndim == 1 and index.numel() == 1 and \
            source.dtype is input.dtype and tuple(source.shape) == (*input.shape[:d], 1, *input.shape[d + 1:]):
        at = known[0]  # a static KV cache's step: one slice, its position known without a read
        out = input.clone()
        out[(slice(None),) * d + (slice(at, at + 1),)] = source
        return out
    return input.scatter(d, _along(index.long(), d, source), source)


def index_fill(input, dim, index, value):  # noqa: A002
    """``input`` with the slices at ``index`` along ``dim`` set to ``value``."""
    _check_index(index, "index_fill")
    if isinstance(value, Tensor) and value.ndim:
        raise TdxIndexError(f"index_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                            f"{value.ndim} dimension(s).")
    d = _dim(dim, input)
    n = input.shape[d] if input.ndim else 1
    _in_range(index, input, d, "index_fill_", low=-n)
    idx = index.long().reshape(-1)
    idx = idx.where(idx >= 0, idx + n)
    hit = input.new_zeros((n,), dtype=D.bool_).scatter(0, idx, True)
    shape = [1] * input.ndim
    if input.ndim:
        shape[d] = n
    mask = hit.reshape(shape) if input.ndim else hit.reshape(())
    return input.masked_fill(mask, value)


def index_put(input, indices, values, accumulate=False):  # noqa: A002
    """``input`` with ``values`` written (or added, with ``accumulate``) at the tuple of ``indices``."""
    indices = tuple(indices)
    if isinstance(values, Tensor) and values.dtype is not input.dtype:  # torch's index_put_ casts nothing
        raise TdxRuntimeError(f"Index put requires the source and destination dtypes match, got "
                              f"{D.scalar_name(input.dtype)} for the destination and {D.scalar_name(values.dtype)} "
                              "for the source.")
    if not accumulate:
        out = input.clone()
        out[indices] = values
        return out
    if any(i.dtype is D.bool_ for i in indices):
        expanded = []
        for i in indices:
            expanded.extend(i.nonzero().unbind(1) if i.dtype is D.bool_ else (i,))
        indices = tuple(expanded)
    from .shape import broadcast_tensors

    idx = broadcast_tensors(*indices)
    k = len(idx)
    lead = input.shape[:k]
    rest = tuple(input.shape[k:])
    lin = idx[0].long() * 0
    for i, n in zip(idx, lead):
        lin = lin * n + i.long().where(i >= 0, i.long() + n)
    flat = input.reshape(-1, *rest)
    vals = (values if isinstance(values, Tensor) else input.new_tensor(values)).to(input.dtype)
    vals = vals.expand(*lin.shape, *rest).reshape(-1, *rest)
    return index_add(flat, 0, lin.reshape(-1), vals).reshape(input.shape)


def take_along_dim(input, indices, dim=None):  # noqa: A002
    """Values of ``input`` at ``indices`` along ``dim`` (flattened when None), broadcasting the other dims."""
    if dim is None:
        return input.reshape(-1).gather(0, indices.reshape(-1).long())
    d = _dim(dim, input)
    if input.ndim != indices.ndim:
        raise TdxRuntimeError(f"torch.take_along_dim(): input and indices should have the same number of "
                              f"dimensions, but got {input.ndim} dimensions for input, and {indices.ndim} "
                              "dimensions for indices")
    from .shape import broadcast_shapes

    a = list(input.shape)
    b = list(indices.shape)
    a[d], b[d] = 1, 1
    common = list(broadcast_shapes(tuple(a), tuple(b)))
    ia, ib = list(common), list(common)
    ia[d], ib[d] = input.shape[d], indices.shape[d]
    idx = indices.long()
    idx = idx.where(idx >= 0, idx + input.shape[d])
    return input.expand(*ia).gather(d, idx.expand(*ib))


def masked_scatter(input, mask, source):  # noqa: A002
    """``input`` with consecutive elements of ``source`` written where ``mask`` holds."""
    if mask.dtype is not D.bool_:
        raise TdxRuntimeError(f"masked_scatter_ only supports boolean masks, but got mask with dtype "
                              f"{mask.dtype.name}")
    from .shape import broadcast_shapes

    shape = broadcast_shapes(tuple(input.shape), tuple(mask.shape))
    m = mask.expand(*shape).reshape(-1)
    pos = (m.long().cumsum(0) - 1).clamp(min=0)
    src = source.reshape(-1)
    if int(m.sum()) > src.numel():
        raise TdxRuntimeError("Number of elements of source < number of ones in mask")
    if src.numel() == 0:
        return input.expand(*shape).clone()
    taken = src.gather(0, pos.clamp(max=src.numel() - 1))
    out = taken.where(m, input.expand(*shape).reshape(-1))
    return out.reshape(shape)


def put(input, index, source, accumulate=False):  # noqa: A002
    """``input`` (flattened) with ``source`` written (or added) at ``index``."""
    flat = input.reshape(-1)
    idx = index.reshape(-1).long()
    n = flat.numel()
    if idx.numel():
        lo, hi = int(idx.min()), int(idx.max())
        if lo < -n or hi >= n:
            raise TdxIndexError(f"out of range: tried to access index {hi if hi >= n else lo} on a tensor of {n} "
                                "elements.")
    idx = idx.where(idx >= 0, idx + n)
    src = source.reshape(-1)
    out = flat.scatter_add(0, idx, src) if accumulate else flat.scatter(0, idx, src)
    return out.reshape(input.shape)


def _embed(view):
    def fn(input, src, *args, **kwargs):  # noqa: A002
        out = input.clone()
        target = view(out, *args, **kwargs)
        if tuple(target.shape) != tuple(src.shape):
            raise TdxRuntimeError(f"expected src to have a size equal to the slice of self. src size = "
                                  f"{list(src.shape)}, slice size = {list(target.shape)}")
        target.copy_(src)
        return out

    return fn


def _slice_view(t, dim=0, start=None, end=None, step=1):
    index = [slice(None)] * t.ndim
    index[dim] = slice(start, end, step)
    return t[tuple(index)]


_TABLE = {
    "index_add": (index_add, index_add.__doc__), "index_copy": (index_copy, index_copy.__doc__),
    "index_fill": (index_fill, index_fill.__doc__), "index_put": (index_put, index_put.__doc__),
    "index_reduce": (None, "``input`` with ``source`` slices reduced in at ``index`` along ``dim``."),
    "scatter_reduce": (None, "``input`` with ``src`` reduced in at ``index`` along ``dim``."),
    "take_along_dim": (take_along_dim, take_along_dim.__doc__),
    "masked_scatter": (masked_scatter, masked_scatter.__doc__), "put": (put, put.__doc__),
    "diagonal_scatter": (_embed(lambda t, offset=0, dim1=0, dim2=1: t.diagonal(offset, dim1, dim2)),
                         "``input`` with ``src`` embedded along a diagonal."),
    "select_scatter": (_embed(lambda t, dim, index: t.select(dim, index)),
                       "``input`` with ``src`` embedded at ``index`` along ``dim``."),
    "slice_scatter": (_embed(_slice_view), "``input`` with ``src`` embedded in a slice along ``dim``."),
}
install(globals(), __all__, _TABLE, methods=set(_TABLE),
        inplace=("index_add", "index_copy", "index_fill", "index_put", "index_reduce", "scatter_reduce",
                 "masked_scatter", "put"))


def unravel_index(indices, shape):
    """The coordinates of flat ``indices`` in an array of ``shape``, one tensor per dim."""
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    if indices.dtype.is_floating_point or indices.dtype.is_complex or indices.dtype is D.bool_:
        raise TdxTypeError(f"expected 'indices' to be integer dtype, but got {indices.dtype.name}")
    if any(s < 0 for s in shape):
        raise TdxValueError("'shape' cannot have negative values, but got " + str(tuple(shape)))
    total = 1
    for s in shape:
        total *= s
    idx = indices.long()
    if idx.numel() and (int(idx.amin()) < -total or int(idx.amax()) >= total):
        raise TdxValueError("'indices' must be in range [-{0}, {1})".format(total, total))
    idx = idx.where(idx >= 0, idx + total)
    out = []
    for s in reversed(shape):
        out.append(idx.remainder(s) if s else idx * 0)
        idx = idx // s if s else idx
    return tuple(reversed(out))


__all__.append("unravel_index")
