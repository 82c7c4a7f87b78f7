"""Mirror of ``torch.backends.mkl``: whether torch uses oneMKL, and on-demand MKL verbose output.

Answers from torch when it can be imported, False otherwise. ``verbose`` needs torch to do
anything but stays silent at ``VERBOSE_OFF``. Never imports torch on module import.
"""

from . import _flags

_TDX_EXTENSIONS = ()  # names tdx adds to torch.backends.mkl: none

VERBOSE_OFF = 0
VERBOSE_ON = 1


def is_available() -> bool:
    """Whether torch is built with MKL support (False without torch)."""
    torch = _flags.torch_module()
    return False if torch is None else torch.backends.mkl.is_available()


class verbose:  # noqa: N801 - torch's name
    """Context manager that turns oneMKL's verbose messages on for its block.

    Args:
        enable: ``VERBOSE_OFF`` or ``VERBOSE_ON``.

    Raises:
        AssertionError: (on enter) MKL could not be put in verbose mode, torch being absent included.
    """

    def __init__(self, enable):
        self.enable = enable

    def __enter__(self):
        if self.enable == VERBOSE_OFF:
            return None
        torch = _flags.torch_module()
        if torch is None or not torch._C._verbose.mkl_set_verbose(self.enable):
            raise _flags.BackendUnavailableError(
                "Failed to set MKL into verbose mode. Please consider to disable this verbose scope.")
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        torch = _flags.torch_loaded()
        if torch is not None:
            torch._C._verbose.mkl_set_verbose(VERBOSE_OFF)
        return False
