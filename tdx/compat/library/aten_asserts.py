"""``torch.ops.aten``'s runtime assertion ops, eagerly: ``_assert_scalar``, ``_assert_async``,
``_assert_tensor_metadata``.

torch's exporters and compiled graphs insert these to check a value or a tensor's layout at run time;
libraries list them by name (transformers' exporters do at import). Each raises ``RuntimeError`` with
torch's message when the check fails and returns None otherwise. Must never import a framework.
"""

from __future__ import annotations

from ..._errors import TdxRuntimeError

__all__ = ["OPS"]

# c10's ScalarType names (the "Expected" side of torch's dtype message) and its TypeMeta names ("Got")
_SCALAR_NAMES = {"float32": ("Float", "float"), "float64": ("Double", "double"), "float16": ("Half", "c10::Half"),
                 "bfloat16": ("BFloat16", "c10::BFloat16"), "int64": ("Long", "long int"), "int32": ("Int", "int"),
                 "int16": ("Short", "short int"), "int8": ("Char", "signed char"),
                 "uint8": ("Byte", "unsigned char"), "bool": ("Bool", "bool")}


def _assert_scalar(condition, assert_msg: str) -> None:
    """Raise ``RuntimeError(assert_msg)`` when ``condition`` is false."""
    if not condition:
        raise TdxRuntimeError(assert_msg)


def _assert_async(tensor, assert_msg: str | None = None) -> None:
    """Raise when the one-element ``tensor`` is zero (``assert_msg``, or torch's own message)."""
    if tensor.numel() != 1:
        raise TdxRuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    if not bool(tensor.item()):
        raise TdxRuntimeError(assert_msg or "Expected Tensor with single nonzero value, but got zero")


def _assert_tensor_metadata(a, size=None, stride=None, dtype=None, *, device=None, layout=None) -> None:
    """Raise when ``a``'s sizes, strides, dtype or device differ from the ones given."""
    if size is not None and list(size) != list(a.shape):
        raise TdxRuntimeError(f"Tensor sizes mismatch! Expected: {list(size)}, Got: {list(a.shape)}")
    if stride is not None and list(stride) != list(a.stride()):
        raise TdxRuntimeError(f"Tensor strides mismatch! Expected: {list(stride)}, Got: {list(a.stride())}")
    if dtype is not None and dtype != a.dtype:
        want, got = (_SCALAR_NAMES.get(d.name, (d.name, d.name)) for d in (dtype, a.dtype))
        raise TdxRuntimeError(f"Tensor dtype mismatch! Expected: {want[0]}, Got: {got[1]}")
    if device is not None and str(device) != str(a.device):
        raise TdxRuntimeError(f"Tensor device mismatch! Expected: {device}, Got: {a.device}")


OPS = {"_assert_scalar": _assert_scalar, "_assert_async": _assert_async,
       "_assert_tensor_metadata": _assert_tensor_metadata}
