"""The device modules of accelerators tdx has no executor for (``tdx.xpu``, ``tdx.mtia``), answering "absent".

:func:`populate` fills a module with torch's device-module functions as torch answers them on a build
without that accelerator, the way ``tdx.cuda`` answers without CUDA: ``is_available()`` False,
``device_count()`` 0, seeding silently ignored, memory counters 0, ``empty_cache`` a no-op, and every call
that needs a device (``current_device``, ``synchronize``, ``get_device_name``, ``set_device``, streams...)
raising :class:`tdx.backends._flags.BackendUnavailableError` (a ``RuntimeError`` and ``AssertionError``, as
torch raises "Torch not compiled with ... enabled"). This module must never import a framework.
"""

from __future__ import annotations

import contextlib

from ..backends._flags import BackendUnavailableError
from .torch_paths import names

_FALSE = ("is_available", "is_initialized", "is_bf16_supported", "is_tf32_supported", "is_current_stream_capturing")
_ZERO = ("device_count", "memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved",
         "memory_usage", "utilization")
_IGNORED = ("manual_seed", "manual_seed_all", "seed", "seed_all", "empty_cache", "reset_peak_memory_stats",
            "reset_accumulated_memory_stats", "record_memory_history", "set_rng_state_all")
_NEED_DEVICE = ("init", "current_device", "set_device", "synchronize", "get_device_name", "get_device_properties",
                "get_device_capability", "get_rng_state", "get_rng_state_all", "set_rng_state", "initial_seed",
                "current_stream", "default_stream", "set_stream", "mem_get_info", "memory_stats", "snapshot",
                "memory_snapshot", "memory_stats_as_nested_dict", "get_stream_from_external", "stream",
                "get_arch_list", "get_gencode_flags", "temperature", "power_draw", "clock_rate")


def _constant(name: str, value):
    def fn(*args, **kwargs):
        return value
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"{value!r}: this accelerator is absent in tdx."
    return fn


def _ignored(name: str):
    def fn(*args, **kwargs) -> None:
        return None
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = "A no-op: this accelerator is absent in tdx (torch ignores it too when the device is missing)."
    return fn


def _needs_device(backend: str, name: str):
    def fn(*args, **kwargs):
        raise BackendUnavailableError(f"torch.{backend}.{name}() needs a {backend.upper()} device: Torch not "
                                      f"compiled with {backend.upper()} enabled (tdx has no {backend} executor)")
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Raises BackendUnavailableError: tdx has no {backend} executor."
    return fn


def populate(namespace: dict, backend: str) -> list:
    """Add the absent-device functions of ``backend`` (``"xpu"``) to ``namespace``; return their names."""
    funcs = {**{n: _constant(n, False) for n in _FALSE}, **{n: _constant(n, 0) for n in _ZERO},
             **{n: _ignored(n) for n in _IGNORED}, **{n: _needs_device(backend, n) for n in _NEED_DEVICE}}
    if backend == "xpu":
        funcs["get_arch_list"] = _constant("get_arch_list", [])
        funcs["get_gencode_flags"] = _constant("get_gencode_flags", "")
    else:  # torch.mtia's allocator calls reach the missing backend
        funcs["empty_cache"] = _needs_device(backend, "empty_cache")

    class device(contextlib.AbstractContextManager):  # noqa: N801 - torch's name
        """Context manager selecting a device: raises, as there is none."""

        def __init__(self, device):
            _needs_device(backend, "device")()

        def __exit__(self, *exc):
            return False

    funcs["device"] = device
    funcs["default_generators"] = ()
    torch_names = names(f"torch.{backend}")  # only the names torch's module has
    funcs = {n: f for n, f in funcs.items() if n in torch_names}
    namespace.update(funcs)
    return sorted(funcs)
