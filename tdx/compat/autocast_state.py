"""torch's autocast state at top level (``tdx.is_autocast_enabled``, ``tdx.set_autocast_dtype``,
``tdx.autocast``...), per device type and per thread.

This module keeps the state torch's autocast functions read and write: whether autocast is
on for a device type, its lower-precision dtype, the weight-cast cache switch and the nesting
depth. tdx's ops do not consult it yet: inside ``tdx.autocast(...)`` they compute in the dtypes
of their inputs (full precision where torch would use float16/bfloat16), never silently
narrower. This module must never import a framework.
"""

from __future__ import annotations

import functools
import threading

from .. import _dtypes as D
from .._errors import TdxRuntimeError, TdxTypeError

__all__ = ["autocast", "is_autocast_enabled", "set_autocast_enabled", "get_autocast_dtype", "set_autocast_dtype",
           "is_autocast_cpu_enabled", "set_autocast_cpu_enabled", "get_autocast_cpu_dtype", "set_autocast_cpu_dtype",
           "get_autocast_gpu_dtype", "set_autocast_gpu_dtype", "is_autocast_ipu_enabled", "set_autocast_ipu_enabled",
           "get_autocast_ipu_dtype", "set_autocast_ipu_dtype", "is_autocast_xla_enabled", "set_autocast_xla_enabled",
           "get_autocast_xla_dtype", "set_autocast_xla_dtype", "is_autocast_cache_enabled",
           "set_autocast_cache_enabled", "clear_autocast_cache", "autocast_increment_nesting",
           "autocast_decrement_nesting"]

_DEVICE_TYPES = ("cpu", "cuda", "mps", "mlx", "xpu", "ipu", "xla", "hpu", "mtia", "maia", "privateuseone")
_DEFAULT_DTYPE = {"cuda": "float16", "mps": "float16", "mlx": "float16", "xpu": "bfloat16"}
_local = threading.local()


def _state() -> dict:
    st = getattr(_local, "state", None)
    if st is None:
        st = _local.state = {"enabled": {}, "dtype": {}, "cache": True, "nesting": 0}
    return st


def _device_type(device_type, api: str) -> str:
    if not isinstance(device_type, str):
        raise TdxTypeError(f"{api}(): argument 'device_type' must be str, not {type(device_type).__name__}")
    kind = device_type.split(":")[0]
    if kind not in _DEVICE_TYPES:
        raise TdxRuntimeError(f"{api}(): unsupported device type {device_type!r}; expected one of "
                              f"{', '.join(_DEVICE_TYPES)}")
    return kind


def is_autocast_enabled(device_type="cuda") -> bool:
    """Whether autocast is on for ``device_type`` (default ``"cuda"``, as torch's no-argument form)."""
    return _state()["enabled"].get(_device_type(device_type, "is_autocast_enabled"), False)


def set_autocast_enabled(device_type, enabled=None) -> None:
    """``set_autocast_enabled(device_type, enabled)``, or the legacy ``set_autocast_enabled(enabled)`` for cuda."""
    if enabled is None:
        device_type, enabled = "cuda", device_type
    if not isinstance(enabled, bool):
        raise TdxTypeError(f"set_autocast_enabled(): argument 'enabled' must be bool, not {type(enabled).__name__}")
    _state()["enabled"][_device_type(device_type, "set_autocast_enabled")] = enabled


def get_autocast_dtype(device_type):
    """The lower-precision dtype autocast uses on ``device_type`` (float16 on GPUs, bfloat16 on cpu)."""
    kind = _device_type(device_type, "get_autocast_dtype")
    return _state()["dtype"].get(kind) or getattr(D, _DEFAULT_DTYPE.get(kind, "bfloat16"))


def set_autocast_dtype(device_type, dtype) -> None:
    """Set autocast's lower-precision dtype for ``device_type``.

    Raises:
        TdxTypeError: ``dtype`` is not a tdx dtype.
    """
    if not isinstance(dtype, D.dtype):
        raise TdxTypeError(f"set_autocast_dtype(): argument 'dtype' must be torch.dtype, not {type(dtype).__name__}")
    _state()["dtype"][_device_type(device_type, "set_autocast_dtype")] = dtype


def _pair(kind: str):
    def is_enabled() -> bool:
        return is_autocast_enabled(kind)

    def set_enabled(enabled) -> None:
        set_autocast_enabled(kind, enabled)

    def get_dtype():
        return get_autocast_dtype(kind)

    def set_dtype(dtype) -> None:
        set_autocast_dtype(kind, dtype)

    for fn, what in ((is_enabled, "Whether autocast is on"), (set_enabled, "Turn autocast on or off"),
                     (get_dtype, "Autocast's dtype"), (set_dtype, "Set autocast's dtype")):
        fn.__doc__ = f"{what} for {kind} (torch's device-specific form)."
    return is_enabled, set_enabled, get_dtype, set_dtype


is_autocast_cpu_enabled, set_autocast_cpu_enabled, get_autocast_cpu_dtype, set_autocast_cpu_dtype = _pair("cpu")
is_autocast_ipu_enabled, set_autocast_ipu_enabled, get_autocast_ipu_dtype, set_autocast_ipu_dtype = _pair("ipu")
is_autocast_xla_enabled, set_autocast_xla_enabled, get_autocast_xla_dtype, set_autocast_xla_dtype = _pair("xla")
_, _, get_autocast_gpu_dtype, set_autocast_gpu_dtype = _pair("cuda")


def is_autocast_cache_enabled() -> bool:
    """Whether autocast caches the casts of weights inside an autocast region."""
    return _state()["cache"]


def set_autocast_cache_enabled(enabled) -> None:
    """Turn autocast's weight-cast cache on or off."""
    if not isinstance(enabled, bool):
        raise TdxTypeError(f"set_autocast_cache_enabled(): argument 'enabled' must be bool, "
                           f"not {type(enabled).__name__}")
    _state()["cache"] = enabled


def clear_autocast_cache() -> None:
    """Drop autocast's cached casts (tdx caches none)."""


def autocast_increment_nesting() -> int:
    """Enter one autocast level; returns the new depth."""
    st = _state()
    st["nesting"] += 1
    return st["nesting"]


def autocast_decrement_nesting() -> int:
    """Leave one autocast level; returns the new depth."""
    st = _state()
    st["nesting"] -= 1
    return st["nesting"]


class autocast:  # noqa: N801 - torch's name
    """``torch.autocast``: turn autocast on for ``device_type`` inside a block or decorated function.

    It sets the state this module keeps (read back by :func:`is_autocast_enabled`...) and
    restores it on exit; tdx's ops do not narrow their dtypes from it (see the module note).

    Raises:
        TdxRuntimeError: an unknown device type.  TdxTypeError: a non-dtype ``dtype``.
    """

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        self.device = _device_type(device_type, "autocast")
        if dtype is not None and not isinstance(dtype, D.dtype):
            raise TdxTypeError(f"autocast(): argument 'dtype' must be torch.dtype, not {type(dtype).__name__}")
        self.fast_dtype = dtype if dtype is not None else get_autocast_dtype(self.device)
        self._enabled = bool(enabled)
        self._cache_enabled = is_autocast_cache_enabled() if cache_enabled is None else bool(cache_enabled)
        self._saved = []

    def __enter__(self):
        self._saved.append((is_autocast_enabled(self.device), get_autocast_dtype(self.device),
                            is_autocast_cache_enabled()))
        set_autocast_enabled(self.device, self._enabled)
        set_autocast_dtype(self.device, self.fast_dtype)
        set_autocast_cache_enabled(self._cache_enabled)
        autocast_increment_nesting()
        return self

    def __exit__(self, *exc) -> None:
        enabled, dtype, cache = self._saved.pop()
        if autocast_decrement_nesting() == 0:
            clear_autocast_cache()
        set_autocast_enabled(self.device, enabled)
        set_autocast_dtype(self.device, dtype)
        set_autocast_cache_enabled(cache)

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with autocast(self.device, self.fast_dtype, self._enabled, self._cache_enabled):
                return fn(*args, **kwargs)

        return wrapper
