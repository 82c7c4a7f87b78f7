"""``tdx.futures`` (torch's ``torch.futures``): :class:`Future` (the one of ``tdx.Future`` and ``tdx.jit.fork``),
:func:`collect_all`, :func:`wait_all`.

A :class:`Future` holds a value or an exception set once, runs the callbacks added with ``then`` and
``add_done_callback`` when it completes (at once if it already has), and ``wait()`` blocks until it does,
then returns the value or raises the exception, as torch's does. Futures are thread-safe; nothing here
is asynchronous by itself (``tdx.jit.fork`` completes its future before returning). This module must
never import a framework.
"""

from __future__ import annotations

import threading
import typing

from ..._tensor.control_flow import Future

__all__ = ["Future", "collect_all", "wait_all"]

T = typing.TypeVar("T")
S = typing.TypeVar("S")


def collect_all(futures) -> Future:
    """A future completed with the list of ``futures`` once all of them complete."""
    futures = list(futures)
    out = Future()
    remaining = [len(futures)]
    lock = threading.Lock()
    if not futures:
        out.set_result([])

    def one_done(_):
        with lock:
            remaining[0] -= 1
            last = remaining[0] == 0
        if last:
            out.set_result(futures)

    for fut in futures:
        fut.add_done_callback(one_done)
    return out


def wait_all(futures) -> list:
    """Wait for every future and return their values in order (the first exception is raised)."""
    return [fut.wait() for fut in collect_all(futures).wait()]
