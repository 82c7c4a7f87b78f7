"""``torch.autograd.profiler``: the older profiling API over the same recorder as ``tdx.profiler``.

``with torch.autograd.profiler.profile(record_shapes=True) as prof: ...`` then
``prof.key_averages().table(...)``, ``prof.export_chrome_trace(path)``, ``prof.function_events``;
``record_function`` is the very class of ``tdx.profiler``. Timings and event names as described in
:mod:`tdx.compat.profiler`. Must never import a framework at module level.
"""

from __future__ import annotations

from ..compat.profiler import EventList, FunctionEvent, FunctionEventAvg, record_function
from ..compat.profiler import recorder as _recorder
from ..compat.profiler.events import from_events as _from_events

__all__ = ["profile", "record_function", "EventList", "FunctionEvent", "FunctionEventAvg", "emit_nvtx", "emit_itt"]


class profile:  # noqa: N801 - torch's name
    """Profile the tdx calls of a block (``enabled=False``: record nothing).

    Args:
        enabled: record at all.
        record_shapes, profile_memory, with_stack: as ``tdx.profiler.profile``.
        use_cuda, use_device, with_flops, with_modules, use_kineto, use_cpu, experimental_config,
            acc_events, custom_trace_id_callback: accepted as torch's; no effect.
    """

    def __init__(self, enabled=True, *, use_cuda=False, use_device=None, record_shapes=False, with_flops=False,
                 profile_memory=False, with_stack=False, with_modules=False, use_kineto=False, use_cpu=True,
                 experimental_config=None, acc_events=False, custom_trace_id_callback=None):
        self.enabled = enabled
        self.record_shapes, self.profile_memory, self.with_stack = record_shapes, profile_memory, with_stack
        self.function_events = None
        self._running = False

    def __enter__(self):
        if self.enabled:
            _recorder.start(self.record_shapes, self.profile_memory, self.with_stack)
            self._running = True
        return self

    def __exit__(self, *exc):
        if self._running:
            self._running = False
            rec = _recorder.stop()
            self.function_events = _from_events(rec.events, self.profile_memory, self.record_shapes, rec.perf_ns0)
        return False

    def _events(self) -> EventList:
        if self.function_events is None:
            from .._errors import TdxRuntimeError

            raise TdxRuntimeError("Profiler didn't finish running")
        return self.function_events

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0, group_by_overload_name=False):
        """The events averaged per name (see ``EventList.key_averages``)."""
        return self._events().key_averages(group_by_input_shape, group_by_stack_n)

    def table(self, sort_by=None, row_limit=100, **kwargs) -> str:
        """The events' table (see ``EventList.table``)."""
        return self._events().table(sort_by=sort_by, row_limit=row_limit, **kwargs)

    def export_chrome_trace(self, path) -> None:
        """Write the events as a Chrome trace JSON file."""
        self._events().export_chrome_trace(path)

    def total_average(self):
        """Every event added into one average."""
        return self._events().total_average()

    @property
    def self_cpu_time_total(self) -> float:
        """Microseconds of self time over every event."""
        return self._events().self_cpu_time_total

    def __str__(self) -> str:
        return self.table()


class _EmitRanges:
    """A vendor range emitter (``emit_nvtx``, ``emit_itt``): with ``enabled=False`` a block that records nothing;
    enabled, entering it refuses, naming the tool, since tdx's executors emit no vendor ranges."""

    _tool = ""

    def __init__(self, enabled=True, record_shapes=False):
        self.enabled, self.record_shapes = enabled, record_shapes

    def __enter__(self):
        if self.enabled:
            from .._errors import UnsupportedOpError

            raise UnsupportedOpError(f"torch.autograd.profiler.{type(self).__name__} is not supported by tdx: tdx's "
                                     f"executors emit no {self._tool} ranges; use torch.autograd.profiler.profile "
                                     "(or enabled=False)")
        return self

    def __exit__(self, *exc):
        return False


class emit_nvtx(_EmitRanges):  # noqa: N801 - torch's name
    """NVTX ranges around each op (``torch.autograd.profiler.emit_nvtx``); see :class:`_EmitRanges`."""

    _tool = "NVTX"


class emit_itt(_EmitRanges):  # noqa: N801 - torch's name
    """Intel ITT ranges around each op (``torch.autograd.profiler.emit_itt``); see :class:`_EmitRanges`."""

    _tool = "ITT"
