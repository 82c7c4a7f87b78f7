"""``torch.utils._python_dispatch``: the queries about ``__torch_dispatch__`` tensor subclasses and modes.

tdx tensors are never wrapper subclasses dispatched through torch's C++ dispatcher, and no dispatch mode is ever
active (tdx has no dispatcher), so the queries answer False and None; ``TorchDispatchMode`` can be subclassed but
entering one refuses by name. Never imports a framework.
"""

from __future__ import annotations

__all__ = ["is_traceable_wrapper_subclass", "is_traceable_wrapper_subclass_type", "is_in_torch_dispatch_mode",
           "TorchDispatchMode"]


def is_traceable_wrapper_subclass(t) -> bool:
    """False: tdx has no ``__torch_dispatch__`` wrapper subclasses (huggingface_hub asks before saving)."""
    return False


def is_traceable_wrapper_subclass_type(t) -> bool:
    """False: no tdx tensor type is a ``__torch_dispatch__`` wrapper subclass."""
    return False


def is_in_torch_dispatch_mode(include_infra_modes: bool = True) -> bool:
    """False: tdx has no dispatcher, so no dispatch mode is ever active."""
    return False


def _get_current_dispatch_mode():
    """None: no dispatch mode is ever active in tdx."""
    return None


class TorchDispatchMode:
    """Base of a ``__torch_dispatch__`` mode; tdx has no dispatcher to run one, so entering it refuses."""

    def __init__(self, _dispatch_key=None):
        self._dispatch_key = _dispatch_key

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        raise NotImplementedError

    def __enter__(self):
        from ..._errors import UnsupportedOpError

        raise UnsupportedOpError(f"{type(self).__name__}: torch dispatch modes are not supported by tdx: tdx ops "
                                 "run through each executor, not torch's C++ dispatcher; wrap the functions instead")

    def __exit__(self, *exc):
        return False
