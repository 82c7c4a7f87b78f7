"""``tdx.backends.mlx``: MLX's availability, default device, memory limits and tdx's MLX switches.

torch has no such module; every name here is a tdx extension (listed in ``_TDX_EXTENSIONS``).
Queries answer False / None without MLX instead of raising; setting a memory limit needs MLX.
``fused_sdpa_enabled()`` says whether tdx's attention may use MLX's fused
``mx.fast.scaled_dot_product_attention`` kernel; its initial value is the config key
``backends.mlx.fused_sdpa`` and reading it never imports MLX. ``downcast_float64_enabled()``
says whether float64 asked of an MLX GPU (which has none) is held as float32 with a
:class:`tdx.PrecisionWarning` instead of raising (config key ``backends.mlx.downcast_float64``,
default False).

This module must never import mlx (or torch) when it is imported.
"""

from contextlib import contextmanager as _contextmanager

from ... import config as _config
from ..._device import device as _device
from .. import _flags

_flags.prepare_mlx()  # before the executor imports mlx.core: torch's float32 matmul precision on CUDA

_TDX_EXTENSIONS = ("is_built", "is_available", "default_device", "is_metal_available", "is_cuda_available",
                   "is_gpu_available", "get_memory_limit", "set_memory_limit", "set_cache_limit",
                   "set_wired_limit", "fused_sdpa_enabled", "enable_fused_sdpa", "downcast_float64_enabled",
                   "enable_downcast_float64", "set_flags", "flags")

__all__ = list(_TDX_EXTENSIONS)

_state = {"fused_sdpa": None, "downcast_float64": None}  # None: follow the config file


def is_built() -> bool:
    """Whether MLX is installed (found without importing it)."""
    return _flags.installed("mlx")


def is_available() -> bool:
    """Whether MLX can be imported and run (on its GPU or its CPU)."""
    return _flags.mlx_core() is not None


def default_device():
    """MLX's default device as a ``tdx.device`` (``mlx:gpu`` or ``mlx:cpu``), or None without MLX."""
    mx = _flags.mlx_core()
    if mx is None:
        return None
    return _device("mlx:gpu" if mx.default_device().type == mx.DeviceType.gpu else "mlx:cpu")


def is_metal_available() -> bool:
    """Whether MLX can run on a Metal GPU (False without MLX)."""
    mx = _flags.mlx_core()
    return False if mx is None else bool(mx.metal.is_available())


def is_cuda_available() -> bool:
    """Whether MLX can run on a CUDA GPU (an ``mlx[cuda]`` build with a GPU; False without MLX)."""
    mx = _flags.mlx_core()
    cuda = getattr(mx, "cuda", None)
    return False if cuda is None else bool(cuda.is_available())


def is_gpu_available() -> bool:
    """Whether MLX has a GPU backend usable here (Metal or CUDA)."""
    return is_metal_available() or is_cuda_available()


def _need_mlx(what: str):
    mx = _flags.mlx_core()
    if mx is None:
        raise _flags.BackendUnavailableError(f"{what} needs MLX, which cannot be imported in this "
                                             "process; install it with: pip install 'tdx-runtime[mlx]'")
    return mx


def get_memory_limit():
    """MLX's memory limit in bytes (a guideline for graph evaluation), or None without MLX."""
    mx = _flags.mlx_core()
    return None if mx is None else mx.get_memory_limit()


def set_memory_limit(limit: int) -> int:
    """Set MLX's memory limit in bytes; returns the previous limit.

    Raises:
        BackendUnavailableError: MLX cannot be imported.
    """
    return _need_mlx("set_memory_limit()").set_memory_limit(limit)


def set_cache_limit(limit: int) -> int:
    """Set how many freed bytes MLX keeps cached (0 disables the cache); returns the previous limit.

    Raises:
        BackendUnavailableError: MLX cannot be imported.
    """
    return _need_mlx("set_cache_limit()").set_cache_limit(limit)


def set_wired_limit(limit: int) -> int:
    """Set how many bytes MLX keeps wired (resident; macOS 15+); returns the previous limit.

    Raises:
        BackendUnavailableError: MLX cannot be imported.
    """
    return _need_mlx("set_wired_limit()").set_wired_limit(limit)


def fused_sdpa_enabled() -> bool:
    """Whether tdx's attention may use MLX's fused SDPA kernel on MLX tensors.

    The value set with :func:`enable_fused_sdpa`, else the config key ``backends.mlx.fused_sdpa``
    (default True).
    """
    value = _state["fused_sdpa"]
    return _config.current()["backends.mlx.fused_sdpa"] if value is None else value


def enable_fused_sdpa(enabled: bool) -> None:
    """Allow or forbid MLX's fused SDPA kernel in tdx's attention (overrides the config file).

    Raises:
        FlagValueError: ``enabled`` is not a bool.
    """
    _state["fused_sdpa"] = _flags.check_bool("enable_fused_sdpa")(enabled)


def downcast_float64_enabled() -> bool:
    """Whether float64 asked of an MLX GPU is held as float32 (with a PrecisionWarning) instead of raising.

    The value set with :func:`enable_downcast_float64`, else the config key
    ``backends.mlx.downcast_float64`` (default False: float64 on an MLX GPU raises DtypeError).
    """
    value = _state["downcast_float64"]
    return _config.current()["backends.mlx.downcast_float64"] if value is None else value


def enable_downcast_float64(enabled: bool) -> None:
    """Opt in to (or out of) holding float64 as float32 on an MLX GPU (overrides the config file).

    Raises:
        FlagValueError: ``enabled`` is not a bool.
    """
    _state["downcast_float64"] = _flags.check_bool("enable_downcast_float64")(enabled)


def set_flags(_fused_sdpa=None, _downcast_float64=None):
    """Set the MLX switches that are not None and return the previous ones as a tuple."""
    orig = (fused_sdpa_enabled(), downcast_float64_enabled())
    if _fused_sdpa is not None:
        enable_fused_sdpa(_fused_sdpa)
    if _downcast_float64 is not None:
        enable_downcast_float64(_downcast_float64)
    return orig


@_contextmanager
def flags(fused_sdpa=True, downcast_float64=None):
    """Set the MLX switches for the ``with`` block and restore them after it, even on error.

    ``downcast_float64=None`` leaves that switch as it is. A switch that followed the config
    file before the block follows it again after.
    """
    saved = dict(_state)
    try:
        set_flags(fused_sdpa, downcast_float64)
        yield
    finally:
        _state.update(saved)
