"""MLX basic indexing with torch's semantics: integer and slice indexing, ``getitem``/``setitem``.

Every op names its stream (``self.s``), follows torch's promotion and checks, and raises typed errors.
Must never import torch or the facade.
"""

from __future__ import annotations

import mlx.core as mx
import numpy as np

from ..._errors import TdxIndexError, TdxRuntimeError, TdxValueError
from ._indexing import fit_scalar, scalar_name
from ._rules import gathered
from ._streams import EVAL_LOCK, THREAD as _THREAD
from ._value_bounds import KNOWN, bounds as value_bounds, carry as carry_bounds, start_pending


_INDEX_INTS = frozenset((mx.int64, mx.int32, mx.uint8))  # torch's index dtypes besides bool (byte: a mask)


def _consumed(items) -> int:
    """The dims of the indexed array that index ``items`` take (a bool array its own ndim; None, Ellipsis and a
    scalar bool none; anything else one): what an Ellipsis leaves to span."""
    return sum(it.ndim if isinstance(it, mx.array) and it.dtype == mx.bool_ else
               0 if it is None or it is Ellipsis or isinstance(it, bool) else 1 for it in items)


def _integer_indexed(index) -> bool:
    """Whether ``index`` holds an integer index array (torch's ``index_put_``, which wants the value's dtype)."""
    items = index if isinstance(index, tuple) else (index,)
    return any(isinstance(it, (list, tuple, range, np.ndarray)) or (isinstance(it, mx.array) and it.dtype != mx.bool_)
               for it in items)


class MLXGatherOps:
    """MLX basic indexing with torch's semantics: integer and slice indexing, ``getitem``/``setitem``."""

    __slots__ = ()

    # indexing -------------------------------------------------------------------------
    def _index(self, x, index):
        """Turn a torch-style index into one MLX accepts, checking bounds as torch does."""
        items = index if isinstance(index, tuple) else (index,)
        out, dim = [], 0
        consumed = _consumed(items)
        if consumed > x.ndim:  # an Ellipsis spans no dims then, never fewer: x[..., 1:] of a 0-d tensor
            raise TdxIndexError(f"too many indices for tensor of dimension {x.ndim}")
        for it in items:
            if it is None:
                out.append(None)
                continue
            if it is Ellipsis:
                out.append(it)
                dim += x.ndim - consumed
                continue
            if isinstance(it, (list, tuple, range)):  # torch reads a tuple in an index, or a range, as a list
                if not it:
                    it = mx.array([], dtype=mx.int64)
                else:  # all bools: a mask; else int64, floats cut toward zero (torch's x[[1.7]] is x[[1]])
                    it = np.asarray(it)
                    it = mx.array(it.astype(np.int64) if it.dtype.kind == "f" else it)
            if isinstance(it, np.ndarray):
                it = mx.array(it)
            if isinstance(it, int):
                size = x.shape[dim] if dim < x.ndim else None
                if size is None:
                    raise TdxIndexError(f"too many indices for tensor of dimension {x.ndim}")
                if not -size <= it < size:
                    raise TdxIndexError(f"index {it} is out of bounds for dimension {dim} with size {size}")
                out.append(it)
                dim += 1
            elif isinstance(it, slice):
                if it.step is not None and it.step <= 0:
                    raise TdxValueError("step must be greater than zero")
                out.append(it)
                dim += 1
            elif isinstance(it, mx.array):
                if it.dtype == mx.bool_:
                    k = max(it.ndim, 1)
                    if it.ndim and tuple(it.shape) != tuple(x.shape[dim:dim + it.ndim]):
                        raise TdxIndexError(f"The shape of the mask {list(it.shape)} at index {dim} does "
                                            f"not match the shape of the indexed tensor {list(x.shape)}")
                    with EVAL_LOCK:  # one thread evaluates the shared stream at a time
                        nz = np.nonzero(np.array(it))
                    out.extend(mx.array(n.astype(np.int64)) for n in nz)
                    dim += k
                else:
                    if it.dtype not in _INDEX_INTS:  # torch refuses int8/int16 indices
                        raise TdxIndexError("tensors used as indices must be long, int, byte or bool tensors")
                    size = x.shape[dim] if dim < x.ndim else 0
                    known = value_bounds(it) if it.size else None
                    if known is not None and -size <= known[0] and known[1] < size:  # nothing to read
                        if known[2]:
                            start_pending(it)
                    elif it.size:
                        with EVAL_LOCK:
                            lo, hi = int(mx.min(it).item()), int(mx.max(it).item())
                        if lo < -size or hi >= size:
                            bad = hi if hi >= size else lo
                            raise TdxIndexError(f"index {bad} is out of bounds for dimension {dim} with size {size}")
                    out.append(it)
                    dim += 1
            else:
                raise TdxIndexError(f"only integers, slices (`:`), ellipsis (`...`), None and long or byte "
                                    f"Variables are valid indices (got {type(it).__name__})")
        if dim > x.ndim:
            raise TdxIndexError(f"too many indices for tensor of dimension {x.ndim}")
        return tuple(out)

    @staticmethod
    def _one_ellipsis(x, index):
        """``index`` with every Ellipsis after the first dropped, as torch reads it: each Ellipsis moves torch's
        dim by the dims the others leave, so a later one spans dims already passed and is valid only where those
        are none, or where nothing but Ellipsis follows it (``x[..., None, ...]`` is ``x[..., None]``).

        Raises:
            TdxIndexError: an index follows a later Ellipsis that spans some dims (torch's IndexError).
        """
        if index.__class__ is not tuple:
            return index
        first = second = -1
        for k, it in enumerate(index):  # a loop that stops at the second Ellipsis: every write's path
            if it is Ellipsis:
                if first >= 0:
                    second = k
                    break
                first = k
        if second < 0:
            return index
        spanned = x.ndim - _consumed(index)
        if spanned > 0 and any(it is not Ellipsis for it in index[second:]):
            raise TdxIndexError(f"too many indices for tensor of dimension {x.ndim}: each Ellipsis ('...') spans the "
                                f"{spanned} dims the other indices leave, so an index after the second one "
                                "passes the last dim")
        return tuple(it for k, it in enumerate(index) if it is not Ellipsis or k == first)

    @staticmethod
    def _scalar_bools(x, index):
        """``(y, index')`` for an index holding scalar bools (``True``, ``False``, 0-d bool arrays),
        else None. torch reads such a bool as an index tensor of shape (1,) (True) or (0,) (False)
        over a new axis of size 1: ``y`` is ``x`` with those axes added (a reshape) and ``index'``
        indexes them with ``[0]`` or ``[]``, so they broadcast with the other index tensors."""
        items = index if isinstance(index, tuple) else (index,)
        flags = [it if isinstance(it, bool) else bool(it.item()) if isinstance(it, mx.array) and
                 it.dtype == mx.bool_ and it.ndim == 0 else None for it in items]
        if all(f is None for f in flags):
            return None
        first, second = [], []
        for it, flag in zip(items, flags):
            if flag is not None:
                first.append(None)
                second.append(mx.array([0] if flag else [], dtype=mx.int64))
            elif it is None or it is Ellipsis:
                first.append(it)
                second.append(slice(None) if it is None else it)
            else:
                first.extend([slice(None)] * (it.ndim if isinstance(it, mx.array) and it.dtype == mx.bool_ else 1))
                second.append(it)
        if sum(1 for it in first if isinstance(it, slice)) > x.ndim:
            raise TdxIndexError(f"too many indices for tensor of dimension {x.ndim}")
        return x[tuple(first)], tuple(second)

    def getitem_slices(self, x, index):
        """``x[index]`` for a slice or a tuple of slices without a step and at most one Ellipsis (the facade saw
        that): torch clamps such slices as MLX does and both place the Ellipsis alike, so only the count of dims
        and an empty ``x`` need :meth:`getitem`."""
        if self._stream is None or not _THREAD.ready:
            self.s  # noqa: B018 - as in getitem
        shape = x.shape
        if (len(index) if index.__class__ is tuple else 1) > len(shape) or 0 in shape:
            return self.getitem(x, index)
        return carry_bounds(x, x[index]) if KNOWN and id(x) in KNOWN else x[index]

    def getitem(self, x, index):
        if self._stream is None or not _THREAD.ready:
            self.s  # noqa: B018 - this thread's default stream made the shared one before ``x[...]`` runs on it
        if index.__class__ is int:
            shape = x.shape
            if shape and -shape[0] <= index < shape[0]:
                return carry_bounds(x, x[index]) if KNOWN and id(x) in KNOWN else x[index]  # the common case, checked here in full
        elif index.__class__ is tuple:  # ints, slices, None and one Ellipsis: checked here in full
            shape = x.shape
            ndim = len(shape)
            d = 0
            rest = -1  # the dims an Ellipsis spans, once one is seen
            for it in index:
                c = it.__class__
                if c is slice:
                    step = it.step
                    if step is not None and (step.__class__ is not int or step <= 0) or d >= ndim:
                        break
                    d += 1
                elif c is int:
                    if d >= ndim or not -shape[d] <= it < shape[d]:
                        break
                    d += 1
                elif it is Ellipsis:
                    if rest >= 0:
                        break
                    rest = ndim - len(index) + 1  # what the others leave (None adds no dim of x)
                    for i in index:
                        if i is None:
                            rest += 1
                    if rest < 0:
                        break
                    d += rest
                elif it is not None:
                    break
            else:
                out = gathered(x, x[index]) if 0 in shape else x[index]
                return carry_bounds(x, out) if KNOWN and id(x) in KNOWN else out
        if index.__class__ is slice and not x.ndim:
            raise TdxIndexError("slice() cannot be applied to a 0-dim tensor.")
        index = self._one_ellipsis(x, index)
        split = self._scalar_bools(x, index)
        if split is not None:
            return self.getitem(*split)
        return carry_bounds(x, gathered(x, x[self._index(x, index)]))  # the values are x's

    def setitem(self, x, index, value):
        """``x`` with ``x[index] = value`` applied, as a new array (``x`` itself is never mutated)."""
        self.s  # noqa: B018 - as in getitem: ``out[...] = value`` runs on this thread's default stream
        if not isinstance(value, mx.array):
            value = fit_scalar(value, self._tdx(x), fill=False)
        if isinstance(index, mx.array) and index.dtype == mx.bool_ and tuple(index.shape) == tuple(x.shape) \
                and not (isinstance(value, mx.array) and value.ndim):  # values in mask order take the general path
            return mx.where(index, self._cast(value, self._tdx(x)), x, stream=self.s)
        if isinstance(value, mx.array) and value.dtype != x.dtype and _integer_indexed(index):
            raise TdxRuntimeError(f"Index put requires the source and destination dtypes match, got "
                                  f"{scalar_name(self._tdx(x))} for the destination and "
                                  f"{scalar_name(self._tdx(value))} for the source.")
        index = self._one_ellipsis(x, index)
        split = self._scalar_bools(x, index)
        if split is not None:  # written through the array with the bools' axes added, then reshaped back
            return mx.reshape(self.setitem(*split, value), x.shape, stream=self.s)
        out = mx.array(x)
        out[self._index(x, index)] = self._cast(value, self._tdx(x))
        return out
