"""``tdx.nn.utils``: torch's ``torch.nn.utils`` helpers for tdx tensors.

Importing this package must never import a framework.
"""

from __future__ import annotations

from . import rnn

__all__ = ["rnn"]
