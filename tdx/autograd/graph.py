"""``tdx.autograd.graph``: the names of torch's autograd graph that tdx can honour.

``Node`` is the type every ``grad_fn`` is an instance of (torch's nodes on torch executors, tape
nodes on MLX); ``GradientEdge`` and ``get_gradient_edge`` name one output of a node. Custom
saved-tensor hooks are not offered: tdx's tape keeps no saved tensors to hook. ``save_on_cpu`` is
(torch's own on torch executors; MLX's arrays already live in host-visible memory). Must never
import a framework at module level.
"""

from __future__ import annotations

import contextlib
import sys
from typing import Any, NamedTuple

from .._errors import TdxRuntimeError

__all__ = ["Node", "GradientEdge", "get_gradient_edge", "save_on_cpu"]


class _NodeMeta(type):
    def __instancecheck__(cls, obj) -> bool:
        from .._tensor import recording
        from . import tape
        from .function import FunctionNode
        from .transfer import CrossNode

        if isinstance(obj, (recording.Node, tape.Invalid, FunctionNode, CrossNode)):
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


class save_on_cpu:  # noqa: N801 - torch's name
    """Keep the tensors saved for backward in host memory while the block runs, as torch's ``save_on_cpu``.

    On torch executors this is torch's own context manager (it applies when torch is already
    imported, which any torch-executor tensor implies); MLX's tape keeps arrays in memory the host
    can read (its CPU, or the unified memory of Apple GPUs), so there is nothing to move.

    Args:
        pin_memory: torch's switch: pin the saved copies (torch executors).
        device_type: torch's switch: the device type the saved tensors come from.
    """

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda"):
        self.pin_memory, self.device_type = pin_memory, device_type
        self._stack = contextlib.ExitStack()

    def __enter__(self):
        torch = sys.modules.get("torch")
        if torch is not None:
            self._stack.enter_context(torch.autograd.graph.save_on_cpu(pin_memory=self.pin_memory,
                                                                       device_type=self.device_type))
        return self

    def __exit__(self, *exc) -> None:
        self._stack.close()
