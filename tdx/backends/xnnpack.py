"""Mirror of ``torch.backends.xnnpack``: whether torch's XNNPACK kernels are enabled (read-only).

Answers False without torch; assigning ``enabled`` fails as in torch. Never imports torch on
module import.
"""

import types as _types

from . import _flags

_TDX_EXTENSIONS = ()  # names tdx adds to torch.backends.xnnpack: none


def _enabled() -> bool:
    torch = _flags.torch_module()
    return False if torch is None else _flags.torch_backend(torch, "xnnpack").enabled


class XNNPACKEngine(_types.ModuleType):
    """The class of this module: it makes ``enabled`` a live, read-only attribute."""

    enabled = _flags.read_only_property(_enabled, "Whether torch's XNNPACK kernels are enabled.")


_flags.install(__name__, XNNPACKEngine)
