"""torch's symbolic-shape helpers at top level (``tdx.sym_int``, ``tdx.sym_max``, ``tdx.SymInt``...).

tdx runs eagerly and never traces shapes, so no value is ever symbolic: the ``sym_*``
functions have the plain-Python meaning torch gives them on ordinary numbers, and the
``SymInt``/``SymFloat``/``SymBool`` types exist for ``isinstance`` checks (which answer False)
but cannot be built. This module must never import a framework.
"""

from __future__ import annotations

import builtins
import math

from .._errors import TdxRuntimeError, UnsupportedOpError

__all__ = ["SymInt", "SymFloat", "SymBool", "sym_int", "sym_float", "sym_not", "sym_max", "sym_min", "sym_sqrt",
           "sym_sum", "sym_ite", "sym_fresh_size", "sym_constrain_range", "sym_constrain_range_for_size"]

_INT64_MAX = (1 << 63) - 1


class _Symbolic:
    """A symbolic number of torch's tracer; tdx never makes one."""

    __slots__ = ()

    def __new__(cls, *args, **kwargs):
        raise UnsupportedOpError(f"tdx.{cls.__name__} cannot be built: tdx runs eagerly and traces no symbolic "
                                 "shapes, so sizes are plain Python ints")


class SymInt(_Symbolic):
    """torch's symbolic int (``isinstance(3, tdx.SymInt)`` is False, as in torch)."""

    __slots__ = ()


class SymFloat(_Symbolic):
    """torch's symbolic float."""

    __slots__ = ()


class SymBool(_Symbolic):
    """torch's symbolic bool."""

    __slots__ = ()


def sym_int(a) -> int:
    """``int(a)``: truncates a float toward zero, as torch on plain numbers."""
    return builtins.int(a)


def sym_float(a) -> float:
    """``float(a)``."""
    return builtins.float(a)


def sym_not(a) -> bool:
    """``not a``."""
    return not a


def sym_max(a, b):
    """``max(a, b)``, a float when either is a float (torch's rule)."""
    out = builtins.max(a, b)
    return builtins.float(out) if isinstance(a, float) or isinstance(b, float) else out


def sym_min(a, b):
    """``min(a, b)``, a float when either is a float (torch's rule)."""
    out = builtins.min(a, b)
    return builtins.float(out) if isinstance(a, float) or isinstance(b, float) else out


def sym_sqrt(a) -> float:
    """``math.sqrt(a)``."""
    return math.sqrt(a)


def sym_sum(args):
    """The sum of an iterable of numbers (``sum(args)``)."""
    return builtins.sum(args)


def sym_ite(b, t, f):
    """``t if b else f``."""
    return t if b else f


def sym_fresh_size(expr):
    """``expr`` itself: a fresh unbacked size only means something while tracing."""
    return expr


def sym_constrain_range(size, *, min=None, max=None) -> None:  # noqa: A002 - torch's names
    """Check that ``min <= size <= max`` (torch's eager check).

    Raises:
        TdxRuntimeError: ``size`` is out of the range.
    """
    lo = -_INT64_MAX - 1 if min is None else min
    hi = _INT64_MAX if max is None else max
    if not lo <= size <= hi:
        raise TdxRuntimeError(f"Invalid value range for {size} between [{lo}, {hi}].")


def sym_constrain_range_for_size(size, min=None, max=None) -> None:  # noqa: A002 - torch's names
    """Check that ``size`` is a valid size in ``[max(min, 0), max]``.

    Raises:
        TdxRuntimeError: ``size`` is out of the range.
    """
    sym_constrain_range(size, min=0 if min is None else builtins.max(min, 0), max=max)
