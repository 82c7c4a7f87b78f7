"""``torch.fx.subgraph_rewriter`` for tdx: torch's own matcher and rewriter, given the pattern and
the replacement traced by tdx's tracer (torch's would trace them with real torch). Must never
trace with torch's tracer.
"""

from __future__ import annotations

from torch.fx import Graph
from torch.fx import subgraph_rewriter as _torch_rewriter
from torch.fx.subgraph_rewriter import Match, ReplacedPatterns

from ._symbolic_trace import symbolic_trace
from .graph_module import GraphModule

__all__ = ["replace_pattern", "replace_pattern_with_filters", "Match", "ReplacedPatterns"]


def _graph(pattern):
    if isinstance(pattern, Graph):
        return pattern
    if isinstance(pattern, GraphModule):
        return pattern.graph
    return symbolic_trace(pattern).graph


def replace_pattern(gm: GraphModule, pattern, replacement) -> list:
    """Replace every match of ``pattern`` (a function, Graph or GraphModule) in ``gm`` by
    ``replacement``; returns torch's ``Match`` list and recompiles ``gm``."""
    matches = _torch_rewriter._replace_pattern(gm, _graph(pattern), _graph(replacement))
    return [Match(anchor=m.anchor, nodes_map=m.nodes_map) for m in matches]


def replace_pattern_with_filters(gm: GraphModule, pattern, replacement=None, match_filters=None,
                                 ignore_literals: bool = False, replacement_callback=None,
                                 node_name_match: str = "") -> list:
    """torch's ``replace_pattern_with_filters`` with tdx-traced pattern and replacement."""
    return _torch_rewriter._replace_pattern(gm, _graph(pattern), None if replacement is None else _graph(replacement),
                                            match_filters, ignore_literals, replacement_callback, node_name_match)
