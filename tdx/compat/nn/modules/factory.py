"""``tdx.nn.factory_kwargs`` (torch's helper that merges ``device``/``dtype``/``memory_format`` keyword
arguments with a ``factory_kwargs`` dict) and the deprecated ``Container`` module.
This module must never import torch or mlx.
"""

from __future__ import annotations

import warnings

import tdx
from .module import Module

__all__ = ["factory_kwargs", "Container"]

_SIMPLE = {"device", "dtype", "memory_format"}


def factory_kwargs(kwargs) -> dict:
    """The factory keyword arguments in ``kwargs``, merged with ``kwargs["factory_kwargs"]``.

    Raises:
        TdxTypeError: an unexpected key, or a key given both directly and in ``factory_kwargs``.
    """
    if kwargs is None:
        return {}
    expected = _SIMPLE | {"factory_kwargs"}
    if not kwargs.keys() <= expected:
        raise tdx.TdxTypeError(f"unexpected kwargs {kwargs.keys() - expected}")
    out = dict(kwargs.get("factory_kwargs", {}))
    for k in _SIMPLE:
        if k in kwargs:
            if k in out:
                raise tdx.TdxTypeError(f"{k} specified twice, in **kwargs and in factory_kwargs")
            out[k] = kwargs[k]
    return out


class Container(Module):
    """Deprecated: a Module holding the keyword-argument modules as children (warns as torch does)."""

    def __init__(self, **kwargs) -> None:
        super().__init__()
        warnings.warn("nn.Container is deprecated. All of it's functionality is now implemented in nn.Module. "
                      "Subclass that instead.", stacklevel=2)
        for key, value in kwargs.items():
            self.add_module(key, value)
