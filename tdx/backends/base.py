"""The executor base class and capability flags.

An executor runs tdx ops on one device with one framework's native arrays. The base
class holds the defaults; each executor overrides only what differs. Code and tests
decide by asking :class:`Capabilities`, never by comparing executor names.
This module must never import a framework.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .. import _dtypes as D
from .._errors import DtypeError, TdxIndexError, UnsupportedOpError, translate

MLX_STATE_HEADER = b"TDXMLXK\x01"
"""The first 8 bytes of an MLX generator state (tag ``TDXMLXK`` and layout version 1), so
that any executor can tell such a state from its own; the layout is in
:mod:`tdx.backends.mlx._random`."""
MLX_STATE_SIZE = 24
"""The length in bytes of an MLX generator state (header, seed, two key words)."""


def norm_dim(d: int, ndim: int) -> int:
    """A dim in ``[-ndim, ndim)`` made non-negative (0-d tensors accept -1 and 0), as torch.

    Raises:
        TdxIndexError: ``d`` is out of range, with torch's message.
    """
    n = max(ndim, 1)
    if not -n <= d < n:
        raise TdxIndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                            f"but got {d})")
    return d % n


@dataclass(frozen=True)
class Capabilities:
    """What an executor can do, consulted instead of its name.

    Attributes:
        dtypes: names of the tdx dtypes the executor stores.
        float64: float64 arithmetic is available.
        native_autograd: the framework records gradients itself (no tdx tape needed).
        mutable: native arrays can be written in place (views share writes).
        dlpack_zero_copy_import: importing a host DLPack capsule shares memory.
        dlpack_zero_copy_export: exporting to a host consumer shares memory.
        asynchronous: work is queued or lazy; hand-offs must synchronize.
        lazy: ops only record a graph, computed when a result is read or settled (MLX): a block's output
            (``nn.Module`` with submodules) is handed to :meth:`Executor.settle` as the block returns, so
            that the block computes while Python builds the next one.
        sdpa_kernels: names of native attention kernels the executor has.
        device_side_checks: value-dependent checks (an index out of range, a class target past the
            last class, a negative rate or weight) run inside the kernels, as device-side asserts:
            such bad input raises nothing at the call, and the process can use the device no more
            (torch on CUDA). Elsewhere these are errors raised at the call.
    """

    dtypes: frozenset
    float64: bool = True
    native_autograd: bool = False
    mutable: bool = True
    dlpack_zero_copy_import: bool = False
    dlpack_zero_copy_export: bool = True
    asynchronous: bool = False
    lazy: bool = False
    sdpa_kernels: tuple = field(default_factory=tuple)
    device_side_checks: bool = False


@dataclass(frozen=True)
class DeviceStatus:
    """One row of ``tdx.backends.available()``."""

    device: str
    available: bool
    reason: str
    provider: str

    def __str__(self) -> str:
        state = "available" if self.available else f"unavailable: {self.reason}"
        return f"{self.device:<10} {self.provider:<6} {state}"


class Provider:
    """What an entry point in the ``tdx.backends`` group names: a light, import-free
    description of a family of devices, which builds executors on demand.

    Subclasses set ``name``, ``device_types`` and ``module`` (the executor module, imported
    on first use), and implement :meth:`statuses`.
    """

    name = "?"
    device_types: tuple = ()
    module = ""
    framework = ""

    def statuses(self) -> list:
        """Every device this provider knows, available or not (may import the framework)."""
        raise NotImplementedError

    def canonical(self, dev) -> str:
        """The concrete device name a request resolves to (``cuda`` -> ``cuda:0``)."""
        return str(dev)

    def executor(self, name: str):
        """Build the executor for an available canonical device name."""
        import importlib

        return importlib.import_module(self.module).make_executor(name)

    def version(self):
        """The framework's version string, or None when it is not installed."""
        from importlib import metadata

        try:
            return metadata.version(self.framework)
        except metadata.PackageNotFoundError:
            return None


class Executor:
    """Runs ops on one device. Subclasses bind native functions; see the executor modules.

    Attributes:
        name: the provider family (``"torch"``, ``"mlx"``).
        device: the ``tdx.device`` this executor runs on.
        caps: its :class:`Capabilities`.
    """

    name = "?"
    caps = Capabilities(dtypes=frozenset())
    mutable = True  # same as caps.mutable; a plain attribute for the hot path
    taped = True  # same as not caps.native_autograd (tdx's tape records its ops); a plain attribute
    native_autocast = False  # casts ops per torch's autocast policy itself (torch); else tdx.compat.amp.autocast_state does
    update_kernels = False  # has addcmul/addcdiv/lerp on natives (torch: backends/_torch/nn.py, mlx: _elementwise.py)
    # ``linear(x, weight, bias)`` on natives with torch's checks, errors and autograd (torch's own kernel), which
    # ``nn.Linear`` and ``F.linear`` call first; None: they take ``nn_functional`` or tdx's composed path
    linear_kernel = None
    # ``addmm(input, mat1, mat2, beta=, alpha=)`` on natives with torch's checks, errors and autograd (torch's own
    # kernel, fused: transformers' Conv1D calls it in every GPT-2 layer), which ``addmm`` calls first; None: tdx's
    # composed path
    addmm_kernel = None
    # ``nansum_kernel(x, dim, keepdim, dtype)`` on natives, the framework's own nansum (its dtype coverage: torch's CUDA
    # kernel has no integer result for a float input), which ``nansum`` calls first; None: tdx's composed path
    nansum_kernel = None
    # {op name: (kernel, result tdx dtype, takes Python scalars, takes two 1-d operands)}: ops whose float32
    # operands the facade may hand to ``kernel(*natives, stream=...)`` itself, without the op reading their
    # dtypes (MLX, where a dtype read is the per-op cost: :func:`tdx.backends.mlx._elementwise.float32_kernel`);
    # None: every call goes through the op
    float32_kernels = None

    def __init__(self, device):
        self.device = device
        self._to_native = {}
        self._from_native = {}

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.device}>"

    # dtype mapping -----------------------------------------------------------------
    def _bind_dtypes(self, table: dict) -> None:
        """Fill the dtype maps from ``{tdx dtype: native dtype}``, limited to ``caps.dtypes``."""
        for d, native in table.items():
            if d.name in self.caps.dtypes:
                self._to_native[d] = native
                self._from_native[native] = d

    def native_dtype(self, d):
        """The native dtype for tdx dtype ``d``.

        Raises:
            DtypeError: the executor cannot hold ``d``.
        """
        try:
            return self._to_native[d]
        except KeyError:
            d = D.as_dtype(d)
            if d in self._to_native:
                return self._to_native[d]
            raise DtypeError(
                f"{d!r} is not supported on {self.device}; supported: "
                + ", ".join(sorted(self.caps.dtypes))) from None

    def getitem_slices(self, x, index):
        """``x[index]`` where ``index`` is a slice or a tuple of slices without a step and at most one Ellipsis
        (an executor whose ``getitem`` checks what torch checks can skip that here)."""
        return self.getitem(x, index)

    def dtype(self, x):
        """The tdx dtype of native array ``x``."""
        return self._from_native[x.dtype]

    def filled_like(self, x, kind: str):
        """A new array with native ``x``'s shape and dtype: ``kind`` is ``"zeros"``, ``"ones"`` or ``"empty"``
        (``zeros_like`` and its kin called with no dtype, device or memory format)."""
        return getattr(self, kind)(self.shape(x), self.dtype(x))

    def evaluate(self, natives) -> None:
        """Wait until ``natives`` are computed (their lazy or queued work done); eager: nothing to do."""
        synchronize = getattr(self, "synchronize", None)
        if self.caps.asynchronous and synchronize is not None:
            synchronize()

    def check_result(self, native, op: str) -> None:
        """Refuse ``native``, a result not yet computed, whose memory cannot be allocated (lazy executors,
        whose framework crashes where an evaluation's allocation fails); eager ones allocated it already."""

    def known_bounds(self, native):
        """``(lo, hi)`` that every value of integer ``native`` is known to lie in without reading it, or None
        (an eager executor reads its values at no wait: it keeps no such facts)."""
        return None

    def settle(self, native) -> None:
        """Start computing ``native``'s pending work so that the graph behind it can go (a tensor written in
        place many times holds the chain of its writes until something computes it); eager: nothing to do."""

    def native_error(self, err: BaseException):
        """The TdxError to raise for an exception the framework raised (same builtin kind)."""
        return translate(err)

    def unsupported(self, what: str):
        return UnsupportedOpError(f"{what} is not supported on {self.device} ({self.name} executor)")

    # samplers of torch.distributions ---------------------------------------------------
    def standard_gamma(self, x, generator=None):
        """Gamma(x, 1) draws (``torch._standard_gamma``)."""
        raise self.unsupported("_standard_gamma")

    def sample_dirichlet(self, x, generator=None):
        """Dirichlet(x) draws over the last dim (``torch._sample_dirichlet``)."""
        raise self.unsupported("_sample_dirichlet")

    def poisson(self, x, generator=None):
        """Poisson(x) draws (``torch.poisson``)."""
        raise self.unsupported("poisson")

    def binomial(self, count, prob, generator=None):
        """Binomial(count, prob) draws (``torch.binomial``)."""
        raise self.unsupported("binomial")

    def dirichlet_grad(self, x, alpha, total):
        """The reparameterization gradient of Beta/Dirichlet draws (``torch._dirichlet_grad``)."""
        raise self.unsupported("_dirichlet_grad")

    def div_trunc(self, a, b):
        """``div(a, b, rounding_mode="trunc")``: by default the true quotient truncated, in the operands'
        promoted dtype (executors with integer division override it: exact, and refusing a zero divisor)."""
        return self.astype(self.trunc(self.truediv(a, b)), self.dtype(self.add(a, b)))

    # complex views -----------------------------------------------------------------------
    @staticmethod
    def is_conj(x) -> bool:
        """Whether ``x`` is a lazily conjugated view (torch's conj bit); eager executors never are."""
        return False

    @staticmethod
    def resolve_conj(x):
        """``x`` with a lazy conjugation applied (eager executors: ``x`` itself)."""
        return x

    # generator states ------------------------------------------------------------------
    def generator_get_state(self, state) -> bytes:
        """The bytes of native generator state ``state``, as ``torch.Generator.get_state``.

        Raises:
            UnsupportedOpError: the executor cannot snapshot generator states.
        """
        raise self.unsupported("Generator.get_state")

    def default_generator_state(self):
        """The native state of the generator draws without ``generator=`` take here, itself (not a copy).

        Raises:
            UnsupportedOpError: the executor exposes no default generator.
        """
        raise self.unsupported("the default Generator")

    def generator_set_state(self, data: bytes) -> tuple:
        """A native generator state rebuilt from ``data`` (made by :meth:`generator_get_state`
        on an executor of the same kind), and the seed it encodes: ``(state, seed)``.

        Raises:
            UnsupportedOpError: the executor cannot restore generator states.
        """
        raise self.unsupported("Generator.set_state")

    def rrelu_noise(self, x, lower: float, upper: float, generator=None):
        """The slopes ``rrelu`` multiplies by while training, as torch's ``rrelu_with_noise`` draws them: one
        ``U(lower, upper)`` draw per element ``<= 0`` in order, 1 elsewhere.

        Raises:
            UnsupportedOpError: the executor has no such draw.
        """
        raise self.unsupported("rrelu(training=True)")

    def seed_on_creation(self, seed: int) -> None:
        """Seed the generators this executor owns alone, when it is built after ``tdx.manual_seed(seed)``
        and no executor of its family existed then. Generators it shares with another family (the MLX
        executor drawing torch's CPU stream) belong to that family and are left alone: building an
        executor never reseeds a generator that may have drawn since the seed."""
        self.manual_seed(seed)

    def default_rng_state(self):
        """A snapshot of the state random calls without ``generator=`` draw from on this device
        (what ``torch.utils.checkpoint`` and ``vmap(randomness=...)`` save and restore), comparable
        with ``==``: two snapshots are equal when no draw happened between them.

        Raises:
            UnsupportedOpError: the executor cannot snapshot its default random state.
        """
        raise self.unsupported("saving the default random state")

    def set_default_rng_state(self, state) -> None:
        """Restore a snapshot made by :meth:`default_rng_state` of this executor.

        Raises:
            UnsupportedOpError: the executor cannot restore its default random state.
        """
        raise self.unsupported("restoring the default random state")
