"""The profiler's clock on tdx calls: a hook at tdx's dispatch layer that exists only while profiling.

:func:`start` replaces, for the duration of a profiling window, every op method of ``tdx.Tensor``
(named methods and the operator dunders), every op function of the ``tdx`` namespace and of
``tdx.nn.functional`` by a timed twin that calls the original; :func:`stop` puts the originals
back. Outside a window nothing of this module is on any call path (zero cost: the class and
modules hold the very functions they hold without a profiler). Each call becomes one event named
``tdx::<torch name>`` (``a + b`` is ``tdx::add``, ``a += b`` is ``tdx::add_``), with its thread,
start and end (``time.perf_counter_ns``), its input shapes when asked, and the bytes of its tensor
outputs (``profile_memory``). Calls nest (a composite's inner ops are its children). On a lazy
executor (MLX) the result is computed inside the call while profiling (``Executor.evaluate``), so
an event times the op's real work, not the building of a graph.

On the torch executors, torch's own profiler runs alongside (when torch's executor is in use as
the window starts, or serves the default device): its ``aten::*`` events are folded in (:func:`torch_events`), placed on the same
clock, so ``tdx::add`` has ``aten::add`` as its child. Must never import a framework at module
level.
"""

from __future__ import annotations

import sys
import threading
import time
import types
from dataclasses import dataclass, field

__all__ = ["Event", "start", "stop", "active", "push", "pop"]

_QUERIES = frozenset({
    "size", "dim", "ndimension", "numel", "nelement", "element_size", "is_contiguous", "is_floating_point",
    "is_complex", "is_signed", "data_ptr", "stride", "storage_offset", "type", "get_device", "is_shared",
    "is_pinned", "untyped_storage", "storage", "register_hook", "retain_grad", "requires_grad_", "is_inference",
    "is_set_to", "is_same_size", "is_nonzero", "has_names", "dim_order", "is_conj", "is_neg", "is_leaf",
    "backward_hooks", "register_post_accumulate_grad_hook", "share_memory_", "tolist", "numpy", "new_tensor"})
_DUNDERS = {"add": "add", "sub": "sub", "mul": "mul", "truediv": "div", "floordiv": "floor_divide",
            "mod": "remainder", "pow": "pow", "matmul": "matmul", "and": "bitwise_and", "or": "bitwise_or",
            "xor": "bitwise_xor", "lshift": "bitwise_left_shift", "rshift": "bitwise_right_shift",
            "neg": "neg", "abs": "abs", "invert": "bitwise_not", "pos": "positive", "eq": "eq", "ne": "ne",
            "lt": "lt", "le": "le", "gt": "gt", "ge": "ge", "getitem": "__getitem__", "setitem": "__setitem__"}
_lock = threading.Lock()
_tls = threading.local()
_state = {"recorder": None, "saved": []}


@dataclass
class Event:
    """One timed call (or ``record_function`` block, or torch event folded in)."""

    name: str
    start_ns: int
    end_ns: int = 0
    thread: int = 0
    input_shapes: list = field(default_factory=list)
    cpu_memory_usage: int = 0
    stack: list = field(default_factory=list)
    kind: str = "op"  # "op", "user" (record_function), "torch" (folded from torch's profiler)
    children_ns: int = 0

    @property
    def duration_ns(self) -> int:
        return self.end_ns - self.start_ns


class Recorder:
    """The events of one profiling window and the options they are recorded with."""

    def __init__(self, record_shapes: bool, profile_memory: bool, with_stack: bool):
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.events: list = []
        self.torch_prof = None
        self.wall_ns0 = time.time_ns()
        self.perf_ns0 = time.perf_counter_ns()


def active():
    """The recorder of the running window, or None."""
    return _state["recorder"]


def _shapes(args) -> list:
    out = []
    for a in args:
        shape = getattr(a, "shape", None)
        out.append(list(shape) if shape is not None and not isinstance(a, type) else [])
    return out


def _outputs(result):
    if isinstance(result, (tuple, list)):
        return [r for r in result if hasattr(r, "_ex") and hasattr(r, "_n")]
    return [result] if hasattr(result, "_ex") and hasattr(result, "_n") else []


def push(name: str, kind: str, args=()) -> Event:
    """Open an event on this thread (the caller closes it with :func:`pop`)."""
    rec = _state["recorder"]
    ev = Event(name, 0, thread=threading.get_ident(), kind=kind)
    if rec is not None and rec.record_shapes:
        ev.input_shapes = _shapes(args)
    if rec is not None and rec.with_stack:
        frame = sys._getframe(2)
        ev.stack = [f"{frame.f_code.co_filename}({frame.f_lineno}): {frame.f_code.co_name}"]
    stack = getattr(_tls, "stack", None)
    if stack is None:
        stack = _tls.stack = []
    stack.append(ev)
    ev.start_ns = time.perf_counter_ns()
    return ev


def pop(ev: Event, result=None) -> None:
    """Close ``ev`` (computing ``result`` first on a lazy executor) and file it with the recorder."""
    rec = _state["recorder"]
    outs = _outputs(result) if result is not None else ()
    for t in outs:
        if t._ex.caps.asynchronous:
            t._ex.evaluate([t._n])
    ev.end_ns = time.perf_counter_ns()
    stack = _tls.stack
    if stack and stack[-1] is ev:
        stack.pop()
    if rec is None:
        return
    if rec.profile_memory:
        ev.cpu_memory_usage = sum(t.numel() * t.element_size() for t in outs)
    rec.events.append(ev)


def _timed(fn, name: str):
    def timed(*args, **kwargs):
        if _state["recorder"] is None:
            return fn(*args, **kwargs)
        ev = push(name, "op", args)
        result = None
        try:
            result = fn(*args, **kwargs)
            return result
        finally:
            pop(ev, result)

    timed.__wrapped__ = fn
    timed.__name__, timed.__qualname__, timed.__doc__ = fn.__name__, fn.__qualname__, fn.__doc__
    return timed


def _torch_name(attr: str) -> str | None:
    if attr.startswith("__") and attr.endswith("__"):
        core = attr[2:-2]
        if core in _DUNDERS:
            return _DUNDERS[core]
        if core.startswith("r") and core[1:] in _DUNDERS:
            return _DUNDERS[core[1:]]
        if core.startswith("i") and core[1:] in _DUNDERS:
            return _DUNDERS[core[1:]] + "_"
        return None
    if attr.startswith("_") or attr in _QUERIES:
        return None
    return attr


def _targets():
    """``(owner, attribute, torch name)`` for every op the hook times."""
    import tdx
    from tdx._tensor.namespace import __all__ as namespace_ops
    from tdx.compat.nn import functional

    out = []
    for attr, value in list(vars(tdx.Tensor).items()):
        name = _torch_name(attr)
        if name is not None and isinstance(value, types.FunctionType):
            out.append((tdx.Tensor, attr, name))
    for attr in namespace_ops:
        value = vars(tdx).get(attr)
        if isinstance(value, types.FunctionType) and _torch_name(attr) is not None:
            out.append((tdx, attr, attr))
    for attr in getattr(functional, "__all__", ()):
        getattr(functional, attr, None)  # a function imported on first use is put in place now, to be timed
        value = vars(functional).get(attr)
        if isinstance(value, types.FunctionType) and not attr.startswith("_"):
            out.append((functional, attr, attr))
    return out


def _torch_in_use() -> bool:
    """Whether torch's executor serves this program: already loaded, or the default device's."""
    if "tdx.backends._torch.executor" in sys.modules:
        return True
    from ... import backends

    return backends.default_executor().name == "torch"


def start(record_shapes=False, profile_memory=False, with_stack=False, fold_torch=True) -> Recorder:
    """Open a window: install the timed twins (and torch's profiler on torch executors).

    Raises:
        RuntimeError: a window is already open (one profiler at a time, as torch's).
    """
    from ..._errors import TdxRuntimeError

    with _lock:
        if _state["recorder"] is not None:
            raise TdxRuntimeError("a tdx profiler is already running: one profile() at a time (torch refuses a "
                                  "second one too); stop the first before starting another")
        rec = Recorder(record_shapes, profile_memory, with_stack)
        saved = []
        for owner, attr, name in _targets():
            original = vars(owner)[attr]
            saved.append((owner, attr, original))
            setattr(owner, attr, _timed(original, "tdx::" + name))
        _state["saved"] = saved
        if fold_torch and _torch_in_use():
            import torch.autograd.profiler as tprof

            rec.torch_prof = tprof.profile(record_shapes=record_shapes, profile_memory=profile_memory)
            rec.torch_prof.__enter__()
        rec.wall_ns0, rec.perf_ns0 = time.time_ns(), time.perf_counter_ns()
        _state["recorder"] = rec
        return rec


def stop() -> Recorder | None:
    """Close the window: put the original functions back, fold torch's events in; the recorder."""
    with _lock:
        rec = _state["recorder"]
        _state["recorder"] = None
        for owner, attr, original in reversed(_state["saved"]):
            setattr(owner, attr, original)
        _state["saved"] = []
    if rec is not None and rec.torch_prof is not None:
        rec.torch_prof.__exit__(None, None, None)
        rec.events.extend(torch_events(rec, threading.get_ident()))
        rec.torch_prof = None
    return rec


def torch_events(rec: Recorder, thread: int) -> list:
    """torch's profiler events of the window, on the window's clock (torch's thread 1: ``thread``)."""
    prof = rec.torch_prof
    try:
        trace_ns = prof.kineto_results.trace_start_ns()
    except AttributeError:  # no kineto results: nothing to place on the clock
        return []
    shift = trace_ns - rec.wall_ns0 + rec.perf_ns0
    out = []
    for e in prof.function_events:
        start_ns = int(shift + e.time_range.start * 1000)
        end_ns = int(shift + e.time_range.end * 1000)
        out.append(Event(e.name, start_ns, end_ns, thread=thread if e.thread in (0, 1) else e.thread,
                         input_shapes=[list(s) for s in (e.input_shapes or [])],
                         cpu_memory_usage=int(getattr(e, "cpu_memory_usage", 0) or 0), kind="torch"))
    return out
