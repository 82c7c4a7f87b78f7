"""torch.nn.functional's dispatch and argument helpers, as tdx has them.

tdx has no ``__torch_function__`` protocol: ``has_torch_function*`` answer False and
``handle_torch_function`` refuses; ``boolean_dispatch`` and ``assert_int_or_pair`` behave as
torch's. ``Callable``, ``Optional``, ``Tensor`` and ``DType`` are the names torch's module
re-exports. This module must never import torch or mlx.
"""

from __future__ import annotations

from typing import Callable, Optional

import tdx
from ..._errors import TdxNotImplementedError

# the functions; Callable, Optional, Tensor and DType are importable names, not part of __all__ (as torch's)
__all__ = ["has_torch_function", "has_torch_function_unary", "has_torch_function_variadic", "handle_torch_function",
           "boolean_dispatch", "assert_int_or_pair"]

Tensor = tdx.Tensor
DType = tdx.dtype


def has_torch_function(relevant_args) -> bool:
    """False: tdx tensors carry no ``__torch_function__`` overrides."""
    return False


def has_torch_function_unary(arg) -> bool:
    """False: tdx tensors carry no ``__torch_function__`` overrides."""
    return False


def has_torch_function_variadic(*args) -> bool:
    """False: tdx tensors carry no ``__torch_function__`` overrides."""
    return False


def handle_torch_function(public_api, relevant_args, *args, **kwargs):
    """Never reached in tdx (no overrides exist).

    Raises:
        TdxNotImplementedError: always, naming the API.
    """
    raise TdxNotImplementedError(f"handle_torch_function: tdx has no __torch_function__ overrides (called for "
                                 f"{getattr(public_api, '__name__', public_api)!r})")


def boolean_dispatch(arg_name, arg_index, default, if_true, if_false, module_name=None, func_name=None):
    """A function calling ``if_true`` or ``if_false`` by the boolean argument ``arg_name`` (at ``arg_index``)."""
    def fn(*args, **kwargs):
        if arg_name in kwargs:
            flag = kwargs[arg_name]
        elif arg_index < len(args):
            flag = args[arg_index]
        else:
            flag = default
        return if_true(*args, **kwargs) if flag else if_false(*args, **kwargs)

    if module_name is not None:
        fn.__module__ = module_name
    if func_name is not None:
        fn.__name__ = func_name
    return fn


def assert_int_or_pair(arg, arg_name, message) -> None:
    """Assert that ``arg`` is an int or a sequence of at least two values (torch's check).

    Raises:
        AssertionError: otherwise, with ``message`` formatted with ``arg_name``.
    """
    assert isinstance(arg, int) or len(arg) == 2, message.format(arg_name)
