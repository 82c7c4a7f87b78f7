"""torch's process-wide settings at top level: threads, determinism, matmul precision, warnings, RNG.

``tdx.get_num_threads``, ``tdx.use_deterministic_algorithms``, ``tdx.set_float32_matmul_precision``,
``tdx.set_warn_always``, ``tdx.get_rng_state``... Each setting is a :class:`~tdx.backends._flags.Flag`:
it is torch's own setting once torch is loaded (the torch executor's kernels obey it) and a
value kept by tdx until then, so reading or writing one never imports torch. MLX has no such
knobs: its kernels are deterministic and it sizes its own thread pool. Also the small
introspection helpers (``typename``, ``get_device_module``, ``compiled_with_cxx11_abi``...).
This module must never import a framework when it is imported.
"""

from __future__ import annotations

import importlib
import os

from .._errors import TdxRuntimeError, TdxTypeError
from ..backends import _flags

__all__ = ["get_num_threads", "set_num_threads", "get_num_interop_threads", "set_num_interop_threads",
           "init_num_threads", "use_deterministic_algorithms", "are_deterministic_algorithms_enabled",
           "is_deterministic_algorithms_warn_only_enabled", "set_deterministic_debug_mode",
           "get_deterministic_debug_mode", "get_float32_matmul_precision", "set_float32_matmul_precision",
           "set_flush_denormal", "set_warn_always", "is_warn_always_enabled", "get_rng_state", "set_rng_state",
           "manual_seed", "seed", "compiled_with_cxx11_abi", "get_device_module", "get_file_path",
           "prepare_multiprocessing_environment", "is_vulkan_available", "typename", "classproperty",
           "is_anomaly_enabled", "is_anomaly_check_nan_enabled", "set_anomaly_enabled", "cudnn_is_acceptable",
           "DisableTorchFunction", "DisableTorchFunctionSubclass", "thread_safe_generator"]


def _positive_int(api: str):
    def check(value):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TdxTypeError(f"{api}(): argument must be int, not {type(value).__name__}")
        if value <= 0:
            raise TdxRuntimeError(f"{api}: Number of threads must be positive, but got {value}")
        return value
    return check


_THREADS = _flags.Flag("torch.num_threads", os.cpu_count() or 1, lambda t: t.get_num_threads(),
                       lambda t, v: t.set_num_threads(v), _positive_int("set_num_threads"), load=False)
_INTEROP = _flags.Flag("torch.num_interop_threads", os.cpu_count() or 1, lambda t: t.get_num_interop_threads(),
                       lambda t, v: t.set_num_interop_threads(v), _positive_int("set_num_interop_threads"),
                       load=False)
_DETERMINISTIC = _flags.Flag("torch.deterministic", (False, False),
                             lambda t: (t.are_deterministic_algorithms_enabled(),
                                        t.is_deterministic_algorithms_warn_only_enabled()),
                             lambda t, v: t.use_deterministic_algorithms(v[0], warn_only=v[1]), load=False)
_MATMUL = _flags.Flag("torch.float32_matmul_precision", "highest", lambda t: t.get_float32_matmul_precision(),
                      lambda t, v: t.set_float32_matmul_precision(v), load=False)
_WARN_ALWAYS = _flags.Flag("torch.warn_always", False, lambda t: t.is_warn_always_enabled(),
                           lambda t, v: t.set_warn_always(v), _flags.check_bool("set_warn_always"), load=False)
_MATMUL_PRECISIONS = ("highest", "high", "medium")
_DEBUG_MODES = {"default": 0, "warn": 1, "error": 2}


def get_num_threads() -> int:
    """The number of threads torch's CPU kernels use (tdx's pending value before torch loads)."""
    return _THREADS.read()


def set_num_threads(int) -> None:  # noqa: A002 - torch's parameter name
    """Set the number of threads of torch's CPU kernels (applied when torch loads, if it has not).

    Raises:
        TdxTypeError: not an int.  TdxRuntimeError: not positive.
    """
    _THREADS.write(_positive_int("set_num_threads")(int))


def get_num_interop_threads() -> int:
    """The number of threads torch uses for inter-op parallelism."""
    return _INTEROP.read()


def set_num_interop_threads(int) -> None:  # noqa: A002 - torch's parameter name
    """Set torch's inter-op thread count; torch refuses it once parallel work has started.

    Raises:
        TdxTypeError: not an int.  TdxRuntimeError: not positive, or torch refuses.
    """
    try:
        _INTEROP.write(_positive_int("set_num_interop_threads")(int))
    except RuntimeError as err:
        if isinstance(err, TdxRuntimeError):
            raise
        raise TdxRuntimeError(str(err)) from None


def init_num_threads() -> None:
    """Initialise the thread pool of the calling thread (torch's; nothing to do before torch loads)."""
    torch = _flags.torch_loaded()
    if torch is not None:
        torch.init_num_threads()


def use_deterministic_algorithms(mode, *, warn_only=False) -> None:
    """Make torch's kernels deterministic (or raise/warn where one cannot be); MLX's already are.

    Raises:
        TdxTypeError: ``mode`` or ``warn_only`` is not a bool.
    """
    for name, value in (("mode", mode), ("warn_only", warn_only)):
        if not isinstance(value, bool):
            raise TdxTypeError(f"use_deterministic_algorithms(): argument '{name}' must be bool, "
                               f"not {type(value).__name__}")
    _DETERMINISTIC.write((mode, warn_only))


def are_deterministic_algorithms_enabled() -> bool:
    """Whether :func:`use_deterministic_algorithms` is on."""
    return _DETERMINISTIC.read()[0]


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    """Whether deterministic mode only warns."""
    return _DETERMINISTIC.read()[1]


def set_deterministic_debug_mode(debug_mode) -> None:
    """``"default"``/0 off, ``"warn"``/1 warn-only, ``"error"``/2 on, as torch.

    Raises:
        TdxTypeError: neither a str nor an int.  TdxRuntimeError: an unknown mode.
    """
    if isinstance(debug_mode, str):
        if debug_mode not in _DEBUG_MODES:
            raise TdxRuntimeError(f"invalid value of debug_mode, expected one of `default`, `warn`, `error`, "
                                  f"but got {debug_mode}")
        debug_mode = _DEBUG_MODES[debug_mode]
    elif isinstance(debug_mode, bool) or not isinstance(debug_mode, int):
        raise TdxTypeError(f"debug_mode must be str or int, but got {type(debug_mode).__name__}")
    if debug_mode not in (0, 1, 2):
        raise TdxRuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got {debug_mode}")
    use_deterministic_algorithms(debug_mode != 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode() -> int:
    """0, 1 or 2, as set by :func:`set_deterministic_debug_mode`."""
    on, warn = _DETERMINISTIC.read()
    return 0 if not on else 1 if warn else 2


def get_float32_matmul_precision() -> str:
    """``"highest"``, ``"high"`` or ``"medium"``: how float32 matmuls may trade precision for speed."""
    return _MATMUL.read()


def set_float32_matmul_precision(precision) -> None:
    """Set the float32 matmul precision of torch's kernels (MLX's CPU matmul is always full float32).

    Raises:
        TdxRuntimeError: not one of ``"highest"``, ``"high"``, ``"medium"`` (torch raises RuntimeError).
    """
    if precision not in _MATMUL_PRECISIONS:
        raise TdxRuntimeError(f"Invalid precision {precision!r}; expected one of {', '.join(_MATMUL_PRECISIONS)}")
    _MATMUL.write(precision)


def set_flush_denormal(mode) -> bool:
    """Flush denormal floats to zero on the CPU (torch's); returns whether the CPU supports it.

    Raises:
        TdxTypeError: ``mode`` is not a bool.
    """
    if not isinstance(mode, bool):
        raise TdxTypeError(f"set_flush_denormal(): argument 'mode' must be bool, not {type(mode).__name__}")
    torch = _flags.torch_module()
    return False if torch is None else torch.set_flush_denormal(mode)


def set_warn_always(b) -> None:
    """Make torch's warn-once warnings warn every time."""
    _WARN_ALWAYS.write(_flags.check_bool("set_warn_always")(b))


def is_warn_always_enabled() -> bool:
    """Whether :func:`set_warn_always` is on."""
    return _WARN_ALWAYS.read()


def seeded_torch(what: str):
    """torch, with its cpu executor made (so a seed given before any cpu tensor existed is applied).

    Raises:
        BackendUnavailableError: torch cannot be imported (``what`` names the caller).
    """
    torch = _flags.require_torch(what)
    from ..backends import host_torch

    host_torch()
    return torch


def get_rng_state():
    """The default CPU generator's state as a ``uint8`` tensor on cpu (torch's ``ByteTensor``).

    While the torch random stream is in force (the default) that generator also draws MLX's
    numbers, so the state covers them; under a device pin the tensor lies on the pinned device.
    """
    import numpy as np

    from .. import _dtypes as D
    from .._tensor.creation import tensor

    state = seeded_torch("get_rng_state()").get_rng_state()
    return tensor(np.frombuffer(state.numpy().tobytes(), dtype=np.uint8), dtype=D.uint8, device="cpu")


def set_rng_state(new_state) -> None:
    """Restore the default CPU generator from :func:`get_rng_state`'s tensor (on any device).

    Raises:
        TdxTypeError: ``new_state`` is not a uint8 tdx tensor.
    """
    from .. import _dtypes as D

    if not hasattr(new_state, "_n") or new_state.dtype is not D.uint8:
        raise TdxTypeError(f"set_rng_state expected a uint8 tdx tensor (as get_rng_state returns), got "
                           f"{getattr(new_state, 'dtype', type(new_state).__name__)}")
    torch = seeded_torch("set_rng_state()")
    data = bytearray(new_state.numpy(force=True).tobytes())
    try:
        torch.set_rng_state(torch.frombuffer(data, dtype=torch.uint8) if data else torch.empty(0, dtype=torch.uint8))
    except RuntimeError as err:
        raise TdxRuntimeError(str(err)) from err


def manual_seed(seed):
    """Seed the random generators of every executor (and Python's ``random``); returns the default CPU
    generator as a :class:`tdx.Generator`, as torch's ``manual_seed`` returns ``torch.default_generator``
    (None in a program on MLX's own stream that has not loaded torch: building it would import torch).

    Raises:
        TdxTypeError: ``seed`` is not an int.
    """
    import sys

    from .. import config
    from ..backends import _seeding
    from .generator import default_generator

    _seeding.manual_seed(seed)
    if "torch" not in sys.modules and config.current()["random.stream"] != "torch":
        return None  # an MLX-only program on MLX's own stream: building torch's generator would import torch
    return default_generator()


def seed() -> int:
    """Seed every executor's generator from the operating system's entropy; returns the seed."""
    from .._tensor.generator import entropy_seed
    from ..backends._seeding import manual_seed

    value = entropy_seed()
    manual_seed(value)
    return value


def compiled_with_cxx11_abi() -> bool:
    """Whether torch was built with the C++11 ABI (True for every torch >= 2.7 wheel, and without torch)."""
    torch = _flags.torch_module()
    return True if torch is None else bool(torch.compiled_with_cxx11_abi())


def get_device_module(device=None):
    """The ``tdx.<type>`` module of a device (``tdx.cuda``, ``tdx.mps``, ``tdx.mlx``); None means the
    default device's.

    Raises:
        TdxRuntimeError: the device type has no such module.
    """
    from .. import backends
    from .._device import device as _device

    if device is None:
        kind = backends.get_default_device().type
    else:
        kind = device.type if hasattr(device, "type") else _device(device).type if ":" in str(device) \
            else str(device)
    if kind in ("cuda", "mps", "mlx"):
        return importlib.import_module(f"tdx.{kind}")
    raise TdxRuntimeError(f"Device '{kind}' does not have a corresponding module registered as 'tdx.{kind}'.")


def get_file_path(*path_components: str) -> str:
    """A path under the installed tdx package (torch's gives one under torch's)."""
    return os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), *path_components)


def prepare_multiprocessing_environment(path: str) -> None:
    """A hook torch's internal builds use; does nothing, as in torch's public builds."""


def is_vulkan_available() -> bool:
    """False: tdx has no Vulkan executor (nor has torch's usual build)."""
    return False


def typename(obj) -> str:
    """The type of ``obj`` as a string: a tensor's ``x.type()``, else ``module.QualName``."""
    if hasattr(obj, "_n") and hasattr(obj, "_ex"):
        return obj.type()
    module, name = "", ""
    if isinstance(obj, type):
        module, name = getattr(obj, "__module__", "") or "", obj.__qualname__
    else:
        cls = type(obj)
        module, name = getattr(cls, "__module__", "") or "", cls.__qualname__
    if module in ("", "builtins"):
        return name
    return f"{module}.{name}"


class classproperty:  # noqa: N801 - torch's name
    """A read-only property of the class itself (``torch._utils.classproperty``)."""

    def __init__(self, func):
        self.fget = func.__func__ if isinstance(func, classmethod) else func

    def __get__(self, instance, owner=None):
        return self.fget(owner if owner is not None else type(instance))


def is_anomaly_enabled() -> bool:
    """Whether autograd's anomaly detection is on (``tdx.autograd.detect_anomaly``)."""
    from ..autograd import anomaly

    return anomaly.is_anomaly_enabled()


def is_anomaly_check_nan_enabled() -> bool:
    """Whether anomaly detection also checks gradients for NaN."""
    from ..autograd import anomaly

    return anomaly.is_anomaly_check_nan_enabled()


def set_anomaly_enabled(enabled, check_nan=True) -> None:
    """Turn anomaly detection on or off (torch's ``torch.set_anomaly_enabled``)."""
    from ..autograd import anomaly

    anomaly._set(bool(enabled), bool(check_nan))


def cudnn_is_acceptable(tensor) -> bool:
    """Whether cuDNN may run on ``tensor`` (``tdx.backends.cudnn.is_acceptable``)."""
    from ..backends import cudnn

    return cudnn.is_acceptable(tensor)


from .subclassing import DisableTorchFunction, DisableTorchFunctionSubclass  # noqa: E402 - torch's names here


def thread_safe_generator():
    """The generator of the DataLoader thread worker this runs in, else None (the global generator), as
    torch's. tdx's DataLoader runs its workers as processes, so this answers None there too."""
    info = importlib.import_module("tdx.compat.utils.data").get_worker_info()
    if info is not None and getattr(info, "worker_method", None) == "thread" and getattr(info, "rng", None):
        return info.rng.torch_generator
    return None
