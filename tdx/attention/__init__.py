"""``tdx.attention``: scaled-dot-product attention on every executor, mirroring ``torch.nn.attention``.

``scaled_dot_product_attention`` has torch's semantics on every executor and runs the kernel
expected to be fastest among those enabled and able to run the inputs: torch's own kernels
on torch devices, MLX's fused kernel on MLX, a math reference, a chunked online-softmax
kernel whose memory grows linearly with the sequence length, and a bridge to a peer
executor's kernel over zero-copy DLPack. ``sdpa_kernel`` restricts the kernels for one
thread or asyncio task; ``explain`` says which kernel would run and why every other was
refused; ``can_use_*`` answer for one kernel (torch's ``debug=True`` warns the reasons).
Gradients flow through torch's autograd on torch devices and through tdx's tape elsewhere (every
kernel is differentiable under the executor's own vjp, ``mx.vjp`` on MLX).

Importing this package imports no framework; each kernel imports its framework on first use.
"""

from __future__ import annotations

import warnings

from .._tensor.tensor import Tensor as _Tensor
from .._tensor.wrapping import wrap as _wrap
from .._tensor import recording as _tape
from ..autograd.grad_mode import MODE as _MODE
from . import _kernels, _plan, _state
from ._errors import (AttentionDtypeError, AttentionShapeError, AttentionValueError, NoKernelError,
                      SDPAError)
from ._params import prepare as _prepare, restore as _restore
from ._state import KERNEL_NAMES, SDPBackend, context_backends, sdpa_kernel

_new = object.__new__

__all__ = ["SDPBackend", "sdpa_kernel", "scaled_dot_product_attention", "explain", "Explanation",
           "SDPAParams", "can_use", "can_use_flash_attention", "can_use_efficient_attention",
           "can_use_cudnn_attention", "enabled_backends", "context_backends", "WARN_FOR_UNFUSED_KERNELS",
           "SDPAError", "NoKernelError", "AttentionShapeError", "AttentionDtypeError", "AttentionValueError",
           "KERNEL_NAMES"]

WARN_FOR_UNFUSED_KERNELS = False
"""When True, every call that runs the unfused math kernel warns why each fused kernel was refused."""


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False,
                                 scale=None, enable_gqa=False):
    """``softmax(query @ key.mT * scale + mask) @ value`` with torch's semantics, on any executor.

    Args:
        query: ``(..., Hq, Tq, E)``.
        key: ``(..., Hk, Tk, E)``.
        value: ``(..., Hv, Tk, Ev)``.
        attn_mask: broadcastable to ``(..., Hq, Tq, Tk)``; bool (True takes part) or an additive
            float mask (float32 or the query's dtype), or a ``tdx.nn.attention.bias.CausalBias``.
        dropout_p: probability of dropping an attention weight, applied as torch does: where the
            executor's draws are torch's (torch devices; MLX under the torch random stream) the mask is
            the one torch's kernel draws from the same generator, which ends where torch's does.
        is_causal: top-left causal mask (query ``i`` sees keys ``j <= i``); not with ``attn_mask``.
        scale: defaults to ``1 / sqrt(E)``.
        enable_gqa: allow ``Hk`` and ``Hv`` to divide ``Hq`` (grouped-query attention).

    Returns:
        A tensor of shape ``(..., Hq, Tq, Ev)`` on the inputs' executor.

    Raises:
        AttentionShapeError, AttentionDtypeError, AttentionValueError, SDPAError: bad inputs.
        NoKernelError: no enabled kernel can run the inputs (the message lists the reasons).
    """
    if attn_mask is None:  # a repeated call whose plan runs its kernel on the inputs as they are: nothing else
        out = _plan.run_planned(query, key, value, dropout_p, is_causal, scale, enable_gqa)
        if out is not None:  # wrap's, inlined: the per-call path
            t = _new(_Tensor)
            t._n = out
            t._ex = query._ex
            t._ag = t._view = t._dt = None
            return t
    else:
        run_with = getattr(attn_mask, "__tdx_sdpa__", None)
        if run_with is not None:  # a mask object that runs the call itself (torch.nn.attention.bias.CausalBias)
            return run_with(query, key, value, dropout_p, is_causal, scale, enable_gqa)
    p, backend = _plan.resolve(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)
    if _tape.ACTIVE[0] and _MODE.enabled and _tape.wants(query, key, value, attn_mask):
        # recorded on tdx's tape: the backward pass re-executes this call under the executor's vjp,
        # so the kernel and the dropout draw (torch's noise, or a seed) are fixed now and travel with
        # the recorded arguments
        seed = _draw(p, backend) if 0 < p.dropout_p < 1 else None
        return _tape.call(_attend, query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa,
                          backend, seed)
    out = _kernels.KERNELS[backend].run(p, backend)
    return _wrap(_restore(p, out), p.ex)


def _draw(p, backend):
    """The dropout token of one recorded call (:mod:`._dropout`): the bridge's from its peer's generator."""
    if backend is SDPBackend.BRIDGE:
        from . import _bridge

        return _bridge.draw(p)
    from . import _dropout

    return _dropout.draw(p)


def _attend(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa, backend, seed):
    """One call with its kernel and dropout seed given (what tdx's tape records and re-executes)."""
    p = _plan.params(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)
    p.seed = seed
    return _wrap(_restore(p, _kernels.KERNELS[backend].run(p, backend)), p.ex)


class Explanation:
    """Which kernel a call would run, and why every other kernel would not.

    Attributes:
        kernel: the :class:`SDPBackend` that would run, or None when none can.
        device: the inputs' device.
        verdicts: per kernel, in the order considered: ``backend``, ``enabled``, ``reason`` (None
            when usable) and ``cost`` (expected seconds, when usable).
        reasons: ``{backend: reason}`` for every kernel that would not run; usable kernels that
            lost on cost have the reason ``"slower: ..."``.
        summary: the inputs in canonical form.
        via: for a usable bridge, the peer kernel it reaches (``"FLASH_ATTENTION on cpu"``).
    """

    def __init__(self, kernel, device, verdicts, summary, priority, via=None):
        self.kernel, self.device, self.verdicts, self.summary = kernel, device, verdicts, summary
        self.priority, self.via = priority, via
        self.reasons = {}
        best = next((v.cost for v in verdicts if v.backend is kernel), None)
        for v in verdicts:
            if v.backend is kernel:
                continue
            if v.usable:
                why = "lower in the explicit priority" if priority else (
                    f"slower: expected {v.cost * 1e3:.3g} ms against {best * 1e3:.3g} ms")
                self.reasons[v.backend] = why
            else:
                self.reasons[v.backend] = v.reason

    def __repr__(self) -> str:
        return f"<Explanation kernel={self.kernel.name if self.kernel is not None else None} on {self.device}>"

    def __str__(self) -> str:
        head = (f"scaled_dot_product_attention on {self.device}: "
                f"{self.kernel.name if self.kernel is not None else 'no kernel can run'}\n  inputs: {self.summary}")
        lines = [head]
        for v in self.verdicts:
            mark = "->" if v.backend is self.kernel else "  "
            cost = f" (~{v.cost * 1e3:.3g} ms)" if v.cost is not None else ""
            detail = "runs" if v.backend is self.kernel else self.reasons.get(v.backend, "")
            if v.backend is SDPBackend.BRIDGE and v.usable and self.via:
                detail += f" (via {self.via})"
            lines.append(f"  {mark} {v.backend.name:<20}{cost} {detail}")
        return "\n".join(lines)


def explain(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
            enable_gqa=False) -> Explanation:
    """Which kernel ``scaled_dot_product_attention`` would run on these inputs, and why not the others.

    Takes the same arguments as :func:`scaled_dot_product_attention` and runs nothing.

    Raises:
        SDPAError: the input errors of :func:`scaled_dot_product_attention` (not ``NoKernelError``:
            an explanation with ``kernel=None`` says why nothing can run).
    """
    p = _prepare(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)
    en = _state.enabled()
    verdicts, chosen = _kernels.evaluate(p, en)
    via = None
    if any(v.backend is SDPBackend.BRIDGE and v.usable for v in verdicts):
        from . import _bridge

        via = _bridge.describe(p)
    return Explanation(chosen, p.ex.device, verdicts, p.describe(), en.priority, via)


class SDPAParams:
    """The inputs of one attention call, for the ``can_use_*`` checks (torch's ``SDPAParams``).

    Args:
        query: ``tdx.Tensor`` input (torch tensors or MLX arrays are adopted).
        key: as ``query``.
        value: as ``query``.
        attn_mask: the mask or None.
        dropout: the dropout probability.
        is_causal: whether the attention is causal.
        enable_gqa: whether grouped-query attention is allowed.
        scale: the scale, or None for ``1/sqrt(E)`` (a tdx addition).
    """

    __slots__ = ("query", "key", "value", "attn_mask", "dropout", "is_causal", "enable_gqa", "scale")

    def __init__(self, query, key, value, attn_mask=None, dropout=0.0, is_causal=False, enable_gqa=False,
                 scale=None):
        self.query, self.key, self.value, self.attn_mask = query, key, value, attn_mask
        self.dropout, self.is_causal, self.enable_gqa, self.scale = dropout, is_causal, enable_gqa, scale

    def __repr__(self) -> str:
        return (f"SDPAParams(dropout={self.dropout}, is_causal={self.is_causal}, enable_gqa={self.enable_gqa}, "
                f"attn_mask={'None' if self.attn_mask is None else 'given'})")


def _adopt(x):
    from .._tensor.tensor import Tensor

    if x is None or x.__class__ is Tensor:
        return x
    from .._tensor.creation import as_tensor

    return as_tensor(x)


def can_use(backend, params, debug: bool = False) -> bool:
    """Whether kernel ``backend`` is enabled and can run ``params``.

    Args:
        backend: an :class:`SDPBackend` (torch's members and config names such as ``"chunked"``
            are accepted).
        params: an :class:`SDPAParams`, or any object with torch's ``SDPAParams`` attributes.
        debug: warn (``UserWarning``) with the reason when the answer is False.

    Returns:
        True when the kernel would be allowed to run these inputs now (it may still lose to a
        faster kernel in the automatic choice).
    """
    from .._errors import TdxError

    backend = _state._as_backend(backend)
    try:
        p = _prepare(_adopt(params.query), _adopt(params.key), _adopt(params.value), _adopt(params.attn_mask),
                     getattr(params, "dropout", 0.0), getattr(params, "is_causal", False),
                     getattr(params, "scale", None), getattr(params, "enable_gqa", False))
    except TdxError as e:
        reason = f"the inputs are invalid: {e}"
    else:
        en = _state.enabled()
        reason = None if backend in en.backends else en.disabled.get(backend, "not enabled")
        if reason is None:
            reason = _kernels.KERNELS[backend].refusal(p)
    if reason is not None and debug:
        warnings.warn(f"{backend.name} cannot be used: {reason}", UserWarning, stacklevel=2)
    return reason is None


def can_use_flash_attention(params, debug: bool = False) -> bool:
    """Whether the flash kernel can run ``params`` (torch's ``can_use_flash_attention``, any device)."""
    return can_use(SDPBackend.FLASH_ATTENTION, params, debug)


def can_use_efficient_attention(params, debug: bool = False) -> bool:
    """Whether the memory-efficient kernel can run ``params`` (torch's ``can_use_efficient_attention``)."""
    return can_use(SDPBackend.EFFICIENT_ATTENTION, params, debug)


def can_use_cudnn_attention(params, debug: bool = False) -> bool:
    """Whether the cuDNN kernel can run ``params`` (torch's ``can_use_cudnn_attention``)."""
    return can_use(SDPBackend.CUDNN_ATTENTION, params, debug)


def enabled_backends() -> tuple:
    """The kernels enabled for a call made now in this thread/task (in priority order when one is set)."""
    return _state.enabled().backends
