"""``tdx.distributed.rpc`` (torch.distributed.rpc): RPC is never initialized in tdx.

tdx has no RPC agent (its engines are collectives: ``tdx.distributed``), so ``is_available()`` is False and the
functions that need an agent refuse when called, as torch's do before ``init_rpc`` (``api._require_initialized``).
torch's other names here refuse at use by name. Never imports a framework.
"""

from __future__ import annotations

__tdx_partial__ = True  # torch's names here that tdx has not built refuse at use (tdx.compat.torch_paths)
__all__ = ["is_available"]


def is_available() -> bool:
    """False: tdx has no RPC framework."""
    return False
