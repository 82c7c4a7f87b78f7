"""``tdx.storage`` (torch's ``torch.storage``): ``UntypedStorage`` and ``TypedStorage`` are tdx's storage classes
(``tdx.UntypedStorage``), so ``isinstance`` checks and ``torch.load`` allowlists naming
``torch.storage.TypedStorage`` reach them. Must never import a framework."""

from __future__ import annotations

from ..._tensor.storage import TypedStorage, UntypedStorage

__all__ = ["UntypedStorage", "TypedStorage"]
__tdx_partial__ = True  # torch's other torch.storage names refuse at use (tdx.aliasing.torch_paths)
