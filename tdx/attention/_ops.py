"""The few native array ops tdx's own attention kernels are written over, per framework.

The math reference and the chunked kernel are written once against :class:`Ops`; each
executor family supplies an implementation over its native arrays (torch tensors, MLX
arrays on the executor's stream). Frameworks are imported when an adapter is built, never
when this module is imported. This module holds no attention logic.
"""

from __future__ import annotations

__all__ = ["ops_for", "Ops"]

_cache: dict = {}


def ops_for(ex):
    """The :class:`Ops` adapter of executor ``ex``, or None when its family has none."""
    ops = _cache.get(ex)
    if ops is None:
        cls = _FAMILIES.get(ex.name)
        if cls is None:
            return None
        ops = _cache[ex] = cls(ex)
    return ops


class Ops:
    """Native ops of one executor. Arrays in, arrays out; ``axis`` arguments are ints.

    Attributes:
        ex: the executor.
        f32: the native float32 dtype.
    """

    lazy = False  # whether results are computed only when evaluated

    def __init__(self, ex):
        self.ex = ex

    def compute_dtype(self, x):
        """The dtype softmax statistics are kept in for inputs like ``x`` (float32, or float64)."""
        return x.dtype if x.dtype == self.f64 else self.f32

    def eval(self, *xs) -> None:
        """Force computation of lazy arrays (no-op for eager frameworks)."""


class TorchOps(Ops):
    """torch tensors on the executor's device."""

    def __init__(self, ex):
        super().__init__(ex)
        import torch

        self.t = torch
        self.f32, self.f64, self.bool_ = torch.float32, torch.float64, torch.bool
        self.dev = ex.tdev

    def shape(self, x):
        return tuple(x.shape)

    def astype(self, x, dtype):
        return x if x.dtype == dtype else x.to(dtype)

    def reshape(self, x, shape):
        return x.reshape(shape)

    def expand(self, x, shape):
        return x.expand(shape)

    def contiguous(self, x):
        return x.contiguous()

    def repeat_interleave(self, x, n, axis):
        return x.repeat_interleave(n, dim=axis)

    def matmul(self, a, b):
        return self.t.matmul(a, b)

    def mT(self, x):  # noqa: N802 - torch's name
        return x.transpose(-2, -1)

    def mul(self, a, b):
        return a * b

    def add(self, a, b):
        return a + b

    def sub(self, a, b):
        return a - b

    def div(self, a, b):
        return a / b

    def ge(self, a, b):
        return a >= b

    def gt(self, a, b):
        return a > b

    def exp(self, x):
        return self.t.exp(x)

    def log(self, x):
        return self.t.log(x)

    def amax(self, x, axis, keepdims=True):
        return self.t.amax(x, dim=axis, keepdim=keepdims)

    def sum(self, x, axis, keepdims=True):
        return self.t.sum(x, dim=axis, keepdim=keepdims)

    def any(self, x, axis, keepdims=True):
        return self.t.any(x, dim=axis, keepdim=keepdims)

    def where(self, c, a, b):
        return self.t.where(c, a, b)

    def maximum(self, a, b):
        return self.t.maximum(a, b)

    def isfinite(self, x):
        return self.t.isfinite(x)

    def logical_not(self, x):
        return self.t.logical_not(x)

    def scalar(self, value, dtype):
        return self.t.tensor(value, dtype=dtype, device=self.dev)

    def zeros(self, shape, dtype):
        return self.t.zeros(shape, dtype=dtype, device=self.dev)

    def full(self, shape, value, dtype):
        return self.t.full(shape, value, dtype=dtype, device=self.dev)

    def arange(self, start, stop):
        return self.t.arange(start, stop, device=self.dev)

    def cat(self, xs, axis):
        return self.t.cat(xs, dim=axis)

    def draw_seed(self) -> int:
        """A seed drawn from the executor's global generator (so ``manual_seed`` fixes it)."""
        return int(self.t.randint(0, 2 ** 62, (), device="cpu"))

    def generator_key(self) -> str:
        """The generator this executor's draws come from: torch's own on its device."""
        return f"torch:{self.dev}"

    def can_draw_noise(self) -> bool:
        """Whether :meth:`noise` draws torch's attention dropout (on CUDA and MPS torch fuses it)."""
        return self.dev.type == "cpu"

    def noise(self, shape, p, dtype):
        """torch's math-kernel dropout noise: ``bernoulli_(1 - p)`` then ``div_(1 - p)``, on the generator."""
        return self.t.empty(shape, dtype=dtype, device=self.dev).bernoulli_(1 - p).div_(1 - p)

    def keep_mask(self, shape, p, seed):
        """Bernoulli(1 - p) keep-mask of ``shape``, a pure function of ``seed``."""
        g = self.t.Generator(device=self.dev)
        g.manual_seed(seed)
        return self.t.rand(shape, generator=g, device=self.dev) >= p


class MLXOps(Ops):
    """MLX arrays on the executor's stream."""

    lazy = True

    def __init__(self, ex):
        super().__init__(ex)
        import mlx.core as mx

        self.mx = mx
        self.s = ex.s
        self.f32, self.f64, self.bool_ = mx.float32, mx.float64, mx.bool_

    def shape(self, x):
        return tuple(x.shape)

    def astype(self, x, dtype):
        return x if x.dtype == dtype else x.astype(dtype, stream=self.s)

    def reshape(self, x, shape):
        return self.mx.reshape(x, shape, stream=self.s)

    def expand(self, x, shape):
        return self.mx.broadcast_to(x, shape, stream=self.s)

    def contiguous(self, x):
        return self.mx.contiguous(x, stream=self.s)

    def repeat_interleave(self, x, n, axis):
        return self.mx.repeat(x, n, axis=axis, stream=self.s)

    def matmul(self, a, b):
        return self.mx.matmul(a, b, stream=self.s)

    def mT(self, x):  # noqa: N802 - torch's name
        return self.mx.swapaxes(x, -1, -2, stream=self.s)

    def mul(self, a, b):
        return self.mx.multiply(a, b, stream=self.s)

    def add(self, a, b):
        return self.mx.add(a, b, stream=self.s)

    def sub(self, a, b):
        return self.mx.subtract(a, b, stream=self.s)

    def div(self, a, b):
        return self.mx.divide(a, b, stream=self.s)

    def ge(self, a, b):
        return self.mx.greater_equal(a, b, stream=self.s)

    def gt(self, a, b):
        return self.mx.greater(a, b, stream=self.s)

    def exp(self, x):
        # MLX's own float64 exp is float32-accurate on CPU: the executor's float64-accurate one
        from ..backends.mlx import _float64

        return _float64.exp(x, self.s)

    def log(self, x):
        return self.mx.log(x, stream=self.s)

    def amax(self, x, axis, keepdims=True):
        return self.mx.max(x, axis=axis, keepdims=keepdims, stream=self.s)

    def sum(self, x, axis, keepdims=True):
        return self.mx.sum(x, axis=axis, keepdims=keepdims, stream=self.s)

    def any(self, x, axis, keepdims=True):
        return self.mx.any(x, axis=axis, keepdims=keepdims, stream=self.s)

    def where(self, c, a, b):
        return self.mx.where(c, a, b, stream=self.s)

    def maximum(self, a, b):
        return self.mx.maximum(a, b, stream=self.s)

    def isfinite(self, x):
        return self.mx.isfinite(x, stream=self.s)

    def logical_not(self, x):
        return self.mx.logical_not(x, stream=self.s)

    def scalar(self, value, dtype):
        return self.mx.array(value, dtype=dtype)

    def zeros(self, shape, dtype):
        return self.mx.zeros(shape, dtype=dtype, stream=self.s)

    def full(self, shape, value, dtype):
        return self.mx.full(shape, value, dtype=dtype, stream=self.s)

    def arange(self, start, stop):
        return self.mx.arange(start, stop, stream=self.s)

    def cat(self, xs, axis):
        return self.mx.concatenate(xs, axis=axis, stream=self.s)

    def eval(self, *xs) -> None:
        self.mx.eval(*xs)

    def draw_seed(self) -> int:
        """A seed drawn from the executor's process-wide default key (so ``manual_seed`` fixes it)."""
        key = self.ex._key(None)
        return int(self.mx.random.randint(0, 2 ** 31 - 1, (), key=key, stream=self.s).item())

    def generator_key(self):
        """``"torch:cpu"`` while the torch random stream draws MLX's numbers, else None (MLX's own keys)."""
        from ..backends.mlx._torch_stream import in_force

        return "torch:cpu" if in_force() else None

    def can_draw_noise(self) -> bool:
        """Whether :meth:`noise` draws torch's attention dropout (always, through the executor's draws)."""
        return True

    def noise(self, shape, p, dtype):
        """torch's math-kernel dropout noise, drawn by the executor's ``bernoulli_`` (torch's CPU generator
        under the torch stream: ``bernoulli_(1 - p)`` of an array of ``shape``), then divided by ``1 - p``."""
        keep = self.ex.bernoulli_(self.mx.zeros(shape, dtype=dtype), 1 - p, None)
        return self.mx.divide(keep, self.mx.array(1 - p, dtype=dtype), stream=self.s)

    def keep_mask(self, shape, p, seed):
        """Bernoulli(1 - p) keep-mask of ``shape``, a pure function of ``seed``."""
        key = self.mx.random.key(seed)
        return self.mx.random.uniform(shape=shape, key=key, stream=self.s) >= p


_FAMILIES = {"torch": TorchOps, "mlx": MLXOps}
