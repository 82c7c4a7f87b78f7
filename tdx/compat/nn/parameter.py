"""``tdx.nn.parameter``: ``Parameter``, ``Buffer`` and the uninitialized (lazy) parameter.

A ``Parameter`` is a real ``tdx.Tensor`` subclass holding the same two slots (``_n`` native,
``_ex`` executor) plus an instance ``__dict__`` (torch lets code hang attributes on
parameters). The core dispatches on ``x.__class__ is Tensor`` in its hot paths, so these
classes report ``__class__`` as ``tdx.Tensor`` to tdx's own modules: every op, the MLX tape and
the view machinery then treat a parameter exactly as the plain tensor it is, while the program
(``p.__class__``, as torch's), ``type(p)`` and ``isinstance(p, Parameter)`` see Parameter. Results of ops on a parameter are plain
tensors, as torch's.

``Parameter(data)`` aliases ``data``'s memory on torch executors (as torch's
``_make_subclass``); on MLX, whose arrays are immutable, it takes ``data``'s current value
(a later in-place write to ``data`` is not seen by the parameter).

This module must never import torch or mlx.
"""

from __future__ import annotations

from collections import OrderedDict

import tdx

from ..._errors import TdxRuntimeError
from ..._tensor.subclassing import disabled_torch_function_impl as _disabled_torch_function_impl, reported_class

__all__ = ["Parameter", "UninitializedParameter", "is_lazy", "Buffer", "UninitializedBuffer",
           "UninitializedTensorMixin"]

_Tensor = tdx.Tensor
set_data = _Tensor.data.fset  # ``t.data = value`` for any tensor (tdx/_tensor/tensor.py), re-exported
_new = object.__new__
_set_class = object.__dict__["__class__"].__set__


def _assign_class(self, cls):
    _set_class(self, cls)


_as_tensor = property(reported_class, _assign_class,
                      doc="``tdx.Tensor`` to tdx's own code, which dispatches on the exact class; the true class to "
                          "the program, as ``type()``.")


def _adopt(cls, data, requires_grad: bool):
    """A new ``cls`` instance holding ``data``'s value without its autograd history."""
    if not isinstance(data, _Tensor):
        raise tdx.TdxTypeError(f"{cls.__name__}(): argument 'data' must be a Tensor, not {type(data).__name__}")
    t = _new(cls)
    ex = data._ex
    t._ex = ex
    t._ag = t._view = t._dt = None  # as wrap's
    t._n = data._n.detach() if ex.caps.native_autograd else data._n
    if requires_grad:
        t.requires_grad_(True)
    return t


class Parameter(_Tensor):
    """A tensor that is a module parameter: assigning it as a ``Module`` attribute registers it.

    Args:
        data (Tensor, optional): the parameter's value; an empty float tensor when omitted.
        requires_grad (bool, optional): whether it requires gradient. ``no_grad`` does not
            change this default. Default: ``True``.
    """

    __class__ = _as_tensor
    __torch_function__ = _disabled_torch_function_impl  # torch's Parameter: results of ops are plain tensors

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            data = tdx.empty(0)
        return _adopt(cls, data, bool(requires_grad))

    def __init__(self, *args, **kwargs):
        pass  # everything happens in __new__ (tdx.Tensor has no public constructor)

    @property
    def data(self):
        """The parameter's value as a plain tensor sharing its memory (no gradient tracking)."""
        return _Tensor.data.fget(self)

    @data.setter
    def data(self, value) -> None:
        set_data(self, value)

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        # torch's Parameter.__deepcopy__: the data and requires_grad; attributes set on it are not copied
        result = type(self)(self.data.clone(), self.requires_grad)
        memo[id(self)] = result
        return result

    def __repr__(self) -> str:
        return "Parameter containing:\n" + _Tensor.__repr__(self)

    def __reduce_ex__(self, protocol):
        return (_rebuild_parameter, (self.data, self.requires_grad, OrderedDict(), dict(self.__dict__)))


def _rebuild_parameter(data, requires_grad, hooks, state=None):
    """Unpickle a :class:`Parameter` (the hooks slot mirrors torch's and is not restored)."""
    p = Parameter(data, requires_grad)
    if state:
        p.__dict__.update(state)
    return p


class Buffer(_Tensor):
    """A tensor that is module state but not a parameter (e.g. BatchNorm's running mean).

    Assigning it as a ``Module`` attribute registers it as a buffer.

    Args:
        data (Tensor, optional): the buffer's value; an empty float tensor when omitted.
        persistent (bool, optional): whether it is part of the module's ``state_dict``.
            Default: ``True``.
    """

    __class__ = _as_tensor
    __torch_function__ = _disabled_torch_function_impl

    def __new__(cls, data=None, *, persistent=True):
        if data is None:
            data = tdx.empty(0)
        t = _adopt(cls, data, data.requires_grad)
        t.persistent = persistent
        t._is_buffer = True
        return t

    def __init__(self, *args, **kwargs):
        pass

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(self.detach().clone(), persistent=self.persistent)
        if self.requires_grad:
            result.requires_grad_(True)
        memo[id(self)] = result
        return result

    def __reduce_ex__(self, protocol):
        return (_rebuild_buffer, (self.detach(), self.requires_grad, self.persistent))


def _rebuild_buffer(data, requires_grad, persistent):
    b = Buffer(data, persistent=persistent)
    if requires_grad:
        b.requires_grad_(True)
    return b


_UNINIT_MESSAGE = ("Can't access the shape of an uninitialized parameter or buffer. This error usually happens in "
                   "`load_state_dict` when trying to load an uninitialized parameter into an initialized one. Call "
                   "`forward` to initialize the parameters before accessing their attributes.")


class UninitializedTensorMixin:
    """Behaviour shared by uninitialized parameters and buffers: no shape until ``materialize``."""

    def materialize(self, shape, device=None, dtype=None) -> None:
        """Give the tensor ``shape`` (uninitialized values) and turn it into ``cls_to_become``.

        Args:
            shape (tuple): the shape of the materialized tensor.
            device (optional): its device; the current one when omitted.
            dtype (optional): its dtype; the current one when omitted.
        """
        if device is None:
            device = self._ex.device
        if dtype is None:
            dtype = _Tensor.dtype.fget(self)
        set_data(self, tdx.empty(shape, device=device, dtype=dtype))
        self.__class__ = self.cls_to_become

    __slots__ = ()

    @property
    def shape(self):
        raise TdxRuntimeError(_UNINIT_MESSAGE)

    def size(self, dim=None):
        raise _uninit_error("size")

    def numel(self):
        raise _uninit_error("numel")

    def share_memory_(self):
        raise _runtime_error("Can't share memory on an uninitialized parameter or buffer. Call `forward` to "
                             "initialize the parameters before calling `module.share_memory()`.")

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"

    def __reduce_ex__(self, protocol):
        return (type(self), (self.requires_grad,))


def _runtime_error(message):
    return TdxRuntimeError(message)


def _uninit_error(what):
    return tdx.TdxValueError(f"Attempted to use an uninitialized parameter in {what}. This error happens when you "
                             "are using a `LazyModule` or explicitly manipulating "
                             "`torch.nn.parameter.UninitializedParameter` objects. When using LazyModules Call "
                             "`forward` with a dummy batch to initialize the parameters before calling torch "
                             "functions")


def is_lazy(param) -> bool:
    """Whether ``param`` is an :class:`UninitializedParameter` or :class:`UninitializedBuffer`."""
    return isinstance(param, UninitializedTensorMixin)


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    """A parameter whose shape is not known yet (lazy modules); ``materialize`` makes it a Parameter.

    Args:
        requires_grad (bool, optional): Default: ``True``.
        device (optional): device of the materialized parameter.
        dtype (optional): dtype of the materialized parameter.
    """

    cls_to_become = Parameter

    def __new__(cls, requires_grad=True, device=None, dtype=None):
        return _adopt(cls, tdx.empty(0, device=device, dtype=dtype), bool(requires_grad))

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(self.requires_grad, self._ex.device, _Tensor.dtype.fget(self))
        memo[id(self)] = result
        return result


class UninitializedBuffer(UninitializedTensorMixin, _Tensor):
    """A buffer whose shape is not known yet (lazy modules); ``materialize`` makes it a Tensor.

    Args:
        requires_grad (bool, optional): Default: ``False``.
        device (optional): device of the materialized buffer.
        dtype (optional): dtype of the materialized buffer.
    """

    __torch_function__ = _disabled_torch_function_impl

    __slots__ = ()  # the same layout as tdx.Tensor, so materialize can turn it into one
    __class__ = _as_tensor
    cls_to_become = _Tensor

    def __new__(cls, requires_grad=False, device=None, dtype=None):
        return _adopt(cls, tdx.empty(0, device=device, dtype=dtype), bool(requires_grad))

    def __init__(self, *args, **kwargs):
        pass

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(self.requires_grad, self._ex.device, _Tensor.dtype.fget(self))
        memo[id(self)] = result
        return result
