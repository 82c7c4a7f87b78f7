"""Mirror of ``torch.backends.miopen``: the MIOpen ``immediate`` switch of ROCm builds.

``immediate`` is a module attribute, as in torch; ``flags()`` restores it on exit, exceptions
included. Values set while torch is absent are applied when it loads. Never imports torch
on module import.
"""

import types as _types
from contextlib import contextmanager as _contextmanager

from . import _flags

_TDX_EXTENSIONS = ()  # names tdx adds to torch.backends.miopen: none

_IMMEDIATE = _flags.Flag("miopen.immediate", False,
                         lambda t: t.backends.miopen.immediate,
                         lambda t, v: setattr(_flags.torch_backend(t, "miopen"), "immediate", v),
                         _flags.check_bool("set_immediate_miopen"), guarded=True)


def set_flags(_immediate=None):
    """Set the MIOpen flags that are not None and return the previous ones as a tuple."""
    torch = _flags.torch_module()
    if torch is not None:
        return torch.backends.miopen.set_flags(_immediate)
    orig = (_IMMEDIATE.read(),)
    if _immediate is not None:
        with _flags.mutable():
            _IMMEDIATE.write(_immediate)
    return orig


@_contextmanager
def flags(immediate=False):
    """Set the MIOpen flags for the ``with`` block and restore them after it, even on error."""
    orig = set_flags(immediate)
    try:
        yield
    finally:
        set_flags(*orig)


class MiopenModule(_types.ModuleType):
    """The class of this module: it makes ``immediate`` a live attribute."""

    immediate = _flags.flag_property(_IMMEDIATE, "Whether MIOpen runs convolutions in immediate mode.")


_flags.install(__name__, MiopenModule)
