"""Processes started while the torch alias is on inherit it, and the device pin, from their parent.

A child started with the ``fork`` start method is a copy of its parent and keeps both as they are.
A child started with ``spawn`` or ``forkserver`` (DataLoader workers, ``multiprocessing``,
``tdx.multiprocessing``) is a fresh interpreter that first imports the parent's ``__main__`` script
again (as ``__mp_main__``): without help its ``import torch`` would get real torch, and the tensors
it makes would be torch's. While the alias is active, :func:`install` wraps
``multiprocessing.util.spawnv_passfds`` (the one call through which ``spawn``'s children and the
``forkserver`` server are started) so that the child's ``-c`` command first runs ``torch_alias.adopt``: it
activates the alias and pins the parent's device (with the parent's pin source, and its "already
warned" flag, so a child does not repeat the parent's warning), before the child re-imports the
script. A forkserver server started this way imports the script under the alias. Every child also
gets, in the preparation data its parent sends it (``multiprocessing.spawn.get_preparation_data``,
unpickled before the child re-imports the script), the parent's pin as it is at the child's start:
so a forkserver server started earlier, under another pin, still gives each child its parent's.
Other programs started through ``spawnv_passfds`` (the resource tracker) are left as they are.

pytest-xdist's workers are other fresh interpreters (execnet starts them with ``python -c``, outside
multiprocessing): ``python -m tdx run`` writes its pin into the environment variable ``TDX_RUN_ALIAS``
(with its own process id) for the program's lifetime (:func:`export`), and tdx's pytest plugin, loaded
in each worker before any conftest, calls :func:`adopt_from_environment`: a worker whose parent is that
process adopts the alias and the pin. Any other process that sees the variable (a grandchild, a program
the test suite starts) is left as it is.

Limits: a forkserver server started before the alias was turned on imported the script without it;
``-p no:tdx`` leaves xdist's workers on real torch.
This module must never import a framework, and never changes a child that is not one of
multiprocessing's ``spawn``/``forkserver`` Python children or a direct pytest-xdist worker of a run.
"""

from __future__ import annotations

import json
import os
import threading

__all__ = ["install", "uninstall", "child_command", "INHERITED", "ENVIRONMENT", "export", "adopt_from_environment"]

# the -c programs multiprocessing runs in a spawned child / a forkserver server
_CHILD_PROGRAMS = ("from multiprocessing.spawn import spawn_main", "from multiprocessing.forkserver import main")
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the folder holding tdx/
_state = {"original": None, "preparation": None, "adopt": None}  # adopt: torch_alias.adopt, handed down
_lock = threading.Lock()
INHERITED = " (inherited from the parent process)"  # added to a child's pin source
ENVIRONMENT = "TDX_RUN_ALIAS"  # ``{"pid", "device", "source"}`` of a ``python -m tdx run`` process, as JSON


def _current() -> tuple:
    """``(device, source, warned)`` of the current pin (``(None, None, False)`` without one)."""
    from .. import backends

    pinned = backends.pinned()
    if pinned is None:
        return None, None, False
    return str(pinned[0].device), pinned[1], bool(backends._state.get("pin_warned"))


def child_command(code: str) -> str:
    """``code`` (a child's ``-c`` program) preceded by the adoption of the alias and of the current pin."""
    device, source, warned = _current()
    prefix = (f"import sys; sys.path.append({_ROOT!r}) if {_ROOT!r} not in sys.path else None; "
              f"import tdx.aliasing.torch_alias as _tdx_alias; _tdx_alias.adopt({device!r}, {source!r}, {warned!r}); "
              "del _tdx_alias; ")
    return prefix + code


class _Adoption:
    """A value in a child's preparation data whose unpickling adopts the parent's alias and pin."""

    def __init__(self, state: tuple):
        self.state = state

    def __reduce__(self):
        return _state["adopt"], self.state


def _preparation_data(name):
    data = _state["preparation"](name)
    data["tdx_inherit"] = _Adoption(_current())
    return data


def _spawnv_passfds(path, args, passfds):
    args = list(args)
    try:
        i = args.index("-c")
    except ValueError:
        i = -1
    if 0 <= i < len(args) - 1 and args[i + 1].startswith(_CHILD_PROGRAMS):
        args[i + 1] = child_command(args[i + 1])
    return _state["original"](path, args, passfds)


def install(adopt) -> None:
    """Make multiprocessing's spawned children adopt the alias and the pin (idempotent).

    Args:
        adopt: what a child runs first (``torch_alias.adopt(device, source, warned)``): the alias hands it down,
            so this module never imports the alias.
    """
    from multiprocessing import spawn, util

    with _lock:
        _state["adopt"] = adopt
        if _state["original"] is None:
            _state["original"] = util.spawnv_passfds
            util.spawnv_passfds = _spawnv_passfds
            _state["preparation"] = spawn.get_preparation_data
            spawn.get_preparation_data = _preparation_data


def uninstall() -> None:
    """Undo :func:`install`: children start as Python starts them."""
    from multiprocessing import spawn, util

    with _lock:
        if _state["original"] is not None:
            util.spawnv_passfds = _state["original"]
            spawn.get_preparation_data = _state["preparation"]
            _state["original"] = _state["preparation"] = None




def export() -> str | None:
    """Write the current pin and this process's id into ``TDX_RUN_ALIAS``; the value it replaced.

    The caller restores that value (:func:`restore`) when its program ends.
    """
    device, source, _ = _current()
    previous = os.environ.get(ENVIRONMENT)
    os.environ[ENVIRONMENT] = json.dumps({"pid": os.getpid(), "device": device, "source": source})
    return previous


def restore(previous: str | None) -> None:
    """Put back the ``TDX_RUN_ALIAS`` that :func:`export` replaced (remove it when there was none)."""
    if previous is None:
        os.environ.pop(ENVIRONMENT, None)
    else:
        os.environ[ENVIRONMENT] = previous


def adopt_from_environment(adopt) -> bool:
    """In a process started directly by a ``python -m tdx run`` program: adopt its alias and pin.

    Args:
        adopt: ``torch_alias.adopt(device, source, warned)``.

    Returns:
        True when this process adopted them; False when ``TDX_RUN_ALIAS`` is unset, unreadable, or
        names a process other than this one's parent.
    """
    value = os.environ.get(ENVIRONMENT)
    if not value:
        return False
    try:
        state = json.loads(value)
        pid, device, source = int(state["pid"]), state["device"], state["source"]
    except (ValueError, TypeError, KeyError):
        return False
    if pid != os.getppid():
        return False
    adopt(device, source, False)
    return True
