"""``torch.special``'s Bessel functions on MLX: J0, J1, Y0, Y1, K0, K1, the scaled K and Airy's Ai.

Composed from MLX ops and the executor's float64-accurate ``exp``/``log``/``sin``/``cos``, so they
are differentiable by ``mx.vjp`` and float64-accurate:

- J0, J1, Y0, Y1 for ``1e-4 <= |x| < 25`` (float32: ``0.04 <= |x| < 12``) by Miller's backward recurrence
  ``J_{n-1} = (2n/x) J_n - J_{n+1}`` from an order ~40 above ``x``, normalized by
  ``J0 + 2 (J2 + J4 + ...) = 1``; Y0 and Y1 by Neumann's series over the same ``J_n``
  (``pi/2 Y0 = (log(x/2) + gamma) J0 - 2 sum (-1)^k J_2k / k`` and its derivative); above, Hankel's
  asymptotic expansion (its smallest term is ~exp(-2x)) with ``cos(x - pi/4)`` written through
  ``cos x`` and ``sin x`` so no phase is lost; below, their leading Taylor terms.
- K0, K1 (and ``exp(x) K``) for ``x <= 1`` by their power series around 0; above, the integral
  ``exp(x) K_nu(x) = int_0^inf exp(-2x sinh^2(t/2)) cosh(nu t) dt`` by the trapezoidal rule
  (49 nodes, step ``0.25 min(1, sqrt(5/x))``), which converges geometrically for this integrand.

- Ai (``airy_ai``) for ``|x| < 2`` by its Maclaurin series, for ``x >= 2`` as
  ``sqrt(x/3)/pi K_{1/3}(2/3 x^(3/2))`` (the integral above), for ``-9.2 < x <= -2`` as
  ``sqrt(z)/3 (J_{1/3} + J_{-1/3})(2/3 z^(3/2))`` with ``J`` of fractional order by Miller's
  recurrence, and below by its asymptotic expansion (float32 switches at -5.5).

Outside their domains (x < 0 for Y and K) they are NaN, at 0 -inf (Y) or inf (K), as torch's.
Each branch of a ``where`` sees only inputs it is defined on, so gradients carry no NaN from the
branch not taken. Must never import torch or the facade.
"""

from __future__ import annotations

import math

import mlx.core as mx

_GAMMA = 0.57721566490153286061
_TINY = 1e-4


def _hankel(nu, terms):
    """Hankel's coefficients a_k(nu) = prod_{j<=k} (4 nu^2 - (2j - 1)^2) / (k! 8^k), k < terms."""
    out, a = [1.0], 1.0
    for k in range(1, terms):
        a *= (4 * nu * nu - (2 * k - 1) ** 2) / (k * 8)
        out.append(a)
    return out


_A0, _A1 = _hankel(0, 26), _hankel(1, 26)


_TWO_PI = 2 * math.pi
_C1 = round(_TWO_PI * 2 ** 9) / 2 ** 9  # 2 pi in three parts whose products with n < 2^12 are exact in float32
_C2 = round((_TWO_PI - _C1) * 2 ** 21) / 2 ** 21
_C3 = _TWO_PI - _C1 - _C2


def _reduced(x):
    """``x`` minus the nearest multiple of 2 pi, exactly enough for float32 trig of arguments up to ~2.5e4."""
    if x.dtype == mx.float64:
        return x
    n = mx.round(x / _TWO_PI)
    return ((x - n * _C1) - n * _C2) - n * _C3


def _safe(mask, x, value):
    return mx.where(mask, x, mx.full(x.shape, value, x.dtype))


class MLXBesselFunctions:
    """``special_bessel_j0/j1/y0/y1``, ``special_(scaled_)modified_bessel_k0/k1`` and ``special_airy_ai`` on MLX."""

    __slots__ = ()

    def _miller(self, x):
        """(J0, J1, Y0, Y1) at ``x > 0`` by backward recurrence and Neumann's series."""
        top = float(mx.max(mx.stop_gradient(x)).item()) if x.size else 0.0
        n_start = 2 * (int(top + 40) // 2 + 1)
        limit, shrink, every = (1e100, 1e-100, 8) if x.dtype == mx.float64 else (1e15, 1e-15, 4)
        nxt, cur = mx.zeros_like(x), mx.full(x.shape, 1e-30 if x.dtype == mx.float64 else 1e-10, x.dtype)
        norm, s0, s1 = 2 * cur, mx.zeros_like(x), mx.zeros_like(x)
        j1 = mx.zeros_like(x)
        inv = 2.0 / x
        for n in range(n_start, 0, -1):
            cur, nxt = n * inv * cur - nxt, cur  # cur = J_{n-1}
            m = n - 1
            if m % 2 == 0 and m > 0:
                k = m // 2
                norm = norm + 2 * cur
                s0 = s0 + ((-1) ** k / k) * cur
            elif m % 2 == 1:
                k_up, k_down = (m + 1) // 2, (m - 1) // 2  # J_m is J_{2k-1} for k_up and J_{2k+1} for k_down
                c = (-1) ** k_up / k_up - ((-1) ** k_down / k_down if k_down >= 1 else 0.0)
                s1 = s1 + c * cur
                if m == 1:
                    j1 = cur
            if n % every == 0:
                over = mx.abs(cur) > limit
                cur, nxt, norm, s0, s1 = (mx.where(over, v * shrink, v) for v in (cur, nxt, norm, s0, s1))
        norm = norm + cur
        j0, j1, s0, s1 = cur / norm, j1 / norm, s0 / norm, s1 / norm
        lg = self.log(x * 0.5) + _GAMMA
        y0 = (2 / math.pi) * (lg * j0 - 2 * s0)
        y1 = (2 / math.pi) * (-j0 / x + lg * j1 + s1)
        return j0, j1, y0, y1

    def _hankel_form(self, x, order, second):
        """J_order (``second`` False) or Y_order by Hankel's expansion, for large x > 0."""
        coef = _A0 if order == 0 else _A1
        terms = 26 if x.dtype == mx.float64 else 14
        inv = 1.0 / x
        p, q, pw = mx.zeros_like(x), mx.zeros_like(x), mx.ones_like(x)
        for k in range(terms):
            sign = -1.0 if (k // 2) % 2 else 1.0
            if k % 2 == 0:
                p = p + sign * coef[k] * pw
            else:
                q = q + sign * coef[k] * pw
            pw = pw * inv
        r = _reduced(x)
        c, s = self.cos(r), self.sin(r)
        if order == 0:
            cw, sw = (c + s), (s - c)  # sqrt2 cos(x - pi/4), sqrt2 sin(x - pi/4)
        else:
            cw, sw = (s - c), -(s + c)  # sqrt2 cos(x - 3pi/4), sqrt2 sin(x - 3pi/4)
        amp = mx.sqrt(1.0 / (math.pi * x))  # sqrt(2/(pi x)) / sqrt2
        return amp * (p * sw + q * cw) if second else amp * (p * cw - q * sw)

    def _bessel_jy(self, v, order, second):
        far_from = 25.0 if v.dtype == mx.float64 else 12.0
        a = mx.abs(v)
        small = _TINY if v.dtype == mx.float64 else 0.04
        tiny, far = a < small, a >= far_from
        mid = ~tiny & ~far
        am = _safe(mid, a, 1.0)
        j0, j1, y0, y1 = self._miller(am)
        mid_val = (y1 if order else y0) if second else (j1 if order else j0)
        af = _safe(far, a, far_from)
        far_val = self._hankel_form(af, order, second)
        at = _safe(tiny & (a > 0), a, small)
        if second:
            lg = self.log(at * 0.5) + _GAMMA
            tiny_val = (2 / math.pi) * ((lg * (1 - at * at / 4) + at * at / 4) if order == 0 else
                                        (-1.0 / at + (lg - 0.5) * at / 2))
        else:
            tiny_val = (1 - v * v / 4) if order == 0 else (v / 2 - v * v * v / 16)
        out = mx.where(tiny, tiny_val, mx.where(far, far_val, mid_val))
        if second:
            out = mx.where(v == 0, mx.full(v.shape, -mx.inf, v.dtype), out)
            return mx.where(v < 0, mx.full(v.shape, mx.nan, v.dtype), out)
        return mx.where(v < 0, -out, out) if order == 1 else out

    def special_bessel_j0(self, x):
        return self._sp_unary(lambda v: self._bessel_jy(v, 0, False), x)

    def special_bessel_j1(self, x):
        return self._sp_unary(lambda v: self._bessel_jy(v, 1, False), x)

    def special_bessel_y0(self, x):
        return self._sp_unary(lambda v: self._bessel_jy(v, 0, True), x)

    def special_bessel_y1(self, x):
        return self._sp_unary(lambda v: self._bessel_jy(v, 1, True), x)

    # modified Bessel functions of the second kind ----------------------------------------------------
    def _k_series(self, x, order):
        """K_order(x) for 0 < x <= 1 by the power series around 0."""
        q = x * x / 4
        term, harmonic = mx.ones_like(x), 0.0
        i0, i1, s0, s1 = mx.zeros_like(x), mx.zeros_like(x), mx.zeros_like(x), mx.zeros_like(x)
        for k in range(14 if x.dtype == mx.float64 else 8):
            if k:
                term = term * q / (k * k)
                harmonic += 1.0 / k
            i0, s0 = i0 + term, s0 + harmonic * term
            i1 = i1 + term * (x / (2 * (k + 1)))
            s1 = s1 + term * ((2 * (harmonic - _GAMMA) + 1.0 / (k + 1)) / (k + 1))
        lg = self.log(x * 0.5)
        if order == 0:
            return -(lg + _GAMMA) * i0 + s0
        return 1.0 / x + lg * i1 - (x / 4) * s1

    def _k_scaled_integral(self, x, order):
        """exp(x) K_order(x) for x >= 1 by the trapezoidal rule on its cosh integral."""
        h = 0.25 * mx.sqrt(mx.minimum(5.0 / x, mx.ones_like(x)))
        acc = mx.zeros_like(x)
        for j in range(49):
            t = j * h
            e = mx.expm1(t * 0.5)
            sh = 0.5 * (e + e / (e + 1.0))  # sinh(t/2) without cancellation
            f = self.exp(-2.0 * x * sh * sh)
            if order == 1:
                f = f * (1.0 + 2.0 * sh * sh)  # cosh t
            elif order:
                f = f * 0.5 * (self.exp(order * t) + self.exp(-order * t))
            acc = acc + (0.5 if j == 0 else 1.0) * f
        return acc * h

    def _bessel_k(self, v, order, scaled):
        small = v <= 1
        vs = _safe(small & (v > 0), v, 0.5)
        ser = self._k_series(vs, order)
        ser = ser * self.exp(vs) if scaled else ser
        vl = _safe(~small, v, 2.0)
        integ = self._k_scaled_integral(vl, order)
        integ = integ if scaled else integ * self.exp(-vl)
        out = mx.where(small, ser, integ)
        out = mx.where(v == 0, mx.full(v.shape, mx.inf, v.dtype), out)
        return mx.where(v < 0, mx.full(v.shape, mx.nan, v.dtype), out)

    def special_modified_bessel_k0(self, x):
        return self._sp_unary(lambda v: self._bessel_k(v, 0, False), x)

    def special_modified_bessel_k1(self, x):
        return self._sp_unary(lambda v: self._bessel_k(v, 1, False), x)

    def special_scaled_modified_bessel_k0(self, x):
        return self._sp_unary(lambda v: self._bessel_k(v, 0, True), x)

    def special_scaled_modified_bessel_k1(self, x):
        return self._sp_unary(lambda v: self._bessel_k(v, 1, True), x)

    # Airy function ------------------------------------------------------------------------------------
    def _j_fractional(self, z, nu):
        """(J_nu(z), J_{nu+1}(z)) for 0 < nu < 1, z > 0, by Miller's recurrence normalized by
        ``(z/2)^nu = sum_k (nu + 2k) Gamma(nu + k) / k! J_{nu+2k}(z)``."""
        top = float(mx.max(mx.stop_gradient(z)).item()) if z.size else 0.0
        n_start = 2 * (int(top + 40) // 2 + 1)
        nxt, cur = mx.zeros_like(z), mx.full(z.shape, 1e-30 if z.dtype == mx.float64 else 1e-10, z.dtype)
        total = cur * ((nu + n_start) * math.gamma(nu + n_start // 2) / math.gamma(n_start // 2 + 1))
        limit, shrink, every = (1e100, 1e-100, 8) if z.dtype == mx.float64 else (1e15, 1e-15, 4)
        inv = 2.0 / z
        for n in range(n_start, 0, -1):
            cur, nxt = (nu + n) * inv * cur - nxt, cur  # cur = J_{nu+n-1}
            m = n - 1
            if m % 2 == 0:
                k = m // 2
                total = total + ((nu + m) * math.exp(math.lgamma(nu + k) - math.lgamma(k + 1))) * cur
            if n % every == 0:
                over = mx.abs(cur) > limit
                cur, nxt, total = (mx.where(over, v * shrink, v) for v in (cur, nxt, total))
        scale = self.exp(nu * self.log(0.5 * z)) / total
        return cur * scale, nxt * scale

    def _airy_ai(self, x):
        f64 = x.dtype == mx.float64
        neg_far = -9.2 if f64 else -5.5
        far, mid, pos = x <= neg_far, (x > neg_far) & (x < -2), x >= 2
        near = ~far & ~mid & ~pos
        # |x| < 2: Maclaurin series Ai = c1 f - c2 g
        xn = _safe(near, x, 0.0)
        x3 = xn * xn * xn
        f, g = mx.ones_like(xn), xn
        fs, gs = f, g
        for k in range(1, 30 if f64 else 18):
            f = f * x3 / ((3 * k - 1) * (3 * k))
            g = g * x3 / ((3 * k) * (3 * k + 1))
            fs, gs = fs + f, gs + g
        series = 0.355028053887817239260 * fs - 0.258819403792806798405 * gs
        # x >= 2: Ai = sqrt(x/3) / pi * K_{1/3}(zeta), zeta = 2/3 x^(3/2)
        xp = _safe(pos, x, 2.0)
        zp = (2.0 / 3.0) * xp * mx.sqrt(xp)
        right = mx.sqrt(xp / 3.0) / math.pi * self._k_scaled_integral(zp, 1.0 / 3.0) * self.exp(-zp)
        # -9.2 < x < -2: Ai(-z) = sqrt(z)/3 (J_{1/3}(zeta) + J_{-1/3}(zeta))
        zm = -_safe(mid, x, -4.0)
        zetam = (2.0 / 3.0) * zm * mx.sqrt(zm)
        j13, _ = self._j_fractional(zetam, 1.0 / 3.0)
        j23, j53 = self._j_fractional(zetam, 2.0 / 3.0)
        jm13 = (4.0 / 3.0) / zetam * j23 - j53
        middle = mx.sqrt(zm) / 3.0 * (j13 + jm13)
        # x <= -9.2: the asymptotic expansion in zeta
        zf = -_safe(far, x, neg_far)
        zetaf = (2.0 / 3.0) * zf * mx.sqrt(zf)
        inv = 1.0 / zetaf
        p, q, pw, u = mx.zeros_like(zf), mx.zeros_like(zf), mx.ones_like(zf), 1.0
        for k in range(16 if f64 else 8):
            if k:
                u *= (6 * k - 5) * (6 * k - 3) * (6 * k - 1) / ((2 * k - 1) * 216 * k)
            sign = -1.0 if (k // 2) % 2 else 1.0
            if k % 2 == 0:
                p = p + sign * u * pw
            else:
                q = q + sign * u * pw
            pw = pw * inv
        r = _reduced(zetaf)
        s, c = self.sin(r), self.cos(r)  # sin(zeta + pi/4) = (s + c)/sqrt2, cos(zeta + pi/4) = (c - s)/sqrt2
        left = (p * (s + c) - q * (c - s)) / (math.sqrt(2 * math.pi) * mx.sqrt(mx.sqrt(zf)))
        out = mx.where(near, series, mx.where(pos, right, mx.where(mid, middle, left)))
        return mx.where(mx.isinf(x), mx.full(x.shape, mx.nan, x.dtype), out)  # torch: Ai(+-inf) is NaN

    def special_airy_ai(self, x):
        return self._sp_unary(self._airy_ai, x)
