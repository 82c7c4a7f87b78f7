"""The samplers behind ``torch.poisson``, ``torch.binomial``, ``torch._standard_gamma`` and
``torch._sample_dirichlet`` on MLX, which has no such draws of its own.

A mixin of the MLX executor. Each sampler is an exact algorithm vectorized over the whole array:
rejection rounds redraw only where nothing was accepted yet, until every element is (so the
result has the distribution torch's has, though not torch's stream of numbers, as every MLX
draw). Gamma: Marsaglia and Tsang's method, boosted by ``U**(1/a)`` for ``a < 1``. Poisson:
Knuth's product of uniforms for rates below 10, Hörmann's transformed rejection (PTRS) above.
Binomial: counting geometric waiting times of the rarer outcome. Draws are computed in float32
(float64 for float64 input) and returned in the input's dtype. Must never import torch.
"""

from __future__ import annotations

import math

import mlx.core as mx

from ..._errors import TdxRuntimeError
from ._indexing import on_stream

_MAX_ROUNDS = 100_000


@on_stream
class MLXSamplingOps:
    """Gamma, Poisson, binomial and Dirichlet draws from MLX's keys."""

    def _keys(self, generator):
        """An endless supply of fresh keys derived from ``generator`` (None: MLX's global state)."""
        key = generator
        while True:
            if key is None:
                yield None
                continue
            key, sub = mx.random.split(key, stream=self.s)
            yield sub

    def _work_dtype(self, x):
        return mx.float64 if x.dtype == mx.float64 else mx.float32

    def _uniform_open(self, shape, dtype, key):
        """Uniform draws in (0, 1): never 0, so logs stay finite."""
        tiny = 1e-300 if dtype == mx.float64 else 1e-37
        return mx.maximum(mx.random.uniform(shape=shape, dtype=dtype, key=key, stream=self.s), tiny)

    def _gamma_ge1(self, a, keys):
        """Marsaglia-Tsang draws for shapes ``a >= 1`` (an array of the work dtype)."""
        d = a - 1.0 / 3.0
        c = 1.0 / mx.sqrt(9.0 * d)
        out = mx.zeros(a.shape, a.dtype)
        done = mx.zeros(a.shape, mx.bool_)
        for _ in range(_MAX_ROUNDS):
            x = mx.random.normal(a.shape, dtype=a.dtype, key=next(keys), stream=self.s)
            u = self._uniform_open(a.shape, a.dtype, next(keys))
            v = (1.0 + c * x) ** 3
            safe_v = mx.where(v > 0, v, mx.ones_like(v))
            ok = (v > 0) & (mx.log(u) < 0.5 * x * x + d - d * safe_v + d * mx.log(safe_v))
            take = ok & mx.logical_not(done)
            out = mx.where(take, d * safe_v, out)
            done = done | ok
            if bool(mx.all(done).item()):
                return out
        raise TdxRuntimeError("_standard_gamma: the rejection sampler did not converge")

    def _open_draws(self, x, generator):
        """Uniform draws in (0, 1) shaped like ``x`` in its work dtype (53 random bits for float64)."""
        if x.dtype == mx.float64:
            return mx.maximum(self.uniform64(x.shape, generator), 1e-300)
        return self._uniform_open(x.shape, mx.float32, generator)

    def exponential_(self, x, lambd=1.0, generator=None):
        """Exponential(lambd) draws shaped like ``x``, in its (floating) dtype."""
        self._float_only(x, "exponential_cpu")
        return (-mx.log1p(-self._open_draws(x, generator)) / lambd).astype(x.dtype, stream=self.s)

    def cauchy_(self, x, median=0.0, sigma=1.0, generator=None):
        """Cauchy(median, sigma) draws shaped like ``x``, in its (floating) dtype."""
        self._float_only(x, "cauchy_cpu")
        u = self._open_draws(x, generator)
        return (mx.tan((u - 0.5) * 3.141592653589793) * sigma + median).astype(x.dtype, stream=self.s)

    def log_normal_(self, x, mean=1.0, std=2.0, generator=None):
        """Draws whose logarithm is Normal(mean, std), shaped like ``x``, in its (floating) dtype."""
        self._float_only(x, "log_normal_cpu")
        return mx.exp(self.normal_(x, mean, std, generator), stream=self.s).astype(x.dtype, stream=self.s)

    def geometric_(self, x, p, generator=None):
        """Geometric(p) draws (trials up to the first success: 1, 2, ...) shaped like ``x``, in its dtype."""
        work = x if x.dtype in (mx.float32, mx.float64) else mx.zeros(x.shape, mx.float32)
        u = self._open_draws(work, generator)
        return mx.ceil(mx.log(u) / math.log1p(-p)).astype(x.dtype, stream=self.s)

    def standard_gamma(self, x, generator=None):
        """Gamma(x, 1) draws, x's dtype; 0 where x is 0, nan where x is negative or nan."""
        wd = self._work_dtype(x)
        a = x.astype(wd, stream=self.s)
        keys = self._keys(generator)
        boosted = mx.where(a < 1, a + 1.0, a)
        boosted = mx.where(mx.isnan(boosted) | (boosted < 1), mx.ones_like(boosted), boosted)
        g = self._gamma_ge1(boosted, keys)
        u = self._uniform_open(a.shape, wd, next(keys))
        small = a < 1
        safe_a = mx.where(small & (a > 0), a, mx.ones_like(a))
        g = mx.where(small, g * mx.power(u, 1.0 / safe_a), g)
        tiny = 1e-300 if wd == mx.float64 else 1.1754943508222875e-38
        g = mx.where(a > 0, mx.maximum(g, tiny), mx.where(a == 0, mx.zeros_like(g), mx.full(g.shape, mx.nan, wd)))
        return g.astype(x.dtype, stream=self.s)

    def sample_dirichlet(self, x, generator=None):
        """Dirichlet(x) draws over the last dim: normalized gamma draws, as torch's."""
        g = self.standard_gamma(x, generator).astype(self._work_dtype(x), stream=self.s)
        total = mx.sum(g, axis=-1, keepdims=True)
        out = g / total
        tiny = 1e-300 if out.dtype == mx.float64 else 1.1754943508222875e-38
        out = mx.clip(out, tiny, 1.0 - 1e-7 if out.dtype == mx.float32 else 1.0)
        return out.astype(x.dtype, stream=self.s)

    def poisson(self, x, generator=None):
        """Poisson(x) draws (x's dtype); torch's error for a negative rate."""
        if x.size and bool(mx.any(x < 0).item()):
            raise TdxRuntimeError("invalid Poisson rate, expected rate to be non-negative")
        wd = self._work_dtype(x)
        lam = x.astype(wd, stream=self.s)
        keys = self._keys(generator)
        small = lam < 10
        out = mx.where(small, self._poisson_small(mx.where(small, lam, mx.zeros_like(lam)), keys), 0)
        if bool(mx.any(mx.logical_not(small)).item()):
            out = mx.where(small, out, self._poisson_ptrs(mx.where(small, mx.full(lam.shape, 10.0, wd), lam), keys))
        return out.astype(x.dtype, stream=self.s)

    def _poisson_small(self, lam, keys):
        limit = mx.exp(-lam)
        prod = mx.ones(lam.shape, lam.dtype)
        count = mx.zeros(lam.shape, lam.dtype)
        for _ in range(_MAX_ROUNDS):
            prod = prod * mx.random.uniform(shape=lam.shape, dtype=lam.dtype, key=next(keys), stream=self.s)
            going = prod > limit
            if not bool(mx.any(going).item()):
                return count
            count = count + going.astype(lam.dtype)
        raise TdxRuntimeError("poisson: the sampler did not converge")

    def _poisson_ptrs(self, lam, keys):
        slam = mx.sqrt(lam)
        loglam = mx.log(lam)
        b = 0.931 + 2.53 * slam
        a = -0.059 + 0.02483 * b
        inv_alpha = 1.1239 + 1.1328 / (b - 3.4)
        vr = 0.9277 - 3.6224 / (b - 2)
        out = mx.zeros(lam.shape, lam.dtype)
        done = mx.zeros(lam.shape, mx.bool_)
        for _ in range(_MAX_ROUNDS):
            u = mx.random.uniform(shape=lam.shape, dtype=lam.dtype, key=next(keys), stream=self.s) - 0.5
            v = self._uniform_open(lam.shape, lam.dtype, next(keys))
            us = 0.5 - mx.abs(u)
            k = mx.floor((2 * a / us + b) * u + lam + 0.43)
            quick = (us >= 0.07) & (v <= vr)
            reject = (k < 0) | ((us < 0.013) & (v > us))
            safe_k = mx.maximum(k, 0)
            slow = (mx.log(v) + mx.log(inv_alpha) - mx.log(a / (us * us) + b)
                    <= -lam + safe_k * loglam - self._lgamma(safe_k + 1))
            ok = quick | (mx.logical_not(reject) & slow)
            out = mx.where(ok & mx.logical_not(done), k, out)
            done = done | ok
            if bool(mx.all(done).item()):
                return out
        raise TdxRuntimeError("poisson: the sampler did not converge")

    def binomial(self, count, prob, generator=None):
        """Binomial(count, prob) draws (prob's dtype), counting geometric waiting times."""
        wd = self._work_dtype(prob)
        n, p = mx.broadcast_arrays(count.astype(wd, stream=self.s), prob.astype(wd, stream=self.s))
        flip = p > 0.5
        q = mx.where(flip, 1.0 - p, p)
        log1mq = mx.log1p(-mx.where(q > 0, q, mx.zeros_like(q)))
        keys = self._keys(generator)
        successes = mx.zeros(p.shape, wd)
        position = mx.zeros(p.shape, wd)
        active = (q > 0) & (n > 0)
        for _ in range(_MAX_ROUNDS):
            if not bool(mx.any(active).item()):
                break
            u = self._uniform_open(p.shape, wd, next(keys))
            safe = mx.where(active, log1mq, -mx.ones_like(log1mq))
            gap = mx.floor(mx.log(u) / safe) + 1
            position = position + mx.where(active, gap, 0)
            hit = active & (position <= n)
            successes = successes + hit.astype(wd)
            active = hit
        out = mx.where(flip, n - successes, successes)
        out = mx.where(mx.isnan(p) | mx.isnan(n), mx.full(out.shape, mx.nan, wd), out)
        return out.astype(prob.dtype, stream=self.s)
