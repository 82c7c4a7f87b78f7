"""``tdx.nn``: torch's ``torch.nn`` namespace for tdx tensors (so far ``functional`` and ``attention``).

``tdx.nn.attention`` is :mod:`tdx.attention`. Importing this package must never import a
framework.
"""

from __future__ import annotations

from ... import attention
from . import functional

__all__ = ["functional", "attention"]
