"""``DataLoader``: batches from a dataset, in the main process or in worker processes.

Same constructor, checks and iteration order as torch's. Each pass first draws a base seed
from the loader's generator (the global cpu generator when None), as torch does, so with the
same ``tdx.manual_seed`` the shuffled order equals torch's. With ``num_workers > 0`` worker
processes (``multiprocessing``) fetch and collate whole batches and send them back pickled;
up to ``prefetch_factor * num_workers`` batches are in flight; results come back in sampler
order unless ``in_order=False``. While it waits for a batch the main process checks its workers every
0.1 s: a worker that exited (with any code, 0 included) or was killed by a signal is named, with its
pid and exit code or signal, in torch's words (torch notices through SIGCHLD; tdx polls).

Start method: the ``multiprocessing_context`` given, else ``spawn`` once an MLX device has
been used in this process (tdx's MLX executor is loaded: a forked child would inherit MLX's
initialised state without its threads, which is unsafe) or CUDA has been initialised in it (a forked
child cannot use CUDA at all, and tdx's default device is then a GPU: a worker's ``tensor(...)``
would fail where torch's lands on the CPU), and the platform's default otherwise
(``fork`` on Linux, as torch). Merely importing ``mlx`` or ``torch`` (tdx does to list devices) does not
count. ``pin_memory`` is accepted and does nothing:
none of tdx's host devices has pinned memory to give. Must never import torch or MLX.
"""

from __future__ import annotations

import itertools
import math
import multiprocessing
import pickle
import queue
import signal
import sys
import time

from . import worker as _worker
from .collate import default_collate, default_convert
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, SequentialSampler, draw_seed

import tdx

__all__ = ["DataLoader"]

_MLX_EXECUTOR = "tdx.backends.mlx._executor"  # loaded once an MLX device is used (checked, never imported)
_POLL_S = 0.1  # how often (seconds) a waiting main process checks its workers are alive
_JOIN_S = 5.0  # how long a stopping worker may take to exit before it is terminated


class _InfiniteConstantSampler:
    """The sampler of an iterable dataset: None forever (the dataset decides what comes)."""

    def __iter__(self):
        while True:
            yield None


def _start_context(requested):
    if requested is not None:
        if isinstance(requested, str):
            methods = multiprocessing.get_all_start_methods()
            if requested not in methods:
                raise tdx.TdxValueError(f"multiprocessing_context option should specify a valid start method in "
                                        f"{methods!r}, but got multiprocessing_context={requested!r}")
            return multiprocessing.get_context(requested)
        if not isinstance(requested, multiprocessing.context.BaseContext):
            raise tdx.TdxTypeError("multiprocessing_context option should be a valid context object or a string "
                                   f"specifying the start method, but got multiprocessing_context={requested}")
        return requested
    if _MLX_EXECUTOR in sys.modules or _cuda_initialised():
        return multiprocessing.get_context("spawn")
    return multiprocessing.get_context()


def _cuda_initialised() -> bool:
    """Whether torch has initialised CUDA in this process (looked up, never imported)."""
    cuda = sys.modules.get("torch.cuda")
    return cuda is not None and bool(cuda.is_initialized())


class DataLoader:
    """Iterate over ``dataset`` in batches, as ``torch.utils.data.DataLoader``.

    Args:
        dataset: a map-style dataset (``__getitem__``/``__len__``) or an :class:`IterableDataset`.
        batch_size: samples per batch; None turns batching off (samples pass through
            ``default_convert``).
        shuffle: reshuffle every pass (a :class:`RandomSampler`).
        sampler, batch_sampler: custom index order / index batches (exclusive with
            ``shuffle``; ``batch_sampler`` also with ``batch_size``, ``sampler``, ``drop_last``).
        num_workers: worker processes; 0 loads in the main process.
        collate_fn: turns a list of samples into a batch (default :func:`default_collate`).
        pin_memory, pin_memory_device: accepted; no effect (no pinned host memory here).
        drop_last: drop the last incomplete batch.
        timeout: seconds to wait for a worker's batch (0: forever).
        worker_init_fn: called with the worker id in each worker, after seeding.
        multiprocessing_context: start method name or context (see the module docstring).
        generator: a cpu ``tdx.Generator`` for the base seed and the default RandomSampler.
        prefetch_factor: batches in flight per worker (default 2 with workers).
        persistent_workers: keep the workers between passes.
        in_order: yield batches in sampler order (False: as soon as a worker delivers).

    Raises:
        TdxValueError / TdxTypeError: the combinations torch refuses, with torch's messages.
    """

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None, num_workers=0,
                 collate_fn=None, pin_memory=False, drop_last=False, timeout=0, worker_init_fn=None,
                 multiprocessing_context=None, generator=None, *, prefetch_factor=None, persistent_workers=False,
                 pin_memory_device="", in_order=True):
        if num_workers < 0:
            raise tdx.TdxValueError("num_workers option should be non-negative; use num_workers=0 to disable "
                                    "multiprocessing.")
        if timeout < 0:
            raise tdx.TdxValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise tdx.TdxValueError("prefetch_factor option could only be specified in multiprocessing.let "
                                    "num_workers > 0 to enable multiprocessing, otherwise set prefetch_factor "
                                    "to None.")
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        elif prefetch_factor is not None and prefetch_factor < 0:
            raise tdx.TdxValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise tdx.TdxValueError("persistent_workers option needs num_workers > 0")
        self._iterable = isinstance(dataset, IterableDataset)
        if self._iterable:
            if shuffle not in (False, None):
                raise tdx.TdxValueError(f"DataLoader with IterableDataset: expected unspecified shuffle option, "
                                        f"but got shuffle={shuffle}")
            if sampler is not None:
                raise tdx.TdxValueError(f"DataLoader with IterableDataset: expected unspecified sampler option, "
                                        f"but got sampler={sampler}")
            if batch_sampler is not None:
                raise tdx.TdxValueError(f"DataLoader with IterableDataset: expected unspecified batch_sampler "
                                        f"option, but got batch_sampler={batch_sampler}")
        else:
            shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise tdx.TdxValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise tdx.TdxValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, "
                                        "sampler, and drop_last")
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise tdx.TdxValueError("batch_size=None option disables auto-batching and is mutually exclusive "
                                    "with drop_last")
        if sampler is None:
            if self._iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.dataset = dataset
        self.batch_size = batch_size
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory  # accepted; no pinned memory on tdx's host devices
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        self.persistent_workers = persistent_workers
        self.in_order = in_order
        self.collate_fn = collate_fn if collate_fn is not None else (
            default_collate if batch_sampler is not None else default_convert)
        if multiprocessing_context is not None and num_workers == 0:
            raise tdx.TdxValueError("multiprocessing_context can only be used with multi-process loading "
                                    f"(num_workers > 0), but got num_workers={num_workers}")
        self.multiprocessing_context = multiprocessing_context
        self._iterator = None

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def __iter__(self):
        if self.persistent_workers and self.num_workers > 0:
            if self._iterator is None:
                self._iterator = _MultiProcessingDataLoaderIter(self)
            else:
                self._iterator.reset()
            return self._iterator
        return _MultiProcessingDataLoaderIter(self) if self.num_workers > 0 else _SingleProcessDataLoaderIter(self)

    def __len__(self) -> int:
        if self._iterable:
            length = len(self.dataset)
            if self.batch_size is not None:
                length = length // self.batch_size if self.drop_last else math.ceil(length / self.batch_size)
            return length
        return len(self._index_sampler)


class _BaseDataLoaderIter:
    def __init__(self, loader):
        self._loader = loader
        self._dataset = loader.dataset
        self._iterable = loader._iterable
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._collate_fn = loader.collate_fn
        self._sampler_iter = iter(loader._index_sampler)
        self._base_seed = draw_seed(loader.generator)  # drawn on every pass, as torch

    def __iter__(self):
        return self

    def __len__(self):
        return len(self._loader)


class _SingleProcessDataLoaderIter(_BaseDataLoaderIter):
    def __init__(self, loader):
        super().__init__(loader)
        self._data_iter = iter(self._dataset) if self._iterable else None

    def __next__(self):
        index = next(self._sampler_iter)
        return _worker.fetch(self._dataset, self._data_iter, self._iterable, self._auto_collation,
                             self._collate_fn, self._drop_last, index)


class _MultiProcessingDataLoaderIter(_BaseDataLoaderIter):
    def __init__(self, loader):
        super().__init__(loader)
        self._num_workers = loader.num_workers
        self._prefetch = loader.prefetch_factor * loader.num_workers
        self._timeout = loader.timeout
        self._in_order = loader.in_order
        self._persistent = loader.persistent_workers
        ctx = _start_context(loader.multiprocessing_context)
        self._data_queue = ctx.Queue()
        self._index_queues, self._workers = [], []
        self._shutdown = False
        for wid in range(self._num_workers):
            index_queue = ctx.Queue()
            index_queue.cancel_join_thread()
            proc = ctx.Process(target=_worker.worker_loop, daemon=True,
                               args=(self._dataset, self._iterable, index_queue, self._data_queue,
                                     self._auto_collation, self._collate_fn, self._drop_last, self._base_seed,
                                     loader.worker_init_fn, wid, self._num_workers))
            proc.start()
            self._index_queues.append(index_queue)
            self._workers.append(proc)
        self.reset(first=True)

    def reset(self, first=False):
        """Start a pass: a fresh sampler iterator, and (persistent workers) a resumed dataset."""
        if not first:
            self._sampler_iter = iter(self._loader._index_sampler)
        self._send_idx = self._rcvd_idx = self._outstanding = 0
        self._task_info = {}
        self._status = [True] * self._num_workers
        self._cycle = itertools.cycle(range(self._num_workers))
        if not first:
            for q in self._index_queues:
                q.put(_worker.ResumeIteration())
            waiting = self._num_workers
            while waiting:
                idx, _ = self._get()
                if isinstance(idx, _worker.ResumeIteration):
                    waiting -= 1
        for _ in range(self._prefetch):
            self._put_index()

    def _put_index(self):
        if self._outstanding >= self._prefetch:
            return
        try:
            index = next(self._sampler_iter)
        except StopIteration:
            return
        for _ in range(self._num_workers):
            wid = next(self._cycle)
            if self._status[wid]:
                break
        else:
            return
        self._index_queues[wid].put((self._send_idx, index))
        self._task_info[self._send_idx] = (wid,)
        self._outstanding += 1
        self._send_idx += 1

    def _get(self):
        """The next (idx, data) any worker sent, unpickled; raises on timeout or a dead worker.

        Waits in slices of ``_POLL_S``, checking the workers between them, so a worker that exits
        (with any code) or is killed while a batch is awaited is named within that slice.
        """
        deadline = time.monotonic() + self._timeout if self._timeout > 0 else None
        while True:
            wait = _POLL_S if deadline is None else min(_POLL_S, max(0.0, deadline - time.monotonic()))
            try:
                idx, payload = self._data_queue.get(timeout=wait)
                return idx, pickle.loads(payload)
            except queue.Empty:
                self._check_workers()
                if deadline is not None and time.monotonic() >= deadline:
                    self._shutdown_workers()
                    raise _worker.DataLoaderWorkerError(
                        f"DataLoader timed out after {self._timeout} seconds") from None

    def _check_workers(self):
        """Raise torch's error naming the first worker no longer alive (with its exit code or signal)."""
        for w, active in zip(self._workers, self._status):
            code = w.exitcode
            if code is None or not active:  # alive, or told to stop (its iterable dataset is exhausted)
                continue
            self._shutdown_workers(abort=True)
            if code < 0:
                try:
                    name = signal.strsignal(-code) or f"signal {-code}"
                except ValueError:
                    name = f"signal {-code}"
                msg = f"DataLoader worker (pid {w.pid}) is killed by signal: {name}. "
            elif code > 0:
                msg = (f"DataLoader worker (pid {w.pid}) exited unexpectedly with exit code {code}. Details are "
                       "lost due to multiprocessing. Rerunning with num_workers=0 may give better error trace.")
            else:
                msg = f"DataLoader worker (pid(s) {w.pid}) exited unexpectedly"
            raise _worker.DataLoaderWorkerError(msg)

    def __next__(self):
        while True:
            while self._rcvd_idx < self._send_idx:
                info = self._task_info.get(self._rcvd_idx)
                if info is not None:
                    if len(info) == 2 or self._status[info[0]]:
                        break
                    del self._task_info[self._rcvd_idx]
                self._rcvd_idx += 1
            else:
                if not self._persistent:
                    self._shutdown_workers()
                raise StopIteration
            info = self._task_info[self._rcvd_idx]
            if len(info) == 2:
                del self._task_info[self._rcvd_idx]
                self._rcvd_idx += 1
                return self._process(info[1])
            idx, data = self._get()
            self._outstanding -= 1
            if isinstance(data, _worker.IterableStop):
                self._status[data.worker_id] = False
                self._task_info.pop(idx, None)
                if not self._persistent:
                    self._index_queues[data.worker_id].put(None)
                self._put_index()
                continue
            if idx != self._rcvd_idx:
                if self._in_order:
                    self._task_info[idx] += (data,)
                    continue
                del self._task_info[idx]
                return self._process(data)
            del self._task_info[idx]
            self._rcvd_idx += 1
            return self._process(data)

    def _process(self, data):
        self._put_index()
        if isinstance(data, _worker.ExceptionWrapper):
            self._shutdown_workers()
            data.reraise()
        return data

    def _shutdown_workers(self, abort: bool = False):
        """Stop the workers: each is asked to exit and given ``_JOIN_S``, or, with ``abort`` (a peer died:
        nothing they send will be read), terminated at once, so the error is raised without that wait."""
        if self._shutdown:
            return
        self._shutdown = True
        for q in self._index_queues:
            q.put(None)
        for w in self._workers:
            if abort and w.is_alive():
                w.terminate()
            w.join(timeout=_JOIN_S)
            if w.is_alive():
                w.terminate()
        for q in self._index_queues:
            q.close()
        self._data_queue.cancel_join_thread()
        self._data_queue.close()

    def __del__(self):
        try:
            self._shutdown_workers()
        except (AttributeError, OSError, ValueError):  # half-built iterator or interpreter teardown
            return
