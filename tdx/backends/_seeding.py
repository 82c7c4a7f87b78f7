"""Seeding: ``tdx.manual_seed`` seeds every executor, including ones created later.

Remembers the last seed so an executor built after the call starts from it: a family of executors
(``torch``, ``mlx``) whose generators did not exist at the call is seeded when its first executor is
built, once (:meth:`~tdx.backends.base.Executor.seed_on_creation`). Building an executor of a family
already seeded touches no generator: torch's ``manual_seed`` already seeded every torch device, and a
generator that has drawn since the seed must never be set back to it. Must never import a framework:
executors are seeded through their own methods.
"""

from __future__ import annotations

_state = {"seed": None, "seeded": set()}
# "seeded": the executor families whose generators the remembered seed has been applied to
EXECUTORS: dict = {}  # the registry's table of built executors (tdx.backends hands it down at import)


def manual_seed(seed: int):
    """Seed the random generators of every executor (and Python's ``random``).

    Raises:
        TdxTypeError: ``seed`` is not an int.
    """
    from .._errors import TdxTypeError

    if isinstance(seed, bool) or not hasattr(type(seed), "__index__"):
        raise TdxTypeError(f"manual_seed expected an int seed (int or NumPy integer), got {seed!r}")
    seed = int(seed.__index__())
    remember(seed, ())
    for ex in list(EXECUTORS.values()):
        ex.manual_seed(seed)
        _state["seeded"].add(ex.name)
    return None


def remember(seed: int, executors) -> None:
    """Make ``seed`` the one executors built later start from; ``executors`` are seeded with it already."""
    _state["seed"] = seed
    _state["seeded"] = {ex.name for ex in executors}


DEFAULT_SEED = 67280421310721  # torch.Generator's seed before any is given


def initial_seed() -> int:
    """The seed the default generator started from, as ``torch.initial_seed``: the last one given to
    :func:`manual_seed` (or drawn by ``seed()``), else the one torch's default CPU generator drew at
    start-up (without torch, a fresh ``torch.Generator``'s)."""
    if _state["seed"] is not None:
        return _state["seed"]
    from ._flags import torch_module

    torch = torch_module()
    return DEFAULT_SEED if torch is None else int(torch.initial_seed())


def on_new_executor(ex) -> None:
    """Seed a newly built executor with the remembered seed, if any, when it is its family's first since
    the seed (later ones share generators that may have drawn since)."""
    if _state["seed"] is not None and ex.name not in _state["seeded"]:
        _state["seeded"].add(ex.name)
        ex.seed_on_creation(_state["seed"])


