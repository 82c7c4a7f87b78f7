"""torch's fake quantization: ``tdx.fake_quantize_per_tensor_affine`` and
``tdx.fake_quantize_per_channel_affine``, float tensors rounded to an integer grid and back
(quantization-aware training), with torch's straight-through gradient.

The values are ATen's: ``(clamp(round_half_even(x * (1 / scale)) + zero_point, quant_min,
quant_max) - zero_point) * scale`` in the input's dtype; the gradient passes where the
rounded value lies inside ``[quant_min, quant_max]`` and is zero elsewhere. This module must
never import a framework.
"""

from __future__ import annotations

import numpy as np

from .. import _dtypes as D
from .._errors import TdxRuntimeError
from .wrapping import exporter, need_tensor

__all__: list = []
_export = exporter(__all__)


def _grid(x, inv, scale, zero_point, quant_min, quant_max):
    """The fake-quantized values of ``x`` and the mask where the gradient passes, computed as ATen's
    kernels do: the rounding in the input's precision (at least float32); the grid value times the
    scale in float32 for one scale (a Python float here), in that precision for per-channel scales
    (a tensor here); stored in the input's dtype."""
    wide = x if x.dtype in (D.float32, D.float64) else x.to(D.float32)
    q = (wide * inv).round() + zero_point
    mask = (q >= quant_min) & (q <= quant_max)
    grid = q.clamp(quant_min, quant_max) - zero_point
    out = grid * scale.to(wide.dtype) if hasattr(scale, "_n") else grid.to(D.float32) * scale
    return out.to(x.dtype), mask


def _function():
    from ..autograd.function import Function

    class FakeQuantize(Function):
        @staticmethod
        def forward(ctx, x, inv, scale, zero_point, quant_min, quant_max):
            out, mask = _grid(x, inv, scale, zero_point, quant_min, quant_max)
            ctx.save_for_backward(mask)
            return out

        @staticmethod
        def backward(ctx, grad):
            (mask,) = ctx.saved_tensors
            return grad * mask, None, None, None, None, None

    return FakeQuantize


_FN = []


def _apply(x, inv, scale, zero_point, quant_min, quant_max):
    if not x.requires_grad:
        return _grid(x, inv, scale, zero_point, quant_min, quant_max)[0]
    if not _FN:
        _FN.append(_function())
    return _FN[0].apply(x, inv, scale, zero_point, quant_min, quant_max)


def _check(x, quant_min, quant_max, op: str):
    if not x.dtype.is_floating_point:
        raise TdxRuntimeError(f"{op}(): expected a floating-point input, got {x.dtype}")
    if quant_min > quant_max:
        raise TdxRuntimeError("`quant_min` should be less than or equal to `quant_max`.")


@_export
def fake_quantize_per_tensor_affine(input, scale, zero_point, quant_min, quant_max):  # noqa: A002
    """``input`` quantized with one ``scale`` and ``zero_point`` (numbers or one-element tensors) to
    ``[quant_min, quant_max]`` and dequantized, as torch's.

    Raises:
        TdxRuntimeError: a non-float input, ``quant_min > quant_max``, or ``zero_point`` outside the range.
    """
    x = need_tensor(input, "fake_quantize_per_tensor_affine")
    _check(x, quant_min, quant_max, "fake_quantize_per_tensor_affine")
    scale = float(scale.item() if hasattr(scale, "item") else scale)
    zero_point = int(zero_point.item() if hasattr(zero_point, "item") else zero_point)
    if not quant_min <= zero_point <= quant_max:
        raise TdxRuntimeError("`zero_point` must be between `quant_min` and `quant_max`.")
    # ATen's kernel holds the scale and its inverse as float32, whatever the input's dtype
    inv, scale = float(np.float32(1.0 / scale)), float(np.float32(scale))
    return _apply(x, inv, scale, zero_point, quant_min, quant_max)


@_export
def fake_quantize_per_channel_affine(input, scale, zero_point, axis, quant_min, quant_max):  # noqa: A002
    """``input`` quantized with ``scale[c]`` and ``zero_point[c]`` along ``axis`` and dequantized, as torch's.

    Raises:
        TdxRuntimeError: a non-float input, ``quant_min > quant_max``, a zero point outside the range,
            or ``scale``/``zero_point`` not 1-d of the axis's length.
    """
    x = need_tensor(input, "fake_quantize_per_channel_affine")
    _check(x, quant_min, quant_max, "fake_quantize_per_channel_affine")
    scale = need_tensor(scale, "fake_quantize_per_channel_affine", "scale")
    zero_point = need_tensor(zero_point, "fake_quantize_per_channel_affine", "zero_point")
    axis = axis + x.dim() if axis < 0 else axis
    if not 0 <= axis < x.dim():
        raise TdxRuntimeError(f"`axis` must be between 0 and number of dimensions of input, got {axis}")
    n = x.shape[axis]
    if scale.dim() != 1 or zero_point.dim() != 1 or scale.shape[0] != n or zero_point.shape[0] != n:
        raise TdxRuntimeError(f"dimensions of scale and zero-point must be 1-d of the length of input's axis "
                              f"{axis} ({n}), got {list(scale.shape)} and {list(zero_point.shape)}")
    if ((zero_point < quant_min) | (zero_point > quant_max)).any().item():
        raise TdxRuntimeError("`zero_point` must be between `quant_min` and `quant_max`.")
    shape = [1] * x.dim()
    shape[axis] = n
    s = scale.to(D.float32).reshape(shape)  # ATen's kernel holds scales as float32
    zp = zero_point.to(D.float64 if x.dtype is D.float64 else D.float32).reshape(shape)
    return _apply(x, 1.0 / s, s, zp, quant_min, quant_max)
