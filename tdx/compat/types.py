"""``torch.types``: the type aliases torch's annotations and ``isinstance`` checks use, over tdx's
classes (``_Number`` is the tuple ``(int, float, bool)`` as in torch, so ``isinstance(v, _Number)``
works). This module must never import a framework.
"""

from __future__ import annotations

from typing import Union

from .._device import device as _device_cls
from .._dtypes import dtype as _dtype_cls
from .._tensor.tensor import Tensor

__all__ = ["Number", "Device", "Storage"]

_int = int
_float = float
_bool = bool
_complex = complex
_Number = (int, float, bool)
Number = Union[int, float, bool]
_dtype = _dtype_cls
_device = _device_cls
Device = Union[_device_cls, str, int, None]
_size = Union[tuple, list]
_TensorOrTensors = Union[Tensor, tuple]
Storage = object
py_sym_types = ()
