"""Typed errors of scaled-dot-product attention.

Each error subclasses :class:`tdx.TdxError` and the builtin torch raises in the same
situation (torch raises ``RuntimeError`` for bad attention inputs and for "no available
kernel"). This module must never import a framework.
"""

from __future__ import annotations

from .._errors import DtypeError, ShapeError, TdxError, TdxValueError

__all__ = ["SDPAError", "NoKernelError", "AttentionShapeError", "AttentionDtypeError",
           "AttentionValueError"]


class SDPAError(TdxError, RuntimeError):
    """Arguments of ``scaled_dot_product_attention`` that may not be combined."""


class NoKernelError(SDPAError):
    """No attention kernel is both enabled and able to run the inputs.

    Attributes:
        reasons: ``{SDPBackend: reason}`` for every kernel that was considered and refused.
    """

    def __init__(self, message: str, reasons: dict | None = None):
        super().__init__(message)
        self.reasons = dict(reasons or {})


class AttentionShapeError(ShapeError):
    """Query, key, value or mask shapes that do not fit together."""


class AttentionDtypeError(DtypeError, RuntimeError):
    """A dtype attention does not accept (torch raises ``RuntimeError``; tdx's dtype errors are
    ``TypeError``s: this is both)."""


class AttentionValueError(TdxValueError):
    """An argument value out of range (``dropout_p`` outside [0, 1], a bad ``scale``)."""
