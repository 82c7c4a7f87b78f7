"""``tdx.nn.Module``: torch's module base class over tdx tensors.

Registration of parameters, buffers and submodules by attribute assignment; iteration
(``named_parameters``...); ``state_dict``/``load_state_dict`` (from :mod:`.state_dict`, mixed
in); train/eval; device and dtype conversion through ``_apply``
(parameters keep their identity, as torch's default); forward and state-dict hooks; repr.

Backward hooks on modules (``register_full_backward_hook`` and friends) are not provided:
they raise ``tdx.UnsupportedOpError``. Module-global hooks are not provided either.

This module must never import torch or mlx: it works through tdx tensors only.
"""

from __future__ import annotations

import warnings
from collections import OrderedDict

import tdx

from .... import _dtypes
from ...._errors import TdxRuntimeError
from ...._tensor.tensor import Tensor
from ..parameter import Buffer, Parameter, set_data
from .hooks import RemovableHandle
from .state_dict import _EXTRA_STATE_KEY_SUFFIX, StateDictMixin, _IncompatibleKeys  # noqa: F401 - torch's module exposes them

__all__ = ["Module", "TdxKeyError", "TdxAttributeError"]


class TdxKeyError(tdx.TdxError, KeyError):
    """A bad name for a parameter, buffer or submodule (torch raises ``KeyError``)."""


class TdxAttributeError(tdx.TdxError, AttributeError):
    """A missing attribute or submodule path (torch raises ``AttributeError``)."""


def _settle(result) -> None:
    """Start computing a block's output where its executor is lazy (MLX builds a graph that runs when a value is
    read): the block's work then runs while Python builds the next block, instead of all of a step's graph
    waiting for the step's first read. Values are unchanged; eager executors are not asked. The output is a
    tensor, a tuple led by one (an attention block's ``(output, weights)``) or a dict whose first value is one
    (a model's output record: its hidden states or logits); anything else is left alone."""
    if result.__class__ is not Tensor:
        if result.__class__ is tuple:
            if not result:
                return
            result = result[0]
        elif isinstance(result, dict):
            for result in result.values():  # the first value only
                break
            else:
                return
        if result.__class__ is not Tensor:
            return
    ex = result._ex
    if ex.caps.lazy:
        ex.settle(result._n)


def _typename(obj) -> str:
    """torch.typename: the qualified type name of ``obj`` (``tdx.Tensor`` for tensors)."""
    if isinstance(obj, tdx.Tensor):
        return "tdx.Tensor"
    module = getattr(type(obj), "__module__", None) or ""
    name = type(obj).__qualname__
    return name if module in ("builtins", "__builtin__", "") else f"{module}.{name}"


def _addindent(s: str, spaces: int) -> str:
    lines = s.split("\n")
    if len(lines) == 1:
        return s
    first = lines.pop(0)
    return first + "\n" + "\n".join(spaces * " " + line for line in lines)


def _overwrite_params_on_conversion() -> bool:
    """torch.__future__.get_overwrite_module_params_on_conversion(), False unless tdx grows one."""
    future = getattr(tdx, "__future__", None)
    getter = getattr(future, "get_overwrite_module_params_on_conversion", None)
    return bool(getter()) if getter is not None else False


def _parse_to(args, kwargs):
    """``Module.to``'s arguments as (device or None, dtype or None, non_blocking)."""
    device = kwargs.pop("device", None)
    dtype = kwargs.pop("dtype", None)
    non_blocking = kwargs.pop("non_blocking", False)
    kwargs.pop("memory_format", None)  # tdx tensors have one (contiguous) layout
    kwargs.pop("copy", None)
    if kwargs:
        raise tdx.TdxTypeError(f"to() received an invalid combination of arguments: unexpected keyword "
                               f"argument(s) {', '.join(sorted(kwargs))}")
    rest = list(args)
    if len(rest) > 4:
        raise tdx.TdxTypeError(f"to() takes at most 4 positional arguments, got {len(rest)}")
    if rest:
        first = rest.pop(0)
        if isinstance(first, tdx.Tensor):
            device, dtype = first.device, first.dtype
        elif isinstance(first, tdx.dtype) or _is_python_dtype(first):
            dtype = first
        elif isinstance(first, (str, tdx.device)) or (isinstance(first, int) and not isinstance(first, bool)):
            device = first
            if rest and (isinstance(rest[0], tdx.dtype) or _is_python_dtype(rest[0])):
                dtype = rest.pop(0)
        elif first is not None:
            raise tdx.TdxTypeError(f"to() received an invalid combination of arguments: got {_typename(first)}; "
                                   "expected a device, a dtype or a Tensor")
        if rest and isinstance(rest[0], bool):
            non_blocking = rest.pop(0)
    if _is_python_dtype(dtype):  # Module.to(float) is float64, as torch reads Python's scalar types
        dtype = _dtypes.as_dtype(dtype)
    if dtype is not None and not isinstance(dtype, tdx.dtype):
        raise tdx.TdxTypeError(f"to(): dtype must be a tdx.dtype, not {_typename(dtype)}")
    return device, dtype, non_blocking


def _is_python_dtype(obj) -> bool:
    """``obj`` is Python's bool, int, float or complex, which torch takes as a dtype."""
    return obj.__class__ is type and obj in _dtypes.PYTHON_TYPES


class Module(StateDictMixin):
    """Base class for all neural network modules, as ``torch.nn.Module``.

    Subclasses call ``super().__init__()`` before assigning attributes and define
    ``forward``; calling the module runs the forward hooks around ``forward``.
    """

    dump_patches: bool = False
    _version: int = 1
    training: bool
    call_super_init: bool = False

    def __init__(self, *args, **kwargs) -> None:
        if self.call_super_init is False and bool(kwargs):
            raise tdx.TdxTypeError(f"{type(self).__name__}.__init__() got an unexpected keyword argument "
                                   f"'{next(iter(kwargs))}'")
        if self.call_super_init is False and bool(args):
            raise tdx.TdxTypeError(f"{type(self).__name__}.__init__() takes 1 positional argument but "
                                   f"{len(args) + 1} were given")
        setter = super().__setattr__
        setter("training", True)
        setter("_parameters", {})
        setter("_buffers", {})
        setter("_non_persistent_buffers_set", set())
        setter("_backward_pre_hooks", OrderedDict())
        setter("_backward_hooks", OrderedDict())
        setter("_is_full_backward_hook", None)
        setter("_forward_hooks", OrderedDict())
        setter("_forward_hooks_with_kwargs", OrderedDict())
        setter("_forward_hooks_always_called", OrderedDict())
        setter("_forward_pre_hooks", OrderedDict())
        setter("_forward_pre_hooks_with_kwargs", OrderedDict())
        setter("_state_dict_hooks", OrderedDict())
        setter("_state_dict_pre_hooks", OrderedDict())
        setter("_load_state_dict_pre_hooks", OrderedDict())
        setter("_load_state_dict_post_hooks", OrderedDict())
        setter("_modules", {})
        if self.call_super_init:
            super().__init__(*args, **kwargs)

    def forward(self, *args, **kwargs):
        """The computation of the module; every subclass defines it."""
        raise tdx.UnsupportedOpError(f'Module [{type(self).__name__}] is missing the required "forward" function')

    # registration -------------------------------------------------------------------------
    def register_buffer(self, name: str, tensor, persistent: bool = True) -> None:
        """Add a buffer (state that is not a parameter) named ``name``.

        Args:
            name: the buffer's attribute name.
            tensor: a tensor, or None (the buffer is then skipped by ``state_dict``).
            persistent: whether the buffer is part of ``state_dict``.

        Raises:
            TdxAttributeError: called before ``Module.__init__``.
            TdxTypeError: ``name`` is not a string or ``tensor`` is not a tensor.
            TdxKeyError: ``name`` is empty, has a dot, or is another attribute.
        """
        if "_buffers" not in self.__dict__:
            raise TdxAttributeError("cannot assign buffer before Module.__init__() call")
        if not isinstance(name, str):
            raise tdx.TdxTypeError(f"buffer name should be a string. Got {_typename(name)}")
        if "." in name:
            raise TdxKeyError('buffer name can\'t contain "."')
        if name == "":
            raise TdxKeyError('buffer name can\'t be empty string ""')
        if hasattr(self, name) and name not in self._buffers:
            raise TdxKeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, tdx.Tensor):
            raise tdx.TdxTypeError(f"cannot assign '{_typename(tensor)}' object to buffer '{name}' "
                                   "(torch Tensor or None required)")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def register_parameter(self, name: str, param) -> None:
        """Add a parameter named ``name`` (None is allowed and skipped by iteration).

        Raises:
            TdxAttributeError: called before ``Module.__init__``.
            TdxTypeError: ``name`` is not a string or ``param`` is not a Parameter.
            TdxKeyError: ``name`` is empty, has a dot, or is another attribute.
            TdxValueError: ``param`` is not a leaf (it has a ``grad_fn``).
        """
        if "_parameters" not in self.__dict__:
            raise TdxAttributeError("cannot assign parameter before Module.__init__() call")
        if not isinstance(name, str):
            raise tdx.TdxTypeError(f"parameter name should be a string. Got {_typename(name)}")
        if "." in name:
            raise TdxKeyError('parameter name can\'t contain "."')
        if name == "":
            raise TdxKeyError('parameter name can\'t be empty string ""')
        if hasattr(self, name) and name not in self._parameters:
            raise TdxKeyError(f"attribute '{name}' already exists")
        if param is None:
            self._parameters[name] = None
            return
        if not isinstance(param, Parameter):
            raise tdx.TdxTypeError(f"cannot assign '{_typename(param)}' object to parameter '{name}' "
                                   "(torch.nn.Parameter or None required)")
        if param.grad_fn is not None:
            raise tdx.TdxValueError(f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters must be "
                                    f"created explicitly. To express '{name}' as a function of another Tensor, "
                                    "compute the value in the forward() method.")
        self._parameters[name] = param

    def add_module(self, name: str, module) -> None:
        """Add a child module named ``name`` (None is allowed).

        Raises:
            TdxTypeError: ``module`` is not a Module or ``name`` is not a string.
            TdxKeyError: ``name`` is empty, has a dot, or is another attribute.
        """
        if not isinstance(module, Module) and module is not None:
            raise tdx.TdxTypeError(f"{_typename(module)} is not a Module subclass")
        if not isinstance(name, str):
            raise tdx.TdxTypeError(f"module name should be a string. Got {_typename(name)}")
        if hasattr(self, name) and name not in self._modules:
            raise TdxKeyError(f"attribute '{name}' already exists")
        if "." in name:
            raise TdxKeyError(f'module name can\'t contain ".", got: {name}')
        if name == "":
            raise TdxKeyError('module name can\'t be empty string ""')
        self._modules[name] = module

    def register_module(self, name: str, module) -> None:
        """Alias of :meth:`add_module`."""
        self.add_module(name, module)

    # lookup by dotted path ---------------------------------------------------------------
    def get_submodule(self, target: str) -> "Module":
        """The submodule at dotted path ``target`` ("" is this module).

        Raises:
            TdxAttributeError: a step of the path does not exist or is not a Module.
        """
        if target == "":
            return self
        mod = self
        for item in target.split("."):
            if not hasattr(mod, item):
                raise TdxAttributeError(mod._get_name() + " has no attribute `" + item + "`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise TdxAttributeError("`" + item + "` is not an nn.Module")
        return mod

    def set_submodule(self, target: str, module: "Module", strict: bool = False) -> None:
        """Replace (or, unless ``strict``, create) the submodule at dotted path ``target``.

        Raises:
            TdxValueError: ``target`` is empty.
            TdxAttributeError: the parent does not exist, or ``strict`` and the target does not.
        """
        if target == "":
            raise tdx.TdxValueError("Cannot set the submodule without a target name!")
        atoms = target.split(".")
        if not isinstance(module, Module):
            raise tdx.TdxValueError("`module` is not an nn.Module, found " + str(type(module)))
        parent = self.get_submodule(".".join(atoms[:-1])) if len(atoms) > 1 else self
        name = atoms[-1]
        if strict and not hasattr(parent, name):
            raise TdxAttributeError(parent._get_name() + " has no attribute `" + name + "`")
        if hasattr(parent, name) and not isinstance(getattr(parent, name), Module):
            raise TdxAttributeError("`" + name + "` is not an nn.Module")
        setattr(parent, name, module)

    def get_parameter(self, target: str) -> Parameter:
        """The parameter at dotted path ``target``.

        Raises:
            TdxAttributeError: the path does not exist or does not name a Parameter.
        """
        module_path, _, param_name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, param_name):
            raise TdxAttributeError(mod._get_name() + " has no attribute `" + param_name + "`")
        param = getattr(mod, param_name)
        if not isinstance(param, Parameter):
            raise TdxAttributeError("`" + param_name + "` is not an nn.Parameter")
        return param

    def get_buffer(self, target: str):
        """The buffer at dotted path ``target``.

        Raises:
            TdxAttributeError: the path does not exist or does not name a buffer.
        """
        module_path, _, buffer_name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, buffer_name):
            raise TdxAttributeError(mod._get_name() + " has no attribute `" + buffer_name + "`")
        buffer = getattr(mod, buffer_name)
        if buffer_name not in mod._buffers:
            raise TdxAttributeError("`" + buffer_name + "` is not a buffer")
        return buffer

    # conversion ----------------------------------------------------------------------------
    def _apply(self, fn, recurse: bool = True):
        if recurse:
            for module in self.children():
                module._apply(fn)
        overwrite = _overwrite_params_on_conversion()
        for key, param in self._parameters.items():
            if param is None:
                continue
            grad = param.grad
            with tdx.no_grad():
                applied = fn(param)
            # torch keeps the parameter object (set_data) unless the conversion changes the kind of tensor it
            # holds: a meta tensor's data cannot become real data in place (to_empty after building on meta)
            if overwrite or (param.device.type == "meta") != (applied.device.type == "meta"):
                out = Parameter(applied, param.requires_grad)
                self._parameters[key] = out
            else:
                set_data(param, applied)
                out = param
            if grad is not None:
                with tdx.no_grad():
                    grad_applied = fn(grad)
                out.grad = grad_applied
        for key, buf in self._buffers.items():
            if buf is not None:
                self._buffers[key] = fn(buf)
        return self

    def apply(self, fn) -> "Module":
        """Call ``fn`` on every submodule (children first) and then on this module; returns self."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    def to(self, *args, **kwargs) -> "Module":
        """Move and/or cast the parameters and buffers in place (parameters keep their identity).

        Forms: ``to(device=None, dtype=None, non_blocking=False)``, ``to(dtype, non_blocking=False)``,
        ``to(tensor, non_blocking=False)``. Only floating point and complex tensors are cast;
        ``non_blocking`` and ``memory_format`` have no effect here and are accepted for torch's sake.

        Raises:
            TdxTypeError: ``dtype`` is not a floating point or complex dtype.
        """
        device, dtype, _ = _parse_to(args, dict(kwargs))
        if dtype is not None and not (dtype.is_floating_point or dtype.is_complex):
            raise tdx.TdxTypeError("nn.Module.to only accepts floating point or complex dtypes, but got desired "
                                   f"dtype={dtype}")

        def convert(t):
            target = dtype if dtype is not None and (t.is_floating_point() or t.is_complex()) else None
            if device is None and target is None:
                return t
            if device is None:
                return t.to(target)
            return t.to(device) if target is None else t.to(device, target)

        return self._apply(convert)

    def cpu(self) -> "Module":
        """Move every parameter and buffer to the CPU."""
        return self._apply(lambda t: t.cpu())

    def cuda(self, device=None) -> "Module":
        """Move every parameter and buffer to a CUDA device (``device``: index or name)."""
        return self._apply(lambda t: t.cuda(device))

    def mps(self) -> "Module":
        """Move every parameter and buffer to MPS (a tdx extension; torch has no ``Module.mps``)."""
        return self._apply(lambda t: t.to("mps"))

    def mlx(self) -> "Module":
        """Move every parameter and buffer to MLX's default device (a tdx extension)."""
        return self._apply(lambda t: t.to("mlx"))

    def type(self, dst_type) -> "Module":
        """Cast every parameter and buffer to ``dst_type``."""
        return self._apply(lambda t: t.type(dst_type))

    def float(self) -> "Module":
        """Cast floating point parameters and buffers to float32."""
        return self._apply(lambda t: t.float() if t.is_floating_point() else t)

    def double(self) -> "Module":
        """Cast floating point parameters and buffers to float64."""
        return self._apply(lambda t: t.double() if t.is_floating_point() else t)

    def half(self) -> "Module":
        """Cast floating point parameters and buffers to float16."""
        return self._apply(lambda t: t.half() if t.is_floating_point() else t)

    def bfloat16(self) -> "Module":
        """Cast floating point parameters and buffers to bfloat16."""
        return self._apply(lambda t: t.bfloat16() if t.is_floating_point() else t)

    def to_empty(self, *, device, recurse: bool = True) -> "Module":
        """Replace every parameter and buffer by an uninitialized tensor of its shape on ``device``."""
        return self._apply(lambda t: tdx.empty_like(t, device=device), recurse=recurse)

    # hooks ------------------------------------------------------------------------------------
    def register_forward_pre_hook(self, hook, *, prepend: bool = False, with_kwargs: bool = False):
        """Run ``hook(module, args)`` (or ``hook(module, args, kwargs)``) before ``forward``.

        A non-None result replaces the arguments: a tuple (or one value) for ``args``, or an
        ``(args, kwargs)`` pair when ``with_kwargs``.

        Returns:
            RemovableHandle: its ``remove()`` unregisters the hook.
        """
        handle = RemovableHandle(self._forward_pre_hooks, extra_dict=self._forward_pre_hooks_with_kwargs)
        self._forward_pre_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs[handle.id] = True
        if prepend:
            self._forward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_forward_hook(self, hook, *, prepend: bool = False, with_kwargs: bool = False,
                              always_call: bool = False):
        """Run ``hook(module, args, output)`` (or ``hook(module, args, kwargs, output)``) after ``forward``.

        A non-None result replaces the output. ``always_call`` runs the hook even when
        ``forward`` raises.

        Returns:
            RemovableHandle: its ``remove()`` unregisters the hook.
        """
        handle = RemovableHandle(self._forward_hooks,
                                 extra_dict=[self._forward_hooks_with_kwargs, self._forward_hooks_always_called])
        self._forward_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_hooks_with_kwargs[handle.id] = True
        if always_call:
            self._forward_hooks_always_called[handle.id] = True
        if prepend:
            self._forward_hooks.move_to_end(handle.id, last=False)
        return handle

    def _backward_hooks_unsupported(self, *args, **kwargs):
        raise tdx.UnsupportedOpError("module backward hooks (register_full_backward_hook, "
                                     "register_full_backward_pre_hook, register_backward_hook) are not supported "
                                     "by tdx.nn.Module; register a hook on the output tensor instead")

    register_full_backward_hook = _backward_hooks_unsupported
    register_full_backward_pre_hook = _backward_hooks_unsupported
    register_backward_hook = _backward_hooks_unsupported

    def _call_impl(self, *args, **kwargs):
        forward_call = self.forward
        if not (self._forward_hooks or self._forward_pre_hooks):
            result = forward_call(*args, **kwargs)
            if self._modules:
                _settle(result)
            return result
        result = None
        called_always = set()
        try:
            for hook_id, hook in list(self._forward_pre_hooks.items()):
                if hook_id in self._forward_pre_hooks_with_kwargs:
                    out = hook(self, args, kwargs)
                    if out is not None:
                        if isinstance(out, tuple) and len(out) == 2:
                            args, kwargs = out
                        else:
                            raise TdxRuntimeError("forward pre-hook must return None or a tuple of "
                                                  f"(new_args, new_kwargs), but got {out}.")
                else:
                    out = hook(self, args)
                    if out is not None:
                        args = out if isinstance(out, tuple) else (out,)
            result = forward_call(*args, **kwargs)
            for hook_id, hook in list(self._forward_hooks.items()):
                if hook_id in self._forward_hooks_always_called:
                    called_always.add(hook_id)
                if hook_id in self._forward_hooks_with_kwargs:
                    out = hook(self, args, kwargs, result)
                else:
                    out = hook(self, args, result)
                if out is not None:
                    result = out
            if self._modules:
                _settle(result)
            return result
        except Exception:
            for hook_id, hook in list(self._forward_hooks.items()):
                if hook_id in self._forward_hooks_always_called and hook_id not in called_always:
                    try:
                        if hook_id in self._forward_hooks_with_kwargs:
                            out = hook(self, args, kwargs, result)
                        else:
                            out = hook(self, args, result)
                        if out is not None:
                            result = out
                    except Exception as err:  # the forward's error is the one to raise, as torch
                        warnings.warn("forward hook with ``always_call=True`` raised an exception that was "
                                      f"silenced as another error was raised in forward: {err}", stacklevel=2)
            raise

    __call__ = _call_impl

    # attributes -------------------------------------------------------------------------------
    def __getstate__(self):
        return self.__dict__.copy()

    def __setstate__(self, state) -> None:
        self.__dict__.update(state)
        for name in ("_forward_pre_hooks", "_forward_pre_hooks_with_kwargs", "_forward_hooks",
                     "_forward_hooks_with_kwargs", "_forward_hooks_always_called", "_state_dict_hooks",
                     "_state_dict_pre_hooks", "_load_state_dict_pre_hooks", "_load_state_dict_post_hooks",
                     "_backward_pre_hooks", "_backward_hooks"):
            if name not in self.__dict__:
                self.__dict__[name] = OrderedDict()
        self.__dict__.setdefault("_non_persistent_buffers_set", set())
        self.__dict__.setdefault("_is_full_backward_hook", None)

    def __getattr__(self, name: str):
        d = self.__dict__
        if "_parameters" in d and name in d["_parameters"]:
            return d["_parameters"][name]
        if "_buffers" in d and name in d["_buffers"]:
            return d["_buffers"][name]
        if "_modules" in d and name in d["_modules"]:
            return d["_modules"][name]
        raise TdxAttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name: str, value) -> None:
        d = self.__dict__

        def remove_from(*holders):
            for h in holders:
                if name in h:
                    if isinstance(h, dict):
                        del h[name]
                    else:
                        h.discard(name)

        params = d.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise TdxAttributeError("cannot assign parameters before Module.__init__() call")
            remove_from(d, self._buffers, self._modules, self._non_persistent_buffers_set)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise tdx.TdxTypeError(f"cannot assign '{_typename(value)}' as parameter '{name}' "
                                       "(torch.nn.Parameter or None expected)")
            self.register_parameter(name, value)
        else:
            modules = d.get("_modules")
            if isinstance(value, Module):
                if modules is None:
                    raise TdxAttributeError("cannot assign module before Module.__init__() call")
                remove_from(d, self._parameters, self._buffers, self._non_persistent_buffers_set)
                modules[name] = value
            elif modules is not None and name in modules:
                if value is not None:
                    raise tdx.TdxTypeError(f"cannot assign '{_typename(value)}' as child module '{name}' "
                                           "(torch.nn.Module or None expected)")
                modules[name] = value
            else:
                buffers = d.get("_buffers")
                if isinstance(value, Buffer) or (buffers is not None and name in buffers):
                    if value is not None and not isinstance(value, tdx.Tensor):
                        raise tdx.TdxTypeError(f"cannot assign '{_typename(value)}' as buffer '{name}' "
                                               "(torch.nn.Buffer, torch.Tensor or None expected)")
                    if isinstance(value, Buffer):
                        persistent = value.persistent
                    else:
                        persistent = name not in self._non_persistent_buffers_set
                    remove_from(d, self._parameters, self._modules)
                    self.register_buffer(name, value, persistent)
                else:
                    object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        if name in self._parameters:
            del self._parameters[name]
        elif name in self._buffers:
            del self._buffers[name]
            self._non_persistent_buffers_set.discard(name)
        elif name in self._modules:
            del self._modules[name]
        else:
            object.__delattr__(self, name)

    def __dir__(self):
        keys = (dir(self.__class__) + list(self.__dict__) + list(self._parameters) + list(self._modules)
                + list(self._buffers))
        return sorted(k for k in keys if not k[0].isdigit())

    # iteration ---------------------------------------------------------------------------------
    def _named_members(self, get_members, prefix="", recurse=True, remove_duplicate: bool = True):
        memo = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse \
            else [(prefix, self)]
        for module_prefix, module in modules:
            for k, v in get_members(module):
                if v is None or id(v) in memo:
                    continue
                if remove_duplicate:
                    memo.add(id(v))
                yield module_prefix + ("." if module_prefix else "") + k, v

    def parameters(self, recurse: bool = True):
        """Iterate over the parameters (of submodules too when ``recurse``), each once."""
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_parameters(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        """Iterate over ``(dotted name, parameter)`` pairs in registration order."""
        yield from self._named_members(lambda m: m._parameters.items(), prefix=prefix, recurse=recurse,
                                       remove_duplicate=remove_duplicate)

    def buffers(self, recurse: bool = True):
        """Iterate over the buffers (of submodules too when ``recurse``)."""
        for _, buf in self.named_buffers(recurse=recurse):
            yield buf

    def named_buffers(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        """Iterate over ``(dotted name, buffer)`` pairs in registration order."""
        yield from self._named_members(lambda m: m._buffers.items(), prefix=prefix, recurse=recurse,
                                       remove_duplicate=remove_duplicate)

    def children(self):
        """Iterate over the direct child modules, each once."""
        for _, module in self.named_children():
            yield module

    def named_children(self):
        """Iterate over ``(name, child)`` for the direct children, each module once."""
        memo = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in memo:
                memo.add(id(module))
                yield name, module

    def modules(self):
        """Iterate over every module in the tree (this one first), each once."""
        for _, module in self.named_modules():
            yield module

    def named_modules(self, memo=None, prefix: str = "", remove_duplicate: bool = True):
        """Iterate over ``(dotted name, module)`` for the whole tree, depth first, this module first."""
        if memo is None:
            memo = set()
        if self not in memo:
            if remove_duplicate:
                memo.add(self)
            yield prefix, self
            for name, module in self._modules.items():
                if module is None:
                    continue
                sub = prefix + ("." if prefix else "") + name
                yield from module.named_modules(memo, sub, remove_duplicate)

    # modes and gradients --------------------------------------------------------------------------
    def train(self, mode: bool = True) -> "Module":
        """Set training mode (``mode=False``: evaluation) on this module and its descendants.

        Raises:
            TdxValueError: ``mode`` is not a bool.
        """
        if not isinstance(mode, bool):
            raise tdx.TdxValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self) -> "Module":
        """Evaluation mode: ``train(False)``."""
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> "Module":
        """Set ``requires_grad`` on every parameter."""
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of every parameter: to None (default) or to zeros in place."""
        for p in self.parameters():
            grad = p.grad
            if grad is None:
                continue
            if set_to_none:
                p.grad = None
            else:
                if grad.grad_fn is not None:
                    grad.detach_()
                else:
                    grad.requires_grad_(False)
                grad.zero_()
                p.grad = grad  # a tape executor hands out a fresh wrapper: store the zeroed one back

    def share_memory(self) -> "Module":
        """Move parameters and buffers to shared memory (``Tensor.share_memory_``)."""
        return self._apply(lambda t: t.share_memory_())

    # printing ----------------------------------------------------------------------------------
    def _get_name(self) -> str:
        return type(self).__name__

    def extra_repr(self) -> str:
        """The module-specific part of the repr; override in subclasses."""
        return ""

    def __repr__(self) -> str:
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = [f"({key}): " + _addindent(repr(module), 2) for key, module in self._modules.items()]
        lines = extra_lines + child_lines
        main = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                main += extra_lines[0]
            else:
                main += "\n  " + "\n  ".join(lines) + "\n"
        return main + ")"
