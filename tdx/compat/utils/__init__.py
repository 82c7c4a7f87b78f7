"""``tdx.utils`` (torch.utils): the data-loading namespace ``tdx.utils.data``.

Importing this package must never import torch or MLX.
"""

# torch.utils' small helpers (hooks, benchmark and _pytree are submodules, reached on first use); torch's other
# torch.utils names (the privateuse1 backend hooks, swap_tensors...) refuse at use (tdx.compat.torch_paths)
__tdx_partial__ = True


def set_module(obj, mod) -> None:
    """Set ``obj.__module__`` to ``mod`` (torch.utils.set_module, for nicer printing)."""
    if not isinstance(mod, str):
        from ..._errors import TdxTypeError

        raise TdxTypeError("The mod argument should be a string")
    obj.__module__ = mod


def get_cpp_backtrace(frames_to_skip: int = 0, maximum_number_of_frames: int = 64) -> str:
    """The C++ stack of the current thread (torch.utils.get_cpp_backtrace): tdx runs no C++ of its own, so ""."""
    return ""


from . import data

__all__ = ["data"]
