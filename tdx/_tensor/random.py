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
from .._errors import OpDtypeError, TdxRuntimeError, TdxTypeError, TdxValueError, UnsupportedOpError, mismatch
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
        _views.assign(self, ex.bernoulli_(self._n, operand(self, p, "bernoulli_"), _native_generator(generator, ex),
                                          **_views.fill_layout(self)))
        return self

    def normal_(self, mean=0.0, std=1.0, *, generator=None):
        """Fill self with normal draws of ``mean`` and ``std``."""
        ex = self._ex
        _views.assign(self, ex.normal_(self._n, float(mean), float(std), _native_generator(generator, ex),
                                       **_views.fill_layout(self)))
        return self

    def exponential_(self, lambd=1.0, *, generator=None):
        """Fill with draws from the exponential distribution of rate ``lambd`` (torch's CPU stream on cpu)."""
        if lambd <= 0:
            raise TdxRuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd}")
        ex = self._ex
        _views.assign(self, ex.exponential_(self._n, float(lambd), _native_generator(generator, ex),
                                            **_views.fill_layout(self)))
        return self

    def cauchy_(self, median=0.0, sigma=1.0, *, generator=None):
        """Fill with draws from the Cauchy distribution of ``median`` and scale ``sigma``."""
        ex = self._ex
        _views.assign(self, ex.cauchy_(self._n, float(median), float(sigma), _native_generator(generator, ex),
                                       **_views.fill_layout(self)))
        return self

    def log_normal_(self, mean=1.0, std=2.0, *, generator=None):
        """Fill with draws whose logarithm is normal with ``mean`` and ``std``."""
        if std <= 0:
            raise TdxRuntimeError(f"log_normal_ expects std > 0.0, but found std={std}")
        ex = self._ex
        _views.assign(self, ex.log_normal_(self._n, float(mean), float(std), _native_generator(generator, ex),
                                           **_views.fill_layout(self)))
        return self

    def geometric_(self, p, *, generator=None):
        """Fill with the number of Bernoulli(``p``) trials up to the first success (1, 2, ...)."""
        if not 0 < p < 1:
            raise TdxRuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p}")
        ex = self._ex
        _views.assign(self, ex.geometric_(self._n, float(p), _native_generator(generator, ex),
                                          **_views.fill_layout(self)))
        return self

    def uniform_(self, *args, generator=None, **kwargs):
        """Fill self with uniform draws from ``[from, to)`` (defaults 0 and 1)."""
        low, high = _bounds(args, kwargs)
        ex = self._ex
        _views.assign(self, ex.uniform_(self._n, low, high, _native_generator(generator, ex),
                                        **_views.fill_layout(self)))
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
    keep = bernoulli_like(input.detach(), 1.0 - p, generator)
    return input * (keep / (1.0 - p))  # torch's rounding: the mask is divided by 1 - p, then multiplied


def rrelu_noise(x, lower: float, upper: float, generator=None):
    """The slopes of ``rrelu`` in training, as torch's ``rrelu_with_noise`` draws them (a constant to autograd)."""
    ex = x._ex
    return wrap(ex.rrelu_noise(x.detach()._n, float(lower), float(upper), _native_generator(generator, ex)), ex)


def memory_order(x):
    """The permutation of ``x``'s dims from outermost to innermost in memory, when it is not their
    order and ``x``'s elements are dense without overlap (torch's ``empty_like`` then keeps the strides,
    and a draw into it fills memory in order); None otherwise."""
    shape, strides = tuple(x.shape), x.stride()
    perm = sorted(range(len(shape)), key=lambda d: (-strides[d], d))
    if perm == list(range(len(shape))):
        return None
    expected = 1
    for d in reversed(perm):
        if shape[d] != 1:
            if strides[d] != expected:
                return None
            expected *= shape[d]
    return tuple(perm)


def bernoulli_like(x, p: float, generator=None):
    """torch's ``empty_like(x).bernoulli_(p)``: 0/1 draws of ``x``'s shape and dtype, in ``x``'s memory order
    (what dropout's mask is; on a transposed view torch's draw follows the memory, not the indices)."""
    ex = x._ex
    perm = memory_order(x) if x.ndim > 1 else None
    if perm is None:
        return wrap(ex.bernoulli(x._n, p, _native_generator(generator, ex)), ex)
    laid = x.permute(perm)  # its indices run in memory order
    keep = wrap(ex.bernoulli(laid._n, p, _native_generator(generator, ex)), ex)
    inverse = [0] * len(perm)
    for i, d in enumerate(perm):
        inverse[d] = i
    return keep.permute(inverse)


dropout = typed_function(dropout)


# the samplers torch.distributions draws from ----------------------------------------------------
def _sampler_operand(x, op: str, arg: str = "input"):
    """``x``'s native after torch's checks for a sampler: a floating tensor. On a taped executor (MLX)
    Dirichlet draws have no gradient here, so a tensor that requires grad is refused for them, not
    given a silently wrong one; Poisson and binomial draws are not differentiable (torch's gradient
    is zero) and are not recorded."""
    need_tensor(x, op, arg)
    if not x.dtype.is_floating_point:
        from .operands import _TORCH_NAMES

        raise OpDtypeError(f"\"{op}\" not implemented for '{_TORCH_NAMES.get(x.dtype.name, x.dtype.name)}' "
                           f"({arg} must be a floating tensor)")
    if op == "_sample_dirichlet" and x._ex.taped and x.requires_grad and _tape_wants(x):
        raise UnsupportedOpError(
            f"{op}: a gradient through Dirichlet draws is not supported on {x.device} (torch's "
            f"_dirichlet_grad has no implementation there); detach {arg}, or use a torch device for "
            f"rsample gradients of Beta and Dirichlet")
    return x._n


def _tape_wants(x) -> bool:
    from . import recording as tape

    return tape.wants(x)


@_export
def _standard_gamma(input, generator=None):  # noqa: A002 - torch's name
    """``torch._standard_gamma``: Gamma(input, 1) draws, differentiable w.r.t. ``input`` as torch's
    (the implicit reparameterization gradient): natively on torch executors, through
    :func:`_standard_gamma_grad` on taped ones."""
    need_tensor(input, "_standard_gamma")
    ex = input._ex
    if ex.taped and input.requires_grad and _tape_wants(input):
        return _gamma_function().apply(input, generator)
    native = _sampler_operand(input, "_standard_gamma")
    return wrap(ex.standard_gamma(native, _native_generator(generator, ex)), ex)


@_export
def _standard_gamma_grad(input, output):  # noqa: A002 - torch's name
    """``torch._standard_gamma_grad``: d x / d alpha of standard gamma draws ``output`` of shapes
    ``input``: ``-(dP(alpha, x)/d alpha) / p(x; alpha)`` with P the regularized lower incomplete
    gamma, from its series ``P = sum_n x**(alpha+n) e**-x / Gamma(alpha+n+1)`` differentiated term by
    term (computed in log space, in chunks of the series)."""
    need_tensor(input, "_standard_gamma_grad")
    need_tensor(output, "_standard_gamma_grad", "output")
    a = input.detach()
    x = output.detach().clamp(min=1e-30 if a.dtype.itemsize > 4 else 1e-37)
    log_x = x.log()
    log_pdf = (a - 1) * log_x - x - a.lgamma()
    top = float(x.max().item()) if x.numel() else 0.0
    terms = int(top + 12 * math.sqrt(top) + 30)
    total = None
    for start in range(0, terms, 32):
        n = _arange_like(a, start, min(start + 32, terms)).reshape((-1,) + (1,) * a.ndim)
        an = a + n + 1
        part = (((a + n) * log_x - x - an.lgamma() - log_pdf).exp() * (log_x - an.digamma())).sum(0)
        total = part if total is None else total + part
    return -total


def _arange_like(t, start: int, stop: int):
    from .creation import arange

    return arange(start, stop, dtype=t.dtype, device=t.device)


_GAMMA: list = []


def _gamma_function():
    """The ``autograd.Function`` of gamma draws on taped executors (built once): the draws in forward,
    :func:`_standard_gamma_grad` in backward."""
    if _GAMMA:
        return _GAMMA[0]
    from ..autograd.function import Function

    class StandardGamma(Function):
        @staticmethod
        def forward(ctx, alpha, generator):
            ex = alpha._ex
            out = wrap(ex.standard_gamma(alpha._n, _native_generator(generator, ex)), ex)
            ctx.save_for_backward(alpha, out)
            return out

        @staticmethod
        def backward(ctx, grad):
            alpha, out = ctx.saved_tensors
            return grad * _standard_gamma_grad(alpha, out), None

    _GAMMA.append(StandardGamma)
    return StandardGamma


@_export
def _sample_dirichlet(input, generator=None):  # noqa: A002 - torch's name
    """``torch._sample_dirichlet``: Dirichlet(input) draws over the last dim."""
    ex = input._ex if isinstance(input, Tensor) else None
    native = _sampler_operand(input, "_sample_dirichlet")
    return wrap(ex.sample_dirichlet(native, _native_generator(generator, ex)), ex)


@_export
def poisson(input, generator=None):  # noqa: A002 - torch's name
    """``torch.poisson``: Poisson draws of rate ``input`` (non-negative), in its dtype."""
    ex = input._ex if isinstance(input, Tensor) else None
    native = _sampler_operand(input, "poisson")
    return wrap(ex.poisson(native, _native_generator(generator, ex)), ex)


@_export
def binomial(count, prob, generator=None):
    """``torch.binomial``: Binomial(count, prob) draws (floating ``count``; the two broadcast)."""
    need_tensor(count, "binomial", "count")
    ex = prob._ex if isinstance(prob, Tensor) else None
    native = _sampler_operand(prob, "binomial", "prob")
    if count._ex is not ex:
        raise mismatch("binomial", count._ex.device, ex.device)
    if not count.dtype.is_floating_point:
        from .operands import _TORCH_NAMES

        raise TdxValueError(f"binomial only supports floating-point dtypes for count, got: "
                            f"{_TORCH_NAMES.get(count.dtype.name, count.dtype.name)}")
    return wrap(ex.binomial(count._n, native, _native_generator(generator, ex)), ex)


@_export
def _dirichlet_grad(x, alpha, total):
    """``torch._dirichlet_grad``: d x / d alpha of Beta draws ``x`` (the Dirichlet rsample gradient)."""
    for name, t in (("x", x), ("alpha", alpha), ("total", total)):
        need_tensor(t, "_dirichlet_grad", name)
    ex = x._ex
    return wrap(ex.dirichlet_grad(x._n, alpha._n, total._n), ex)
