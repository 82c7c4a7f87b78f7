"""float64 ``exp``, ``sin``, ``cos`` and ``erf`` on MLX to float64 accuracy, and gradients to match.

MLX's CPU computes float64 ``exp``, ``sin``, ``cos`` and ``erf`` to about float32 accuracy
(relative errors near 1e-7 to 1e-5), while its float64 ``expm1``, ``tan``, ``log`` and
arithmetic are accurate to the last bits. The functions here rebuild the four from the
accurate ones:

- ``exp(x) = expm1(|x|) + 1`` for ``x >= 0`` and its reciprocal for ``x < 0`` (no cancellation);
- ``sin`` and ``cos`` from ``t = tan(x / 2)`` by the half-angle identities, written with
  ``cot(x / 2)`` where ``|t| > 1`` so nothing overflows;
- ``erf(x) = 2/sqrt(pi) * exp(-x^2) * sum_n 2^n x^(2n+1) / (1*3*...*(2n+1))``, a series of
  positive terms (no cancellation), summed to float64 precision for ``|x| <= 6`` (beyond,
  ``erf`` is +-1 in float64).

Each is an ``mx.custom_function`` whose derivative uses the accurate functions too, so
gradients through the tape are float64-accurate; so are ``tan``, ``log2`` and ``log10``, whose
MLX forward is accurate but whose MLX derivative is not. Ops built on ``exp`` (sigmoid, softmax,
log_softmax, logsumexp) use :func:`exp` for float64 in the executor. Must never import torch.
"""

from __future__ import annotations

import functools

import mlx.core as mx


def _exp(x, s):
    grown = mx.add(mx.expm1(mx.abs(x, stream=s), stream=s), 1.0, stream=s)
    # exp(x) for x in (-745, -709] is subnormal while exp(-x) overflows: MLX's own exp there
    tiny = mx.less(x, -709.0, stream=s)
    small = mx.where(tiny, mx.exp(x, stream=s), mx.reciprocal(grown, stream=s), stream=s)
    return mx.where(mx.greater_equal(x, 0.0, stream=s), grown, small, stream=s)


def _sin_cos(x, s):
    t = mx.tan(mx.multiply(x, 0.5, stream=s), stream=s)
    small = mx.less_equal(mx.abs(t, stream=s), 1.0, stream=s)
    u = mx.where(small, t, mx.reciprocal(t, stream=s), stream=s)  # |u| <= 1
    u2 = mx.square(u, stream=s)
    denom = mx.add(u2, 1.0, stream=s)
    sin = mx.divide(mx.multiply(u, 2.0, stream=s), denom, stream=s)
    one_minus = mx.divide(mx.subtract(1.0, u2, stream=s), denom, stream=s)
    cos = mx.where(small, one_minus, mx.negative(one_minus, stream=s), stream=s)
    return sin, cos


def _only(primals):
    """The one primal of a one-input custom function (MLX passes it bare, not in a tuple)."""
    return primals[0] if isinstance(primals, (list, tuple)) else primals


_ERF_TERMS = 160  # the series' terms peak near n = x^2 = 36 and fall below 1e-17 of the sum by n = 160
_TWO_OVER_SQRT_PI = 1.1283791670955126


def _erf(x, s):
    z = mx.clip(x, -6.0, 6.0, stream=s)
    z2 = mx.square(z, stream=s)
    term, total = z, z
    for n in range(1, _ERF_TERMS):
        term = mx.multiply(term, mx.divide(mx.multiply(z2, 2.0, stream=s), 2.0 * n + 1.0, stream=s), stream=s)
        total = mx.add(total, term, stream=s)
    out = mx.multiply(mx.multiply(total, _exp(mx.negative(z2, stream=s), s), stream=s), _TWO_OVER_SQRT_PI,
                      stream=s)
    return mx.where(mx.isnan(x, stream=s), x, mx.clip(out, -1.0, 1.0, stream=s), stream=s)


def _custom(forward, slope, stream):
    """``forward(x)`` as an ``mx.custom_function`` whose derivative is ``slope(x, forward(x))``."""
    @mx.custom_function
    def fn(x):
        return forward(x, stream)

    @fn.vjp
    def fn_vjp(primals, cotangent, output):
        return (mx.multiply(cotangent, slope(_only(primals), output, stream), stream=stream),)

    return fn


_LN2, _LN10 = 0.6931471805599453, 2.302585092994046
# name -> (forward, derivative as a function of (x, output)); the forward of log2, log10 and tan
# is MLX's own (accurate), only MLX's derivatives of them are float32-accurate
_FUNCTIONS = {
    "exp": (_exp, lambda x, y, s: y),
    "sin": (lambda x, s: _sin_cos(x, s)[0], lambda x, y, s: _sin_cos(x, s)[1]),
    "cos": (lambda x, s: _sin_cos(x, s)[1], lambda x, y, s: mx.negative(_sin_cos(x, s)[0], stream=s)),
    "erf": (_erf, lambda x, y, s: mx.multiply(_exp(mx.negative(mx.square(x, stream=s), stream=s), s),
                                              _TWO_OVER_SQRT_PI, stream=s)),
    "tan": (lambda x, s: mx.tan(x, stream=s), lambda x, y, s: mx.add(mx.square(y, stream=s), 1.0, stream=s)),
    "log2": (lambda x, s: mx.log2(x, stream=s),
             lambda x, y, s: mx.reciprocal(mx.multiply(x, _LN2, stream=s), stream=s)),
    "log10": (lambda x, s: mx.log10(x, stream=s),
              lambda x, y, s: mx.reciprocal(mx.multiply(x, _LN10, stream=s), stream=s)),
    # 1 / (1 + exp(-x)); its derivative from the output, y (1 - y), stays finite where exp(-x) overflows
    "sigmoid": (lambda x, s: mx.reciprocal(mx.add(_exp(mx.negative(x, stream=s), s), 1.0, stream=s), stream=s),
                lambda x, y, s: mx.multiply(y, mx.subtract(1.0, y, stream=s), stream=s)),
}
NAMES = tuple(_FUNCTIONS)


@functools.lru_cache(maxsize=None)
def functions(stream) -> dict:
    """Name -> float64-accurate function on ``stream`` (with its derivative), for :data:`NAMES`."""
    return {name: _custom(forward, slope, stream) for name, (forward, slope) in _FUNCTIONS.items()}


def exp(x, stream):
    """``exp`` of ``x``: float64-accurate for float64 arrays, MLX's own otherwise."""
    if x.dtype == mx.float64:
        return functions(stream)["exp"](x)
    return mx.exp(x, stream=stream)
