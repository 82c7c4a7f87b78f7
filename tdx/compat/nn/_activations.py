"""Activation functions of ``tdx.nn.functional`` (relu, gelu, softplus, softmax...), and the small
argument checks that the layer and loss modules share.

Each function has ``torch.nn.functional``'s signature, result dtype and error kinds, and is
composed from tdx tensor ops, so it runs on every executor and is differentiable wherever
those ops are (through torch's autograd, or tdx's tape on MLX). Half precision inputs are
computed in float32 and rounded once, as torch's CPU kernels compute them. Branches that
a ``where`` discards are fed safe values, so a discarded ``exp`` overflow never turns into a
NaN gradient; where torch's backward zeroes the gradient at a kink, so does ours.

This module must never import torch or mlx, and never touches executor internals: only
the public ``tdx`` API.
"""

from __future__ import annotations

import math
import warnings

import tdx
from . import _kernels
from ..._errors import TdxIndexError, TdxNotImplementedError, TdxRuntimeError, TdxTypeError, TdxValueError

_Tensor = tdx.Tensor
_F32 = tdx.float32

__all__ = ["threshold", "threshold_", "relu", "relu_", "relu6", "hardtanh", "hardtanh_", "leaky_relu",
           "leaky_relu_", "elu", "elu_", "selu", "selu_", "celu", "celu_", "gelu", "silu", "mish", "softplus",
           "softsign", "logsigmoid", "sigmoid", "tanh", "hardsigmoid", "hardswish", "tanhshrink", "softshrink",
           "hardshrink", "prelu", "glu", "softmax", "log_softmax", "softmin"]

# torch's names of dtypes in its "not implemented for 'Long'" messages
_TORCH_NAMES = {"bool": "Bool", "uint8": "Byte", "int8": "Char", "int16": "Short", "int32": "Int",
                "int64": "Long", "float16": "Half", "bfloat16": "BFloat16", "float32": "Float",
                "float64": "Double", "complex64": "ComplexFloat", "complex128": "ComplexDouble"}
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


# shared helpers ------------------------------------------------------------------------------------
def torch_name(dtype) -> str:
    """torch's name of ``dtype`` in error messages ('Float', 'Long'...)."""
    return _TORCH_NAMES.get(dtype.name, dtype.name)


def need_tensor(x, op: str, arg: str = "input"):
    """``x``, which must be a tdx Tensor.

    Raises:
        TdxTypeError: ``x`` is not a Tensor.
    """
    if not isinstance(x, tdx.Tensor):
        raise TdxTypeError(f"{op}(): argument '{arg}' must be Tensor, not {type(x).__name__}")
    return x


def need_float(x, op: str, kernel: str | None = None, complex_ok: bool = False):
    """``x``, which must be a tensor of a floating dtype (or complex where ``complex_ok``).

    Raises:
        TdxNotImplementedError: any other dtype, named as torch names it.
    """
    need_tensor(x, op)
    if x.dtype.is_floating_point or (complex_ok and x.dtype.is_complex):
        return x
    kinds = "floating point or complex tensors" if complex_ok else "floating point tensors"
    raise TdxNotImplementedError(f"\"{kernel or op}\" not implemented for '{torch_name(x.dtype)}' "
                                 f"({op} takes {kinds})")


def tuple_arg(value, nd: int, op: str, name: str) -> tuple:
    """``value`` (an int or a sequence of ``nd`` ints) as a tuple of ``nd`` ints.

    Raises:
        TdxRuntimeError: a sequence of another length (torch's wording).
        TdxTypeError: not an int or a sequence of ints.
    """
    if isinstance(value, bool):
        raise TdxTypeError(f"{op}(): argument '{name}' must be an int or a tuple of ints, not bool")
    if isinstance(value, int):
        return (value,) * nd
    try:
        out = tuple(int(v) for v in value)
    except TypeError:
        raise TdxTypeError(f"{op}(): argument '{name}' must be an int or a tuple of ints, not "
                           f"{type(value).__name__}") from None
    if len(out) == 1:
        return out * nd
    if len(out) != nd:
        raise TdxRuntimeError(f"expected {name} to be a single integer value or a list of {nd} values to match the "
                              f"convolution dimensions, but got {name}={list(out)}")
    return out


def opmath(x):
    """``x`` in the dtype its op computes in: float32 for float16/bfloat16, else its own."""
    return x.float() if x.dtype in (tdx.float16, tdx.bfloat16) else x


def wants_grad(*tensors) -> bool:
    """Whether a gradient will flow back to any of ``tensors``."""
    return tdx.is_grad_enabled() and any(isinstance(t, tdx.Tensor) and t.requires_grad for t in tensors)


def norm_dim(dim, ndim: int, op: str) -> int:
    """``dim`` as a non-negative index into ``ndim`` dims (a 0-d tensor takes -1 and 0).

    Raises:
        TdxTypeError: ``dim`` is not an int.
        TdxIndexError: ``dim`` is out of range.
    """
    if isinstance(dim, bool) or not isinstance(dim, int):
        raise TdxTypeError(f"{op}(): argument 'dim' must be int, not {type(dim).__name__}")
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise TdxIndexError(f"{op}(): Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got "
                            f"{dim})")
    return dim % n


def int_list(value, op: str, arg: str) -> tuple:
    """``value`` (a list, tuple or Size of ints) as a tuple.

    Raises:
        TdxTypeError: ``value`` is a bare int or holds a non-int, as torch's argument parser says.
    """
    if not isinstance(value, (list, tuple)):
        raise TdxTypeError(f"{op}(): argument '{arg}' must be tuple of ints, not {type(value).__name__}")
    for i, v in enumerate(value):
        if isinstance(v, bool) or not isinstance(v, int):
            if isinstance(v, tdx.Tensor) and v.ndim == 0 and not v.dtype.is_floating_point:
                continue
            raise TdxTypeError(f"{op}(): argument '{arg}' must be tuple of ints, but found element of type "
                               f"{type(v).__name__} at pos {i}")
    return tuple(int(v) for v in value)


def _apply(input, inplace, compute, op: str, kernel: str, complex_ok: bool = False):
    """``compute(input)``, or with ``inplace`` written into ``input`` (which must then be floating point)."""
    if not inplace:
        return compute(input)
    need_float(input, op, kernel, complex_ok=complex_ok)
    return write_inplace(input, compute)


def write_inplace(input, compute):
    """Write ``compute(input)`` into ``input`` and return it, as torch's in-place activations.

    The result is computed from a clone when autograd records ``input``, so that no value a
    backward pass needs is overwritten.
    """
    src = input.clone() if wants_grad(input) else input
    return input.copy_(compute(src))


def _kinks(out, x, inside):
    """``out``, with no gradient where ``inside`` is false (torch's backward at clamp boundaries)."""
    if not wants_grad(x):
        return out
    return tdx.where(inside, out, out.detach())


def log1pexp(z):
    """``log(1 + exp(z))`` for every ``z``: no overflow, and finite gradients in every branch."""
    pos = z > 0
    neg_abs = tdx.where(pos, -z, z)  # -|z|, whose gradient at 0 is +1 (the branch torch takes)
    return tdx.where(pos, z, 0.0) + neg_abs.exp().log1p()


# threshold family ------------------------------------------------------------------------------------
def _threshold(x, threshold, value, op):
    need_tensor(x, op)
    if x.dtype is tdx.bool or x.dtype.is_complex:
        raise TdxNotImplementedError(f"\"threshold_cpu\" not implemented for '{torch_name(x.dtype)}' "
                                     f"({op} takes real numeric tensors)")
    return x.masked_fill(x <= threshold, value)


def threshold(input, threshold, value, inplace=False):  # noqa: A002 - torch's names
    """``value`` where ``input <= threshold``, else ``input``.

    Args:
        input: a real tensor (integers keep their dtype; ``value`` is converted to it).
        threshold: the value at or below which elements are replaced.
        value: the replacement.
        inplace: write the result into ``input``.

    Raises:
        TdxNotImplementedError: ``input`` is bool or complex.
    """
    if inplace:
        return threshold_(input, threshold, value)
    return _threshold(input, threshold, value, "threshold")


def threshold_(input, threshold, value):  # noqa: A002 - torch's names
    """In-place :func:`threshold`."""
    need_tensor(input, "threshold_")
    return write_inplace(input, lambda x: _threshold(x, threshold, value, "threshold_"))


def relu(input, inplace=False):  # noqa: A002 - torch's name
    """``max(input, 0)`` (integers keep their dtype; bool and complex raise as torch)."""
    x = need_tensor(input, "relu")
    return x.relu_() if inplace else x.relu()


def relu_(input):  # noqa: A002 - torch's name
    """In-place :func:`relu`."""
    return need_tensor(input, "relu_").relu_()


def _hardtanh(x, min_val, max_val, op):
    need_tensor(x, op)
    if x.dtype is tdx.bool:
        raise TdxRuntimeError(f"Bool inputs not supported for hardtanh ({op} takes numeric tensors)")
    if x.dtype.is_complex:
        raise TdxNotImplementedError(f"clamp is not supported for complex types ({op} takes real tensors)")
    if x.dtype is tdx.uint8 and min_val < 0:
        raise TdxRuntimeError(f"cannot do hardtanh on an unsigned type with negative lower bound "
                              f"(min_val={min_val})")
    if not x.dtype.is_floating_point:  # torch clamps integers at the bounds converted to the dtype
        return x.clamp(int(min_val), int(max_val))
    out = x.clamp(min_val, max_val)
    return _kinks(out, x, (x > min_val) & (x < max_val))


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):  # noqa: A002 - torch's name
    """``input`` clamped to ``[min_val, max_val]``; the gradient is zero at and beyond the bounds.

    Raises:
        TdxValueError: ``min_val > max_val``.
        TdxRuntimeError: ``input`` is bool, or uint8 with a negative ``min_val``.
        TdxNotImplementedError: ``input`` is complex.
    """
    if min_val > max_val:
        raise TdxValueError(f"min_val cannot be greater than max_val (got min_val={min_val}, max_val={max_val})")
    if inplace:
        return hardtanh_(input, min_val, max_val)
    return _hardtanh(input, min_val, max_val, "hardtanh")


def hardtanh_(input, min_val=-1.0, max_val=1.0):  # noqa: A002 - torch's name
    """In-place :func:`hardtanh`."""
    if min_val > max_val:
        raise TdxValueError(f"min_val cannot be greater than max_val (got min_val={min_val}, max_val={max_val})")
    need_tensor(input, "hardtanh_")
    return write_inplace(input, lambda x: _hardtanh(x, min_val, max_val, "hardtanh_"))


def relu6(input, inplace=False):  # noqa: A002 - torch's name
    """``min(max(input, 0), 6)``: :func:`hardtanh` with bounds 0 and 6."""
    return hardtanh(input, 0.0, 6.0, inplace)


# exponential units ----------------------------------------------------------------------------------
def _leaky(x, slope, op):
    need_float(x, op, "leaky_relu_cpu")
    return tdx.where(x > 0, x, x * slope)


def leaky_relu(input, negative_slope=0.01, inplace=False):  # noqa: A002 - torch's name
    """``input`` where positive, else ``negative_slope * input``.

    Raises:
        TdxNotImplementedError: ``input`` is not floating point.
    """
    if inplace:
        return leaky_relu_(input, negative_slope)
    return _leaky(input, negative_slope, "leaky_relu")


def leaky_relu_(input, negative_slope=0.01):  # noqa: A002 - torch's name
    """In-place :func:`leaky_relu`."""
    need_float(input, "leaky_relu_", "leaky_relu_cpu")
    return write_inplace(input, lambda x: _leaky(x, negative_slope, "leaky_relu_"))


def _elu(x, alpha, scale, input_scale, op):
    """torch's elu family: ``scale * x`` where positive, else ``alpha * scale * (exp(x * input_scale) - 1)``."""
    need_float(x, op, "elu_cpu")
    w = opmath(x)
    pos = w > 0
    neg = w.masked_fill(pos, 0)  # the discarded branch never sees a large positive value
    if input_scale != 1:
        neg = neg * input_scale
    out = tdx.where(pos, w * scale if scale != 1 else w, neg.expm1() * (alpha * scale))
    return out.to(x.dtype)


@_kernels.torch_kernel
def elu(input, alpha=1.0, inplace=False):  # noqa: A002 - torch's name
    """Exponential linear unit: ``input`` where positive, else ``alpha * (exp(input) - 1)``.

    Raises:
        TdxNotImplementedError: ``input`` is not floating point.
    """
    if inplace:
        return elu_(input, alpha)
    return _elu(input, alpha, 1.0, 1.0, "elu")


def elu_(input, alpha=1.0):  # noqa: A002 - torch's name
    """In-place :func:`elu`."""
    need_float(input, "elu_", "elu_cpu")
    return write_inplace(input, lambda x: _elu(x, alpha, 1.0, 1.0, "elu_"))


@_kernels.torch_kernel
def selu(input, inplace=False):  # noqa: A002 - torch's name
    """Scaled ELU with torch's fixed ``alpha`` (1.6733) and ``scale`` (1.0507)."""
    if inplace:
        return selu_(input)
    return _elu(input, _SELU_ALPHA, _SELU_SCALE, 1.0, "selu")


def selu_(input):  # noqa: A002 - torch's name
    """In-place :func:`selu`."""
    need_float(input, "selu_", "elu_cpu")
    return write_inplace(input, lambda x: _elu(x, _SELU_ALPHA, _SELU_SCALE, 1.0, "selu_"))


def _celu(x, alpha, op):
    if alpha == 0:
        raise TdxRuntimeError("ZeroDivisionError: alpha cannot be 0 for CELU")
    return _elu(x, alpha, 1.0, 1.0 / alpha, op)


@_kernels.torch_kernel
def celu(input, alpha=1.0, inplace=False):  # noqa: A002 - torch's name
    """Continuously differentiable ELU: ``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``.

    Raises:
        TdxRuntimeError: ``alpha`` is 0.
        TdxNotImplementedError: ``input`` is not floating point.
    """
    if inplace:
        return celu_(input, alpha)
    return _celu(input, alpha, "celu")


def celu_(input, alpha=1.0):  # noqa: A002 - torch's name
    """In-place :func:`celu`."""
    need_float(input, "celu_", "elu_cpu")
    return write_inplace(input, lambda x: _celu(x, alpha, "celu_"))


# smooth activations ---------------------------------------------------------------------------------
def gelu(input, approximate="none"):  # noqa: A002 - torch's name
    """Gaussian error linear unit: ``x * Phi(x)``, or its tanh approximation.

    Args:
        input: a floating point tensor.
        approximate: ``"none"`` (the exact erf form) or ``"tanh"``.

    Raises:
        TdxRuntimeError: ``approximate`` is neither ``"none"`` nor ``"tanh"``.
        TdxNotImplementedError: ``input`` is not floating point.
    """
    if approximate not in ("none", "tanh"):
        raise TdxRuntimeError(f"approximate argument must be either none or tanh. (got {approximate!r})")
    done = _kernels.fast("gelu", input, approximate=approximate)  # torch's kernel where the executor has it
    if done is not _kernels.NOT_NATIVE:
        return done
    x = need_float(input, "gelu", "GeluKernelImpl")
    done = _kernels.native("gelu", x, approximate=approximate)  # torch's kernel where the executor has it
    if done is not _kernels.NOT_NATIVE:
        return done
    w = opmath(x)
    if approximate == "none":
        out = w * 0.5 * ((w * math.sqrt(0.5)).erf() + 1)
    else:
        inner = (w + w * w * w * 0.044715) * math.sqrt(2.0 / math.pi)
        out = w * 0.5 * (inner.tanh() + 1)
    return out.to(x.dtype)


@_kernels.torch_kernel
def silu(input, inplace=False):  # noqa: A002 - torch's name
    """Sigmoid linear unit (swish): ``x * sigmoid(x)``.

    Raises:
        TdxNotImplementedError: ``input`` is neither floating point nor complex.
    """
    if not inplace and input.__class__ is _Tensor and (input._dt or input.dtype) is _F32:
        return input * input.sigmoid()  # compute's steps for a float32 tensor (opmath and to() leave it as it is)

    def compute(x):
        w = opmath(need_float(x, "silu", "silu_cpu", complex_ok=True))
        return (w * w.sigmoid()).to(x.dtype)

    return _apply(input, inplace, compute, "silu", "silu_cpu", complex_ok=True)


@_kernels.torch_kernel
def mish(input, inplace=False):  # noqa: A002 - torch's name
    """``x * tanh(softplus(x))``.

    Raises:
        TdxNotImplementedError: ``input`` is not floating point.
    """
    def compute(x):
        w = opmath(need_float(x, "mish", "mish_cpu"))
        return (w * log1pexp(w).tanh()).to(x.dtype)

    return _apply(input, inplace, compute, "mish", "mish_cpu")


@_kernels.torch_kernel
def softplus(input, beta=1.0, threshold=20.0):  # noqa: A002 - torch's names
    """``log(1 + exp(beta * x)) / beta``, and ``x`` itself where ``beta * x > threshold``.

    Computed without overflow for any ``beta * x`` (torch's kernel overflows to inf above about
    88 in float32 when ``threshold`` is raised that high; this gives the finite value).

    Raises:
        TdxNotImplementedError: ``input`` is not floating point.
    """
    x = need_float(input, "softplus", "softplus_cpu")
    w = opmath(x)
    z = w * beta
    out = tdx.where(z > threshold, w, log1pexp(z) / beta)
    return out.to(x.dtype)


def softsign(input):  # noqa: A002 - torch's name
    """``x / (1 + |x|)`` (integers give float32 as torch; bool raises)."""
    x = need_tensor(input, "softsign")
    if x.dtype is tdx.bool:
        raise TdxNotImplementedError("\"abs_cpu\" not implemented for 'Bool' (softsign takes numeric tensors)")
    return x / (x.abs() + 1)


@_kernels.torch_kernel
def logsigmoid(input):  # noqa: A002 - torch's name
    """``log(sigmoid(x))`` computed stably: ``min(x, 0) - log1p(exp(-|x|))``.

    Raises:
        TdxNotImplementedError: ``input`` is not floating point.
    """
    x = need_float(input, "logsigmoid", "log_sigmoid_cpu")
    return (-log1pexp(-opmath(x))).to(x.dtype)


def sigmoid(input):  # noqa: A002 - torch's name
    """``1 / (1 + exp(-x))`` (integers and bools give float32)."""
    return need_tensor(input, "sigmoid").sigmoid()


def tanh(input):  # noqa: A002 - torch's name
    """Hyperbolic tangent (integers and bools give float32)."""
    return need_tensor(input, "tanh").tanh()


_ONE_SIXTH_F32 = 0.16666667163372040  # float32(1 / 6), the constant of torch's hardsigmoid_backward


@_kernels.torch_kernel
def hardsigmoid(input, inplace=False):  # noqa: A002 - torch's name
    """``relu6(x + 3) / 6``; the gradient is zero outside ``(-3, 3)``.

    Raises:
        TdxNotImplementedError: ``input`` is not floating point.
    """
    def compute(x):
        w = opmath(need_float(x, "hardsigmoid", "hardsigmoid_cpu"))
        out = (w + 3).clamp(0, 6) / 6
        if wants_grad(w):  # torch's backward multiplies by 1/6 rounded to float32, in every dtype
            slope = w * _ONE_SIXTH_F32
            out = tdx.where((w > -3) & (w < 3), out.detach() + (slope - slope.detach()), out.detach())
        return out.to(x.dtype)

    return _apply(input, inplace, compute, "hardsigmoid", "hardsigmoid_cpu")


@_kernels.torch_kernel
def hardswish(input, inplace=False):  # noqa: A002 - torch's name
    """``x * relu6(x + 3) / 6``; the gradient is 0 at and below -3 and 1 at and above 3, as torch's.

    Raises:
        TdxNotImplementedError: ``input`` is not floating point.
    """
    def compute(x):
        w = opmath(need_float(x, "hardswish", "hardswish_cpu"))
        inside = (w > -3) & (w < 3)
        # torch's x * clamp(x + 3, 0, 6) / 6 branch by branch (so -inf gives NaN, as torch's)
        out = tdx.where(inside, w * (w + 3) / 6, tdx.where(w >= 3, w * 6 / 6, w * 0))
        return out.to(x.dtype)

    return _apply(input, inplace, compute, "hardswish", "hardswish_cpu")


# shrinkage and parametric ---------------------------------------------------------------------------
def tanhshrink(input):  # noqa: A002 - torch's name
    """``x - tanh(x)`` (integers give float32)."""
    x = need_tensor(input, "tanhshrink")
    return x - x.tanh()


def _lambd(x, lambd, op):
    need_float(x, op, f"{op}_cpu")
    if lambd < 0:
        raise TdxRuntimeError(f"lambda must be in range [0, inf) for {op}, but found {lambd}")


def softshrink(input, lambd=0.5):  # noqa: A002 - torch's name
    """``x - lambd`` above ``lambd``, ``x + lambd`` below ``-lambd``, else 0.

    Raises:
        TdxRuntimeError: ``lambd`` is negative.
        TdxNotImplementedError: ``input`` is not floating point.
    """
    _lambd(input, lambd, "softshrink")
    x = input
    return tdx.where(x > lambd, x - lambd, tdx.where(x < -lambd, x + lambd, x * 0))  # x * 0 keeps NaN


def hardshrink(input, lambd=0.5):  # noqa: A002 - torch's name
    """``x`` where ``|x| > lambd``, else 0.

    Raises:
        TdxNotImplementedError: ``input`` is not floating point.
    """
    need_float(input, "hardshrink", "hardshrink_cpu")
    x = input
    return tdx.where((x >= -lambd) & (x <= lambd), 0.0, x)


def prelu(input, weight):  # noqa: A002 - torch's name
    """``x`` where positive, else ``weight * x``; ``weight`` holds one slope or one per channel (dim 1).

    Raises:
        TdxRuntimeError: ``weight`` is not 0-D or 1-D, its size fits neither 1 nor the channel
            count, or its dtype differs from ``input``'s.
        TdxNotImplementedError: ``input`` is not floating point.
    """
    x = need_float(input, "prelu", "prelu_cpu")
    w = need_tensor(weight, "prelu", "weight")
    if w.ndim > 1:
        raise TdxRuntimeError(f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = {w.ndim}")
    if w.dtype is not x.dtype:
        raise TdxRuntimeError(f"prelu: Type promoting not supported. Got {torch_name(x.dtype)} and "
                              f"{torch_name(w.dtype)}")
    channels = x.shape[1] if x.ndim >= 2 else 1
    if w.numel() != 1 and w.numel() != channels:
        raise TdxRuntimeError(f"Mismatch of parameter numbers and input channel size. Found parameter numbers = "
                              f"{w.numel()} and channel size = {channels}.")
    if x.ndim >= 2:  # one slope per channel of dim 1 (or one for all)
        w = w.reshape((-1,) + (1,) * (x.ndim - 2))
    elif x.ndim == 0:
        w = w.reshape(())
    return tdx.where(x > 0, x, x * w)


# gated and normalized -------------------------------------------------------------------------------
@_kernels.torch_kernel
def glu(input, dim=-1):  # noqa: A002 - torch's name
    """Gated linear unit: ``a * sigmoid(b)`` for the two halves ``a, b`` of ``input`` along ``dim``.

    Raises:
        TdxRuntimeError: ``input`` is 0-D, or its size along ``dim`` is odd.
        TdxNotImplementedError: ``input`` is not floating point.
    """
    x = need_tensor(input, "glu")
    if x.ndim == 0:
        raise TdxRuntimeError("glu does not support scalars because halving size must be even")
    need_float(x, "glu", "glu_cpu")
    d = norm_dim(dim, x.ndim, "glu")
    size = x.shape[d]
    if size % 2:
        raise TdxRuntimeError(f"Halving dimension must be even, but dimension {d} is size {size}")
    w = opmath(x)
    a, b = w.narrow(d, 0, size // 2), w.narrow(d, size // 2, size // 2)
    return (a * b.sigmoid()).to(x.dtype)


def _softmax_dim(name: str, ndim: int, stacklevel: int) -> int:
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to include "
                  "dim=X as an argument.", stacklevel=stacklevel)
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim=None, _stacklevel=3, dtype=None):  # noqa: A002 - torch's names
    """``exp(x)`` normalized to sum to one along ``dim``, computed in ``dtype`` when given.

    Args:
        input: a floating point tensor (any tensor when ``dtype`` is floating point).
        dim: the dim to normalize along; None picks torch's deprecated implicit dim, with a warning.
        dtype: cast ``input`` to this dtype first.
    """
    if dim is not None:
        done = _kernels.fast("softmax", input, dim, dtype=dtype)
        if done is not _kernels.NOT_NATIVE:
            return done
    x = need_tensor(input, "softmax")
    if dim is None:
        dim = _softmax_dim("softmax", x.ndim, _stacklevel)
    return x.softmax(dim, dtype=dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):  # noqa: A002 - torch's names
    """``log(softmax(x))`` along ``dim``, computed stably (in ``dtype`` when given)."""
    if dim is not None:
        done = _kernels.fast("log_softmax", input, dim, dtype=dtype)
        if done is not _kernels.NOT_NATIVE:
            return done
    x = need_tensor(input, "log_softmax")
    if dim is None:
        dim = _softmax_dim("log_softmax", x.ndim, _stacklevel)
    return x.log_softmax(dim, dtype=dtype)


def softmin(input, dim=None, _stacklevel=3, dtype=None):  # noqa: A002 - torch's names
    """``softmax(-x)`` along ``dim`` (the negation happens before the cast to ``dtype``, as torch)."""
    x = need_tensor(input, "softmin")
    if dim is None:
        dim = _softmax_dim("softmin", x.ndim, _stacklevel)
    return (-x).softmax(dim, dtype=dtype)
