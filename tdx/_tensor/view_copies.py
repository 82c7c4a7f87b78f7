"""The ``*_copy`` forms of view ops (``tdx.select_copy``, ``tdx.slice_copy``, ``tdx.detach_copy``...)
and ``unsafe_split_with_sizes``: the view's values in fresh memory, as torch's functionalization
variants. This module must never import a framework.
"""

from __future__ import annotations

from .tensor import Tensor
from .wrapping import attach, exporter, need_tensor

__all__: list = []
_export = exporter(__all__)


@_export
def detach_copy(input):  # noqa: A002
    """``input.detach().clone()``."""
    return need_tensor(input, "detach_copy").detach().clone()


@_export(record=True)
def select_copy(input, dim, index):  # noqa: A002
    """``input.select(dim, index).clone()``."""
    return need_tensor(input, "select_copy").select(dim, index).clone()


@_export(record=True)
def slice_copy(input, dim=0, start=None, end=None, step=1):  # noqa: A002
    """``input[..., start:end:step, ...]`` along ``dim``, copied."""
    t = need_tensor(input, "slice_copy")
    index = [slice(None)] * t.dim()
    index[dim] = slice(start, end, step)
    return t[tuple(index)].clone()


@_export
def split_copy(input, split_size, dim=0):  # noqa: A002
    """``[piece.clone() for piece in input.split(split_size, dim)]``."""
    return [p.clone() for p in need_tensor(input, "split_copy").split(split_size, dim)]


@_export
def unsafe_split_with_sizes(input, split_sizes, dim=0):  # noqa: A002
    """``input.split_with_sizes(split_sizes, dim)`` (torch's variant without view tracking)."""
    return need_tensor(input, "unsafe_split_with_sizes").split_with_sizes(split_sizes, dim)


@_export
def view_as_real_copy(input):  # noqa: A002
    """``view_as_real(input).clone()``."""
    from . import complex_views

    return complex_views.view_as_real(need_tensor(input, "view_as_real_copy")).clone()


@_export
def view_as_complex_copy(input):  # noqa: A002
    """``view_as_complex(input).clone()``."""
    from . import complex_views

    return complex_views.view_as_complex(need_tensor(input, "view_as_complex_copy")).clone()


@_export
def slice_inverse(input, src, dim=0, start=None, end=None, step=1):  # noqa: A002
    """The inverse of a slice view (torch's functionalization op): ``input``'s memory viewed with ``src``'s
    sizes, strides and storage offset, so that slicing the result as ``src[start:end:step]`` along ``dim``
    gives ``input`` back. ``dim``/``start``/``end``/``step`` only describe the slice, as in torch.

    Raises:
        TdxRuntimeError: ``src``'s layout reaches past ``input``'s storage.
    """
    from . import views as _views

    t, base = need_tensor(input, "slice_inverse"), need_tensor(src, "slice_inverse", "src")
    if t._ex.name != "torch":  # as_strided on MLX reads the tensor's own elements: start from the root
        t = _views.layout_of(t).root
    return t.as_strided(tuple(base.shape), base.stride(), base.storage_offset())


class _ViewCopyMethods:
    def unsafe_split_with_sizes(self, split_sizes, dim=0):
        return unsafe_split_with_sizes(self, split_sizes, dim)

    def slice_inverse(self, src, dim=0, start=None, end=None, step=1):
        return slice_inverse(self, src, dim, start, end, step)


attach(_ViewCopyMethods)
_ = Tensor
