"""Tensor methods for the wider torch surface: gather/scatter, sorting, logic, linear algebra helpers.

A mixin of ``tdx.Tensor``; follows the conventions of ``tdx._tensor_methods`` (unwrap,
check executors, call the executor, wrap). Must never import a framework.
"""

from __future__ import annotations


class MoreTensorMethods:
    """Further ``tdx.Tensor`` methods (mixed into the class)."""

    __slots__ = ()
