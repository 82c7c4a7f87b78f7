"""The attention kernels as data: what each needs (rules with their reasons), what it costs,
and the choice among those enabled.

Every kernel declares a tuple of :class:`Rule` objects; a rule that fails gives the reason the
kernel was refused (shown by ``tdx.attention.explain`` and ``can_use_*(params, debug=True)``).
Rules read the executor's :class:`~tdx.backends.base.Capabilities` (``sdpa_kernels``,
``dlpack_zero_copy_*``, ``native_autograd``), never executor names. Among the enabled kernels
whose rules pass, the automatic choice takes the lowest expected time from :data:`RATES`,
throughputs measured per device class (``bench/sdpa.py``); an explicit priority
(``sdpa_kernel(..., set_priority=True)`` or the config's ``[attention] priority``) replaces the
cost order. This module must never import a framework at module level.
"""

from __future__ import annotations

import sys
import warnings

from . import _state
from ._errors import NoKernelError
from ._state import SDPBackend

__all__ = ["Rule", "Kernel", "KERNELS", "evaluate", "choose", "estimate", "device_class", "direct"]

_B = SDPBackend
FUSED = (_B.FLASH_ATTENTION, _B.EFFICIENT_ATTENTION, _B.CUDNN_ATTENTION, _B.MLX_FUSED)


class Rule:
    """One constraint of a kernel.

    Args:
        check: ``check(params) -> bool``, True when the kernel may run the inputs.
        why: ``why(params) -> str``, the reason shown when ``check`` fails.
    """

    __slots__ = ("check", "why")

    def __init__(self, check, why):
        self.check, self.why = check, why


class Kernel:
    """One attention kernel.

    Args:
        backend: its :class:`SDPBackend`.
        rules: the :class:`Rule` objects that must all pass.
        run: ``run(params, backend) -> native`` canonical ``(B, Hq, Tq, Ev)`` result.
    """

    __slots__ = ("backend", "rules", "run")

    def __init__(self, backend, rules, run):
        self.backend, self.rules, self.run = backend, tuple(rules), run

    def refusal(self, p):
        """None if the kernel can run ``p``, else the reason it cannot."""
        for rule in self.rules:
            if not rule.check(p):
                return rule.why(p)
        return None


def device_class(ex) -> str:
    """``"cpu"``, ``"cuda"``, ``"mps"``, ``"mlx:cpu"``, ``"mlx:gpu"``: the key of :data:`RATES`."""
    dev = ex.device
    return f"{dev.type}:{dev.kind}" if dev.kind else dev.type


# --- rules --------------------------------------------------------------------------------

def _has(name):
    return Rule(lambda p: name in p.ex.caps.sdpa_kernels,
                lambda p: f"{p.ex.device} has no native '{name}' kernel (it has: "
                          f"{', '.join(p.ex.caps.sdpa_kernels) or 'none'})")


def _on_cpu(p) -> bool:
    return p.ex.device.type == "cpu"


def _cuda(p) -> bool:
    return p.ex.device.type == "cuda"


_HAS_OPS = Rule(lambda p: p.ops is not None,
                lambda p: f"tdx has no native-op adapter for the executor of {p.ex.device}")
_NO_DROPOUT = Rule(lambda p: p.dropout_p == 0,
                   lambda p: f"it has no dropout (dropout_p={p.dropout_p}); use dropout_p=0 or another kernel")
_NONEMPTY = Rule(lambda p: p.Tq > 0 and p.Tk > 0,
                 lambda p: f"it needs non-empty sequences (Tq={p.Tq}, Tk={p.Tk})")
_NO_MASK_GRAD = Rule(lambda p: not p.mask_requires_grad,
                     lambda p: "it computes no gradient for attn_mask, which requires grad")
# torch's CPU flash kernel (mirrors torch's own CPU checks)
_CPU_FLASH = (
    Rule(lambda p: not _on_cpu(p) or p.dropout_p == 0,
         lambda p: f"flash attention on cpu has no dropout (dropout_p={p.dropout_p})"),
    Rule(lambda p: not _on_cpu(p) or p.E == p.Ev,
         lambda p: f"flash attention on cpu needs the same head dim for query/key and value "
                   f"(E={p.E}, Ev={p.Ev})"),
    Rule(lambda p: not _on_cpu(p) or (p.Tq > 0 and p.Tk > 0),
         lambda p: f"flash attention on cpu needs non-empty sequences (Tq={p.Tq}, Tk={p.Tk})"),
    Rule(lambda p: not _on_cpu(p) or not p.mask_requires_grad,
         lambda p: "flash attention on cpu computes no gradient for attn_mask, which requires grad"),
)


def _draws_torchs_mask(backend):
    """With dropout whose draws must be torch's (:mod:`._dropout`): a native kernel only where it is the
    one torch itself runs (other kernels draw other numbers), a kernel of tdx's own only where the
    executor can draw torch's noise (torch fuses it on CUDA and MPS)."""
    name = _NATIVE_NAMES.get(backend)

    def native(p) -> bool:
        return name is not None and name in p.ex.caps.sdpa_kernels

    def check(p):
        from . import _dropout

        if not _dropout.exact(p):
            return True
        if native(p):
            from . import _torch

            return _torch.own_choice(p) is backend
        return p.ops.can_draw_noise()

    def why(p):
        if native(p):
            from . import _torch

            return (f"with dropout_p={p.dropout_p} torch runs {_torch.own_choice(p).name} on {p.ex.device}, and "
                    "only the kernel torch runs draws torch's dropout mask")
        return (f"it cannot draw torch's dropout mask on {p.ex.device} (torch draws it inside its fused "
                f"kernels there; dropout_p={p.dropout_p})")

    return Rule(check, why)


def _torch_says(backend):
    """On CUDA, torch's own ``can_use_*`` decides (asked quietly: see :func:`._torch.cuda_can_use`)."""
    def check(p):
        if not _cuda(p):
            return True
        from . import _torch

        return _torch.cuda_can_use(backend, p)[0]

    def why(p):
        from . import _torch

        return _torch.cuda_can_use(backend, p)[1]

    return Rule(check, why)


_MLX_FUSED = (
    _NO_DROPOUT,
    _NONEMPTY,
    Rule(lambda p: p.mask_kind != "float" or p.mask_dtype is p.dtype,
         lambda p: f"it takes an additive mask only in the query's dtype ({p.dtype.name}), got "
                   f"{p.mask_dtype.name}"),
    _NO_MASK_GRAD,
)


def _peer_ok(p):
    from . import _bridge

    return _bridge.refusal(p) is None


def _peer_why(p):
    from . import _bridge

    return _bridge.refusal(p)


# --- run functions (frameworks load on first use) ------------------------------------------

# native kernel (a name in Capabilities.sdpa_kernels) -> the tdx module that runs it; only the
# executors that declare the name reach it (torch's kernels on torch devices, MLX's on MLX devices)
_NATIVE = {_B.FLASH_ATTENTION: "_torch", _B.EFFICIENT_ATTENTION: "_torch", _B.CUDNN_ATTENTION: "_torch",
           _B.MATH: "_torch", _B.MLX_FUSED: "_mlx"}


def _run_native(p, backend):
    return _native_module(backend).run(p, backend)


def _native_module(backend):
    module = _native_modules.get(backend)
    if module is None:
        import importlib

        module = _native_modules[backend] = importlib.import_module(f"{__package__}.{_NATIVE[backend]}")
    return module


def direct(p, backend):
    """``backend``'s run on calls planned as ``p`` as a function ``(q, k, v) -> native result`` of the input
    natives alone, where its module offers one (a native kernel taking the inputs as they are), else None
    (the math kernel may warn, and its module may be another framework's than the executor's)."""
    if backend is _B.MATH or backend not in _NATIVE or "direct" not in (module := _native_module(backend)).__dict__:
        return None
    return module.direct(p, backend)


_native_modules: dict = {}  # backend -> its run module, imported on first use
# backend -> its name in Capabilities.sdpa_kernels
_NATIVE_NAMES = {_B.FLASH_ATTENTION: "flash", _B.EFFICIENT_ATTENTION: "efficient", _B.CUDNN_ATTENTION: "cudnn",
                 _B.MATH: "math"}


def _run_math(p, backend):
    if "math" in p.ex.caps.sdpa_kernels:
        return _run_native(p, backend)
    from . import _math

    return _math.run(p)


def _run_chunked(p, backend):
    from . import _chunked

    return _chunked.run(p)


def _run_bridge(p, backend):
    from . import _bridge

    return _bridge.run(p)


KERNELS = {
    _B.FLASH_ATTENTION: Kernel(_B.FLASH_ATTENTION, (_has("flash"), *_CPU_FLASH, _torch_says(_B.FLASH_ATTENTION),
                                                    _draws_torchs_mask(_B.FLASH_ATTENTION)), _run_native),
    _B.EFFICIENT_ATTENTION: Kernel(_B.EFFICIENT_ATTENTION,
                                   (_has("efficient"), _torch_says(_B.EFFICIENT_ATTENTION),
                                    _draws_torchs_mask(_B.EFFICIENT_ATTENTION)), _run_native),
    _B.CUDNN_ATTENTION: Kernel(_B.CUDNN_ATTENTION, (_has("cudnn"), _torch_says(_B.CUDNN_ATTENTION),
                                                    _draws_torchs_mask(_B.CUDNN_ATTENTION)), _run_native),
    _B.MATH: Kernel(_B.MATH, (Rule(lambda p: "math" in p.ex.caps.sdpa_kernels or p.ops is not None,
                                   lambda p: f"{p.ex.device} has neither a native math kernel nor an op "
                                             "adapter"), _draws_torchs_mask(_B.MATH)), _run_math),
    _B.MLX_FUSED: Kernel(_B.MLX_FUSED, (_has("mlx_fused"), *_MLX_FUSED), _run_native),
    _B.CHUNKED: Kernel(_B.CHUNKED, (_HAS_OPS, _NO_MASK_GRAD, _draws_torchs_mask(_B.CHUNKED)), _run_chunked),
    _B.BRIDGE: Kernel(_B.BRIDGE, (Rule(_peer_ok, _peer_why),), _run_bridge),
    _B.OVERRIDEABLE: Kernel(_B.OVERRIDEABLE, (Rule(lambda p: False, lambda p: "tdx has no overrideable "
                                                   "(out-of-tree device) attention kernel"),), None),
}


# --- cost model ----------------------------------------------------------------------------

class Rate:
    """How fast one kernel runs on one device class.

    Args:
        gflops: sustained GFLOP/s at large sizes.
        fixed: seconds per call regardless of size.
        skip: side of the causal blocks the kernel skips (0: it computes every score).
        materializes: whether it holds the full ``Tq x Tk`` scores in memory.
    """

    __slots__ = ("gflops", "fixed", "skip", "materializes")

    def __init__(self, gflops, fixed, skip=0, materializes=False):
        self.gflops, self.fixed, self.skip, self.materializes = gflops, fixed, skip, materializes


_CHUNKED_SKIP = -1  # the chunked kernel skips blocks of its own block size
# Device class -> backend -> Rate. The cpu and mlx:cpu rows are measured with bench/sdpa.py on a
# 2-core x86-64 (torch 2.13 CPU, mlx 0.32.4 CPU, B=1, H=8, L=256..8192); the GPU rows order the
# kernels as torch's default CUDA priority does (flash, efficient, math, cudnn) and put MLX's fused
# Metal kernel first on mlx:gpu.
RATES = {
    "cpu": {_B.FLASH_ATTENTION: Rate(90.0, 2e-5, 64), _B.MATH: Rate(25.0, 5e-5, 0, True),
            _B.CHUNKED: Rate(20.0, 3e-4, _CHUNKED_SKIP)},
    "mlx:cpu": {_B.MLX_FUSED: Rate(5.0, 5e-5, 0, True), _B.MATH: Rate(4.7, 2e-4, 0, True),
                _B.CHUNKED: Rate(4.8, 1e-3, _CHUNKED_SKIP)},
    "cuda": {_B.FLASH_ATTENTION: Rate(300e3, 2e-5, 128), _B.EFFICIENT_ATTENTION: Rate(200e3, 2e-5, 64),
             _B.CUDNN_ATTENTION: Rate(150e3, 3e-5, 128), _B.MATH: Rate(40e3, 5e-5, 0, True),
             _B.CHUNKED: Rate(30e3, 5e-4, _CHUNKED_SKIP)},
    "mps": {_B.MATH: Rate(3e3, 5e-5, 0, True), _B.CHUNKED: Rate(2e3, 5e-4, _CHUNKED_SKIP)},
    "mlx:gpu": {_B.MLX_FUSED: Rate(8e3, 3e-5, 0), _B.MATH: Rate(3e3, 5e-5, 0, True),
                _B.CHUNKED: Rate(2e3, 5e-4, _CHUNKED_SKIP)},
}
_DEFAULT_RATE = Rate(1.0, 1e-3, 0, True)
# bytes per second of the result's copy back from a bridge's peer (torch -> MLX copies on CPU)
BRIDGE_COPY_BPS = 2.0e9
BRIDGE_OVERHEAD = 1e-4
# On a lazy executor (MLX) the bridge forces an evaluation of the inputs' pending graph: a fixed cost
# per call; in training that evaluation also pins the forward's intermediates until the backward (about
# 290 MB more at the GPT step's config M for no time gained), so there the bridge is left to an explicit
# sdpa_kernel choice and the automatic choice takes the executor's own kernel.
BRIDGE_FORCED_EVAL = 5e-4
BRIDGE_TRAINING_PENALTY = 1e6
# a kernel holding the full scores is priced out of the automatic choice above this many bytes
MATERIALIZE_LIMIT = None  # None: half the physical memory


def _memory_limit() -> float:
    global MATERIALIZE_LIMIT
    if MATERIALIZE_LIMIT is None:
        import os

        try:
            MATERIALIZE_LIMIT = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2
        except (ValueError, OSError, AttributeError):
            MATERIALIZE_LIMIT = 8 << 30
    return MATERIALIZE_LIMIT


def visited_fraction(p, block) -> float:
    """Fraction of the ``Tq x Tk`` scores a kernel computes when it skips causal blocks of ``block``."""
    if not p.is_causal or p.Tq == 0 or p.Tk == 0 or block <= 0:
        return 1.0
    seen = 0
    for q0 in range(0, p.Tq, block):
        q1 = min(q0 + block, p.Tq)
        seen += (q1 - q0) * min(p.Tk, -(-q1 // block) * block)
    return min(1.0, seen / (p.Tq * p.Tk))


def estimate(backend, p) -> float:
    """Expected seconds for ``backend`` to run ``p`` on its executor (the automatic choice's cost)."""
    if backend is _B.BRIDGE:
        from . import _bridge

        return _bridge.estimate(p)
    rate = RATES.get(device_class(p.ex), {}).get(backend, _DEFAULT_RATE)
    flops = 2.0 * p.B * p.Hq * p.Tq * p.Tk * (p.E + p.Ev)
    block = rate.skip
    if block == _CHUNKED_SKIP:
        from ._chunked import block_sizes

        block = block_sizes(p.B, p.Hq, p.Tq, p.Tk)[0]
    cost = rate.fixed + flops * visited_fraction(p, block) / (rate.gflops * 1e9)
    if rate.materializes and 8.0 * p.B * p.Hq * p.Tq * p.Tk > _memory_limit():
        cost += 1e6  # would exhaust memory: only an explicit choice runs it
    return cost


# --- choice ---------------------------------------------------------------------------------

class Verdict:
    """One kernel's standing for one call.

    Attributes:
        backend: the kernel.
        enabled: whether it is enabled; ``disabled`` says why not.
        refusal: None if its rules pass, else the failing rule's reason.
        cost: expected seconds (None when refused or disabled).
    """

    __slots__ = ("backend", "enabled", "disabled", "refusal", "cost")

    def __init__(self, backend, enabled, disabled, refusal, cost):
        self.backend, self.enabled, self.disabled, self.refusal, self.cost = (backend, enabled, disabled,
                                                                              refusal, cost)

    @property
    def usable(self) -> bool:
        return self.enabled and self.refusal is None

    @property
    def reason(self):
        """Why it will not run (None when usable)."""
        return self.disabled if not self.enabled else self.refusal


def evaluate(p, en=None, exclude=()) -> tuple:
    """(verdicts in the order tried, chosen backend or None) for params ``p``.

    Args:
        p: canonical params.
        en: the enabled state (``_state.enabled()`` when None).
        exclude: backends not to consider at all (a bridge's peer excludes the bridge).
    """
    en = _state.enabled() if en is None else en
    verdicts = []
    for b in _state.ALL if not en.priority else tuple(en.backends) + tuple(x for x in _state.ALL
                                                                             if x not in en.backends):
        if b in exclude:
            continue
        on = b in en.backends
        refusal = KERNELS[b].refusal(p)
        cost = estimate(b, p) if refusal is None else None
        verdicts.append(Verdict(b, on, None if on else en.disabled.get(b, "not enabled"), refusal, cost))
    usable = [v for v in verdicts if v.usable]
    if not usable:
        return tuple(verdicts), None
    if en.priority:
        return tuple(verdicts), usable[0].backend
    best = min(usable, key=lambda v: v.cost)
    return tuple(verdicts), best.backend


_legal_cache: dict = {}
_CACHE_MAX = 4096


def _defers_bridge(p, exclude) -> bool:
    """Whether the bridge is left out of ``p``'s first look: training on a lazy executor, where it is
    priced out (:data:`BRIDGE_TRAINING_PENALTY`) and merely checking it would import the peer's
    framework and evaluate the inputs. It is looked at when named explicitly or when nothing else can run."""
    return p.requires_grad and p.ex.caps.asynchronous and _B.BRIDGE not in exclude


def legal(p, exclude=()) -> tuple:
    """The backends whose rules pass for ``p``, cheapest first, as ``(backend, cost)`` pairs (cached
    per input signature; rules and costs do not depend on which kernels are enabled)."""
    return _legal(p, exclude)[0]


def _legal(p, exclude) -> tuple:
    """``(rows, backends cheapest first, their set)`` for :func:`legal` and :func:`choose` (one cache entry)."""
    # a traced step refuses the bridge; dropout's legality follows the generator its draws must come from
    key = (p.signature(), exclude, is_tracing(), _dropout_key(p) if p.dropout_p > 0 else None)
    hit = _legal_cache.get(key)
    if hit is None:
        rows = [(b, estimate(b, p)) for b in _state.ALL if b not in exclude and KERNELS[b].refusal(p) is None]
        rows.sort(key=lambda r: r[1])
        if len(_legal_cache) >= _CACHE_MAX:
            _legal_cache.clear()
        by_cost = tuple(b for b, _ in rows)
        hit = _legal_cache[key] = (tuple(rows), by_cost, frozenset(by_cost))
    return hit


def _dropout_key(p):
    from ._dropout import key

    return key(p)


def is_tracing() -> bool:
    """Whether this thread is tracing a step for ``tdx.compile`` (which refuses the bridge)."""
    fn = _is_compiling[0]
    if fn is None:
        from ..compat.compiler import is_compiling as fn

        _is_compiling[0] = fn
    return fn()


_is_compiling = [None]  # tdx.compat.compiler.is_compiling, imported on first use


def passes(p, exclude=(), en=None) -> tuple:
    """What the choice for ``p`` depends on besides the switches: ``(orders, allowed)``.

    ``orders`` are the backend orders tried in turn, each holding only backends whose rules pass
    for ``p``. A lazy executor's training call looks without the bridge first; the order with it
    is a :class:`_Later`, worked out only if the first finds nothing (checking the bridge imports
    the peer's framework and evaluates the inputs). ``allowed`` is the test a backend must pass:
    membership in the ``sdpa_kernel`` block (or ``en``), else its global switch, read at pick time.
    """
    if en is None:
        override = _state.current_override()
        if override is not None:
            en = _state.Enabled(override.backends, override.priority, {})
    listed = _state.config_priority() if en is None else None
    base = (en.backends if en.priority else None) if en is not None else listed or None
    named = en.backends if en is not None else listed or ()
    allowed = frozenset(en.backends).__contains__ if en is not None else _state.switch
    if _defers_bridge(p, exclude) and _B.BRIDGE not in named:
        return (_order(p, exclude + (_B.BRIDGE,), base), _Later(exclude, base)), allowed
    return (_order(p, exclude, base),), allowed


class _Later:
    """An order of :func:`passes` worked out at pick time: the legal backends for ``exclude``, in
    ``base``'s order (None: cheapest first)."""

    __slots__ = ("exclude", "base")

    def __init__(self, exclude: tuple, base):
        self.exclude, self.base = exclude, base


def _order(p, exclude, base) -> tuple:
    _, by_cost, ok = _legal(p, exclude)
    return by_cost if base is None else tuple(b for b in base if b in ok)


def pick(orders, allowed, p=None):
    """The first backend of the first order that ``allowed`` lets run, or None (``p``: the call's
    params, to work out a :class:`_Later` order)."""
    for order in orders:
        if order.__class__ is _Later:
            order = _order(p, order.exclude, order.base)
        for b in order:
            if allowed(b):
                return b
    return None


def choose(p, exclude=(), en=None):
    """The backend to run ``p`` with.

    Args:
        p: canonical params.
        exclude: backends never to choose.
        en: an explicit enabled state (``_state.Enabled``); None reads this thread/task's
            ``sdpa_kernel`` block, else the global switches and the config.

    Raises:
        NoKernelError: no kernel is both enabled and able to run the inputs; the message lists
            every kernel with the reason it was refused.
    """
    orders, allowed = passes(p, exclude, en)
    return chosen_or_raise(p, pick(orders, allowed, p), exclude, en)


def chosen_or_raise(p, chosen, exclude=(), en=None):
    """``chosen`` (from :func:`pick`), after raising when it is None and warning when it is the unfused
    math kernel and ``WARN_FOR_UNFUSED_KERNELS`` is set."""
    if chosen is None:
        verdicts, _ = evaluate(p, en if en is not None else _state.enabled(), exclude)
        lines = "\n".join(f"  {v.backend.name}: {v.reason}" for v in verdicts)
        raise NoKernelError(f"No available kernel for scaled_dot_product_attention ({p.describe()}); every "
                            f"kernel is disabled or cannot run these inputs:\n{lines}",
                            {v.backend: v.reason for v in verdicts})
    if chosen is _B.MATH and _warn_unfused():
        verdicts, _ = evaluate(p, en, exclude)
        refused = "; ".join(f"{v.backend.name}: {v.reason}" for v in verdicts if v.backend in FUSED)
        warnings.warn(f"scaled_dot_product_attention runs the unfused math kernel on {p.ex.device}: {refused}",
                      UserWarning, stacklevel=_user_level())
    return chosen


def _user_level() -> int:
    """The ``stacklevel`` of the innermost frame outside tdx, seen from the function that called this
    one: a warning then points at the user's line, however deep inside tdx it is raised."""
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_globals.get("__name__", "").partition(".")[0] == "tdx":
        frame, level = frame.f_back, level + 1
    return level


def clear_cache() -> None:
    """Forget cached legality and costs, and the plans built on them (after changing :data:`RATES` or a
    capability)."""
    from . import _plan

    _legal_cache.clear()
    _plan.clear()


def _warn_unfused() -> bool:
    mod = sys.modules.get("tdx.attention")
    return bool(getattr(mod, "WARN_FOR_UNFUSED_KERNELS", False))


