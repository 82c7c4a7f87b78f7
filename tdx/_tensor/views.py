"""torch's view semantics on executors whose arrays are immutable (MLX).

A view op on such an executor (basic indexing, ``view``/``reshape``, ``transpose``/``permute``,
``squeeze``/``unsqueeze``, ``expand``, ``detach``...) records the result's layout
relative to its root tensor: shape, strides and offset, computed with torch's own rules
(so ``view`` refuses exactly the layouts torch refuses, and ``reshape`` copies exactly
when torch copies). A view of a fresh tensor keeps its layout as a recipe (the op and its
arguments), computed the first time it is read, so that making a view does no arithmetic.
An in-place write to any tensor of the family goes through
:func:`assign`: the new values are scattered into the root's flat buffer through the
writer's index map, and every live view is refreshed from the root. No per-op inverse
rules: one index map serves every view.

Executors that write in place natively (torch) never come here. This module must never
import a framework at module level.

A view that reads the memory as another dtype (``view(dtype)``, ``view_as_real``/``view_as_complex``,
``real``/``imag``) counts its layout in elements of that dtype (its ``cast``; :mod:`.view_bits`): reads
take the root's flat buffer as such elements, writes put their bits back.
"""

from __future__ import annotations

import collections
import math
import threading
import weakref

import numpy as np

from .._errors import TdxRuntimeError, UnsupportedOpError
from . import versions
from .strides import _contiguous, contiguous_strides, swap_keeps_order, view_strides
from .view_bits import reinterpreted, unit


class Layout:
    """Where a view's elements sit in its root's flat buffer (torch's sizes/strides/offset)."""

    __slots__ = ("root", "shape", "strides", "offset", "multi", "detached", "owner", "cast")

    def __init__(self, root, shape, strides, offset, multi=None, detached=False, owner=False):
        self.cast = None  # the native dtype a ``view(dtype)`` (same element size) reads the root's bits as
        self.root, self.offset = root, offset
        self.shape, self.strides = tuple(shape), tuple(strides)
        self.multi = multi  # (function, output number) for one of several views (split, unbind...)
        self.detached = detached  # made by detach(): shares the values, never the gradient
        # the whole of a history-free root (see :func:`bare_root`) whose autograd history it carries
        self.owner = owner

    def is_whole(self, root_shape) -> bool:
        """Whether this view is all of a root shaped ``root_shape``, in its order (no index map needed)."""
        return self.offset == 0 and self.shape == root_shape and self.strides == _contiguous(root_shape)

    def index_map(self) -> np.ndarray:
        """Flat root positions of every element, shaped like the view."""
        idx = np.full(self.shape, self.offset, dtype=np.int64)
        for d, (n, s) in enumerate(zip(self.shape, self.strides)):
            shape = [1] * len(self.shape)
            shape[d] = n
            idx = idx + (np.arange(n, dtype=np.int64) * s).reshape(shape)
        return idx

    def is_contiguous(self) -> bool:
        """torch's rule: row-major strides, where dims of size 1 may have any stride."""
        shape, strides = self.shape, self.strides  # read once: a lazy layout's are properties
        if math.prod(shape) <= 1:
            return True
        for n, s, w in zip(shape, strides, contiguous_strides(shape)):  # a loop, no generator: per-op path
            if n != 1 and s != w:
                return False
        return True


# A root's live views: its ``_fam`` slot, {id(view): weakref(view)} (absent until its first view; keyed by id
# because tensors compare elementwise), so the table goes with its root and making a view reads no global table.
# Dead views are dropped lazily.
# Held while a write computes a tensor's new array from its current one and publishes it, so writes from
# several threads into one tensor (``x[i] = v`` on disjoint elements, ``x += 1``) never lose each other.
WRITE_LOCK = threading.RLock()


def _views_of(root):
    return getattr(root, "_fam", None)


def has_views(t) -> bool:
    """Whether some view of ``t`` (a root) may be alive (dead ones are swept lazily)."""
    return bool(_views_of(t))


def family(root) -> list:
    """The live views of ``root``."""
    views = _views_of(root)
    if not views:
        return []
    return [v for v in (r() for r in list(views.values())) if v is not None]


def layout_of(t) -> Layout:
    """``t``'s layout; a tensor that is no view is its own contiguous root."""
    lay = getattr(t, "_view", None)
    if lay is not None:
        return lay
    shape = tuple(t._n.shape)
    return _layout(t, shape, _contiguous(shape), 0, None, False)


def fill_layout(t) -> dict:
    """The keyword that tells an executor the layout of ``t``, the destination of an in-place random fill:
    ``{"strides": ...}`` where ``t`` is a view that is not contiguous on an executor whose arrays carry no
    layout (torch's fill visits memory in order and takes another path on non-contiguous memory, so a
    draw that follows torch's stream needs the strides), else nothing."""
    if t._ex.mutable:
        return {}
    lay = getattr(t, "_view", None)
    if lay is None or lay.is_contiguous():
        return {}
    return {"strides": tuple(lay.strides)}


def _layout(root, shape: tuple, strides: tuple, offset: int, multi, detached) -> Layout:
    """A :class:`Layout` from tuples, without the constructor's conversions (the per-view-op path)."""
    lay = _new(Layout)
    lay.root, lay.shape, lay.strides, lay.offset, lay.multi, lay.detached = root, shape, strides, offset, multi, \
        detached
    lay.owner = False
    lay.cast = None
    return lay


_new = object.__new__
_ref = weakref.ref


def _drop_dead(views: dict) -> None:
    """Remove the entries of ``views`` whose view has died."""
    for key in [k for k, r in views.items() if r() is None]:
        del views[key]


def _register(root, out) -> None:
    """Add ``out`` to the live views of ``root`` (a tensor that is no view)."""
    try:
        views = root._fam
    except AttributeError:  # root's first view: its (empty) live-view table
        views = root._fam = {}
    views[id(out)] = _ref(out)
    if not len(views) & 63:  # every 64 new entries, drop the views that died  mutate: equivalent (memory only)
        _drop_dead(views)


def link_contiguous(out, root, shape=None):
    """``out`` as a view of all of ``root`` (no view itself) in row-major order: ``reshape``/``view``
    of a fresh tensor, whose strides are always the contiguous ones of the new shape (``out``'s
    shape, a tuple, when the caller has it)."""
    return link_lazy(out, root, (whole, tuple(out._n.shape) if shape is None else shape))


def link(out, src, shape, strides, offset, root=None, multi=None, detached=False):
    """Make ``out`` a view of ``src``'s root with the given layout (in root coordinates).

    ``multi`` names the function and output number when ``out`` is one of several views a
    function returns (torch forbids writing those in place while autograd records);
    ``detached`` marks ``detach()``'s view. Views of such views inherit both.
    """
    parent = getattr(src, "_view", None)
    if parent is not None:
        multi = multi if multi is not None else parent.multi
        detached = detached or parent.detached
    if root is None:
        root = src if parent is None else parent.root
    out._view = _layout(root, shape if shape.__class__ is tuple else tuple(shape),
                        strides if strides.__class__ is tuple else tuple(strides), offset, multi, detached)
    if parent is not None and parent.cast is not None and root is parent.root:
        out._view.cast = parent.cast
    _register(root, out)
    return out


def link_bits(out, src, native_dtype, form: str = "dtype", what: str = ""):
    """Make ``out``, ``src``'s memory read as ``native_dtype`` (``view(dtype)``, ``view_as_real``,
    ``view_as_complex``: ``form`` as :func:`reinterpreted`'s), a view of ``src``'s root: writes through
    either reach the other, as torch's. Its layout counts in elements of ``native_dtype``. ``view(dtype)``
    carries no gradient, as torch's: like ``detach()``'s, its writes are not recorded.

    Raises:
        TdxRuntimeError: ``src``'s layout cannot be read so, with torch's message.
    """
    detached = form == "dtype"
    if detached:
        bare_root(src)  # the view must not keep src's history alive (see detach)
    lay = layout_of(src)
    shape, strides, offset = reinterpreted(lay, native_dtype.size, form, what)
    link(out, src, shape, strides, offset, root=lay.root, detached=detached)
    out._view.cast = None if native_dtype == lay.root._n.dtype else native_dtype
    return out


def bare_root(t):
    """The root of ``t``'s family, made one that holds no autograd history.

    ``detach()`` (and ``.data``) share values with ``t`` but never its history, as torch's: the
    detached view must not keep ``t``'s graph alive. A root whose history is a recorded op (a
    ``grad_fn``) therefore hands its values to a new history-free root and becomes that root's
    whole view, its ``owner``: it keeps its own history, and every view of the family (the
    detached one included) now references only the new root. A leaf root or one without
    history is returned as it is.
    """
    lay = getattr(t, "_view", None)
    root = t if lay is None else lay.root
    m = getattr(root, "_ag", None)
    if m is None or m.node is None:
        return root
    return _rehome(root)


def _rehome(root):
    """Move ``root``'s values and views to a new history-free root; ``root`` becomes its owner view."""
    from .wrapping import wrap

    bare = wrap(root._n, root._ex)
    views = _views_of(root)
    if views is not None:
        del root._fam
    moved = {}
    for key, ref in (views or {}).items():
        v = ref()
        if v is not None:
            v._view.root = bare
            moved[key] = ref
    shape = tuple(root._ex.shape(root._n))
    root._view = Layout(bare, shape, _contiguous(shape), 0, owner=True)
    moved[id(root)] = weakref.ref(root)
    bare._fam = moved
    return bare


def rehome_before_write(t) -> None:
    """Before an in-place op gives root ``t`` a history: if a detached view shares its values,
    move them to a history-free root first (that view must not keep the new history alive)."""
    if getattr(t, "_view", None) is None and any(v._view.detached for v in family(t)):
        _rehome(t)


def anchor(root):
    """The tensor whose history stands for ``root``'s values: its owner view when ``root`` was made
    history-free by :func:`bare_root` and the owner lives, else ``root`` itself."""
    for v in family(root):
        if v._view.owner:
            return v
    return root


class _LazyLayout(Layout):
    """The layout of a view of a root (a tensor that is no view) made by one view op, computed the first
    time it is read (a write into the family, a view of this view, ``stride()``): making the view does
    no arithmetic. ``recipe`` is ``(function, *arguments)``, the arguments taken when the view was made
    (the root's shape then, the op's own arguments); the function gives ``(shape, strides, offset)``."""

    __slots__ = ("recipe", "resolved")
    # a fresh tensor's view is one of no multi-view function, not detached, no owner, its root's dtype:
    # read-only here (never written after it is made), so making one sets three fields, not seven
    multi = cast = None
    detached = owner = False

    def is_contiguous(self) -> bool:  # all of a fresh tensor, reshaped: contiguous, with no layout computed
        recipe = self.recipe
        f = recipe[0]
        if f is whole:
            return True
        if self.resolved is None:  # a transpose of a fresh tensor, or of its reshape: decided from the shape
            if f is swapped_root:
                return swap_keeps_order(*recipe[1:])
            if f is _swapped_view and recipe[1].recipe[0] is whole:
                return swap_keeps_order(recipe[1].recipe[1], recipe[2], recipe[3])
        return Layout.is_contiguous(self)

    def _resolve(self) -> tuple:
        recipe = self.recipe
        self.resolved = r = recipe[0](*recipe[1:])
        return r

    shape = property(lambda self: (self.resolved or self._resolve())[0])
    strides = property(lambda self: (self.resolved or self._resolve())[1])
    offset = property(lambda self: (self.resolved or self._resolve())[2])


def link_lazy(out, root, recipe):
    """``out`` as a view of ``root`` (no view) whose layout is ``recipe``'s (:class:`_LazyLayout`): every
    view op's path on a fresh tensor (``view``/``reshape``/``unsqueeze`` call it themselves)."""
    lay = _new(_LazyLayout)
    lay.root, lay.recipe, lay.resolved = root, recipe, None
    out._view = lay
    try:  # _register's, inlined: every view op's path
        views = root._fam
    except AttributeError:  # root's first view (a projection viewed as heads): its live-view table
        views = root._fam = {}
    views[id(out)] = _ref(out)
    if not len(views) & 63:  # mutate: equivalent (memory only)
        _drop_dead(views)
    return out


def indexed(root_shape: tuple, index) -> tuple:
    """The layout of ``x[index]`` (a basic index) for a contiguous ``x`` of ``root_shape``: the recipe of a basic
    index of a fresh tensor, ``link_lazy(out, root, (indexed, shape, index))``."""
    shape, strides, offset = basic_index(_layout(None, root_shape, _contiguous(root_shape), 0, None, False), index)
    return tuple(shape), tuple(strides), offset


def whole(shape: tuple) -> tuple:
    """The layout of all of a root in row-major order, as ``shape`` (a tuple): the recipe of a reshape of a fresh
    tensor, ``link_lazy(out, root, (whole, shape))``."""
    return shape, _contiguous(shape), 0


_VIEW_ITEMS = (int, slice, type(None), type(Ellipsis))  # the classes of a view-making index's items (no bool)


def link_root_index(out, root, index, basic: bool = False):  # mutate: equivalent (__getitem__ links ints, slices)
    """``out`` as the view ``root[index]`` of ``root``, a tensor that is no view, when ``index`` is basic;
    ``out`` as it is (a copy) for any other index. An int, a slice, None, Ellipsis or a tuple of them
    (``basic`` says the caller saw ints and slices only; the executor checked the bounds) is linked with its
    layout left to compute (:class:`_LazyLayout`)."""
    if not basic and index.__class__ is tuple:
        basic = True
        for it in index:  # a loop, no generator: the per-op path
            if it.__class__ not in _VIEW_ITEMS:
                basic = False
                break
    if basic or index.__class__ in _VIEW_ITEMS:  # mutate: equivalent (swapping the or's operands: speed only)
        return link_lazy(out, root, (indexed, root._n.shape, index))
    view = basic_index(layout_of(root), index)
    return out if view is None else link(out, root, *view, root=root)


def link_swapped(out, src, a: int, b: int):
    """``out`` as ``src`` with dims ``a`` and ``b`` swapped: ``transpose`` (dims already checked, maybe
    negative; a 0-d ``src`` is its own transpose)."""
    lay = src._view
    if lay is None:
        return link_lazy(out, src, (swapped_root, src._n.shape, a, b))
    if lay.__class__ is _LazyLayout:  # a view of a fresh tensor's view (``x.view(...).transpose(1, 2)``): lazy too
        return link_lazy(out, lay.root, (_swapped_view, lay, a, b))
    n = len(lay.shape)
    if not n:
        return link(out, src, (), (), lay.offset, lay.root)
    a, b = a % n, b % n
    shape, strides = list(lay.shape), list(lay.strides)
    shape[a], shape[b] = shape[b], shape[a]
    strides[a], strides[b] = strides[b], strides[a]
    return link(out, src, tuple(shape), tuple(strides), lay.offset, lay.root)


def _swapped_view(lay, a: int, b: int) -> tuple:
    """``(shape, strides, offset)`` of the view laid out as ``lay`` (a lazy one) with dims ``a`` and ``b`` swapped
    (kept by the layout it resolves, never in a cache of layouts: that would keep their roots alive)."""
    return _swapped(lay.shape, lay.strides, lay.offset, a, b)


def swapped_root(shape: tuple, a: int, b: int) -> tuple:
    """``(shape, strides, 0)`` of a contiguous tensor of ``shape`` with dims ``a`` and ``b`` swapped."""
    return _swapped(shape, _contiguous(shape), 0, a, b)


def _swapped(shape: tuple, strides: tuple, offset: int, a: int, b: int) -> tuple:
    if not shape:
        return (), (), offset
    a, b = a % len(shape), b % len(shape)
    shape, strides = list(shape), list(strides)
    shape[a], shape[b] = shape[b], shape[a]
    strides[a], strides[b] = strides[b], strides[a]
    return tuple(shape), tuple(strides), offset


def permuted_root(shape: tuple, order: tuple) -> tuple:
    """``(shape, strides, 0)`` of a contiguous tensor of ``shape`` with its dims in ``order`` (maybe negative)."""
    n = max(len(shape), 1)
    order = [d % n for d in order]
    strides = _contiguous(shape)
    return tuple([shape[i] for i in order]), tuple([strides[i] for i in order]), 0


def link_permuted_root(out, root, order):
    """``out`` as ``root`` (no view) with its dims in ``order`` (checked, maybe negative): ``permute``."""
    return link_lazy(out, root, (permuted_root, root._n.shape, tuple(order)))


# layouts of the view ops, in torch's terms -----------------------------------------------------
def link_pieces(pieces, src, indices, function: str):
    """Link each of ``pieces`` as the view ``src[index]`` (basic indices) of a multi-view function."""
    lay = layout_of(src)
    for i, (piece, index) in enumerate(zip(pieces, indices)):
        link(piece, src, *basic_index(lay, index), root=lay.root, multi=(function, i))
    return pieces


def multi_view_error(lay: Layout, base_written: bool) -> str:
    """torch's message for an in-place write involving one of several views of a function."""
    function, i = lay.multi
    what = "its base or another view of its base has been modified inplace" if base_written else \
        "is being modified inplace"
    return (f"Output {i} of {function} is a view and {what}. This view is the output of a function that returns "
            "multiple views. Such functions do not allow the output views to be modified inplace. You should "
            "replace the inplace operation by an out-of-place one.")


def link_index(out, src, lay, index):
    """``out`` as the view ``src[index]`` of ``src`` (a view laid out as ``lay``) when ``index`` is basic (ints,
    slices, None, Ellipsis), else ``out`` as it is (a copy). A view of a fresh tensor's view
    (``q.view(...).transpose(1, 2)[..., :d]``) is linked with its layout left to compute."""
    if lay.__class__ is _LazyLayout:
        for it in (index if index.__class__ is tuple else (index,)):
            if it.__class__ not in _VIEW_ITEMS:
                break
        else:
            return link_lazy(out, lay.root, (_indexed_view, lay, index))
    view = basic_index(lay, index)
    return out if view is None else link(out, src, *view, root=lay.root)


def _indexed_view(lay, index) -> tuple:
    """The layout of ``v[index]`` (a basic index) for a view ``v`` laid out as ``lay``."""
    shape, strides, offset = basic_index(lay, index)
    return tuple(shape), tuple(strides), offset


def basic_index(lay: Layout, index):
    """The layout ``lay[index]`` has for a basic index (ints, slices, None, Ellipsis), else None."""
    items = index if isinstance(index, tuple) else (index,)
    consumed = 0  # the dims the index consumes; anything but ints, slices, None and Ellipsis: no view
    for i in items:
        c = i.__class__
        if c is slice or c is int or isinstance(i, slice) or (isinstance(i, int) and c is not bool):
            consumed += 1
        elif i is not None and i is not Ellipsis:
            return None
    shape, strides, offset, d = [], [], lay.offset, 0
    lshape, lstrides = lay.shape, lay.strides  # read once: a lazy layout's are properties
    spanned = len(lshape) - consumed  # by the first Ellipsis; a later one spans none (the executor checked it)
    for it in items:
        if it is None:  # torch's unsqueeze stride: what the next dim spans, or 1 at the end
            shape.append(1)
            strides.append(lshape[d] * lstrides[d] if d < len(lshape) else 1)
        elif it is Ellipsis:
            for _ in range(spanned):
                shape.append(lshape[d])
                strides.append(lstrides[d])
                d += 1
            spanned = 0
        elif isinstance(it, slice):
            start, stop, step = it.indices(lshape[d])
            shape.append(len(range(start, stop, step)))
            strides.append(lstrides[d] * step)
            offset += start * lstrides[d]  # kept for empty slices too, as torch's storage_offset
            d += 1
        else:
            offset += (it % lshape[d]) * lstrides[d]
            d += 1
    shape += lshape[d:]
    strides += lstrides[d:]
    return shape, strides, offset


# writes ------------------------------------------------------------------------------------
def _dense(lay: Layout) -> bool:
    """torch's ``is_non_overlapping_and_dense``: the elements fill one gap-free range of the root."""
    if len(lay.shape) == 1:
        return lay.shape[0] < 2 or lay.strides[0] == 1
    need = 1
    for n, s in sorted(((n, s) for n, s in zip(lay.shape, lay.strides) if n >= 2), key=lambda p: p[1]):
        if s != need:
            return False
        need *= n
    return True


def written_layout(t, index):
    """The layout ``t[index] = value`` writes for a valid basic index; None for any other index."""
    lay = layout_of(t)
    items = index if isinstance(index, tuple) else (index,)
    consumed = sum(1 for i in items if i is not None and i is not Ellipsis)
    if consumed > len(lay.shape) or sum(1 for i in items if i is Ellipsis) > 1:
        return None  # the write itself raises torch's IndexError
    d = 0
    for it in items:
        if it is Ellipsis:
            d += len(lay.shape) - consumed
        elif it is not None:
            if isinstance(it, int) and not -lay.shape[d] <= it < lay.shape[d]:
                return None
            d += 1
    return basic_index(lay, index)  # None for an index that is not basic


def check_overlap(t, operands) -> None:
    """Refuse an in-place write into ``t`` from an operand sharing some but not all of its memory.

    torch's rule (``assert_no_partial_overlap``, checked by every in-place elementwise op and
    ``copy_``): two dense tensors of one storage whose element ranges intersect, unless they
    span the same range with the same strides. Layouts that are not dense are not checked, as
    torch's. ``t`` may be a tensor or the :class:`Layout` of an indexed destination.

    Raises:
        TdxRuntimeError: an operand partially overlaps ``t``.
    """
    if t.__class__ is Layout:
        root = t.root
    else:
        lay = getattr(t, "_view", None)
        root = t if lay is None else lay.root
    a = None
    for o in operands:
        lay = getattr(o, "_view", None)
        if o is t or (o if lay is None else lay.root) is not root:  # the same tensor, or other memory
            continue
        if a is None:
            a = t if t.__class__ is Layout else layout_of(t)
            if not math.prod(a.shape) or not _dense(a):
                return
            a_end = a.offset + math.prod(a.shape)
        b = layout_of(o)
        if not math.prod(b.shape) or not _dense(b) or unit(b) != unit(a):  # other units: not compared
            continue
        b_end = b.offset + math.prod(b.shape)
        same = a.offset == b.offset and a_end == b_end
        if (same and a.strides != b.strides) or (not same and a.offset < b_end and b.offset < a_end):
            raise TdxRuntimeError("unsupported operation: some elements of the input tensor and the written-to "
                                  "tensor refer to a single memory location. Please clone() the tensor before "
                                  "performing the operation.")


def write_index(lay: Layout, overlap_ok: bool = False) -> np.ndarray:
    """The flat root positions a write through ``lay`` touches.

    Args:
        lay: the written view's layout.
        overlap_ok: the write puts one value everywhere (``fill_``), which torch allows through
            overlapping elements.

    Raises:
        TdxRuntimeError: the layout is an expanded view whose elements overlap, as torch refuses.
    """
    idx = lay.index_map().ravel()
    if not overlap_ok and np.unique(idx).size != idx.size:
        raise TdxRuntimeError("unsupported operation: more than one element of the written-to tensor refers "
                              "to a single memory location. Please clone() the tensor before performing "
                              "the operation.")
    return idx


WRITE_WATCHERS: list = []  # callables told of every in-place write about to rebind a tensor (see note_write)


def note_write(t) -> None:
    """Tell each watcher that ``t`` is about to take a new value in place. ``tdx.func.vmap``'s
    tracing on MLX watches: a write there would leave a traced array in a tensor that outlives
    the trace, so it maps the function slice by slice instead. A watcher may raise to stop the write."""
    for watch in WRITE_WATCHERS:
        watch(t)


# How long a chain of lazy in-place writes one root may build before its executor starts computing it
# (:meth:`~tdx.backends.base.Executor.settle`). On a lazy executor each write's array depends on the one it
# replaces, so a buffer nobody reads (running statistics, the optimizer state of a parameter nobody reads, an
# accumulated ``.grad``) would hold one more step of graph per step, without bound. A chain ends after
# SETTLE_WRITES writes, or sooner for a large tensor: after as many writes as SETTLE_BYTES holds copies of it
# (each pending write may hold arrays of its size); computing it costs one scheduling per chain.
SETTLE_WRITES = 256
SETTLE_BYTES = 64 << 20


def _chain_limit(native) -> int:
    """The writes a chain into ``native``'s tensor may take before it is computed."""
    nbytes = getattr(native, "nbytes", 0)
    return max(1, min(SETTLE_WRITES, SETTLE_BYTES // nbytes)) if nbytes else SETTLE_WRITES


def count_write(root, native) -> None:
    """Note that ``root`` now holds ``native`` after an in-place write (``root._w``: the writes left in its
    chain); when the chain is full its executor starts computing ``native`` and the chain starts again."""
    try:
        left = root._w - 1
    except AttributeError:  # the tensor's first write
        left = _chain_limit(native) - 1
    if left <= 0:
        root._ex.settle(native)
        left = _chain_limit(native)
    root._w = left


def assign(t, native, overlap_ok: bool = False) -> None:
    """Give ``t`` the value ``native`` (same shape and dtype) as an in-place write torch would make;
    ``overlap_ok`` where every element gets one value (:func:`write_index`).

    All-or-nothing: every new array is computed first, then the root and its views take theirs
    in one step that Ctrl-C cannot split (:func:`publish`).

    Raises:
        TdxRuntimeError: ``t`` is an expanded view whose elements overlap, as torch refuses.
    """
    if WRITE_WATCHERS:
        note_write(t)
    ex = t._ex
    lay = getattr(t, "_view", None)
    if lay is None:
        root = t
        if _views_of(root):
            _check_tape(root)
        new_root = native
    else:
        root = lay.root
        if not lay.detached:  # writes through detach()/.data are untracked by design, as torch's
            _check_tape(root)
        if lay.cast is not None and lay.cast.size == root._n.dtype.size and lay.is_whole(tuple(ex.shape(root._n))):
            new_root = _bits(native, root._n.dtype, ex)  # all of the root's bits, read as another dtype
        elif lay.cast is None and lay.is_whole(tuple(ex.shape(root._n))):
            new_root = native
        else:
            new_root = _scatter(root._n, native, write_index(lay, overlap_ok), ex, lay.cast)
    versions.written(t, root)
    count_write(root, new_root)
    views = family(root)
    if not views:
        root._n = new_root  # one assignment: atomic as it is
        return
    updates = [(root, "_n", new_root)]
    updates += [(v, "_n", _gather(new_root, v._view)) for v in views]
    publish(updates)


def publish(updates) -> None:
    """``setattr(obj, name, value)`` for every ``(obj, name, value)``, all or none under Ctrl-C.

    Python runs a signal handler (``KeyboardInterrupt``) only between bytecodes of Python code.
    The assignments run as one C-level loop over slot descriptors (``map(setattr, ...)`` drained
    by a ``deque``), so no handler can run between two of them; the values they replace are kept
    alive until all are set, so no finalizer or weakref callback runs in the middle either. A
    signal that arrives meanwhile is handled right after the last assignment.
    """
    objs = [u[0] for u in updates]
    names = [u[1] for u in updates]
    values = [u[2] for u in updates]
    replaced = [getattr(o, n, None) for o, n in zip(objs, names)]
    collections.deque(map(setattr, objs, names, values), maxlen=0)  # mutate: equivalent (any maxlen drains the map)
    del replaced


def _flat_units(root_native, cast, ex):
    """``root_native`` as one flat array of ``cast`` elements (its own dtype's when ``cast`` is None): the
    buffer a layout counting in ``cast`` elements indexes; zero bits pad its end to whole elements."""
    import mlx.core as mx  # only immutable executors reach here

    flat = mx.reshape(root_native, (-1,), stream=ex.s)
    if cast is None or cast == flat.dtype:
        return flat
    ratio = cast.size // flat.dtype.size
    if ratio > 1 and flat.shape[0] % ratio:
        flat = mx.concatenate([flat, mx.zeros((ratio - flat.shape[0] % ratio,), flat.dtype)], stream=ex.s)
    return _bits(flat, cast, ex)


def _scatter(root_native, value_native, idx, ex, cast=None):
    """``root_native`` with the flat positions ``idx`` replaced by ``value_native`` (a new array); with
    ``cast``, ``idx`` counts in ``cast`` elements and ``value_native`` holds them."""
    import mlx.core as mx  # only immutable executors reach here

    if not idx.size:
        return root_native
    shape = ex.shape(root_native)
    flat = _flat_units(root_native, cast, ex)
    mask = np.zeros(flat.shape[0], dtype=bool)
    mask[idx] = True
    source = np.zeros(flat.shape[0], dtype=np.int64)  # which written value lands at each position
    source[idx] = np.arange(idx.size)
    # a gather, not a scatter-add into zeros: that would turn a written -0.0 into +0.0
    placed = mx.take(mx.reshape(value_native, (-1,), stream=ex.s), mx.array(source), stream=ex.s)
    new = mx.where(mx.array(mask), placed, flat, stream=ex.s)
    if new.dtype != root_native.dtype:  # back to the root's dtype, without the padding
        new = _bits(new, root_native.dtype, ex)[:math.prod(shape)]
    return mx.reshape(new, shape, stream=ex.s)


def copy_slices(root, value, lay):
    """``root`` with the elements under view layout ``lay`` replaced by ``value``, as a new tensor.

    The tape's record of an in-place write through a view (torch's ``CopySlices``): it is
    differentiable in both ``root`` (untouched positions) and ``value``.
    """
    from .wrapping import wrap

    return wrap(_scatter(root._n, value._n, write_index(lay), root._ex, lay.cast), root._ex)


def as_strided(root, lay):
    """The elements of ``root`` under view layout ``lay``: a view's value, as a new tensor.

    The tape's record of a view of a base written in place (torch's ``AsStridedBackward``).
    """
    from .wrapping import wrap

    return wrap(_gather(root._n, lay), root._ex)


def _bits(native, native_dtype, ex):
    """``native``'s bits read as ``native_dtype`` (of the same element size)."""
    return ex.view_dtype(native, native_dtype)


def _gather(root_native, lay):
    """The elements of ``root_native`` under ``lay``, read as its ``cast`` where it has one."""
    import mlx.core as mx

    ex = lay.root._ex
    cast = lay.cast
    if lay.is_whole(tuple(root_native.shape)) and (cast is None or cast.size == root_native.dtype.size):
        return root_native if cast is None else _bits(root_native, cast, ex)  # all of the root: no index map
    if not math.prod(lay.shape):  # nothing to gather (MLX's gradient of a gather from empty input fails)
        return mx.zeros(lay.shape, root_native.dtype if cast is None else cast)
    flat = _flat_units(root_native, cast, ex)
    return mx.take(flat, mx.array(lay.index_map()) if lay.shape else mx.array(lay.offset), stream=ex.s)


def refresh_one(v) -> None:
    """Recompute view ``v`` from its root."""
    v._n = _gather(v._view.root._n, v._view)


def gathered(root_native, v):
    """The array view ``v`` shows once its root holds ``root_native``."""
    return _gather(root_native, v._view)


def _check_tape(root) -> None:
    """Refuse an unrecorded write (by a tensor that does not require grad, with grad enabled)
    into a family where some tensor requires grad: its gradient would silently go wrong."""
    from ..autograd.grad_mode import is_grad_enabled
    from ..autograd.tape import ACTIVE, meta

    if not ACTIVE[0] or not is_grad_enabled():
        return
    for t in (root, *family(root)):
        m = meta(t)
        if m is not None and m.requires_grad:
            raise UnsupportedOpError(f"an in-place write on {root._ex.device} by a tensor that does not require "
                                     "grad into a tensor (or view) that does is not recorded for autograd; "
                                     "write through a tensor that requires grad, or detach() first")
