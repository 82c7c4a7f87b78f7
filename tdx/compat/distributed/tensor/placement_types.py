"""``tdx.distributed.tensor.placement_types``: torch's placement descriptors, as plain values.

``Shard(dim)``, ``Replicate()``, ``Partial(reduce_op)`` (and torch's private ``_StridedShard``) are
descriptions of how a distributed tensor would be laid out. They compare and print as torch's, so
code that builds or inspects them runs; tdx has no distributed tensor to lay out, so what would
use them (``distribute_tensor``, ``DTensor``) is refused from ``tdx.aliasing.refused``. This module
must never import a framework.
"""

from __future__ import annotations


__all__ = ["Placement", "Shard", "Replicate", "Partial"]


class Placement:
    """Base of the placement descriptors (torch's ``Placement``)."""

    __slots__ = ()

    def is_shard(self, dim=None) -> bool:
        """Whether this placement shards (``dim``: on that dimension)."""
        return False

    def is_replicate(self) -> bool:
        """Whether this placement replicates."""
        return False

    def is_partial(self, reduce_op=None) -> bool:
        """Whether this placement holds partial values (``reduce_op``: pending that reduction)."""
        return False

    def _key(self):
        return ()

    def __eq__(self, other) -> bool:
        return type(self) is type(other) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash((type(self).__name__, self._key()))


class Shard(Placement):
    """Split along dimension ``dim`` across the mesh dimension."""

    __slots__ = ("dim",)

    def __init__(self, dim: int):
        self.dim = dim

    def is_shard(self, dim=None) -> bool:
        return dim is None or dim == self.dim

    def _key(self):
        return (self.dim,)

    def __repr__(self) -> str:
        return f"Shard(dim={self.dim})"


class _StridedShard(Shard):
    """torch's private strided shard: ``Shard`` with a split factor."""

    __slots__ = ("split_factor",)

    def __init__(self, dim: int, split_factor: int = 1):
        super().__init__(dim)
        self.split_factor = split_factor

    def _key(self):
        return (self.dim, self.split_factor)

    def __repr__(self) -> str:
        return f"_StridedShard(dim={self.dim}, sf={self.split_factor})"


class Replicate(Placement):
    """The whole tensor on every rank of the mesh dimension."""

    __slots__ = ()

    def is_replicate(self) -> bool:
        return True

    def __repr__(self) -> str:
        return "Replicate()"


class Partial(Placement):
    """Partial values pending ``reduce_op`` ("sum", "avg", "max", "min") across the mesh dimension."""

    __slots__ = ("reduce_op",)

    def __init__(self, reduce_op: str = "sum"):
        self.reduce_op = reduce_op

    def is_partial(self, reduce_op=None) -> bool:
        return reduce_op is None or reduce_op == self.reduce_op

    def _key(self):
        return (self.reduce_op,)

    def __repr__(self) -> str:
        return f"Partial({self.reduce_op})"


