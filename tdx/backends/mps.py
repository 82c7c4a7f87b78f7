"""Mirror of ``torch.backends.mps``: whether torch is built with, and can use, Apple's MPS.

Answers from torch when it can be imported; without torch ``is_built``/``is_available`` are
False and the queries that need an MPS device raise a clear error (torch raises there too).
Never imports torch on module import.
"""

from . import _flags

_TDX_EXTENSIONS = ()  # names tdx adds to torch.backends.mps: none

__all__ = ["get_core_count", "get_name", "is_built", "is_available", "is_macos13_or_newer",
           "is_macos_or_newer"]


def _mps(what: str):
    torch = _flags.torch_module()
    if torch is None:
        raise _flags.BackendUnavailableError(f"Cannot execute {what} without MPS backend: torch "
                                             "cannot be imported (pip install 'tdx-runtime[torch]')")
    return torch.backends.mps


def is_built() -> bool:
    """Whether torch is built with MPS support (False without torch); not whether MPS is usable."""
    torch = _flags.torch_module()
    return False if torch is None else torch.backends.mps.is_built()


def is_available() -> bool:
    """Whether MPS is usable now (False without torch)."""
    torch = _flags.torch_module()
    return False if torch is None else torch.backends.mps.is_available()


def is_macos_or_newer(major: int, minor: int) -> bool:
    """Whether MPS runs on macOS ``major.minor`` or newer.

    Raises:
        RuntimeError: there is no MPS backend (as torch).
    """
    return _mps("isOnMacOSorNewer()").is_macos_or_newer(major, minor)


def is_macos13_or_newer(minor: int = 0) -> bool:
    """Whether MPS runs on macOS 13.``minor`` or newer.

    Raises:
        RuntimeError: there is no MPS backend (as torch).
    """
    return _mps("isOnMacOSorNewer()").is_macos13_or_newer(minor)


def get_name() -> str:
    """The Metal device name.

    Raises:
        RuntimeError: there is no MPS backend; torch itself raises ``AttributeError`` on builds without MPS.
    """
    return _mps("get_name()").get_name()


def get_core_count() -> int:
    """The GPU core count of the Metal device.

    Raises:
        RuntimeError: there is no MPS backend; torch itself raises ``AttributeError`` on builds without MPS.
    """
    return _mps("get_core_count()").get_core_count()
