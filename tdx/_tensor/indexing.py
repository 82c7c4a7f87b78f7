"""Indexing, ordering and rearranging: ``gather``/``scatter``, masks, ``nonzero``, ``sort``/``topk``/
``unique``, ``roll``/``flip``/``repeat``/``tile``/``repeat_interleave``, ``take``/``argwhere``.

Each op unwraps its operands (checking they share an executor), normalizes torch's argument
forms, calls the executor and wraps the result; methods are attached to :class:`Tensor` by
:func:`wrapping.attach`. This module must never import a framework, never holds a per-executor
special case (those live in the executors), and depends on the Tensor core only, never on
another op family through it.
"""

from __future__ import annotations

from .. import _dtypes as D
from .. import return_types
from .._errors import TdxIndexError, TdxRuntimeError, TdxTypeError
from .operands import _tensor
from .wrapping import (
    attach,
    dims_arg,
    exporter,
    int_arg,
    need_tensor,
    operand,
    shape_args,
    tensor_arg,
    typed_errors,
    wrap,
)

__all__: list = []
_export = exporter(__all__)


class IndexingMethods:
    """The indexing methods of ``tdx.Tensor``."""

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

    def flip(self, *dims, **kwargs):
        """Reverse the order of elements along ``dims`` (positional, a sequence, or ``dims=``)."""
        if "dims" in kwargs and not dims:
            dims = (kwargs.pop("dims"),)
        if kwargs:
            raise TdxTypeError(f"flip() got an unexpected keyword argument {next(iter(kwargs))!r}")
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

    def msort(self):
        """``self`` sorted along dim 0."""
        return self.sort(0).values

    def argwhere(self):
        """Indices of the non-zero elements, as an (n, ndim) int64 tensor."""
        return self.nonzero()

    def nonzero_static(self, *, size, fill_value=-1):
        """``nonzero()`` with exactly ``size`` rows: truncated, or padded with rows of ``fill_value``.

        Raises:
            TdxRuntimeError: a negative ``size``.
        """
        if size < 0:
            raise TdxRuntimeError(f"nonzero_static: 'size' must be an non-negative integer, got {size}")
        idx = self.nonzero()
        n = idx.shape[0]
        if n >= size:
            return idx[:size].contiguous()
        out = idx.new_full((size, idx.shape[1]), fill_value)
        if n:
            out[:n] = idx
        return out

    def take(self, index):
        """Elements of ``self`` read as 1-D at int64 ``index`` (negative counts from the end), shaped as ``index``."""
        index = _tensor(self, index, "take", "index")
        if index.dtype is not D.int64:
            raise TdxRuntimeError(f"take(): Expected a long tensor for index, but got {index.dtype.name}")
        n = self.numel()
        if index.numel():
            if n == 0:
                raise TdxIndexError("take(): tried to take from an empty tensor")
            bad = (index >= n) | (index < -n)
            if bool(bad.any().item()):
                first = index.reshape(-1)[bad.reshape(-1)][0].item()
                raise TdxIndexError(f"take(): index {first} is out of range for a tensor of {n} elements")
        return self.reshape(-1)[index]


for _name, _fn in list(vars(IndexingMethods).items()):
    if callable(_fn) and not _name.startswith("_") and not getattr(_fn, "_typed", False):
        setattr(IndexingMethods, _name, typed_errors(_fn))
attach(IndexingMethods)


@_export
def flip(input, dims):  # noqa: A002 - torch's name
    """Reverse the order of elements along ``dims``."""
    return need_tensor(input, "flip").flip(dims)


@_export
def nonzero_static(input, *, size, fill_value=-1):  # noqa: A002 - torch's name
    """``input.nonzero()`` with exactly ``size`` rows (truncated, or padded with ``fill_value``)."""
    return need_tensor(input, "nonzero_static").nonzero_static(size=size, fill_value=fill_value)


@_export
def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):  # noqa: A002
    """Repeat each element ``repeats`` times; ``repeat_interleave(counts)`` repeats each index."""
    need_tensor(input, "repeat_interleave")
    if repeats is None:  # torch.repeat_interleave(repeats): indices 0..n-1, each repeated
        ex = input._ex
        n = input.shape[0] if input.ndim else 1
        return wrap(ex.arange(0, n, 1, D.int64), ex).repeat_interleave(input, 0, output_size=output_size)
    return input.repeat_interleave(repeats, dim, output_size=output_size)
