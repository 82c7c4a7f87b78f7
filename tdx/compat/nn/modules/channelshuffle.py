"""``tdx.nn.ChannelShuffle``: the module form of ``tdx.nn.functional.channel_shuffle``. Must never import
torch or mlx."""

from __future__ import annotations

from .. import functional as F
from .module import Module

__all__ = ["ChannelShuffle"]


class ChannelShuffle(Module):
    """Interleave the channels of ``(N, C, *)`` input from ``groups`` groups (see ``F.channel_shuffle``)."""

    __constants__ = ["groups"]

    def __init__(self, groups: int) -> None:
        super().__init__()
        self.groups = groups

    def forward(self, input):  # noqa: A002 - torch's name
        return F.channel_shuffle(input, self.groups)

    def extra_repr(self) -> str:
        return f"groups={self.groups}"
