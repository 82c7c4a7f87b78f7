"""``tdx.nn.utils.parametrize``: a module's tensor computed on access from underlying
originals (``register_parametrization``), as torch's.

The module's class is swapped for a generated subclass ``Parametrized<Cls>`` holding a
property per parametrized name; the originals live under ``module.parametrizations[name]``
(``original`` or ``original0``, ``original1``...), so state dict keys match torch's.
``set_`` of torch is ``tdx.nn.parameter.set_data`` here (the original keeps its identity).
Must never import torch or mlx.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import contextmanager
from copy import deepcopy

import tdx

from ...._errors import TdxRuntimeError
from ..modules.container import ModuleDict, ModuleList
from ..parameter import Parameter, set_data

__all__ = ["cached", "ParametrizationList", "register_parametrization", "is_parametrized",
           "remove_parametrizations", "type_before_parametrizations", "transfer_parametrizations_and_params"]

_cache_enabled = 0
_cache: dict = {}


@contextmanager
def cached():
    """Within this context each parametrized tensor is computed once and reused."""
    global _cache_enabled, _cache
    _cache_enabled += 1
    try:
        yield
    finally:
        _cache_enabled -= 1
        if not _cache_enabled:
            _cache = {}


def _register_parameter_or_buffer(module, name, value) -> None:
    if isinstance(value, Parameter):
        module.register_parameter(name, value)
    else:
        module.register_buffer(name, value)


def _set(dest, src) -> None:
    if dest is not src:
        set_data(dest, src)


def _value_error(message):
    return tdx.TdxValueError(message)


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor, applied in order, and the original tensor(s) they act on.

    Built by :func:`register_parametrization`; not for direct use.
    """

    def __init__(self, modules, original, unsafe: bool = False) -> None:
        if len(modules) == 0:
            raise _value_error("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        original_shape, original_dtype = original.shape, original.dtype
        with tdx.no_grad():
            new = original
            for module in reversed(self):
                if hasattr(module, "right_inverse"):
                    try:
                        new = module.right_inverse(new)
                    except NotImplementedError:
                        pass
        if not isinstance(new, tdx.Tensor) and not isinstance(new, Sequence):
            raise _value_error("'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). "
                               f"Got {type(new).__name__}")
        self.is_tensor = isinstance(new, tdx.Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            if original.dtype != new.dtype:
                raise _value_error("When `right_inverse` outputs one tensor, it may not change the dtype.\n"
                                   f"original.dtype: {original.dtype}\nright_inverse(original).dtype: {new.dtype}")
            if original.device != new.device:
                raise _value_error("When `right_inverse` outputs one tensor, it may not change the device.\n"
                                   f"original.device: {original.device}\n"
                                   f"right_inverse(original).device: {new.device}")
            with tdx.no_grad():
                _set(original, new)
            _register_parameter_or_buffer(self, "original", original)
        else:
            for i, originali in enumerate(new):
                if not isinstance(originali, tdx.Tensor):
                    raise _value_error("'right_inverse' must return a Tensor or a Sequence of tensors (list, "
                                       f"tuple...). Got element {i} of the sequence with type "
                                       f"{type(originali).__name__}.")
                if isinstance(original, Parameter):
                    originali = Parameter(originali, original.requires_grad)
                originali.requires_grad_(original.requires_grad)
                _register_parameter_or_buffer(self, f"original{i}", originali)
        if not self.unsafe:
            z = self()
            if not isinstance(z, tdx.Tensor):
                raise _value_error(f"A parametrization must return a tensor. Got {type(z).__name__}.")
            if z.dtype != original_dtype:
                raise _value_error("Registering a parametrization may not change the dtype of the tensor, unless "
                                   f"`unsafe` flag is enabled.\nunparametrized dtype: {original_dtype}\n"
                                   f"parametrized dtype: {z.dtype}")
            if z.shape != original_shape:
                raise _value_error("Registering a parametrization may not change the shape of the tensor, unless "
                                   f"`unsafe` flag is enabled.\nunparametrized shape: {original_shape}\n"
                                   f"parametrized shape: {z.shape}")

    def right_inverse(self, value) -> None:
        """Set the original(s) so that the parametrized tensor equals ``value`` (``module.name = value``).

        Raises:
            TdxRuntimeError: a parametrization has no ``right_inverse``.
            TdxValueError: the inverse has the wrong type, dtype or number of tensors.
        """
        with tdx.no_grad():
            for module in reversed(self):
                if hasattr(module, "right_inverse"):
                    value = module.right_inverse(value)
                else:
                    raise TdxRuntimeError(f"parametrization {type(module).__name__} does not implement "
                                          "right_inverse.")
            if self.is_tensor:
                if not isinstance(value, tdx.Tensor):
                    raise _value_error(f"`right_inverse` should return a tensor. Got {type(value).__name__}")
                if value.dtype != self.original.dtype:
                    raise _value_error(f"The tensor returned by `right_inverse` has dtype {value.dtype} while "
                                       f"`original` has dtype {self.original.dtype}")
                _set(self.original, value)
            else:
                if not isinstance(value, Sequence):
                    raise _value_error("'right_inverse' must return a sequence of tensors. "
                                       f"Got {type(value).__name__}.")
                if len(value) != self.ntensors:
                    raise _value_error("'right_inverse' must return a sequence of tensors of length "
                                       f"{self.ntensors}. Got a sequence of length {len(value)}.")
                for i, tensor in enumerate(value):
                    original_i = getattr(self, f"original{i}")
                    if not isinstance(tensor, tdx.Tensor):
                        raise _value_error(f"`right_inverse` must return a sequence of tensors. Got element {i} "
                                           f"of type {type(tensor).__name__}")
                    if original_i.dtype != tensor.dtype:
                        raise _value_error(f"Tensor {i} returned by `right_inverse` has dtype {tensor.dtype} "
                                           f"while `original{i}` has dtype {original_i.dtype}")
                    _set(original_i, tensor)

    def forward(self):
        if self.is_tensor:
            x = self[0](self.original)
        else:
            x = self[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        i = 1
        while hasattr(self, str(i)):
            x = self[i](x)
            i += 1
        return x


def _inject_new_class(module) -> None:
    cls = module.__class__

    def default_deepcopy(self, memo):
        obj = memo.get(id(self), None)
        if obj is not None:
            return obj
        replica = self.__new__(self.__class__)
        memo[id(self)] = replica
        replica.__dict__ = deepcopy(self.__dict__, memo)
        return replica

    def getstate(self):
        raise TdxRuntimeError("Serialization of parametrized modules is only supported through state_dict(). See:\n"
                              "https://pytorch.org/tutorials/beginner/saving_loading_models.html"
                              "#saving-loading-a-general-checkpoint-for-inference-and-or-resuming-training")

    dct = {"__getstate__": getstate}
    if not hasattr(cls, "__deepcopy__"):
        dct["__deepcopy__"] = default_deepcopy
    module.__class__ = type(f"Parametrized{cls.__name__}", (cls,), dct)


def _inject_property(module, tensor_name: str) -> None:
    if hasattr(module, tensor_name):
        raise tdx.TdxError(f"Module already has an attribute named '{tensor_name}'")

    def get_parametrized(self):
        parametrization = self.parametrizations[tensor_name]
        if _cache_enabled:
            key = (id(self), tensor_name)
            tensor = _cache.get(key)
            if tensor is None:
                tensor = parametrization()
                _cache[key] = tensor
            return tensor
        return parametrization()

    def set_original(self, value) -> None:
        self.parametrizations[tensor_name].right_inverse(value)

    setattr(module.__class__, tensor_name, property(get_parametrized, set_original))


def register_parametrization(module, tensor_name: str, parametrization, *, unsafe: bool = False):
    """Make ``module.<tensor_name>`` the output of ``parametrization`` applied to the stored original.

    A second registration on the same name chains after the first. ``parametrization`` may
    define ``right_inverse`` (the initial original, and what assignment calls).

    Args:
        module: the module holding the parameter or buffer.
        tensor_name: its name.
        parametrization: a Module mapping the original(s) to the tensor.
        unsafe: skip the dtype/shape consistency checks.

    Returns:
        ``module``.

    Raises:
        TdxValueError: ``tensor_name`` is no parameter or buffer, or a check fails.
    """
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:
            y = getattr(module, tensor_name)
            x = parametrization(y)
            if not isinstance(x, tdx.Tensor):
                raise _value_error(f"A parametrization must return a tensor. Got {type(x).__name__}.")
            if x.dtype != y.dtype:
                raise _value_error("Registering a parametrization may not change the dtype of the tensor, unless the "
                                   f"`unsafe` flag is enabled.\nmodule.{tensor_name}.dtype: {y.dtype}\n"
                                   f"parametrization(module.{tensor_name}).dtype: {x.dtype}")
            if x.shape != y.shape:
                raise _value_error("Registering a parametrization may not change the shape of the tensor, unless the "
                                   f"`unsafe` flag is enabled.\nmodule.{tensor_name}.shape: {y.shape}\n"
                                   f"parametrization(module.{tensor_name}).shape: {x.shape}")
            if hasattr(parametrization, "right_inverse"):
                try:
                    z = parametrization.right_inverse(x)
                except NotImplementedError:
                    pass
                else:
                    if not isinstance(z, tdx.Tensor):
                        raise _value_error("parametrization.right_inverse must return a tensor. Got: "
                                           f"{type(z).__name__}")
                    if z.dtype != y.dtype:
                        raise _value_error("The tensor returned by parametrization.right_inverse must have the same "
                                           f"dtype as module.{tensor_name}, unless the `unsafe` flag is enabled.\n"
                                           f"module.{tensor_name}.dtype: {y.dtype}\nreturned dtype: {z.dtype}")
                    if z.shape != y.shape:
                        raise _value_error("The tensor returned by parametrization.right_inverse must have the same "
                                           f"shape as module.{tensor_name}, unless the `unsafe` flag is enabled.\n"
                                           f"module.{tensor_name}.shape: {y.shape}\nreturned shape: {z.shape}")
        module.parametrizations[tensor_name].append(parametrization)
        module.parametrizations[tensor_name].unsafe |= unsafe
    elif tensor_name in module._buffers or tensor_name in module._parameters:
        original = getattr(module, tensor_name)
        parametrizations = ParametrizationList([parametrization], original, unsafe=unsafe)
        delattr(module, tensor_name)
        if not is_parametrized(module):
            _inject_new_class(module)
            module.parametrizations = ModuleDict()
        _inject_property(module, tensor_name)
        module.parametrizations[tensor_name] = parametrizations
    else:
        raise _value_error(f"Module '{module}' does not have a parameter, a buffer, or a parametrized element with "
                           f"name '{tensor_name}'")
    return module


def is_parametrized(module, tensor_name=None) -> bool:
    """Whether ``module`` has any parametrization (or one on ``tensor_name``)."""
    parametrizations = getattr(module, "parametrizations", None)
    if parametrizations is None or not isinstance(parametrizations, ModuleDict):
        return False
    if tensor_name is None:
        return len(parametrizations) > 0
    return tensor_name in parametrizations


def remove_parametrizations(module, tensor_name: str, leave_parametrized: bool = True):
    """Remove the parametrizations on ``tensor_name``; it becomes a plain parameter or buffer again.

    Args:
        module: the parametrized module.
        tensor_name: the parametrized name.
        leave_parametrized: keep the current parametrized value (else the original's).

    Returns:
        ``module`` (its class restored when nothing else is parametrized).

    Raises:
        TdxValueError: nothing is parametrized under ``tensor_name``, or ``leave_parametrized=False``
            with several originals.
    """
    if not is_parametrized(module, tensor_name):
        raise _value_error(f"Module {module} does not have a parametrization on {tensor_name}")
    parametrizations = module.parametrizations[tensor_name]
    if parametrizations.is_tensor:
        original = parametrizations.original
        if leave_parametrized:
            with tdx.no_grad():
                t = getattr(module, tensor_name)
                _set(original, t)
    else:
        if not leave_parametrized:
            raise _value_error("Cannot leave unparametrized (`leave_parametrized=False`) a tensor that is "
                               "parametrized in terms of a sequence of tensors.")
        t = getattr(module, tensor_name)
        original = Parameter(t.detach(), True) if t.requires_grad else t.detach()
    delattr(module.__class__, tensor_name)
    del module.parametrizations[tensor_name]
    _register_parameter_or_buffer(module, tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = module.__class__.__bases__[0]
    return module


def type_before_parametrizations(module) -> type:
    """The module's class before any parametrization was registered."""
    if is_parametrized(module):
        return module.__class__.__bases__[0]
    return type(module)


def transfer_parametrizations_and_params(from_module, to_module, tensor_name=None):
    """Copy the parametrizations (and their originals) of ``from_module`` onto ``to_module``.

    Args:
        from_module: the parametrized source.
        to_module: the target; it must have the named parameters, or they are created.
        tensor_name: transfer only this name (all parametrized names when None).

    Returns:
        ``to_module``.
    """
    if not is_parametrized(from_module):
        return to_module
    names = [tensor_name] if tensor_name is not None else list(from_module.parametrizations)
    for name in names:
        if not hasattr(to_module, name):
            setattr(to_module, name, Parameter(getattr(from_module, name)))
        for param_func in from_module.parametrizations[name]:
            register_parametrization(to_module, name, param_func)
        with tdx.no_grad():
            src = from_module.parametrizations[name]
            dst = to_module.parametrizations[name]
            if src.is_tensor:
                _set(dst.original, src.original.detach().clone())
            else:
                for i in range(src.ntensors):
                    _set(getattr(dst, f"original{i}"), getattr(src, f"original{i}").detach().clone())
    return to_module
