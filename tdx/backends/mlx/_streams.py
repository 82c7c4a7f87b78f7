"""The MLX streams tdx runs on: one shared stream per device, and each thread's entry onto them.

MLX binds unevaluated work to a stream, and its default streams exist only in the thread that made
them. tdx runs every op of a device on one process-wide stream (MLX's thread-unsafe kind, usable from
any thread) and makes it each thread's default the first time the thread reaches an executor, so that
MLX calls naming no stream (operators, indexing, ``mx.vjp``'s cotangents) run on it too. Must never
import torch or the facade.
"""

from __future__ import annotations

import threading

import mlx.core as mx

_STREAMS: dict = {}


class _ThreadState(threading.local):
    """Per-thread state: whether this thread's default streams are the shared ones."""

    ready = False


THREAD = _ThreadState()


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
