"""What runs inside a DataLoader worker process, and what it sends back.

:func:`worker_loop` is the worker's whole life: seed tdx and ``random`` with
``base_seed + worker_id`` (torch's rule), publish :func:`get_worker_info`, run
``worker_init_fn``, then fetch and collate the batches the main process asks for until it
sends ``None``. Batches go back as pickled bytes through a queue (pickled in the worker, so a batch
that cannot be pickled is reported instead of lost; tdx tensors pickle as host NumPy plus
dtype and device). An exception in the worker goes back as an :class:`ExceptionWrapper`
holding the worker's traceback text, and the main process raises it again with that text,
as torch does. NumPy's global generator is seeded per worker too (``seed % 2**32``: distinct
streams, not the numbers torch's own NumPy seed derivation gives). Must never import torch or MLX at module level: a spawned worker imports it
before knowing its device.
"""

from __future__ import annotations

import os
import pickle
import queue
import random
import sys
import traceback
from dataclasses import dataclass

import numpy as np

import tdx

__all__ = ["WorkerInfo", "get_worker_info", "ExceptionWrapper", "DataLoaderWorkerError", "worker_loop",
           "fetch", "IterableStop", "ResumeIteration"]


class DataLoaderWorkerError(tdx.TdxError, RuntimeError):
    """A DataLoader worker failed, died, timed out, or raised an exception that cannot be
    rebuilt with a message (the RuntimeError torch raises then)."""


@dataclass(frozen=True)
class WorkerInfo:
    """What :func:`get_worker_info` answers inside a worker (torch's fields)."""

    id: int
    num_workers: int
    seed: int
    dataset: object


_info: list = [None]


def get_worker_info():
    """The calling worker's :class:`WorkerInfo`; None in the main process.

    Use it in ``IterableDataset.__iter__`` or ``worker_init_fn`` to give each worker its own
    share of the data.
    """
    return _info[0]


class ExceptionWrapper:
    """An exception caught in a worker, with its traceback as text, to raise again elsewhere."""

    def __init__(self, where: str):
        exc_type, exc, tb = sys.exc_info()
        self.exc_type = exc_type
        self.exc_msg = "".join(traceback.format_exception(exc_type, exc, tb))
        self.where = where

    def reraise(self):
        """Raise the worker's exception type with the worker's traceback in the message.

        Raises:
            The worker's exception class, or :class:`DataLoaderWorkerError` when that class
            cannot be built from one message string (torch raises RuntimeError then).
        """
        msg = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.exc_msg}"
        try:
            exception = self.exc_type(msg)
        except Exception:  # noqa: BLE001 - any constructor failure means "cannot rebuild": wrap it
            raise DataLoaderWorkerError(msg) from None
        raise exception


class IterableStop:
    """A worker's iterable dataset is exhausted."""

    def __init__(self, worker_id: int):
        self.worker_id = worker_id


class ResumeIteration:
    """Sent to persistent workers at the start of a new epoch; echoed back once ready."""


def fetch(dataset, iterator, iterable: bool, auto_collation: bool, collate_fn, drop_last: bool, index):
    """One batch (or one sample when auto-collation is off) for ``index``.

    For an iterable dataset ``index`` only tells the batch size; its next items are read
    from ``iterator``. Raises StopIteration when an iterable dataset is exhausted.
    """
    if iterable:
        if auto_collation:
            data = []
            for _ in index:
                try:
                    data.append(next(iterator))
                except StopIteration:
                    break
            if not data or (drop_last and len(data) < len(index)):
                raise StopIteration
        else:
            data = next(iterator)
        return collate_fn(data)
    if auto_collation:
        getitems = getattr(dataset, "__getitems__", None)
        data = getitems(index) if callable(getitems) else [dataset[i] for i in index]
    else:
        data = dataset[index]
    return collate_fn(data)


def worker_loop(dataset, iterable, index_queue, data_queue, auto_collation, collate_fn, drop_last, base_seed,
                init_fn, worker_id, num_workers):
    """The body of worker process ``worker_id`` (see the module docstring)."""
    seed = base_seed + worker_id
    random.seed(seed)
    tdx.manual_seed(seed)
    np.random.seed(seed % (1 << 32))  # distinct per worker; torch derives its NumPy seed by another hash
    _info[0] = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed, dataset=dataset)
    where = f"in DataLoader worker process {worker_id}"
    init_error = None
    iterator = None
    try:
        if init_fn is not None:
            init_fn(worker_id)
        if iterable:
            iterator = iter(dataset)
    except Exception:  # noqa: BLE001 - sent to the main process, which raises it there
        init_error = ExceptionWrapper(where)
    exhausted = False
    parent = os.getppid()
    while True:
        try:
            task = index_queue.get(timeout=5.0)
        except queue.Empty:
            if os.getppid() != parent:  # the main process died: nobody will ever ask again
                break
            continue
        if task is None:
            break
        if isinstance(task, ResumeIteration):
            data_queue.put((task, pickle.dumps(None)))
            exhausted = False
            if iterable and init_error is None:
                iterator = iter(dataset)
            continue
        idx, index = task
        if init_error is not None:
            data, init_error = init_error, None
        elif exhausted:
            data = IterableStop(worker_id)
        else:
            try:
                data = fetch(dataset, iterator, iterable, auto_collation, collate_fn, drop_last, index)
            except StopIteration:
                if not iterable:
                    data = ExceptionWrapper(where)
                else:
                    data, exhausted = IterableStop(worker_id), True
            except Exception:  # noqa: BLE001 - sent to the main process, which raises it there
                data = ExceptionWrapper(where)
        try:  # pickled here, not in the queue's feeder thread, so a failure reaches the main process
            payload = pickle.dumps(data, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:  # noqa: BLE001 - an unpicklable batch: raised in the main process
            payload = pickle.dumps(ExceptionWrapper(where), protocol=pickle.HIGHEST_PROTOCOL)
        data_queue.put((idx, payload))
        del data, payload
