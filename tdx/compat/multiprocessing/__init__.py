"""``torch.multiprocessing``: Python's ``multiprocessing`` with tdx tensors passed between processes.

Every name of the standard ``multiprocessing`` (``Process``, ``Queue``, ``Pool``, ``get_context``,
``set_start_method``...) is here as it is there, plus torch's own: :func:`spawn`,
:func:`start_processes`, :class:`ProcessContext` and its exceptions (:mod:`.spawn`), and the
sharing strategies. Importing this module registers how a tdx tensor travels through
multiprocessing's queues and pipes (:mod:`.reductions`): a tensor of a torch executor on ``cpu``
is shared, as torch shares it (its storage moves to shared memory; a write in one process is seen
in the other); a tensor of the MLX executor (or of ``cuda``/``mps``) travels **by copy**: MLX
arrays have no shared-memory handle to send, so the receiver gets an equal, independent tensor.

Children started with ``spawn``/``forkserver`` while the torch alias is on inherit it and the device
pin (:mod:`tdx.aliasing.inherit`), so a program run by ``python -m tdx run`` gets tdx in every child.
This package must never import a framework at module level (torch is imported when a torch-backed
tensor is first sent).
"""

from __future__ import annotations

import multiprocessing
import sys
from multiprocessing import *  # noqa: F403 - torch.multiprocessing re-exports the whole module

from ..._errors import TdxValueError
from . import reductions
from .spawn import (ProcessContext, ProcessException, ProcessExitedException, ProcessRaisedException, SpawnContext,
                    spawn, start_processes)

__all__ = ["set_sharing_strategy", "get_sharing_strategy", "get_all_sharing_strategies", "spawn",
           "start_processes", "ProcessContext", "ProcessException", "ProcessExitedException",
           "ProcessRaisedException", "SpawnContext", "init_reductions", *multiprocessing.__all__]

_STRATEGIES = frozenset({"file_descriptor", "file_system"}) if sys.platform != "darwin" else frozenset({"file_system"})
_strategy = ["file_descriptor" if sys.platform != "darwin" else "file_system"]


def set_sharing_strategy(new_strategy: str) -> None:
    """Set how cpu tensors of the torch executor are shared with other processes.

    Args:
        new_strategy: one of :func:`get_all_sharing_strategies` (``"file_descriptor"``,
            ``"file_system"``).

    Raises:
        TdxValueError: an unknown strategy (torch asserts; tdx names the accepted ones).
    """
    if new_strategy not in _STRATEGIES:
        raise TdxValueError(f"set_sharing_strategy: unknown sharing strategy {new_strategy!r}; accepted: "
                            f"{sorted(_STRATEGIES)}")
    _strategy[0] = new_strategy
    reductions.apply_strategy(new_strategy)


def get_sharing_strategy() -> str:
    """The current strategy for sharing cpu tensors (see :func:`set_sharing_strategy`)."""
    return _strategy[0]


def get_all_sharing_strategies() -> set:
    """The sharing strategies this system supports."""
    return set(_STRATEGIES)


def init_reductions() -> None:
    """Register the tdx tensor reductions with multiprocessing (done at import; idempotent)."""
    reductions.init_reductions()


init_reductions()
