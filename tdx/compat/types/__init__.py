"""``tdx.types`` (torch's ``torch.types``): the type aliases annotations use, built on tdx's classes
(``Number``, ``Device``, ``Storage``, ``FileLike``...). Must never import a framework."""

from __future__ import annotations

import os
import typing

from ..._device import device as _device
from ..._dtypes import dtype as _dtype
from ..._tensor.storage import UntypedStorage as Storage
from ..._tensor.tensor import Tensor as _Tensor

__all__ = ["Number", "Device", "Storage", "FileLike", "BoolLikeType", "IntLikeType", "FloatLikeType",
           "PySymType", "py_sym_types", "TYPE_CHECKING"]

TYPE_CHECKING = False
Number = typing.Union[int, float, bool]
Device = typing.Optional[typing.Union[_device, str, int]]
FileLike = typing.Union[str, os.PathLike, typing.IO[bytes]]
BoolLikeType = bool
IntLikeType = int
FloatLikeType = float
PySymType = typing.Union[int, float, bool]
py_sym_types = (int, float, bool)
_TensorOrTensors = typing.Union[_Tensor, typing.Sequence[_Tensor]]
_dtype = _dtype

# the private aliases torch's own Python code (torch.distributions, run with tdx as torch) annotates with
_int, _float, _bool, _complex = int, float, bool, complex
_Number = (int, float, bool)
_device = _device
_size = typing.Union[tuple, list]
