"""The MLX streams tdx runs on: one shared stream per device, each thread's entry onto them, and a clean
exit while other threads still use them.

MLX binds unevaluated work to a stream, and its default streams exist only in the thread that made
them. tdx runs every op of a device on one process-wide stream (MLX's thread-unsafe kind, usable from
any thread) and makes it each thread's default the first time the thread reaches an executor, so that
MLX calls naming no stream (operators, indexing, ``mx.vjp``'s cotangents) run on it too.

Evaluating the shared stream from two threads at once races inside MLX (a crash, not an error), so the
evaluations tdx starts for a caller (a value read, a NumPy view, a hand-off to torch, a block's scheduled
output) take :data:`EVAL_LOCK`, one thread at a time; building graphs needs no lock.

At interpreter exit, a daemon thread still inside an MLX evaluation (which runs without the GIL) would
take the process down: once Python finalizes, a thread asking for the GIL back is ended by
``pthread_exit``, whose unwinding through MLX's C++ frames (a graph node releasing a Python callback of
``mx.custom_function``) ends in ``std::terminate`` ("terminate called without an active exception",
exit 134). So the first thread to reach an executor registers :func:`stop_threads_at_exit`, which runs
before finalization and ends the MLX-using threads still alive first. Must never import torch or the facade.
"""

from __future__ import annotations

import atexit
import ctypes
import os
import sys
import threading
import time
import weakref

import mlx.core as mx

_STREAMS: dict = {}
_USERS: weakref.WeakSet = weakref.WeakSet()  # the threads that reached an MLX executor
_EXIT_HOOK: list = []
_HERE = (os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
         os.path.dirname(os.path.abspath(mx.__file__)))  # tdx's and MLX's package folders
EXIT_WAIT_S = 10.0  # how long exit waits for a thread to leave an MLX call before going on


class _ThreadState(threading.local):
    """Per-thread state: whether this thread's default streams are the shared ones."""

    ready = False


THREAD = _ThreadState()
EVAL_LOCK = threading.RLock()  # held around an evaluation of the shared streams (re-entrant: a read inside one)


def shared_stream(device):
    """The process-wide stream for ``device`` (MLX's thread-unsafe kind: usable from any thread)."""
    key = str(device)
    if key not in _STREAMS:
        _STREAMS[key] = mx.new_thread_unsafe_stream(device)
    return _STREAMS[key]


def enter_thread() -> None:
    """Make the shared streams this thread's default streams (MLX's defaults are per thread)."""
    for stream in list(_STREAMS.values()):
        mx.set_default_stream(stream)
    THREAD.ready = True
    _USERS.add(threading.current_thread())
    if not _EXIT_HOOK:
        _EXIT_HOOK.append(True)
        atexit.register(stop_threads_at_exit)


def _in_mlx_call(thread) -> bool:
    """Whether ``thread`` runs tdx or MLX code now (its innermost Python frame is in either package): the
    only place it can be inside an MLX call that released the GIL."""
    frame = sys._current_frames().get(thread.ident)
    return frame is not None and frame.f_code.co_filename.startswith(_HERE)


def stop_threads_at_exit() -> None:
    """End the threads other than this one that used MLX and still run (daemon threads: Python has joined
    the others before exit handlers run), so that none is inside an MLX call when Python finalizes.

    Each gets ``SystemExit`` at its next Python instruction (a thread ends silently on it, running its
    ``finally`` blocks); exit then waits, up to :data:`EXIT_WAIT_S`, for those that are in tdx or MLX code
    to leave it. A thread blocked elsewhere (a queue, a socket) is left as it is: it holds no MLX call.
    """
    me = threading.current_thread()
    alive = [t for t in list(_USERS) if t is not me and t.is_alive() and t.ident is not None]
    for t in alive:
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(t.ident), ctypes.py_object(SystemExit))
    end = time.monotonic() + EXIT_WAIT_S
    for t in alive:
        while t.is_alive() and _in_mlx_call(t) and time.monotonic() < end:
            t.join(0.005)
