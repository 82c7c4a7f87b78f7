"""``torch.fx.passes.shape_prop.ShapeProp`` for tdx: runs a GraphModule on tdx tensors and records
each node's ``meta["tensor_meta"]`` (torch's ``TensorMetadata`` with tdx shapes and dtypes) and
``meta["type"]``. Must never run the graph on real torch tensors.
"""

from __future__ import annotations

from torch.fx import Interpreter
from torch.fx.node import map_aggregate
from torch.fx.passes.shape_prop import TensorMetadata

import tdx

from ...._errors import UnsupportedOpError

__all__ = ["ShapeProp", "TensorMetadata"]


def _extract_tensor_metadata(t) -> TensorMetadata:
    fmt = tdx.channels_last if t.ndim == 4 and t.is_contiguous(memory_format=tdx.channels_last) and \
        not t.is_contiguous() else (tdx.contiguous_format if t.is_contiguous() else None)
    return TensorMetadata(t.shape, t.dtype, t.requires_grad, t.stride(), fmt, False, {})


class ShapeProp(Interpreter):
    """Execute a GraphModule node by node and record every node's tensor metadata.

    Args:
        gm: the GraphModule.
        fake_mode: torch's fake-tensor mode; tdx has none, so only None is accepted.

    Raises:
        UnsupportedOpError: a ``fake_mode`` was given.
    """

    def __init__(self, gm, fake_mode=None):
        if fake_mode is not None:
            raise UnsupportedOpError("ShapeProp(fake_mode=...): tdx has no fake tensors; propagate real tdx "
                                     "tensors (small ones or on the meta device) instead")
        super().__init__(gm)
        self.fake_mode = None

    def run_node(self, n):
        result = super().run_node(n)
        found = []

        def extract(obj):
            if isinstance(obj, tdx.Tensor):
                found.append(True)
                return _extract_tensor_metadata(obj)
            return obj

        meta = map_aggregate(result, extract)
        if found:
            n.meta["tensor_meta"] = meta
        n.meta["type"] = type(result)
        return result

    def propagate(self, *args):
        """Run the module on ``args`` (tdx tensors), recording metadata; returns its output."""
        return super().run(*args)
