"""``tdx.nn.attention`` (torch's ``torch.nn.attention``): the same ``sdpa_kernel``, ``SDPBackend`` and
``WARN_FOR_UNFUSED_KERNELS`` as :mod:`tdx.attention`, plus ``bias`` (causal biases) and ``flex_attention``.

``from torch.nn.attention import sdpa_kernel, SDPBackend`` under the torch alias gets the very objects of
``tdx.attention``, so it selects kernels exactly as ``tdx.attention.sdpa_kernel`` does; setting
``WARN_FOR_UNFUSED_KERNELS`` here sets ``tdx.attention``'s flag. torch's flash-attention implementation
registry (FA3/FA4 for CUDA builds) has no implementation to register in tdx: the registry is empty and
activating one refuses by name. This module must never import a framework.
"""

from __future__ import annotations

import sys


from ....attention._state import SDPBackend, sdpa_kernel
from ....aliasing.torch_paths import ShapedModule as _ShapedModule

__all__ = ["SDPBackend", "sdpa_kernel", "WARN_FOR_UNFUSED_KERNELS", "activate_flash_attention_impl",
           "current_flash_attention_impl", "list_flash_attention_impls", "register_flash_attention_impl",
           "restore_flash_attention_impl"]

_REGISTERED: dict = {}


def list_flash_attention_impls() -> list:
    """The names of the registered flash-attention implementations (tdx ships none)."""
    return sorted(_REGISTERED)


def current_flash_attention_impl():
    """The activated flash-attention implementation's name, or None (always None in tdx)."""
    return None


def register_flash_attention_impl(impl, *, register_fn) -> None:
    """Record ``register_fn`` under ``impl``; tdx's kernels never call it (they choose their own kernels)."""
    _REGISTERED[impl] = register_fn


def activate_flash_attention_impl(impl) -> None:
    """Refused: activating a flash-attention implementation swaps CUDA kernels inside torch's dispatcher."""
    from ...._errors import UnsupportedOpError

    raise UnsupportedOpError(f"torch.nn.attention.activate_flash_attention_impl({impl!r}) is not supported by tdx: "
                             "it swaps a CUDA kernel inside torch's dispatcher; tdx chooses its attention kernel per "
                             "call (use sdpa_kernel to restrict the choice)")


def restore_flash_attention_impl(_raise_warn: bool = True) -> None:
    """Nothing to restore: no implementation can be activated in tdx."""


class _AttentionModule(_ShapedModule):
    """Makes ``WARN_FOR_UNFUSED_KERNELS`` the flag of :mod:`tdx.attention` itself."""

    @property
    def WARN_FOR_UNFUSED_KERNELS(self) -> bool:  # noqa: N802 - torch's name
        return sys.modules["tdx.attention"].WARN_FOR_UNFUSED_KERNELS

    @WARN_FOR_UNFUSED_KERNELS.setter
    def WARN_FOR_UNFUSED_KERNELS(self, value) -> None:  # noqa: N802 - torch's name
        sys.modules["tdx.attention"].WARN_FOR_UNFUSED_KERNELS = value


import tdx.attention  # noqa: E402,F401 - the module whose flag is shared
sys.modules[__name__].__class__ = _AttentionModule
