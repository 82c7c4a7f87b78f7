"""Mirror of ``torch.backends.openmp``: whether torch was built with OpenMP.

Answers False when torch cannot be imported; never imports torch on module import.
"""

from . import _flags

_TDX_EXTENSIONS = ()  # names tdx adds to torch.backends.openmp: none


def is_available() -> bool:
    """Whether torch is built with OpenMP support (False without torch)."""
    torch = _flags.torch_module()
    return False if torch is None else torch.backends.openmp.is_available()
