"""Tensor methods composed from the op surface: fused arithmetic (addmm, addcmul, lerp...),
comparisons of whole tensors (isclose, allclose, equal), NaN-aware reductions and products.

A mixin of ``tdx.Tensor``. Each method is written with other tdx ops, so it runs on every
executor, records on tdx's tape as one op, and raises what its parts raise. Must never
import a framework and holds no per-executor special case.
"""

from __future__ import annotations

from ._tensor_methods import typed_errors


class MathTensorMethods:
    """Composite math methods of ``tdx.Tensor``."""

    __slots__ = ()


for _name, _fn in list(vars(MathTensorMethods).items()):
    if callable(_fn) and not _name.startswith("_") and not getattr(_fn, "_typed", False):
        setattr(MathTensorMethods, _name, typed_errors(_fn))
