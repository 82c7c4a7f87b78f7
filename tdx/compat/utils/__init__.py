"""``tdx.utils`` (torch.utils): the data-loading namespace ``tdx.utils.data``, ``hooks``, ``benchmark``, ``checkpoint``,
``_pytree`` (each reached on first use, as torch's submodules), ``set_module`` and ``get_cpp_backtrace``;
torch's other ``torch.utils`` names (the privateuse1 backend hooks, ``swap_tensors``...) refuse at use.

Importing this package must never import torch or MLX.
"""

from . import data

__all__ = ["data", "set_module", "get_cpp_backtrace"]
__tdx_partial__ = True  # torch's other torch.utils names refuse at use (tdx.aliasing.torch_paths)


def set_module(obj, mod) -> None:
    """Set ``obj.__module__`` to ``mod`` (for nicer printing)."""
    if not isinstance(mod, str):
        from ..._errors import TdxTypeError

        raise TdxTypeError("The mod argument should be a string")
    obj.__module__ = mod


def get_cpp_backtrace(frames_to_skip: int = 0, maximum_number_of_frames: int = 64) -> str:
    """The C++ stack of the current thread: tdx runs no C++ of its own, so the empty string."""
    return ""
