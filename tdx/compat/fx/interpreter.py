"""``torch.fx.Interpreter`` (torch's own, which runs any module's graph node by node) and
``torch.fx.Transformer`` for tdx: torch's, with a tdx tracer for the graph it builds and a tdx
``GraphModule`` as its result. Must never build a torch module.
"""

from __future__ import annotations

import torch.fx as _fx
from torch.fx import Graph, Interpreter
from torch.fx.node import map_aggregate

from ._symbolic_trace import Tracer
from .graph_module import GraphModule

__all__ = ["Interpreter", "Transformer"]


class _TransformerTracer(Tracer):
    """The tracer of a Transformer: it adds to the Transformer's new graph; every module is a leaf."""

    def __init__(self, graph: Graph):
        super().__init__()
        self.graph = graph
        self.tensor_attrs = {}

    def is_leaf_module(self, m, module_qualified_name: str) -> bool:
        return True


class Transformer(_fx.Transformer):
    """``torch.fx.Transformer``: runs a GraphModule's graph with Proxies, so overriding
    ``call_function``/``call_module``... rewrites it; ``transform()`` gives the new tdx GraphModule."""

    def __init__(self, module):
        Interpreter.__init__(self, module)
        self.new_graph = Graph()
        self.new_graph.set_codegen(module.graph._codegen)
        self.tracer = _TransformerTracer(self.new_graph)
        self.tracer.root = module

    def transform(self) -> GraphModule:
        """The transformed module."""
        result = Interpreter.run(self, enable_io_processing=False)
        if result is not None:
            out = self.new_graph.output(map_aggregate(result, lambda a: a.node if isinstance(a, _fx.Proxy) else a))
            old = list(self.graph.nodes)[-1]
            out.meta.update(old.meta)
        return GraphModule(self.module, self.new_graph)
