"""MLX kernels for inverse hyperbolic functions and ``erfinv``, accurate in float64 too.

MLX's own ``arcsinh``/``arccosh``/``arctanh``/``erfinv`` are float32-accurate even on float64
arrays (``arccosh`` is wrong there). Float32 and narrower use MLX's; float64 is rebuilt from the
float64-accurate ``log1p``/``sqrt``/``expm1`` (and, for ``erfinv``, two Newton steps on the
float64-accurate ``erf`` of :mod:`._float64`), so values and gradients match torch's. Integer and
bool inputs give the default float dtype, as torch. Must never import torch or the facade.
"""

from __future__ import annotations

import math

import mlx.core as mx

from . import _float64 as mlx_f64
from ._indexing import on_stream

_LN2 = math.log(2.0)


@on_stream
class MLXInverseFunctionOps:
    """``asinh``, ``acosh``, ``atanh`` and ``erfinv`` on MLX arrays."""

    __slots__ = ()

    def asinh(self, x):
        x = self._float_in(x)
        if x.dtype != mx.float64:
            return mx.arcsinh(x)
        a = mx.abs(x)
        big = a > 1e150
        safe = mx.where(big, 1.0, a)
        small = mx.log1p(safe + safe * safe / (1.0 + mx.sqrt(safe * safe + 1.0)))
        out = mx.where(big, mx.log(mx.where(big, a, 1.0)) + _LN2, small)
        return mx.where(x < 0, -out, out)

    def acosh(self, x):
        x = self._float_in(x)
        if x.dtype != mx.float64:
            return mx.arccosh(x)
        big = x > 1e150
        t = mx.where(big, 1.0, x) - 1.0
        small = mx.log1p(t + mx.sqrt(t * (t + 2.0)))
        return mx.where(big, mx.log(mx.where(big, x, 2.0)) + _LN2, small)

    def atanh(self, x):
        x = self._float_in(x)
        if x.dtype != mx.float64:
            return mx.arctanh(x)
        a = mx.abs(x)
        out = 0.5 * mx.log1p(2.0 * a / (1.0 - a))
        return mx.where(x < 0, -out, out)

    def erfinv(self, x):
        x = self._float_in(x)
        if x.dtype != mx.float64:
            return mx.erfinv(x)
        guess = mx.erfinv(x.astype(mx.float32)).astype(mx.float64)
        finite = mx.isfinite(guess)
        r = mx.where(finite, guess, 0.0)
        erf = mlx_f64.functions(self.s)["erf"]
        for _ in range(2):  # Newton on erf(r) = x: each step squares the relative error
            slope = (2.0 / math.sqrt(math.pi)) * mlx_f64.exp(-(r * r), self.s)
            r = r - (erf(r) - x) / slope
        return mx.where(finite, r, guess)
