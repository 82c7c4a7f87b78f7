"""``torch.multiprocessing.spawn``/``start_processes``: run ``fn(i, *args)`` in ``nprocs`` processes.

Each child runs :func:`_wrap`: it calls ``fn(i, *args)``; an exception is written (its traceback
text) to the child's error file and the child exits with code 1. :class:`ProcessContext` waits on
the children's sentinels; the first failure terminates the others and raises
:class:`ProcessRaisedException` (the child's traceback in the message) or
:class:`ProcessExitedException` (exit code, or the signal's name), with torch's messages. Children
started while the torch alias is on inherit it and the pin (:mod:`tdx.aliasing.inherit`).
Must never import a framework.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
import pickle
import signal
import sys
import tempfile
import time
import traceback
import warnings

from ..._errors import TdxError, TdxValueError

__all__ = ["ProcessException", "ProcessRaisedException", "ProcessExitedException", "ProcessContext",
           "SpawnContext", "start_processes", "spawn"]


class ProcessException(TdxError):
    """A process started by :func:`start_processes` failed (``error_index``: its rank; ``pid``)."""

    def __init__(self, msg: str, error_index: int, pid: int):
        super().__init__(msg)
        self.msg = msg
        self.error_index = error_index
        self.pid = pid

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.pid)


class ProcessRaisedException(ProcessException):
    """A process raised an exception; the message holds its traceback."""


class ProcessExitedException(ProcessException):
    """A process exited with a nonzero code or was killed by a signal (``exit_code``, ``signal_name``)."""

    def __init__(self, msg: str, error_index: int, error_pid: int, exit_code: int, signal_name: str | None = None):
        super().__init__(msg, error_index, error_pid)
        self.exit_code = exit_code
        self.signal_name = signal_name

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.pid, self.exit_code, self.signal_name)


def _wrap(fn, i, args, error_file):
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass  # the parent is stopping everything
    except Exception:  # noqa: BLE001 - sent to the parent, which raises ProcessRaisedException
        with open(error_file, "wb") as fh:
            pickle.dump(traceback.format_exc(), fh)
        sys.exit(1)


class ProcessContext:
    """The processes of one :func:`start_processes` call; :meth:`join` waits for them."""

    def __init__(self, processes, error_files):
        self.error_files = error_files
        self.processes = processes
        self.sentinels = {process.sentinel: index for index, process in enumerate(processes)}

    def pids(self) -> list:
        """The children's process ids, by rank."""
        return [int(process.pid) for process in self.processes]

    def _terminate_others(self, grace_period):
        for process in self.processes:
            if process.is_alive():
                process.terminate()
        deadline = time.monotonic() + (grace_period or 0)
        for process in self.processes:
            process.join(max(0.0, deadline - time.monotonic()))
        for process in self.processes:
            if process.is_alive():
                process.kill()
            process.join()

    def join(self, timeout: float | None = None, grace_period: float | None = None) -> bool:
        """Wait for the children (at most ``timeout`` seconds); True once every one exited with 0.

        On the first failure the others are terminated (given ``grace_period`` seconds, then
        killed) and the failure raised.

        Raises:
            ProcessRaisedException: a child raised (its traceback in the message).
            ProcessExitedException: a child exited with a nonzero code or died by a signal.
        """
        if len(self.sentinels) == 0:
            return True
        ready = multiprocessing.connection.wait(self.sentinels.keys(), timeout=timeout)
        error_index = None
        for sentinel in ready:
            index = self.sentinels.pop(sentinel)
            process = self.processes[index]
            process.join()
            if process.exitcode != 0:
                error_index = index
                break
        if error_index is None:
            return len(self.sentinels) == 0
        self._terminate_others(grace_period)
        failed = self.processes[error_index]
        if not os.access(self.error_files[error_index], os.R_OK) or \
                os.path.getsize(self.error_files[error_index]) == 0:
            exitcode = failed.exitcode
            if exitcode < 0:
                try:
                    name = signal.Signals(-exitcode).name
                except ValueError:
                    name = f"<Unknown signal {-exitcode}>"
                raise ProcessExitedException(f"process {error_index} terminated with signal {name}",
                                             error_index=error_index, error_pid=failed.pid, exit_code=exitcode,
                                             signal_name=name)
            raise ProcessExitedException(f"process {error_index} terminated with exit code {exitcode}",
                                         error_index=error_index, error_pid=failed.pid, exit_code=exitcode)
        with open(self.error_files[error_index], "rb") as fh:
            original_trace = pickle.load(fh)
        os.unlink(self.error_files[error_index])
        msg = f"\n\n-- Process {error_index} terminated with the following error:\n" + original_trace
        raise ProcessRaisedException(msg, error_index, failed.pid)


class SpawnContext(ProcessContext):
    """The former name of :class:`ProcessContext` (torch keeps it, deprecated)."""

    def __init__(self, processes, error_files):
        warnings.warn("SpawnContext is renamed to ProcessContext since 1.4 release.", FutureWarning, stacklevel=2)
        super().__init__(processes, error_files)


def start_processes(fn, args=(), nprocs: int = 1, join: bool = True, daemon: bool = False,
                    start_method: str = "spawn"):
    """Start ``nprocs`` processes running ``fn(i, *args)`` (``i``: 0..nprocs-1) with ``start_method``.

    Args:
        fn: a picklable function (defined at module level) taking the rank first.
        args: the further arguments of ``fn``.
        nprocs: how many processes.
        join: wait for them all (re-raising the first failure); else return the context.
        daemon: start them as daemonic processes.
        start_method: ``"spawn"``, ``"fork"`` or ``"forkserver"``.

    Returns:
        None when ``join``, else the :class:`ProcessContext`.

    Raises:
        TdxValueError: ``nprocs`` below 1 or an unknown start method.
        ProcessRaisedException, ProcessExitedException: a child failed (when ``join``).
    """
    if not isinstance(nprocs, int) or isinstance(nprocs, bool) or nprocs < 1:
        raise TdxValueError(f"start_processes: nprocs must be an int >= 1, got {nprocs!r}")
    methods = multiprocessing.get_all_start_methods()
    if start_method not in methods:
        raise TdxValueError(f"start_processes: unknown start_method {start_method!r}; accepted: {methods}")
    ctx = multiprocessing.get_context(start_method)
    error_files, processes = [], []
    for i in range(nprocs):
        fd, error_file = tempfile.mkstemp(prefix="tdx-spawn-")
        os.close(fd)
        os.unlink(error_file)  # the child creates it only when it fails
        process = ctx.Process(target=_wrap, args=(fn, i, args, error_file), daemon=daemon)
        process.start()
        error_files.append(error_file)
        processes.append(process)
    context = ProcessContext(processes, error_files)
    if not join:
        return context
    while not context.join():
        pass
    return None


def spawn(fn, args=(), nprocs: int = 1, join: bool = True, daemon: bool = False, start_method: str = "spawn"):
    """:func:`start_processes` with the ``spawn`` start method (torch warns for another one).

    See :func:`start_processes` for the arguments, return value and errors.
    """
    if start_method != "spawn":
        warnings.warn(f"This method only supports start_method=spawn (got: {start_method}).\nTo use a different "
                      "start_method use:\n\t\t torch.multiprocessing.start_processes(...)", FutureWarning,
                      stacklevel=2)
    return start_processes(fn, args, nprocs, join, daemon, start_method="spawn")
