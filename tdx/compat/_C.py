"""``torch._C`` (minimal): the private names torch's Python code and real libraries call.

``_get_tracing_state()`` is None (tdx never runs a TorchScript trace), ``_get_accelerator()`` is the current
accelerator or ``cpu``, ``_infer_size(a, b)`` is the broadcast
shape of two shapes, ``_TensorMeta`` is the metaclass of ``Tensor`` (``type``), ``_log_api_usage_once`` (the
usage logging torchmetrics and Lightning call) records nothing, ``_are_functorch_transforms_active()`` is False
(tdx's transforms run no functorch interpreter stack), ``_disabled_torch_function_impl`` is what a tensor
subclass sets as ``__torch_function__`` to opt out of the protocol (``DisableTorchFunctionSubclass`` and
``DisableTorchFunction`` are torch's, from ``tdx._tensor.subclassing``), and ``_nn._parse_to`` parses ``Tensor.to``'s/``Module.to``'s arguments as torch's does, ``device`` is ``tdx.device``
and ``_distributed_rpc._is_current_rpc_agent_set()`` is False (tdx has no RPC agent). torch's dispatcher
names (``DispatchKey``, ``DispatchKeySet``, ``_ExcludeDispatchKeyGuard``, ``_dispatch_*``), with which compiled
libraries register their kernels, are real torch's, reached when asked for. TorchScript's IR
types (``Graph``, ``Value``...), which libraries name in annotations, are classes that refuse to be made. A name
not here is a ``NotProvidedAttributeError`` naming it. This module must never import a framework at import.
"""

from __future__ import annotations

import types as _types

from .._device import device  # noqa: F401 - torch._C.device is torch.device
from ..aliasing import refused as _refused

__all__: list = []


def _get_tracing_state():
    """None: no TorchScript trace is ever in progress under tdx."""
    return None


def _infer_size(a, b):
    """The shape ``a`` and ``b`` broadcast to, as a ``tdx.Size`` (torch's error when they do not)."""
    from .._tensor.shape import broadcast_shapes

    return broadcast_shapes(a, b)


_TensorMeta = type  # the metaclass of tdx.Tensor (torch's Tensor has its own; isinstance checks hold alike)


def _get_accelerator():
    """The current accelerator as a ``tdx.device`` (``torch.accelerator.current_accelerator()``), ``cpu`` where
    there is none, as torch's."""
    from .accelerator import current_accelerator

    found = current_accelerator()
    return device("cpu") if found is None else found


def _log_api_usage_once(event: str) -> None:
    """Record nothing: tdx has no API usage logger (torch's is off unless a C++ handler is installed)."""


def _are_functorch_transforms_active() -> bool:
    """False: tdx's ``func`` transforms run no functorch interpreter stack."""
    return False


from .._tensor.subclassing import (  # noqa: E402 - torch._C's names of the protocol
    DisableTorchFunction, DisableTorchFunctionSubclass, disabled_torch_function_impl as _disabled_torch_function_impl)


def _parse_to(*args, **kwargs):
    """``(device, dtype, non_blocking, memory_format)`` from ``to()``'s arguments, as ``torch._C._nn._parse_to``.

    Raises:
        TdxTypeError: an argument ``to()`` does not take.
    """
    from .nn.modules.module import _parse_to as parse

    memory_format = kwargs.get("memory_format")
    device, dtype, non_blocking = parse(args, dict(kwargs))
    if device is not None:
        from .. import device as make_device

        device = make_device(device)
    return device, dtype, non_blocking, memory_format


_nn = _types.ModuleType("torch._C._nn", "torch._C._nn: the argument parser of to().")
_nn._parse_to = _parse_to
_distributed_rpc = _types.ModuleType("torch._C._distributed_rpc", "torch._C._distributed_rpc: no RPC agent in tdx.")
_distributed_rpc._is_current_rpc_agent_set = lambda: False  # tdx never sets an RPC agent

# torch's dispatcher, where compiled libraries (torchvision's extension) register their kernels: these names are
# real torch's, reached once asked for (torchvision's registrations exclude autocast keys while they run)
_DISPATCHER = ("DispatchKey", "DispatchKeySet", "_ExcludeDispatchKeyGuard", "_IncludeDispatchKeyGuard",
               "_AutoDispatchBelowAutograd", "_dispatch_")


def __getattr__(name: str):
    if name.startswith(_DISPATCHER):
        from ..backends import _flags

        return getattr(_flags.require_torch(f"torch._C.{name}")._C, name)
    raise AttributeError(f"module 'tdx.compat._C' has no attribute '{name}'")


globals().update(_refused.namespace_names("torch._C"))  # TorchScript's IR types: isinstance is False, making one raises
