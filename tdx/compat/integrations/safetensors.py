"""safetensors under the torch alias: ``safe_open(framework="pt")`` hands the program tdx tensors.

``safetensors.torch``'s Python code is a library like any other under ``python -m tdx run``: its
``import torch`` gets tdx, so ``save_file``/``save``/``save_model`` read tdx tensors (``data_ptr``,
``untyped_storage``, ``layout``) and ``load`` builds them with ``tdx.frombuffer``. Its Rust
``safe_open`` is different: for ``framework="pt"`` it takes ``sys.modules["torch"]``, the real torch
(which the alias never replaces), and returns real torch tensors. :func:`attach` therefore wraps
``safetensors.safe_open`` by delegation: a file opened by the program's code while the alias is active
gives tdx tensors (the real tensor adopted without a copy on the cpu executor, or moved to the device
asked for, which a device pin remaps); opened by tdx's or torch's own code, or outside the alias, it is
the library's own object. The library's files are not touched.

Saving reads each tensor's bytes by its ``data_ptr`` after ``tensor.to("cpu")`` (``safetensors.torch._to_ndarray``,
``_tobytes`` before it). Under a device pin ``"cpu"`` is the pinned device, so on cuda that address is device memory
and reading it from the host ends the process. :func:`attach_torch` wraps that per-tensor read by delegation: a
tensor off the cpu executor gives its bytes read through the host (:func:`host_ndarray`); a cpu tensor goes to the
library's own. This module must never let the library read device memory as host memory.
"""

from __future__ import annotations

import sys

__all__ = ["attach", "attach_torch", "host_ndarray", "safe_open"]

_state = {"real": None, "to_ndarray": None, "tobytes": None}


def _program_side() -> bool:
    from ...aliasing.torch_alias import _internal, is_active

    return is_active() and not _internal(sys._getframe(2).f_globals)


def _adopt(native, device):
    from ..._tensor.creation import as_tensor

    return as_tensor(native, device=device)


class _Slice:
    """``safe_open(...).get_slice(name)`` whose indexing gives a tdx tensor."""

    def __init__(self, real, device):
        self._real, self._device = real, device

    def __getitem__(self, index):
        return _adopt(self._real[index], self._device)

    def __getattr__(self, name):
        return getattr(self._real, name)


class safe_open:  # noqa: N801 - safetensors' name
    """safetensors' ``safe_open`` that gives tdx tensors to programs under the torch alias (see the module)."""

    def __init__(self, filename, framework, device="cpu", **kwargs):
        self._real = _state["real"](filename, framework, device=device, **kwargs)
        self._tdx = framework in ("pt", "torch") and _program_side()
        self._device = device if not isinstance(device, int) else f"cuda:{device}"

    def __enter__(self):
        self._real.__enter__()
        return self

    def __exit__(self, *exc):
        return self._real.__exit__(*exc)

    def get_tensor(self, name):
        """The tensor ``name`` (a tdx tensor on the program side)."""
        t = self._real.get_tensor(name)
        return _adopt(t, self._device) if self._tdx else t

    def get_slice(self, name):
        """A lazy slice of tensor ``name``; indexing it reads only that part."""
        s = self._real.get_slice(name)
        return _Slice(s, self._device) if self._tdx else s

    def get_tensors(self):
        """Every tensor of the file, by name."""
        tensors = self._real.get_tensors()
        return {k: _adopt(t, self._device) for k, t in tensors.items()} if self._tdx else tensors

    def __getattr__(self, name):  # keys, metadata, offset_keys...: the library's own
        return getattr(self._real, name)


def attach(safetensors_module) -> None:
    """Make ``safetensors.safe_open`` the wrapper (``safetensors.torch`` imports it from there); for the module
    ``safetensors.torch``, :func:`attach_torch`."""
    if safetensors_module.__name__ == "safetensors.torch":
        attach_torch(safetensors_module)
    elif _state["real"] is None:
        _state["real"] = safetensors_module.safe_open
        safetensors_module.safe_open = safe_open


def host_ndarray(tensor, real):
    """``(uint8 array of tensor's bytes, object to keep alive)``, as ``safetensors.torch._to_ndarray`` returns.

    A tdx tensor off the cpu executor is read through the host (a copy where its memory is a device's); anything
    else goes to ``real``, the library's own (which reads ``data_ptr`` as host memory).
    """
    import tdx

    if not isinstance(tensor, tdx.Tensor) or tensor.device.type == "cpu" or sys.byteorder == "big":
        return real(tensor)
    import numpy as np

    data = np.ascontiguousarray(tensor.detach().reshape(-1).view(tdx.uint8))
    return data, data


def attach_torch(safetensors_torch) -> None:
    """Make ``safetensors.torch``'s per-tensor read :func:`host_ndarray` (see the module)."""
    module = safetensors_torch
    if getattr(module, "_to_ndarray", None) is not None and _state["to_ndarray"] is None:
        real = _state["to_ndarray"] = module._to_ndarray
        module._to_ndarray = lambda tensor: host_ndarray(tensor, real)
    elif getattr(module, "_tobytes", None) is not None and _state["tobytes"] is None:
        real_bytes = _state["tobytes"] = module._tobytes

        def tobytes(tensor, name):
            data, _ = host_ndarray(tensor, lambda t: (None, None))
            return real_bytes(tensor, name) if data is None else data.tobytes()

        module._tobytes = tobytes
