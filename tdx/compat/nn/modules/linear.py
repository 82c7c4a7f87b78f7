"""Linear layers of ``tdx.nn``: the affine maps ``Linear`` and ``Bilinear`` and the lazy
``LazyLinear`` (whose ``in_features`` is taken from the first input).

Parameters are created on the requested device and dtype and initialised as torch's
(``reset_parameters``), so on a torch device the same seed gives torch's exact values. This
module must never import torch or mlx.
"""

from __future__ import annotations

import math

import tdx
from .. import functional as F
from .._kernels import NOT_NATIVE as _NOT_NATIVE, linear_kernel as _linear_kernel, untaped_linear as _untaped_linear
from ...._errors import NATIVE_ERRORS, TdxRuntimeError
from ...amp.autocast_state import ON as _AUTOCAST
from ..parameter import Parameter, UninitializedParameter
from . import _default_init as init
from .module import Module

_Tensor = tdx.Tensor
_new = object.__new__
_MISSING = object()  # a parameter absent from the table
_NO_TABLE: dict = {}  # the table of a module whose __init__ never ran: nothing in it

__all__ = ["Linear", "Bilinear", "LazyLinear", "NonDynamicallyQuantizableLinear"]


def _count(value, name: str, cls: str) -> int:
    """``value`` as a feature count (an int, not negative)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise tdx.TdxTypeError(f"{cls}: {name} must be an int, got {type(value).__name__} ({value!r})")
    if value < 0:
        raise TdxRuntimeError(f"{cls}: Trying to create tensor with negative dimension {value}: {name} must be "
                              "non-negative")
    return value


class Linear(Module):
    """``y = x @ weight.T + bias``.

    Args:
        in_features: size of each input sample.
        out_features: size of each output sample.
        bias: learn an additive bias. Default: ``True``.
        device: device of the parameters.
        dtype: dtype of the parameters.

    Attributes:
        weight: ``(out_features, in_features)``, from ``U(-1/sqrt(in_features), 1/sqrt(in_features))``.
        bias: ``(out_features,)``, from the same distribution.
    """

    __constants__ = ["in_features", "out_features"]

    def __init__(self, in_features: int, out_features: int, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__()
        self.in_features = _count(in_features, "in_features", "Linear")
        self.out_features = _count(out_features, "out_features", "Linear")
        self.weight = Parameter(tdx.empty((out_features, in_features), device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(tdx.empty(out_features, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Draw ``weight`` by kaiming uniform (``a = sqrt(5)``), then ``bias`` from ``U(-1/sqrt(fan_in), ...)``."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan = init.fan_in(self.weight)
            bound = 1 / math.sqrt(fan) if fan > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input):  # noqa: A002 - torch's name
        """``F.linear(input, weight, bias)``."""
        d = self.__dict__
        if type(self) is Linear and "weight" not in d and "bias" not in d:
            # a plain Linear's parameters, read from its table: what ``self.weight`` finds through __getattr__ (no
            # class attribute or instance entry shadows them), without the failed lookup before it; missing ones
            # (deleted, or moved to a buffer) take that lookup, with its error
            p = d.get("_parameters", _NO_TABLE)
            weight, bias = p.get("weight", _MISSING), p.get("bias", _MISSING)
            if weight is _MISSING or weight is None or bias is _MISSING:
                weight, bias = self.weight, self.bias
        else:
            weight, bias = self.weight, self.bias
        # the per-call path on torch executors, inlined (no autocast region, plain tensors and Parameters of one
        # executor; a subclass, whose __torch_function__ torch would call, takes F.linear):
        # torch's kernel on the natives and the result wrapped, in this one frame
        if type(input) is _Tensor and (type(weight) is Parameter or type(weight) is _Tensor) and not _AUTOCAST[0]:
            ex = input._ex
            k = ex.linear_kernel
            if k is not None and weight._ex is ex:
                n = None
                try:
                    if bias is None:
                        n = k(input._n, weight._n)
                    elif (type(bias) is Parameter or type(bias) is _Tensor) and bias._ex is ex:
                        n = k(input._n, weight._n, bias._n)
                except NATIVE_ERRORS:
                    n = None  # the full path raises tdx's typed error for the same input
                if n is not None:
                    t = _new(_Tensor)
                    t._n = n
                    t._ex = ex
                    t._ag = t._view = t._dt = None
                    return t
            elif k is None:  # a taped executor (MLX): its kernel at once where the tape records nothing
                done = _untaped_linear(input, weight, bias, ex)
                return F.linear(input, weight, bias) if done is _NOT_NATIVE else done
        done = _linear_kernel(input, weight, bias)  # torch's kernel at once on torch executors
        return F.linear(input, weight, bias) if done is _NOT_NATIVE else done

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class NonDynamicallyQuantizableLinear(Linear):
    """The Linear layer MultiheadAttention uses as its ``out_proj`` (torch's name, which checkpoints' ``torch.load``
    allowlists name): torch marks it to keep quantization tooling away; here it is exactly :class:`Linear`."""


class Bilinear(Module):
    """``y = x1 @ weight[o] @ x2 + bias[o]`` for each output ``o``.

    Args:
        in1_features: size of each first input sample.
        in2_features: size of each second input sample.
        out_features: size of each output sample.
        bias: learn an additive bias. Default: ``True``.
        device: device of the parameters.
        dtype: dtype of the parameters.
    """

    __constants__ = ["in1_features", "in2_features", "out_features"]

    def __init__(self, in1_features: int, in2_features: int, out_features: int, bias: bool = True, device=None,
                 dtype=None) -> None:
        super().__init__()
        self.in1_features = _count(in1_features, "in1_features", "Bilinear")
        self.in2_features = _count(in2_features, "in2_features", "Bilinear")
        self.out_features = _count(out_features, "out_features", "Bilinear")
        self.weight = Parameter(tdx.empty((out_features, in1_features, in2_features), device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(tdx.empty(out_features, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Draw ``weight`` and ``bias`` from ``U(-1/sqrt(in1_features), 1/sqrt(in1_features))``."""
        bound = 1 / math.sqrt(self.weight.shape[1]) if self.weight.shape[1] else 0
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1, input2):
        """``F.bilinear(input1, input2, weight, bias)``."""
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


class LazyLinear(Linear):
    """A :class:`Linear` whose ``in_features`` is inferred from the last dim of the first input; it then
    becomes a plain ``Linear`` (its class changes, as torch's lazy modules do).

    Args:
        out_features: size of each output sample.
        bias: learn an additive bias. Default: ``True``.
        device: device of the parameters.
        dtype: dtype of the parameters.
    """

    cls_to_become = Linear

    def __init__(self, out_features: int, bias: bool = True, device=None, dtype=None) -> None:
        Module.__init__(self)
        self.in_features = 0
        self.out_features = _count(out_features, "out_features", "LazyLinear")
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)
        else:
            self.register_parameter("bias", None)
        self._lazy_hook = self.register_forward_pre_hook(LazyLinear._infer_parameters)

    def has_uninitialized_params(self) -> bool:
        """Whether a parameter still waits for its shape."""
        return any(isinstance(p, UninitializedParameter) for p in (self.weight, self.bias) if p is not None)

    def reset_parameters(self) -> None:
        """Initialise as :class:`Linear` once the parameters have shapes (nothing before)."""
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input) -> None:  # noqa: A002 - torch's name
        """Give the parameters their shapes from ``input``'s last dim, and initialise them."""
        if not self.has_uninitialized_params():
            return
        if not isinstance(input, tdx.Tensor) or input.ndim == 0:
            raise tdx.TdxValueError("LazyLinear: the first input must be a tensor of at least 1 dim (its last dim "
                                    "gives in_features)")
        with tdx.no_grad():
            self.in_features = input.shape[-1]
            self.weight.materialize((self.out_features, self.in_features))
            if self.bias is not None:
                self.bias.materialize((self.out_features,))
            self.reset_parameters()

    @staticmethod
    def _infer_parameters(module, args) -> None:
        module.initialize_parameters(*args)
        module._lazy_hook.remove()
        del module._lazy_hook
        module.__class__ = module.cls_to_become
