"""Copying forms of views and layout utilities: the ``*_copy`` functions (``expand_copy``,
``permute_copy``...), ``unsafe_chunk``/``unsafe_split``/``split_with_sizes``, ``Tensor.unfold``,
``sum_to_size``, ``as_strided`` (with ``_copy`` and ``_scatter``), ``fill``, ``resize_``/``resize_as_``.

Executors with a kernel of torch's signature run it; elsewhere the composites here are the view
followed by ``clone`` (copies never alias), or gathers at computed flat positions (``as_strided``,
``unfold``). This module must never import a framework.
"""

from __future__ import annotations

from .. import _dtypes as D
from .._errors import TdxRuntimeError
from ..backends.base import norm_dim
from .kernels import install, method_of
from .tensor import Tensor

__all__: list = []


def _copied(view: str):
    def fn(input, *args, **kwargs):  # noqa: A002
        out = getattr(input, view)(*args, **kwargs)
        return tuple(o.clone() for o in out) if isinstance(out, (tuple, list)) else out.clone()

    fn.__name__ = f"{view}_copy"
    fn.__doc__ = f"``{view}`` as a new tensor (never a view), as ``torch.{view}_copy``."
    return fn


def _forward(method: str, doc: str):
    def fn(input, *args, **kwargs):  # noqa: A002
        return getattr(input, method)(*args, **kwargs)

    fn.__doc__ = doc
    return fn


def _strided_index(input, size, stride, storage_offset=0):
    """Flat positions (into ``input``'s elements in order) that ``as_strided(size, stride, offset)`` reads."""
    idx = input.new_zeros(tuple(size), dtype=D.int64) + (storage_offset or 0)
    for k, (n, s) in enumerate(zip(size, stride)):
        shape = [1] * len(size)
        shape[k] = n
        idx = idx + input.new_tensor(list(range(n)), dtype=D.int64).reshape(shape) * s
    return idx


def as_strided(input, size, stride, storage_offset=None):  # noqa: A002
    """The elements at ``storage_offset + sum(i_k * stride_k)`` of ``input``'s storage.

    The storage of a view is its root's memory (``storage_offset`` counts from its start and
    defaults to the view's own offset, as torch's): the view's elements are placed at their
    positions in a copy of the root's values, so the gradient reaches the view's elements that are
    read and nothing else (torch's ``as_strided_backward`` keeps to the input's geometry).
    """
    size, stride = tuple(size), tuple(stride)
    if len(size) != len(stride):
        raise TdxRuntimeError(f"mismatch in length of strides and shape: {len(size)} vs {len(stride)}")
    flat = _storage(input)
    if storage_offset is None and flat is not None:
        storage_offset = input.storage_offset()
    flat = input.reshape(-1) if flat is None else flat
    idx = _strided_index(input, size, stride, storage_offset)
    if idx.numel() and int(idx.amax()) >= flat.numel():
        raise TdxRuntimeError(f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset "
                              f"{storage_offset or 0} are out of bounds for storage of {flat.numel()} elements")
    return flat.gather(0, idx.reshape(-1)).reshape(size) if idx.numel() else flat.new_zeros(size)


def _storage(t):
    """The flat values of the memory a view ``t`` lives in, ``t``'s own elements differentiable; None
    for a tensor that is its own storage."""
    from . import views as _views
    from .wrapping import wrap

    lay = getattr(t, "_view", None)
    if lay is None or lay.root is t:
        return None
    root = lay.root
    values = wrap(root._n, root._ex).reshape(-1)  # the root's values, never its gradient
    if not t.numel():
        return values
    positions = t.new_tensor(_views.layout_of(t).index_map().reshape(-1).tolist(), dtype=D.int64)
    return values.scatter(0, positions, t.reshape(-1))


def as_strided_scatter(input, src, size, stride, storage_offset=None):  # noqa: A002
    """``input`` with ``src`` written where ``as_strided(size, stride, storage_offset)`` reads."""
    idx = _strided_index(input, tuple(size), tuple(stride), storage_offset)
    flat = input.reshape(-1).scatter(0, idx.reshape(-1), src.reshape(-1).to(input.dtype))
    return flat.reshape(input.shape)


def unfold(input, dimension, size, step):  # noqa: A002
    """Windows of ``size`` elements every ``step`` along ``dimension``, as a new last dim."""
    d = norm_dim(dimension, input.ndim)
    n = input.shape[d] if input.ndim else 1
    if size > n:
        raise TdxRuntimeError(f"maximum size for tensor at dimension {d} is {n} but size is {size}")
    if step <= 0:
        raise TdxRuntimeError(f"step is {step} but must be > 0")
    count = (n - size) // step + 1
    starts = input.new_tensor([i * step for i in range(count)], dtype=D.int64)
    idx = (starts.reshape(-1, 1) + input.new_tensor(list(range(size)), dtype=D.int64).reshape(1, -1)).reshape(-1)
    if input.ndim == 0:
        return input.reshape(1)
    picked = input.index_select(d, idx)
    return picked.unflatten(d, (count, size)).movedim(d + 1, -1)


def sum_to_size(input, *size):  # noqa: A002
    """``input`` summed down to ``size`` (the reverse of broadcasting it)."""
    size = tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list)) else tuple(size)
    lead = input.ndim - len(size)
    if lead < 0:
        raise TdxRuntimeError(f"size {{{list(size)}}} is not expandable to size {{{list(input.shape)}}}.")
    out = input.sum(tuple(range(lead))) if lead else input
    dims = tuple(i for i, n in enumerate(size) if n == 1 and out.shape[i] != 1)
    if not lead and not dims:  # nothing to sum: the dtype a sum gives (integers and bools as int64)
        return input.clone() if input.dtype.is_floating_point or input.dtype.is_complex else input.to(D.int64)
    return out.sum(dims, keepdim=True) if dims else out


def fill(input, value):  # noqa: A002
    """A tensor like ``input`` filled with ``value``."""
    return input.clone().fill_(value)


def split_with_sizes(input, split_sizes, dim=0):  # noqa: A002
    """Pieces of the listed sizes along ``dim``."""
    if sum(split_sizes) != (input.shape[dim] if input.ndim else 1):
        raise TdxRuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {input.shape[dim]} "
                              f"(input tensor's size at dimension {dim}), but got split_sizes={list(split_sizes)}")
    return input.split(list(split_sizes), dim)


_COPIES = ("expand", "diagonal", "narrow", "view", "permute", "squeeze", "unsqueeze", "transpose", "t", "unbind",
           "unfold", "split_with_sizes")
_TABLE = {f"{v}_copy": (_copied(v), f"``{v}`` as a new tensor (never a view).") for v in _COPIES}
_TABLE["alias_copy"] = (lambda input: input.clone(), "A copy of ``input`` (torch's alias, materialized).")
_TABLE.update({
    "unsafe_chunk": (_forward("chunk", "``chunk`` (tdx's pieces are safe to write)."), "``chunk``."),
    "unsafe_split": (_forward("split", "``split`` (tdx's pieces are safe to write)."), "``split``."),
    "split_with_sizes": (split_with_sizes, split_with_sizes.__doc__),
    "as_strided": (as_strided, as_strided.__doc__), "as_strided_copy": (as_strided, as_strided.__doc__),
    "as_strided_scatter": (as_strided_scatter, as_strided_scatter.__doc__),
    "fill": (fill, fill.__doc__), "unfold": (unfold, unfold.__doc__), "sum_to_size": (sum_to_size,
                                                                                   sum_to_size.__doc__),
})
install(globals(), __all__, _TABLE, methods=("unsafe_chunk", "unsafe_split", "split_with_sizes", "as_strided",
                                             "as_strided_scatter", "narrow_copy", "unfold", "sum_to_size"))
_strided_values = globals()["as_strided"]


def _as_strided_view(input, size, stride, storage_offset=None):  # noqa: A002
    """``torch.as_strided``: on immutable arrays the gathered values are linked as a view of
    ``input``'s memory, so writes through either reach the other (overlapping ones refused), as torch's."""
    out = _strided_values(input, size, stride, storage_offset)
    if not input._ex.mutable:
        from . import views as _views

        lay = _views.layout_of(input)
        _views.link(out, input, tuple(int(n) for n in size), tuple(int(n) for n in stride),
                    lay.offset if storage_offset is None else int(storage_offset), root=lay.root)
    return out


_as_strided_view.__name__, _as_strided_view.__doc__ = "as_strided", _strided_values.__doc__
globals()["as_strided"] = _as_strided_view
Tensor.as_strided = method_of(_as_strided_view, "as_strided")
for _name in ("unfold", "sum_to_size"):  # Tensor methods only, as torch's
    __all__.remove(_name)
    del globals()[_name]


def _resize_(self, *sizes, memory_format=None):
    """Resize in place: the first elements kept (in order), new ones zero (torch leaves them unset)."""
    size = tuple(sizes[0]) if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)) else tuple(sizes)
    if self._ex.caps.mutable:
        self._n.resize_(size)
        return self
    n = 1
    for s in size:
        n *= s
    flat = self.reshape(-1)
    if n <= flat.numel():
        out = flat[:n]
    else:
        from .shape import cat

        out = cat([flat, flat.new_zeros((n - flat.numel(),))])
    from . import views as _views

    _views.assign(self, out.reshape(size)._n)
    return self


def _resize_as_(self, other, memory_format=None):
    """Resize in place to ``other``'s shape."""
    return _resize_(self, tuple(other.shape))


Tensor.resize_ = _resize_
Tensor.resize_as_ = _resize_as_
resize_as_ = _resize_as_
__all__.append("resize_as_")


def zero_(input):  # noqa: A002
    """``input`` filled with zeros, in place."""
    return input.zero_()


__all__.append("zero_")


def constant_pad_nd(input, pad, value=0):  # noqa: A002
    """``input`` padded (or cropped, by negative amounts) with ``value``: ``nn.functional.pad``'s constant mode."""
    from .shape import cat

    amounts = [int(a) for a in pad]
    if len(amounts) % 2 or len(amounts) // 2 > input.ndim:
        raise TdxRuntimeError(f"Length of pad must be even but instead it equals {len(amounts)}" if len(amounts) % 2
                              else f"Length of pad should be no more than twice the number of dimensions of the "
                                   f"input. Pad length is {len(amounts)} while the input has {input.ndim} dimensions.")
    x = input
    for i in range(len(amounts) // 2):
        d, left, right = x.ndim - 1 - i, amounts[2 * i], amounts[2 * i + 1]
        kept = x.shape[d] + min(left, 0) + min(right, 0)
        if kept < 0:
            raise TdxRuntimeError(f"The input size {x.shape[d]}, plus negative padding {left} and {right} resulted "
                                  f"in a negative output size, which is invalid. Check dimension {d} of your input.")
        x = x.narrow(d, -min(left, 0), kept)
        parts = []
        for amount, where in ((left, 0), (right, 1)):
            if amount > 0:
                shape = list(x.shape)
                shape[d] = amount
                parts.append((where, x.new_full(tuple(shape), value)))
        if parts:
            x = cat([p for w, p in parts if w == 0] + [x] + [p for w, p in parts if w == 1], d)
    return x


__all__.append("constant_pad_nd")
Tensor.__rdiv__ = Tensor.__rtruediv__
