"""``tdx.utils.hooks`` (torch's ``torch.utils.hooks``): :class:`RemovableHandle`, ``unserializable_hook``,
``warn_if_has_hooks``. ``RemovableHandle`` is the class every tdx ``register_*_hook`` returns. torch's
``BackwardHook`` (module full-backward hooks through torch's autograd graph) refuses at use. Must never
import a framework."""

from __future__ import annotations

import warnings

from ..nn.modules.hooks import RemovableHandle

__all__ = ["RemovableHandle", "unserializable_hook", "warn_if_has_hooks"]
__tdx_partial__ = True  # BackwardHook refuses at use (tdx.aliasing.torch_paths)


def unserializable_hook(f):
    """Mark a hook as one that cannot be serialized (``warn_if_has_hooks`` then stays quiet about it)."""
    f.__torch_unserializable__ = True
    return f


def warn_if_has_hooks(tensor) -> None:
    """Warn when ``tensor`` carries backward hooks that are not marked :func:`unserializable_hook`."""
    hooks = getattr(tensor, "_backward_hooks", None) or {}
    for hook in hooks.values():
        if not hasattr(hook, "__torch_unserializable__"):
            warnings.warn(f"backward hook {hook!r} on tensor will not be serialized.  If this is expected, you can "
                          "decorate the function with @torch.utils.hooks.unserializable_hook to suppress this "
                          "warning", stacklevel=2)
