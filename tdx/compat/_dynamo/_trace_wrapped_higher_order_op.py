"""``tdx._dynamo._trace_wrapped_higher_order_op``: the one name libraries import from it, ``TransformGetItemToIndex``.

In torch it is a ``TorchFunctionMode`` that makes ``A[i]`` with a 0-d integer tensor ``i`` index by
the tensor (no ``.item()``) inside ``vmap``d mask functions. tdx's indexing by a 0-d integer tensor
already selects by the tensor's value without a host read, so the mode has nothing to change: it is
a context manager that leaves indexing as it is. Never imports a framework.
"""

from __future__ import annotations

__all__ = ["TransformGetItemToIndex"]


class TransformGetItemToIndex:
    """Context manager: inside it, indexing by 0-d integer tensors indexes by the tensor (tdx always does)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        return None
