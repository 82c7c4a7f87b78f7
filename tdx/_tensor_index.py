"""Tensor methods that index, order and rearrange: gather/scatter, masks, sort/topk/unique,
roll/flip/repeat/tile, and the views narrow/unbind/movedim/select/unflatten/diagonal/tensor_split.

A mixin of ``tdx.Tensor`` (through :class:`tdx._tensor_more.MoreTensorMethods`), with the
conventions of :mod:`tdx._tensor_methods`: unwrap operands (checking they share the
executor), normalize torch's argument forms, call the executor, wrap. Must never import
a framework and holds no per-executor special case.
"""

from __future__ import annotations

from . import _dtypes as D
from . import _views, return_types
from ._errors import TdxIndexError, TdxRuntimeError, TdxTypeError
from ._tensor_methods import _permuted, operand, shape_args, wrap
from .backends.base import norm_dim



def tensor_arg(t, x, op: str, arg: str):
    """``x`` as a native array of ``t``'s executor; it must be a Tensor.

    Raises:
        TdxTypeError: ``x`` is not a Tensor.
        DeviceMismatchError: ``x`` lives on another executor.
    """
    native = operand(t, x, op)
    if native is None or native is x:
        raise TdxTypeError(f"{op}(): argument '{arg}' must be Tensor, not {type(x).__name__}")
    return native


def int_arg(x, op: str, arg: str) -> int:
    """A Python int from an int or a one-element integer tensor.

    Raises:
        TdxTypeError: ``x`` is neither.
    """
    if isinstance(x, int) and not isinstance(x, bool):
        return x
    try:
        return x.__index__()
    except (AttributeError, TypeError):
        raise TdxTypeError(f"{op}(): argument '{arg}' must be int, not {type(x).__name__}") from None


def dims_arg(dims, op: str) -> tuple:
    """``f(0, 1)``, ``f((0, 1))``, ``f([0, 1])`` and ``f(0)`` as the tuple ``(0, 1)`` / ``(0,)``."""
    if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
        dims = dims[0]
    return tuple(int_arg(d, op, "dims") for d in dims)


class IndexTensorMethods:
    """Indexing, ordering and rearranging methods of ``tdx.Tensor``."""

    __slots__ = ()

    # gather / scatter -------------------------------------------------------------------
    def gather(self, dim, index, *, sparse_grad=False):
        """Values along ``dim`` at ``index`` (same rank as self), as ``torch.gather``."""
        ex = self._ex
        return wrap(ex.gather(self._n, dim, tensor_arg(self, index, "gather", "index")), ex)

    def _scatter_src(self, src, value, op):
        if src is None and value is None:
            raise TdxTypeError(f"{op}() missing 1 required argument: 'src' or 'value'")
        return operand(self, src if src is not None else value, op)

    def scatter(self, dim, index, src=None, *, value=None, reduce=None):
        """Self with ``src`` (a Tensor, or a number) written at ``index`` along ``dim``.

        ``reduce`` may be ``"add"`` or ``"multiply"`` (torch's legacy form).
        """
        ex = self._ex
        idx = tensor_arg(self, index, "scatter", "index")
        return wrap(ex.scatter(self._n, dim, idx, self._scatter_src(src, value, "scatter"), reduce), ex)

    def scatter_add(self, dim, index, src):
        """Self with ``src`` added at ``index`` along ``dim`` (repeated indices accumulate)."""
        ex = self._ex
        idx = tensor_arg(self, index, "scatter_add", "index")
        return wrap(ex.scatter_add(self._n, dim, idx, tensor_arg(self, src, "scatter_add", "src")), ex)

    def index_select(self, dim, index):
        """The slices at ``index`` (a 1-D int tensor) along ``dim``."""
        ex = self._ex
        return wrap(ex.index_select(self._n, dim, tensor_arg(self, index, "index_select", "index")), ex)

    # masks --------------------------------------------------------------------------------
    def masked_fill(self, mask, value):
        """Self with ``value`` (a number or 0-d tensor) where the bool ``mask`` holds."""
        ex = self._ex
        return wrap(ex.masked_fill(self._n, tensor_arg(self, mask, "masked_fill", "mask"),
                                   operand(self, value, "masked_fill")), ex)

    def masked_select(self, mask):
        """The elements where the bool ``mask`` (broadcast with self) holds, as a 1-D tensor."""
        ex = self._ex
        return wrap(ex.masked_select(self._n, tensor_arg(self, mask, "masked_select", "mask")), ex)

    def nonzero(self, *, as_tuple=False):
        """Indices of the non-zero elements: an (n, ndim) int64 tensor, or one 1-D tensor per dim."""
        ex = self._ex
        idx = wrap(ex.nonzero(self._n), ex)
        if not as_tuple:
            return idx
        if self._n.ndim == 0:
            return (wrap(ex.zeros((idx.shape[0],), D.int64), ex),)
        return idx.unbind(1)

    # ordering -------------------------------------------------------------------------------
    def sort(self, dim=-1, descending=False, *, stable=False):
        """(values, indices) sorted along ``dim``; ties keep their order, NaN sorts above numbers."""
        ex = self._ex
        values, indices = ex.sort(self._n, dim, descending, stable)
        return return_types.sort(wrap(values, ex), wrap(indices, ex))

    def argsort(self, dim=-1, descending=False, *, stable=False):
        """The int64 indices that sort self along ``dim``."""
        return wrap(self._ex.argsort(self._n, dim, descending, stable), self._ex)

    def topk(self, k, dim=-1, largest=True, sorted=True):  # noqa: A002 - torch's name
        """(values, indices) of the ``k`` largest (or smallest) elements along ``dim``."""
        ex = self._ex
        values, indices = ex.topk(self._n, int_arg(k, "topk", "k"), dim, largest, sorted)
        return return_types.topk(wrap(values, ex), wrap(indices, ex))

    def unique(self, sorted=True, return_inverse=False, return_counts=False, dim=None):  # noqa: A002
        """The sorted distinct values, with the inverse map and counts when asked."""
        ex = self._ex
        values, inverse, counts = ex.unique(self._n, sorted, return_inverse, return_counts, dim)
        out = (wrap(values, ex),) + tuple(wrap(x, ex) for x in (inverse, counts) if x is not None)
        return out[0] if len(out) == 1 else out

    # rearranging ----------------------------------------------------------------------------
    def roll(self, shifts, dims=None):
        """Rotate elements along ``dims`` (the flattened tensor when None) by ``shifts``."""
        return wrap(self._ex.roll(self._n, shifts, dims), self._ex)

    def flip(self, *dims):
        """Reverse the order of elements along ``dims``."""
        if not dims:
            raise TdxTypeError("flip() missing 1 required positional arguments: \"dims\"")
        return wrap(self._ex.flip(self._n, dims_arg(dims, "flip")), self._ex)

    def repeat(self, *sizes):
        """Tile self ``sizes`` times (at least one size per dim; extra sizes add leading dims)."""
        return wrap(self._ex.repeat(self._n, shape_args(sizes, "repeat")), self._ex)

    def tile(self, *dims):
        """Tile self; fewer ``dims`` than self's rank are padded with ones in front."""
        return wrap(self._ex.tile(self._n, shape_args(dims, "tile")), self._ex)

    def repeat_interleave(self, repeats, dim=None, *, output_size=None):
        """Repeat each element ``repeats`` times (an int or a 1-D tensor of counts)."""
        ex = self._ex
        reps = operand(self, repeats, "repeat_interleave") if repeats.__class__ is not int else repeats
        return wrap(ex.repeat_interleave(self._n, reps, dim, output_size), ex)

    def narrow(self, dim, start, length):
        """The ``length`` elements from ``start`` along ``dim``."""
        dim, start = int_arg(dim, "narrow", "dim"), int_arg(start, "narrow", "start")
        out = wrap(self._ex.narrow(self._n, dim, start, int_arg(length, "narrow", "length")), self._ex)
        if self._ex.mutable:
            return out
        d = norm_dim(dim, self.ndim)
        start = start + self.shape[d] if start < 0 else start
        index = (slice(None),) * d + (slice(start, start + out.shape[d]),)
        return _views.link(out, self, *_views.basic_index(_views.layout_of(self), index))

    def unbind(self, dim=0):
        """The slices along ``dim``, as a tuple of tensors one rank lower (views of ``self``)."""
        pieces = tuple(wrap(x, self._ex) for x in self._ex.unbind(self._n, dim))
        if self._ex.mutable:
            return pieces
        d = norm_dim(dim, self.ndim)
        return _views.link_pieces(pieces, self, [(slice(None),) * d + (i,) for i in range(len(pieces))], "Unbind")

    def movedim(self, source, destination):
        """Move dims ``source`` to positions ``destination``, keeping the others in order."""
        if isinstance(source, int) != isinstance(destination, int):
            raise TdxTypeError(f"movedim() received an invalid combination of arguments: source and destination "
                               f"must both be ints or both sequences, got ({type(source).__name__}, "
                               f"{type(destination).__name__})")
        out = wrap(self._ex.movedim(self._n, source, destination), self._ex)
        if self._ex.mutable:
            return out
        n = self.ndim
        if not n:
            return _permuted(out, self, [])
        src = [norm_dim(d, n) for d in ((source,) if isinstance(source, int) else source)]
        dst = [norm_dim(d, n) for d in ((destination,) if isinstance(destination, int) else destination)]
        order = [None] * n
        for a, b in zip(src, dst):
            order[b] = a
        rest = iter(d for d in range(n) if d not in src)
        return _permuted(out, self, [d if d is not None else next(rest) for d in order])


    moveaxis = movedim

    # more views --------------------------------------------------------------------------
    def select(self, dim, index):
        """The slice at ``index`` along ``dim``, one rank lower (a view)."""
        dim, index = int_arg(dim, "select", "dim"), int_arg(index, "select", "index")
        d = norm_dim(dim, self.ndim)
        size = self.shape[d]
        if not -size <= index < size:
            raise TdxIndexError(f"select(): index {index} out of range for tensor of size {list(self.shape)} at "
                                f"dimension {d}")
        return self[(slice(None),) * d + (index,)]

    def unflatten(self, dim, sizes):
        """``dim`` split into ``sizes`` (one of them may be -1), as a view."""
        d = norm_dim(int_arg(dim, "unflatten", "dim"), self.ndim)
        sizes = [int(s) for s in sizes]
        known = 1
        for s in sizes:
            known *= s if s != -1 else 1
        if not sizes or (-1 not in sizes and known != self.shape[d]):
            raise TdxRuntimeError(f"unflatten: Provided sizes {sizes} don't multiply up to the size of dim {d} "
                                  f"({self.shape[d]}) in the input tensor")
        return self.view(*self.shape[:d], *sizes, *self.shape[d + 1:])

    def diagonal(self, offset=0, dim1=0, dim2=1):
        """The ``offset``-th diagonal of the ``(dim1, dim2)`` planes, as the last dim (a view)."""
        offset = int_arg(offset, "diagonal", "offset")
        d1, d2 = norm_dim(int_arg(dim1, "diagonal", "dim1"), self.ndim), norm_dim(int_arg(dim2, "diagonal", "dim2"),
                                                                                   self.ndim)
        if d1 == d2:
            raise TdxRuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
        ex = self._ex
        out = wrap(ex.diagonal(self._n, offset, d1, d2), ex)
        if ex.mutable:
            return out
        lay = _views.layout_of(self)
        keep = [i for i in range(self.ndim) if i not in (d1, d2)]
        start = offset * lay.strides[d2] if offset >= 0 else -offset * lay.strides[d1]
        length = out.shape[-1]
        return _views.link(out, self, [lay.shape[i] for i in keep] + [length],
                           [lay.strides[i] for i in keep] + [lay.strides[d1] + lay.strides[d2]],
                           lay.offset + (start if length else 0))

    def tensor_split(self, indices_or_sections, dim=0):
        """Pieces along ``dim``: ``n`` near-equal sections (the first ``size % n`` one longer), or
        cut at the listed indices; each piece is a view."""
        if isinstance(indices_or_sections, bool):
            raise TdxTypeError("tensor_split(): argument 'indices_or_sections' must be an int, a sequence of ints "
                               "or a tensor of them, not bool")
        d = norm_dim(int_arg(dim, "tensor_split", "dim"), self.ndim)
        size = self.shape[d]
        if isinstance(indices_or_sections, int) and not isinstance(indices_or_sections, bool):
            n = indices_or_sections
            if n <= 0:
                raise TdxRuntimeError(f"number of sections must be larger than 0, got {n}")
            small, extra = divmod(size, n)
            cuts, at = [], 0
            for i in range(n - 1):
                at += small + (1 if i < extra else 0)
                cuts.append(at)
        else:
            items = indices_or_sections.tolist() if hasattr(indices_or_sections, "tolist") else indices_or_sections
            if isinstance(items, int):
                return self.tensor_split(items, d)
            cuts = [int(i) for i in items]
        bounds, pieces, start = [*cuts, size], [], 0
        for end in bounds:
            lo = min(max(start + size if start < 0 else start, 0), size)
            hi = min(max(end + size if end < 0 else end, 0), size)
            pieces.append(self.narrow(d, lo, max(hi - lo, 0)))
            start = end
        return tuple(pieces)

    def _split_along(self, name, sections, dim, min_ndim):
        if self.ndim < min_ndim:
            raise TdxRuntimeError(f"torch.{name} requires a tensor with at least {min_ndim} dimension, but got a "
                                  f"tensor with {self.ndim} dimensions!")
        if isinstance(sections, int) and not isinstance(sections, bool) and (sections == 0 or
                                                                              self.shape[dim] % sections):
            raise TdxRuntimeError(f"torch.{name} attempted to split along dimension {dim}, but the size of the "
                                  f"dimension {self.shape[dim]} is not divisible by the split_size {sections}!")
        return self.tensor_split(sections, dim)

    def hsplit(self, sections):
        """``tensor_split`` along dim 1 (dim 0 for 1-D tensors); equal sections must divide evenly."""
        return self._split_along("hsplit", sections, 1 if self.ndim > 1 else 0, 1)

    def vsplit(self, sections):
        """``tensor_split`` along dim 0 of a tensor of at least 2 dims; equal sections must divide evenly."""
        return self._split_along("vsplit", sections, 0, 2)

    def dsplit(self, sections):
        """``tensor_split`` along dim 2 of a tensor of at least 3 dims; equal sections must divide evenly."""
        return self._split_along("dsplit", sections, 2, 3)

    def stride(self, dim=None):
        """torch's strides (in elements) of this tensor, or of ``dim``; on immutable executors, those
        of the view layout tdx keeps, so they equal torch's for the same view ops."""
        strides = _views.layout_of(self).strides if not self._ex.mutable else self._ex.strides(self._n)
        return tuple(strides) if dim is None else strides[norm_dim(int_arg(dim, "stride", "dim"), self.ndim)]

    def storage_offset(self):
        """Where the first element sits in the storage, in elements (torch's view offset)."""
        return _views.layout_of(self).offset if not self._ex.mutable else self._ex.storage_offset(self._n)

    def is_contiguous(self, memory_format=None):
        """Whether the elements sit in row-major order without gaps (as torch decides)."""
        if not self._ex.mutable:
            return _views.layout_of(self).is_contiguous()
        return self._ex.is_contiguous(self._n)
