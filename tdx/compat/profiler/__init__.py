"""``torch.profiler``: per-op timings of tdx calls on every executor, in torch's shapes.

``with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=1, warmup=1, active=2),
on_trace_ready=tensorboard_trace_handler("./log")) as prof: ... prof.step()`` works as torch's:
the schedule decides per step whether the window is idle, warming up or recording, a
``ProfilerStep#N`` event spans each step, ``on_trace_ready`` is called as each recording cycle ends,
and ``prof.key_averages().table(sort_by="cpu_time_total", row_limit=10)`` prints torch's table.

What is measured (:mod:`.recorder`): every tdx op call (``tdx::add``, ``tdx::linear``...) on every
executor, with real timings (MLX's lazy results are computed inside the call while profiling), and
on torch executors torch's own ``aten::*`` events folded in on the same clock (torch's profiler
runs alongside when torch's executor is in use). ``record_function`` blocks are user events.
Memory (``profile_memory``) is the bytes of each op's tensor outputs. Device activities
(``ProfilerActivity.CUDA``) are accepted and record nothing of their own: tdx times the host call,
which on an asynchronous device includes waiting for its result. Must never import a framework at
module level; nothing of it is on any call path while no profile is running.
"""

from __future__ import annotations

import enum
import functools
import gzip
import os
import socket
import time
import warnings

from ..._errors import TdxTypeError, TdxValueError
from . import recorder
from .events import EventList, FunctionEvent, FunctionEventAvg, from_events

__all__ = ["profile", "record_function", "schedule", "ProfilerAction", "ProfilerActivity",
           "tensorboard_trace_handler", "supported_activities", "EventList", "FunctionEvent", "FunctionEventAvg"]


class ProfilerActivity(enum.Enum):
    """What a profile records (torch's members; tdx records host calls for CPU)."""

    CPU = 0
    XPU = 1
    MTIA = 2
    CUDA = 3
    HPU = 4
    PrivateUse1 = 5


class ProfilerAction(enum.Enum):
    """What the profiler does during a step (the value a schedule returns)."""

    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def supported_activities() -> set:
    """The activities tdx records on this machine (``CPU``; ``CUDA`` too where tdx has CUDA)."""
    import tdx

    out = {ProfilerActivity.CPU}
    if tdx.cuda.is_available():
        out.add(ProfilerActivity.CUDA)
    return out


def _check_count(name: str, value, low: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < low:
        raise TdxValueError(f"schedule(): {name} must be an int >= {low}, got {value!r}")


def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0,
             skip_first_wait: int = 0):
    """The step -> :class:`ProfilerAction` function of torch: skip ``skip_first`` steps, then cycles of
    ``wait`` idle, ``warmup`` warming and ``active`` recording steps, ``repeat`` times (0: forever).

    Raises:
        TdxValueError: a negative count, or ``active`` < 1.
    """
    for name, value, low in (("wait", wait, 0), ("warmup", warmup, 0), ("active", active, 1),
                             ("repeat", repeat, 0), ("skip_first", skip_first, 0),
                             ("skip_first_wait", skip_first_wait, 0)):
        _check_count(name, value, low)
    if warmup == 0:
        warnings.warn("Profiler won't be using warmup, this can skew profiler results", UserWarning, stacklevel=2)

    def schedule_fn(step: int) -> ProfilerAction:
        if step < 0:
            raise TdxValueError(f"schedule: step must be >= 0, got {step}")
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait != 0:
            step += wait
        num_steps = wait + warmup + active
        if repeat > 0 and step / num_steps >= repeat:
            return ProfilerAction.NONE
        mod_step = step % num_steps
        if mod_step < wait:
            return ProfilerAction.NONE
        if mod_step < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if mod_step < num_steps - 1 else ProfilerAction.RECORD_AND_SAVE

    return schedule_fn


def _always_record(_step: int) -> ProfilerAction:
    return ProfilerAction.RECORD


def tensorboard_trace_handler(dir_name: str, worker_name: str | None = None, use_gzip: bool = False):
    """An ``on_trace_ready`` handler writing each cycle's Chrome trace into ``dir_name`` as TensorBoard's
    profiler plugin reads it (``<worker>.<time ms>.pt.trace.json[.gz]``)."""

    def handler_fn(prof) -> None:
        os.makedirs(dir_name, exist_ok=True)
        worker = worker_name or f"{socket.gethostname()}_{os.getpid()}"
        name = f"{worker}.{time.time_ns() // 1_000_000}.pt.trace.json"
        path = os.path.join(dir_name, name)
        prof.export_chrome_trace(path)
        if use_gzip:
            with open(path, "rb") as src, gzip.open(path + ".gz", "wb") as dst:
                dst.write(src.read())
            os.remove(path)

    return handler_fn


class record_function:  # noqa: N801 - torch's name
    """Label a block (``with record_function("forward"):``) or a function (``@record_function("f")``).

    While a profile records, the block is one user event with that name; otherwise it costs one
    check.
    """

    def __init__(self, name: str, args: str | None = None):
        if not isinstance(name, str):
            raise TdxTypeError(f"record_function(): name must be a str, got {type(name).__name__}")
        self.name = name
        self.args = args
        self._ev = None

    def __enter__(self):
        if recorder.active() is not None:
            self._ev = recorder.push(self.name, "user")
        return self

    def __exit__(self, *exc):
        ev, self._ev = self._ev, None
        if ev is not None:
            recorder.pop(ev)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with record_function(self.name, self.args):
                return fn(*args, **kwargs)

        return wrapper


class profile:  # noqa: N801 - torch's name
    """Profile the tdx calls of a block, as ``torch.profiler.profile`` (see the module docstring).

    Args:
        activities: ProfilerActivity members (default: every supported one).
        schedule: a step -> ProfilerAction function (:func:`schedule`); default: record throughout.
        on_trace_ready: called with this profiler when a recording cycle ends.
        record_shapes: keep each op's input shapes (``key_averages(group_by_input_shape=True)``).
        profile_memory: keep the bytes of each op's tensor outputs.
        with_stack: keep the caller's source line of each op.
        with_flops, with_modules, experimental_config, execution_trace_observer, acc_events, use_cuda,
            custom_trace_id_callback: accepted as torch's; no effect.

    Raises:
        TdxTypeError: an activity that is not a :class:`ProfilerActivity`.
    """

    def __init__(self, *, activities=None, schedule=None, on_trace_ready=None, record_shapes=False,
                 profile_memory=False, with_stack=False, with_flops=False, with_modules=False,
                 experimental_config=None, execution_trace_observer=None, acc_events=False, use_cuda=None,
                 custom_trace_id_callback=None):
        activities = supported_activities() if activities is None else set(activities)
        for a in activities:
            if not isinstance(a, ProfilerActivity):
                raise TdxTypeError(f"profile(): activities must be ProfilerActivity members, got {a!r}")
        self.activities = activities
        self.record_steps = schedule is not None
        self.schedule = schedule if schedule is not None else _always_record
        self.on_trace_ready = on_trace_ready
        self.record_shapes, self.profile_memory, self.with_stack = record_shapes, profile_memory, with_stack
        self.with_flops, self.with_modules = with_flops, with_modules
        self.step_num = 0
        self.current_action = self.schedule(self.step_num)
        self._step_rec = None
        self._recording = False
        self._events = EventList([], profile_memory, record_shapes)

    # the window ------------------------------------------------------------------------------
    def _open(self) -> None:
        if ProfilerActivity.CPU in self.activities and not self._recording:
            recorder.start(self.record_shapes, self.profile_memory, self.with_stack)
            self._recording = True

    def _close(self, save: bool) -> None:
        if not self._recording:
            return
        self._recording = False
        rec = recorder.stop()
        if rec is not None:
            self._events = from_events(rec.events, self.profile_memory, self.record_shapes, rec.perf_ns0)
        if save and self.on_trace_ready is not None:
            self.on_trace_ready(self)

    def _transit(self, prev, new) -> None:
        recording = (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)
        if prev == ProfilerAction.RECORD_AND_SAVE or (prev in recording and new not in recording):
            self._close(save=True)
        if new in recording:
            self._open()

    # torch's API -----------------------------------------------------------------------------
    def start(self) -> None:
        """Begin profiling (the schedule's action for step 0)."""
        self._transit(ProfilerAction.NONE, self.current_action)
        if self.record_steps:
            self._step_rec = record_function(f"ProfilerStep#{self.step_num}").__enter__()

    def stop(self) -> None:
        """End profiling; a cycle still recording is closed and handed to ``on_trace_ready``."""
        if self._step_rec is not None:
            self._step_rec.__exit__(None, None, None)
            self._step_rec = None
        if self._recording:
            self._close(save=True)
        self.current_action = ProfilerAction.NONE

    def step(self) -> None:
        """Mark the end of a training step: the schedule moves on."""
        if self._step_rec is not None:
            self._step_rec.__exit__(None, None, None)
            self._step_rec = None
        prev = self.current_action
        self.step_num += 1
        self.current_action = self.schedule(self.step_num)
        self._transit(prev, self.current_action)
        if self.record_steps:
            self._step_rec = record_function(f"ProfilerStep#{self.step_num}").__enter__()

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def events(self) -> EventList:
        """The events of the last recorded cycle."""
        return self._events

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False) -> EventList:
        """The last cycle's events averaged per name (see :meth:`EventList.key_averages`)."""
        return self._events.key_averages(group_by_input_shape, group_by_stack_n)

    def export_chrome_trace(self, path) -> None:
        """Write the last cycle as a Chrome trace JSON file."""
        self._events.export_chrome_trace(path)

    def export_stacks(self, path, metric: str = "self_cpu_time_total") -> None:
        """Write ``stack;stack... <metric>`` lines (flame-graph input) for events with a stack."""
        with open(path, "w") as fh:
            for ev in self._events:
                if ev.stack:
                    fh.write(f"{';'.join(reversed(ev.stack))};{ev.name} {int(getattr(ev, metric))}\n")
