"""``tdx.accelerator``: torch.accelerator's device-agnostic API over tdx's devices.

The current accelerator is the first available of ``cuda``, ``mps`` and ``mlx:gpu`` (the order of
the config's ``auto``). Under a device pin (``python -m tdx run --device DEV``) it is DEV when DEV
is an accelerator and None otherwise, so ``x.to(torch.accelerator.current_accelerator())`` lands
on DEV. This module must never import a framework at import time.
"""

from __future__ import annotations

import contextlib

from .._device import device as _device
from .._errors import DeviceUnavailableError

__all__ = ["current_accelerator", "is_available", "device_count", "current_device_index",
           "set_device_index", "synchronize", "device_index"]


def _is_accelerator(dev) -> bool:
    return dev.type in ("cuda", "mps") or (dev.type == "mlx" and dev.kind == "gpu")


def current_accelerator(check_available: bool = False):
    """The accelerator device (``tdx.device``), or None when there is none.

    Args:
        check_available: accepted for torch's signature; tdx only reports available devices.
    """
    from .. import backends

    pin = backends.pinned()
    if pin is not None:
        dev = pin[0].device
        return _device(dev.type if dev.type != "mlx" else str(dev)) if _is_accelerator(dev) else None
    for row in backends.available():
        if not row.available:
            continue
        dev = _device(row.device)
        if _is_accelerator(dev):
            return _device(dev.type if dev.type != "mlx" else str(dev))
    return None


def is_available() -> bool:
    """Whether an accelerator is available (under a pin: whether DEV is one)."""
    return current_accelerator() is not None


def device_count() -> int:
    """How many devices of the current accelerator's type are available (0 without one)."""
    from .. import backends

    acc = current_accelerator()
    if acc is None:
        return 0
    if backends.pinned() is not None and acc.type != "cuda":
        return 1
    return sum(1 for r in backends.available() if r.available and _device(r.device).type == acc.type
               and (acc.type != "mlx" or _device(r.device).kind == "gpu"))


def current_device_index() -> int:
    """The index of the current accelerator device (0 where the type has one device)."""
    acc = current_accelerator()
    if acc is None:
        raise DeviceUnavailableError("current_device_index(): no accelerator is available")
    if acc.type == "cuda":
        from . import cuda

        return cuda.current_device()
    return 0


def set_device_index(device) -> None:
    """Make ``device`` (an int or device of the accelerator's type) current; -1 or None does nothing."""
    acc = current_accelerator()
    if device is None or device == -1:
        return
    if acc is not None and acc.type == "cuda":
        from . import cuda

        cuda.set_device(device)


@contextlib.contextmanager
def device_index(device):
    """Within the block, ``device`` is the current accelerator index (restored after)."""
    acc = current_accelerator()
    before = current_device_index() if acc is not None else None
    set_device_index(device)
    try:
        yield
    finally:
        if before is not None:
            set_device_index(before)


def synchronize(device=None) -> None:
    """Wait for the work queued on the accelerator (or ``device``) to finish."""
    from .. import backends

    acc = current_accelerator() if device is None else _device(device)
    if acc is None:
        raise DeviceUnavailableError("synchronize(): no accelerator is available")
    backends.get(acc).synchronize()
