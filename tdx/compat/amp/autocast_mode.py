"""``torch.amp.autocast_mode``: the ``autocast`` region class, ``custom_fwd``/``custom_bwd`` for custom autograd
Functions, and ``is_autocast_available``, with torch's semantics on every executor.

``autocast`` is the one class ``tdx.autocast`` names (:mod:`tdx.compat.amp.autocast_state` keeps its state and
applies torch's per-op policy where the executor has no autocast of its own). This module must never import a framework.
"""

from __future__ import annotations

import functools

from ... import _dtypes as D
from ..._errors import TdxValueError
from .autocast_state import autocast, covers, get_autocast_dtype, is_autocast_available, is_autocast_enabled

__all__ = ["autocast", "custom_fwd", "custom_bwd", "is_autocast_available"]


def device_spelling(device_type: str, module: str, default_dtype):
    """torch's deprecated ``torch.<device_type>.amp.autocast(enabled, dtype, cache_enabled)`` class: the region
    of ``autocast(device_type, ...)``, warning torch's ``FutureWarning`` when made.

    Args:
        device_type: ``"cuda"`` or ``"cpu"``.
        module: the module the class is named in.
        default_dtype: a callable giving the dtype when none is passed.
    """
    import warnings

    def __init__(self, enabled=True, dtype=None, cache_enabled=True):
        warnings.warn(f"`torch.{device_type}.amp.autocast(args...)` is deprecated. Please use "
                      f"`torch.amp.autocast('{device_type}', args...)` instead.", FutureWarning, stacklevel=2)
        autocast.__init__(self, device_type, dtype=default_dtype() if dtype is None else dtype, enabled=enabled,
                          cache_enabled=cache_enabled)

    doc = f"``torch.{device_type}.amp.autocast(args...)``: deprecated for ``torch.amp.autocast('{device_type}', ...)``."
    return type("autocast", (autocast,), {"__init__": __init__, "__doc__": doc, "__module__": module})


def _cast(value, device_type: str, dtype):
    """``value`` with its floating (not float64) tensors on ``device_type`` cast to ``dtype``, through lists,
    tuples and dicts (as torch's ``_cast``)."""
    from ..._tensor.tensor import Tensor

    if isinstance(value, Tensor):
        on_device = value.device.type == device_type or covers(device_type, value._ex)
        if on_device and value.dtype.is_floating_point and value.dtype is not D.float64:
            return value.to(dtype)
        return value
    if isinstance(value, (str, bytes)):
        return value
    if isinstance(value, dict):
        return {_cast(k, device_type, dtype): _cast(v, device_type, dtype) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        out = (_cast(v, device_type, dtype) for v in value)
        return type(value)(out) if isinstance(value, list) or type(value) is tuple else tuple(out)
    return value


def _need_str(device_type, api: str) -> None:
    if not isinstance(device_type, str):
        raise TdxValueError(f"{api}(): expected `device_type` of type `str`, got: `{type(device_type)}`")


def custom_fwd(fwd=None, *, device_type, cast_inputs=None):
    """Decorate a custom ``Function.forward``: it runs under the autocast state of the call (or, with
    ``cast_inputs``, with autocast off and its floating inputs on ``device_type`` cast to ``cast_inputs``
    when a region is on); the matching :func:`custom_bwd` replays that state in ``backward``.

    Raises:
        TdxValueError: ``device_type`` is not a string.
    """
    _need_str(device_type, "custom_fwd")
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args, **kwargs):
        args[0]._dtype = get_autocast_dtype(device_type)
        if cast_inputs is None:
            args[0]._fwd_used_autocast = is_autocast_enabled(device_type)
            return fwd(*args, **kwargs)
        in_region = is_autocast_enabled(device_type)
        args[0]._fwd_used_autocast = False
        if in_region:
            with autocast(device_type=device_type, enabled=False):
                return fwd(*_cast(args, device_type, cast_inputs), **_cast(kwargs, device_type, cast_inputs))
        return fwd(*args, **kwargs)

    return decorate_fwd


def custom_bwd(bwd=None, *, device_type):
    """Decorate a custom ``Function.backward`` to run under the autocast state its :func:`custom_fwd` saw.

    Raises:
        TdxValueError: ``device_type`` is not a string.
    """
    _need_str(device_type, "custom_bwd")
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args, **kwargs):
        with autocast(device_type=device_type, enabled=args[0]._fwd_used_autocast, dtype=args[0]._dtype):
            return bwd(*args, **kwargs)

    return decorate_bwd
