"""The remaining names of ``torch.autograd``: ``Variable``, the ``__torch_function__`` protocol helpers,
the multithreading and view-replay switches, and the profiler's enumerations.

Each says what tdx actually does (tdx's backward runs in the calling thread, tdx has no kineto);
none pretends to a behaviour it lacks. Must never import a framework at module level.
"""

from __future__ import annotations

import enum

from .._errors import TdxRuntimeError

__all__ = ["Variable", "variable", "DeviceType", "ProfilerActivity", "ProfilerState", "kineto_available",
           "is_multithreading_enabled", "set_multithreading_enabled", "is_view_replay_enabled",
           "enforce_grad_layout_policy", "is_tensor_like", "has_torch_function", "handle_torch_function"]


class _VariableMeta(type):
    def __instancecheck__(cls, other) -> bool:
        from .function import _is_tensor

        return _is_tensor(other)


class Variable(metaclass=_VariableMeta):
    """torch's deprecated ``Variable``: ``Variable(t, requires_grad=False)`` returns ``t`` itself, now
    requiring grad if asked; every tensor is an instance."""

    def __new__(cls, data, requires_grad: bool = False, volatile: bool = False):
        from .function import _is_tensor

        if not _is_tensor(data):
            from .._errors import TdxTypeError

            raise TdxTypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        if requires_grad:
            data.requires_grad_(True)
        return data


def variable(*args, **kwargs):
    """Removed in torch: always raises, pointing to ``tdx.tensor``.

    Raises:
        TdxRuntimeError: always.
    """
    raise TdxRuntimeError("torch.autograd.variable(...) is deprecated, use torch.tensor(...) instead")


class DeviceType(enum.IntEnum):
    """torch's device types, as ``torch.autograd.DeviceType``."""

    CPU = 0
    CUDA = 1
    MKLDNN = 2
    OPENGL = 3
    OPENCL = 4
    IDEEP = 5
    HIP = 6
    FPGA = 7
    MAIA = 8
    XLA = 9
    Vulkan = 10
    Metal = 11
    MPS = 13
    XPU = 12
    MTIA = 19
    Meta = 14
    HPU = 15
    VE = 16
    Lazy = 17
    IPU = 18
    PrivateUse1 = 20


class ProfilerActivity(enum.IntEnum):
    """The activities torch's profiler can record, as ``torch.autograd.ProfilerActivity``."""

    CPU = 0
    XPU = 1
    CUDA = 2
    HPU = 3
    MTIA = 4
    PrivateUse1 = 5


class ProfilerState(enum.IntEnum):
    """torch's profiler states, as ``torch.autograd.ProfilerState``."""

    Disabled = 0
    CPU = 1
    CUDA = 2
    NVTX = 3
    ITT = 4
    PRIVATEUSE1 = 5
    KINETO = 6
    KINETO_GPU_FALLBACK = 7
    KINETO_PRIVATEUSE1_FALLBACK = 8
    KINETO_PRIVATEUSE1 = 9


def kineto_available() -> bool:
    """False: tdx has no kineto profiler of its own (profile torch executors with torch.profiler)."""
    return False


_MULTITHREADING = [True]


def is_multithreading_enabled() -> bool:
    """Whether backward may run on device worker threads (torch's switch; tdx's tape runs in the caller's)."""
    return _MULTITHREADING[0]


class set_multithreading_enabled:  # noqa: N801 - torch's name
    """Enable or disable multithreaded backward now; as a context manager, restore the setting on exit.

    torch executors get torch's own switch; tdx's tape always runs backward in the calling thread.
    """

    def __init__(self, mode: bool):
        self.prev = _MULTITHREADING[0]
        self._set(bool(mode))

    @staticmethod
    def _set(mode: bool) -> None:
        import sys

        _MULTITHREADING[0] = mode
        torch = sys.modules.get("torch")
        if torch is not None:
            torch._C._set_multithreading_enabled(mode)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self._set(self.prev)

    def clone(self):
        return self.__class__(_MULTITHREADING[0])


def is_view_replay_enabled() -> bool:
    """False: backward through views is never replayed from the base's view function in tdx."""
    return False


class enforce_grad_layout_policy:  # noqa: N801 - torch's name
    """Context manager for torch's gradient layout contract (accumulated ``.grad`` strides match the
    parameter's). tdx's tape always gives gradients the parameter's shape in a fresh contiguous array;
    torch executors follow torch's contract.

    Args:
        enabled (bool): whether the contract is enforced inside the block. Default: ``True``.
    """

    def __init__(self, enabled: bool = True):
        self.enabled = bool(enabled)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        return None


def is_tensor_like(inp) -> bool:
    """Whether ``inp`` is a tdx Tensor or has a ``__torch_function__`` (torch's definition)."""
    from .function import _is_tensor

    return _is_tensor(inp) or hasattr(type(inp), "__torch_function__")


def has_torch_function(relevant_args) -> bool:
    """Whether any of ``relevant_args`` overrides torch functions through ``__torch_function__``."""
    return any(hasattr(type(a), "__torch_function__") for a in relevant_args)


def handle_torch_function(public_api, relevant_args, *args, **kwargs):
    """Dispatch ``public_api(*args, **kwargs)`` to the ``__torch_function__`` of ``relevant_args``' types,
    subclasses first, as torch's; the first result other than ``NotImplemented`` is returned.

    Raises:
        TdxTypeError: every override returned ``NotImplemented``.
    """
    from .._errors import TdxTypeError

    types, overloaded = [], []
    for a in relevant_args:
        t = type(a)
        if hasattr(t, "__torch_function__") and t not in types:
            at = next((i for i, u in enumerate(types) if issubclass(t, u)), len(types))
            types.insert(at, t)
            overloaded.insert(at, a)
    for a in overloaded:
        res = type(a).__torch_function__(public_api, tuple(types), args, kwargs)
        if res is not NotImplemented:
            return res
    raise TdxTypeError(f"no implementation found for '{getattr(public_api, '__name__', public_api)}' on types "
                       f"that implement __torch_function__: {[t.__name__ for t in types]}")
