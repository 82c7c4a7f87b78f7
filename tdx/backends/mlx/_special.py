"""``torch.special`` on MLX (placeholder filled below)."""

from __future__ import annotations


class MLXSpecialFunctions:
    """The functions of ``torch.special`` on MLX arrays (``special_<name>``)."""

    __slots__ = ()
