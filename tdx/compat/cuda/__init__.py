"""``tdx.cuda``: torch.cuda's device-management functions, under torch's names.

With torch installed, every call is torch.cuda's (torch is imported on the first call); torch.cuda's
functions this module does not define are forwarded to torch.cuda as they are. Without
torch, the module answers as torch does on a machine without CUDA: ``is_available()`` is False,
``device_count()`` is 0, memory counters are 0, seeding is a no-op, and calls that need a
device raise :class:`BackendUnavailableError` (both ``RuntimeError`` and ``AssertionError``,
as torch raises either there). ``tdx.device`` arguments are accepted wherever torch takes a
device. Importing this module must never import torch.

Under a device pin (``python -m tdx run --device DEV``) the module answers for DEV, so code
written for CUDA takes its accelerator branch exactly when DEV is an accelerator (``cuda:N``,
``mps``, ``mlx:gpu``): ``is_available()`` is that, ``device_count()`` 1 (the real count when DEV
is CUDA), ``current_device()`` 0, ``synchronize()`` waits for DEV, and ``get_device_name()`` names DEV.
"""

import contextlib as _contextlib

from ..._device import device as _tdx_device
from ...backends import _flags
from ...backends._flags import BackendUnavailableError

__all__ = ["is_available", "is_initialized", "init", "device_count", "current_device", "set_device",
           "device", "get_device_name", "get_device_properties", "get_device_capability", "get_arch_list",
           "synchronize", "manual_seed", "manual_seed_all", "seed", "seed_all", "initial_seed",
           "get_rng_state", "set_rng_state", "empty_cache", "memory_allocated", "max_memory_allocated",
           "memory_reserved", "max_memory_reserved", "reset_peak_memory_stats", "reset_max_memory_allocated",
           "memory_stats", "mem_get_info", "is_bf16_supported", "is_tf32_supported", "Stream", "Event",
           "StreamContext", "stream", "current_stream", "default_stream", "BackendUnavailableError", "CUDAGraph",
           "graph", "is_current_stream_capturing", "graph_pool_handle"]

# torch.cuda's own classes, handed out as they are: tdx's cuda tensors run torch's kernels, so a
# CUDA graph captures them as it captures torch's
_CLASSES = ("Stream", "Event", "StreamContext", "CUDAGraph", "graph", "graph_pool_handle")


def _pinned_elsewhere():
    """The pinned executor when a pin is active and it is not a CUDA device, else None."""
    from ... import backends

    pin = backends.pinned()
    return None if pin is None or pin[0].device.type == "cuda" else pin[0]


def is_accelerator(dev) -> bool:
    """Whether ``dev`` (a tdx.device) is an accelerator: ``cuda``, ``mps`` or MLX's GPU."""
    return dev.type in ("cuda", "mps") or (dev.type == "mlx" and dev.kind == "gpu")


def _torch_cuda():
    torch = _flags.torch_module()
    return None if torch is None else torch.cuda


def _need(what: str):
    cuda = _torch_cuda()
    if cuda is None:
        raise BackendUnavailableError(f"{what} needs CUDA, which is not available: torch cannot be "
                                      "imported in this process (pip install 'tdx-runtime[torch]')")
    return cuda


def _arg(dev):
    """A device argument torch accepts: tdx devices become their string."""
    return str(dev) if isinstance(dev, _tdx_device) else dev


def _index(dev) -> int:
    """The ordinal a device argument names; -1 for None or a negative int."""
    if dev is None:
        return -1
    if isinstance(dev, int) and not isinstance(dev, bool):
        return dev
    parsed = _tdx_device(dev) if isinstance(dev, str) else dev
    index = getattr(parsed, "index", None)
    return 0 if index is None else index


def is_available() -> bool:
    """Whether a CUDA device is usable (False without torch); under a pin: whether DEV is an accelerator."""
    ex = _pinned_elsewhere()
    if ex is not None:
        return is_accelerator(ex.device)
    cuda = _torch_cuda()
    return False if cuda is None else cuda.is_available()


def is_initialized() -> bool:
    """Whether torch's CUDA state is initialized (False without torch)."""
    cuda = _torch_cuda()
    return False if cuda is None else cuda.is_initialized()


def init() -> None:
    """Initialize torch's CUDA state.

    Raises:
        BackendUnavailableError: no CUDA (torch raises its own error when it lacks CUDA).
    """
    _need("init()").init()


def device_count() -> int:
    """The number of usable CUDA devices (0 without torch); under a pin to an accelerator, 1."""
    ex = _pinned_elsewhere()
    if ex is not None:
        return int(is_accelerator(ex.device))
    cuda = _torch_cuda()
    return 0 if cuda is None else cuda.device_count()


def current_device() -> int:
    """The ordinal of the current CUDA device.

    Raises:
        BackendUnavailableError: no CUDA (torch raises ``AssertionError`` on builds without CUDA).
    """
    if _pinned_elsewhere() is not None and is_available():
        return 0
    return _need("current_device()").current_device()


def set_device(device) -> None:
    """Make ``device`` current; a negative int or None does nothing, as in torch.

    Raises:
        BackendUnavailableError: a device was named and there is no CUDA.
    """
    cuda = _torch_cuda()
    if cuda is not None:
        return cuda.set_device(_arg(device))
    if _index(device) >= 0:
        _need(f"set_device({device!r})")
    return None


class device:  # noqa: N801 - torch's name
    """Context manager that makes ``device`` current for its block (a negative index does nothing).

    Args:
        device: an int, ``"cuda:N"``, ``tdx.device`` or ``torch.device``.
    """

    def __init__(self, device):
        self.device = device
        self._inner = None

    def __enter__(self):
        cuda = _torch_cuda()
        if cuda is not None:
            self._inner = cuda.device(_arg(self.device))
            return self._inner.__enter__()
        if _index(self.device) >= 0:
            _need(f"device({self.device!r})")
        return None

    def __exit__(self, exc_type, exc_value, traceback):
        inner, self._inner = self._inner, None
        return False if inner is None else inner.__exit__(exc_type, exc_value, traceback)


def get_device_name(device=None) -> str:
    """The name of a CUDA device (default: the current one).

    Raises:
        BackendUnavailableError: no CUDA.
    """
    ex = _pinned_elsewhere()
    if ex is not None and is_accelerator(ex.device):
        return f"{ex.device} (pinned by tdx)"
    return _need("get_device_name()").get_device_name(_arg(device))


def get_device_properties(device=None):
    """torch's properties object of a CUDA device (name, total_memory, major, minor...).

    Raises:
        BackendUnavailableError: no CUDA.
    """
    return _need("get_device_properties()").get_device_properties(_arg(device))


def get_device_capability(device=None) -> tuple:
    """The ``(major, minor)`` compute capability of a CUDA device.

    Raises:
        BackendUnavailableError: no CUDA.
    """
    return _need("get_device_capability()").get_device_capability(_arg(device))


def get_arch_list() -> list:
    """The CUDA architectures torch was built for ([] without torch or CUDA)."""
    cuda = _torch_cuda()
    return [] if cuda is None else cuda.get_arch_list()


def synchronize(device=None) -> None:
    """Wait for every kernel on a CUDA device to finish.

    Raises:
        BackendUnavailableError: no CUDA.
    """
    ex = _pinned_elsewhere()
    if ex is not None and is_accelerator(ex.device):
        ex.synchronize()
        return
    _need("synchronize()").synchronize(_arg(device))


def _seed_pinned(seed: int) -> bool:
    """Under a pin to a device other than CUDA, seed the generator that device draws from (the one the
    program's "cuda" tensors really use); False when no such pin is active."""
    ex = _pinned_elsewhere()
    if ex is None:
        return False
    from ...backends._seeding import remember

    remember(seed, (ex,))
    ex.manual_seed(seed)
    return True


def manual_seed(seed: int) -> None:
    """Seed the current CUDA device's generator (torch applies it lazily; no-op without torch).

    Under a pin to another device, the pinned device's generator: the one the program's CUDA
    tensors draw from there (with the torch random stream, torch's CPU generator).
    """
    if _seed_pinned(int(seed)):
        return
    cuda = _torch_cuda()
    if cuda is not None:
        cuda.manual_seed(seed)


def manual_seed_all(seed: int) -> None:
    """Seed every CUDA device's generator (no-op without torch); under a pin, as :func:`manual_seed`."""
    if _seed_pinned(int(seed)):
        return
    cuda = _torch_cuda()
    if cuda is not None:
        cuda.manual_seed_all(seed)


def seed() -> None:
    """Seed the current CUDA device's generator randomly (no-op without torch); under a pin, the pinned
    device's."""
    from ..._tensor.generator import entropy_seed

    if _seed_pinned(entropy_seed()):
        return
    cuda = _torch_cuda()
    if cuda is not None:
        cuda.seed()


def seed_all() -> None:
    """Seed every CUDA device's generator randomly (no-op without torch); under a pin, as :func:`seed`."""
    seed()


def initial_seed() -> int:
    """The current CUDA generator's initial seed (under a pin to another device, that device's).

    Raises:
        BackendUnavailableError: no CUDA.
    """
    if _pinned_elsewhere() is not None:
        from ...backends._seeding import initial_seed as pinned_seed

        return pinned_seed()
    return _need("initial_seed()").initial_seed()


def get_rng_state(device="cuda"):
    """A CUDA device's generator state as a uint8 tdx tensor on cpu (under a pin to another device, the state
    of the generator that device draws from).

    Raises:
        BackendUnavailableError: no CUDA.
    """
    if _pinned_elsewhere() is not None:
        from ..._tensor.runtime import get_rng_state as pinned_state

        return pinned_state()
    import numpy as np

    from ... import _dtypes as D
    from ..._tensor.creation import tensor

    state = _need("get_rng_state()").get_rng_state(_arg(device))  # torch's ByteTensor on the host
    return tensor(np.frombuffer(state.numpy().tobytes(), dtype=np.uint8), dtype=D.uint8, device="cpu")


def set_rng_state(new_state, device="cuda") -> None:
    """Restore a CUDA device's generator state (under a pin to another device, that device's).

    Raises:
        BackendUnavailableError: no CUDA.
    """
    if _pinned_elsewhere() is not None:
        from ..._tensor.runtime import set_rng_state as pinned_set

        pinned_set(new_state)
        return
    cuda = _need("set_rng_state()")
    if hasattr(new_state, "_n"):  # a tdx tensor (get_rng_state's): torch's ByteTensor of the same bytes
        torch = _flags.torch_module()
        data = bytearray(new_state.numpy(force=True).tobytes())
        new_state = torch.frombuffer(data, dtype=torch.uint8) if data else torch.empty(0, dtype=torch.uint8)
    cuda.set_rng_state(new_state, _arg(device))


def empty_cache() -> None:
    """Release the caching allocator's unused CUDA memory (no-op without torch)."""
    cuda = _torch_cuda()
    if cuda is not None:
        cuda.empty_cache()


def _counter(name: str, device) -> int:
    cuda = _torch_cuda()
    return 0 if cuda is None else getattr(cuda, name)(_arg(device))


def memory_allocated(device=None) -> int:
    """Bytes held by tensors on a CUDA device (0 without CUDA)."""
    return _counter("memory_allocated", device)


def max_memory_allocated(device=None) -> int:
    """Peak bytes held by tensors on a CUDA device since the last reset (0 without CUDA)."""
    return _counter("max_memory_allocated", device)


def memory_reserved(device=None) -> int:
    """Bytes the caching allocator holds on a CUDA device (0 without CUDA)."""
    return _counter("memory_reserved", device)


def max_memory_reserved(device=None) -> int:
    """Peak bytes the caching allocator held on a CUDA device (0 without CUDA)."""
    return _counter("max_memory_reserved", device)


def memory_stats(device=None) -> dict:
    """The caching allocator's statistics for a CUDA device (empty without CUDA)."""
    cuda = _torch_cuda()
    return {} if cuda is None else cuda.memory_stats(_arg(device))


def reset_peak_memory_stats(device=None) -> None:
    """Reset the peak counters of a CUDA device (no-op without torch)."""
    cuda = _torch_cuda()
    if cuda is not None:
        cuda.reset_peak_memory_stats(_arg(device))


def reset_max_memory_allocated(device=None) -> None:
    """Reset the peak allocated-bytes counter of a CUDA device (no-op without torch)."""
    cuda = _torch_cuda()
    if cuda is not None:
        cuda.reset_max_memory_allocated(_arg(device))


def mem_get_info(device=None) -> tuple:
    """``(free, total)`` bytes of a CUDA device, as the driver reports them.

    Raises:
        BackendUnavailableError: no CUDA.
    """
    return _need("mem_get_info()").mem_get_info(_arg(device))


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """Whether the current CUDA device supports bfloat16 (False without CUDA)."""
    cuda = _torch_cuda()
    return False if cuda is None else cuda.is_bf16_supported(including_emulation)


def is_tf32_supported() -> bool:
    """Whether the current CUDA device supports TF32 (False without CUDA)."""
    cuda = _torch_cuda()
    return False if cuda is None else cuda.is_tf32_supported()


def stream(stream):
    """Context manager making ``stream`` current for its block; ``None`` does nothing.

    Raises:
        BackendUnavailableError: a stream was given and there is no CUDA.
    """
    cuda = _torch_cuda()
    if cuda is not None:
        return cuda.stream(stream)
    if stream is not None:
        _need("stream()")
    return _contextlib.nullcontext()


def current_stream(device=None):
    """The current CUDA stream of a device.

    Raises:
        BackendUnavailableError: no CUDA.
    """
    return _need("current_stream()").current_stream(_arg(device))


def default_stream(device=None):
    """The default CUDA stream of a device.

    Raises:
        BackendUnavailableError: no CUDA.
    """
    return _need("default_stream()").default_stream(_arg(device))


def is_current_stream_capturing() -> bool:
    """Whether a CUDA graph is being captured on the current stream (False without CUDA)."""
    cuda = _torch_cuda()
    return False if cuda is None or not cuda.is_available() else cuda.is_current_stream_capturing()


class _Unavailable:
    """Stand-in for torch.cuda's stream classes when torch cannot be imported."""

    def __init__(self, *args, **kwargs):
        raise BackendUnavailableError(f"{type(self).__name__} needs CUDA, which is not available: "
                                      "torch cannot be imported in this process (pip install 'tdx-runtime[torch]')")


_STANDINS = {name: type(name, (_Unavailable,), {"__module__": __name__}) for name in _CLASSES}


def _forwarder(name: str):
    """torch.cuda's function ``name`` (one this module does not define) called with tdx tensors as natives and
    torch tensors in the result as tdx tensors; None when torch.cuda has no such function."""
    from ...aliasing.torch_paths import names

    code = names("torch.cuda").get(name)
    if code is None or code != "f":
        return None

    def forward(*args, **kwargs):
        from ..._tensor.creation import as_tensor
        from ..._tensor.tensor import Tensor

        fn = getattr(_need(f"torch.cuda.{name}()"), name)
        native = [a._n if isinstance(a, Tensor) else _arg(a) for a in args]
        out = fn(*native, **{k: (v._n if isinstance(v, Tensor) else _arg(v)) for k, v in kwargs.items()})
        torch_tensor = type(_flags.torch_module().tensor(0))
        if isinstance(out, torch_tensor):
            return as_tensor(out)
        if isinstance(out, list) and out and all(isinstance(o, torch_tensor) for o in out):
            return [as_tensor(o) for o in out]
        return out

    forward.__name__ = forward.__qualname__ = name
    forward.__doc__ = f"torch.cuda.{name}, called through torch (tdx's CUDA tensors are torch's)."
    return forward


def __getattr__(name: str):
    # Stream, Event and StreamContext are torch.cuda's own classes (torch is imported to fetch them); torch.cuda's
    # other functions are forwarded to torch.cuda (raising BackendUnavailableError without torch)
    if name in _CLASSES:
        cuda = _torch_cuda()
        return _STANDINS[name] if cuda is None else getattr(cuda, name)
    if name == "amp":  # torch.cuda.amp, loaded on first use
        import importlib

        return importlib.import_module(f"{__name__}.amp")
    fn = _forwarder(name) if not name.startswith("_") else None
    if fn is not None:
        globals()[name] = fn
        return fn
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_CLASSES) | {"amp"})
