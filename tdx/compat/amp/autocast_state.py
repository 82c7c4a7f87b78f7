"""torch's autocast state at top level (``tdx.is_autocast_enabled``, ``tdx.set_autocast_dtype``,
``tdx.autocast``...), per device type and per thread.

This module keeps the state torch's autocast functions read and write: whether autocast is
on for a device type, its lower-precision dtype, the weight-cast cache switch and the nesting
depth. Every change to a torch device type's state (``cpu``, ``cuda``, ``mps``, ``xpu``) is mirrored
into torch's own autocast state when torch is loaded, so ops on the torch executor are cast by
torch itself, exactly as torch casts them; ops on other executors (MLX) consult
:mod:`.autocast_policy`, which asks :func:`enabled_types` and :func:`covers` which region applies.
This module must never import a framework (torch is touched only once something has loaded it).
"""

from __future__ import annotations

import functools
import sys
import threading
import warnings

from ... import _dtypes as D
from ..._errors import TdxRuntimeError, TdxTypeError, TdxValueError

__all__ = ["autocast", "is_autocast_enabled", "set_autocast_enabled", "get_autocast_dtype", "set_autocast_dtype",
           "is_autocast_cpu_enabled", "set_autocast_cpu_enabled", "get_autocast_cpu_dtype", "set_autocast_cpu_dtype",
           "get_autocast_gpu_dtype", "set_autocast_gpu_dtype", "is_autocast_ipu_enabled", "set_autocast_ipu_enabled",
           "get_autocast_ipu_dtype", "set_autocast_ipu_dtype", "is_autocast_xla_enabled", "set_autocast_xla_enabled",
           "get_autocast_xla_dtype", "set_autocast_xla_dtype", "is_autocast_cache_enabled",
           "set_autocast_cache_enabled", "clear_autocast_cache", "autocast_increment_nesting",
           "autocast_decrement_nesting"]

_TORCH_TYPES = ("cpu", "cuda", "mps", "xpu")  # mirrored into torch's own autocast state
_DEVICE_TYPES = ("cpu", "cuda", "mps", "mlx", "xpu", "ipu", "xla", "hpu", "mtia", "maia", "privateuseone")
_DEFAULT_DTYPE = {"cuda": "float16", "mps": "float16", "mlx": "float16", "xpu": "bfloat16"}
_local = threading.local()
_on_lock = threading.Lock()


def _torch():
    """torch when something has loaded it (the torch executor, the caller), else None."""
    return sys.modules.get("torch")


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
    kind = _device_type(device_type, "set_autocast_enabled")
    table = _state()["enabled"]
    if table.get(kind, False) != enabled:
        from . import autocast_policy

        with _on_lock:  # threads enter and leave regions at once: the count must not lose an update
            before = autocast_policy.ON[0]
            autocast_policy.ON[0] += 1 if enabled else -1
            if (before == 0) != (autocast_policy.ON[0] == 0):
                autocast_policy.activate(autocast_policy.ON[0] > 0)
    table[kind] = enabled
    torch = _torch()
    if torch is not None and kind in _TORCH_TYPES:
        torch.set_autocast_enabled(kind, enabled)


def enabled_types() -> list:
    """The device types autocast is on for in this thread."""
    return [k for k, on in _state()["enabled"].items() if on]


def covers(kind: str, ex) -> bool:
    """Whether a region for device type ``kind`` applies to executor ``ex``: ``kind`` is ``ex``'s own device
    type, or the config (a ``device_map``, a ``python -m tdx run --device`` pin) resolves ``kind`` to ``ex``
    and ``ex`` is an accelerator exactly when ``kind`` names one (under a pin to ``mlx:cpu``, a program's
    ``autocast("cpu")`` covers MLX tensors and its ``autocast("cuda")`` does not, as on a machine without CUDA).
    """
    dev = ex.device
    if kind == dev.type:
        return True
    from ... import backends
    from ..._errors import TdxError
    from ..cuda import is_accelerator

    try:
        resolved = backends.get(kind)
    except TdxError:
        return False
    return resolved is ex and (kind != "cpu") == is_accelerator(dev)


def get_autocast_dtype(device_type):
    """The lower-precision dtype autocast uses on ``device_type`` (float16 on GPUs, bfloat16 on cpu)."""
    kind = _device_type(device_type, "get_autocast_dtype")
    return _state()["dtype"].get(kind) or getattr(D, _DEFAULT_DTYPE.get(kind, "bfloat16"))


def set_autocast_dtype(device_type, dtype) -> None:
    """Set autocast's lower-precision dtype for ``device_type``.

    Raises:
        TdxTypeError: ``dtype`` is not a tdx dtype.
    """
    if dtype.__class__ is type and dtype in D.PYTHON_TYPES:  # Python's float is float64, as torch reads it
        dtype = D.as_dtype(dtype)
    if not isinstance(dtype, D.dtype):
        raise TdxTypeError(f"set_autocast_dtype(): argument 'dtype' must be torch.dtype, not {type(dtype).__name__}")
    kind = _device_type(device_type, "set_autocast_dtype")
    _state()["dtype"][kind] = dtype
    torch = _torch()
    if torch is not None and kind in _TORCH_TYPES and dtype.is_floating_point:
        torch.set_autocast_dtype(kind, getattr(torch, dtype.name))


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
    torch = _torch()
    if torch is not None:
        torch.set_autocast_cache_enabled(enabled)


def clear_autocast_cache() -> None:
    """Drop autocast's cached weight casts (tdx's, and torch's when torch is loaded)."""
    from . import autocast_policy

    autocast_policy.clear_cache()
    torch = _torch()
    if torch is not None:
        torch.clear_autocast_cache()


def autocast_increment_nesting() -> int:
    """Enter one autocast level; returns the new depth."""
    st = _state()
    st["nesting"] += 1
    torch = _torch()
    if torch is not None:
        torch.autocast_increment_nesting()
    return st["nesting"]


def autocast_decrement_nesting() -> int:
    """Leave one autocast level; returns the new depth."""
    st = _state()
    st["nesting"] -= 1
    torch = _torch()
    if torch is not None:
        torch.autocast_decrement_nesting()
    return st["nesting"]


def is_autocast_available(device_type) -> bool:
    """Whether autocast can be used with ``device_type`` (every device type tdx names, as torch's list)."""
    if not isinstance(device_type, str):
        raise TdxTypeError(f"is_autocast_available(): argument 'device_type' must be str, "
                           f"not {type(device_type).__name__}")
    return device_type.split(":")[0] in _DEVICE_TYPES


_SUPPORTED = (D.bfloat16, D.float16)


def _load_torch_for(kind: str) -> None:
    """Load torch before a region for a torch device type starts, so its state is mirrored (not under a pin to
    another executor, whose tensors torch never computes)."""
    if kind not in _TORCH_TYPES or _torch() is not None:
        return
    from ... import backends
    from ...backends import _flags

    pin = backends.pinned()
    if pin is None or pin[0].device.type in _TORCH_TYPES:
        _flags.torch_module()


class autocast:  # noqa: N801 - torch's name
    """``torch.autocast``: inside the block or decorated function, ops on ``device_type``'s tensors run in
    the dtype torch's autocast policy gives them (``dtype``, float16 or bfloat16, for the matmul family;
    float32 for the ops torch keeps there; the widest input dtype for the promoting ops).

    ``enabled=False`` opens a region with autocast off (nested inside an enabled one); ``cache_enabled``
    keeps one lower-precision cast of each weight per outermost region. As torch: an unsupported ``dtype``
    on cpu/mps/mlx warns and disables the region, and a ``cuda`` region without CUDA warns and is disabled.

    Raises:
        TdxValueError: ``device_type`` is not a string.  TdxRuntimeError: an unknown device type.
        TdxTypeError: a non-dtype ``dtype``.
    """

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        if not isinstance(device_type, str):
            raise TdxValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        if not is_autocast_available(device_type):
            raise TdxRuntimeError(f"User specified an unsupported autocast device_type '{device_type}'")
        self.device = device_type
        if dtype.__class__ is type and dtype in D.PYTHON_TYPES:  # dtype=float: float64, refused below with a warning
            dtype = D.as_dtype(dtype)
        if dtype is not None and not isinstance(dtype, D.dtype):
            raise TdxTypeError(f"autocast(): argument 'dtype' must be torch.dtype, not {type(dtype).__name__}")
        self.fast_dtype = dtype if dtype is not None else get_autocast_dtype(self.device)
        self._cache_enabled = is_autocast_cache_enabled() if cache_enabled is None else bool(cache_enabled)
        if enabled:
            if self.device == "cuda":
                from ..cuda import is_available

                if not is_available():
                    warnings.warn("CUDA is not available or torch_xla is imported. Disabling autocast.",
                                  stacklevel=2)
                    enabled = False
            elif self.fast_dtype not in _SUPPORTED:
                name = self.device.upper()
                warnings.warn(f"In {name} autocast, but the target dtype is not supported. Disabling autocast.\n"
                              f"{name} Autocast only supports dtypes of {D._state['prefix']}.bfloat16, "
                              f"{D._state['prefix']}.float16 currently.", stacklevel=2)
                enabled = False
        self._enabled = bool(enabled)
        self._saved = []

    def __enter__(self):
        _load_torch_for(self.device)
        self._saved.append((is_autocast_enabled(self.device), get_autocast_dtype(self.device),
                            is_autocast_cache_enabled()))
        set_autocast_enabled(self.device, self._enabled)
        set_autocast_dtype(self.device, self.fast_dtype)
        autocast_increment_nesting()
        set_autocast_cache_enabled(self._cache_enabled)
        return self

    def __exit__(self, *exc) -> None:
        enabled, dtype, cache = self._saved.pop()
        if autocast_decrement_nesting() == 0:
            clear_autocast_cache()
        set_autocast_enabled(self.device, enabled)
        set_autocast_dtype(self.device, dtype)
        set_autocast_cache_enabled(cache)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with autocast(self.device, self.fast_dtype, self._enabled, self._cache_enabled):
                return fn(*args, **kwargs)

        return wrapper
