"""The ATen ops that are no ``torch.*`` function but that libraries call or key tables by through
``torch.ops.aten`` (``_to_copy``, ``slice``, ``alias``, ``_assert_scalar``...), written on tdx's API with
torch's schemas and errors. ``torch.ops.aten.<name>`` finds them before tdx's own functions, methods and ``nn.functional``
(``tdx.compat.library``), so an ATen name whose tdx method means something else (``index``) is ATen's. Must never import a framework.
"""

from __future__ import annotations

from ..._errors import TdxRuntimeError, UnsupportedOpError

__all__ = ["OPS"]


def _to_copy(self, *, dtype=None, layout=None, device=None, pin_memory=None, non_blocking=False,
             memory_format=None):
    """A copy of ``self``, cast to ``dtype`` and moved to ``device`` where given (``aten::_to_copy``)."""
    return self.to(device=device, dtype=dtype, non_blocking=non_blocking, copy=True)


def _pin_memory(self, device=None):
    """``self`` in pinned host memory (``aten::_pin_memory``): ``Tensor.pin_memory``."""
    return self.pin_memory()


def alias(self):
    """A view of all of ``self`` (``aten::alias``)."""
    return self.view(self.shape)


def slice_along(self, dim=0, start=None, end=None, step=1):
    """The view ``self[..., start:end:step]`` along ``dim`` (``aten::slice.Tensor``)."""
    index = [slice(None)] * self.dim()
    index[dim] = slice(start, end, step)
    return self[tuple(index)]


def _assert_scalar(self, assert_msg: str) -> None:
    """Raise ``RuntimeError(assert_msg)`` unless the scalar ``self`` is true (``aten::_assert_scalar``)."""
    if not self:
        raise TdxRuntimeError(assert_msg)


def index(self, indices):
    """``self`` indexed by a list of index tensors, None skipping a dim (``aten::index.Tensor``, the advanced
    indexing ``self[i, :, j]`` lowers to)."""
    return self[tuple(slice(None) if i is None else i for i in indices)]


def _softmax(self, dim: int, half_to_float: bool):
    """``softmax`` over ``dim`` (``aten::_softmax``).

    Raises:
        TdxRuntimeError: ``half_to_float`` (a CUDA kernel's option; torch's CPU error).
    """
    from ..nn.functional import softmax

    if half_to_float:
        raise TdxRuntimeError("softmax with half to float conversion is not supported on CPU")
    return softmax(self, dim)


def _log_softmax(self, dim: int, half_to_float: bool):
    """``log_softmax`` over ``dim`` (``aten::_log_softmax``)."""
    from ..nn.functional import log_softmax

    if half_to_float:
        raise TdxRuntimeError("softmax with half to float conversion is not supported on CPU")
    return log_softmax(self, dim)


def _unsafe_view(self, size):
    """``self`` read with shape ``size`` (``aten::_unsafe_view``: ``view``, or a copy where strides forbid one)."""
    return self.reshape(size)


# the C++ type name torch prints for a tensor's dtype on the "Got" side of that message
_TYPE_META_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
                    "int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char",
                    "uint8": "unsigned char", "bool": "bool"}


def _assert_async(self, assert_msg: str | None = None) -> None:
    """Raise unless the one-element ``self`` is nonzero (``aten::_assert_async``, ``.msg`` with ``assert_msg``)."""
    if self.numel() != 1:
        raise TdxRuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    if not bool(self.item()):
        raise TdxRuntimeError(assert_msg or "Expected Tensor with single nonzero value, but got zero")


def _assert_tensor_metadata(a, size=None, stride=None, dtype=None, *, device=None, layout=None) -> None:
    """Raise ``RuntimeError`` when ``a``'s size, stride, dtype or device differs from those given, with torch's
    words (``aten::_assert_tensor_metadata``)."""
    from ..._dtypes import _TORCH_SCALAR_NAMES

    if size is not None and list(a.shape) != list(size):
        raise TdxRuntimeError(f"Tensor sizes mismatch! Expected: {list(size)}, Got: {list(a.shape)}")
    if stride is not None and list(a.stride()) != list(stride):
        raise TdxRuntimeError(f"Tensor strides mismatch! Expected: {list(stride)}, Got: {list(a.stride())}")
    if dtype is not None and a.dtype is not dtype:
        raise TdxRuntimeError(f"Tensor dtype mismatch! Expected: {_TORCH_SCALAR_NAMES[dtype.name]}, Got: "
                              f"{_TYPE_META_NAMES.get(a.dtype.name, a.dtype.name)}")
    if device is not None and a.device != device:
        raise TdxRuntimeError(f"Tensor device mismatch! Expected: {device}, Got: {a.device}")


def _sparse_product(name: str):
    """The refusal of ATen's sparse product ``name`` (libraries key their sparse kernels by them): tdx tensors are
    dense."""

    def refused(*args, **kwargs):
        raise UnsupportedOpError(f"torch.ops.aten.{name} is not supported by tdx (sparse layouts): every tdx tensor "
                                 "is dense and strided; use dense matmul or index_add/scatter_reduce")

    refused.__name__ = refused.__qualname__ = name
    return refused


# ATen's name -> the function
OPS = {"_to_copy": _to_copy, "_pin_memory": _pin_memory, "alias": alias, "slice": slice_along, "index": index,
       "_unsafe_index": index, "_softmax": _softmax, "_log_softmax": _log_softmax, "_unsafe_view": _unsafe_view,
       "_assert_scalar": _assert_scalar, "_assert_async": _assert_async, "_assert_tensor_metadata": _assert_tensor_metadata,
       **{name: _sparse_product(name) for name in ("_sparse_mm_reduce_impl", "_sparse_addmm", "_sparse_mm")}}
