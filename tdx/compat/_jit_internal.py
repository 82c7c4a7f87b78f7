"""``torch._jit_internal``: the decorators and types libraries import from TorchScript's internals.

tdx runs Python eagerly, so ``_copy_to_script_wrapper``, ``_overload`` and ``_overload_method`` return what they
are given; ``Future`` is ``tdx.futures.Future``; ``is_scripting`` is ``tdx.jit.is_scripting``. Never imports a
framework.
"""

from __future__ import annotations

from .._tensor.control_flow import Future
from .jit import _overload, _overload_method, is_scripting

__all__ = ["Future", "is_scripting"]


def _copy_to_script_wrapper(fn):
    """Mark a method for copying onto a module's TorchScript wrapper; eagerly, ``fn`` itself."""
    return fn


__all__ += ["_copy_to_script_wrapper", "_overload", "_overload_method"]
