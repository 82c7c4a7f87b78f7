"""Mirror of ``torch.backends.kleidiai``: whether torch was built with KleidiAI kernels.

Answers False when torch cannot be imported; never imports torch on module import.
"""

from . import _flags

_TDX_EXTENSIONS = ()  # names tdx adds to torch.backends.kleidiai: none


def is_available() -> bool:
    """Whether torch is built with KleidiAI support (False without torch)."""
    torch = _flags.torch_module()
    return False if torch is None else torch.backends.kleidiai.is_available()
