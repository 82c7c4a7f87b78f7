"""``tdx._dynamo`` (torch._dynamo): the tracing hints and queries libraries call, answered for tdx.

tdx compiles whole steps (``tdx.compile``: ``mx.compile`` on MLX, ``torch.compile`` on torch
executors), so the per-tensor and per-function hints TorchDynamo takes (``mark_static_address``,
``mark_dynamic``, ``allow_in_graph``...) change nothing that tdx computes: they return what torch
returns and leave their argument as it was. ``is_compiling`` is ``tdx.compiler.is_compiling``;
``config`` holds the switches libraries read and set; ``exc`` has the exception types they catch.
What needs Dynamo itself (``optimize``, ``export``, ``explain``) is refused at call. Never imports a
framework.
"""

from __future__ import annotations

from ..._errors import UnsupportedOpError
from ..compiler import allow_in_graph, assume_constant_result, disable, is_compiling, reset
from . import config, eval_frame, exc
from .eval_frame import OptimizedModule

__all__ = ["OptimizedModule", "allow_in_graph", "assume_constant_result", "config", "disable", "disallow_in_graph",
           "eval_frame", "exc",
           "graph_break", "is_compiling", "mark_dynamic", "mark_static", "mark_static_address",
           "maybe_mark_dynamic", "optimize", "export", "explain", "reset"]


def mark_static_address(t, guard=True) -> None:
    """A hint that ``t``'s storage never moves (for CUDA graphs); tdx records none, so it does nothing."""


def mark_dynamic(t, index, *, min=None, max=None, specialize_on=None) -> None:  # noqa: A002 - torch's names
    """A hint that dimension ``index`` of ``t`` varies between calls; nothing for tdx to record."""


def maybe_mark_dynamic(t, index) -> None:
    """As :func:`mark_dynamic`, a hint with no effect in tdx."""


def mark_static(t, index=None) -> None:
    """A hint that ``t`` (or its dimension ``index``) never changes; no effect in tdx."""


def disallow_in_graph(fn):
    """``fn`` itself: tdx keeps no per-function graph rules (torch's signature)."""
    return fn


def graph_break() -> None:
    """Nothing to break: outside a Dynamo trace torch's ``graph_break`` does nothing either."""


def _refuse(name: str):
    def refused(*args, **kwargs):
        raise UnsupportedOpError(f"torch._dynamo.{name} is not supported by tdx (TorchDynamo's own entry points): "
                                 "tdx compiles a whole step per executor. Instead: tdx.compile(fn)")

    refused.__name__ = refused.__qualname__ = name
    refused.__tdx_refused__ = ("TorchDynamo", "tdx compiles whole steps per executor", "tdx.compile(fn)")
    return refused


optimize = _refuse("optimize")
export = _refuse("export")
explain = _refuse("explain")
