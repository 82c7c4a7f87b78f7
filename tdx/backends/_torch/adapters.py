"""Torch-executor ops that need an adapter, a mixin of the torch executor.

Ops whose tdx executor signature is exactly torch's are bound as they are; the others get
a small adapter (tdx dtypes to native ones, tuples instead of named tuples, generators).
In-place ops (``fill_``, ``normal_``...) write into the tensor and return it, so views
see the write. Must never import MLX.
"""

from __future__ import annotations

import torch

from ..._errors import TdxRuntimeError
from ..base import MLX_STATE_HEADER, MLX_STATE_SIZE


class TorchAdaptedOps:
    """Further torch ops: gather/scatter, sorting, scans, softmax, linear algebra, randomness."""

    fmod = staticmethod(torch.fmod)
    bmm = staticmethod(torch.bmm)
    diag = staticmethod(torch.diag)
    diagonal = staticmethod(torch.diagonal)
    trace = staticmethod(torch.trace)
    gather = staticmethod(torch.gather)
    scatter_add = staticmethod(torch.scatter_add)
    index_select = staticmethod(torch.index_select)
    masked_fill = staticmethod(torch.masked_fill)
    masked_select = staticmethod(torch.masked_select)
    nonzero = staticmethod(torch.nonzero)
    roll = staticmethod(torch.roll)
    flip = staticmethod(torch.flip)
    tile = staticmethod(torch.tile)
    narrow = staticmethod(torch.narrow)
    unbind = staticmethod(torch.unbind)
    movedim = staticmethod(torch.movedim)

    def _nd_or_none(self, dtype):
        return None if dtype is None else self.native_dtype(dtype)

    @staticmethod
    def add_alpha(a, b, alpha):
        """``a + alpha * b`` with torch's checks on ``alpha`` (``a`` may be a Python scalar)."""
        if not isinstance(a, torch.Tensor):
            return torch.add(torch.as_tensor(a, device=b.device), b, alpha=alpha)
        return torch.add(a, b, alpha=alpha)

    @staticmethod
    def sub_alpha(a, b, alpha):
        """``a - alpha * b`` with torch's checks on ``alpha``."""
        return torch.sub(a, b, alpha=alpha)

    # reductions and scans ---------------------------------------------------------------
    @staticmethod
    def logsumexp(x, dim, keepdim=False):
        return torch.logsumexp(x, dim, keepdim)

    def cumsum(self, x, dim, dtype=None):
        return torch.cumsum(x, dim, dtype=self._nd_or_none(dtype))

    def cumprod(self, x, dim, dtype=None):
        return torch.cumprod(x, dim, dtype=self._nd_or_none(dtype))

    def logcumsumexp(self, x, dim):
        return torch.logcumsumexp(x, dim)

    def norm(self, x, p="fro", dim=None, keepdim=False, dtype=None):
        return torch.norm(x, p, dim, keepdim, dtype=self._nd_or_none(dtype))

    def softmax(self, x, dim, dtype=None):
        return torch.softmax(x, dim, dtype=self._nd_or_none(dtype))

    def log_softmax(self, x, dim, dtype=None):
        return torch.log_softmax(x, dim, dtype=self._nd_or_none(dtype))

    @staticmethod
    def einsum(equation, operands):
        return torch.einsum(equation, *operands)

    # indexing and ordering ----------------------------------------------------------------
    @staticmethod
    def scatter(x, dim, index, src, reduce=None):
        if reduce is None:
            return torch.scatter(x, dim, index, src)
        return torch.scatter(x, dim, index, src, reduce=reduce)

    @staticmethod
    def topk(x, k, dim=-1, largest=True, sorted=True):  # noqa: A002 - torch's name
        if not k and not x.ndim:  # a 0-d result either way: CPU's holds the element and index 0; CUDA's kernel
            k = 1  # leaves it unwritten for k=0, and its backward scatters at that garbage index (a device assert)
        r = torch.topk(x, k, dim, largest, sorted)
        return r.values, r.indices

    @staticmethod
    def sort(x, dim=-1, descending=False, stable=False):
        r = torch.sort(x, dim=dim, descending=descending, stable=stable)
        return r.values, r.indices

    @staticmethod
    def argsort(x, dim=-1, descending=False, stable=False):
        return torch.argsort(x, dim=dim, descending=descending, stable=stable)

    @staticmethod
    def unique(x, sorted=True, return_inverse=False, return_counts=False, dim=None):  # noqa: A002
        r = torch.unique(x, sorted=sorted, return_inverse=True, return_counts=True, dim=dim)
        return r[0], r[1] if return_inverse else None, r[2] if return_counts else None

    @staticmethod
    def repeat(x, sizes):
        return x.repeat(sizes)

    @staticmethod
    def repeat_interleave(x, repeats, dim=None, output_size=None):
        return torch.repeat_interleave(x, repeats, dim, output_size=output_size)

    # in place: write into ``x`` and return it -------------------------------------------
    @staticmethod
    def fill_(x, value):
        return x.fill_(value)

    @staticmethod
    def copy_(x, src):
        return x.copy_(src)

    # randomness --------------------------------------------------------------------------
    def generator_state(self, seed: int):
        """A native generator for this device seeded with ``seed``."""
        return torch.Generator(device=self.tdev).manual_seed(seed)

    @staticmethod
    def default_generator_state():
        """torch's default CPU generator itself (what draws without ``generator=`` take on cpu)."""
        return torch.default_generator

    @staticmethod
    def generator_arg(state):
        """What one random call takes as ``generator=`` (torch's generator is its own state)."""
        return state

    @staticmethod
    def is_conj(x) -> bool:
        return x.is_conj()

    @staticmethod
    def resolve_conj(x):
        return x.resolve_conj()

    @staticmethod
    def strides(x) -> tuple:
        """torch's strides of ``x``, in elements."""
        return x.stride()

    @staticmethod
    def storage_offset(x) -> int:
        return x.storage_offset()

    @staticmethod
    def is_contiguous(x) -> bool:
        return x.is_contiguous()

    @staticmethod
    def generator_get_state(state) -> bytes:
        """The bytes of ``torch.Generator.get_state()`` for native generator ``state``."""
        return state.get_state().numpy().tobytes()

    def generator_set_state(self, data: bytes) -> tuple:
        """A fresh native generator in the state ``data`` (``torch.Generator.get_state()``
        bytes), and the seed that state started from: ``(generator, seed)``.

        Raises:
            TdxRuntimeError: ``data`` is an MLX generator's state, or torch refuses it (a
                wrong size for this device's generator), with torch's message, which names the
                size received.
        """
        if len(data) == MLX_STATE_SIZE and data.startswith(MLX_STATE_HEADER):
            raise TdxRuntimeError(f"set_state got an MLX generator's state ({len(data)} bytes starting "
                                  f"with {MLX_STATE_HEADER!r}); a generator on {self.device} accepts only "
                                  f"the get_state() of a torch generator of the same device type")
        gen = torch.Generator(device=self.tdev)
        try:
            gen.set_state(torch.frombuffer(bytearray(data), dtype=torch.uint8) if data
                          else torch.empty(0, dtype=torch.uint8))
        except RuntimeError as err:  # a wrong size: the message names the size received (CUDA's does not)
            named = str(len(data)) in str(err)
            raise TdxRuntimeError(str(err) if named else f"{err}: got a state of {len(data)} bytes") from err
        except (TypeError, ValueError) as err:
            raise self.native_error(err) from err
        return gen, gen.initial_seed()

    def randperm(self, n, dtype, generator=None):
        return torch.randperm(n, generator=generator, dtype=self.native_dtype(dtype), device=self.tdev)

    @staticmethod
    def multinomial(x, num_samples, replacement=False, generator=None):
        return torch.multinomial(x, num_samples, replacement, generator=generator)

    @staticmethod
    def bernoulli(x, p=None, generator=None):
        if p is None:
            return torch.bernoulli(x, generator=generator)
        return torch.bernoulli(x, p, generator=generator)

    @staticmethod
    def exponential_(x, lambd=1.0, generator=None):
        return x.exponential_(lambd, generator=generator)

    @staticmethod
    def log_normal_(x, mean=1.0, std=2.0, generator=None):
        return x.log_normal_(mean, std, generator=generator)

    @staticmethod
    def cauchy_(x, median=0.0, sigma=1.0, generator=None):
        return x.cauchy_(median, sigma, generator=generator)

    @staticmethod
    def geometric_(x, p, generator=None):
        return x.geometric_(p, generator=generator)

    @staticmethod
    def standard_gamma(x, generator=None):
        return torch._standard_gamma(x, generator=generator)

    @staticmethod
    def sample_dirichlet(x, generator=None):
        return torch._sample_dirichlet(x, generator=generator)

    @staticmethod
    def poisson(x, generator=None):
        return torch.poisson(x, generator=generator)

    @staticmethod
    def binomial(count, prob, generator=None):
        return torch.binomial(count, prob, generator=generator)

    @staticmethod
    def rrelu_noise(x, lower, upper, generator=None):
        noise = torch.empty_like(x, memory_format=torch.contiguous_format)
        torch.ops.aten.rrelu_with_noise(x, noise, lower, upper, True, generator)  # writes its slopes into noise
        return noise

    @staticmethod
    def dirichlet_grad(x, alpha, total):
        return torch._dirichlet_grad(x, alpha, total)

    @staticmethod
    def bernoulli_(x, p=0.5, generator=None):
        return x.bernoulli_(p, generator=generator)

    @staticmethod
    def normal_(x, mean=0.0, std=1.0, generator=None):
        return x.normal_(mean, std, generator=generator)

    @staticmethod
    def uniform_(x, low=0.0, high=1.0, generator=None):
        return x.uniform_(low, high, generator=generator)

    @staticmethod
    def random_(x, frm, to, generator=None):
        """torch's ``random_``: ``to`` None is the dtype's whole range (for int64 ``[0, 2**63)``)."""
        return x.random_(generator=generator) if frm == 0 and to is None else x.random_(frm, to, generator=generator)
