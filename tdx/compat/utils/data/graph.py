"""``tdx.utils.data.graph`` (torch.utils.data.graph): the graph of DataPipes behind a DataPipe.

Walks each DataPipe's attributes (and lists, tuples, sets, dicts among them) for the DataPipes
it reads from. Pure Python: must never import torch or MLX, never pickle or copy a DataPipe.
"""

from __future__ import annotations

import warnings

from tdx._errors import TdxRuntimeError

from .datapipes.datapipe import IterDataPipe, MapDataPipe

__all__ = ["traverse", "traverse_dps"]

_PIPES = (IterDataPipe, MapDataPipe)


def _connected(value, found: list, seen: set[int]) -> None:
    """Collect the DataPipes in ``value``, descending into containers but not into DataPipes."""
    if id(value) in seen:
        return
    seen.add(id(value))
    if isinstance(value, _PIPES):
        found.append(value)
    elif isinstance(value, dict):
        for k, v in value.items():
            _connected(k, found, seen)
            _connected(v, found, seen)
    elif isinstance(value, (list, tuple, set, frozenset)):
        for v in value:
            _connected(v, found, seen)


def _helper(datapipe, cache: set[int]) -> dict:
    if not isinstance(datapipe, _PIPES):
        raise TdxRuntimeError(f"Expected `IterDataPipe` or `MapDataPipe`, but {type(datapipe)} is found")
    dp_id = id(datapipe)
    if dp_id in cache:
        return {}
    cache.add(dp_id)
    found: list = []
    seen = {dp_id}
    for value in vars(datapipe).values():
        _connected(value, found, seen)
    graph = {dp_id: (datapipe, {})}
    for pipe in found:
        graph[dp_id][1].update(_helper(pipe, cache.copy()))
    return graph


def traverse_dps(datapipe) -> dict:
    """The DataPipe graph ending at ``datapipe``.

    Args:
        datapipe: The last DataPipe of the pipeline.

    Returns:
        ``{id(dp): (dp, subgraph)}`` nested down to the sources.

    Raises:
        TdxRuntimeError: when ``datapipe`` is not an IterDataPipe or MapDataPipe.
    """
    return _helper(datapipe, set())


def traverse(datapipe, only_datapipe: bool | None = None) -> dict:
    """Deprecated form of ``traverse_dps`` (warns FutureWarning, as torch); same graph."""
    msg = "`traverse` function is deprecated and will be removed after 1.13. Please use `traverse_dps` instead."
    if not only_datapipe:
        msg += " And, the behavior will be changed to the equivalent of `only_datapipe=True`."
    warnings.warn(msg, FutureWarning, stacklevel=2)
    return _helper(datapipe, set())
