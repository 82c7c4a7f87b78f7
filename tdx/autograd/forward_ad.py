"""``torch.autograd.forward_ad``: forward-mode AD's dual tensors, as far as tdx has them.

tdx computes forward-mode derivatives through ``tdx.func.jvp`` (torch's transform), not through dual tensors, so
no tdx tensor is ever dual: ``unpack_dual(t)`` is ``(t, None)`` for every tensor (libraries such as kornia ask it
before choosing a fused kernel), ``dual_level`` is a level no dual is made in, and ``make_dual`` refuses by name.
Must never import a framework.
"""

from __future__ import annotations

import contextlib
from typing import NamedTuple

from .._errors import UnsupportedOpError

__all__ = ["UnpackedDualTensor", "dual_level", "enter_dual_level", "exit_dual_level", "make_dual", "unpack_dual"]

_LEVEL = [-1]  # the innermost dual level entered (-1: none), as torch counts them


class UnpackedDualTensor(NamedTuple):
    """``(primal, tangent)`` of a tensor: the tensor itself and None, as no tdx tensor carries a tangent."""

    primal: object
    tangent: object


def unpack_dual(tensor, *, level=None) -> UnpackedDualTensor:
    """``(tensor, None)``: tdx tensors carry no forward-mode tangent."""
    return UnpackedDualTensor(tensor, None)


def enter_dual_level() -> int:
    """Enter a new dual level; returns its index."""
    _LEVEL[0] += 1
    return _LEVEL[0]


def exit_dual_level(*, level=None) -> None:
    """Leave the innermost dual level."""
    _LEVEL[0] = max(-1, _LEVEL[0] - 1)


@contextlib.contextmanager
def dual_level():
    """A block in which dual tensors could be made (tdx makes none: see :func:`make_dual`)."""
    enter_dual_level()
    try:
        yield
    finally:
        exit_dual_level()


def make_dual(tensor, tangent, *, level=None):
    """Refused: tdx has no dual tensors; forward-mode derivatives come from ``tdx.func.jvp``."""
    raise UnsupportedOpError("torch.autograd.forward_ad.make_dual is not supported by tdx (dual tensors): tdx "
                             "computes forward-mode derivatives with torch.func.jvp, not with dual tensors; use "
                             "torch.func.jvp(fn, primals, tangents)")
