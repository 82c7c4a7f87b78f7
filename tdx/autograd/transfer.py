"""Gradients across executors: ``.to()`` of a tensor that requires grad keeps it differentiable.

A move from a torch executor to a tape executor (MLX) gives the copy a tape node whose backward
hands the gradient back to torch's engine (``torch.autograd.backward`` of the source); a move from
the tape to torch gives the copy a ``torch.autograd.Function`` whose backward runs tdx's tape from
the source. So a backward started on either side reaches the leaves on both, as torch's ``.to()``
does across its devices. ``autograd.grad`` never crosses (its inputs share one executor).

This module must never import a framework at module level, and never detach silently: a move it
cannot differentiate (``create_graph`` across executors) raises.
"""

from __future__ import annotations

from .._errors import UnsupportedOpError
from .._tensor import recording as _recording
from . import tape as _tape


class CrossNode:
    """The tape node of a tensor moved from a torch executor: backward continues in torch's engine."""

    __slots__ = ("fn", "src", "dst", "metas", "natives", "inputs", "n_out", "_label", "__weakref__")

    def __init__(self, src_native, src_ex, dst_ex):
        self.fn = "to"  # not None: the graph is alive
        self.src, self.dst = (src_native, src_ex), dst_ex
        self.metas = self.natives = self.inputs = ()
        self.n_out = 1
        self._label = "ToCopyBackward0"

    def __repr__(self) -> str:
        return f"<{self._label} node>"

    def name(self) -> str:
        """The node's name, as torch's ``grad_fn.name()`` (torch's for a copy between devices)."""
        return self._label

    def backward_of(self, slots, create_graph):
        """Give the cotangent to torch's engine at the source (only when accumulating into ``.grad``)."""
        import torch

        from ..interop import transfer

        retain, accumulate = _tape.current_pass()
        if not accumulate or slots[0] is None:
            return []
        if create_graph:
            raise UnsupportedOpError("create_graph=True through a .to() between executors is not supported")
        native, ex = self.src
        try:
            torch.autograd.backward(native, transfer(slots[0], self.dst, ex).to(native.dtype),
                                    retain_graph=retain)
        except RuntimeError as err:
            raise ex.native_error(err) from None
        return []


def to_tape(t, ex):
    """``t`` (torch executor, requires grad) copied to tape executor ``ex`` with a node back to ``t``."""
    from .._tensor.wrapping import wrap
    from ..interop import transfer

    out = wrap(transfer(t._n.detach(), t._ex, ex), ex)
    out._ag = _tape.Meta(True, CrossNode(t._n, t._ex, ex), 0)
    _tape.ACTIVE[0] = True
    return out


_BRIDGE = [None]


def _bridge():
    if _BRIDGE[0] is None:
        import torch

        class ToCopy(torch.autograd.Function):
            """A copy of a tape tensor on a torch executor: backward runs tdx's tape from the source."""

            @staticmethod
            def forward(ctx, anchor, copied, source, ex):
                ctx.source, ctx.ex = source, ex
                return copied

            @staticmethod
            def backward(ctx, g):
                from ..interop import transfer

                src = ctx.source
                cot = transfer(g.detach().contiguous(), ctx.ex, src._ex)
                if cot.dtype != src._n.dtype:
                    cot = cot.astype(src._n.dtype)
                _recording.run_backward([src], [cot], retain_graph=True)
                return None, None, None, None

        _BRIDGE[0] = ToCopy
    return _BRIDGE[0]


def to_native(t, ex):
    """``t`` (tape executor, requires grad) copied to torch executor ``ex``, differentiable back to ``t``."""
    import torch

    from .._tensor.wrapping import wrap
    from ..interop import transfer

    copied = transfer(t._n, t._ex, ex)
    source = wrap(t._n, t._ex)  # the value now, with its history (a later in-place op on t keeps this)
    source._ag = t._ag
    anchor = torch.empty(0, requires_grad=True)
    out = _bridge().apply(anchor, copied.detach(), source, ex)
    return wrap(out, ex)
