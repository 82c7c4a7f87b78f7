"""How a tdx tensor crosses a process boundary through multiprocessing's queues, pipes and pools.

:func:`init_reductions` registers :func:`reduce_tensor` with ``multiprocessing.reduction.
ForkingPickler`` (the pickler of every multiprocessing channel; plain ``pickle`` is not touched,
so ``tdx.save`` and DataLoader batches keep their own format). A tensor whose native is a torch
tensor in host memory (the ``cpu`` device) goes as that torch tensor, through torch's own
reductions: its storage moves to shared memory and the receiver adopts it without a copy
(``tdx.from_dlpack``), so writes are seen on both sides, as with torch. Every other tensor (MLX's,
whose arrays have no shared-memory handle; ``cuda``/``mps``) goes by copy, as ``pickle`` sends it.
Must never import a framework at module level: torch's reductions load when a cpu tensor is sent.
"""

from __future__ import annotations

from multiprocessing.reduction import ForkingPickler

import tdx

from ...aliasing.torch_alias import real_imports

__all__ = ["init_reductions", "reduce_tensor", "rebuild_shared", "apply_strategy"]

_state = {"registered": False, "strategy": None}


def apply_strategy(strategy: str) -> None:
    """Hand the sharing strategy to torch's reductions once torch is in use (else on first send)."""
    _state["strategy"] = strategy
    import sys

    if "torch.multiprocessing" in sys.modules:
        sys.modules["torch.multiprocessing"].set_sharing_strategy(strategy)


def reduce_tensor(t):
    """``(rebuild, args)`` for tensor ``t``: shared on the cpu torch executor, by copy elsewhere."""
    ex = t._ex
    if ex.caps.native_autograd and ex.device.type == "cpu":
        import torch.multiprocessing as tmp  # registers torch's own reductions with ForkingPickler

        if _state["strategy"] is not None and tmp.get_sharing_strategy() != _state["strategy"]:
            tmp.set_sharing_strategy(_state["strategy"])
        with real_imports():  # torch's reductions name torch's classes: never the alias's tdx
            payload = ForkingPickler.dumps(t._n.detach())
        return rebuild_shared, (bytes(payload), t.requires_grad)
    return t.__reduce_ex__(2)


def rebuild_shared(payload: bytes, requires_grad: bool):
    """The receiving side of a shared cpu tensor: a tdx tensor over the same shared memory."""
    with real_imports():
        native = ForkingPickler.loads(payload)
    out = tdx.from_dlpack(native)
    return out.requires_grad_() if requires_grad else out


def init_reductions() -> None:
    """Register :func:`reduce_tensor` for ``tdx.Tensor`` with ForkingPickler (idempotent).

    Parameters and buffers keep their own ``__reduce_ex__``, which sends their data as a tensor.
    """
    if not _state["registered"]:
        ForkingPickler.register(tdx.Tensor, reduce_tensor)
        _state["registered"] = True
