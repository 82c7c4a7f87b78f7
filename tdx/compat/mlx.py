"""``tdx.mlx``: a device module for MLX with torch.cuda's names, mapped onto ``mlx.core``.

MLX addresses devices by kind, not by ordinal: ``mlx:gpu`` (Metal or CUDA, where MLX has a GPU
backend) and ``mlx:cpu``. Device arguments may be those strings (or ``"gpu"``/``"cpu"``), a
``tdx.device``, an ``mx.Device`` or ``mx.DeviceType``; None means MLX's default device.
``current_device()`` returns a ``tdx.device``. Memory counters are MLX's allocator counters
(``mx.get_active_memory``, ``mx.get_peak_memory``...), which cover every MLX device at once.

Without MLX, ``is_available()`` is False, ``device_count()`` is 0, and calls that need MLX raise
:class:`BackendUnavailableError`. Importing this module must never import mlx.
"""

import contextlib as _contextlib
import os as _os

from .._device import device as _tdx_device
from .._errors import InvalidDeviceError as _InvalidDeviceError
from ..backends import _flags
from ..backends._flags import BackendUnavailableError

__all__ = ["is_available", "device_count", "current_device", "set_device", "device", "get_device_name",
           "get_device_properties", "synchronize", "manual_seed", "manual_seed_all", "seed", "seed_all",
           "empty_cache", "memory_allocated", "max_memory_allocated", "memory_reserved",
           "reset_peak_memory_stats", "mem_get_info", "is_bf16_supported", "Stream", "stream",
           "current_stream", "default_stream", "DeviceProperties", "BackendUnavailableError"]


def _need(what: str):
    mx = _flags.mlx_core()
    if mx is None:
        raise BackendUnavailableError(f"{what} needs MLX, which cannot be imported in this process; "
                                      "install it with: pip install 'tdx-runtime[mlx]'")
    return mx


def _gpu(mx) -> bool:
    cuda = getattr(mx, "cuda", None)
    return bool(mx.metal.is_available()) or (cuda is not None and bool(cuda.is_available()))


def _mx_device(mx, dev):
    """The ``mx.Device`` a device argument names (None stays None: MLX's default)."""
    if dev is None or isinstance(dev, mx.Device):
        return dev
    if isinstance(dev, mx.DeviceType):
        return mx.Device(dev)
    if dev in ("gpu", "cpu"):
        dev = f"mlx:{dev}"
    parsed = dev if isinstance(dev, _tdx_device) else _tdx_device(dev)
    if parsed.type != "mlx":
        raise _InvalidDeviceError(f"expected an MLX device ('mlx', 'mlx:gpu', 'mlx:cpu'), got {str(parsed)!r}")
    kind = parsed.kind or ("gpu" if _gpu(mx) else "cpu")
    if kind == "gpu" and not _gpu(mx):
        raise BackendUnavailableError("device 'mlx:gpu' is not available: this MLX build has no usable "
                                      "GPU backend (Metal or CUDA); use 'mlx:cpu'")
    return mx.Device(mx.gpu if kind == "gpu" else mx.cpu)


def _as_tdx(mx, dev):
    return _tdx_device("mlx:gpu" if dev.type == mx.DeviceType.gpu else "mlx:cpu")


def is_available() -> bool:
    """Whether MLX can be imported and run (on its GPU or its CPU)."""
    return _flags.mlx_core() is not None


def device_count() -> int:
    """How many MLX devices tdx can address: ``mlx:cpu``, plus ``mlx:gpu`` where MLX has a GPU (0 without MLX)."""
    mx = _flags.mlx_core()
    return 0 if mx is None else 1 + int(_gpu(mx))


def current_device():
    """MLX's default device as a ``tdx.device`` (``mlx:gpu`` or ``mlx:cpu``).

    Raises:
        BackendUnavailableError: MLX cannot be imported.
    """
    mx = _need("current_device()")
    return _as_tdx(mx, mx.default_device())


def set_device(device) -> None:
    """Make ``device`` MLX's default device (None does nothing, as in torch).

    Raises:
        BackendUnavailableError: MLX cannot be imported, or the GPU was asked for and there is none.
        InvalidDeviceError: ``device`` is not an MLX device.
    """
    if device is None:
        return
    mx = _need("set_device()")
    mx.set_default_device(_mx_device(mx, device))


class device:  # noqa: N801 - torch's name
    """Context manager making ``device`` MLX's default device (and stream) for its block.

    Args:
        device: an MLX device argument; None does nothing.
    """

    def __init__(self, device):
        self.device = device
        self._inner = None

    def __enter__(self):
        if self.device is None:
            return None
        mx = _need("device()")
        self._inner = mx.stream(_mx_device(mx, self.device))
        self._inner.__enter__()
        return None

    def __exit__(self, exc_type, exc_value, traceback):
        inner, self._inner = self._inner, None
        if inner is not None:
            inner.__exit__(exc_type, exc_value, traceback)
        return False


class DeviceProperties:
    """What MLX reports about a device.

    Attributes:
        name: the device name (``mx.device_info()["device_name"]``, else the kind).
        type: ``"gpu"`` or ``"cpu"``.
        architecture: MLX's architecture string, or None.
        total_memory: bytes of memory the device can use, or None where MLX does not say.
        info: the full ``mx.device_info()`` dictionary.
    """

    __slots__ = ("name", "type", "architecture", "total_memory", "info")

    def __init__(self, name, type, architecture, total_memory, info):  # noqa: A002 - torch's field name
        self.name, self.type, self.architecture, self.total_memory, self.info = (
            name, type, architecture, total_memory, info)

    def __repr__(self) -> str:
        return (f"DeviceProperties(name={self.name!r}, type={self.type!r}, "
                f"architecture={self.architecture!r}, total_memory={self.total_memory!r})")


def _total_memory(info: dict):
    for key in ("memory_size", "total_memory"):
        if isinstance(info.get(key), int):
            return info[key]
    return None


def get_device_properties(device=None) -> DeviceProperties:
    """The properties of an MLX device (default: MLX's default device).

    Raises:
        BackendUnavailableError: MLX cannot be imported, or the GPU was asked for and there is none.
    """
    mx = _need("get_device_properties()")
    dev = _mx_device(mx, device) or mx.default_device()
    info = dict(mx.device_info(dev))
    kind = "gpu" if dev.type == mx.DeviceType.gpu else "cpu"
    return DeviceProperties(str(info.get("device_name") or kind), kind, info.get("architecture"),
                            _total_memory(info), info)


def get_device_name(device=None) -> str:
    """The name of an MLX device (default: MLX's default device).

    Raises:
        BackendUnavailableError: MLX cannot be imported, or the GPU was asked for and there is none.
    """
    return get_device_properties(device).name


def synchronize(device=None) -> None:
    """Wait for every MLX operation queued on a device's default stream to finish.

    Raises:
        BackendUnavailableError: MLX cannot be imported.
    """
    mx = _need("synchronize()")
    mx.synchronize(_mx_device(mx, device))


def manual_seed(seed: int) -> None:
    """Seed MLX's global random generator (``mx.random.seed``).

    Raises:
        BackendUnavailableError: MLX cannot be imported.
    """
    _need("manual_seed()").random.seed(int(seed))


def manual_seed_all(seed: int) -> None:
    """Seed MLX's global random generator; MLX has one for all devices."""
    manual_seed(seed)


def seed() -> None:
    """Seed MLX's global random generator with a random number."""
    from .._tensor.generator import entropy_seed

    manual_seed(entropy_seed())


def seed_all() -> None:
    """Seed MLX's global random generator with a random number; MLX has one for all devices."""
    seed()


def empty_cache() -> None:
    """Free the memory MLX keeps cached for reuse (``mx.clear_cache``); no-op without MLX."""
    mx = _flags.mlx_core()
    if mx is not None:
        mx.clear_cache()


def memory_allocated(device=None) -> int:
    """Bytes held by live MLX arrays (``mx.get_active_memory``; 0 without MLX)."""
    mx = _flags.mlx_core()
    return 0 if mx is None else mx.get_active_memory()


def max_memory_allocated(device=None) -> int:
    """Peak bytes held by MLX arrays since the last reset (``mx.get_peak_memory``; 0 without MLX)."""
    mx = _flags.mlx_core()
    return 0 if mx is None else mx.get_peak_memory()


def memory_reserved(device=None) -> int:
    """Bytes MLX holds: live arrays plus its cache (0 without MLX)."""
    mx = _flags.mlx_core()
    return 0 if mx is None else mx.get_active_memory() + mx.get_cache_memory()


def reset_peak_memory_stats(device=None) -> None:
    """Reset MLX's peak-memory counter (``mx.reset_peak_memory``); no-op without MLX."""
    mx = _flags.mlx_core()
    if mx is not None:
        mx.reset_peak_memory()


def _host_memory() -> tuple:
    page = _os.sysconf("SC_PAGE_SIZE")
    return _os.sysconf("SC_AVPHYS_PAGES") * page, _os.sysconf("SC_PHYS_PAGES") * page


def mem_get_info(device=None) -> tuple:
    """``(free, total)`` bytes for an MLX device.

    For a GPU, total is what MLX reports (``memory_size``) and free is total minus MLX's active and
    cached bytes. For the CPU, or where MLX reports no size, the host's free and total memory.

    Raises:
        BackendUnavailableError: MLX cannot be imported.
    """
    props = get_device_properties(device)
    if props.type == "gpu" and props.total_memory is not None:
        mx = _need("mem_get_info()")
        used = mx.get_active_memory() + mx.get_cache_memory()
        return max(props.total_memory - used, 0), props.total_memory
    return _host_memory()


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """Whether MLX can compute in bfloat16 (it can on every device; False without MLX)."""
    return _flags.mlx_core() is not None


class _StreamType(type):
    def __instancecheck__(cls, obj):
        mx = _flags.mlx_core()
        return mx is not None and isinstance(obj, mx.Stream)


class Stream(metaclass=_StreamType):
    """A new MLX stream (``mx.new_stream``) on ``device``; ``isinstance`` accepts any ``mx.Stream``.

    Args:
        device: an MLX device argument (default: MLX's default device).
        priority: accepted for torch's signature; MLX streams have no priority.

    Raises:
        BackendUnavailableError: MLX cannot be imported.
    """

    def __new__(cls, device=None, priority=0):
        mx = _need("Stream()")
        return mx.new_stream(_mx_device(mx, device) or mx.default_device())


def stream(stream):
    """Context manager making ``stream`` (and its device) MLX's default for its block; None does nothing.

    Raises:
        BackendUnavailableError: a stream was given and MLX cannot be imported.
    """
    if stream is None:
        return _contextlib.nullcontext()
    return _need("stream()").stream(stream)


def current_stream(device=None):
    """The default ``mx.Stream`` of a device (default: MLX's default device).

    Raises:
        BackendUnavailableError: MLX cannot be imported.
    """
    mx = _need("current_stream()")
    return mx.default_stream(_mx_device(mx, device) or mx.default_device())


def default_stream(device=None):
    """The default ``mx.Stream`` of a device; MLX's current stream is its default one."""
    return current_stream(device)
