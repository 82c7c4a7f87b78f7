"""``tdx.autograd.graph``: the names of torch's autograd graph that tdx can honour.

``Node`` is the type every ``grad_fn`` is an instance of (torch's nodes on torch executors, tape
nodes on MLX); ``GradientEdge`` and ``get_gradient_edge`` name one output of a node. Saved-tensor
hooks are not offered: tdx's tape keeps no saved tensors to hook. Must never import a framework
at module level.
"""

from __future__ import annotations

import sys
from typing import Any, NamedTuple

from .._errors import TdxRuntimeError

__all__ = ["Node", "GradientEdge", "get_gradient_edge"]


class _NodeMeta(type):
    def __instancecheck__(cls, obj) -> bool:
        from . import tape
        from .function import FunctionNode
        from .transfer import CrossNode

        if isinstance(obj, (tape.Node, tape.Invalid, FunctionNode, CrossNode)):
            return True
        torch = sys.modules.get("torch")
        return torch is not None and isinstance(obj, torch.autograd.graph.Node)


class Node(metaclass=_NodeMeta):
    """The type of a ``grad_fn``: ``isinstance(t.grad_fn, tdx.autograd.graph.Node)`` holds on every executor."""

    def name(self) -> str:
        """The node's name, e.g. ``MulBackward``."""
        raise NotImplementedError


class GradientEdge(NamedTuple):
    """One output of a graph node: ``(node, output_nr)``, as torch's."""

    node: Any
    output_nr: int


def get_gradient_edge(tensor) -> GradientEdge:
    """The edge whose gradient is ``tensor``'s: its ``grad_fn`` and which output of it ``tensor`` is.

    Raises:
        TdxRuntimeError: ``tensor`` does not require grad, or is a tape leaf (tdx's tape has no
            gradient-accumulator node to name).
    """
    ex = tensor._ex
    if ex.caps.native_autograd:
        import torch

        try:
            edge = torch.autograd.graph.get_gradient_edge(tensor._n)
        except RuntimeError as err:
            raise ex.native_error(err) from None
        return GradientEdge(edge.node, edge.output_nr)
    m = getattr(tensor, "_ag", None)
    if m is None or not m.requires_grad:
        raise TdxRuntimeError("It is not possible to get the gradient edge for a Tensor that does not require "
                              "gradients")
    if m.node is None:
        raise TdxRuntimeError(f"get_gradient_edge of a leaf on {tensor.device}: tdx's tape has no gradient "
                              "accumulator node")
    return GradientEdge(m.node, m.index)
