"""The state-dict half of ``tdx.nn.Module``: ``state_dict``, ``load_state_dict`` (strict, assign,
torch's error text), extra state and the state-dict hooks, mixed into ``Module``.

Keys, order, ``_metadata`` and messages are torch's. Must never import torch or mlx.
"""

from __future__ import annotations

import itertools
import warnings
from collections import OrderedDict, namedtuple
from collections.abc import Mapping

import tdx

from ...._errors import TdxRuntimeError
from ..parameter import Parameter, is_lazy
from .hooks import RemovableHandle

__all__ = ["StateDictMixin"]

_EXTRA_STATE_KEY_SUFFIX = "_extra_state"  # torch's name for the key of get_extra_state()'s entry

class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """What ``load_state_dict`` returns: the missing and the unexpected keys."""

    __slots__ = ()

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


class _WithModule:
    """A load-state-dict pre-hook that receives the module as its first argument."""

    def __init__(self, hook, module):
        self.hook, self.module = hook, module

    def __call__(self, *args, **kwargs):
        return self.hook(self.module, *args, **kwargs)


class StateDictMixin:
    """state_dict / load_state_dict and their hooks; ``Module`` inherits them."""

    def get_extra_state(self):
        """Extra state for ``state_dict``; override with :meth:`set_extra_state` to use it."""
        raise TdxRuntimeError("Reached a code path in StateDictMixin.get_extra_state() that should never be called. "
                              "Please file an issue at https://github.com/pytorch/pytorch/issues/new?template="
                              "bug-report.yml to report this bug.")

    def set_extra_state(self, state) -> None:
        """Restore what :meth:`get_extra_state` saved; override both to use extra state."""
        raise TdxRuntimeError("Reached a code path in StateDictMixin.set_extra_state() that should never be called. "
                              "Please file an issue at https://github.com/pytorch/pytorch/issues/new?template="
                              "bug-report.yml to report this bug.")

    def register_state_dict_pre_hook(self, hook):
        """Run ``hook(module, prefix, keep_vars)`` before ``state_dict`` saves this module."""
        handle = RemovableHandle(self._state_dict_pre_hooks)
        self._state_dict_pre_hooks[handle.id] = hook
        return handle

    def register_state_dict_post_hook(self, hook):
        """Run ``hook(module, state_dict, prefix, local_metadata)`` after ``state_dict``; it must return None."""
        hook._from_public_api = True
        handle = RemovableHandle(self._state_dict_hooks)
        self._state_dict_hooks[handle.id] = hook
        return handle

    def _register_state_dict_hook(self, hook):
        """The private post-hook: a non-None result replaces the state dict."""
        if getattr(hook, "_from_public_api", False):
            raise TdxRuntimeError("Cannot register the same function as the state dict post hook that was "
                                  "previously registered via register_state_dict_post_hook")
        handle = RemovableHandle(self._state_dict_hooks)
        self._state_dict_hooks[handle.id] = hook
        return handle

    def _register_load_state_dict_pre_hook(self, hook, with_module: bool = False):
        handle = RemovableHandle(self._load_state_dict_pre_hooks)
        self._load_state_dict_pre_hooks[handle.id] = _WithModule(hook, self) if with_module else hook
        return handle

    def register_load_state_dict_pre_hook(self, hook):
        """Run ``hook(module, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
        error_msgs)`` before this module loads its part of a state dict."""
        return self._register_load_state_dict_pre_hook(hook, with_module=True)

    def register_load_state_dict_post_hook(self, hook):
        """Run ``hook(module, incompatible_keys)`` after ``load_state_dict``; it may edit the key lists.

        Raises (at load time):
            TdxRuntimeError: the hook returned something other than None.
        """
        handle = RemovableHandle(self._load_state_dict_post_hooks)
        self._load_state_dict_post_hooks[handle.id] = hook
        return handle

    def _save_to_state_dict(self, destination, prefix: str, keep_vars: bool) -> None:
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if keep_vars else param.detach()
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf if keep_vars else buf.detach()
        if getattr(type(self), "get_extra_state", StateDictMixin.get_extra_state) is not StateDictMixin.get_extra_state:
            destination[prefix + "_extra_state"] = self.get_extra_state()

    def state_dict(self, *args, destination=None, prefix: str = "", keep_vars: bool = False):
        """An ordered dict of every parameter and persistent buffer, keyed by dotted name.

        Tensors are detached unless ``keep_vars``. The dict carries torch's ``_metadata``
        (each module's ``version``).
        """
        if args:
            warnings.warn("Positional args are being deprecated, use kwargs instead. Refer to "
                          "https://pytorch.org/docs/main/generated/torch.nn.Module.html#torch.nn.Module.state_dict"
                          " for details.", FutureWarning, stacklevel=2)
            if destination is None and len(args) > 0:
                destination = args[0]
            if len(args) > 1 and prefix == "":
                prefix = args[1]
            if len(args) > 2 and keep_vars is False:
                keep_vars = args[2]
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        local_metadata = dict(version=self._version)
        if hasattr(destination, "_metadata"):
            destination._metadata[prefix[:-1]] = local_metadata
        for hook in self._state_dict_pre_hooks.values():
            hook(self, prefix, keep_vars)
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars)
        for hook in self._state_dict_hooks.values():
            result = hook(self, destination, prefix, local_metadata)
            if not getattr(hook, "_from_public_api", False):
                if result is not None:
                    destination = result
            elif result is not None:
                raise TdxRuntimeError("state_dict post-hook must return None")
        return destination

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs) -> None:
        for hook in self._load_state_dict_pre_hooks.values():
            hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs)
        persistent = {k: v for k, v in self._buffers.items() if k not in self._non_persistent_buffers_set}
        local_state = {k: v for k, v in itertools.chain(self._parameters.items(), persistent.items())
                       if v is not None}
        assign = local_metadata.get("assign_to_params_buffers", False)
        for name, param in local_state.items():
            key = prefix + name
            if key not in state_dict:
                if strict:
                    missing_keys.append(key)
                continue
            value = state_dict[key]
            if not isinstance(value, tdx.Tensor):
                error_msgs.append(f'While copying the parameter named "{key}", expected torch.Tensor or '
                                  f"Tensor-like object from checkpoint but received {type(value)}")
                continue
            lazy = is_lazy(param)
            if not lazy and len(param.shape) == 0 and tuple(value.shape) == (1,):
                value = value[0]  # torch's 0.3 compatibility: a 1-element 1-d tensor loads into a 0-d one
            if not lazy and value.shape != param.shape:
                error_msgs.append(f"size mismatch for {key}: copying a param with shape {value.shape} from "
                                  f"checkpoint, the shape in current model is {param.shape}.")
                continue
            try:
                with tdx.no_grad():
                    if assign:
                        if isinstance(param, Parameter):
                            if not isinstance(value, Parameter):
                                value = Parameter(value, requires_grad=param.requires_grad)
                            else:
                                value.requires_grad_(param.requires_grad)
                        setattr(self, name, value)
                    elif lazy:
                        param.materialize(value.shape, dtype=value.dtype)
                        param.copy_(value)
                    else:
                        param.copy_(value)
            except (tdx.TdxError, RuntimeError, TypeError, ValueError) as ex:
                error_msgs.append(f'While copying the parameter named "{key}", whose dimensions in the model are '
                                  f"{param.size()} and whose dimensions in the checkpoint are {value.size()}, an "
                                  f"exception occurred : {ex.args}.")
        extra_key = prefix + "_extra_state"
        if getattr(type(self), "set_extra_state", StateDictMixin.set_extra_state) is not StateDictMixin.set_extra_state:
            if extra_key in state_dict:
                self.set_extra_state(state_dict[extra_key])
            elif strict:
                missing_keys.append(extra_key)
        elif strict and extra_key in state_dict:
            unexpected_keys.append(extra_key)
        if strict:
            for key in state_dict.keys():
                if key.startswith(prefix) and key != extra_key:
                    parts = key[len(prefix):].split(".", 1)
                    if len(parts) > 1:
                        if parts[0] not in self._modules:
                            unexpected_keys.append(key)
                    elif parts[0] not in local_state:
                        unexpected_keys.append(key)

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        """Copy parameters and buffers from ``state_dict`` into this module and its descendants.

        Args:
            state_dict: a mapping of dotted names to tensors (e.g. from ``state_dict()``).
            strict: require the keys to match this module's exactly.
            assign: assign the given tensors (as Parameters where a Parameter was) instead of
                copying into the existing ones.

        Returns:
            ``_IncompatibleKeys(missing_keys, unexpected_keys)``.

        Raises:
            TdxTypeError: ``state_dict`` is not a mapping.
            TdxRuntimeError: keys do not match (``strict``), shapes differ, or a copy failed;
                the message is torch's ``Error(s) in loading state_dict for ...``.
        """
        if not isinstance(state_dict, Mapping):
            raise tdx.TdxTypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing_keys: list = []
        unexpected_keys: list = []
        error_msgs: list = []
        metadata = getattr(state_dict, "_metadata", None)
        state_dict = OrderedDict(state_dict)
        if metadata is not None:
            state_dict._metadata = metadata

        def load(module, local_state_dict, prefix=""):
            local_metadata = {} if metadata is None else dict(metadata.get(prefix[:-1], {}))
            if assign:
                local_metadata["assign_to_params_buffers"] = assign
            module._load_from_state_dict(local_state_dict, prefix, local_metadata, True, missing_keys,
                                         unexpected_keys, error_msgs)
            for name, child in module._modules.items():
                if child is not None:
                    child_prefix = prefix + name + "."
                    child_state = {k: v for k, v in local_state_dict.items() if k.startswith(child_prefix)}
                    load(child, child_state, child_prefix)
            incompatible = _IncompatibleKeys(missing_keys, unexpected_keys)
            for hook in module._load_state_dict_post_hooks.values():
                out = hook(module, incompatible)
                if out is not None:
                    raise TdxRuntimeError("Hooks registered with ``register_load_state_dict_post_hook`` are not "
                                          "expected to return new values, if incompatible_keys need to be "
                                          "modified, it should be done inplace.")

        load(self, state_dict)
        if strict:
            if unexpected_keys:
                error_msgs.insert(0, "Unexpected key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in unexpected_keys)))
            if missing_keys:
                error_msgs.insert(0, "Missing key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in missing_keys)))
        if error_msgs:
            raise TdxRuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
                type(self).__name__, "\n\t".join(error_msgs)))
        return _IncompatibleKeys(missing_keys, unexpected_keys)
