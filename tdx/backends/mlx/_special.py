"""``torch.special`` on MLX: each function of torch's namespace as ``special_<name>`` on native arrays.

Composed from MLX ops and the executor's float64-accurate ``exp``/``log``/``sin``/``cos``/``erf``
(:mod:`._float64`), so every function is differentiable by ``mx.vjp``: ``gammaln`` by Lanczos'
approximation (g = 7, 9 terms, ~1e-15 relative) with the reflection formula below 1/2; ``digamma``
by recurrence up to 10 and the asymptotic series; ``polygamma``/``zeta`` by the Euler-Maclaurin sum
of the Hurwitz zeta function (20 terms + 8 Bernoulli corrections); ``i0``/``i1`` (and the scaled
forms) by their power series, summed until the terms are below the dtype's precision; the
orthogonal polynomials by their three-term recurrences. Integer inputs compute in float32 and
half precision in float32 rounded once, as torch's. The ``erfc`` family, the Bessel functions J, Y,
K and ``airy_ai``, and ``gammainc``/``gammaincc`` are in :mod:`._error_functions`, :mod:`._bessel`
and :mod:`._incomplete_gamma`. Must never import torch or the facade.
"""

from __future__ import annotations

import math

import mlx.core as mx

from ..._errors import TdxRuntimeError

_LANCZOS = (0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313,
            -176.61502916214059, 12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6,
            1.5056327351493116e-7)
_B2J = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510)  # Bernoulli B_2j
_HALF = (mx.float16, mx.bfloat16)


class MLXSpecialFunctions:
    """The functions of ``torch.special`` on MLX arrays (``special_<name>``)."""

    __slots__ = ()

    # dtypes ---------------------------------------------------------------------------------------
    def _sp_in(self, x):
        """(``x`` in its compute dtype, the result dtype)."""
        if not isinstance(x, mx.array):
            x = mx.array(x, dtype=mx.float32)
        if x.dtype in (mx.float32, mx.float64):
            return x, x.dtype
        if x.dtype in _HALF:
            return x.astype(mx.float32), x.dtype
        return x.astype(mx.float32), mx.float32

    def _sp_unary(self, fn, x):
        x, out = self._sp_in(x)
        return fn(x).astype(out)

    def _sp_binary(self, fn, x, y):
        xa, ya = (v if isinstance(v, mx.array) else None for v in (x, y))
        ref = xa if xa is not None else ya
        if xa is None:
            x = mx.array(x, dtype=ref.dtype if ref.dtype in (mx.float32, mx.float64) else mx.float32)
        if ya is None:
            y = mx.array(y, dtype=ref.dtype if ref.dtype in (mx.float32, mx.float64) else mx.float32)
        dt = (mx.zeros((), x.dtype) + mx.zeros((), y.dtype)).dtype if xa is not None and ya is not None else ref.dtype
        out = dt if dt in (mx.float32, mx.float64) + _HALF else mx.float32
        work = mx.float32 if out in _HALF else out
        return fn(x.astype(work), y.astype(work)).astype(out)

    # exponentials and logs ------------------------------------------------------------------------
    def special_expit(self, x):
        return self._sp_unary(lambda v: 1.0 / (1.0 + self.exp(-v)), x)

    def special_logit(self, x, eps=None):
        def f(v):
            if eps is not None:
                v = mx.clip(v, eps, 1.0 - eps)
            return self.log(v / (1.0 - v))
        return self._sp_unary(f, x)

    def special_exp2(self, x):
        return self._sp_unary(lambda v: self.exp(v * math.log(2.0)), x)

    def special_expm1(self, x):
        return self._sp_unary(mx.expm1, x)

    def special_log1p(self, x):
        return self._sp_unary(mx.log1p, x)

    def special_erf(self, x):
        return self._sp_unary(self.erf, x)

    def special_erfinv(self, x):
        def f(v):
            y = mx.erfinv(v)
            if v.dtype == mx.float64:  # MLX's float64 erfinv is float32-accurate: two Newton steps on erf
                for _ in range(2):
                    fin = mx.isfinite(y)
                    ys = mx.where(fin, y, mx.zeros_like(y))
                    step = (self.erf(ys) - v) / (2 / math.sqrt(math.pi) * self.exp(-ys * ys))
                    y = mx.where(fin, y - step, y)
            return y
        return self._sp_unary(f, x)

    def special_sinc(self, x):
        def f(v):
            pv = v * math.pi
            zero = v == 0
            safe = mx.where(zero, mx.ones_like(pv), pv)
            return mx.where(zero, mx.ones_like(v), self.sin(safe) / safe)
        return self._sp_unary(f, x)

    def special_spherical_bessel_j0(self, x):
        def f(v):
            small = mx.abs(v) < 0.5
            safe = mx.where(small, mx.ones_like(v), v)
            v2 = v * v  # sin(x)/x = 1 - x^2/6 + x^4/120 - x^6/5040 + x^8/362880 - ...
            series = 1.0 - v2 / 6.0 * (1.0 - v2 / 20.0 * (1.0 - v2 / 42.0 * (1.0 - v2 / 72.0 * (
                1.0 - v2 / 110.0 * (1.0 - v2 / 156.0)))))
            return mx.where(small, series, self.sin(safe) / safe)
        return self._sp_unary(f, x)

    def special_entr(self, x):
        def f(v):
            pos = v > 0
            safe = mx.where(pos, v, mx.ones_like(v))
            return mx.where(pos, -v * self.log(safe), mx.where(v == 0, mx.zeros_like(v), -mx.inf))
        return self._sp_unary(f, x)

    def special_xlogy(self, x, y):
        def f(a, b):
            return mx.where(mx.isnan(b), b, mx.where(a == 0, mx.zeros_like(a), a * self.log(b)))
        return self._sp_binary(f, x, y)

    def special_xlog1py(self, x, y):
        def f(a, b):
            return mx.where(mx.isnan(b), b, mx.where(a == 0, mx.zeros_like(a), a * mx.log1p(b)))
        return self._sp_binary(f, x, y)

    def special_round(self, x, *, decimals=0):
        if decimals == 0:
            return self.round(x)
        scale = 10.0 ** abs(decimals)  # torch: round(x * 10^d) / 10^d (mx.round's decimals lose float64 digits)
        return self.round(x * scale) / scale if decimals > 0 else self.round(x / scale) * scale

    def special_softmax(self, x, dim, *, dtype=None):
        return self.softmax(x, dim, dtype)

    def special_log_softmax(self, x, dim, *, dtype=None):
        return self.log_softmax(x, dim, dtype)

    def special_logsumexp(self, x, dim, keepdim=False):
        return self.logsumexp(x, dim, keepdim)

    # gamma family ----------------------------------------------------------------------------------
    def _lgamma(self, v):
        """log|Gamma(v)| (Lanczos for v >= 1/2, reflection below)."""
        refl = v < 0.5
        z = mx.where(refl, 1.0 - v, v) - 1.0
        acc = mx.full(v.shape, _LANCZOS[0], v.dtype)
        for i, c in enumerate(_LANCZOS[1:], 1):
            acc = acc + c / (z + i)
        t = z + 7.5
        direct = 0.5 * math.log(2 * math.pi) + (z + 0.5) * self.log(t) - t + self.log(acc)
        s = mx.abs(self.sin(math.pi * mx.where(refl, v, mx.zeros_like(v))))
        out = mx.where(refl, math.log(math.pi) - self.log(mx.where(refl, s, mx.ones_like(s))) - direct, direct)
        pole = refl & (v == mx.floor(v))
        return mx.where(pole, mx.inf, out)

    def special_gammaln(self, x):
        return self._sp_unary(self._lgamma, x)

    def _digamma(self, v):
        refl = v < 0.5
        z = mx.where(refl, 1.0 - v, v)
        acc = mx.zeros_like(z)
        for _ in range(10):  # psi(z) = psi(z + 1) - 1/z until z >= 10
            small = z < 10
            acc = acc - mx.where(small, 1.0 / z, mx.zeros_like(z))
            z = mx.where(small, z + 1.0, z)
        inv2 = 1.0 / (z * z)
        series = inv2 * (1 / 12 - inv2 * (1 / 120 - inv2 * (1 / 252 - inv2 * (1 / 240 - inv2 * (1 / 132)))))
        out = acc + self.log(z) - 0.5 / z - series
        tan = self.tan(math.pi * mx.where(refl, v, mx.full(v.shape, 0.25, v.dtype)))
        out = mx.where(refl, out - math.pi / tan, out)
        out = mx.where(refl & (v == mx.floor(v)), mx.nan, out)
        return mx.where(v == 0, -mx.inf, out)  # torch: digamma(0) = -inf, NaN at the negative integers

    def special_digamma(self, x):
        return self._sp_unary(self._digamma, x)

    special_psi = special_digamma

    def _hurwitz(self, s, q):
        """zeta(s, q) = sum_k (q + k)^-s for s > 1 (Euler-Maclaurin after the first N terms), with torch's
        (Cephes') domain: inf at s == 1 and at the non-positive integers q; NaN for s < 1 and for a
        negative q with a non-integer s; a negative non-integer q with an integer s summed directly."""
        lowest = float(mx.min(mx.stop_gradient(q)).item()) if q.size else 0.0
        n = 20 + (math.ceil(-lowest) if lowest < 0 and math.isfinite(lowest) else 0)
        odd = mx.remainder(s, 2) == 1

        def power(base, e):  # base^e for a negative base too (e an integer where that matters)
            mag = self.exp(e * self.log(mx.abs(base)))
            return mx.where((base < 0) & odd, -mag, mag)

        acc = mx.zeros(mx.broadcast_shapes(s.shape, q.shape), s.dtype)
        for k in range(n):
            acc = acc + power(q + k, -s)
        a = q + n
        la = self.log(a)
        acc = acc + self.exp((1.0 - s) * la) / (s - 1.0) + 0.5 * self.exp(-s * la)
        fac, rising = 1.0, s
        term_pow = self.exp((-s - 1.0) * la)
        for j, b in enumerate(_B2J, 1):
            fac *= (2 * j) * (2 * j - 1) if j > 1 else 2
            acc = acc + b / fac * rising * term_pow
            rising = rising * (s + 2 * j - 1) * (s + 2 * j)
            term_pow = term_pow / (a * a)
        pole = (q <= 0) & (q == mx.floor(q))
        out = mx.where(pole, mx.inf, mx.where((q <= 0) & (s != mx.floor(s)), mx.nan, acc))
        return mx.where(s == 1, mx.inf, mx.where(s < 1, mx.nan, out))

    def special_zeta(self, x, q):
        return self._sp_binary(self._hurwitz, x, q)

    def special_polygamma(self, n, x):
        if not isinstance(n, int) or n < 0:
            raise TdxRuntimeError(f"polygamma(n, x) does not support negative n, got {n}")
        if n == 0:
            return self.special_digamma(x)
        if n == 1:
            @mx.custom_function
            def trigamma(v):
                return self._trigamma(v)

            @trigamma.vjp
            def _(primals, cotangent, output):  # torch's derivative: polygamma(2, x) = -2 zeta(3, x)
                v = primals[0] if isinstance(primals, (tuple, list)) else primals
                return (cotangent * (-2.0 * self._hurwitz(mx.full(v.shape, 3.0, v.dtype), v)),)

            return self._sp_unary(trigamma, x)
        sign = -1.0 if n % 2 == 0 else 1.0
        return self._sp_unary(lambda v: sign * math.factorial(n) * self._hurwitz(mx.full(v.shape, n + 1.0, v.dtype),
                                                                                  v), x)

    def _trigamma(self, v):
        """psi'(v) as torch computes it (its values, to the last bits, are the oracle's): a reflection below
        1/2, six recurrence steps, then an asymptotic series of three terms."""
        refl = v < 0.5
        sin_pi = self.sin(math.pi * mx.where(refl, v, mx.full(v.shape, 0.5, v.dtype)))
        acc = mx.where(refl, -(math.pi * math.pi) / (sin_pi * sin_pi), mx.zeros_like(v))
        z = mx.where(refl, 1.0 - v, v)
        for _ in range(6):
            acc = acc + 1.0 / (z * z)
            z = z + 1.0
        ixx = 1.0 / (z * z)
        acc = acc + (1.0 + 1.0 / (2.0 * z) + ixx * (1.0 / 6 - ixx * (1.0 / 30 - ixx * (1.0 / 42)))) / z
        return mx.where(refl, -acc, acc)

    def special_multigammaln(self, x, p):
        if p < 1:
            raise TdxRuntimeError(f"p has to be greater than or equal to 1, got {p}")

        def f(v):
            out = mx.full(v.shape, p * (p - 1) / 4 * math.log(math.pi), v.dtype)
            for j in range(p):
                out = out + self._lgamma(v - j / 2)
            return out
        return self._sp_unary(f, x)

    # modified Bessel functions of the first kind ---------------------------------------------------
    def _bessel_i(self, v, order):
        """I_order(v) by its power series sum_k (v/2)^(2k+order) / (k! (k+order)!)."""
        big = float(mx.max(mx.abs(mx.stop_gradient(v))).item()) if v.size else 0.0
        terms = int(math.e * big / 2) + (60 if v.dtype == mx.float64 else 30)
        h2 = (v * 0.5) * (v * 0.5)
        term = mx.ones_like(v) if order == 0 else v * 0.5
        acc = term
        for k in range(1, terms):
            term = term * h2 / (k * (k + order))
            acc = acc + term
        return acc

    def special_i0(self, x):
        return self._sp_unary(lambda v: self._bessel_i(v, 0), x)

    special_modified_bessel_i0 = special_i0

    def special_i1(self, x):
        return self._sp_unary(lambda v: self._bessel_i(v, 1), x)

    special_modified_bessel_i1 = special_i1

    def special_i0e(self, x):
        return self._sp_unary(lambda v: self.exp(-mx.abs(v)) * self._bessel_i(v, 0), x)

    def special_i1e(self, x):
        return self._sp_unary(lambda v: self.exp(-mx.abs(v)) * self._bessel_i(v, 1), x)

    # orthogonal polynomials ---------------------------------------------------------------------------
    def _poly(self, x, n, start, step):
        """P_n(x) from ``P_0, P_1 = start(x)`` and ``P_{k+1} = step(k, x, P_k, P_{k-1})``; ``n`` an int or array."""
        def f(v, nn):
            if mx.issubdtype(nn.dtype, mx.floating):  # torch casts a floating degree to int64 (toward zero)
                nn = mx.where(nn < 0, mx.ceil(nn), mx.floor(nn))
            top = int(mx.max(nn).item()) if nn.size else 0
            p0, p1 = start(v)
            out = mx.where(nn == 0, p0, mx.zeros_like(v))
            out = mx.where(nn == 1, p1, out)
            for k in range(1, top):
                p0, p1 = p1, step(k, v, p1, p0)
                out = mx.where(nn == k + 1, p1, out)
            return mx.where(nn < 0, mx.zeros_like(v), out)
        return self._sp_binary(f, x, n)

    def special_chebyshev_polynomial_t(self, x, n):
        return self._poly(x, n, lambda v: (mx.ones_like(v), v), lambda k, v, p, q: 2 * v * p - q)

    def special_chebyshev_polynomial_u(self, x, n):
        return self._poly(x, n, lambda v: (mx.ones_like(v), 2 * v), lambda k, v, p, q: 2 * v * p - q)

    def special_chebyshev_polynomial_v(self, x, n):
        return self._poly(x, n, lambda v: (mx.ones_like(v), 2 * v - 1), lambda k, v, p, q: 2 * v * p - q)

    def special_chebyshev_polynomial_w(self, x, n):
        return self._poly(x, n, lambda v: (mx.ones_like(v), 2 * v + 1), lambda k, v, p, q: 2 * v * p - q)

    def special_shifted_chebyshev_polynomial_t(self, x, n):
        return self.special_chebyshev_polynomial_t(self._shifted(x), n)

    def special_shifted_chebyshev_polynomial_u(self, x, n):
        return self.special_chebyshev_polynomial_u(self._shifted(x), n)

    def special_shifted_chebyshev_polynomial_v(self, x, n):
        return self.special_chebyshev_polynomial_v(self._shifted(x), n)

    def special_shifted_chebyshev_polynomial_w(self, x, n):
        return self.special_chebyshev_polynomial_w(self._shifted(x), n)

    @staticmethod
    def _shifted(x):
        return 2 * x - 1 if isinstance(x, mx.array) and x.dtype in (mx.float32, mx.float64) else \
            2 * (x.astype(mx.float32) if isinstance(x, mx.array) else x) - 1

    def special_hermite_polynomial_h(self, x, n):
        return self._poly(x, n, lambda v: (mx.ones_like(v), 2 * v), lambda k, v, p, q: 2 * v * p - 2 * k * q)

    def special_hermite_polynomial_he(self, x, n):
        return self._poly(x, n, lambda v: (mx.ones_like(v), v), lambda k, v, p, q: v * p - k * q)

    def special_laguerre_polynomial_l(self, x, n):
        return self._poly(x, n, lambda v: (mx.ones_like(v), 1 - v),
                          lambda k, v, p, q: ((2 * k + 1 - v) * p - k * q) / (k + 1))

    def special_legendre_polynomial_p(self, x, n):
        return self._poly(x, n, lambda v: (mx.ones_like(v), v),
                          lambda k, v, p, q: ((2 * k + 1) * v * p - k * q) / (k + 1))
