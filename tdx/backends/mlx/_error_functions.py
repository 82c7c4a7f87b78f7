"""``torch.special``'s complementary error functions on MLX: ``erfc``, ``erfcx``, ``ndtr``, ``log_ndtr``, ``ndtri``.

Composed from MLX ops and the executor's float64-accurate ``exp``/``log``/``erf``, so they are
differentiable by ``mx.vjp`` and keep float64's digits: ``erfcx(x) = exp(x^2) erfc(x)`` by the
even (Jacobi) continued fraction of ``erfc``, 40 levels evaluated bottom-up, for ``x >= 1.5``
(relative error < 1e-15 there) and ``exp(x^2) (1 - erf(x))`` below (no cancellation worse than
a factor 30); ``erfc`` and the normal CDF ``ndtr`` follow from it, ``log_ndtr`` uses ``log(erfcx)``
in the lower tail so it never underflows, and ``ndtri`` solves ``log_ndtr(x) = log(p)`` by Newton
steps from MLX's ``erfinv`` (or the tail's asymptotic form), whose gradient at the root is the
inverse function's. Each branch of a ``where`` sees only inputs it is defined on, so gradients
carry no NaN from the branch not taken. Must never import torch or the facade.
"""

from __future__ import annotations

import math

import mlx.core as mx

_SQRT_PI = math.sqrt(math.pi)
_CF_FROM = 1.5  # erfcx by its continued fraction from here up
_CF_LEVELS = 40


class MLXErrorFunctions:
    """``special_erfc``, ``special_erfcx``, ``special_ndtr``, ``special_log_ndtr``, ``special_ndtri`` on MLX arrays."""

    __slots__ = ()

    def _exp_neg_sq(self, x, scale=1.0):
        """exp(-scale x^2) without the rounding of ``x^2``: x = hi + lo with hi's square exact."""
        split = 4096.0 if x.dtype != mx.float64 else 67108864.0  # half the mantissa's bits
        hi = mx.round(x * split) / split
        lo = x - hi
        return self.exp(-scale * hi * hi) * self.exp(-scale * (2 * hi * lo + lo * lo))

    def _erfcx_pos(self, x):
        """erfcx(x) for x >= 0: the continued fraction from 1.5 (float32: 1) up, exp(x^2)(1 - erf(x)) below."""
        start = _CF_FROM if x.dtype == mx.float64 else 1.0
        far = x >= start
        xf = mx.where(far, x, mx.full(x.shape, start, x.dtype))
        z = 2 * xf * xf
        t = z + (4 * _CF_LEVELS + 1)
        for k in range(_CF_LEVELS - 1, -1, -1):
            t = z + (4 * k + 1) - ((2 * k + 1) * (2 * k + 2)) / t
        cf = 2 * xf / (_SQRT_PI * t)
        xn = mx.where(far, mx.zeros_like(x), x)
        near = self.exp(xn * xn) * (1.0 - self.erf(xn))
        return mx.where(far, cf, near)

    def _erfcx(self, v):
        """erfcx on all reals: ``2 exp(x^2) - erfcx(-x)`` for x < 0 (overflowing to inf, as torch's)."""
        neg = v < 0
        pos = self._erfcx_pos(mx.abs(v))
        vn = mx.where(neg & (v > -26.7), v, mx.zeros_like(v))  # exp(26.7^2) overflows float64
        reflected = mx.where(v > -26.7, 2 * self.exp(vn * vn) - pos, mx.full(v.shape, mx.inf, v.dtype))
        return mx.where(neg, reflected, pos)

    def _erfc(self, v, halved=False):
        """erfc(x), or erfc(x / sqrt 2) when ``halved``: ``exp(-x^2) erfcx(x)`` in the tail, ``1 - erf(x)`` below."""
        scale = 0.5 if halved else 1.0
        y = v / math.sqrt(2) if halved else v
        start = _CF_FROM if v.dtype == mx.float64 else 1.0
        far = y >= start
        vf = mx.where(far, v, mx.full(v.shape, start / math.sqrt(scale), v.dtype))
        tail = self._exp_neg_sq(vf, scale) * self._erfcx_pos(vf * math.sqrt(scale))
        yn = mx.where(far, mx.zeros_like(y), y)
        return mx.where(far, tail, 1.0 - self.erf(yn))

    def _log1p(self, y):
        """log(1 + y) to the dtype's precision from an accurate log (Goldberg's correction)."""
        u = 1.0 + y
        small = u == 1.0
        us = mx.where(small, mx.full(y.shape, 2.0, y.dtype), u)
        return mx.where(small, y, self.log(us) * y / (us - 1.0))

    def _log_ndtr(self, v):
        """log Phi(x): ``log(erfcx(-x/sqrt2)/2) - x^2/2`` for x < -1, ``log1p(-erfc(x/sqrt2)/2)`` above."""
        low = v < -1
        vl = mx.where(low, v, mx.full(v.shape, -1.0, v.dtype))
        lower = self.log(0.5 * self._erfcx_pos(-vl / math.sqrt(2))) - 0.5 * vl * vl
        vh = mx.where(low, mx.zeros_like(v), v)
        upper = self._log1p(-0.5 * self._erfc(vh, halved=True))
        return mx.where(low, lower, upper)

    def _ndtri(self, p):
        """Phi^-1(p): Newton on log Phi in the lower tail, mirrored for p > 1/2 (``1 - p`` is exact there)."""
        upper = p > 0.5
        q = mx.where(upper, 1.0 - p, p)
        inside = (q > 0) & (q <= 0.5)
        qs = mx.where(inside, q, mx.full(q.shape, 0.25, q.dtype))
        central = math.sqrt(2) * mx.erfinv(mx.clip(2 * qs - 1, -1 + 1e-7, 0.0).astype(mx.float32)).astype(q.dtype)
        lq = self.log(qs)
        r2 = -2 * lq  # the tail: x ~ -sqrt(r2 - log(r2) - log(2 pi)) as q -> 0
        tail = -mx.sqrt(mx.maximum(r2 - self.log(mx.maximum(r2, mx.ones_like(r2))) - math.log(2 * math.pi),
                                   mx.zeros_like(r2)))
        x = mx.stop_gradient(mx.where(qs < 1e-5, tail, central))  # Newton's fixed point carries the gradient
        for _ in range(5 if q.dtype == mx.float64 else 3):
            ratio = math.sqrt(math.pi / 2) * self._erfcx_pos(mx.maximum(-x, mx.zeros_like(x)) / math.sqrt(2))
            ratio = mx.where(x > 0, math.sqrt(2 * math.pi) * self.exp(0.5 * x * x) * (
                1.0 - 0.5 * self._erfc(mx.maximum(x, mx.zeros_like(x)), halved=True)), ratio)  # Phi / phi
            x = x - (self._log_ndtr(x) - lq) * ratio
        centre = mx.abs(p - 0.5) < 0.3  # p - 1/2 is exact there: Newton on erf keeps x's relative digits near 0
        d = mx.where(centre, p - 0.5, mx.zeros_like(p))
        xc = mx.where(centre, mx.where(upper, -x, x), mx.zeros_like(x))
        for _ in range(2):
            xc = xc - (0.5 * self.erf(xc / math.sqrt(2)) - d) * math.sqrt(2 * math.pi) * self.exp(0.5 * xc * xc)
        x = mx.where(centre, mx.where(upper, -xc, xc), x)
        x = mx.where(q == 0, mx.full(q.shape, -mx.inf, q.dtype), x)
        x = mx.where(inside | (q == 0), x, mx.full(q.shape, mx.nan, q.dtype))
        return mx.where(upper, -x, x)

    def special_erfc(self, x):
        return self._sp_unary(self._erfc, x)

    def special_erfcx(self, x):
        return self._sp_unary(self._erfcx, x)

    def special_ndtr(self, x):
        return self._sp_unary(lambda v: 0.5 * self._erfc(-v, halved=True), x)

    def special_log_ndtr(self, x):
        return self._sp_unary(self._log_ndtr, x)

    def special_ndtri(self, x):
        return self._sp_unary(self._ndtri, x)
