"""Sampling: ``multinomial``, ``bernoulli``, the in-place ``normal_``/``uniform_``, and ``torch.randperm``,
``torch.normal`` and ``dropout`` (the sampling helper ``tdx.nn.functional`` builds on). Draws come
from the executor's generator or a :class:`tdx.Generator`.

Each op unwraps its operands (checking they share an executor), normalizes torch's argument
forms, calls the executor and wraps the result; methods are attached to :class:`Tensor` by
:func:`wrapping.attach`. This module must never import a framework, never holds a per-executor
special case (those live in the executors), and depends on the Tensor core only, never on
another op family through it.
"""

from __future__ import annotations

import math

from .. import _dtypes as D
from .. import backends
from .._errors import TdxRuntimeError, TdxTypeError, TdxValueError, mismatch
from . import views as _views
from .generator import native as _native_generator
from .tensor import Tensor
from .wrapping import attach, exporter, int_arg, need_tensor, operand, typed_errors, typed_function, wrap

__all__: list = []
_export = exporter(__all__)


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


class RandomMethods:
    """The random methods of ``tdx.Tensor``."""

    __slots__ = ()

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

    def _draws(self, generator):
        """Uniform draws in (0, 1) shaped like self, in self's float dtype."""
        u = self.detach().clone().uniform_(0.0, 1.0, generator=generator)
        return u.clamp(min=1e-12 if self.dtype.itemsize > 4 else 1e-7)

    def exponential_(self, lambd=1.0, *, generator=None):
        """Fill with draws from the exponential distribution of rate ``lambd``."""
        if lambd <= 0:
            raise TdxRuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd}")
        return self.copy_(-(self._draws(generator).neg().log1p()) / lambd)

    def cauchy_(self, median=0.0, sigma=1.0, *, generator=None):
        """Fill with draws from the Cauchy distribution."""
        return self.copy_(((self._draws(generator) - 0.5) * math.pi).tan() * sigma + median)

    def log_normal_(self, mean=1.0, std=2.0, *, generator=None):
        """Fill with draws whose logarithm is normal with ``mean`` and ``std``."""
        if std <= 0:
            raise TdxRuntimeError(f"log_normal_ expects std > 0.0, but found std={std}")
        return self.copy_((self.detach().clone().normal_(mean, std, generator=generator)).exp())

    def geometric_(self, p, *, generator=None):
        """Fill with the number of Bernoulli(``p``) trials up to the first success (1, 2, ...)."""
        if not 0 < p < 1:
            raise TdxRuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p}")
        u = self.to(self.dtype if self.dtype.is_floating_point else D.float64)._draws(generator)
        return self.copy_((u.log() / math.log1p(-p)).ceil())

    def uniform_(self, *args, generator=None, **kwargs):
        """Fill self with uniform draws from ``[from, to)`` (defaults 0 and 1)."""
        low, high = _bounds(args, kwargs)
        ex = self._ex
        _views.assign(self, ex.uniform_(self._n, low, high, _native_generator(generator, ex)))
        return self


for _name, _fn in list(vars(RandomMethods).items()):
    if callable(_fn) and not _name.startswith("_") and not getattr(_fn, "_typed", False):
        setattr(RandomMethods, _name, typed_errors(_fn))
attach(RandomMethods)


@_export
def randperm(n, *, generator=None, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """A random permutation of ``0..n-1`` (int64 unless ``dtype`` says otherwise)."""
    if isinstance(n, bool) or not isinstance(n, int):
        raise TdxTypeError(f"randperm(): argument 'n' must be int, not {type(n).__name__}")
    ex = backends.get(device)
    out = wrap(ex.randperm(n, D.int64 if dtype is None else D.as_dtype(dtype), _native_generator(generator, ex)),
               ex)
    return out.requires_grad_() if requires_grad else out


@_export
def normal(mean, std=1.0, size=None, *, generator=None, dtype=None, layout=None, device=None, requires_grad=False):
    """Normal draws: of ``size`` for number ``mean``/``std``, else of their broadcast shape.

    Raises:
        UnsupportedOpError: a ``layout`` other than ``strided``.
    """
    from .creation import empty
    from .formats import check_layout

    check_layout(layout, "normal")

    tensors = [t for t in (mean, std) if isinstance(t, Tensor)]
    if not tensors:
        if size is None:
            raise TdxTypeError("normal(): with number mean and std, 'size' is required")
        out = empty(size, dtype=dtype, device=device).normal_(mean, std, generator=generator)
        return out.requires_grad_() if requires_grad else out
    ref = tensors[0]
    if any(t._ex is not ref._ex for t in tensors):
        raise mismatch("normal", tensors[0]._ex.device, tensors[1]._ex.device)
    if isinstance(std, Tensor) and bool((std < 0).any().item()):
        raise TdxValueError("normal expects all elements of std >= 0.0")
    shape = _broadcast(mean, std)
    z = empty(shape, dtype=ref.dtype if ref.dtype.is_floating_point else None, device=ref.device)
    z = z.normal_(0.0, 1.0, generator=generator)
    return z * std + mean


def _broadcast(*values) -> tuple:
    shapes = [tuple(v.shape) for v in values if isinstance(v, Tensor)]
    ndim = max(len(s) for s in shapes)
    out = []
    for i in range(ndim):
        sizes = {s[len(s) - ndim + i] for s in shapes if len(s) - ndim + i >= 0} - {1}
        if len(sizes) > 1:
            raise TdxValueError(f"normal(): shapes {[list(s) for s in shapes]} do not broadcast")
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


def dropout(input, p=0.5, training=True, *, generator=None):  # noqa: A002 - torch's name
    """Zero each element with probability ``p`` and scale the rest by ``1/(1-p)`` (when training).

    The helper behind ``tdx.nn.functional.dropout``; not exported in the ``tdx`` namespace
    (torch's ``torch.dropout`` takes ``train``, not ``training``).

    Raises:
        TdxValueError: ``p`` is outside ``[0, 1]``.
        TdxTypeError: ``input`` is not a Tensor.
    """
    need_tensor(input, "dropout")
    if not 0.0 <= p <= 1.0:
        raise TdxValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    ex = input._ex
    if p == 1.0:
        return input * wrap(ex.zeros(tuple(input.shape), input.dtype), ex)
    # the mask is drawn from a detached input: it is a constant to autograd (torch's bernoulli has no derivative)
    keep = wrap(ex.bernoulli(input.detach()._n, 1.0 - p, _native_generator(generator, ex)), ex)
    return input * (keep / (1.0 - p))  # torch's rounding: the mask is divided by 1 - p, then multiplied


dropout = typed_function(dropout)
