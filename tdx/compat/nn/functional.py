"""``tdx.nn.functional``: torch's ``torch.nn.functional`` for tdx tensors (so far attention).

Every function keeps torch's signature and semantics on every executor. Importing this module
must never import a framework.
"""

from __future__ import annotations

from ...attention import scaled_dot_product_attention

__all__ = ["scaled_dot_product_attention"]
