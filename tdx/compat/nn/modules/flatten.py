"""``Identity``, ``Flatten`` and ``Unflatten``: the shape-only modules, as torch.nn's.

Must never import torch or mlx.
"""

from __future__ import annotations

import tdx

from .module import Module

__all__ = ["Identity", "Flatten", "Unflatten"]


class Identity(Module):
    """Returns its input unchanged; accepts and ignores any constructor arguments (as torch)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__()

    def forward(self, input):
        return input


class Flatten(Module):
    """Flattens dims ``start_dim``..``end_dim`` of the input into one.

    Args:
        start_dim (int): first dim to flatten. Default: 1.
        end_dim (int): last dim to flatten. Default: -1.
    """

    __constants__ = ["start_dim", "end_dim"]

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, input):
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Expands dim ``dim`` of the input into the shape ``unflattened_size``.

    Args:
        dim (int): the dim to unflatten (named dims are not supported: tdx has no named tensors).
        unflattened_size (tuple or list of ints): the new shape of that dim.

    Raises:
        TdxTypeError: ``dim`` is not an int, or ``unflattened_size`` is not a sequence of ints.
    """

    __constants__ = ["dim", "unflattened_size"]

    def __init__(self, dim, unflattened_size) -> None:
        super().__init__()
        if isinstance(dim, int) and not isinstance(dim, bool):
            self._require_tuple_int(unflattened_size)
        else:
            raise tdx.TdxTypeError(f"invalid argument type for dim parameter: {type(dim).__name__} "
                                   "(an int is accepted; tdx has no named tensors)")
        self.dim = dim
        self.unflattened_size = unflattened_size

    def _require_tuple_int(self, value) -> None:
        if isinstance(value, (tuple, list)):
            for idx, elem in enumerate(value):
                if not isinstance(elem, int):
                    raise tdx.TdxTypeError("unflattened_size must be tuple of ints, but found element of type "
                                           f"{type(elem).__name__} at pos {idx}")
            return
        raise tdx.TdxTypeError(f"unflattened_size must be a tuple of ints, but found type {type(value).__name__}")

    def forward(self, input):
        return input.unflatten(self.dim, self.unflattened_size)

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"
