"""``torch.Stream`` and ``torch.Event``: the device-generic stream and event classes.

A :class:`Stream` names an ordered queue of work on a device; tdx queues each device's work on the one stream its
executor keeps, so a ``Stream`` here stands for that queue: ``synchronize()`` waits for the device's queued work
(nothing to wait for on ``cpu``), ``query()`` is True once it is done, ``wait_stream``/``wait_event`` order
nothing beyond what the one queue already orders. An :class:`Event` records a point in a stream and its time
(``enable_timing=True``), so ``elapsed_time`` measures between two records in milliseconds. Without a device,
both take the current accelerator's, else the CPU (as torch's). Must never import a framework.
"""

from __future__ import annotations

import time

from .. import _dtypes
from .._device import device as as_device

__all__ = ["Stream", "Event"]


def _device(device):
    if device is None:
        from ..compat.accelerator import current_accelerator

        acc = current_accelerator()
        return acc if acc is not None else as_device("cpu")
    return as_device(device)


def _synchronize(device) -> None:
    if device.type != "cpu":
        from .. import backends

        backends.get(device).synchronize()


class _OnDevice:
    """What streams and events answer about their device, as torch's do."""

    device = None  # the tdx.device, set by the subclass's constructor

    @property
    def device_type(self) -> str:
        """The device's type (``"cpu"``, ``"cuda"``, ``"mlx"``...)."""
        return self.device.type

    @property
    def device_index(self) -> int:
        """The device's index, -1 where it has none (as torch's)."""
        return -1 if self.device.index is None else self.device.index


class Stream(_OnDevice):
    """A device's queue of work (``torch.Stream(device=None, *, priority=0)``)."""

    def __init__(self, device=None, *, priority: int = 0):
        self.device = _device(device)
        self.priority = priority

    @property
    def stream_id(self) -> int:
        return 0

    def query(self) -> bool:
        """True: tdx waits for nothing it has not synchronized on cpu; elsewhere after :meth:`synchronize`."""
        return True

    def synchronize(self) -> None:
        """Wait for the work queued on the stream's device."""
        _synchronize(self.device)

    def wait_event(self, event: "Event") -> None:
        """Order later work after ``event`` (the device's one queue already does)."""

    def wait_stream(self, stream: "Stream") -> None:
        """Order later work after ``stream``'s (the device's one queue already does)."""

    def record_event(self, event: "Event | None" = None) -> "Event":
        """Record ``event`` (a new one when None) on this stream; returns it."""
        event = Event(self.device) if event is None else event
        event.record(self)
        return event

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def __eq__(self, other):
        return isinstance(other, Stream) and other.device == self.device

    def __hash__(self):
        return hash((Stream, self.device))

    def __repr__(self) -> str:
        return (f"{_dtypes._state['prefix']}.Stream device_type={self.device_type}, "
                f"device_index={self.device_index}, stream_id={self.stream_id}")


class Event(_OnDevice):
    """A recorded point in a stream (``torch.Event(device=None, *, enable_timing=False, blocking=False,
    interprocess=False)``)."""

    def __init__(self, device=None, *, enable_timing: bool = False, blocking: bool = False,
                 interprocess: bool = False):
        self.device = _device(device)
        self.enable_timing, self.blocking, self.interprocess = enable_timing, blocking, interprocess
        self._time = None

    def record(self, stream: Stream | None = None) -> None:
        """Mark the point reached by ``stream`` (the device's) now."""
        _synchronize(self.device)
        self._time = time.perf_counter()

    def query(self) -> bool:
        """True once the recorded work is done (it is, once recorded)."""
        return True

    def synchronize(self) -> None:
        """Wait for the recorded work."""
        _synchronize(self.device)

    def wait(self, stream: Stream | None = None) -> None:
        """Order ``stream``'s later work after this event (the device's one queue already does)."""

    def elapsed_time(self, end_event: "Event") -> float:
        """Milliseconds from this event's record to ``end_event``'s.

        Raises:
            TdxValueError: either event was made without ``enable_timing`` or not recorded.
        """
        from .._errors import TdxValueError

        if not (self.enable_timing and end_event.enable_timing) or self._time is None or end_event._time is None:
            raise TdxValueError("elapsed_time(): both events must be created with enable_timing=True and recorded")
        return (end_event._time - self._time) * 1000.0

    def __repr__(self) -> str:
        return (f"{_dtypes._state['prefix']}.Event device_type={self.device_type}, "
                f"device_index={self.device_index}, event_flag=0, event_id={id(self)}")
