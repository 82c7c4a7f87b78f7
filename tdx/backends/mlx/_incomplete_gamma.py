"""``torch.special.gammainc`` / ``gammaincc`` on MLX: the regularized incomplete gamma functions P(a, x), Q(a, x).

Composed from MLX ops, the executor's float64-accurate ``exp``/``log`` and its Lanczos
``log Gamma`` (:mod:`._special`), so they are differentiable by ``mx.vjp`` (in ``x``, as torch's,
and in ``a`` too) and float64-accurate for moderate ``a``: for ``x < a + 1`` the series
``P = x^a e^-x / Gamma(a + 1) * sum_n x^n / ((a + 1) ... (a + n))``, for ``x >= a + 1`` Legendre's
continued fraction of ``Q`` evaluated bottom-up; the other function is ``1 -`` the computed one
(the computed one is the smaller, so nothing cancels). Term counts grow with ``sqrt(max a)``
(the series and the fraction converge within a few ``sqrt(a)`` steps). Edge values are torch's:
NaN for ``a < 0``, ``x < 0``, ``a = x = 0`` and ``a = x = inf``. Must never import torch or the facade.
"""

from __future__ import annotations

import math

import mlx.core as mx


class MLXIncompleteGamma:
    """``special_gammainc`` and ``special_gammaincc`` on MLX arrays."""

    __slots__ = ()

    def _gamma_pq(self, a, x, upper):
        a, x = mx.broadcast_arrays(a, x)
        fin = mx.isfinite(a) & mx.isfinite(x) & (a > 0) & (x > 0)
        top = float(mx.max(mx.stop_gradient(mx.where(fin, a, mx.zeros_like(a)))).item()) if a.size else 0.0
        root = math.sqrt(top)
        series = fin & (x < a + 1)
        frac = fin & ~series
        # series for P(a, x), x < a + 1
        sa, sx = mx.where(series, a, mx.ones_like(a)), mx.where(series, x, mx.full(x.shape, 0.5, x.dtype))
        term, acc = mx.ones_like(sx), mx.ones_like(sx)
        for n in range(1, 40 + int(10 * root)):
            term = term * sx / (sa + n)
            acc = acc + term
        p = self.exp(sa * self.log(sx) - sx - self._lgamma(sa + 1)) * acc
        # continued fraction for Q(a, x), x >= a + 1
        ca, cx = mx.where(frac, a, mx.ones_like(a)), mx.where(frac, x, mx.full(x.shape, 3.0, x.dtype))
        depth = 60 + int(4 * root)
        t = cx + (2 * depth + 1) - ca
        for k in range(depth - 1, -1, -1):
            t = cx + (2 * k + 1) - ca - (k + 1) * ((k + 1) - ca) / t
        q = self.exp(ca * self.log(cx) - cx - self._lgamma(ca)) / t
        out = mx.where(series, 1.0 - p, q) if upper else mx.where(series, p, 1.0 - q)
        # edges: P(0, x>0) = 1, P(a>0, 0) = 0, P(a, inf) = 1, P(inf, x) = 0; NaN elsewhere off the domain
        one, zero = (mx.zeros_like(out), mx.ones_like(out)) if upper else (mx.ones_like(out), mx.zeros_like(out))
        nan = mx.full(out.shape, mx.nan, out.dtype)
        out = mx.where((a == 0) & (x > 0), one, out)
        out = mx.where((x == 0) & (a > 0), zero, out)
        out = mx.where(mx.isinf(x) & (x > 0) & mx.isfinite(a) & (a >= 0), one, out)
        out = mx.where(mx.isinf(a) & (a > 0) & mx.isfinite(x) & (x >= 0), zero, out)
        bad = (a < 0) | (x < 0) | ((a == 0) & (x == 0)) | (mx.isinf(a) & mx.isinf(x)) | mx.isnan(a) | mx.isnan(x)
        return mx.where(bad, nan, out)

    def special_gammainc(self, a, x):
        return self._sp_binary(lambda u, v: self._gamma_pq(u, v, False), a, x)

    def special_gammaincc(self, a, x):
        return self._sp_binary(lambda u, v: self._gamma_pq(u, v, True), a, x)
