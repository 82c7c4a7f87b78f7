"""Operations on the bits of floating point numbers: ``nextafter`` (the method, its in-place form and
``torch.nextafter``).

The next representable value is found by reinterpreting the float's bits as the signed integer of
its width (``view(dtype)``), stepping that integer by one toward ``other`` and reinterpreting back;
zero steps to the smallest subnormal of ``other``'s sign. This module must never import a framework
and holds no per-executor special case (both executors reinterpret bits with ``view_dtype``).
"""

from __future__ import annotations

from .. import _dtypes as D
from .operands import _inplace, _not_implemented, _requires_grad, _result_type, _tensor
from .wrapping import attach, exporter, inline_typed, native_inplace, need_tensor, typed_errors

__all__: list = []
_export = exporter(__all__)

_BITS = {"float16": "int16", "bfloat16": "int16", "float32": "int32", "float64": "int64"}


class FloatBitsMethods:
    """The bit-level floating point methods attached to :class:`Tensor`."""

    def nextafter(self, other):
        """The next floating point value after ``self`` toward ``other``, elementwise (broadcast; torch's
        result dtype, which must be floating point).

        Raises:
            TdxTypeError: ``other`` is not a Tensor.
            TdxNotImplementedError: an integer, bool or complex result dtype.
        """
        other = _tensor(self, other, "nextafter", "other")
        if _requires_grad(self) or _requires_grad(other):  # torch's derivative: grad for self, 0 for other
            from ..autograd.function import Function

            class NextAfter(Function):
                @staticmethod
                def forward(ctx, a, b):
                    ctx.shapes = (tuple(a.shape), a.dtype, tuple(b.shape), b.dtype)
                    return a.detach().nextafter(b.detach())

                @staticmethod
                def backward(ctx, grad):
                    a_shape, a_dtype, b_shape, b_dtype = ctx.shapes
                    return grad.sum_to_size(a_shape).to(a_dtype), grad.new_zeros(b_shape, dtype=b_dtype)

            return NextAfter.apply(self, other)
        rt = _result_type(self, other)
        if rt.name not in _BITS:
            raise _not_implemented("nextafter_cpu", rt)
        a, b = self.detach()._cast(rt), other.detach()._cast(rt)
        a, b = a.expand_as(a + b), b.expand_as(a + b)
        ints = getattr(D, _BITS[rt.name])
        step = ((b > a) == (a > 0))._cast(ints) * 2 - 1
        moved = (a.contiguous().view(ints) + step).view(rt)
        tiny = (b.new_ones(()).to(ints).view(rt)).expand_as(b)  # the smallest subnormal
        from_zero = (-tiny).where(b < 0, tiny)
        out = moved.where(a != 0, from_zero)
        out = out.where(a != b, b)
        return out.where(~(a.isnan() | b.isnan()), a + b)


FloatBitsMethods.nextafter_ = native_inplace("nextafter_", typed_errors(_inplace("nextafter")))
# composed of tdx ops, so its errors are typed already; not one tape node (MLX has no derivative of a bit view)
FloatBitsMethods.nextafter = inline_typed(FloatBitsMethods.nextafter)
attach(FloatBitsMethods)


@_export
def nextafter(input, other):  # noqa: A002 - torch's name
    """``input.nextafter(other)``: the next floating point value after ``input`` toward ``other``."""
    return need_tensor(input, "nextafter").nextafter(other)
