"""einops on tdx tensors: a backend that einops finds by subclassing, as it finds its own.

einops picks a backend by walking ``AbstractBackend``'s subclasses whose ``framework_name`` is in
``sys.modules`` and asking ``is_appropriate_type``. :class:`TdxBackend` is einops' torch backend
with ``framework_name = "tdx"`` and tdx as its ``torch``: every operation (``permute``, ``expand``,
``amax``, ``einsum``, ``cat``...) is the tdx op, so rearrange/reduce/repeat/einsum/pack/unpack run on
every executor and are differentiable like any tdx op. einops' own files are not touched.
"""

from __future__ import annotations

__all__ = ["attach"]


def attach(einops_module) -> None:
    """Define the tdx backend (einops then finds it by itself)."""
    from einops import _backends

    if any(c.__name__ == "TdxBackend" for c in _backends.TorchBackend.__subclasses__()):
        return

    class TdxBackend(_backends.TorchBackend):
        """einops' torch backend with tdx as its torch."""

        framework_name = "tdx"

        def __init__(self):  # torch's backend imports torch here; this one takes tdx
            import tdx

            self.torch = tdx

        def layers(self):
            import importlib

            from ...aliasing.torch_alias import torch_alias

            with torch_alias():  # einops.layers.torch's own ``import torch`` gets tdx
                return importlib.import_module("einops.layers.torch")

    TdxBackend.__module__ = __name__
    globals()["TdxBackend"] = TdxBackend
