"""``torch.overrides`` (minimal): the predicates torch's Python code asks of its arguments.

tdx has no ``__torch_function__`` dispatch of its own; these answer as torch's do for tdx
tensors and for objects that define ``__torch_function__``. This module must never import a
framework.
"""

from __future__ import annotations

from ..autograd.variable import handle_torch_function, has_torch_function, is_tensor_like

__all__ = ["is_tensor_like", "has_torch_function", "handle_torch_function"]
