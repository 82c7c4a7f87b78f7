"""``tdx.optim.Optimizer``: torch's optimizer base class for tdx tensors.

Holds param groups, per-parameter state, ``zero_grad``, step hooks and the state-dict
layout torch uses (parameters replaced by integer ids in order), so a state dict written by
a tdx optimizer and converted to torch tensors loads into ``torch.optim`` and the reverse.
The arithmetic of each optimizer lives in its own module and runs on the parameters' own
executor. This module must never import torch or mlx, and never moves data between devices.
"""

from __future__ import annotations

import functools
import itertools
import numbers
import struct
import warnings
import weakref
from collections import OrderedDict, defaultdict
from collections.abc import Iterable
from copy import deepcopy
from typing import Any, Callable

import tdx

__all__ = [
    "Optimizer",
    "OptimizerRuntimeError",
    "register_optimizer_step_pre_hook",
    "register_optimizer_step_post_hook",
    "required",
]


class OptimizerRuntimeError(tdx.TdxError, RuntimeError):
    """An optimizer refused its input at run time (torch raises RuntimeError)."""


class _RequiredParameter:
    """Marker for a hyper-parameter every param group must give (torch's ``required``)."""

    def __repr__(self) -> str:
        return "<required parameter>"


required = _RequiredParameter()

_global_pre_hooks: "OrderedDict[int, Callable]" = OrderedDict()
_global_post_hooks: "OrderedDict[int, Callable]" = OrderedDict()


class RemovableHandle:
    """Handle returned by the ``register_*_hook`` methods; ``remove()`` unregisters the hook."""

    _next_id = itertools.count()

    def __init__(self, hooks: OrderedDict):
        self.hooks = hooks
        self.id = next(RemovableHandle._next_id)

    def remove(self) -> None:
        """Unregister the hook (a no-op when already removed)."""
        self.hooks.pop(self.id, None)

    def __enter__(self) -> "RemovableHandle":
        return self

    def __exit__(self, *exc) -> None:
        self.remove()


def _register(table: OrderedDict, hook: Callable, prepend: bool = False) -> RemovableHandle:
    handle = RemovableHandle(table)
    table[handle.id] = hook
    if prepend:
        table.move_to_end(handle.id, last=False)
    return handle


def register_optimizer_step_pre_hook(hook: Callable) -> RemovableHandle:
    """Register a pre hook run before every optimizer's ``step``.

    Args:
        hook: ``hook(optimizer, args, kwargs) -> None or (new_args, new_kwargs)``.

    Returns:
        A handle whose ``remove()`` unregisters the hook.
    """
    return _register(_global_pre_hooks, hook)


def register_optimizer_step_post_hook(hook: Callable) -> RemovableHandle:
    """Register a post hook run after every optimizer's ``step``.

    Args:
        hook: ``hook(optimizer, args, kwargs) -> None``.

    Returns:
        A handle whose ``remove()`` unregisters the hook.
    """
    return _register(_global_post_hooks, hook)


def _hooked_step(func: Callable) -> Callable:
    """Wrap a subclass's ``step`` so that the global and per-instance step hooks run."""

    @functools.wraps(func)
    def step(*args, **kwargs):
        self = args[0]
        if "_optimizer_step_pre_hooks" not in getattr(self, "__dict__", ()):
            # a subclass that never ran Optimizer.__init__ (accelerate's AcceleratedOptimizer wraps another
            # optimizer): torch hooks a step from __init__, so such a step runs unhooked, as torch's does
            return func(*args, **kwargs)
        for pre in itertools.chain(_global_pre_hooks.values(), self._optimizer_step_pre_hooks.values()):
            result = pre(self, args, kwargs)
            if result is not None:
                if isinstance(result, tuple) and len(result) == 2:
                    args, kwargs = result
                else:
                    raise OptimizerRuntimeError(
                        f"{func} must return None or a tuple of (new_args, new_kwargs), but got {result}.")
        out = func(*args, **kwargs)
        self._opt_called = True
        for post in itertools.chain(self._optimizer_step_post_hooks.values(), _global_post_hooks.values()):
            post(self, args, kwargs)
        return out

    step.hooked = True
    return step


def check_lr(lr: Any, message: str = "Invalid learning rate: {lr}", positive: bool = False,
             nan_ok: bool = False) -> None:
    """Refuse a learning rate as torch does: a Tensor of more than one element, a negative value
    (zero too with ``positive``), NaN (torch's ``not 0.0 <= lr``; SGD's ``lr < 0.0`` lets it
    through: ``nan_ok``), and (tdx's own words, torch's TypeError) what is not a number.

    Args:
        lr: the learning rate given.
        message: the optimizer's own wording of the ValueError (``{lr}`` is filled in).
        positive: whether zero is refused too.
        nan_ok: whether NaN passes (SGD's check, as torch's).
    """
    if isinstance(lr, tdx.Tensor):
        if lr.numel() != 1:
            raise tdx.TdxValueError("Tensor lr must be 1-element")
    elif not isinstance(lr, numbers.Real) or isinstance(lr, bool):
        raise tdx.TdxTypeError(f"lr must be a float or a 1-element Tensor, got {type(lr).__name__} {lr!r}")
    if lr < 0.0 or (positive and lr == 0.0) or (not nan_ok and lr != lr):
        raise tdx.TdxValueError(message.format(lr=lr))


def scalar(value: Any) -> Any:
    """A hyper-parameter as a Python number (a 1-element tensor gives its item, as torch's
    single-tensor path uses it)."""
    return value.item() if isinstance(value, tdx.Tensor) else value


def step_tensor(value: float, param: "tdx.Tensor") -> "tdx.Tensor":
    """A 0-d float32 counter (torch's ``state['step']``).

    It lives where torch keeps it: on the host for a parameter of an asynchronous executor that writes
    in place (torch on CUDA or MPS: reading the count then never waits for the device), else on the
    parameter's own device (the CPU, or MLX, whose counts :func:`advance_step` remembers).
    """
    caps = param.executor.caps
    device = tdx.backends.HOST if caps.asynchronous and caps.mutable else param.device
    return tdx.tensor(float(value), dtype=tdx.float32, device=device)


# id(step counter) -> (a weak reference to it, the native array its count was read from, that count); see
# advance_step. Keyed by id, not by the tensor: a WeakKeyDictionary compares keys with ``==``, which on a
# tensor is an elementwise comparison read back with ``bool()``, an evaluation per lookup on MLX.
_STEP_COUNTS: dict = {}


def advance_step(step_t: "tdx.Tensor") -> float:
    """``step_t += 1`` on torch's ``state['step']`` counter; returns the new count as a Python float.

    Reading a counter on an executor with lazy, immutable arrays (MLX) is an evaluation, one per
    parameter and step. There each counter's count is remembered with the array it belongs to: any
    other write to the counter (``fill_``, ``load_state_dict``...) gives it another array, and the
    count is then read again. The count is rounded as a float32 counter rounds it.
    """
    if step_t.executor.caps.mutable or step_t.dtype is not tdx.float32:
        step_t += 1
        return step_t.item()
    key = id(step_t)
    known = _STEP_COUNTS.get(key)
    if known is not None and known[0]() is step_t:
        ref = known[0]
        before = known[2] if known[1] is step_t.native else step_t.item()
    else:
        ref = weakref.ref(step_t, lambda _dead, key=key: _STEP_COUNTS.pop(key, None))
        before = step_t.item()
    count = struct.unpack("f", struct.pack("f", before + 1))[0]
    # the counter is rebound to the count itself, a constant: ``step_t += 1`` would chain one lazy add per
    # step, a graph that grows with the step count (memory, and a read that walks every step)
    step_t.fill_(count)
    _STEP_COUNTS[key] = (ref, step_t.native, count)
    return count


def count_step(step_t: "tdx.Tensor") -> None:
    """``step_t += 1`` where the count itself is not needed: in place where tensors are mutable, else
    through :func:`advance_step` (a constant, never a chain of lazy adds)."""
    if step_t.executor.caps.mutable:
        step_t += 1
    else:
        advance_step(step_t)


def refuse_complex(param: "tdx.Tensor", name: str) -> None:
    """Raise for complex parameters: torch steps them through ``view_as_real``, which tdx lacks."""
    if param.is_complex():
        raise tdx.UnsupportedOpError(
            f"{name} got a complex parameter of dtype {param.dtype}; tdx optimizers accept real "
            "floating-point parameters only (torch.view_as_real is not available)")


class Optimizer:
    """Base class of all optimizers (torch's ``torch.optim.Optimizer``).

    Args:
        params: an iterable of tensors, of ``(name, tensor)`` pairs, or of dicts defining
            param groups (each with a ``"params"`` entry).
        defaults: the default hyper-parameters of every group.
    """

    #: ``{key: default}`` that ``__setstate__`` gives groups pickled before the key existed (torch's
    #: per-optimizer ``setdefault`` lists)
    _group_defaults: dict = {}

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        step = cls.__dict__.get("step")
        if step is not None and not getattr(step, "hooked", False):
            cls.step = _hooked_step(step)

    def __init__(self, params: Any, defaults: dict) -> None:
        self.defaults = defaults
        self._optimizer_step_pre_hooks: OrderedDict = OrderedDict()
        self._optimizer_step_post_hooks: OrderedDict = OrderedDict()
        self._optimizer_state_dict_pre_hooks: OrderedDict = OrderedDict()
        self._optimizer_state_dict_post_hooks: OrderedDict = OrderedDict()
        self._optimizer_load_state_dict_pre_hooks: OrderedDict = OrderedDict()
        self._optimizer_load_state_dict_post_hooks: OrderedDict = OrderedDict()
        if isinstance(params, tdx.Tensor):
            raise tdx.TdxTypeError(
                "params argument given to the optimizer should be an iterable of Tensors or dicts, "
                f"but got {_typename(params)}")
        self.state: defaultdict = defaultdict(dict)
        self.param_groups: list[dict] = []
        param_groups = list(params)
        if len(param_groups) == 0:
            raise tdx.TdxValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for group in param_groups:
            self.add_param_group(group)

    # -- pickling -------------------------------------------------------------------------
    def __getstate__(self) -> dict:
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        for name in ("_optimizer_step_pre_hooks", "_optimizer_step_post_hooks",
                     "_optimizer_state_dict_pre_hooks", "_optimizer_state_dict_post_hooks",
                     "_optimizer_load_state_dict_pre_hooks", "_optimizer_load_state_dict_post_hooks"):
            if name not in self.__dict__:
                setattr(self, name, OrderedDict())
        self.defaults.setdefault("differentiable", False)
        for group in self.param_groups:
            for key, value in self._group_defaults.items():
                group.setdefault(key, value)

    def __repr__(self) -> str:
        text = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):
            text += f"\nParameter Group {i}\n"
            for key in sorted(group.keys()):
                if key != "params":
                    text += f"    {key}: {group[key]}\n"
        return text + ")"

    # -- hooks ----------------------------------------------------------------------------
    def register_step_pre_hook(self, hook: Callable) -> RemovableHandle:
        """Register ``hook(optimizer, args, kwargs)`` to run before this optimizer's ``step``.

        The hook may return ``(new_args, new_kwargs)`` to replace the arguments.
        """
        return _register(self._optimizer_step_pre_hooks, hook)

    def register_step_post_hook(self, hook: Callable) -> RemovableHandle:
        """Register ``hook(optimizer, args, kwargs)`` to run after this optimizer's ``step``."""
        return _register(self._optimizer_step_post_hooks, hook)

    def register_state_dict_pre_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """Register ``hook(optimizer)`` to run before ``state_dict()`` builds its result."""
        return _register(self._optimizer_state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """Register ``hook(optimizer, state_dict) -> state_dict or None`` run after ``state_dict()``."""
        return _register(self._optimizer_state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """Register ``hook(optimizer, state_dict) -> state_dict or None`` run before loading."""
        return _register(self._optimizer_load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """Register ``hook(optimizer)`` run after ``load_state_dict``."""
        return _register(self._optimizer_load_state_dict_post_hooks, hook, prepend)

    # -- state dict -----------------------------------------------------------------------
    def state_dict(self) -> dict:
        """The optimizer's state in torch's layout.

        Returns:
            ``{"state": {param_id: {...}}, "param_groups": [{..., "params": [ids]}]}`` where
            parameters are numbered in the order they appear across groups. State tensors are
            the optimizer's own (not copies), as in torch.
        """
        for hook in self._optimizer_state_dict_pre_hooks.values():
            hook(self)
        mapping: dict[int, int] = {}
        start = 0

        def pack(group: dict) -> dict:
            nonlocal start
            packed = {k: v for k, v in group.items() if k != "params"}
            mapping.update({id(p): i for i, p in enumerate(group["params"], start) if id(p) not in mapping})
            packed["params"] = [mapping[id(p)] for p in group["params"]]
            start += len(packed["params"])
            return packed

        groups = [pack(g) for g in self.param_groups]
        state = {(mapping[id(k)] if isinstance(k, tdx.Tensor) else k): v for k, v in self.state.items()}
        result = {"state": state, "param_groups": groups}
        for hook in self._optimizer_state_dict_post_hooks.values():
            out = hook(self, result)
            if out is not None:
                result = out
        return result

    def load_state_dict(self, state_dict: dict) -> None:
        """Load a state dict written by ``state_dict()`` (of tdx or, converted to tdx tensors, of torch).

        Tensors in the state are copied onto each parameter's device (and cast to its dtype when
        the parameter is floating point), except ``step`` which is kept as given, as torch does.

        Raises:
            ValueError: the number of groups or of parameters in a group differs.
        """
        state_dict = dict(state_dict)
        for hook in self._optimizer_load_state_dict_pre_hooks.values():
            out = hook(self, state_dict)
            if out is not None:
                state_dict = out
        groups = self.param_groups
        saved_groups = deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise tdx.TdxValueError(
                f"loaded state dict has a different number of parameter groups ({len(saved_groups)}, "
                f"the optimizer has {len(groups)})")
        for g, s in zip(groups, saved_groups):
            if len(g["params"]) != len(s["params"]):
                raise tdx.TdxValueError(
                    "loaded state dict contains a parameter group that doesn't match the size of "
                    f"optimizer's group ({len(s['params'])} saved, {len(g['params'])} in the optimizer)")
        id_map = dict(zip(itertools.chain.from_iterable(g["params"] for g in saved_groups),
                          itertools.chain.from_iterable(g["params"] for g in groups)))
        policy = {}
        for pg in saved_groups:
            for pid in pg["params"]:
                policy[pid] = bool(pg.get("fused", False)) or bool(pg.get("capturable", False))

        def cast(param, value, pid, key=None):
            if isinstance(value, tdx.Tensor):
                if key == "step":
                    if policy.get(pid, False):
                        return value.to(dtype=tdx.float32, device=param.device)
                    return value
                if param.is_floating_point():
                    return value.to(dtype=param.dtype, device=param.device)
                return value.to(device=param.device)
            if isinstance(value, dict):
                return {k: cast(param, v, pid, key=k) for k, v in value.items()}
            if isinstance(value, Iterable) and not isinstance(value, (str, bytes)):
                return type(value)(cast(param, v, pid) for v in value)
            return value

        state: defaultdict = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                state[id_map[k]] = cast(id_map[k], v, k)
            else:
                state[k] = v

        def update(group: dict, new: dict) -> dict:
            new["params"] = group["params"]
            if "param_names" in group and "param_names" not in new:
                new["param_names"] = group["param_names"]
            return new

        self.__setstate__({"state": state,
                           "param_groups": [update(g, n) for g, n in zip(groups, saved_groups)]})
        for hook in self._optimizer_load_state_dict_post_hooks.values():
            hook(self)

    # -- gradients and groups -------------------------------------------------------------
    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of every optimized parameter.

        Args:
            set_to_none: ``True`` (default) sets ``.grad`` to ``None``; ``False`` detaches the
                gradient from any graph and zeroes it in place, as torch does.
        """
        for group in self.param_groups:
            for p in group["params"]:
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
                    # executors that hand out a fresh wrapper per read keep the zeroed one
                    if p.grad is not grad:
                        p.grad = grad

    def step(self, closure: Callable | None = None):
        """Perform one optimization step.

        The closure (if any) runs with gradients enabled; then every param group is updated
        under ``no_grad`` by the optimizer's ``_update_group``. Optimizers without it (and
        subclasses that do not override ``step``) raise ``NotImplementedError``, as torch's base.

        Args:
            closure: optional callable re-evaluating the model and returning the loss.

        Returns:
            The closure's loss, or None.
        """
        if type(self)._update_group is Optimizer._update_group:
            raise NotImplementedError
        loss = None
        if closure is not None:
            with tdx.enable_grad():
                loss = closure()
        with tdx.no_grad():
            for group in self.param_groups:
                self._update_group(group)
        return loss

    step = _hooked_step(step)

    def _update_group(self, group: dict) -> None:
        """Update the parameters of one param group in place (each optimizer's arithmetic)."""
        raise NotImplementedError

    def _grads(self, group: dict, negate_for_maximize: bool = False):
        """Yield ``(param, grad, state)`` for the group's parameters that have a gradient.

        Each gradient is read once; complex parameters are refused with the optimizer's name.

        Args:
            group: a param group.
            negate_for_maximize: yield ``-grad`` when the group's ``maximize`` is set.
        """
        name = type(self).__name__
        for p in group["params"]:
            grad = p.grad
            if grad is None:
                continue
            refuse_complex(p, name)
            if negate_for_maximize and group["maximize"]:
                grad = -grad
            yield p, grad, self.state[p]

    def add_param_group(self, param_group: dict) -> None:
        """Add a param group (e.g. to fine-tune layers unfrozen during training).

        Args:
            param_group: a dict with ``"params"`` (a tensor, or a list of tensors or of
                ``(name, tensor)`` pairs) and any hyper-parameters overriding the defaults.

        Raises:
            TypeError: not a dict, params in a set, or a non-tensor parameter.
            ValueError: a non-leaf tensor, a missing required hyper-parameter, names on some
                params only, or a parameter already in another group.
        """
        if not isinstance(param_group, dict):
            raise tdx.TdxTypeError(f"param_group must be a dict, but got {type(param_group)}")
        params = param_group["params"]
        if isinstance(params, tdx.Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise tdx.TdxTypeError(
                "optimizer parameters need to be organized in ordered collections, but the ordering "
                "of tensors in sets will change between runs. Please use a list instead.")
        else:
            param_group["params"] = list(params)
        tensors, names = [], []
        for p in param_group["params"]:
            if isinstance(p, tuple):
                names.append(p[0])
                tensors.append(p[1])
            else:
                tensors.append(p)
        param_group["params"] = tensors
        if names:
            if len(names) != len(tensors):
                raise tdx.TdxValueError(
                    "all optimizer params should be with/without names. Some param names are missing")
            param_group["param_names"] = names
        for p in tensors:
            if not isinstance(p, tdx.Tensor):
                raise tdx.TdxTypeError(
                    f"optimizer can only optimize Tensors, but one of the params is {_typename(p)}")
            if not self.defaults.get("differentiable", None) and not (
                    p.is_leaf or getattr(p, "retains_grad", False)):
                raise tdx.TdxValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise tdx.TdxValueError(
                    f"parameter group didn't specify a value of required optimization parameter {name}")
            param_group.setdefault(name, default)
        if len(tensors) != len({id(p) for p in tensors}):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; "
                          "in future, this will cause an error; "
                          "see github.com/pytorch/pytorch/issues/40967 for more information", stacklevel=3)
        seen: set[int] = set()
        for group in self.param_groups:
            seen.update(id(p) for p in group["params"])
            if ("param_names" in param_group) != ("param_names" in group):
                which = "with names" if "param_names" in param_group else "without names"
                raise tdx.TdxValueError(
                    "all optimizer param groups should be with/without names. "
                    f"cannot add param group {which} to the optimizer")
        if not seen.isdisjoint(id(p) for p in tensors):
            raise tdx.TdxValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)


def _typename(obj: Any) -> str:
    if isinstance(obj, tdx.Tensor):
        return "tdx.Tensor"
    module = type(obj).__module__
    return type(obj).__qualname__ if module == "builtins" else f"{module}.{type(obj).__qualname__}"
