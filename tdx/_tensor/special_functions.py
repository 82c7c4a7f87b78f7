"""Special and number-theoretic functions: ``erfc``, ``erfinv``, ``lgamma``, ``digamma``, ``polygamma``,
``mvlgamma``, ``acosh``/``asinh``/``atanh``, ``sinc``, ``i0``, ``ldexp``, ``frexp``, ``gcd``/``lcm``,
``rsub`` and the bitwise shifts, as ``torch.*`` functions, ``Tensor`` methods and in-place forms.

Executors with a kernel of torch's signature run it; elsewhere the composites here, written with
tdx ops, compute the function to its dtype's accuracy (float64 included): ``lgamma`` by Lanczos'
series with the reflection formula, ``digamma``/``polygamma`` by the recurrence up to x >= 10 and
the asymptotic series there, ``erfc`` by ``1 - erf`` near zero and Laplace's continued fraction in
the tail. This module must never import a framework.
"""

from __future__ import annotations

import math

from .. import _dtypes as D
from .._errors import TdxRuntimeError
from .kernels import install
from .tensor import Tensor
from .wrapping import typed_errors

__all__: list = []

_LANCZOS = (0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313,
            -176.61502916214059, 12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6,
            1.5056327351493116e-7)
# B_2k for the asymptotic series of the polygamma functions
_BERNOULLI = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510)


def _floating(x):
    """``x`` as a floating tensor (ints and bools as the default float dtype, as torch)."""
    if x.dtype.is_floating_point or x.dtype.is_complex:
        return x
    return x.to(D.get_default_dtype())


def _wide(fn):
    """``fn`` computed in float64 where the executor holds it (float32 and narrower inputs lose no
    accuracy near poles and in cancellations), its result cast back to the input's float dtype."""
    def wrapper(input, *args):  # noqa: A002
        x = _floating(input)
        if x.dtype is not D.float64 and not x.dtype.is_complex and x._ex.caps.float64:
            return fn(x.to(D.float64), *args).to(x.dtype)
        return fn(x, *args)

    wrapper.__name__ = fn.__name__
    wrapper.__doc__ = fn.__doc__
    return wrapper


def _lgamma_pos(x):
    """log|Gamma(x)| for x >= 0.5 (Lanczos, g = 7)."""
    z = x - 1
    a = z * 0 + _LANCZOS[0]
    for i, c in enumerate(_LANCZOS[1:], 1):
        a = a + c / (z + i)
    t = z + 7.5
    return 0.5 * math.log(2 * math.pi) + (z + 0.5) * t.log() - t + a.log()


@_wide
def lgamma(input):  # noqa: A002
    """log|Gamma(input)|."""
    x = _floating(input)
    left = x < 0.5
    xr = x.where(left.logical_not(), 1 - x)  # reflected into [0.5, inf)
    pos = _lgamma_pos(xr)
    s = (x * math.pi).sin().abs()
    refl = (math.pi / s).log() - pos
    out = refl.where(left, pos)
    pole = (x == x.floor()) & (x <= 0)
    return out.where(pole.logical_not() & (x != -math.inf), math.inf)


@_wide
def digamma(input):  # noqa: A002
    """The logarithmic derivative of Gamma; -inf at 0 and NaN at the negative integers, as torch."""
    x = _floating(input)
    left = x < 0.5
    y = x.where(left.logical_not(), 1 - x)
    acc = y * 0
    for _ in range(10):  # psi(y) = psi(y + 1) - 1/y until y >= 10
        small = y < 10
        acc = acc - (1 / y).where(small, 0)
        y = y + small.to(y.dtype)
    inv = 1 / y
    inv2 = inv * inv
    series = inv2 * (1 / 12 - inv2 * (1 / 120 - inv2 * (1 / 252 - inv2 * (1 / 240 - inv2 * (
        1 / 132 - inv2 * (691 / 32760 - inv2 / 12))))))
    out = acc + y.log() - 0.5 * inv - series
    refl = out - math.pi / (x * math.pi).tan()
    out = refl.where(left, out)
    integer = (x == x.floor()) & (x <= 0)
    out = out.where(integer.logical_not(), math.nan)
    return out.where(x != 0, -math.inf)


def polygamma(n, input):  # noqa: A002
    """The ``n``-th derivative of the digamma function."""
    if not isinstance(n, int) or n < 0:
        raise TdxRuntimeError(f"polygamma(n, x) does not support negative n, got {n}")
    if n == 0:
        return digamma(input)
    return _polygamma(input, n)


@_wide
def _polygamma(x, n):
    lo = float(x.amin()) if x.numel() else 10.0
    shift = 0 if not math.isfinite(lo) else max(0, min(int(math.ceil(10 - lo)), 10_000))
    sign = -1.0 if n % 2 == 0 else 1.0  # (-1)^(n+1)
    fact = math.factorial(n)
    acc = x * 0
    for k in range(shift):
        acc = acc + _ipow(1 / (x + k), n + 1)
    y = x + shift
    inv = 1 / y
    inv2 = inv * inv
    power = _ipow(inv, n)  # inv ** (n + 2k) by products: exact to rounding on every executor
    tail = math.factorial(n - 1) * power + fact / 2 * power * inv
    for k, b in enumerate(_BERNOULLI, 1):
        power = power * inv2
        tail = tail + b * math.factorial(2 * k + n - 1) / math.factorial(2 * k) * power
    return sign * (fact * acc + tail)


def _ipow(t, m: int):
    out = t
    for _ in range(m - 1):
        out = out * t
    return out


def mvlgamma(input, p):  # noqa: A002
    """The multivariate log-gamma function of dimension ``p``."""
    if p < 1:
        raise TdxRuntimeError(f"p has to be greater than or equal to 1, got {p}")
    x = _floating(input)
    if bool((x <= (p - 1) / 2).any()):
        raise TdxRuntimeError(f"All elements must be greater than (p-1)/2, got p = {p}")
    out = x * 0 + p * (p - 1) / 4 * math.log(math.pi)
    for i in range(p):
        out = out + lgamma(x - i / 2)
    return out


@_wide
def erfc(input):  # noqa: A002
    """``1 - erf(input)``, without cancellation in the tail (Laplace's continued fraction there)."""
    x = _floating(input)
    a = x.abs()
    cut = 2.0 if x.dtype is D.float64 else 1.0
    tail = a >= cut
    t = a.where(tail, cut)
    f = t
    for k in range(60, 0, -1):
        f = t + (k / 2) / f
    cf = (-(t * t)).exp() / (math.sqrt(math.pi) * f)
    pos = cf.where(tail, 1 - a.erf())
    return (2 - pos).where(x < 0, pos)


def sinc(input):  # noqa: A002
    """``sin(pi x) / (pi x)``, 1 at 0."""
    x = _floating(input)
    zero = x == 0
    px = x.where(zero.logical_not(), 1.0) * math.pi
    return (px.sin() / px).where(zero.logical_not(), 1.0)


def i0(input):  # noqa: A002
    """The modified Bessel function of the first kind, order 0."""
    x = _floating(input).abs()
    q = (x * 0.5) ** 2
    term = x * 0 + 1
    total = term
    for k in range(1, 80):
        term = term * q / (k * k)
        total = total + term
    return total


def ldexp(input, other):  # noqa: A002
    """``input * 2 ** other`` in torch's result dtype: the two tensors' promoted type, the default
    float where that is an integer type."""
    if isinstance(other, Tensor):
        pair = (input, other)
        rt = D.result_type(tuple(t.dtype for t in pair if t.dim()), tuple(t.dtype for t in pair if not t.dim()))
        rt = rt if rt.is_floating_point or rt.is_complex else D.get_default_dtype()
        return input.to(rt) * (2.0 ** other.to(rt))
    return _floating(input) * 2.0 ** other


def frexp(input):  # noqa: A002
    """(mantissa, exponent) with ``input = mantissa * 2 ** exponent`` and 0.5 <= |mantissa| < 1."""
    if not input.dtype.is_floating_point:
        raise TdxRuntimeError(f"torch.frexp() only supports floating-point dtypes, got {input.dtype.name}")
    a = input.abs()
    ok = (a > 0) & a.isfinite()
    safe = a.where(ok, 1.0)
    e = safe.log2().floor() + 1
    m = safe / e.exp2()
    fix_hi = m >= 1  # rounding in log2 near powers of two
    e = e + fix_hi.to(e.dtype)
    m = m.where(fix_hi.logical_not(), m * 0.5)
    fix_lo = m < 0.5
    e = e - fix_lo.to(e.dtype)
    m = m.where(fix_lo.logical_not(), m * 2)
    m = (m * input.sign()).where(ok, input)
    from .. import return_types

    return return_types.frexp(m, e.where(ok, 0).to(D.int32))


def gcd(input, other):  # noqa: A002
    """The greatest common divisor, elementwise (non-negative)."""
    if input.dtype.is_floating_point or input.dtype is D.bool_:
        raise TdxRuntimeError(f"\"gcd_cpu\" not implemented for '{input.dtype.name.capitalize()}'")
    a, b = input.abs(), (other.abs() if isinstance(other, Tensor) else abs(other))
    from .shape import broadcast_tensors

    a, b = broadcast_tensors(a, b if isinstance(b, Tensor) else input.new_full((), b))
    while bool((b != 0).any()):
        nz = b != 0
        r = a.remainder(b.where(nz, 1))
        a, b = b.where(nz, a), r.where(nz, 0)
    return a


def lcm(input, other):  # noqa: A002
    """The least common multiple, elementwise (non-negative)."""
    g = gcd(input, other)
    q = input.abs() // g.where(g != 0, 1)
    return (q * (other.abs() if isinstance(other, Tensor) else abs(other))).where(g != 0, 0)


def rsub(input, other, *, alpha=1):  # noqa: A002
    """``other - alpha * input``."""
    if isinstance(other, Tensor):
        return other.sub(input, alpha=alpha)
    return (input * alpha).neg().add(other) if alpha != 1 else input.neg().add(other) \
        if input.dtype is not D.bool_ else input.sub(other).neg()


def _shift(left: bool):
    def fn(input, other):  # noqa: A002
        if not isinstance(input, Tensor):
            return other.__rlshift__(input) if left else other.__rrshift__(input)
        return input << other if left else input >> other

    return fn


def igamma(input, other):  # noqa: A002
    """The regularized lower incomplete gamma function P(``input``, ``other``) (``special.gammainc``)."""
    from ..compat.special import gammainc

    return gammainc(input, other)


def igammac(input, other):  # noqa: A002
    """The regularized upper incomplete gamma function Q(``input``, ``other``) (``special.gammaincc``)."""
    from ..compat.special import gammaincc

    return gammaincc(input, other)


_TABLE = {
    "erfc": (erfc, erfc.__doc__), "erfinv": (None, "The inverse of ``erf``."),
    "lgamma": (lgamma, lgamma.__doc__), "digamma": (digamma, digamma.__doc__),
    "polygamma": (polygamma, polygamma.__doc__), "mvlgamma": (mvlgamma, mvlgamma.__doc__),
    "acosh": (None, "The inverse hyperbolic cosine."), "asinh": (None, "The inverse hyperbolic sine."),
    "atanh": (None, "The inverse hyperbolic tangent."), "sinc": (sinc, sinc.__doc__), "i0": (i0, i0.__doc__),
    "ldexp": (ldexp, ldexp.__doc__), "frexp": (frexp, frexp.__doc__), "gcd": (gcd, gcd.__doc__),
    "lcm": (lcm, lcm.__doc__), "rsub": (rsub, rsub.__doc__),
    "bitwise_left_shift": (_shift(True), "``input << other``."),
    "bitwise_right_shift": (_shift(False), "``input >> other``."),
    "igamma": (igamma, igamma.__doc__), "igammac": (igammac, igammac.__doc__),
}
_UNARY_INPLACE = ("erfc", "erfinv", "lgamma", "digamma", "mvlgamma", "acosh", "asinh", "atanh", "sinc", "i0",
                  "ldexp", "gcd", "lcm", "bitwise_left_shift", "bitwise_right_shift", "igamma", "igammac")
install(globals(), __all__, _TABLE, methods=set(_TABLE) - {"polygamma", "rsub"}, inplace=_UNARY_INPLACE)
for _alias, _target in {"arccosh": "acosh", "arcsinh": "asinh", "arctanh": "atanh"}.items():
    globals()[_alias] = globals()[_target]
    __all__.append(_alias)
    setattr(Tensor, _alias, getattr(Tensor, _target))
    setattr(Tensor, _alias + "_", getattr(Tensor, _target + "_"))


def _polygamma_method(self, n):
    """``torch.polygamma(n, self)``."""
    return globals()["polygamma"](n, self)


def _polygamma_inplace(self, n):
    """In-place ``polygamma(n, self)``."""
    if self._ex.caps.mutable:
        self._n.polygamma_(n)
        return self
    return self._rebind(globals()["polygamma"](n, self)._n, "polygamma_")


Tensor.polygamma = _polygamma_method
Tensor.polygamma_ = typed_errors(_polygamma_inplace)
