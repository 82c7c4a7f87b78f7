"""Tensor methods for the wider torch surface: ``fmod``, scans, ``norm``, ``softmax``, ``bmm``,
``diag``/``trace``, sampling, ``fill_``/``zero_``/``copy_`` and the in-place ``_`` variants.

A mixin of ``tdx.Tensor``; follows the conventions of :mod:`tdx._tensor_methods` (unwrap,
check executors, call the executor, wrap). In-place methods mutate the native tensor
where the executor's arrays are mutable (torch), and elsewhere (MLX) compute the result,
check torch's cast and shape rules, and rebind the tensor to it. Indexing and ordering
methods come from :mod:`tdx._tensor_index`. Must never import a framework.
"""

from __future__ import annotations

from . import _dtypes as D
from . import _tensor_methods as TM
from . import _views
from ._errors import CastError, TdxTypeError
from ._generator import native as _native_generator
from ._tensor_index import IndexTensorMethods, int_arg, tensor_arg
from ._tensor_methods import operand, typed_errors, wrap


def _dtype_or_none(dtype):
    return None if dtype is None else D.as_dtype(dtype)


def _unwrap(t, value, op: str):
    """A Tensor argument as its native array (checking the executor); anything else as is."""
    if value.__class__ is TM.Tensor:
        return value._n if value._ex is t._ex else TM.foreign(op, t._ex, value)
    return value


class MoreTensorMethods(IndexTensorMethods):
    """Further ``tdx.Tensor`` methods (mixed into the class)."""

    __slots__ = ()

    # complex conjugation ---------------------------------------------------------------------
    def conj(self):
        """The complex conjugate; a real tensor is returned as it is, as torch's."""
        if not self.dtype.is_complex:
            return self
        return wrap(self._ex.conj(self._n), self._ex)

    def resolve_conj(self):
        """This tensor with a lazy conjugation (torch's conj bit) materialized."""
        n = self._ex.resolve_conj(self._n)
        return self if n is self._n else wrap(n, self._ex)

    def is_conj(self) -> bool:
        """Whether this is a lazily conjugated view (torch executors only; MLX conjugates eagerly)."""
        return self._ex.is_conj(self._n)

    # new tensors like this one --------------------------------------------------------------
    def _like(self, dtype, device):
        return {"dtype": self.dtype if dtype is None else dtype, "device": self._ex.device if device is None
                else device}

    def new_zeros(self, *size, dtype=None, device=None, requires_grad=False):
        """Zeros of ``size`` with this tensor's dtype and device unless given."""
        from ._creation import zeros

        return zeros(*size, requires_grad=requires_grad, **self._like(dtype, device))

    def new_ones(self, *size, dtype=None, device=None, requires_grad=False):
        """Ones of ``size`` with this tensor's dtype and device unless given."""
        from ._creation import ones

        return ones(*size, requires_grad=requires_grad, **self._like(dtype, device))

    def new_empty(self, *size, dtype=None, device=None, requires_grad=False):
        """An uninitialized tensor of ``size`` with this tensor's dtype and device unless given."""
        from ._creation import empty

        return empty(*size, requires_grad=requires_grad, **self._like(dtype, device))

    def new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False):
        """``fill_value`` everywhere in ``size``, with this tensor's dtype and device unless given."""
        from ._creation import full

        return full(size, fill_value, requires_grad=requires_grad, **self._like(dtype, device))

    def new_tensor(self, data, *, dtype=None, device=None, requires_grad=False):
        """A copy of ``data`` with this tensor's dtype and device unless given."""
        from ._creation import tensor

        if isinstance(data, TM.Tensor):
            data = data.detach().clone()
        return tensor(data, requires_grad=requires_grad, **self._like(dtype, device))

    # in place ---------------------------------------------------------------------------
    def _rebind(self, out, op: str):
        """Make ``out`` (a native array) self's value, as torch writes an op's result in place.

        Raises:
            CastError: ``out``'s dtype may not be cast to self's, or its shape differs.
        """
        from ._tensor import _can_cast

        ex = self._ex
        mine, got = ex.dtype(self._n), ex.dtype(out)
        if not _can_cast(got, mine):
            raise CastError(f"{op}: result type {got.name} can't be cast to the desired output type {mine.name}")
        if ex.shape(out) != ex.shape(self._n):
            raise CastError(f"{op}: output with shape {list(ex.shape(self._n))} doesn't match the broadcast "
                            f"shape {list(ex.shape(out))}")
        _views.assign(self, ex.astype(out, mine))
        return self

    def fill_(self, value):
        """Set every element to ``value`` (a number or a 0-d tensor), cast to self's dtype."""
        ex = self._ex
        _views.assign(self, ex.fill_(self._n, operand(self, value, "fill_")))
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
            from .interop import transfer

            native = transfer(native, src._ex, ex)
        _views.assign(self, ex.copy_(self._n, native))
        return self

    # elementwise ------------------------------------------------------------------------
    def fmod(self, other):
        """C-style remainder (the sign of self), as ``torch.fmod``."""
        ex = self._ex
        return wrap(ex.fmod(self._n, operand(self, other, "fmod")), ex)

    # reductions and scans -----------------------------------------------------------------
    def logsumexp(self, dim, keepdim=False):
        """``log(sum(exp(self)))`` over ``dim``, computed stably."""
        return wrap(self._ex.logsumexp(self._n, dim, keepdim), self._ex)

    def cumsum(self, dim, *, dtype=None):
        """Running sum along ``dim`` (ints and bools accumulate in int64)."""
        return wrap(self._ex.cumsum(self._n, int_arg(dim, "cumsum", "dim"), _dtype_or_none(dtype)), self._ex)

    def cumprod(self, dim, *, dtype=None):
        """Running product along ``dim`` (ints and bools accumulate in int64)."""
        return wrap(self._ex.cumprod(self._n, int_arg(dim, "cumprod", "dim"), _dtype_or_none(dtype)), self._ex)

    def norm(self, p="fro", dim=None, keepdim=False, dtype=None):
        """The vector p-norm over ``dim`` (all elements when None); ``"fro"`` is the 2-norm."""
        return wrap(self._ex.norm(self._n, p, dim, keepdim, _dtype_or_none(dtype)), self._ex)

    def softmax(self, dim, dtype=None):
        """``exp(self)`` normalized to sum to one along ``dim`` (computed in ``dtype`` if given)."""
        return wrap(self._ex.softmax(self._n, int_arg(dim, "softmax", "dim"), _dtype_or_none(dtype)), self._ex)

    def log_softmax(self, dim, dtype=None):
        """``log(softmax(self, dim))``, computed stably."""
        return wrap(self._ex.log_softmax(self._n, int_arg(dim, "log_softmax", "dim"), _dtype_or_none(dtype)),
                    self._ex)

    # linear algebra ---------------------------------------------------------------------
    def bmm(self, mat2):
        """Batched matrix product of two 3-D tensors of one dtype."""
        ex = self._ex
        return wrap(ex.bmm(self._n, tensor_arg(self, mat2, "bmm", "mat2")), ex)

    def diag(self, diagonal=0):
        """A 1-D tensor's diagonal matrix, or a 2-D tensor's ``diagonal``-th diagonal."""
        return wrap(self._ex.diag(self._n, int_arg(diagonal, "diag", "diagonal")), self._ex)

    def trace(self):
        """Sum of a 2-D tensor's main diagonal."""
        return wrap(self._ex.trace(self._n), self._ex)

    # sampling -----------------------------------------------------------------------------
    def multinomial(self, num_samples, replacement=False, *, generator=None):
        """int64 indices drawn from the rows of self, read as unnormalized probabilities."""
        ex = self._ex
        return wrap(ex.multinomial(self._n, int_arg(num_samples, "multinomial", "num_samples"), replacement,
                                   _native_generator(generator, ex)), ex)

    def bernoulli(self, p=None, *, generator=None):
        """0/1 draws (self's dtype) with probability self, or ``p`` when given."""
        ex = self._ex
        return wrap(ex.bernoulli(self._n, operand(self, p, "bernoulli"), _native_generator(generator, ex)), ex)

    def bernoulli_(self, p=0.5, *, generator=None):
        """Fill self with 0/1 draws of probability ``p`` (a number or a tensor)."""
        ex = self._ex
        _views.assign(self, ex.bernoulli_(self._n, operand(self, p, "bernoulli_"), _native_generator(generator, ex)))
        return self

    def normal_(self, mean=0.0, std=1.0, *, generator=None):
        """Fill self with normal draws of ``mean`` and ``std``."""
        ex = self._ex
        _views.assign(self, ex.normal_(self._n, float(mean), float(std), _native_generator(generator, ex)))
        return self

    def uniform_(self, *args, generator=None, **kwargs):
        """Fill self with uniform draws from ``[from, to)`` (defaults 0 and 1)."""
        low, high = _bounds(args, kwargs)
        ex = self._ex
        _views.assign(self, ex.uniform_(self._n, low, high, _native_generator(generator, ex)))
        return self


def _bounds(args, kwargs) -> tuple:
    """``uniform_``'s ``from`` and ``to`` (``from`` is a keyword Python cannot spell)."""
    names = ("from", "to")
    values = dict(zip(names, args))
    for key, value in kwargs.items():
        if key not in names or key in values:
            raise TdxTypeError(f"uniform_() got an unexpected or repeated keyword argument {key!r}")
        values[key] = value
    if len(args) > 2:
        raise TdxTypeError(f"uniform_() takes at most 2 positional arguments ({len(args)} given)")
    return float(values.get("from", 0.0)), float(values.get("to", 1.0))


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
        if ex.caps.mutable:
            args = [_unwrap(self, a, native) for a in args]
            kwargs = {k: _unwrap(self, v, native) for k, v in kwargs.items()}
            getattr(self._n, native)(*args, **kwargs)
            return self
        return self._rebind(getattr(self, name)(*args, **kwargs)._n, native)

    method.__name__ = native
    method.__doc__ = f"In-place ``{name}``: torch's cast rule (the result must cast to self's dtype) and shape."
    return method


# in-place ops whose ``other`` torch accepts only as a Tensor
_TENSOR_OTHER = frozenset(("atan2", "arctan2", "logical_and", "logical_or", "logical_xor"))
# torch.Tensor's in-place variants of ops tdx has out of place
INPLACE = ("add", "sub", "mul", "div", "true_divide", "floor_divide", "remainder", "fmod", "pow",
           "clamp", "clip", "neg", "negative", "abs", "absolute", "exp", "exp2", "expm1", "log",
           "log2", "log10", "log1p", "sqrt", "rsqrt", "sin", "cos", "tan", "asin", "acos", "atan",
           "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "sigmoid", "relu", "erf", "floor",
           "ceil", "round", "trunc", "fix", "frac", "sign", "sgn", "reciprocal", "square", "atan2", "arctan2",
           "logical_not", "logical_and", "logical_or", "logical_xor", "bitwise_not", "bitwise_and",
           "bitwise_or", "bitwise_xor", "eq", "ne", "lt", "le", "gt", "ge", "greater", "greater_equal",
           "less", "less_equal", "not_equal", "multiply", "divide", "subtract", "tril", "triu",
           "masked_fill", "scatter", "scatter_add", "cumsum", "cumprod")

for _name in INPLACE:
    setattr(MoreTensorMethods, _name + "_", _inplace(_name))
for _cls in (MoreTensorMethods, IndexTensorMethods):
    for _name, _fn in list(vars(_cls).items()):
        if callable(_fn) and not _name.startswith("_") and not getattr(_fn, "_typed", False):
            setattr(_cls, _name, typed_errors(_fn))
