"""``tdx.special``: every function of ``torch.special``, on every executor.

Each function forwards torch's arguments to :func:`tdx._tensor.dispatch.call`: torch's own
``torch.special`` on a torch executor; on MLX, compositions of MLX ops (float64 included,
differentiable through tdx's tape) in :mod:`tdx.backends.mlx._special` and its sibling mixins. Must never import a framework and holds no per-executor logic.
"""

from __future__ import annotations

from ..._tensor.tensor import Tensor
from ..._tensor.dispatch import accept_out as _accept_out, call as _call

_UNARY = ("airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "digamma", "entr", "erf", "erfc", "erfcx",
          "erfinv", "exp2", "expit", "expm1", "gammaln", "i0", "i0e", "i1", "i1e", "log1p", "log_ndtr",
          "modified_bessel_i0", "modified_bessel_i1", "modified_bessel_k0", "modified_bessel_k1", "ndtr", "ndtri",
          "psi", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1", "sinc", "spherical_bessel_j0")
_BINARY = ("gammainc", "gammaincc", "xlog1py", "xlogy", "zeta")
_POLYNOMIALS = ("chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
                "chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he", "laguerre_polynomial_l",
                "legendre_polynomial_p", "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u",
                "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w")

__all__ = ["Tensor", *_UNARY, *_BINARY, *_POLYNOMIALS, "logit", "log_softmax", "logsumexp", "multigammaln",
           "polygamma", "round", "softmax"]


def _unary(name):
    def fn(input):  # noqa: A002 - torch's name
        return _call("special", name, input)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"torch.special.{name} of ``input``, elementwise."
    return fn


def _binary(name, first, second):
    def fn(a, b):
        return _call("special", name, a, b)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"torch.special.{name}({first}, {second}), elementwise with broadcasting."
    return fn


globals().update({n: _unary(n) for n in _UNARY})
globals().update({n: _binary(n, "input", "other") for n in _BINARY})
globals().update({n: _binary(n, "input", "n") for n in _POLYNOMIALS})


def logit(input, eps=None):  # noqa: A002
    """``log(p / (1 - p))``, with ``p`` clamped to ``[eps, 1 - eps]`` when ``eps`` is given."""
    return _call("special", "logit", input, eps)


def polygamma(n, input):  # noqa: A002
    """The ``n``-th derivative of the digamma function."""
    return _call("special", "polygamma", n, input)


def multigammaln(input, p):  # noqa: A002
    """The multivariate log-gamma function of dimension ``p``."""
    return _call("special", "multigammaln", input, p)


def round(input, *, decimals=0):  # noqa: A001, A002
    """``input`` rounded half to even to ``decimals`` decimal places."""
    return _call("special", "round", input, decimals=decimals)


def softmax(input, dim, *, dtype=None):  # noqa: A002
    """``exp(x) / sum(exp(x))`` over ``dim``."""
    return _call("special", "softmax", input, dim, dtype=dtype)


def log_softmax(input, dim, *, dtype=None):  # noqa: A002
    """``x - logsumexp(x)`` over ``dim``."""
    return _call("special", "log_softmax", input, dim, dtype=dtype)


def logsumexp(input, dim, keepdim=False):  # noqa: A002
    """``log(sum(exp(x)))`` over ``dim``, computed stably."""
    return _call("special", "logsumexp", input, dim, keepdim)


_accept_out(globals(), __all__)  # torch's out= on every function
