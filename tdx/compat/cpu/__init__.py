"""``tdx.cpu`` (``torch.cpu``): the CPU device module's queries, and ``tdx.cpu.amp``.

The CPU is always there: ``is_available()`` is True, ``device_count()`` 1, ``current_device()``
``"cpu"``, ``synchronize()`` returns at once. ``amp`` holds torch's deprecated CPU spelling of
``autocast``. This module must never import a framework.
"""

from __future__ import annotations

__all__ = ["is_available", "device_count", "current_device", "synchronize", "set_device", "amp"]


def is_available() -> bool:
    """True: the CPU is always available."""
    return True


def device_count() -> int:
    """1, as torch's."""
    return 1


def current_device() -> str:
    """``"cpu"``."""
    return "cpu"


def synchronize(device=None) -> None:
    """Nothing to wait for: CPU work of the torch executor is synchronous."""


def set_device(device) -> None:
    """Accepted and ignored, as torch's."""


def __getattr__(name: str):
    if name == "amp":
        import importlib

        return importlib.import_module(f"{__name__}.amp")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
