"""Random sampling on MLX with torch's argument checks: generator keys, randperm, multinomial,
bernoulli, and the ``normal_``/``uniform_`` fills.

A mixin of the MLX executor (listed in :class:`tdx.backends.mlx._executor.MLXExecutor`). A
``tdx.Generator`` keeps, per MLX executor, a two-slot list holding an ``mx.random.key``
and the seed it started from; every random call splits the key, keeps one half and draws
with the other, so a seed gives the same stream on a given executor. With no generator the
global MLX state (seeded by ``tdx.manual_seed``) is used. Streams are not torch's: values
differ from torch's for the same seed. Must never import torch.

``Generator.get_state`` on MLX gives 24 bytes, all integers little-endian:

=======  ====  =========================================================
offset   size  content
=======  ====  =========================================================
0        8     header ``b"TDXMLXK\\x01"`` (tag ``TDXMLXK``, layout version 1)
8        8     the seed (uint64)
16       4     first word of the current key (uint32)
20       4     second word of the current key (uint32)
=======  ====  =========================================================

The header lets a torch generator refuse such a state, and an MLX generator refuse a
torch one (whose size and first bytes differ).
"""

from __future__ import annotations

import os
import threading

import mlx.core as mx
import numpy as np

from ..._errors import OpDtypeError, TdxRuntimeError
from ..base import MLX_STATE_HEADER, MLX_STATE_SIZE
from ._indexing import on_stream, scalar_name
from ._memory import check_alloc, check_dims

_FLOATS = frozenset((mx.float16, mx.bfloat16, mx.float32, mx.float64))
# The one process-wide default key (torch's default generator is one per process; MLX's global
# random state is one per thread, so threads seeded alike would draw alike). Split under the lock.
_DEFAULT_KEY: list = [None]
_KEY_LOCK = threading.Lock()


def seed_default(seed: int) -> None:
    """Restart the process-wide default key from ``seed`` (``tdx.manual_seed``)."""
    with _KEY_LOCK:
        _DEFAULT_KEY[0] = mx.random.key(seed % (1 << 64))


def _default_random_end(d) -> int:
    """The exclusive end of ``random_()`` without ``to`` for tdx dtype ``d`` (torch's: 2**mantissa + 1 for a
    float, 2 for bool, the dtype's largest value + 1 for an integer)."""
    if d.is_floating_point:
        return (1 << {"float16": 11, "bfloat16": 8, "float32": 24, "float64": 53}[d.name]) + 1
    if d.name == "bool":
        return 2
    return 1 << (8 * d.itemsize - (1 if d.is_signed else 0))


@on_stream
class MLXRandomOps:
    """Random ops with torch's checks; draws come from MLX's counter-based keys."""

    def generator_state(self, seed: int) -> list:
        """A mutable list holding the key for ``seed`` (reduced to 64 bits) and that seed."""
        seed %= 1 << 64
        return [mx.random.key(seed), seed]

    def _key(self, generator):
        """``generator`` (a key), or a fresh key split off the process-wide default key: every call,
        from any thread, draws differently."""
        if generator is not None:
            return generator
        with _KEY_LOCK:
            state = _DEFAULT_KEY[0]
            if state is None:
                state = mx.random.key(int.from_bytes(os.urandom(8), "little"))
            keys = mx.random.split(state, stream=self.s)
            mx.eval(keys)  # the held key is a value, never a growing chain of splits
            _DEFAULT_KEY[0] = keys[0]
        return keys[1]

    def generator_arg(self, state: list):
        """A fresh key for one random call; the generator's state advances."""
        keys = mx.random.split(state[0], stream=self.s)
        state[0] = keys[0]
        return keys[1]

    def generator_get_state(self, state: list) -> bytes:
        """The 24 bytes of generator state ``state`` (layout in the module docstring)."""
        words = state[0].tolist()
        return (MLX_STATE_HEADER + state[1].to_bytes(8, "little")
                + b"".join(int(w).to_bytes(4, "little") for w in words))

    def generator_set_state(self, data: bytes) -> tuple:
        """The generator state that ``data`` (made by :meth:`generator_get_state`) encodes,
        and its seed: ``(state, seed)``.

        Raises:
            TdxRuntimeError: ``data`` is not 24 bytes starting with the MLX header (a torch
                generator's state, or a truncated one).
        """
        if len(data) != MLX_STATE_SIZE or not data.startswith(MLX_STATE_HEADER):
            raise TdxRuntimeError(
                f"Expected an MLX generator state of {MLX_STATE_SIZE} bytes starting with "
                f"{MLX_STATE_HEADER!r}, but found {len(data)} bytes starting with {bytes(data[:8])!r}; "
                f"a generator on {self.device} accepts only the get_state() of an MLX generator")
        seed = int.from_bytes(data[8:16], "little")
        words = [int.from_bytes(data[i:i + 4], "little") for i in (16, 20)]
        return [mx.array(words, dtype=mx.uint32), seed], seed

    def _float_only(self, x, kernel: str):
        if x.dtype not in _FLOATS:
            raise OpDtypeError(f"\"{kernel}\" not implemented for '{scalar_name(self._tdx(x))}'")

    def randperm(self, n, dtype, generator=None):
        if n < 0:
            raise TdxRuntimeError(f"n must be non-negative, got{n}")
        check_dims((n,), "randperm")  # the hard limit first: more memory would not help
        check_alloc((n,), dtype.itemsize, "randperm")
        out = mx.random.permutation(n, key=self._key(generator), stream=self.s)
        return out.astype(self._nd(dtype), stream=self.s)

    def multinomial(self, x, num_samples, replacement=False, generator=None):
        if x.dtype not in _FLOATS:
            raise TdxRuntimeError(f"multinomial only supports floating-point dtypes for input, got: "
                                  f"{scalar_name(self._tdx(x))}")
        if x.ndim not in (1, 2):
            raise TdxRuntimeError("prob_dist must be 1 or 2 dim")
        if num_samples <= 0:
            raise TdxRuntimeError("cannot sample n_sample <= 0 samples")
        n = x.shape[-1]
        if not replacement and num_samples > n:
            raise TdxRuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
        p = x.astype(mx.float32, stream=self.s) if x.dtype != mx.float64 else x
        bad = mx.any(mx.logical_or(p < 0, mx.logical_not(mx.isfinite(p, stream=self.s)), stream=self.s),
                     stream=self.s)
        if bool(bad.item()):
            raise TdxRuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
        if n == 0 or bool(mx.any(mx.sum(p, axis=-1, stream=self.s) <= 0, stream=self.s).item()):
            raise TdxRuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
        rows = p if p.ndim == 2 else mx.reshape(p, (1, n), stream=self.s)
        logits = mx.log(rows, stream=self.s)
        if replacement:
            out = mx.random.categorical(logits, axis=-1, num_samples=num_samples, key=self._key(generator), stream=self.s)
        else:  # Gumbel top-k: the first k of a stable descending order of the perturbed logits
            g = mx.random.gumbel(shape=rows.shape, dtype=rows.dtype, key=self._key(generator), stream=self.s)
            scores = logits + g
            flip = (slice(None), slice(None, None, -1))
            order = mx.argsort(-scores[flip], axis=-1, stream=self.s)
            out = ((n - 1) - order.astype(mx.int64, stream=self.s))[:, :num_samples]
        out = out.astype(mx.int64, stream=self.s)
        return out if x.ndim == 2 else mx.reshape(out, (num_samples,), stream=self.s)

    def _uniform(self, shape, generator):
        return mx.random.uniform(shape=shape, dtype=mx.float32, key=self._key(generator), stream=self.s)

    def bernoulli(self, x, p=None, generator=None):
        if p is None:
            self._float_only(x, "bernoulli_tensor_cpu_p_")
            probs = x
        else:
            probs = p
        lo_hi = mx.array(probs) if not isinstance(probs, mx.array) else probs
        if lo_hi.size and bool(mx.any(mx.logical_or(lo_hi < 0, lo_hi > 1), stream=self.s).item()):
            raise TdxRuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got false.")
        u = self._uniform(x.shape, generator)
        return mx.less(u, probs, stream=self.s).astype(x.dtype, stream=self.s)

    def bernoulli_(self, x, p=0.5, generator=None):
        return self.bernoulli(x, p, generator)

    def _complex_pair(self, draw, x, generator):
        """A complex64 array whose real and imaginary parts are two independent ``draw(shape, key)``."""
        keys = mx.random.split(self._key(generator), stream=self.s)
        re, im = draw(x.shape, keys[0]), draw(x.shape, keys[1])
        return mx.add(re.astype(mx.complex64, stream=self.s),
                      mx.multiply(im.astype(mx.complex64, stream=self.s), mx.array(1j, mx.complex64),
                                  stream=self.s), stream=self.s)

    def normal_(self, x, mean=0.0, std=1.0, generator=None):
        if x.dtype != mx.complex64:
            self._float_only(x, "normal_kernel_cpu")
        if std < 0:
            raise TdxRuntimeError(f"normal expects std >= 0.0, but found std {std}")
        if x.dtype == mx.complex64:  # as torch: each part normal with the mean and std / sqrt(2)
            scale = std / 2 ** 0.5
            return self._complex_pair(lambda shape, key: mx.random.normal(
                shape, dtype=mx.float32, loc=mean, scale=scale, key=key, stream=self.s), x, generator)
        out = mx.random.normal(x.shape, dtype=x.dtype, loc=mean, scale=std, key=self._key(generator), stream=self.s)
        return out.astype(x.dtype, stream=self.s)

    def random_(self, x, frm, to, generator=None):
        """Integers uniform in ``[frm, to)`` as ``x``'s dtype (``to`` None: the dtype's range, as
        :func:`tdx._tensor.fills` bounds it), from four 16-bit draws per element (MLX's own stream)."""
        if to is None:
            to = _default_random_end(self._tdx(x))
        bits = mx.zeros(x.shape, mx.uint64)
        for k in mx.random.split(self._key(generator), 4, stream=self.s):
            part = mx.random.randint(0, 1 << 16, x.shape, dtype=mx.uint32, key=k, stream=self.s)
            bits = mx.bitwise_or(mx.left_shift(bits, mx.array(16, mx.uint64), stream=self.s),
                                 part.astype(mx.uint64, stream=self.s), stream=self.s)
        span = mx.array(np.array(to - frm, dtype=np.uint64))
        offset = mx.remainder(bits, span, stream=self.s).astype(mx.int64, stream=self.s)
        return mx.add(offset, mx.array(frm, mx.int64), stream=self.s).astype(x.dtype, stream=self.s)

    def uniform_(self, x, low=0.0, high=1.0, generator=None):
        if x.dtype != mx.complex64:
            self._float_only(x, "check_uniform_bounds")
        if low > high:
            raise TdxRuntimeError(f"uniform_ expects to return a [from, to) range, but found from={low} > to={high}")
        if x.dtype == mx.complex64:  # as torch: each part uniform in [low, high)
            return self._complex_pair(lambda shape, key: mx.random.uniform(
                low, high, shape, dtype=mx.float32, key=key, stream=self.s), x, generator)
        if x.dtype == mx.float64:
            return low + (high - low) * self.uniform64(x.shape, generator)
        wide = mx.float32 if x.dtype in (mx.float16, mx.bfloat16) else x.dtype
        out = mx.random.uniform(low, high, x.shape, dtype=wide, key=self._key(generator), stream=self.s)
        return out.astype(x.dtype, stream=self.s)

    def rrelu_noise(self, x, lower, upper, generator=None):
        """rrelu's slopes while training: ``U(lower, upper)`` where ``x <= 0``, else 1."""
        slope = self.uniform_(x, lower, upper, generator)
        return mx.where(mx.less_equal(x, 0, stream=self.s), slope, mx.array(1, dtype=x.dtype), stream=self.s)

    def uniform64(self, shape, generator=None):
        """float64 uniform draws in [0, 1) with 53 random bits (MLX draws no float64 uniforms itself)."""
        keys = mx.random.split(self._key(generator), stream=self.s)
        hi = mx.random.randint(0, 1 << 27, shape, dtype=mx.int64, key=keys[0], stream=self.s)  # 27 bits
        lo = mx.random.randint(0, 1 << 26, shape, dtype=mx.int64, key=keys[1], stream=self.s)  # 26 bits
        return (hi.astype(mx.float64) * 67108864.0 + lo.astype(mx.float64)) / 9007199254740992.0
