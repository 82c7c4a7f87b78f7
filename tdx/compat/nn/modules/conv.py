"""Convolution modules of ``tdx.nn``: ``Conv1d/2d/3d``, ``ConvTranspose1d/2d/3d`` and their lazy forms.

Parameters are created on the requested device and dtype and initialised as torch's
(``kaiming_uniform_(a=sqrt(5))``, bias from ``U(-1/sqrt(fan_in), 1/sqrt(fan_in))``), so on a torch
device the same seed gives torch's exact values. Non-zero padding modes pad with ``F.pad`` first,
as torch's. This module must never import torch or mlx.
"""

from __future__ import annotations

import math

import tdx
from .. import functional as F
from ..parameter import Parameter, UninitializedParameter
from . import _default_init as init
from .module import Module

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d", "LazyConv1d",
           "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d", "LazyConvTranspose2d", "LazyConvTranspose3d"]

_PADDING_MODES = {"zeros", "reflect", "replicate", "circular"}
_BUILDING_LAZY = [0]  # > 0 while a lazy module's eager constructor runs: no parameter draws then


def ntuple(value, n: int) -> tuple:
    """torch's ``_ntuple(n)``: a sequence as a tuple, anything else repeated ``n`` times."""
    if isinstance(value, (list, tuple)):
        return tuple(value)
    return (value,) * n


def _positive_int(value, name):
    if isinstance(value, bool) or not isinstance(value, int):
        raise tdx.TdxTypeError(f"{name} must be an int, got {type(value).__name__} ({value!r})")
    return value


class _ConvNd(Module):
    """The shared state of convolution modules (torch's ``_ConvNd``)."""

    __constants__ = ["stride", "padding", "dilation", "groups", "padding_mode", "output_padding", "in_channels",
                     "out_channels", "kernel_size"]
    _nd = 0

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation, transposed,
                 output_padding, groups, bias, padding_mode, device=None, dtype=None) -> None:
        super().__init__()
        in_channels, out_channels = _positive_int(in_channels, "in_channels"), _positive_int(out_channels,
                                                                                          "out_channels")
        if groups <= 0:
            raise tdx.TdxValueError(f"groups must be a positive integer (got groups={groups})")
        if in_channels % groups != 0:
            raise tdx.TdxValueError(f"in_channels must be divisible by groups (got in_channels={in_channels}, "
                                    f"groups={groups})")
        if out_channels % groups != 0:
            raise tdx.TdxValueError(f"out_channels must be divisible by groups (got out_channels={out_channels}, "
                                    f"groups={groups})")
        valid = {"same", "valid"}
        if isinstance(padding, str):
            if padding not in valid:
                raise tdx.TdxValueError(f"Invalid padding string {padding!r}, should be one of {valid}")
            if padding == "same" and any(s != 1 for s in stride):
                raise tdx.TdxValueError("padding='same' is not supported for strided convolutions")
        if padding_mode not in _PADDING_MODES:
            raise tdx.TdxValueError(f"padding_mode must be one of {_PADDING_MODES}, but got "
                                    f"padding_mode='{padding_mode}'")
        self.in_channels, self.out_channels, self.kernel_size = in_channels, out_channels, kernel_size
        self.stride, self.padding, self.dilation = stride, padding, dilation
        self.transposed, self.output_padding, self.groups = transposed, output_padding, groups
        self.padding_mode = padding_mode
        if isinstance(padding, str):
            self._reversed_padding_repeated_twice = [0, 0] * len(kernel_size)
            if padding == "same":
                for d, k, i in zip(dilation, kernel_size, range(len(kernel_size) - 1, -1, -1)):
                    total = d * (k - 1)
                    self._reversed_padding_repeated_twice[2 * i] = total // 2
                    self._reversed_padding_repeated_twice[2 * i + 1] = total - total // 2
        else:
            self._reversed_padding_repeated_twice = [p for p in reversed(padding) for _ in range(2)]
        shape = ((in_channels, out_channels // groups) if transposed else (out_channels, in_channels // groups))
        self.weight = Parameter(tdx.empty(shape + tuple(kernel_size), device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(tdx.empty(out_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """``kaiming_uniform_(weight, a=sqrt(5))``, then ``bias`` from ``U(-1/sqrt(fan_in), 1/sqrt(fan_in))``."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan = init.fan_in(self.weight)
            if fan != 0:
                bound = 1 / math.sqrt(fan)
                init.uniform_(self.bias, -bound, bound)

    def extra_repr(self) -> str:
        s = "{in_channels}, {out_channels}, kernel_size={kernel_size}, stride={stride}"
        if self.padding != (0,) * len(self.padding):
            s += ", padding={padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += ", dilation={dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            s += ", output_padding={output_padding}"
        if self.groups != 1:
            s += ", groups={groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += ", padding_mode={padding_mode}"
        return s.format(**self.__dict__)

    def __setstate__(self, state) -> None:
        super().__setstate__(state)
        if not hasattr(self, "padding_mode"):
            self.padding_mode = "zeros"


class _Conv(_ConvNd):
    _fn = None

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, padding_mode="zeros", device=None, dtype=None) -> None:
        n = self._nd
        super().__init__(in_channels, out_channels, ntuple(kernel_size, n), ntuple(stride, n),
                         padding if isinstance(padding, str) else ntuple(padding, n), ntuple(dilation, n), False,
                         ntuple(0, n), groups, bias, padding_mode, device=device, dtype=dtype)

    def _conv_forward(self, input, weight, bias):  # noqa: A002 - torch's name
        fn = type(self)._fn
        if self.padding_mode != "zeros":
            return fn(F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode), weight, bias,
                      self.stride, ntuple(0, self._nd), self.dilation, self.groups)
        return fn(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def forward(self, input):  # noqa: A002 - torch's name
        """The convolution of ``input`` by ``weight`` (plus ``bias``)."""
        return self._conv_forward(input, self.weight, self.bias)


class Conv1d(_Conv):
    """1-D convolution over ``(N, C_in, L)`` (or ``(C_in, L)``).

    Args:
        in_channels, out_channels: channel counts (divisible by ``groups``).
        kernel_size, stride, dilation: an int or a 1-tuple.
        padding: an int, a 1-tuple, ``"valid"`` or ``"same"``.
        groups: channel groups.
        bias: learn a bias.
        padding_mode: ``"zeros"``, ``"reflect"``, ``"replicate"`` or ``"circular"``.
        device, dtype: of the parameters.

    Raises:
        TdxValueError: bad groups, padding string or padding mode (torch's ValueErrors).
    """

    _nd = 1
    _fn = staticmethod(F.conv1d)


class Conv2d(_Conv):
    """2-D convolution over ``(N, C_in, H, W)``; see :class:`Conv1d`."""

    _nd = 2
    _fn = staticmethod(F.conv2d)


class Conv3d(_Conv):
    """3-D convolution over ``(N, C_in, D, H, W)``; see :class:`Conv1d`."""

    _nd = 3
    _fn = staticmethod(F.conv3d)


class _ConvTransposeNd(_ConvNd):
    _fn = None

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None) -> None:
        if padding_mode != "zeros":
            raise tdx.TdxValueError(f'Only "zeros" padding mode is supported for {self.__class__.__name__} (got '
                                    f'{padding_mode!r})')
        n = self._nd
        super().__init__(in_channels, out_channels, ntuple(kernel_size, n), ntuple(stride, n), ntuple(padding, n),
                         ntuple(dilation, n), True, ntuple(output_padding, n), groups, bias, padding_mode,
                         device=device, dtype=dtype)

    def _output_padding(self, input, output_size, stride, padding, kernel_size, num_spatial_dims,  # noqa: A002
                        dilation=None):
        """The output padding that gives ``output_size`` (torch's rule and its ValueError)."""
        if output_size is None:
            return ntuple(self.output_padding, num_spatial_dims)
        has_batch = input.ndim == num_spatial_dims + 2
        lead = 2 if has_batch else 1
        output_size = list(output_size)
        if len(output_size) == lead + num_spatial_dims:
            output_size = output_size[lead:]
        if len(output_size) != num_spatial_dims:
            raise tdx.TdxValueError(f"ConvTranspose{num_spatial_dims}D: for {input.ndim}D input, output_size must "
                                    f"have {num_spatial_dims} or {lead + num_spatial_dims} elements (got "
                                    f"{len(output_size)})")
        mins, maxs = [], []
        for d in range(num_spatial_dims):
            size = ((input.shape[d + lead] - 1) * stride[d] - 2 * padding[d]
                    + (dilation[d] if dilation is not None else 1) * (kernel_size[d] - 1) + 1)
            mins.append(size)
            maxs.append(size + stride[d] - 1)
        for size, lo, hi in zip(output_size, mins, maxs):
            if size < lo or size > hi:
                raise tdx.TdxValueError(f"requested an output size of {output_size}, but valid sizes range from "
                                        f"{mins} to {maxs} (for an input of {list(input.shape[lead:])})")
        return [s - m for s, m in zip(output_size, mins)]

    def forward(self, input, output_size=None):  # noqa: A002 - torch's name
        """The transposed convolution of ``input``; ``output_size`` picks among the sizes a stride allows."""
        n = self._nd
        out_pad = self._output_padding(input, output_size, self.stride, self.padding, self.kernel_size, n,
                                       self.dilation)
        return type(self)._fn(input, self.weight, self.bias, self.stride, self.padding, out_pad, self.groups,
                              self.dilation)


class ConvTranspose1d(_ConvTransposeNd):
    """1-D transposed convolution over ``(N, C_in, L)``; weight ``(C_in, C_out / groups, k)``.

    Raises:
        TdxValueError: a padding mode other than ``"zeros"``, bad groups, an impossible ``output_size``.
    """

    _nd = 1
    _fn = staticmethod(F.conv_transpose1d)


class ConvTranspose2d(_ConvTransposeNd):
    """2-D transposed convolution over ``(N, C_in, H, W)``; see :class:`ConvTranspose1d`."""

    _nd = 2
    _fn = staticmethod(F.conv_transpose2d)


class ConvTranspose3d(_ConvTransposeNd):
    """3-D transposed convolution over ``(N, C_in, D, H, W)``; see :class:`ConvTranspose1d`."""

    _nd = 3
    _fn = staticmethod(F.conv_transpose3d)


class _LazyConvMixin:
    """``in_channels`` taken from the first input's channel dim; the module then becomes its eager class."""

    cls_to_become = None

    def _lazy_init(self, bias, device, dtype) -> None:
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)
        self._lazy_hook = self.register_forward_pre_hook(_LazyConvMixin._infer_parameters)

    def has_uninitialized_params(self) -> bool:
        """Whether a parameter still waits for its shape."""
        return any(isinstance(p, UninitializedParameter) for p in (self.weight, self.bias) if p is not None)

    def reset_parameters(self) -> None:
        """Initialise as the eager class once the parameters have shapes (nothing before)."""
        if not _BUILDING_LAZY[0] and not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()

    def initialize_parameters(self, input, *args) -> None:  # noqa: A002 - torch's name
        """Give the parameters their shapes from ``input``'s channels, and initialise them."""
        if not self.has_uninitialized_params():
            return
        batched = input.ndim == self._nd + 2
        self.in_channels = input.shape[1 if batched else 0]
        if self.in_channels % self.groups != 0:
            raise tdx.TdxValueError(f"in_channels must be divisible by groups (got in_channels={self.in_channels}, "
                                    f"groups={self.groups})")
        with tdx.no_grad():
            if self.transposed:
                shape = (self.in_channels, self.out_channels // self.groups)
            else:
                shape = (self.out_channels, self.in_channels // self.groups)
            self.weight.materialize(shape + tuple(self.kernel_size))
            if self.bias is not None:
                self.bias.materialize((self.out_channels,))
            self.reset_parameters()

    @staticmethod
    def _infer_parameters(module, args) -> None:
        module.initialize_parameters(*args)
        module._lazy_hook.remove()
        del module._lazy_hook
        module.__class__ = module.cls_to_become


def _lazy(eager, transposed):
    def __init__(self, out_channels, kernel_size, stride=1, padding=0, *rest, bias=True, device=None, dtype=None,
                 **kwargs):
        # built with placeholder input channels and no draws; then the weight waits for the first input
        _BUILDING_LAZY[0] += 1
        try:
            if len(rest) > 2:  # bias given by position (after dilation/output_padding and groups)
                bias, rest = rest[2], rest[:2] + rest[3:]
            groups = kwargs.get("groups", rest[1] if len(rest) > 1 else 1)
            eager.__init__(self, groups, out_channels, kernel_size, stride, padding, *rest, bias=False,
                           device=device, dtype=dtype, **kwargs)
        finally:
            _BUILDING_LAZY[0] -= 1
        self.in_channels = 0
        self._lazy_init(bias, device, dtype)

    name = "Lazy" + eager.__name__
    doc = (f"A :class:`{eager.__name__}` whose ``in_channels`` is inferred from the first input's channel dim; it "
           f"then becomes a plain ``{eager.__name__}``.")
    return type(name, (_LazyConvMixin, eager), {"__init__": __init__, "cls_to_become": eager, "__doc__": doc,
                                                "__module__": __name__})


LazyConv1d = _lazy(Conv1d, False)
LazyConv2d = _lazy(Conv2d, False)
LazyConv3d = _lazy(Conv3d, False)
LazyConvTranspose1d = _lazy(ConvTranspose1d, True)
LazyConvTranspose2d = _lazy(ConvTranspose2d, True)
LazyConvTranspose3d = _lazy(ConvTranspose3d, True)
