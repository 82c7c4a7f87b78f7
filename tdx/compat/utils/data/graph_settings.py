"""``tdx.utils.data.graph_settings`` (torch.utils.data.graph_settings): set sharding, shuffling, seeds on a pipeline.

Each function walks the DataPipe graph and calls the hooks DataPipes expose (``apply_sharding``,
``set_shuffle``, ``set_seed``). Pure Python: must never import torch or MLX at module level.
"""

from __future__ import annotations

import inspect
import warnings
from enum import IntEnum

from tdx._errors import TdxRuntimeError

from .graph import traverse_dps

__all__ = ["SHARDING_PRIORITIES", "apply_random_seed", "apply_sharding", "apply_shuffle_seed",
           "apply_shuffle_settings", "get_all_graph_pipes"]


class SHARDING_PRIORITIES(IntEnum):
    """Sharding groups (torch.utils.data.datapipes.iter.sharding's)."""

    DEFAULT = 1
    DISTRIBUTED = 2
    MULTIPROCESSING = 3


def get_all_graph_pipes(graph: dict) -> list:
    """Every DataPipe of ``graph`` once, depth first from the end of the pipeline."""
    results, seen = [], set()

    def walk(g):
        for dp_id, (pipe, sub) in g.items():
            if dp_id in seen:
                continue
            seen.add(dp_id)
            results.append(pipe)
            walk(sub)

    walk(graph)
    return results


def _has_method(pipe, *names) -> bool:
    return all(inspect.ismethod(getattr(pipe, n, None)) for n in names)


def apply_sharding(datapipe, num_of_instances: int, instance_id: int, sharding_group=SHARDING_PRIORITIES.DEFAULT):
    """Call ``apply_sharding`` on the sharding DataPipes of the pipeline.

    Raises:
        TdxRuntimeError: when two sharding DataPipes sit on one branch (data would be lost).
    """

    def walk(graph, prev=None):
        for pipe, sub in graph.values():
            applied = prev
            if _has_method(pipe, "apply_sharding"):
                if prev is not None:
                    raise TdxRuntimeError("Sharding twice on a single pipeline is likely unintended and will cause "
                                          f"data loss. Sharding already applied to {prev} while trying to apply to "
                                          f"{pipe}")
                if len(inspect.signature(pipe.apply_sharding).parameters) < 3:
                    pipe.apply_sharding(num_of_instances, instance_id)
                else:
                    pipe.apply_sharding(num_of_instances, instance_id, sharding_group=sharding_group)
                applied = pipe
            walk(sub, applied)

    walk(traverse_dps(datapipe))
    return datapipe


def apply_shuffle_settings(datapipe, shuffle: bool | None = None):
    """Call ``set_shuffle(shuffle)`` on every DataPipe with ``set_shuffle`` and ``set_seed``.

    ``shuffle=None`` leaves the graph alone. With ``shuffle=True`` and no shuffler, torch appends
    ``datapipe.shuffle()``; that needs a registered ``shuffle`` functional form.
    """
    if shuffle is None:
        return datapipe
    shufflers = [p for p in get_all_graph_pipes(traverse_dps(datapipe)) if _has_method(p, "set_shuffle", "set_seed")]
    if not shufflers and shuffle:
        warnings.warn("`shuffle=True` was set, but the datapipe does not contain a `Shuffler`. Adding one at the end. "
                      "Be aware that the default buffer size might not be sufficient for your task.", stacklevel=2)
        datapipe = datapipe.shuffle()
        shufflers = [datapipe]
    for shuffler in shufflers:
        shuffler.set_shuffle(shuffle)
    return datapipe


def apply_random_seed(datapipe, rng):
    """Give every DataPipe with ``set_seed`` a seed drawn from the generator ``rng``.

    Each seed is the 63-bit draw torch's ``torch.empty((), dtype=torch.int64).random_(generator=rng)``
    makes, so a tdx Generator seeded like torch's gives the same seeds.
    """
    from .sampler import draw_seed
    pipes, seen = [], set()
    for pipe in get_all_graph_pipes(traverse_dps(datapipe)):
        if id(pipe) not in seen and _has_method(pipe, "set_seed"):
            pipes.append(pipe)
            seen.add(id(pipe))
    for pipe in pipes:
        pipe.set_seed(draw_seed(rng))
    return datapipe


def apply_shuffle_seed(datapipe, rng):
    """Deprecated alias of ``apply_random_seed`` (warns FutureWarning, as torch)."""
    warnings.warn("`apply_shuffle_seed` is deprecated since 1.12 and will be removed in the future releases. "
                  "Please use `apply_random_seed` instead.", FutureWarning, stacklevel=2)
    return apply_random_seed(datapipe, rng)
