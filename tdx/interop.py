"""Moving arrays between executors and in from other libraries.

``transfer`` moves a native array from one executor to another; ``import_native``
adopts a torch tensor or MLX array; ``parse_to`` reads ``Tensor.to``'s overloads.
Frameworks are reached through ``sys.modules`` or the executors, never imported here
at module level.
"""

from __future__ import annotations

import numpy as np

from . import _dtypes as D
from . import backends
from ._device import device as _device
from ._errors import TdxTypeError


def parse_to(t, args, kwargs):
    """``Tensor.to`` arguments as (target executor, tdx dtype or None, copy)."""
    dev = kwargs.pop("device", None)
    dtype = kwargs.pop("dtype", None)
    copy = kwargs.pop("copy", False)
    kwargs.pop("non_blocking", None)
    kwargs.pop("memory_format", None)
    if kwargs:
        raise TdxTypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
    for a in args:
        if type(a).__name__ == "Tensor" and hasattr(a, "_ex"):
            dev, dtype = a.device, a.dtype
        elif isinstance(a, (str, int, _device)) and not isinstance(a, bool):
            dev = a
        elif isinstance(a, bool):
            continue  # legacy positional non_blocking / copy
        else:
            dtype = a
    ex = t._ex if dev is None else backends.get(dev)
    return ex, (None if dtype is None else D.as_dtype(dtype)), copy


def transfer(native, src, dst):
    """``native`` (owned by executor ``src``) as a native array of executor ``dst``."""
    if src.name == dst.name == "torch":
        return native.to(dst.tdev)
    if src.name == dst.name == "mlx":
        return native  # unified memory: the same array serves both MLX devices
    if src.name == "mlx" and dst.name == "torch":
        import torch

        src.synchronize()
        return torch.from_dlpack(native).to(dst.tdev)
    if src.name == "torch" and dst.name == "mlx":
        import mlx.core as mx

        host = native.detach().cpu().resolve_conj()
        if host.dtype == sys_torch().bfloat16:
            return mx.array(host.view(sys_torch().int16).numpy()).view(mx.bfloat16)
        return mx.array(np.ascontiguousarray(host.numpy()))
    arr = src.host_numpy(native)
    return dst.from_host(arr, src.dtype(native))


def sys_torch():
    import sys

    return sys.modules["torch"]


def import_native(native, ex):
    """A torch tensor or MLX array as a native array of executor ``ex`` (shared where possible)."""
    mod = type(native).__module__
    if mod.startswith("torch"):
        src = backends.get(str(native.device))
    else:
        src = ex if ex.name == "mlx" else backends.get("mlx")
    return native if src is ex else transfer(native, src, ex)
