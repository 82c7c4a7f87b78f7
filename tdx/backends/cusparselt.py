"""Mirror of ``torch.backends.cusparselt``: the cuSPARSELt library torch links, if any.

Answers from torch when it can be imported; without torch it answers False / None. It must
never import torch on module import.
"""

from . import _flags

_TDX_EXTENSIONS = ()  # names tdx adds to torch.backends.cusparselt: none

__all__ = ["version", "is_available", "get_max_alg_id"]


def version():
    """The cuSPARSELt version as an int, or None when torch has no cuSPARSELt."""
    torch = _flags.torch_module()
    return None if torch is None else torch.backends.cusparselt.version()


def is_available() -> bool:
    """Whether cuSPARSELt is available to torch (False without torch)."""
    torch = _flags.torch_module()
    return False if torch is None else torch.backends.cusparselt.is_available()


def get_max_alg_id():
    """The highest cuSPARSELt algorithm id, or None when torch has no cuSPARSELt."""
    torch = _flags.torch_module()
    return None if torch is None else torch.backends.cusparselt.get_max_alg_id()
