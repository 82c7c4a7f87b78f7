"""The bridge kernel: run the inputs on a peer executor's kernel through DLPack exchange.

A peer is the other framework's executor on the same memory (``mlx:cpu`` <-> ``cpu``,
``mlx:gpu`` <-> ``mps``, :data:`PEERS`). The bridge is legal only where the inputs reach the peer
without a copy (the executors' ``dlpack_zero_copy_export`` / ``dlpack_zero_copy_import``
capabilities); the result comes back as a copy where the pair copies (priced in
:func:`estimate`). From MLX, ``mx.vjp``/``mx.grad`` work: the backward
pass recomputes on the peer under torch's autograd, with the forward pass's dropout mask. With
dropout it runs only where the peer draws from the generator the source's draws come from (MLX
under the torch random stream and ``cpu`` share torch's CPU generator), so the mask is torch's.

It must never import a framework at module level, and chooses the peer's kernel only
through ``tdx.attention._kernels``.
"""

from __future__ import annotations

from . import _state
from ._state import SDPBackend

__all__ = ["PEERS", "peer", "refusal", "estimate", "describe", "run", "draw"]

PEERS = {"mlx:cpu": "cpu", "cpu": "mlx:cpu", "mlx:gpu": "mps", "mps": "mlx:gpu"}
_peers: dict = {}
_ALL_ENABLED = _state.Enabled(_state.ALL, False, {})


def _peer_enabled():
    """The peer's enabled state: the enclosing ``sdpa_kernel`` block's kernels but the bridge, or, when
    there is no block (None) or it lists only the bridge, the global switches and the config."""
    override = _state.current_override()
    if override is None:
        return None
    rest = tuple(b for b in override.backends if b is not SDPBackend.BRIDGE)
    return _state.Enabled(rest, override.priority, {}) if rest else _state.global_enabled()


def peer(ex):
    """(peer executor or None, reason when None) of executor ``ex``."""
    hit = _peers.get(ex)
    if hit is not None:
        return hit
    name = PEERS.get(str(ex.device))
    if name is None:
        hit = (None, f"{ex.device} has no peer executor sharing its memory")
    else:
        from .. import backends

        row = next((r for r in backends.available() if r.device == name), None)
        if row is None or not row.available:
            why = row.reason if row is not None else "no provider"
            hit = (None, f"its peer {name} is not available ({why})")
        else:
            # the peer itself, never what a device pin would remap it to (the bridge hands results back to ex)
            hit = (backends._unpinned(name), None)
    _peers[ex] = hit
    return hit


def _moved(p, ex, arrays=None, mask=None):
    """``p`` with its arrays handed to executor ``ex`` (zero-copy where the pair allows).

    Args:
        p: canonical params.
        ex: the peer executor.
        arrays: (q, k, v) already on ``ex``, or None to transfer ``p``'s.
        mask: with ``arrays``, the mask already on ``ex`` (None: ``p``'s transferred, where it has one).
    """
    from ..interop import transfer
    from ._ops import ops_for
    n = p.copy()
    n.ex, n.ops = ex, ops_for(ex)
    if arrays is None:
        arrays = [transfer(x, p.ex, ex) for x in (p.q, p.k, p.v)]
    n.q, n.k, n.v = arrays
    n.mask = mask if mask is not None or p.mask is None else transfer(p.mask, p.ex, ex)
    n.requires_grad = False
    n.mask_requires_grad = False
    return n


def _stand_ins(p, ex) -> tuple:
    """``(q, k, v, mask)`` as natives of the peer ``ex`` with ``p``'s shapes and dtypes, their values never
    read: what the peer's kernel rules and costs look at (shapes, dtypes, flags), without handing ``p``'s
    arrays over, which would evaluate a lazy executor's pending graph while a kernel is only being chosen."""
    dtype = p.dtype
    q, k, v = (ex.empty((p.B, h, t, e), dtype) for h, t, e in ((p.Hq, p.Tq, p.E), (p.Hk, p.Tk, p.E),
                                                                (p.Hk, p.Tk, p.Ev)))
    return q, k, v, None if p.mask is None else ex.empty(tuple(p.mask_shape), p.mask_dtype)


def _peer_choice(p):
    """(peer params with stand-in arrays, peer backend) or (None, reason): decided from shapes, dtypes and
    flags alone (the run hands the real arrays over)."""
    ex, why = peer(p.ex)
    if ex is None:
        return None, why
    if not p.ex.caps.dlpack_zero_copy_export:
        return None, f"{p.ex.device} cannot hand its memory to {ex.device} without a copy"
    if not ex.caps.dlpack_zero_copy_import:
        return None, f"{ex.device} cannot import {p.ex.device}'s memory without a copy"
    if p.mask_requires_grad:
        return None, "it returns no gradient for attn_mask, which requires grad"
    if p.requires_grad and p.ex.caps.native_autograd:
        return None, f"gradients would not flow back from {ex.device} to {p.ex.device}'s autograd"
    from . import _dropout, _kernels

    *arrays, mask = _stand_ins(p, ex)
    pp = _moved(p, ex, arrays, mask)
    want = _dropout.key(p)
    if want is not None and _dropout.key(pp) != want:
        return None, (f"dropout on {p.ex.device} draws torch's mask from {want}'s generator, and {ex.device}'s "
                      f"kernels draw from {_dropout.key(pp) or 'their own'}")
    verdicts, chosen = _kernels.evaluate(pp, _ALL_ENABLED, exclude=(SDPBackend.BRIDGE,))
    if chosen is None:
        reasons = "; ".join(f"{v.backend.name}: {v.reason}" for v in verdicts)
        return None, f"no kernel on {ex.device} can run the inputs ({reasons})"
    return pp, chosen


def describe(p) -> str:
    """Which kernel the bridge would reach for ``p`` (``"FLASH_ATTENTION on cpu"``), or why none."""
    pp, chosen = _peer_choice(p)
    if pp is None:
        return chosen
    return f"{chosen.name} on {pp.ex.device}"


def refusal(p):
    """None when the bridge can run ``p``, else the reason it cannot."""
    from ..compat.compiler import is_compiling

    if is_compiling():
        return "a step traced by tdx.compile cannot hand its inputs to a peer (that evaluates them)"
    pp, why = _peer_choice(p)
    return why if pp is None else None


def estimate(p) -> float:
    """Expected seconds: the peer kernel's estimate plus the copy of the result back."""
    from . import _kernels

    pp, chosen = _peer_choice(p)
    if pp is None:
        return float("inf")
    out_bytes = p.B * p.Hq * p.Tq * p.Ev * p.dtype.itemsize
    copy = 0.0 if p.ex.caps.dlpack_zero_copy_import else out_bytes / _kernels.BRIDGE_COPY_BPS
    cost = _kernels.estimate(chosen, pp) + copy + _kernels.BRIDGE_OVERHEAD
    if p.ex.caps.asynchronous:  # a lazy executor: handing the inputs over evaluates their pending graph
        cost += _kernels.BRIDGE_FORCED_EVAL
        if p.requires_grad:  # training: that graph stays pinned for the backward, which recomputes here
            cost += _kernels.BRIDGE_TRAINING_PENALTY
    return cost


def run(p):
    """The result of the peer's best kernel, handed back to ``p``'s executor."""
    from . import _kernels
    from ..interop import transfer

    ex, why = peer(p.ex)
    if ex is None:
        raise _kernels.NoKernelError(f"the bridge kernel cannot run: {why}")
    pp = _moved(p, ex)
    chosen = _kernels.choose(pp, exclude=(SDPBackend.BRIDGE,), en=_peer_enabled())
    kernel = _kernels.KERNELS[chosen]
    mx = getattr(p.ops, "mx", None)
    if mx is None:
        return transfer(kernel.run(pp, chosen), pp.ex, p.ex)
    return _mlx_bridge(mx, p, pp, kernel, chosen)


def _to_mlx(mx, t):
    """A floating-point torch CPU tensor copied into an MLX array of the same dtype.

    (bfloat16 travels as int16 bits; float64 is kept, which ``mx.array`` alone would narrow.)
    """
    import torch

    t = t.detach()
    if t.dtype == torch.bfloat16:
        return mx.array(t.view(torch.int16).numpy()).view(mx.bfloat16)
    arr = t.numpy()
    return mx.array(arr, dtype={"float64": mx.float64, "float32": mx.float32, "float16": mx.float16}[arr.dtype.name])


def _mlx_bridge(mx, p, pp, kernel, chosen):
    """The bridge from MLX as an ``mx.custom_function`` whose VJP recomputes under torch's autograd."""
    import torch

    from ..interop import transfer

    from ..autograd.tape import differentiating

    src, dst = p.ex, pp.ex
    # dropout on the peer draws from torch's CPU generator: the one the source draws from under the torch
    # random stream (a HostState: the forward pass draws torch's own mask and leaves the generator where
    # torch does), else seeded from the source's (a seed: tdx.manual_seed repeats it); the backward
    # pass recomputes with the forward pass's masks
    token = (p.seed if p.seed is not None else draw(p)) if 0 < pp.dropout_p < 1 else None

    @mx.custom_function
    def attend(q, k, v):
        with _drawing(torch, token, replay=differentiating()), torch.no_grad():
            return _to_mlx(mx, kernel.run(pp, chosen))

    @attend.vjp
    def attend_vjp(primals, cotangent, output):
        q, k, v = primals
        leaves = [transfer(x, src, dst).detach().requires_grad_(True) for x in (q, k, v)]
        pg = _moved(p, dst, leaves)
        pg.requires_grad = True
        with _drawing(torch, token, replay=True):
            with torch.enable_grad():
                out = kernel.run(pg, chosen)
            grads = torch.autograd.grad(out, leaves, transfer(cotangent, src, dst))
        return tuple(_to_mlx(mx, g) for g in grads)

    return attend(p.q, p.k, p.v)


def draw(p):
    """The dropout token of a bridged call from ``p``'s executor: where the draws must be torch's, the
    host generator's state before the call (:class:`._dropout.HostState`), else a seed of the source's."""
    from . import _dropout

    if _dropout.exact(p):
        import torch

        return _dropout.HostState(torch.get_rng_state())
    return p.ops.draw_seed()


class _drawing:
    """The peer's kernel drawing its dropout from ``token``: a seed, in a fork of torch's generators
    seeded with it; a :class:`._dropout.HostState`, from the host generator restored to it, in a fork
    for a ``replay`` and otherwise leaving the generator after the draw, as torch's own call does;
    None (no dropout), in a fork."""

    def __init__(self, torch, token, replay: bool):
        from ._dropout import HostState

        self.torch, self.token = torch, token
        self.live = token.__class__ is HostState and not replay
        self.fork = torch.random.fork_rng(devices=[])

    def __enter__(self):
        self.fork.__enter__()
        token = self.token
        if token.__class__ is int:
            self.torch.default_generator.manual_seed(token)
        elif token is not None:
            self.torch.set_rng_state(token.state)
        return self

    def __exit__(self, *exc):
        after = self.torch.get_rng_state() if self.live and exc[0] is None else None
        self.fork.__exit__(*exc)
        if after is not None:
            self.torch.set_rng_state(after)
        return False
