"""Activation modules of ``tdx.nn`` (``ReLU``, ``GELU``, ``Softmax``, ``PReLU``...): thin modules over
``tdx.nn.functional`` with torch's constructor arguments, ``inplace`` flags and ``extra_repr``.

``PReLU`` holds a learnable slope initialised to ``init``. This module must never import torch
or mlx.
"""

from __future__ import annotations

import warnings

import tdx
from .. import functional as F
from ..parameter import Parameter
from . import _default_init
from .module import Module

__all__ = ["Threshold", "ReLU", "RReLU", "Hardtanh", "ReLU6", "Sigmoid", "Hardsigmoid", "Tanh", "SiLU", "Mish",
           "Hardswish", "ELU", "CELU", "SELU", "GLU", "GELU", "Hardshrink", "LeakyReLU", "LogSigmoid", "Softplus",
           "Softshrink", "PReLU", "Softsign", "Tanhshrink", "Softmin", "Softmax", "Softmax2d", "LogSoftmax"]


def _inplace_repr(inplace: bool, lead: str = "") -> str:
    return f"{lead}inplace=True" if inplace else ""


class Threshold(Module):
    """``y = x if x > threshold else value``."""

    __constants__ = ["threshold", "value", "inplace"]

    def __init__(self, threshold: float, value: float, inplace: bool = False) -> None:
        super().__init__()
        self.threshold, self.value, self.inplace = threshold, value, inplace

    def forward(self, input):  # noqa: A002 - torch's name
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self) -> str:
        return f"threshold={self.threshold}, value={self.value}{_inplace_repr(self.inplace, ', ')}"


class _Inplace(Module):
    """An activation whose only argument is ``inplace`` (repr ``inplace=True`` when set)."""

    __constants__ = ["inplace"]
    _fn = None

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input):  # noqa: A002 - torch's name
        return type(self)._fn(input, inplace=self.inplace)

    def extra_repr(self) -> str:
        return _inplace_repr(self.inplace)


class ReLU(_Inplace):
    """``max(0, x)``."""

    _fn = staticmethod(F.relu)


class ReLU6(_Inplace):
    """``min(max(0, x), 6)``."""

    _fn = staticmethod(F.relu6)


class SELU(_Inplace):
    """Scaled ELU with torch's fixed ``alpha`` and ``scale``."""

    _fn = staticmethod(F.selu)


class SiLU(_Inplace):
    """``x * sigmoid(x)``."""

    _fn = staticmethod(F.silu)


class Mish(_Inplace):
    """``x * tanh(softplus(x))``."""

    _fn = staticmethod(F.mish)


class Hardsigmoid(_Inplace):
    """``relu6(x + 3) / 6`` (no ``extra_repr``, as torch's)."""

    _fn = staticmethod(F.hardsigmoid)

    def extra_repr(self) -> str:
        return ""


class Hardswish(_Inplace):
    """``x * relu6(x + 3) / 6`` (no ``extra_repr``, as torch's)."""

    _fn = staticmethod(F.hardswish)

    def extra_repr(self) -> str:
        return ""


class RReLU(Module):
    """Randomized leaky ReLU: a slope from ``U(lower, upper)`` while training, their mean in eval mode."""

    __constants__ = ["lower", "upper", "inplace"]

    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3, inplace: bool = False) -> None:
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, input):  # noqa: A002 - torch's name
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"lower={self.lower}, upper={self.upper}{_inplace_repr(self.inplace, ', ')}"


class Hardtanh(Module):
    """``x`` clamped to ``[min_val, max_val]`` (``min_value``/``max_value``: torch's deprecated names)."""

    __constants__ = ["min_val", "max_val", "inplace"]

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False, min_value=None,
                 max_value=None) -> None:
        super().__init__()
        if min_value is not None:
            warnings.warn("keyword argument `min_value` is deprecated and rename to `min_val`", FutureWarning,
                          stacklevel=2)
            min_val = min_value
        if max_value is not None:
            warnings.warn("keyword argument `max_value` is deprecated and rename to `max_val`", FutureWarning,
                          stacklevel=2)
            max_val = max_value
        if max_val <= min_val:
            raise tdx.TdxValueError(f"Hardtanh: max_val ({max_val}) must be greater than min_val ({min_val})")
        self.min_val, self.max_val, self.inplace = min_val, max_val, inplace

    def forward(self, input):  # noqa: A002 - torch's name
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}{_inplace_repr(self.inplace, ', ')}"


class _Plain(Module):
    """An activation without arguments."""

    _fn = None

    def forward(self, input):  # noqa: A002 - torch's name
        return type(self)._fn(input)


class Sigmoid(_Plain):
    """``1 / (1 + exp(-x))``."""

    _fn = staticmethod(F.sigmoid)


class Tanh(_Plain):
    """``tanh(x)``."""

    _fn = staticmethod(F.tanh)


class LogSigmoid(_Plain):
    """``log(sigmoid(x))``, computed stably."""

    _fn = staticmethod(F.logsigmoid)


class Softsign(_Plain):
    """``x / (1 + |x|)``."""

    _fn = staticmethod(F.softsign)


class Tanhshrink(_Plain):
    """``x - tanh(x)``."""

    _fn = staticmethod(F.tanhshrink)


class ELU(Module):
    """``x`` if positive, else ``alpha * (exp(x) - 1)``."""

    __constants__ = ["alpha", "inplace"]

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input):  # noqa: A002 - torch's name
        return F.elu(input, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}{_inplace_repr(self.inplace, ', ')}"


class CELU(ELU):
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``."""

    def forward(self, input):  # noqa: A002 - torch's name
        return F.celu(input, self.alpha, self.inplace)


class GLU(Module):
    """Gated linear unit: ``a * sigmoid(b)`` for the two halves of ``dim``."""

    __constants__ = ["dim"]

    def __init__(self, dim: int = -1) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input):  # noqa: A002 - torch's name
        return F.glu(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class GELU(Module):
    """Gaussian error linear unit, exact (``approximate="none"``) or its ``"tanh"`` approximation."""

    __constants__ = ["approximate"]

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        self.approximate = approximate

    def forward(self, input):  # noqa: A002 - torch's name
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class Hardshrink(Module):
    """``x`` where ``|x| > lambd``, else 0."""

    __constants__ = ["lambd"]

    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__()
        self.lambd = lambd

    def forward(self, input):  # noqa: A002 - torch's name
        return F.hardshrink(input, self.lambd)

    def extra_repr(self) -> str:
        return f"{self.lambd}"


class Softshrink(Hardshrink):
    """``x - lambd`` above ``lambd``, ``x + lambd`` below ``-lambd``, else 0."""

    def forward(self, input):  # noqa: A002 - torch's name
        return F.softshrink(input, self.lambd)


class LeakyReLU(Module):
    """``x`` if positive, else ``negative_slope * x``."""

    __constants__ = ["inplace", "negative_slope"]

    def __init__(self, negative_slope: float = 1e-2, inplace: bool = False) -> None:
        super().__init__()
        self.negative_slope, self.inplace = negative_slope, inplace

    def forward(self, input):  # noqa: A002 - torch's name
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}{_inplace_repr(self.inplace, ', ')}"


class Softplus(Module):
    """``log(1 + exp(beta * x)) / beta``, linear above ``threshold``."""

    __constants__ = ["beta", "threshold"]

    def __init__(self, beta: float = 1.0, threshold: float = 20.0) -> None:
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, input):  # noqa: A002 - torch's name
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class PReLU(Module):
    """Leaky ReLU with a learnable slope: one shared (``num_parameters=1``) or one per channel (dim 1).

    Args:
        num_parameters: 1 or the number of channels.
        init: the slopes' initial value. Default: 0.25.
        device: device of the slopes.
        dtype: dtype of the slopes.
    """

    __constants__ = ["num_parameters"]

    def __init__(self, num_parameters: int = 1, init: float = 0.25, device=None, dtype=None) -> None:
        self.num_parameters = num_parameters
        super().__init__()
        self.init = init
        self.weight = Parameter(tdx.empty(num_parameters, device=device, dtype=dtype))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Set every slope to ``init``."""
        _default_init.fill_(self.weight, self.init)

    def forward(self, input):  # noqa: A002 - torch's name
        return F.prelu(input, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"


class _SoftmaxFamily(Module):
    __constants__ = ["dim"]
    _fn = None

    def __init__(self, dim=None) -> None:
        super().__init__()
        self.dim = dim

    def __setstate__(self, state) -> None:
        super().__setstate__(state)
        if not hasattr(self, "dim"):
            self.dim = None

    def forward(self, input):  # noqa: A002 - torch's name
        return type(self)._fn(input, self.dim, _stacklevel=5)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Softmin(_SoftmaxFamily):
    """``softmax(-x)`` along ``dim``."""

    _fn = staticmethod(F.softmin)


class Softmax(_SoftmaxFamily):
    """``exp(x) / sum(exp(x))`` along ``dim``."""

    _fn = staticmethod(F.softmax)


class LogSoftmax(_SoftmaxFamily):
    """``log(softmax(x))`` along ``dim``, computed stably."""

    _fn = staticmethod(F.log_softmax)


class Softmax2d(Module):
    """Softmax over the channels of ``(N, C, H, W)`` or ``(C, H, W)`` input.

    Raises:
        TdxValueError: the input is not 3-D or 4-D.
    """

    def forward(self, input):  # noqa: A002 - torch's name
        if not isinstance(input, tdx.Tensor) or input.ndim not in (3, 4):
            raise tdx.TdxValueError(f"Softmax2d: expected input to be 3D or 4D, got "
                                    f"{getattr(input, 'ndim', type(input).__name__)}D instead")
        return F.softmax(input, -3, _stacklevel=5)
