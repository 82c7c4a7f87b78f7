"""Seeding: ``tdx.manual_seed`` seeds every executor, including ones created later.

Remembers the last seed so an executor built after the call starts from it. Must never
import a framework: executors that exist are seeded through their own ``manual_seed``.
"""

from __future__ import annotations



_state = {"seed": None}
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
    _state["seed"] = seed
    for ex in list(EXECUTORS.values()):
        ex.manual_seed(seed)
    return None


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
    """Seed a newly built executor with the remembered seed, if any."""
    if _state["seed"] is not None:
        ex.manual_seed(_state["seed"])



