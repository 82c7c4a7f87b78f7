"""Tensor methods for math, reductions and shapes, mixed into ``tdx.Tensor``.

Each method unwraps its operands, calls the executor and wraps the result; argument
forms torch accepts (``reshape(2, 3)`` and ``reshape((2, 3))``, legacy ``unbiased``) are
normalized here once, so executors see one signature. This module must never import a
framework and holds no per-executor special cases: those live in the executors.
"""

from __future__ import annotations

import functools
import math

from . import _dtypes as D
from . import _views, return_types
from ._errors import (NATIVE_ERRORS, TdxRuntimeError, TdxTypeError, TdxValueError, UnsupportedOpError, mismatch,
                      translate)
from .autograd import tape as _tape
from .autograd.tape import ACTIVE as _TAPE

SCALARS = frozenset((int, float, bool, complex))
_new = object.__new__
Tensor = None  # set by tdx._tensor once the class exists


class Size(tuple):
    """A tensor's shape: a tuple of ints, as ``torch.Size``."""

    __slots__ = ()

    def numel(self) -> int:
        return math.prod(self)

    def __repr__(self) -> str:
        return f"tdx.Size({list(self)})"


def wrap_grad(native, ex, requires_grad: bool):
    """``wrap``, then mark the tensor as requiring grad on executors that record on tdx's tape."""
    t = wrap(native, ex)
    if requires_grad and not ex.caps.native_autograd:
        t.requires_grad_()
    return t


def wrap(native, ex):
    """A new Tensor around ``native`` owned by executor ``ex``."""
    t = _new(Tensor)
    t._n = native
    t._ex = ex
    return t


def typed_errors(fn):
    """Wrap a method so framework exceptions surface as TdxErrors of the same builtin kind."""

    inplace = fn.__name__.endswith("_") and not fn.__name__.endswith("__")

    @functools.wraps(fn)
    def method(self, *args, **kwargs):
        if _TAPE[0] and _tape.wants(self, *args, **kwargs):
            if inplace:  # recorded as: clone, apply, rebind
                return _tape.record_inplace(self, _applied_to_clone(method), (self, *args), kwargs)
            return _tape.call(method, self, *args, **kwargs)
        try:
            return fn(self, *args, **kwargs)
        except NATIVE_ERRORS as err:
            ex = getattr(self, "_ex", None)
            raise (ex.native_error(err) if ex is not None else translate(err)) from None

    return method


def _applied_to_clone(inplace_method):
    """The out-of-place form of an in-place method: apply it to a clone and return the clone."""

    def out_of_place(t, *args, **kwargs):
        c = t.clone()
        inplace_method(c, *args, **kwargs)
        return c

    out_of_place.__name__ = inplace_method.__name__.rstrip("_")
    return out_of_place


def scalar(value):
    """A Python scalar for a NumPy scalar, or NotImplemented for anything else."""
    if type(value).__module__ == "numpy" and getattr(value, "ndim", None) == 0:
        return value.item()
    return NotImplemented


def _reshaped(out, src, must_view: bool):
    """Link ``out`` (src reshaped) as a view when torch's stride rule allows, else it is a copy."""
    lay = _views.layout_of(src)
    shape = out._ex.shape(out._n)
    strides = _views.view_strides(lay.shape, lay.strides, shape)
    if strides is None:
        if must_view:
            raise TdxRuntimeError("view size is not compatible with input tensor's size and stride (at least one "
                                  "dimension spans across two contiguous subspaces). Use .reshape(...) instead.")
        return out
    return _views.link(out, src, shape, strides, lay.offset, lay.root)


def _permuted(out, src, order):
    lay = _views.layout_of(src)
    return _views.link(out, src, [lay.shape[i] for i in order], [lay.strides[i] for i in order], lay.offset,
                       lay.root)


def foreign(op: str, ex, t):
    """``t`` (a Tensor on another executor than ``ex``) as a native of ``ex``, moved there when the
    config's ``auto_transfer`` allows it.

    Raises:
        DeviceMismatchError: ``auto_transfer`` is off (the default), as torch raises for mixed devices.
        UnsupportedOpError: ``t`` requires grad, grad mode is on, and the move would not be
            differentiable (only moves between torch devices are).
    """
    from . import config

    if not config.current()["auto_transfer"]:
        raise mismatch(op, ex.device, t._ex.device)
    from .autograd.grad_mode import is_grad_enabled

    if t.requires_grad and is_grad_enabled() and not (ex.name == t._ex.name == "torch"):
        raise UnsupportedOpError(f"{op}: auto_transfer would move a tensor that requires grad from {t._ex.device} "
                                 f"to {ex.device}, which is not differentiable; detach() it or move it first")
    return t.to(ex.device)._n


def operand(t, other, op: str):
    """``other`` as a native array of ``t``'s executor or a Python scalar.

    Raises:
        DeviceMismatchError: ``other`` lives on another executor.
        TdxTypeError: ``other`` is neither a Tensor nor a scalar.
    """
    if other.__class__ is Tensor:
        return other._n if other._ex is t._ex else foreign(op, t._ex, other)
    if other.__class__ in SCALARS or other is None:
        return other
    value = scalar(other)
    if value is NotImplemented:
        raise TdxTypeError(f"{op}(): argument 'other' must be a Tensor or a number, not {type(other).__name__}")
    return value


def shape_args(args, op: str) -> tuple:
    """``f(2, 3)``, ``f((2, 3))`` and ``f([2, 3])`` all as the tuple ``(2, 3)``."""
    if len(args) == 1 and not isinstance(args[0], int):
        args = args[0]
    try:
        shape = tuple(int(s) if not isinstance(s, int) else s for s in args)
    except TypeError:
        raise TdxTypeError(f"{op}(): expected a sequence of ints, got {args!r}") from None
    return shape


def inline_typed(fn):
    """Mark a method that translates framework errors itself (the hot path skips the wrapper)."""
    fn._typed = True
    return fn


def _unary(name: str):
    @inline_typed
    def method(self):
        if _TAPE[0] and _tape.wants(self):
            return _tape.call(method, self)
        ex = self._ex
        try:
            return wrap(getattr(ex, name)(self._n), ex)
        except NATIVE_ERRORS as err:
            raise ex.native_error(err) from None

    method.__name__ = name
    method.__doc__ = f"Elementwise ``{name}``, as ``torch.Tensor.{name}``."
    return method


def _binary(name: str, torch_name: str):
    @inline_typed
    def method(self, other):
        if _TAPE[0] and _tape.wants(self, other):
            return _tape.call(method, self, other)
        ex = self._ex
        if other.__class__ is Tensor:
            other = other._n if other._ex is ex else foreign(torch_name, ex, other)
        elif other.__class__ not in SCALARS:
            other = operand(self, other, torch_name)
        try:
            return wrap(getattr(ex, name)(self._n, other), ex)
        except NATIVE_ERRORS as err:
            raise ex.native_error(err) from None

    method.__name__ = torch_name
    method.__doc__ = f"``{torch_name}`` with torch's broadcasting and promotion."
    return method


UNARY = ("neg", "abs", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt",
         "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "sigmoid", "relu",
         "erf", "floor", "ceil", "round", "trunc", "frac", "sign", "sgn", "reciprocal", "square",
         "logical_not", "bitwise_not", "isnan", "isinf", "isfinite", "positive")
BINARY = {"mul": "mul", "truediv": "true_divide", "floordiv": "floor_divide", "remainder": "remainder",
          "pow": "pow", "matmul": "matmul", "eq": "eq", "ne": "ne", "lt": "lt", "le": "le", "gt": "gt",
          "ge": "ge", "maximum": "maximum", "minimum": "minimum", "atan2": "atan2",
          "logical_and": "logical_and", "logical_or": "logical_or", "logical_xor": "logical_xor",
          "and_": "bitwise_and", "or_": "bitwise_or", "xor": "bitwise_xor", "outer": "outer"}
ALIASES = {"negative": "neg", "absolute": "abs", "arcsin": "asin", "arccos": "acos", "arctan": "atan",
           "multiply": "mul", "divide": "div", "greater": "gt", "greater_equal": "ge", "less": "lt",
           "less_equal": "le", "not_equal": "ne", "clip": "clamp", "mm": "matmul", "fix": "trunc",
           "arctan2": "atan2", "subtract": "sub"}


class TensorMethods:
    """Math, reduction and shape methods of ``tdx.Tensor``."""

    __slots__ = ()

    # arithmetic with extra arguments ----------------------------------------------------
    def add(self, other, *, alpha=1):
        ex = self._ex
        other = operand(self, other, "add")
        if alpha.__class__ is not int or alpha != 1:
            return wrap(ex.add_alpha(self._n, other, alpha), ex)
        return wrap(ex.add(self._n, other), ex)

    def sub(self, other, *, alpha=1):
        ex = self._ex
        other = operand(self, other, "sub")
        if alpha.__class__ is not int or alpha != 1:
            return wrap(ex.sub_alpha(self._n, other, alpha), ex)
        return wrap(ex.sub(self._n, other), ex)

    def div(self, other, *, rounding_mode=None):
        ex = self._ex
        other = operand(self, other, "div")
        if rounding_mode is None:
            return wrap(ex.truediv(self._n, other), ex)
        if rounding_mode == "floor":
            return wrap(ex.floordiv(self._n, other), ex)
        if rounding_mode == "trunc":
            q = ex.truediv(self._n, other)
            rt = ex.dtype(ex.add(self._n, other)) if other is not None else self.dtype
            return wrap(ex.astype(ex.trunc(q), rt), ex)
        raise TdxValueError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
                            f"{rounding_mode!r}")

    def where(self, condition, other):
        ex = self._ex
        return wrap(ex.where(operand(self, condition, "where"), self._n, operand(self, other, "where")), ex)

    def clamp(self, min=None, max=None):  # noqa: A002 - torch's names
        ex = self._ex
        return wrap(ex.clamp(self._n, operand(self, min, "clamp"), operand(self, max, "clamp")), ex)

    def tril(self, diagonal=0):
        return wrap(self._ex.tril(self._n, diagonal), self._ex)

    def triu(self, diagonal=0):
        return wrap(self._ex.triu(self._n, diagonal), self._ex)

    # reductions -----------------------------------------------------------------------
    @inline_typed
    def sum(self, dim=None, keepdim=False, *, dtype=None):
        if _TAPE[0] and _tape.wants(self):
            return _tape.call(TensorMethods.sum, self, dim, keepdim, dtype=dtype)
        ex = self._ex
        try:
            return wrap(ex.sum(self._n, dim, keepdim, dtype), ex)
        except NATIVE_ERRORS as err:
            raise ex.native_error(err) from None

    @inline_typed
    def mean(self, dim=None, keepdim=False, *, dtype=None):
        if _TAPE[0] and _tape.wants(self):
            return _tape.call(TensorMethods.mean, self, dim, keepdim, dtype=dtype)
        ex = self._ex
        try:
            return wrap(ex.mean(self._n, dim, keepdim, dtype), ex)
        except NATIVE_ERRORS as err:
            raise ex.native_error(err) from None

    def prod(self, dim=None, keepdim=False, *, dtype=None):
        return wrap(self._ex.prod(self._n, dim, keepdim, dtype=dtype), self._ex)

    def _moment(self, op, dim, unbiased, keepdim, correction):
        if isinstance(dim, bool):  # legacy std(unbiased)
            dim, unbiased = None, dim
        if correction is None:
            correction = 0 if unbiased is False else 1
        return wrap(getattr(self._ex, op)(self._n, dim, correction, keepdim), self._ex)

    def var(self, dim=None, unbiased=None, keepdim=False, *, correction=None):
        return self._moment("var", dim, unbiased, keepdim, correction)

    def std(self, dim=None, unbiased=None, keepdim=False, *, correction=None):
        return self._moment("std", dim, unbiased, keepdim, correction)

    def _extreme(self, which, dim, keepdim):
        ex = self._ex
        if dim is None:
            return wrap(getattr(ex, f"a{which}")(self._n, (), False), ex)
        if dim.__class__ is Tensor:
            return wrap(getattr(ex, f"{which}imum")(self._n, operand(self, dim, which)), ex)
        values, indices = getattr(ex, f"{which}_dim")(self._n, dim, keepdim)
        return getattr(return_types, which)(wrap(values, ex), wrap(indices, ex))

    def max(self, dim=None, keepdim=False):
        """``max()``, ``max(dim, keepdim)`` -> (values, indices), or ``max(other)`` elementwise."""
        return self._extreme("max", dim, keepdim)

    def min(self, dim=None, keepdim=False):
        """``min()``, ``min(dim, keepdim)`` -> (values, indices), or ``min(other)`` elementwise."""
        return self._extreme("min", dim, keepdim)

    def amax(self, dim=(), keepdim=False):
        return wrap(self._ex.amax(self._n, dim, keepdim), self._ex)

    def amin(self, dim=(), keepdim=False):
        return wrap(self._ex.amin(self._n, dim, keepdim), self._ex)

    def argmax(self, dim=None, keepdim=False):
        return wrap(self._ex.argmax(self._n, dim, keepdim), self._ex)

    def argmin(self, dim=None, keepdim=False):
        return wrap(self._ex.argmin(self._n, dim, keepdim), self._ex)

    def all(self, dim=None, keepdim=False):
        return wrap(self._ex.all(self._n, dim, keepdim), self._ex)

    def any(self, dim=None, keepdim=False):
        return wrap(self._ex.any(self._n, dim, keepdim), self._ex)

    # shapes ---------------------------------------------------------------------------
    @inline_typed
    def reshape(self, *shape):
        if _TAPE[0] and _tape.wants(self):
            return _tape.call(TensorMethods.reshape, self, *shape)
        ex = self._ex
        try:
            out = wrap(ex.reshape(self._n, shape if shape[0].__class__ is int else shape_args(shape, "reshape")),
                       ex)
        except NATIVE_ERRORS as err:
            raise ex.native_error(err) from None
        except IndexError:
            raise TdxTypeError("reshape() missing 1 required positional argument: 'shape'") from None
        return out if ex.mutable else _reshaped(out, self, must_view=False)

    def view(self, *shape):
        if len(shape) == 1 and not isinstance(shape[0], (int, tuple, list)) and not hasattr(shape[0], "__len__"):
            raise TdxTypeError(f"view(): expected a shape, got {shape[0]!r} (view(dtype) is not supported)")
        ex = self._ex
        out = wrap(ex.view(self._n, shape_args(shape, "view")), ex)
        return out if ex.mutable else _reshaped(out, self, must_view=True)

    def reshape_as(self, other):
        return self.reshape(other.shape)

    def view_as(self, other):
        return self.view(other.shape)

    def permute(self, *dims):
        ex = self._ex
        dims = shape_args(dims, "permute")
        out = wrap(ex.permute(self._n, dims), ex)
        return out if ex.mutable else _permuted(out, self, [d % max(self._n.ndim, 1) for d in dims])

    @inline_typed
    def transpose(self, dim0, dim1):
        if _TAPE[0] and _tape.wants(self):
            return _tape.call(TensorMethods.transpose, self, dim0, dim1)
        ex = self._ex
        try:
            out = wrap(ex.transpose(self._n, dim0, dim1), ex)
        except NATIVE_ERRORS as err:
            raise ex.native_error(err) from None
        if ex.mutable:
            return out
        n = self._n.ndim
        order = list(range(n))
        if n:
            a, b = dim0 % n, dim1 % n
            order[a], order[b] = order[b], order[a]
        return _permuted(out, self, order)

    swapaxes = swapdims = transpose

    def t(self):
        if self._n.ndim > 2:
            raise TdxValueError(f"t() expects a tensor with <= 2 dimensions, but self is {self._n.ndim}D")
        return self if self._n.ndim < 2 else self.transpose(0, 1)

    @property
    def T(self):  # noqa: N802 - torch's name
        return self.permute(tuple(range(self._n.ndim - 1, -1, -1)))

    @property
    def mT(self):  # noqa: N802 - torch's name
        return self.transpose(-2, -1)

    def squeeze(self, dim=None):
        ex = self._ex
        out = wrap(ex.squeeze(self._n, dim), ex)
        return out if ex.mutable else _reshaped(out, self, must_view=True)

    def unsqueeze(self, dim):
        ex = self._ex
        out = wrap(ex.unsqueeze(self._n, dim), ex)
        return out if ex.mutable else _reshaped(out, self, must_view=True)

    def flatten(self, start_dim=0, end_dim=-1):
        ex = self._ex
        out = wrap(ex.flatten(self._n, start_dim, end_dim), ex)
        if ex.mutable or out.ndim == self._n.ndim:
            return out
        return _reshaped(out, self, must_view=False)

    def ravel(self):
        return self.flatten()

    def expand(self, *sizes):
        ex = self._ex
        out = wrap(ex.expand(self._n, shape_args(sizes, "expand")), ex)
        if ex.mutable:
            return out
        lay = _views.layout_of(self)
        shape = ex.shape(out.native)
        lead = len(shape) - len(lay.shape)
        strides = [0] * lead + [0 if have == 1 and want != 1 else s
                                for have, want, s in zip(lay.shape, shape[lead:], lay.strides)]
        return _views.link(out, self, shape, strides, lay.offset)

    def expand_as(self, other):
        return self.expand(other.shape)

    def contiguous(self):
        ex = self._ex
        if not ex.mutable:  # a non-contiguous view becomes a copy, as torch's
            return self if _views.layout_of(self).is_contiguous() else wrap(self._n, ex)
        n = ex.contiguous(self._n)
        return self if n is self._n else wrap(n, ex)

    def split(self, split_size_or_sections, dim=0):
        """Pieces of ``split_size`` along ``dim`` (the last one smaller), or of the listed sizes."""
        from .backends.base import norm_dim

        n = self.shape[norm_dim(dim, self._n.ndim)] if self._n.ndim else 0
        if isinstance(split_size_or_sections, int):
            step = split_size_or_sections
            if step <= 0:
                raise TdxValueError(f"split expects split_size be non-negative, but got split_size={step}")
            sizes = [step] * (n // step) + ([n % step] if n % step or n == 0 else [])
        else:
            sizes = [int(s) for s in split_size_or_sections]
        pieces = tuple(wrap(p, self._ex) for p in self._ex.split(self._n, sizes, dim))
        if not self._ex.mutable:
            from .backends.base import norm_dim

            d, starts = norm_dim(dim, self._n.ndim), [0]
            for size in sizes:
                starts.append(starts[-1] + size)
            _views.link_pieces(pieces, self, [(slice(None),) * d + (slice(a, b),) for a, b in
                                              zip(starts, starts[1:])], "SplitWithSizes")
        return pieces

    def chunk(self, chunks, dim=0):
        if not isinstance(chunks, int) or chunks <= 0:
            raise TdxValueError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
        from .backends.base import norm_dim

        n = self.shape[norm_dim(dim, self._n.ndim)]
        return self.split(max(1, -(-n // chunks)), dim)

    def type(self, dtype=None):
        if dtype is None:
            return f"tdx.{self.dtype.name.capitalize()}Tensor"
        return self.to(D.as_dtype(dtype))


for _name in UNARY:
    setattr(TensorMethods, _name, _unary(_name))
for _name, _torch_name in BINARY.items():
    setattr(TensorMethods, _torch_name, _binary(_name, _torch_name))
for _name, _fn in list(vars(TensorMethods).items()):
    if callable(_fn) and not _name.startswith("_") and not getattr(_fn, "_typed", False):
        setattr(TensorMethods, _name, typed_errors(_fn))
for _alias, _target in ALIASES.items():
    setattr(TensorMethods, _alias, getattr(TensorMethods, _target))
