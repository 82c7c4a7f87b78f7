"""The two error classes of tdx's core that ``tdx`` does not export yet (``TdxRuntimeError`` and
``TdxNotImplementedError``), for the nn modules and functions added beside the original ones.

This is the one place the nn layer/loss code reaches into a private core module; when the
core exports these names, only this file changes. It must never import torch or mlx.
"""

from __future__ import annotations

import tdx

try:
    TdxRuntimeError = tdx.TdxRuntimeError
    TdxNotImplementedError = tdx.TdxNotImplementedError
except AttributeError:  # not exported (yet): the core's private home of the error classes
    from ..._errors import TdxNotImplementedError, TdxRuntimeError

__all__ = ["TdxRuntimeError", "TdxNotImplementedError"]
