"""Padding modules of ``tdx.nn``: ``ReflectionPad*``, ``ReplicationPad*``, ``CircularPad*``, ``ConstantPad*``
and ``ZeroPad*`` in 1, 2 and 3 dims, thin modules over ``F.pad`` with torch's ``extra_repr``.
This module must never import torch or mlx.
"""

from __future__ import annotations

from .. import functional as F
from .module import Module

__all__ = [f"{kind}Pad{n}d" for kind in ("Reflection", "Replication", "Circular", "Constant", "Zero")
           for n in (1, 2, 3)]


def _amounts(padding, nd: int) -> tuple:
    if isinstance(padding, int):
        return (padding,) * (2 * nd)
    return tuple(padding)


class _PadNd(Module):
    __constants__ = ["padding", "mode"]
    mode = "constant"
    _nd = 1

    def __init__(self, padding) -> None:
        super().__init__()
        self.padding = _amounts(padding, self._nd)

    def forward(self, input):  # noqa: A002 - torch's name
        """``F.pad(input, padding, mode)``."""
        return F.pad(input, self.padding, self.mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    __constants__ = ["padding", "value"]

    def __init__(self, padding, value: float) -> None:
        super().__init__(padding)
        self.value = value

    def forward(self, input):  # noqa: A002 - torch's name
        """``F.pad(input, padding, "constant", value)``."""
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class _ZeroPadNd(_ConstantPadNd):
    def __init__(self, padding) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


def _make(kind: str, nd: int, base, mode):
    doc = (f"Pad the last {nd} dim(s) of a tensor ({kind.lower()} padding); ``padding`` is an int or a "
           f"{2 * nd}-tuple ``(left, right{', top, bottom' if nd > 1 else ''}{', front, back' if nd > 2 else ''})``.")
    attrs = {"_nd": nd, "__doc__": doc, "__module__": __name__}
    if mode is not None:
        attrs["mode"] = mode
    return type(f"{kind}Pad{nd}d", (base,), attrs)


ReflectionPad1d, ReflectionPad2d, ReflectionPad3d = (_make("Reflection", n, _PadNd, "reflect") for n in (1, 2, 3))
ReplicationPad1d, ReplicationPad2d, ReplicationPad3d = (_make("Replication", n, _PadNd, "replicate")
                                                        for n in (1, 2, 3))
CircularPad1d, CircularPad2d, CircularPad3d = (_make("Circular", n, _PadNd, "circular") for n in (1, 2, 3))
ConstantPad1d, ConstantPad2d, ConstantPad3d = (_make("Constant", n, _ConstantPadNd, None) for n in (1, 2, 3))
ZeroPad1d, ZeroPad2d, ZeroPad3d = (_make("Zero", n, _ZeroPadNd, None) for n in (1, 2, 3))
