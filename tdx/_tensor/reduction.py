"""Reductions and scans: ``sum``/``mean``/``var``/``max``..., ``norm``, ``softmax``, ``logsumexp``,
``cumsum``/``cummax``, and the NaN-aware forms (``nansum``, ``nanmean``), as ``Tensor`` methods.

Each op unwraps its operands (checking they share an executor), normalizes torch's argument
forms, calls the executor and wraps the result; methods are attached to :class:`Tensor` by
:func:`wrapping.attach`. This module must never import a framework, never holds a per-executor
special case (those live in the executors), and depends on the Tensor core only, never on
another op family through it.
"""

from __future__ import annotations

import math

from .. import _dtypes as D
from .. import return_types
from .._errors import NATIVE_ERRORS, TdxRuntimeError, TdxTypeError, UnsupportedOpError
from . import recording as _tape
from ..autograd.tape import ACTIVE as _TAPE, MODE as _MODE
from ..backends.base import norm_dim
from .operands import _full, _is_float, _no_complex, _not_implemented, _scan_extreme, _shifted, _work
from .tensor import Tensor
from .wrapping import attach, dtype_or_none, exporter, inline_typed, int_arg, operand, typed_errors, wrap

__all__: list = []
_F32 = D.float32
_new = object.__new__
_export = exporter(__all__)


def numpy_dims(dim, keepdim, axis, keepdims, op: str) -> tuple:
    """``(dim, keepdim)`` from NumPy's ``axis``/``keepdims`` given in their place.

    Raises:
        TdxTypeError: both ``dim`` and ``axis`` given.
    """
    if axis is not None:
        if dim is not None:
            raise TdxTypeError(f"{op}() received an invalid combination of arguments: got both dim and axis")
        dim = axis
    return dim, (keepdim if keepdims is None else keepdims)


class ReductionMethods:
    """The reduction methods of ``tdx.Tensor``."""

    __slots__ = ()

    # reductions -----------------------------------------------------------------------
    @inline_typed
    def sum(self, dim=None, keepdim=False, *, dtype=None, axis=None, keepdims=None):
        if axis is not None or keepdims is not None:  # NumPy's names, which torch's parser takes too
            dim, keepdim = numpy_dims(dim, keepdim, axis, keepdims, "sum")
        if _TAPE[0] and _MODE.enabled and _tape.wants(self):
            return _tape.call(ReductionMethods.sum, self, dim, keepdim, dtype=dtype)
        ex = self._ex
        try:
            n = ex.sum(self._n, dim, keepdim, dtype)
        except NATIVE_ERRORS as err:
            raise ex.native_error(err) from None
        t = _new(Tensor)  # wrap's, inlined: the per-op path
        t._n = n
        t._ex = ex
        t._ag = t._view = None
        t._dt = _F32 if dtype is None and self._dt is _F32 else None  # a float32 reduction is float32 (a norm's)
        return t

    @inline_typed
    def mean(self, dim=None, keepdim=False, *, dtype=None, axis=None, keepdims=None):
        if axis is not None or keepdims is not None:  # NumPy's names, which torch's parser takes too
            dim, keepdim = numpy_dims(dim, keepdim, axis, keepdims, "mean")
        if _TAPE[0] and _MODE.enabled and _tape.wants(self):
            return _tape.call(ReductionMethods.mean, self, dim, keepdim, dtype=dtype)
        ex = self._ex
        try:
            n = ex.mean(self._n, dim, keepdim, dtype)
        except NATIVE_ERRORS as err:
            raise ex.native_error(err) from None
        t = _new(Tensor)  # wrap's, inlined: the per-op path
        t._n = n
        t._ex = ex
        t._ag = t._view = None
        t._dt = _F32 if dtype is None and self._dt is _F32 else None  # a float32 reduction is float32 (a norm's)
        return t

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

    # reductions and scans -----------------------------------------------------------------
    def logsumexp(self, dim, keepdim=False):
        """``log(sum(exp(self)))`` over ``dim``, computed stably."""
        return wrap(self._ex.logsumexp(self._n, dim, keepdim), self._ex)

    def cumsum(self, dim, *, dtype=None):
        """Running sum along ``dim`` (ints and bools accumulate in int64)."""
        return wrap(self._ex.cumsum(self._n, int_arg(dim, "cumsum", "dim"), dtype_or_none(dtype)), self._ex)

    def cumprod(self, dim, *, dtype=None):
        """Running product along ``dim`` (ints and bools accumulate in int64)."""
        return wrap(self._ex.cumprod(self._n, int_arg(dim, "cumprod", "dim"), dtype_or_none(dtype)), self._ex)

    def norm(self, p="fro", dim=None, keepdim=False, dtype=None):
        """The vector p-norm over ``dim`` (all elements when None); ``"fro"`` is the 2-norm."""
        return wrap(self._ex.norm(self._n, p, dim, keepdim, dtype_or_none(dtype)), self._ex)

    def softmax(self, dim, dtype=None):
        """``exp(self)`` normalized to sum to one along ``dim`` (computed in ``dtype`` if given)."""
        return wrap(self._ex.softmax(self._n, int_arg(dim, "softmax", "dim"), dtype_or_none(dtype)), self._ex)

    def log_softmax(self, dim, dtype=None):
        """``log(softmax(self, dim))``, computed stably."""
        return wrap(self._ex.log_softmax(self._n, int_arg(dim, "log_softmax", "dim"), dtype_or_none(dtype)),
                    self._ex)

    # reductions and scans ------------------------------------------------------------------------
    def nansum(self, dim=None, keepdim=False, *, dtype=None):
        """Sum over ``dim`` (all when None) counting NaN as zero: the executor's own kernel where it has one (torch's,
        with its dtype coverage), else composed."""
        if self.dtype.is_complex:
            raise TdxRuntimeError("nansum does not support complex inputs")
        kernel = self._ex.nansum_kernel
        if kernel is not None:
            return wrap(kernel(self._n, dim, keepdim, dtype), self._ex)
        x = self.where(self.isnan().logical_not(), 0) if self.dtype.is_floating_point else self
        return x.sum(dim, keepdim, dtype=dtype)

    def nanmean(self, dim=None, keepdim=False, *, dtype=None):
        """Mean over ``dim`` (all when None) of the non-NaN elements (NaN where there are none)."""
        if not _is_float(self.dtype):
            raise TdxRuntimeError(f"nanmean(): expected a floating point or complex input, got {self.dtype.name}")
        if dtype is not None and not _is_float(D.as_dtype(dtype)):
            raise TdxRuntimeError(f"nanmean(): dtype must be floating point or complex, got {D.as_dtype(dtype).name}")
        count = self.isnan().logical_not().sum(dim, keepdim)
        return self.nansum(dim, keepdim, dtype=dtype) / count

    def __contains__(self, element):
        """``element in tensor``: whether any element equals ``element`` (a number or a tensor), as torch's.

        Raises:
            TdxRuntimeError: ``element`` is neither a number nor a tensor.
        """
        if not isinstance(element, (Tensor, int, float, complex)):
            raise TdxRuntimeError(f"Tensor.__contains__ only supports Tensor or scalar, but you passed in a "
                                  f"{type(element)}.")
        return bool((self == element).any().item())

    def count_nonzero(self, dim=None):
        """int64 count of non-zero elements over ``dim`` (an int or a tuple; all when None)."""
        return (self != 0).sum(dim)

    def aminmax(self, *, dim=None, keepdim=False):
        """(min, max) over ``dim``, or over all elements when None."""
        _no_complex(self, "aminmax")
        if dim is None:
            if self.numel() == 0:
                raise TdxRuntimeError("aminmax(): cannot reduce an empty tensor (the operation has no identity)")
            lo, hi = self.amin(), self.amax()
            if keepdim:
                shape = (1,) * self.ndim
                lo, hi = lo.reshape(shape), hi.reshape(shape)
            return return_types.aminmax(lo, hi)
        if isinstance(dim, bool) or not isinstance(dim, int):
            raise TdxTypeError(f"aminmax(): argument 'dim' must be int, not {type(dim).__name__}")
        return return_types.aminmax(self.amin(dim, keepdim), self.amax(dim, keepdim))

    def cummax(self, dim):
        """(values, indices) of the running maximum along ``dim`` (ties and NaNs take the later index)."""
        return _scan_extreme(self, dim, "cummax", lambda cur, prev: cur >= prev)

    def cummin(self, dim):
        """(values, indices) of the running minimum along ``dim`` (ties and NaNs take the later index)."""
        return _scan_extreme(self, dim, "cummin", lambda cur, prev: cur <= prev)

    def logcumsumexp(self, dim):
        """``log(cumsum(exp(self)))`` along ``dim``, computed without overflow or underflow.

        On tape executors its derivative is torch's closed form (``logcumsumexp_backward``), not
        the scan's chain rule: the two round differently where the values are large.
        """
        d = norm_dim(dim, self.ndim)
        if not self.dtype.is_floating_point:
            if self.dtype.is_complex:
                raise UnsupportedOpError("logcumsumexp() of complex tensors is not supported")
            raise _not_implemented("logcumsumexp", self.dtype)
        if _TAPE[0] and _MODE.enabled and _tape.wants(self):
            return _log_cum_sum_exp_function().apply(self, d)
        return _log_cum_sum_exp(self, d)

    logcumsumexp._typed = True  # recorded by its Function, not by the method wrapper (its ops are typed)


def _log_cum_sum_exp(t, d: int):
    """The scan of ``logcumsumexp`` along the normalized dim ``d``: the executor's, else (it answers
    NotImplemented) doubling steps of ``logaddexp``."""
    x = (t.reshape(1) if t.ndim == 0 else t)._cast(_work(t.dtype))
    native = x._ex.logcumsumexp(x._n, d)
    if native is not NotImplemented:
        return wrap(native, x._ex).reshape(t.shape)._cast(t.dtype)
    n, step = x.shape[d], 1
    while step < n:
        pad_shape = tuple(step if i == d else s for i, s in enumerate(x.shape))
        prev = _shifted(x, d, step, _full(x, pad_shape, -math.inf, x.dtype))
        x = x.logaddexp(prev)
        step *= 2
    return x.reshape(t.shape)._cast(t.dtype)


_LCSE: list = []


def _log_cum_sum_exp_function():
    """The ``autograd.Function`` of ``logcumsumexp`` with torch's derivative (built once)."""
    if _LCSE:
        return _LCSE[0]
    from ..autograd.function import Function

    class LogCumSumExp(Function):
        @staticmethod
        def forward(ctx, x, d):
            out = _log_cum_sum_exp(x, d)
            ctx.save_for_backward(x, out)
            ctx.d = d
            return out

        @staticmethod
        def backward(ctx, grad):
            x, out = ctx.saved_tensors
            d = ctx.d
            if grad.ndim == 0 or grad.numel() == 0:
                return grad, None
            # torch's form: exp(x + reverse logcumsumexp(log|g| - out)), split by the sign of g
            from .formats import finfo

            lowest = _full(grad, (), finfo(grad.dtype).min, grad.dtype)
            log_abs = grad.abs().log()
            pos = log_abs.where(grad > 0, lowest)
            neg = log_abs.where(grad < 0, lowest)

            def reverse(v):
                return v.flip(d).logcumsumexp(d).flip(d)

            return (reverse(pos - out) + x).exp() - (reverse(neg - out) + x).exp(), None

    _LCSE.append(LogCumSumExp)
    return LogCumSumExp


for _name, _fn in list(vars(ReductionMethods).items()):
    if callable(_fn) and not _name.startswith("_") and not getattr(_fn, "_typed", False):
        setattr(ReductionMethods, _name, typed_errors(_fn))
attach(ReductionMethods)


@_export
def _is_all_true(input):  # noqa: A002 - torch's name
    """``torch._is_all_true``: a 0-d bool tensor, whether every element of the bool tensor
    ``input`` is True (torch's argument validation in ``torch.distributions`` asks it)."""
    if not isinstance(input, Tensor) or input.dtype is not D.bool_:
        raise TdxTypeError(f"_is_all_true expects a bool tensor, got {type(input).__name__} "
                           f"{getattr(input, 'dtype', '')}".rstrip())
    return input.all()


@_export
def _is_any_true(input):  # noqa: A002 - torch's name
    """``torch._is_any_true``: a 0-d bool tensor, whether any element of the bool tensor ``input``
    is True."""
    if not isinstance(input, Tensor) or input.dtype is not D.bool_:
        raise TdxTypeError(f"_is_any_true expects a bool tensor, got {type(input).__name__} "
                           f"{getattr(input, 'dtype', '')}".rstrip())
    return input.any()
