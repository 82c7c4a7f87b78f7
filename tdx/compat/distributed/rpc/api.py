"""``tdx.distributed.rpc.api``: ``_require_initialized``, the guard torch's RPC functions (and libraries' wrappers
of them) carry: calling a guarded function raises, since tdx never initializes an RPC agent. Never imports a
framework.
"""

from __future__ import annotations

import functools

__tdx_partial__ = True  # torch's names here that tdx has not built refuse at use (tdx.compat.torch_paths)
__all__: list = []


def _require_initialized(func):
    """``func`` guarded as torch guards it: each call raises ``RuntimeError`` (RPC is never initialized in tdx)."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        from ...._errors import TdxRuntimeError

        raise TdxRuntimeError("RPC has not been initialized. Call torch.distributed.rpc.init_rpc first.")

    return wrapper
