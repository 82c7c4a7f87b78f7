"""torch's ``torch._check*`` family: the condition checks that torch's own Python code and libraries (transformers'
model code, its exporters) call, with torch's error types and messages.

``_check(cond, message)`` raises ``RuntimeError`` (a :class:`tdx.TdxRuntimeError`) when ``cond`` is False; its
siblings raise ``IndexError``, ``ValueError``, ``TypeError``, ``NotImplementedError``, and ``_check_with`` the
type it is given. ``message`` is a callable returning the text (evaluated only on failure); ``cond`` must be a
bool (``_check_tensor_all``: a bool tensor). tdx traces nothing, so a condition is always a concrete value. This
module must never import a framework.
"""

from __future__ import annotations

import builtins
import warnings

from .. import _dtypes as D
from .._errors import TdxIndexError, TdxNotImplementedError, TdxRuntimeError, TdxTypeError, TdxValueError
from .tensor import Tensor

__all__ = ["_check", "_check_with", "_check_index", "_check_value", "_check_type", "_check_not_implemented",
           "_check_is_size", "_check_tensor_all", "_check_tensor_all_with"]

_DEFAULT = ("Expected cond to be True, but got False. (Could this error message be improved? If so, please report "
            "an enhancement request to PyTorch.)")


def _check_with(error_type, cond, message=None) -> None:
    """Raise ``error_type(message())`` when ``cond`` is False.

    Raises:
        TdxTypeError: ``cond`` is not a bool, or ``message`` is not callable.
    """
    if not isinstance(cond, builtins.bool):
        raise TdxTypeError(f"cond must be a bool, but got {type(cond)}")
    if cond:
        return
    if message is None:
        text = _DEFAULT
    elif not callable(message):
        raise TdxTypeError("message must be a callable")
    else:
        text = str(message())
    raise error_type(text)


def _check(cond, message=None) -> None:
    """``RuntimeError`` unless ``cond`` (see :func:`_check_with`)."""
    _check_with(TdxRuntimeError, cond, message)


def _check_index(cond, message=None) -> None:
    """``IndexError`` unless ``cond``."""
    _check_with(TdxIndexError, cond, message)


def _check_value(cond, message=None) -> None:
    """``ValueError`` unless ``cond``."""
    _check_with(TdxValueError, cond, message)


def _check_type(cond, message=None) -> None:
    """``TypeError`` unless ``cond``."""
    _check_with(TdxTypeError, cond, message)


def _check_not_implemented(cond, message=None) -> None:
    """``NotImplementedError`` unless ``cond``."""
    _check_with(TdxNotImplementedError, cond, message)


def _check_is_size(i, message=None, *, max=None) -> None:  # noqa: A002 - torch's name
    """``RuntimeError`` unless ``0 <= i`` (and ``i <= max``); deprecated in torch, which warns."""
    warnings.warn("_check_is_size will be removed in a future PyTorch release along with guard_size_oblivious.     "
                  "Use _check(i >= 0) instead.", FutureWarning, stacklevel=2)
    _check(i >= 0, message)
    if max is not None:
        _check(i <= max, message)


def _check_tensor_all_with(error_type, cond, message=None) -> None:
    """``error_type`` unless every element of the bool tensor ``cond`` is True.

    Raises:
        TdxTypeError: ``cond`` is not a tensor, or not a bool one.
    """
    if not isinstance(cond, Tensor):
        raise TdxTypeError(f"cond must be a tensor, but got {type(cond)}")
    if cond.dtype is not D.bool_:
        raise TdxTypeError(f"cond tensor must have dtype torch.bool, but got {cond.dtype}")
    _check_with(error_type, builtins.bool(cond.all().item()), message)


def _check_tensor_all(cond, message=None) -> None:
    """``RuntimeError`` unless every element of the bool tensor ``cond`` is True."""
    _check_tensor_all_with(TdxRuntimeError, cond, message)
