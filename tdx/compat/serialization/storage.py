"""Where a tensor's elements live: the storage torch's checkpoint format saves once per family.

torch saves the whole storage behind a tensor and rebuilds every tensor as a view of it
(offset, sizes, strides), so views saved together stay views. tdx has no storage object, so
this module is the one place that looks below the public Tensor API to find it:

- torch executors (mutable arrays): the native tensor's ``untyped_storage()``; torch is
  already loaded when such a tensor exists, and is imported here lazily, never at module level;
- MLX (immutable arrays): the view root tdx keeps (``tdx._tensor.views.layout_of``), whose flat
  buffer plays the storage;
- any other executor: the tensor itself, saved contiguous (no sharing).

It also turns a storage's bytes back into values. It must never import torch or MLX at
module level.
"""

from __future__ import annotations

import sys

import numpy as np

import tdx

__all__ = ["Storage", "storage_of", "to_bytes", "from_bytes"]


class Storage:
    """One storage to save: an identity key, its element count, dtype and device, and a way to
    read its bytes (only called once per storage)."""

    __slots__ = ("identity", "numel", "dtype", "device", "read")

    def __init__(self, identity, numel, dtype, device, read):
        self.identity, self.numel, self.dtype, self.device, self.read = identity, numel, dtype, device, read


def to_bytes(values: np.ndarray, dtype) -> bytes:
    """The little-endian bytes of host values ``values`` stored as tdx ``dtype``.

    bfloat16 arrives widened to float32 (NumPy has no bfloat16): its top 16 bits are exact.
    """
    if dtype is tdx.bfloat16:
        bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32) >> 16
        return bits.astype("<u2").tobytes()
    little = np.dtype(values.dtype).newbyteorder("<")
    return np.ascontiguousarray(values).astype(little, copy=False).tobytes()  # mutate: equivalent (speed only)


def from_bytes(buffer, dtype) -> np.ndarray:
    """Host values of ``dtype`` from little-endian bytes (bfloat16 widened to float32 exactly)."""
    if dtype is tdx.bfloat16:
        bits = np.frombuffer(buffer, dtype="<u2").astype(np.uint32) << 16
        return bits.view(np.float32)
    np_dtype = np.dtype("bool" if dtype is tdx.bool else dtype.name).newbyteorder("<")
    return np.frombuffer(buffer, dtype=np_dtype)


def _torch_storage(t):
    native = t.native
    st = native.untyped_storage()
    numel = st.nbytes() // t.element_size()
    identity = ("torch", str(native.device), st.data_ptr(), st.nbytes()) if st.nbytes() else ("empty", id(t))

    def read():
        torch = sys.modules["torch"]  # loaded: a tensor of its executor exists
        flat = native.detach().as_strided((numel,), (1,), 0).cpu()  # the whole storage, from element 0
        return flat.view(torch.uint8).numpy().tobytes() if numel else b""

    return Storage(identity, numel, t.dtype, str(native.device), read), native.storage_offset(), native.stride()


def _mlx_storage(t):
    from tdx._tensor import views as _views

    lay = _views.layout_of(t)
    root = lay.root
    numel = root.numel()

    def read():
        return to_bytes(root.numpy(force=True).ravel(), t.dtype)

    return Storage(("root", id(root)), numel, t.dtype, str(t.device), read), lay.offset, tuple(lay.strides)


def storage_of(t):
    """``(Storage, storage_offset, strides)`` for tdx tensor ``t``."""
    ex = t.executor
    if getattr(ex, "mutable", True) and type(t.native).__module__.startswith("torch"):
        return _torch_storage(t)
    if not getattr(ex, "mutable", True):
        return _mlx_storage(t)
    values = t.numpy(force=True)
    strides = tuple(int(np.prod(t.shape[i + 1:])) for i in range(t.ndim))
    return Storage(("own", id(t)), t.numel(), t.dtype, str(t.device),
                   lambda: to_bytes(values.reshape(-1), t.dtype)), 0, strides
