"""Mirror of ``torch.backends.nnpack``: NNPACK availability and its global enable switch.

The switch has no attribute in torch, only ``set_flags``/``flags``; both work without torch
(the value is applied when torch loads). ``flags()`` restores on exit, exceptions included.
Never imports torch on module import.
"""

from contextlib import contextmanager as _contextmanager

from . import _flags

_TDX_EXTENSIONS = ()  # names tdx adds to torch.backends.nnpack: none

__all__ = ["is_available", "flags", "set_flags"]

_ENABLED = _flags.Flag("nnpack.enabled", True, lambda t: t._C._get_nnpack_enabled(),
                       lambda t, v: t.backends.nnpack.set_flags(v),
                       _flags.check_bool("set_nnpack_enabled"))


def is_available() -> bool:
    """Whether torch is built with NNPACK support (False without torch)."""
    torch = _flags.torch_module()
    return False if torch is None else torch.backends.nnpack.is_available()


def set_flags(_enabled):
    """Enable or disable NNPACK globally; returns the previous setting as a 1-tuple."""
    torch = _flags.torch_module()
    if torch is not None:
        return torch.backends.nnpack.set_flags(_enabled)
    orig = (_ENABLED.read(),)
    _ENABLED.write(_enabled)
    return orig


@_contextmanager
def flags(enabled=False):
    """Enable or disable NNPACK for the ``with`` block and restore it after, even on error."""
    orig = set_flags(enabled)
    try:
        yield
    finally:
        set_flags(orig[0])
