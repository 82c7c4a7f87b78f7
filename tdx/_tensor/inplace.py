"""In-place variants: ``fill_``/``zero_``/``copy_`` and the ``op_`` form of every out-of-place op.

Where the executor's arrays are mutable (torch) the native tensor is written; elsewhere (MLX) the
result is computed, checked against torch's cast and shape rules, and the tensor (with its views)
is rebound to it.

Each op unwraps its operands (checking they share an executor), normalizes torch's argument
forms, calls the executor and wraps the result; methods are attached to :class:`Tensor` by
:func:`wrapping.attach`. This module must never import a framework, never holds a per-executor
special case (those live in the executors), and depends on the Tensor core only, never on
another op family through it.
"""

from __future__ import annotations

from .. import _dtypes as D
from .._errors import CastError, TdxRuntimeError, TdxTypeError
from . import views as _views
from . import wrapping as TM
from .operands import _inplace as _composite_inplace
from .wrapping import attach, exporter, native_inplace, operand, typed_errors

__all__: list = []
_export = exporter(__all__)


def _unwrap(t, value, op: str):
    """A Tensor argument as its native array (checking the executor); anything else as is."""
    if value.__class__ is TM.Tensor:
        return value._n if value._ex is t._ex else TM.foreign(op, t._ex, value)
    return value


def _inplace(name: str):
    """The in-place method ``name_`` for the out-of-place method ``name``."""
    native = name + "_"
    tensor_only = name in _TENSOR_OTHER
    real_result = name in ("abs", "absolute")

    def method(self, *args, **kwargs):
        ex = self._ex
        if real_result and self.dtype.is_complex:
            raise CastError(f"In-place {name} is not supported for complex tensors.")
        if tensor_only and args and args[0].__class__ is not TM.Tensor:
            raise TdxTypeError(f"{native}(): argument 'other' (position 1) must be Tensor, not "
                               f"{type(args[0]).__name__}")
        if ex.mutable:
            if kwargs:
                kwargs = {k: _unwrap(self, v, native) for k, v in kwargs.items()}
            getattr(self._n, native)(*[_unwrap(self, a, native) for a in args], **kwargs)
            return self
        return self._rebind(getattr(self, name)(*args, **kwargs)._n, native)

    method.__name__ = native
    method.__doc__ = f"In-place ``{name}``: torch's cast rule (the result must cast to self's dtype) and shape."
    return method


_TENSOR_OTHER = frozenset(("atan2", "arctan2", "logical_and", "logical_or", "logical_xor"))

INPLACE = ("add", "sub", "mul", "div", "true_divide", "floor_divide", "remainder", "fmod", "pow",
           "clamp", "clip", "neg", "negative", "abs", "absolute", "exp", "exp2", "expm1", "log",
           "log2", "log10", "log1p", "sqrt", "rsqrt", "sin", "cos", "tan", "asin", "acos", "atan",
           "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "sigmoid", "relu", "erf", "floor",
           "ceil", "round", "trunc", "fix", "frac", "sign", "sgn", "reciprocal", "square", "atan2", "arctan2",
           "logical_not", "logical_and", "logical_or", "logical_xor", "bitwise_not", "bitwise_and",
           "bitwise_or", "bitwise_xor", "eq", "ne", "lt", "le", "gt", "ge", "greater", "greater_equal",
           "less", "less_equal", "not_equal", "multiply", "divide", "subtract", "tril", "triu",
           "masked_fill", "scatter", "scatter_add", "cumsum", "cumprod")


class InplaceMethods:
    """The inplace methods of ``tdx.Tensor``."""

    __slots__ = ()

    # in place ---------------------------------------------------------------------------
    def _rebind(self, out, op: str):
        """Make ``out`` (a native array) self's value, as torch writes an op's result in place.

        Raises:
            CastError: ``out``'s dtype may not be cast to self's, or its shape differs.
        """
        ex = self._ex
        mine, got = ex.dtype(self._n), ex.dtype(out)
        if not D.can_cast(got, mine):
            raise CastError(f"{op}: result type {got.name} can't be cast to the desired output type {mine.name}")
        if ex.shape(out) != ex.shape(self._n):
            raise CastError(f"{op}: output with shape {list(ex.shape(self._n))} doesn't match the broadcast "
                            f"shape {list(ex.shape(out))}")
        _views.assign(self, ex.astype(out, mine))
        return self

    def fill_(self, value):
        """Set every element to ``value`` (a number or a 0-d tensor), cast to self's dtype."""
        ex = self._ex
        _views.assign(self, ex.fill_(self._n, operand(self, value, "fill_")), overlap_ok=True)  # torch allows it
        return self

    def zero_(self):
        """Set every element to zero."""
        return self.fill_(0)

    def copy_(self, src, non_blocking=False):
        """Copy ``src`` (broadcast to self's shape, cast to self's dtype, from any device) into self."""
        ex = self._ex
        if src.__class__ is not TM.Tensor:
            raise TdxTypeError(f"copy_(): argument 'src' must be Tensor, not {type(src).__name__}")
        native = src._n
        if src._ex is not ex:
            from ..interop import transfer

            native = transfer(native, src._ex, ex)
        _views.assign(self, ex.copy_(self._n, native))
        return self


# the composites' in-place variants (their out-of-place forms are written with other tdx ops)
COMPOSITE_INPLACE = ("addmm", "addmv", "baddbmm", "addbmm", "addr", "addcmul", "addcdiv", "lerp", "hypot", "xlogy",
                     "copysign", "heaviside", "deg2rad", "rad2deg", "logit", "nan_to_num", "clamp_min", "clamp_max")

for _name in INPLACE:
    setattr(InplaceMethods, _name + "_", _inplace(_name))
# the composites' in-place forms (torch's cast rule, written through _write)
for _name in COMPOSITE_INPLACE:
    setattr(InplaceMethods, _name + "_", _composite_inplace(_name))
for _name, _fn in list(vars(InplaceMethods).items()):
    if callable(_fn) and not _name.startswith("_") and not getattr(_fn, "_typed", False):
        setattr(InplaceMethods, _name, typed_errors(_fn))
# where torch's own in-place method applies the same rules, torch executors call it directly
for _name in (*INPLACE, *COMPOSITE_INPLACE):
    if _name not in _TENSOR_OTHER and _name not in ("abs", "absolute"):
        setattr(InplaceMethods, _name + "_", native_inplace(_name + "_", getattr(InplaceMethods, _name + "_")))


def _scan_inplace(name: str, method):
    """``cumsum_``/``cumprod_``: a ``dtype=`` other than self's is torch's "Bad in-place call"; the same one is
    dropped before the write (the executor's in-place method never sees a tdx dtype)."""
    def scan_(self, dim, *, dtype=None):
        if dtype is not None:
            d = D.as_dtype(dtype)
            if d is not self.dtype:
                raise TdxRuntimeError(f"Bad in-place call: input tensor dtype {self.dtype.name} and output tensor "
                                      f"dtype {d.name} should match")
        return method(self, dim)

    scan_.__name__ = scan_.__qualname__ = name + "_"
    scan_.__doc__ = method.__doc__
    return scan_


for _name in ("cumsum", "cumprod"):
    setattr(InplaceMethods, _name + "_", _scan_inplace(_name, getattr(InplaceMethods, _name + "_")))
attach(InplaceMethods)
