"""The in-place view ops: ``squeeze_``, ``unsqueeze_``, ``transpose_``, ``swapaxes_``, ``swapdims_``,
``t_``, ``as_strided_``.

Each changes the tensor's own shape (and strides) and keeps it a view of the same memory, as
torch's. Where the executor's arrays are mutable (torch) the native tensor's own method does it.
Elsewhere (MLX, immutable arrays) the out-of-place view is computed through :mod:`.views` and the
tensor takes over its value, layout and autograd history; a root tensor that still has live views
and whose element order changes becomes a view of a hidden root holding its old memory, so those
views keep reading and writing the same elements. This module must never import a framework and
never holds a per-executor special case beyond the mutable/immutable split.
"""

from __future__ import annotations

import math

from .._errors import NATIVE_ERRORS, TdxRuntimeError
from . import recording as _tape
from ..autograd.grad_mode import MODE as _MODE
from . import views as _views
from .wrapping import attach, reroot as _reroot, typed_errors, wrap

__all__: list = []


def _leaf_check(t) -> None:
    """torch refuses an in-place op on a leaf that requires grad (or a view of one) while grad is on."""
    from ..autograd.grad_mode import is_grad_enabled

    if not is_grad_enabled():
        return
    lay = getattr(t, "_view", None)
    for x, what in ((t, "a leaf Variable"), (None if lay is None else lay.root, "a view of a leaf Variable")):
        m = getattr(x, "_ag", None)
        if m is not None and m.requires_grad and m.node is None:
            raise TdxRuntimeError(f"{what} that requires grad is being used in an in-place operation.")


def _take_over(t, out, lay) -> None:
    """Make ``t`` show ``out``'s value with layout ``lay`` (root coordinates), keeping its views right."""
    if _views.WRITE_WATCHERS:
        _views.note_write(t)
    old = getattr(t, "_view", None)
    if old is not None:  # already a view: the same root, a new layout
        t._view = _views.Layout(old.root, lay.shape, lay.strides, lay.offset, old.multi, old.detached)
    else:
        others = [v for v in _views.family(t) if v is not t and v is not out]
        if others and (lay.offset or lay.strides != _views.contiguous_strides(lay.shape)
                       or math.prod(lay.shape) != math.prod(t._ex.shape(t._n))):
            base = _reroot(t)
            _views.link(t, base, lay.shape, lay.strides, lay.offset, root=base)
    t._n = out._n
    m = getattr(out, "_ag", None)
    if m is not None:
        t._ag = m


def _view_inplace(name: str):
    native = name + "_"

    def method(self, *args, **kwargs):
        ex = self._ex
        if ex.mutable:
            try:
                getattr(self._n, native)(*args, **kwargs)
            except NATIVE_ERRORS as err:
                raise ex.native_error(err) from None
            return self
        _leaf_check(self)
        out = getattr(self, name)(*args, **kwargs)
        if out is self:  # t_() of a vector: nothing changes
            return self
        lay = _views.layout_of(out)
        if getattr(self, "_view", None) is None and lay.root is not self:
            # the view op gave a fresh array (no layout recorded): a contiguous result of the same elements
            lay = _views.Layout(self, lay.shape, lay.strides, 0)
        _take_over(self, out, lay)
        return self

    method.__name__ = native
    method.__doc__ = f"In place ``{name}``: this tensor takes the view's shape and stays a view of its memory."
    return method


class ViewInplaceMethods:
    """The in-place view methods of ``tdx.Tensor``."""

    __slots__ = ()

    def as_strided_(self, size, stride, storage_offset=None):
        """This tensor becomes the view ``as_strided(size, stride, storage_offset)`` of its own memory.

        ``storage_offset`` counts elements from the start of the memory the tensor is a view of
        (its current offset when None), as torch's.

        Raises:
            TdxRuntimeError: the sizes and strides differ in length, or reach outside that memory.
        """
        ex = self._ex
        size, stride = tuple(int(n) for n in size), tuple(int(s) for s in stride)
        if ex.mutable:
            try:
                self._n.as_strided_(size, stride, storage_offset)
            except NATIVE_ERRORS as err:
                raise ex.native_error(err) from None
            return self
        if len(size) != len(stride):
            raise TdxRuntimeError(f"mismatch in length of strides and shape: {len(size)} vs {len(stride)}")
        _leaf_check(self)
        old = _views.layout_of(self)
        offset = old.offset if storage_offset is None else int(storage_offset)
        root = old.root
        extent = ex.shape(root._n)
        if math.prod(size) and offset + sum((n - 1) * s for n, s in zip(size, stride)) >= math.prod(extent):
            raise TdxRuntimeError(f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset {offset} "
                                  f"are out of bounds for storage of {math.prod(extent)} elements")
        if getattr(self, "_view", None) is None:
            root = _reroot(self)
            _views.link(self, root, size, stride, offset, root=root)
        else:
            self._view = _views.Layout(root, size, stride, offset, old.multi, old.detached)
        lay = self._view
        if _tape.ACTIVE[0] and _MODE.enabled and _tape.wants(root):
            self._ag = _tape.call(_views.as_strided, root, lay)._ag
        _views.refresh_one(self)
        return self


for _name in ("squeeze", "unsqueeze", "transpose", "swapaxes", "swapdims", "t"):
    setattr(ViewInplaceMethods, _name + "_", _view_inplace(_name))
for _name, _fn in list(vars(ViewInplaceMethods).items()):
    if callable(_fn) and not _name.startswith("_") and not getattr(_fn, "_typed", False):
        setattr(ViewInplaceMethods, _name, typed_errors(_fn))
attach(ViewInplaceMethods)
