"""``tdx.futures`` (torch's ``torch.futures``): :class:`Future`, :func:`collect_all`, :func:`wait_all`.

A :class:`Future` holds a value or an exception set once, runs the callbacks added with ``then`` and
``add_done_callback`` when it completes (at once if it already has), and ``wait()`` blocks until it does,
then returns the value or raises the exception, as torch's does. Futures are thread-safe; nothing here
is asynchronous by itself (``tdx.jit.fork`` completes its future before returning). This module must
never import a framework.
"""

from __future__ import annotations

import threading

from ..._errors import TdxRuntimeError

__all__ = ["Future", "collect_all", "wait_all"]


class Future:
    """A value that will be set once (torch's ``torch.futures.Future``).

    Args:
        devices: accepted for torch's signature (CUDA streams to synchronize); tdx's devices need none.
    """

    def __init__(self, *, devices=None):
        self._done = threading.Event()
        self._lock = threading.Lock()
        self._value = None
        self._error = None
        self._callbacks = []

    def done(self) -> bool:
        """Whether a value or an exception has been set."""
        return self._done.is_set()

    def _complete(self, value=None, error=None) -> None:
        with self._lock:
            if self._done.is_set():
                raise TdxRuntimeError("Future can only be marked completed once (set_result or set_exception "
                                      "was already called)")
            self._value, self._error = value, error
            self._done.set()
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback(self)

    def set_result(self, result) -> None:
        """Complete the future with ``result`` and run its callbacks."""
        self._complete(value=result)

    def set_exception(self, result) -> None:
        """Complete the future with the exception ``result`` (raised by ``wait``/``value``)."""
        if not isinstance(result, BaseException):
            raise TypeError(f"{result} is of type {type(result)}, not an Exception.")
        self._complete(error=result)

    def wait(self):
        """Block until the future completes; return its value or raise its exception."""
        self._done.wait()
        if self._error is not None:
            raise self._error
        return self._value

    def value(self):
        """The value of a completed future (raises its exception)."""
        if not self.done():
            raise TdxRuntimeError("Future.value() called on a Future that is not completed")
        return self.wait()

    def add_done_callback(self, callback) -> None:
        """Run ``callback(self)`` when the future completes (now if it has)."""
        with self._lock:
            if not self._done.is_set():
                self._callbacks.append(callback)
                return
        callback(self)

    def then(self, callback) -> "Future":
        """A new future completed with ``callback(self)`` once this one completes (or with its exception)."""
        out = Future()

        def chain(fut):
            try:
                out.set_result(callback(fut))
            except Exception as err:  # noqa: BLE001 - the callback's exception completes the new future
                out.set_exception(err)

        self.add_done_callback(chain)
        return out

    def __repr__(self) -> str:
        return f"Future(done={self.done()})"


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
