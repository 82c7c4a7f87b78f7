"""``torch.fx`` for tdx modules: ``symbolic_trace``, ``Tracer``, ``GraphModule``, ``Interpreter``,
``Transformer``, ``wrap``, ``subgraph_rewriter.replace_pattern`` and ``passes.shape_prop.ShapeProp``.

The graph machinery is the installed torch's own ``torch.fx`` (``Graph``, ``Node``, ``Proxy``,
``Interpreter``, the code generator, the subgraph matcher), which is plain Python over graph
objects; tdx supplies the tensor-facing layer: a tracer that traces ``tdx.nn`` modules and tdx's
torch functions (:mod:`._symbolic_trace`), a ``GraphModule`` that is a ``tdx.nn.Module``
(:mod:`.graph_module`), a ``Transformer`` building one, and shape propagation over tdx tensors. A
GraphModule runs on tdx tensors on every executor. Without torch installed, importing this
package raises :class:`tdx.NotProvidedError` naming what to install.

This package must never put a real torch tensor or module into a traced program.
"""

from __future__ import annotations

from ...aliasing.torch_source import torch_package_dir as _torch_package_dir

_torch_package_dir("torch.fx")  # a clear NotProvidedError when torch is absent

from torch.fx import Graph, Interpreter, Node, Proxy, map_arg  # noqa: E402
from torch.fx.graph import CodeGen, PythonCode  # noqa: E402
from torch.fx.node import has_side_effect  # noqa: E402

from . import subgraph_rewriter  # noqa: E402
from ._symbolic_trace import Tracer, symbolic_trace, wrap  # noqa: E402
from .graph_module import GraphModule  # noqa: E402
from .interpreter import Transformer  # noqa: E402
from .subgraph_rewriter import replace_pattern  # noqa: E402

__all__ = ["symbolic_trace", "Tracer", "wrap", "Graph", "GraphModule", "Interpreter", "Transformer", "Node",
           "Proxy", "map_arg", "replace_pattern", "has_side_effect", "CodeGen", "PythonCode", "subgraph_rewriter"]
