"""torch.nn.functional's dispatch and argument helpers, as tdx has them.

``has_torch_function*`` and ``handle_torch_function`` are the ``__torch_function__`` protocol of
:mod:`tdx._tensor.subclassing`, for library functions that dispatch themselves; ``boolean_dispatch`` and
``assert_int_or_pair`` behave as torch's. ``Callable``, ``Optional``, ``Tensor`` and ``DType`` are the names
torch's module re-exports. This module must never import torch or mlx.
"""

from __future__ import annotations

from typing import Callable, Optional

import tdx
from ..._errors import TdxTypeError
from ..._tensor.subclassing import overloaded_arguments

# the functions; Callable, Optional, Tensor and DType are importable names, not part of __all__ (as torch's)
__all__ = ["has_torch_function", "has_torch_function_unary", "has_torch_function_variadic", "handle_torch_function",
           "boolean_dispatch", "assert_int_or_pair"]

Tensor = tdx.Tensor
DType = tdx.dtype


def has_torch_function(relevant_args) -> bool:
    """Whether any of ``relevant_args`` overrides ``__torch_function__`` (a tensor subclass that does not opt
    out, or another type defining it), while the protocol is on in this thread."""
    return bool(overloaded_arguments(tuple(relevant_args), {})[0])


def has_torch_function_unary(arg) -> bool:
    """:func:`has_torch_function` of one argument."""
    return bool(overloaded_arguments((arg,), {})[0])


def has_torch_function_variadic(*args) -> bool:
    """:func:`has_torch_function` of the arguments."""
    return bool(overloaded_arguments(args, {})[0])


def handle_torch_function(public_api, relevant_args, *args, **kwargs):
    """Hand ``public_api(*args, **kwargs)`` to the ``__torch_function__`` of ``relevant_args``' overriding types,
    subclasses first, as torch's; the first answer other than ``NotImplemented`` is returned.

    Raises:
        TdxTypeError: every override returned ``NotImplemented`` (torch's message).
    """
    found, kinds = overloaded_arguments(tuple(relevant_args), {})
    for a in found:
        out = type(a).__torch_function__(public_api, tuple(kinds), args, kwargs)
        if out is not NotImplemented:
            return out
    name = f"{getattr(public_api, '__module__', 'torch')}.{getattr(public_api, '__name__', public_api)}"
    raise TdxTypeError(f"no implementation found for '{name}' on types that implement __torch_function__: "
                       f"{list(kinds)}")


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
