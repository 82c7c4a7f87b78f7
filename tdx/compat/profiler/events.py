"""What a profile holds: events, their averages by name, torch's table and the Chrome trace.

:class:`FunctionEvent` is one timed call (times in microseconds, as torch's), :class:`EventList`
a window's events with :meth:`~EventList.key_averages` (grouped by name, and by input shapes when
asked) and :meth:`~EventList.table` / :meth:`~EventList.export_chrome_trace`, in the layout and
JSON format of ``torch.autograd.profiler_util``. Self time is the event's time minus that of the
events directly inside it on its thread. Memory columns give the bytes of each op's tensor
outputs (and torch's own figure for torch's folded events). Must never import a framework.
"""

from __future__ import annotations

import json
import os

from ..._errors import TdxValueError

__all__ = ["FunctionEvent", "FunctionEventAvg", "EventList"]

_SORT_KEYS = ("cpu_time_total", "self_cpu_time_total", "cpu_time", "count", "cpu_memory_usage",
              "self_cpu_memory_usage", "device_time_total", "self_device_time_total", "cuda_time_total",
              "self_cuda_time_total", "device_memory_usage", "self_device_memory_usage")


class FunctionEvent:
    """One profiled call: ``name``, ``thread``, ``start_us``/``end_us``, times in microseconds."""

    def __init__(self, id, name, thread, start_us, end_us, input_shapes=None, cpu_memory_usage=0,
                 self_cpu_time_total=0.0, stack=None, is_user_annotation=False):
        self.id = id
        self.trace_name = name  # the name in the Chrome trace (ProfilerStep#N there)
        name = "ProfilerStep*" if name.startswith("ProfilerStep#") else name  # torch's wildcard
        self.name = name
        self.key = name
        self.thread = thread
        self.start_us = start_us
        self.end_us = end_us
        self.input_shapes = input_shapes or []
        self.cpu_memory_usage = cpu_memory_usage
        self.self_cpu_memory_usage = cpu_memory_usage
        self.self_cpu_time_total = self_cpu_time_total
        self.stack = stack or []
        self.is_user_annotation = is_user_annotation
        self.count = 1
        self.device_time_total = self.self_device_time_total = 0.0
        self.cuda_time_total = self.self_cuda_time_total = 0.0
        self.device_memory_usage = self.self_device_memory_usage = 0

    @property
    def cpu_time_total(self) -> float:
        return self.end_us - self.start_us

    @property
    def cpu_time(self) -> float:
        return self.cpu_time_total

    def __repr__(self) -> str:
        return (f"<FunctionEvent id={self.id} name={self.name} cpu_time={self.cpu_time_total:.3f}us "
                f"self_cpu_time={self.self_cpu_time_total:.3f}us thread={self.thread} "
                f"input_shapes={self.input_shapes} cpu_memory_usage={self.cpu_memory_usage}>")


class FunctionEventAvg:
    """The events of one key added up: ``count``, total and self times, memory."""

    def __init__(self, key, input_shapes=None):
        self.key = key
        self.input_shapes = input_shapes
        self.count = 0
        self.cpu_time_total = self.self_cpu_time_total = 0.0
        self.cpu_memory_usage = self.self_cpu_memory_usage = 0
        self.device_time_total = self.self_device_time_total = 0.0
        self.cuda_time_total = self.self_cuda_time_total = 0.0
        self.device_memory_usage = self.self_device_memory_usage = 0
        self.is_user_annotation = False
        self.stack = []

    def add(self, ev) -> "FunctionEventAvg":
        self.count += ev.count
        self.cpu_time_total += ev.cpu_time_total
        self.self_cpu_time_total += ev.self_cpu_time_total
        self.cpu_memory_usage += ev.cpu_memory_usage
        self.self_cpu_memory_usage += ev.self_cpu_memory_usage
        self.is_user_annotation = self.is_user_annotation or ev.is_user_annotation
        return self

    @property
    def cpu_time(self) -> float:
        return self.cpu_time_total / self.count if self.count else 0.0

    def __repr__(self) -> str:
        return (f"<FunctionEventAvg key={self.key} self_cpu_time={self.self_cpu_time_total:.3f}us "
                f"cpu_time={self.cpu_time:.3f}us input_shapes={self.input_shapes} count={self.count}>")


def _fmt_time(us: float) -> str:
    if us >= 1e6:
        return f"{us / 1e6:.3f}s"
    if us >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


def _fmt_mem(nbytes: int) -> str:
    for unit, size in (("Gb", 1024 ** 3), ("Mb", 1024 ** 2), ("Kb", 1024)):
        if abs(nbytes) >= size:
            return f"{nbytes / size:.2f} {unit}"
    return f"{nbytes} b"


class EventList(list):
    """A list of :class:`FunctionEvent` (or of averages) with torch's queries on it."""

    def __init__(self, events=(), profile_memory=False, with_shapes=False):
        super().__init__(events)
        self._profile_memory = profile_memory
        self._with_shapes = with_shapes

    @property
    def self_cpu_time_total(self) -> float:
        """Microseconds of self time over every event (the table's footer)."""
        return sum(e.self_cpu_time_total for e in self)

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0) -> "EventList":
        """The events averaged per name (and per input shapes / the top ``group_by_stack_n`` frames)."""
        groups: dict = {}
        for ev in self:
            name = ev.key
            key = (name, str(ev.input_shapes) if group_by_input_shape else None,
                   tuple(ev.stack[:group_by_stack_n]) if group_by_stack_n else None)
            avg = groups.get(key)
            if avg is None:
                avg = groups[key] = FunctionEventAvg(name, ev.input_shapes if group_by_input_shape else None)
                avg.stack = list(ev.stack[:group_by_stack_n])
            avg.add(ev)
        return EventList(groups.values(), self._profile_memory, group_by_input_shape)

    def total_average(self) -> FunctionEventAvg:
        """Every event added into one average (key ``"Total"``)."""
        total = FunctionEventAvg("Total")
        for ev in self:
            total.add(ev)
        return total

    def table(self, sort_by=None, row_limit: int = 100, max_src_column_width: int = 75, max_name_column_width=55,
              max_shapes_column_width: int = 80, header=None, top_level_events_only: bool = False) -> str:
        """torch's table: one row per event or average, sorted by ``sort_by`` (descending), ``row_limit`` rows.

        Raises:
            TdxValueError: ``sort_by`` is not one of torch's keys.
        """
        if sort_by is not None and sort_by not in _SORT_KEYS:
            raise TdxValueError(f"table(): unknown sort_by={sort_by!r}; accepted: {', '.join(_SORT_KEYS)}")
        rows = sorted(self, key=lambda e: getattr(e, sort_by), reverse=True) if sort_by else list(self)
        if row_limit is not None and row_limit > 0:
            rows = rows[:row_limit]
        total_self = self.self_cpu_time_total or 1.0
        name_w = max([len(e.key) for e in rows] + [4]) + 4
        if max_name_column_width is not None:
            name_w = min(name_w, max_name_column_width + 4)
        headers = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"]
        if self._profile_memory:
            headers += ["CPU Mem", "Self CPU Mem"]
        headers.append("# of Calls")
        shapes = self._with_shapes and any(getattr(e, "input_shapes", None) for e in rows)
        if shapes:
            headers.append("Input Shapes")
        shapes_w = min(max([len(str(e.input_shapes)) for e in rows] + [12]) + 4, max_shapes_column_width)
        widths = [name_w] + [12] * (len(headers) - 1 - shapes) + ([shapes_w] if shapes else [])
        line = "  ".join("-" * w for w in widths) + "  "
        fmt_row = (lambda cells: "".join(f"{c:>{w}}  " for c, w in zip(cells, widths)))
        out = [line]
        if header is not None:
            out = [line, header, line]
        out += [fmt_row(headers), line]
        for e in rows:
            name = e.key if len(e.key) <= name_w - 4 else e.key[:name_w - 7] + "..."
            cells = [name, f"{100 * e.self_cpu_time_total / total_self:.2f}%", _fmt_time(e.self_cpu_time_total),
                     f"{100 * e.cpu_time_total / total_self:.2f}%", _fmt_time(e.cpu_time_total),
                     _fmt_time(e.cpu_time_total / max(e.count, 1))]
            if self._profile_memory:
                cells += [_fmt_mem(e.cpu_memory_usage), _fmt_mem(e.self_cpu_memory_usage)]
            cells.append(str(e.count))
            if shapes:
                cells.append(str(e.input_shapes)[:max_shapes_column_width])
            out.append(fmt_row(cells))
        out += [line, f"Self CPU time total: {_fmt_time(self.self_cpu_time_total)}", ""]
        return "\n".join(out)

    def export_chrome_trace(self, path) -> None:
        """Write the events as a Chrome trace (``chrome://tracing``, Perfetto): JSON ``traceEvents``.

        Raises:
            TdxValueError: the list holds averages, which have no times of their own.
        """
        events = []
        pid = os.getpid()
        for ev in self:
            if not isinstance(ev, FunctionEvent):
                raise TdxValueError("export_chrome_trace(): the list holds averaged events (key_averages()); "
                                    "export the profile's own events instead")
            item = {"ph": "X", "cat": "user_annotation" if ev.is_user_annotation else "cpu_op", "name": ev.trace_name,
                    "pid": pid, "tid": ev.thread, "ts": ev.start_us, "dur": ev.cpu_time_total,
                    "args": {"Input Dims": ev.input_shapes} if ev.input_shapes else {}}
            events.append(item)
        with open(os.fspath(path), "w") as fh:
            json.dump({"traceEvents": events, "displayTimeUnit": "ms", "schemaVersion": 1}, fh)


def from_events(raw, profile_memory: bool, record_shapes: bool, origin_ns: int) -> EventList:
    """The :class:`EventList` of a recorder's raw events (self times from their nesting per thread)."""
    ordered = sorted(raw, key=lambda e: (e.thread, e.start_ns, -e.end_ns))
    stack: list = []
    thread = None
    for ev in ordered:
        ev.children_ns = 0
    for ev in ordered:
        if ev.thread != thread:
            stack, thread = [], ev.thread
        while stack and stack[-1].end_ns <= ev.start_ns:
            stack.pop()
        if stack and ev.end_ns <= stack[-1].end_ns:
            stack[-1].children_ns += ev.duration_ns
        stack.append(ev)
    out = []
    for i, ev in enumerate(sorted(raw, key=lambda e: e.start_ns)):
        out.append(FunctionEvent(i, ev.name, ev.thread, (ev.start_ns - origin_ns) / 1000,
                                 (ev.end_ns - origin_ns) / 1000, ev.input_shapes, ev.cpu_memory_usage,
                                 max(ev.duration_ns - ev.children_ns, 0) / 1000, ev.stack, ev.kind == "user"))
    return EventList(out, profile_memory, record_shapes)
