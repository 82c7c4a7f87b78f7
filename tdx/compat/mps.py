"""``tdx.mps``: torch.mps's functions for Apple's Metal Performance Shaders device, under torch's names.

With torch installed, every call is torch.mps's (torch is imported on the first call). Without
torch, the module answers as torch does on a machine without MPS: ``is_available()`` is False,
``device_count()`` is 0, ``manual_seed`` is a no-op, and calls that need the device raise
:class:`BackendUnavailableError` (a ``RuntimeError``, as torch's). Importing this module must
never import torch.
"""

from ..backends import _flags
from ..backends._flags import BackendUnavailableError

__all__ = ["is_available", "device_count", "synchronize", "manual_seed", "seed", "get_rng_state",
           "set_rng_state", "empty_cache", "set_per_process_memory_fraction", "current_allocated_memory",
           "driver_allocated_memory", "recommended_max_memory", "compile_shader", "Event",
           "BackendUnavailableError"]


def _torch_mps():
    torch = _flags.torch_module()
    return None if torch is None else torch.mps


def _need(what: str):
    mps = _torch_mps()
    if mps is None:
        raise BackendUnavailableError(f"Cannot execute {what} without MPS backend: torch cannot be "
                                      "imported in this process (pip install 'tdx-runtime[torch]')")
    return mps


def is_available() -> bool:
    """Whether an MPS device is usable (False without torch)."""
    mps = _torch_mps()
    return False if mps is None else mps.is_available()


def device_count() -> int:
    """The number of MPS devices: 1 where MPS is usable, else 0."""
    mps = _torch_mps()
    return 0 if mps is None else mps.device_count()


def synchronize() -> None:
    """Wait for every kernel queued on the MPS device to finish.

    Raises:
        RuntimeError: there is no MPS backend.
    """
    _need("synchronize()").synchronize()


def manual_seed(seed: int) -> None:
    """Seed the MPS generator (no-op where there is no MPS backend)."""
    mps = _torch_mps()
    if mps is not None:
        mps.manual_seed(seed)


def seed() -> None:
    """Seed the MPS generator randomly.

    Raises:
        RuntimeError: there is no MPS backend.
    """
    _need("seed()").seed()


def get_rng_state(device="mps"):
    """The MPS generator state as a torch ByteTensor.

    Raises:
        RuntimeError: there is no MPS backend.
    """
    return _need("get_rng_state()").get_rng_state(str(device))


def set_rng_state(new_state, device="mps") -> None:
    """Restore the MPS generator state.

    Raises:
        RuntimeError: there is no MPS backend.
    """
    _need("set_rng_state()").set_rng_state(new_state, str(device))


def empty_cache() -> None:
    """Release the caching allocator's unused MPS memory.

    Raises:
        RuntimeError: there is no MPS backend (as torch).
    """
    _need("empty_cache()").empty_cache()


def set_per_process_memory_fraction(fraction: float) -> None:
    """Cap this process's MPS memory at ``fraction`` of the recommended maximum (0 = unlimited).

    Raises:
        RuntimeError: there is no MPS backend.
    """
    _need("set_per_process_memory_fraction()").set_per_process_memory_fraction(fraction)


def current_allocated_memory() -> int:
    """Bytes held by tensors on the MPS device.

    Raises:
        RuntimeError: there is no MPS backend.
    """
    return _need("current_allocated_memory()").current_allocated_memory()


def driver_allocated_memory() -> int:
    """Bytes the Metal driver holds for this process.

    Raises:
        RuntimeError: there is no MPS backend.
    """
    return _need("driver_allocated_memory()").driver_allocated_memory()


def recommended_max_memory() -> int:
    """The recommended working-set size of the MPS device in bytes.

    Raises:
        RuntimeError: there is no MPS backend.
    """
    return _need("recommended_max_memory()").recommended_max_memory()


def compile_shader(source: str):
    """Compile Metal shader source into a library whose kernels take MPS tensors.

    Raises:
        RuntimeError: there is no MPS backend.
    """
    return _need("compile_shader()").compile_shader(source)


class _UnavailableEvent:
    """Stand-in for torch.mps.Event when torch cannot be imported."""

    def __init__(self, *args, **kwargs):
        raise BackendUnavailableError("Cannot create an MPS Event without MPS backend: torch cannot be "
                                      "imported in this process (pip install 'tdx-runtime[torch]')")


def __getattr__(name: str):
    # Event is torch.mps's own class (torch is imported to fetch it).
    if name == "Event":
        mps = _torch_mps()
        return _UnavailableEvent if mps is None else mps.Event
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | {"Event"})
