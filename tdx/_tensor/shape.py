"""Shapes and views: ``reshape``/``view``/``permute``/``transpose``/``expand``/``split``, the views
``narrow``/``select``/``unbind``/``diagonal``/``tensor_split``, strides, ``rot90``/``diff``, and the joining
functions (``cat``, ``stack``, ``hstack``, ``meshgrid``, ``broadcast_tensors``...).

Each op unwraps its operands (checking they share an executor), normalizes torch's argument
forms, calls the executor and wraps the result; methods are attached to :class:`Tensor` by
:func:`wrapping.attach`. This module must never import a framework, never holds a per-executor
special case (those live in the executors), and depends on the Tensor core only, never on
another op family through it.
"""

from __future__ import annotations

import operator
import warnings

from .. import _dtypes as D
from .._errors import (NATIVE_ERRORS, DtypeMismatchError, ShapeError, TdxIndexError, TdxRuntimeError, TdxTypeError,
                       TdxValueError)
from . import recording as _tape
from ..autograd.tape import ACTIVE as _TAPE, MODE as _MODE
from ..backends.base import norm_dim
from . import view_bits as _view_bits, views as _views
from .formats import check_memory_format
from .operands import _cut_points, _tensor, cat_promoted
from .tensor import Tensor
from .wrapping import (
    Size,
    _permuted,
    _reshaped,
    attach,
    exporter,
    foreign,
    inline_typed,
    int_arg,
    need_tensor,
    shape_args,
    typed_errors,
    typed_function,
    wrap,
)

__all__: list = []
# the layout recipes of a reshape, a transpose, a permute of a fresh tensor (MLX): those views link them at once
_WHOLE, _SWAPPED_ROOT, _PERMUTED_ROOT = _views.whole, _views.swapped_root, _views.permuted_root
_new = object.__new__
_INT = frozenset((int,))
_export = exporter(__all__)


def _view_as_dtype(src, dtype):
    """``src``'s bytes read as ``dtype`` (``view(dtype)``): on an immutable executor a view of ``src``
    (writes through either reach the other), as torch's, whatever the element sizes."""
    ex = src._ex
    d = D.as_dtype(dtype)
    if src.ndim == 0 and d.itemsize != src.dtype.itemsize:
        raise TdxRuntimeError("self.dim() cannot be 0 to view " + f"{src.dtype.name} as {d.name} (different "
                              "element sizes)")
    names = D._TORCH_SCALAR_NAMES  # c10's names, which torch's messages print
    what = f"{names.get(src.dtype.name, src.dtype.name)} as {names.get(d.name, d.name)}"
    if not ex.mutable:  # torch's checks of the layout (strides, offset), before the array's
        _view_bits.reinterpreted(_views.layout_of(src), d.itemsize, "dtype", what)
    try:
        out = wrap(ex.view_dtype(src._n, ex.native_dtype(d)), ex)
    except NATIVE_ERRORS as err:
        raise ex.native_error(err) from None
    if not ex.mutable:  # the same memory, read as d
        _views.link_bits(out, src, ex.native_dtype(d), "dtype", what)
    return out


def _contiguous(self, memory_format=None):
    if memory_format is not None:
        check_memory_format(memory_format, "contiguous")
    ex = self._ex
    if not ex.mutable:  # a non-contiguous view becomes a copy, as torch's
        lay = self._view  # a tensor that is no view is contiguous
        return self if lay is None or lay.is_contiguous() else wrap(self._n, ex)
    n = ex.contiguous(self._n)
    return self if n is self._n else wrap(n, ex)


_contiguous_checked = typed_errors(_contiguous)


class ShapeMethods:
    """The shape methods of ``tdx.Tensor``."""

    __slots__ = ()

    # shapes ---------------------------------------------------------------------------
    @inline_typed
    def reshape(self, *shape):
        if _TAPE[0] and _MODE.enabled and _tape.wants(self):
            return _tape.call(ShapeMethods.reshape, self, *shape)
        ex = self._ex
        try:
            n = ex.reshape(self._n, shape if shape[0].__class__ is int else shape_args(shape, "reshape"))
        except NATIVE_ERRORS as err:
            raise ex.native_error(err) from None
        except IndexError:
            raise TdxTypeError("reshape() missing 1 required positional argument: 'shape'") from None
        out = _new(Tensor)  # wrap's, inlined: the per-op path
        out._n = n
        out._ex = ex
        out._ag = out._view = None
        out._dt = self._dt  # a reshape keeps the dtype: one read already made serves the result too
        if ex.mutable:  # a torch executor's result is its own view: nothing to link
            return out
        if self._view is None:  # a fresh tensor: a view with the contiguous strides of its shape
            return _views.link_lazy(out, self, (_WHOLE, n.shape))
        return _reshaped(out, self, False)

    @inline_typed
    def view(self, *shape, dtype=None):
        """A view with another ``shape``, or of the same bytes read as ``dtype`` (``view(tdx.float32)``)."""
        if len(shape) == 1 and shape[0].__class__ is tuple and set(map(type, shape[0])) <= _INT:  # view((*lead, -1, d))
            shape = shape[0]  # of ints: as view(*lead, -1, d), its types read without a frame of Python
        if not shape or shape[0].__class__ is not int or dtype is not None:
            if dtype is None and len(shape) == 1 and (isinstance(shape[0], D.dtype) or (
                    shape[0].__class__ is type and shape[0] in D.PYTHON_TYPES)):  # view(float): float64
                dtype = shape[0]
            if dtype is not None:
                return _view_as_dtype(self, dtype)
            if len(shape) == 1 and not isinstance(shape[0], (int, tuple, list)) and not hasattr(shape[0], "__len__"):
                raise TdxTypeError(f"view(): expected a shape or a dtype, got {shape[0]!r}")
            shape = shape_args(shape, "view")
        if _TAPE[0] and _MODE.enabled and _tape.wants(self):
            return _tape.call(ShapeMethods.view, self, *shape)
        ex = self._ex
        try:
            n = ex.view(self._n, shape)
        except NATIVE_ERRORS as err:
            raise ex.native_error(err) from None
        out = _new(Tensor)  # wrap's, inlined: the per-op path
        out._n = n
        out._ex = ex
        out._ag = out._view = None
        out._dt = self._dt  # a reshape keeps the dtype: one read already made serves the result too
        if ex.mutable:  # a torch executor's result is its own view: nothing to link
            return out
        if self._view is None:  # a fresh tensor: a view with the contiguous strides of its shape
            return _views.link_lazy(out, self, (_WHOLE, n.shape))
        return _reshaped(out, self, True)

    def reshape_as(self, other):
        return self.reshape(other.shape)

    def view_as(self, other):
        return self.view(other.shape)

    @inline_typed
    def permute(self, *dims):
        if _TAPE[0] and _MODE.enabled and _tape.wants(self):
            return _tape.call(ShapeMethods.permute, self, *dims)
        ex = self._ex
        for d in dims:  # permute(1, 0) as it is; permute((1, 0)), NumPy ints... normalized
            if d.__class__ is not int:
                dims = shape_args(dims, "permute")
                break
        else:
            if not dims:
                dims = shape_args(dims, "permute")
        try:
            n = ex.permute(self._n, dims)
        except NATIVE_ERRORS as err:
            raise ex.native_error(err) from None
        out = _new(Tensor)  # wrap's, inlined: the per-op path
        out._n = n
        out._ex = ex
        out._ag = out._view = out._dt = None
        if ex.mutable:
            return out
        return _views.link_lazy(out, self, (_PERMUTED_ROOT, self._n.shape, tuple(dims))) if self._view is None \
            else _permuted(out, self, dims)

    @inline_typed
    def transpose(self, dim0, dim1):
        if _TAPE[0] and _MODE.enabled and _tape.wants(self):
            return _tape.call(ShapeMethods.transpose, self, dim0, dim1)
        ex = self._ex
        try:
            n = ex.transpose(self._n, dim0, dim1)
        except NATIVE_ERRORS as err:
            raise ex.native_error(err) from None
        out = _new(Tensor)  # wrap's, inlined: the per-op path
        out._n = n
        out._ex = ex
        out._ag = out._view = None
        out._dt = self._dt  # the same dtype: a read already made serves the result too
        if ex.mutable or self._view is not None:  # a fresh tensor's transpose (MLX) links its lazy layout here
            return out if ex.mutable else _views.link_swapped(out, self, dim0, dim1)
        return _views.link_lazy(out, self, (_SWAPPED_ROOT, self._n.shape, dim0, dim1))

    swapaxes = swapdims = transpose

    @inline_typed  # raises only its own error; transpose translates the framework's
    def t(self):
        n = self._n.ndim
        if n == 2:
            return self.transpose(0, 1)
        if n > 2:
            raise TdxRuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {n}D")
        return self

    @property
    def T(self):  # noqa: N802 - torch's name
        return self.permute(tuple(range(self._n.ndim - 1, -1, -1)))

    @property
    def mT(self):  # noqa: N802 - torch's name
        return self.transpose(-2, -1)

    def squeeze(self, dim=None, *dims):
        if dims:  # squeeze(0, 1): the dims one by one, as torch's int-list parser takes them
            dim = (dim, *dims)
        ex = self._ex
        out = wrap(ex.squeeze(self._n, dim), ex)
        return out if ex.mutable else _reshaped(out, self, must_view=True)

    @inline_typed
    def unsqueeze(self, dim):
        if _TAPE[0] and _MODE.enabled and _tape.wants(self):
            return _tape.call(ShapeMethods.unsqueeze, self, dim)
        ex = self._ex
        try:
            n = ex.unsqueeze(self._n, dim)
        except NATIVE_ERRORS as err:
            raise ex.native_error(err) from None
        out = _new(Tensor)  # wrap's, inlined: the per-op path
        out._n = n
        out._ex = ex
        out._ag = out._view = None
        out._dt = self._dt  # a reshape keeps the dtype: one read already made serves the result too
        if ex.mutable:  # a torch executor's result is its own view: nothing to link
            return out
        if self._view is None:  # a fresh tensor: a view with the contiguous strides of its shape
            return _views.link_lazy(out, self, (_WHOLE, n.shape))
        return _reshaped(out, self, True)

    def flatten(self, start_dim=0, end_dim=-1):
        ex = self._ex
        out = wrap(ex.flatten(self._n, start_dim, end_dim), ex)
        if ex.mutable:
            return out
        return _reshaped(out, self, must_view=False)  # a 1-D input too: torch's flatten is then a view

    def ravel(self):
        return self.contiguous().view(-1)  # torch's definition: a view where contiguous, else a copy

    def expand(self, *sizes):
        ex = self._ex
        out = wrap(ex.expand(self._n, shape_args(sizes, "expand")), ex)
        if ex.mutable:
            return out
        lay = _views.layout_of(self)
        shape = ex.shape(out.native)
        lead = len(shape) - len(lay.shape)
        strides = [0] * lead + [0 if have == 1 and want != 1 else s
                                for have, want, s in zip(lay.shape, shape[lead:], lay.strides)]
        return _views.link(out, self, shape, strides, lay.offset)

    def expand_as(self, other):
        return self.expand(other.shape)

    @inline_typed
    def contiguous(self, memory_format=None):
        ex = self._ex
        if memory_format is None and ex.mutable and not _TAPE[0]:  # the per-op path: nothing to check or record
            try:
                n = ex.contiguous(self._n)
            except NATIVE_ERRORS as err:
                raise ex.native_error(err) from None
            if n is self._n:
                return self
            out = _new(Tensor)  # wrap's, inlined
            out._n = n
            out._ex = ex
            out._ag = out._view = out._dt = None
            return out
        if memory_format is None and not (ex.mutable or _TAPE[0]):  # _contiguous's, inlined: nothing to record
            return self if self._view is None or self._view.is_contiguous() else wrap(self._n, ex)
        return _contiguous_checked(self, memory_format)

    def split(self, split_size_or_sections, dim=0):
        """Pieces of ``split_size`` along ``dim`` (the last one smaller), or of the listed sizes."""
        ex, native = self._ex, self._n
        n = ex.shape(native)[norm_dim(dim, native.ndim)] if native.ndim else 0
        if isinstance(split_size_or_sections, int):
            step = split_size_or_sections
            if step < 0:
                raise TdxRuntimeError(f"split expects split_size be non-negative, but got split_size={step}")
            if step == 0 and n:
                raise TdxRuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension size of {n}")
            sizes = [0] if step == 0 else [step] * (n // step) + ([n % step] if n % step or n == 0 else [])
        else:
            sizes = [int(s) for s in split_size_or_sections]
        pieces = tuple(wrap(p, ex) for p in ex.split(native, sizes, dim))
        if not ex.mutable:
            d, starts = norm_dim(dim, native.ndim), [0]
            for size in sizes:
                starts.append(starts[-1] + size)
            _views.link_pieces(pieces, self, [(slice(None),) * d + (slice(a, b),) for a, b in
                                              zip(starts, starts[1:])], "SplitWithSizes")
        return pieces

    def chunk(self, chunks, dim=0):
        if not isinstance(chunks, int) or chunks <= 0:
            raise (TdxTypeError if not isinstance(chunks, int) else TdxRuntimeError)(
                f"chunk expects `chunks` to be greater than 0, got: {chunks}")
        from ..backends.base import norm_dim

        n = self.shape[norm_dim(dim, self._n.ndim)]
        return self.split(max(1, -(-n // chunks)), dim)

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
            items = _cut_points(indices_or_sections, "tensor_split")
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
            return self._view is None or self._view.is_contiguous()
        return self._ex.is_contiguous(self._n)

    # rearranging ---------------------------------------------------------------------------------
    def diff(self, n=1, dim=-1, prepend=None, append=None):
        """The ``n``-th forward difference along ``dim`` (``!=`` for bools), after adding ``prepend``/``append``."""
        if isinstance(n, bool) or not isinstance(n, int):
            raise TdxTypeError(f"diff(): argument 'n' must be int, not {type(n).__name__}")
        if self.ndim == 0:
            raise ShapeError("diff expects input to be at least one-dimensional")
        if n < 0:
            raise TdxRuntimeError(f"order must be non-negative but got {n}")
        d = norm_dim(dim, self.ndim)
        parts = []
        for name, extra in (("prepend", prepend), ("append", append)):
            if extra is None:
                continue
            extra = _tensor(self, extra, "diff", name)
            if extra.ndim != self.ndim:
                raise ShapeError(f"diff(): {name} must have input's {self.ndim} dims, got {extra.ndim}")
            for i, (a, b) in enumerate(zip(self.shape, extra.shape)):
                if i != d and a != b:
                    raise ShapeError(f"diff(): {name} must match input's shape except along dim {d}; "
                                     f"input.size({i}) = {a}, but {name}.size({i}) = {b}")
            parts.append((name, extra))
        if n == 0:
            return self
        x = self
        if parts:
            x = cat_promoted([t for name, t in parts if name == "prepend"] + [self] +
                             [t for name, t in parts if name == "append"], d)
        for _ in range(min(n, x.shape[d])):
            m = x.shape[d] - 1
            hi, lo = x.narrow(d, 1, m), x.narrow(d, 0, m)
            x = hi.logical_xor(lo) if x.dtype is D.bool_ else hi - lo
        return x

    def broadcast_to(self, size):
        """``self`` expanded (a view) to ``size``; -1 keeps a dim."""
        return self.expand(size)

    def _flip_at_least(self, op: str, dim: int):
        if self.ndim <= dim:
            raise ShapeError(f"{op}(): Input must be >= {dim + 1}-d, got {self.ndim}-d")
        return self.flip(dim)

    def fliplr(self):
        """Reverse the columns (dim 1) of a tensor of at least 2 dims."""
        return self._flip_at_least("fliplr", 1)

    def flipud(self):
        """Reverse the rows (dim 0) of a tensor of at least 1 dim."""
        return self._flip_at_least("flipud", 0)

    def rot90(self, k=1, dims=(0, 1)):
        """Rotate by 90 degrees ``k`` times in the plane of ``dims`` (from the first towards the second)."""
        dims = [int(x) for x in dims]
        if len(dims) != 2:
            raise TdxRuntimeError(f"rot90(): expected total rotation dims == 2, but got dims = {len(dims)}")
        n = self.ndim
        if n < 2:
            raise ShapeError(f"rot90(): expected total dims >= 2, but got total dims = {n}")
        d0, d1 = norm_dim(dims[0], n), norm_dim(dims[1], n)
        if d0 == d1:
            raise TdxRuntimeError(f"rot90(): expected rotation dims to be different, but got dim0 = {dims[0]} and "
                                  f"dim1 = {dims[1]}")
        k = int(k) % 4
        if k == 1:
            return self.flip(d1).transpose(d0, d1)
        if k == 2:
            return self.flip(d0, d1)
        if k == 3:
            return self.flip(d0).transpose(d0, d1)
        return self.clone()


for _name, _fn in list(vars(ShapeMethods).items()):
    if callable(_fn) and not _name.startswith("_") and not getattr(_fn, "_typed", False):
        setattr(ShapeMethods, _name, typed_errors(_fn))
attach(ShapeMethods)


def _natives(tensors, op: str):
    if isinstance(tensors, Tensor):
        raise TdxTypeError(f"{op}(): expected a list or tuple of Tensors, got a Tensor")
    if not tensors:  # torch's words and kinds: cat's own check (ValueError), the TensorList one for the rest
        if op == "cat":
            raise TdxValueError("torch.cat(): expected a non-empty list of Tensors")
        raise TdxRuntimeError(f"{op} expects a non-empty TensorList")
    first = need_tensor(tensors[0], op, "tensors")
    ex = first._ex
    out = []
    for t in tensors:
        if t.__class__ is not Tensor:  # the common case skips the call (Parameters report Tensor too)
            need_tensor(t, op, "tensors")
        out.append(t._n if t._ex is ex else foreign(op, ex, t))
    return ex, out


def _cat(tensors, dim=0):
    ex, natives = _natives(tensors, "cat")
    return wrap(ex.cat(natives, dim), ex)


_cat_checked = typed_function(_cat, record=True)


def cat(tensors, dim=0, *args, **kwargs):
    """Concatenate tensors along an existing dim (dtypes promote as torch's)."""
    # the per-call path (a KV cache grows by it every token): a list or tuple of plain tensors of one executor,
    # nothing recorded (no tape, or grad mode off: generation), goes to the kernel in this frame; anything else
    # (and any error) takes the checked path
    if not (args or kwargs or (_TAPE[0] and _MODE.enabled)) and (
            tensors.__class__ is tuple or tensors.__class__ is list) and tensors:
        first = tensors[0]
        if first.__class__ is Tensor:
            ex = first._ex
            natives = []
            for t in tensors:
                if t.__class__ is not Tensor or t._ex is not ex:
                    break
                natives.append(t._n)
            else:
                try:
                    n = ex.cat(natives, dim)
                except NATIVE_ERRORS:
                    n = None
                if n is not None:
                    out = _new(Tensor)  # wrap's, inlined
                    out._n = n
                    out._ex = ex
                    out._ag = out._view = out._dt = None
                    return out
    if kwargs and not args and dim == 0:  # dim left at its default: NumPy's axis= may name it (cat(ts, axis=1))
        return _cat_checked(tensors, **kwargs)
    return _cat_checked(tensors, dim, *args, **kwargs)


__all__.append("cat")


@_export(record=True)
def stack(tensors, dim=0):
    """Join equal-shaped tensors along a new dim."""
    ex, natives = _natives(tensors, "stack")
    return wrap(ex.stack(natives, dim), ex)


concat = concatenate = cat

__all__ += ["concat", "concatenate"]


# broadcasting -----------------------------------------------------------------------------------------
def _broadcast(shapes, what: str = "shape") -> Size:
    """The broadcast of ``shapes`` (tuples of ints), with torch's errors."""
    ndim = max((len(s) for s in shapes), default=0)
    out = [1] * ndim
    for i, shape in enumerate(shapes):
        for j in range(-1, -len(shape) - 1, -1):
            n = shape[j]
            if n < 0:
                raise TdxValueError(f"Attempting to broadcast a dimension with negative length! (got {n} in "
                                    f"{what} {i}: {tuple(shape)})")
            if n == 1 or n == out[j]:
                continue
            if out[j] != 1:
                raise ShapeError(f"Attempting to broadcast a dimension of length {n} at {j}! Mismatching "
                                 f"{what} {i} had {tuple(shape)}; but expected shape should be broadcastable to "
                                 f"{out}")
            out[j] = n
    return Size(out)


@_export(record=True)
def broadcast_shapes(*shapes) -> Size:
    """The shape tensors of ``shapes`` (ints or sequences of ints) broadcast to, as a ``tdx.Size``."""
    norm = []
    for shape in shapes:
        if isinstance(shape, (tuple, list)):
            items = shape
        elif isinstance(shape, int) or hasattr(shape, "__index__"):
            items = (shape,)
        else:
            raise TdxTypeError(f"broadcast_shapes(): expected ints or sequences of ints, got "
                               f"{type(shape).__name__}")
        try:
            norm.append(tuple(operator.index(n) for n in items))
        except TypeError:
            raise TdxTypeError(f"broadcast_shapes(): a shape holds ints only, got {shape!r}") from None
    return _broadcast(norm)


def _same_executor(tensors, op: str) -> list:
    """``tensors`` on the first one's executor: torch's mixed-device error unless auto_transfer moves them."""
    ex = tensors[0]._ex
    return [t if t._ex is ex else wrap(foreign(op, ex, t), ex) for t in tensors]


@_export(record=True)
def broadcast_tensors(*tensors) -> tuple:
    """The tensors expanded (as views) to their common broadcast shape."""
    for t in tensors:
        need_tensor(t, "broadcast_tensors", "tensors")
    if not tensors:
        return ()
    tensors = _same_executor(tensors, "broadcast_tensors")
    shape = _broadcast([tuple(t.shape) for t in tensors], "tensor")
    return tuple(t.expand(shape) for t in tensors)


# rank lifting and stacking ----------------------------------------------------------------------------
def _lift(t, n: int):
    """``t`` viewed with at least ``n`` dims, as torch's atleast_{n}d places the new ones."""
    if t.ndim >= n:
        return t
    if t.ndim == 0:
        return t.reshape((1,) * n)
    if t.ndim == 1:
        return t.unsqueeze(0) if n == 2 else t.unsqueeze(0).unsqueeze(2)
    return t.unsqueeze(2)


def _atleast(tensors, n: int):
    single = len(tensors) == 1 and not isinstance(tensors[0], (list, tuple))
    seq = tensors[0] if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)) else tensors
    out = tuple(_lift(need_tensor(t, f"atleast_{n}d", "tensors"), n) for t in seq)
    return out[0] if single else out


@_export(record=True)
def atleast_1d(*tensors):
    """Each tensor viewed with at least 1 dim (a tensor for one argument, else a tuple)."""
    return _atleast(tensors, 1)


@_export(record=True)
def atleast_2d(*tensors):
    """Each tensor viewed with at least 2 dims (a 1-D tensor becomes one row)."""
    return _atleast(tensors, 2)


@_export(record=True)
def atleast_3d(*tensors):
    """Each tensor viewed with at least 3 dims ((n,) becomes (1, n, 1); (m, n) becomes (m, n, 1))."""
    return _atleast(tensors, 3)


def _tensor_list(tensors, op: str) -> list:
    if not isinstance(tensors, (list, tuple)):
        raise TdxTypeError(f"{op}(): argument 'tensors' must be tuple of Tensors, not {type(tensors).__name__}")
    if not tensors:
        raise TdxRuntimeError(f"{op} expects a non-empty TensorList")
    return [need_tensor(t, op, "tensors") for t in tensors]


@_export(record=True)
def hstack(tensors):
    """Concatenate column-wise: along dim 1, or dim 0 for 1-D tensors (0-d ones become 1-D)."""
    parts = [_lift(t, 1) for t in _tensor_list(tensors, "hstack")]
    return cat_promoted(parts, 0 if parts[0].ndim == 1 else 1)


@_export(record=True)
def vstack(tensors):
    """Concatenate row-wise (dim 0), after viewing each tensor with at least 2 dims."""
    return cat_promoted([_lift(t, 2) for t in _tensor_list(tensors, "vstack")], 0)


@_export(record=True)
def row_stack(tensors):
    """Alias of :func:`vstack`."""
    return cat_promoted([_lift(t, 2) for t in _tensor_list(tensors, "row_stack")], 0)


@_export(record=True)
def dstack(tensors):
    """Concatenate depth-wise (dim 2), after viewing each tensor with at least 3 dims."""
    return cat_promoted([_lift(t, 3) for t in _tensor_list(tensors, "dstack")], 2)


@_export(record=True)
def column_stack(tensors):
    """Concatenate along dim 1, 0-d and 1-D tensors becoming columns."""
    parts = _tensor_list(tensors, "column_stack")
    return cat_promoted([t.reshape(t.numel(), 1) if t.ndim <= 1 else t for t in parts], 1)


# grids and index sets -------------------------------------------------------------------------------
@_export(record=True)
def meshgrid(*tensors, indexing=None) -> tuple:
    """Coordinate grids of 0-D/1-D tensors: ``indexing="ij"`` (matrix) or ``"xy"`` (Cartesian)."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if not tensors:
        raise TdxRuntimeError("meshgrid expects a non-empty TensorList")
    if indexing is None:
        warnings.warn("torch.meshgrid: in an upcoming release, it will be required to pass the indexing "
                      "argument.", UserWarning, stacklevel=3)
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise TdxRuntimeError(f'torch.meshgrid: indexing must be one of "xy" or "ij", but received: {indexing}')
    for t in tensors:
        if need_tensor(t, "meshgrid", "tensors").ndim > 1:
            raise ShapeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got a "
                             f"{t.ndim}-D tensor of shape {list(t.shape)}")
    tensors = _same_executor(tensors, "meshgrid")
    if any(t.dtype is not tensors[0].dtype for t in tensors):
        raise DtypeMismatchError(f"meshgrid expects all tensors to have the same dtype, got "
                                 f"{[t.dtype.name for t in tensors]}")
    ts = list(tensors)
    swap = indexing == "xy" and len(ts) >= 2
    if swap:
        ts[0], ts[1] = ts[1], ts[0]
    shape = tuple(t.numel() for t in ts)
    grids = [t.reshape(tuple(s if j == i else 1 for j, s in enumerate(shape))).expand(shape)
             for i, t in enumerate(ts)]
    if swap:
        grids[0], grids[1] = grids[1], grids[0]
    return tuple(grids)


@_export(record=True)
def cartesian_prod(*tensors):
    """All combinations of the elements of 1-D tensors, one per row (the tensor itself for one)."""
    for t in tensors:
        if need_tensor(t, "cartesian_prod", "tensors").ndim != 1:
            raise ShapeError(f"cartesian_prod(): Expect a 1D vector, but got shape {list(t.shape)}")
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return stack([g.reshape(-1) for g in grids], 1)
