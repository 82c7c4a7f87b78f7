"""The per-signature plan of an attention call: checked shapes and kernel candidates, reused.

An attention call is checked and canonicalized (:mod:`._params`) and its kernel chosen
(:mod:`._kernels`); both depend only on the inputs' executor, shapes, dtypes and gradient needs,
the call's flags, the ``sdpa_kernel`` block in force, the config's priority and whether a step is
being traced. :func:`resolve` keys on exactly those, so a repeated call (every layer of every
training step) copies the cached canonical parameters, puts in its own arrays and re-reads only
the switches of the candidates it tries. The key/value length enters the key by its class (its bit
length), so a generation whose KV cache grows by one each token re-plans only at each power of two:
the kernels' rules ask only whether a length is non-zero, and within a class the kernel is the one
chosen for the class's first call (the costs' ranking changes only at crossovers between lengths;
every kernel computes torch's attention). A mask that is already rank 4 enters the key by its dims, its key
length as "full" or 1; calls with dropout, another mask, and inputs that are not already rank-4
``(B, H, T, E)`` tensors of one executor, take the full path every time.

This module must never import a framework and never decides anything itself: a cached plan is
the full path's answer, and a switch turned off since falls back to the full path.
"""

from __future__ import annotations

from . import _kernels, _state
from ._params import prepare

__all__ = ["resolve", "run_planned", "params", "clear"]

_plans: dict = {}
_MAX = 1024


def _key(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa):
    """The plan's key, or None for a call the plan does not cover (the full path checks it)."""
    if dropout_p.__class__ is not float or dropout_p != 0.0:
        return None
    if is_causal.__class__ is not bool or enable_gqa.__class__ is not bool or not (
            scale is None or scale.__class__ is float):
        return None
    cls = query.__class__
    if key.__class__ is not cls or value.__class__ is not cls or cls is not (_Tensor[0] or _tensor_class()):
        return None
    ex = query._ex
    if key._ex is not ex or value._ex is not ex:
        return None
    qn, kn, vn = query._n, key._n, value._n
    if ex.taped:
        mq, mk, mv = query._ag, key._ag, value._ag
        grads = (mq is not None and mq.requires_grad, mk is not None and mk.requires_grad,
                 mv is not None and mv.requires_grad)
    else:
        grads = (qn.requires_grad, kn.requires_grad, vn.requires_grad)
    ks, vs = kn.shape, vn.shape
    if len(ks) != 4 or len(vs) != 4 or ks[2] != vs[2]:
        return None  # a plan is for canonical rank-4 inputs; unequal key/value lengths raise on the full path
    mask = None
    if attn_mask is not None:  # a rank-4 mask is canonical as given: keyed by its dims but the key length's
        if attn_mask.__class__ is not cls or attn_mask._ex is not ex:
            return None
        mn = attn_mask._n
        ms = mn.shape
        if len(ms) != 4 or (ms[3] != 1 and ms[3] != ks[2]):
            return None
        mg = attn_mask._ag
        mask = (ms[0], ms[1], ms[2], ms[3] == 1, mn.dtype,
                (mg is not None and mg.requires_grad) if ex.taped else mn.requires_grad)
    # the key/value length by its class (its bit length: 0, 1, 2-3, 4-7, ...): a generation's growing KV
    # cache re-plans at each power of two, not at every token; a shape is a torch.Size or a tuple, equal
    # and hashed alike
    return (ex, qn.shape, ks[0], ks[1], ks[2].bit_length(), ks[3], vs[0], vs[1], vs[3], qn.dtype, kn.dtype,
            vn.dtype, grads, is_causal, scale, enable_gqa, mask, _override(),
            _priority[0] if _priority else _state.config_priority(), (_tracing[0] or _bind_tracing())())


_GRADS_AT = 12  # where the key holds the inputs' gradient needs (``grads`` above)
_priority = _state.PRIORITY
_override = _state.override_getter  # _state.current_override without a frame of its own (every call reads it)
_tracing = [None]  # _kernels.is_tracing's function, bound on first use


def _bind_tracing():
    _kernels.is_tracing()  # binds the compiler's is_compiling
    _tracing[0] = _kernels._is_compiling[0]
    return _tracing[0]


def run_planned(query, key, value, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """The result native of a call without a mask whose plan runs its kernel on the inputs as they are
    (:func:`._kernels.direct`), while that kernel is still the one :func:`resolve` picks; else None, and the
    caller takes :func:`resolve`'s path. On an executor that records on tdx's tape, only for inputs without
    autograd state (inference: nothing to record)."""
    ex = getattr(query, "_ex", None)
    if ex is None or ex.taped and not (
            query._ag is None and getattr(key, "_ag", None) is None and getattr(value, "_ag", None) is None):
        return None  # a taped executor's call with autograd state: no direct plan (never made below), no key twice
    k = _key(query, key, value, None, dropout_p, is_causal, scale, enable_gqa)
    if k is None:
        return None
    plan = _plans.get(k)
    if plan is None or plan[3] is None:
        return None
    backend, switch, run = plan[3]
    if switch is not None and not switch():  # turned off since: the full path picks the next one
        return None
    return run(query._n, key._n, value._n)


def resolve(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """``(params, backend)`` for one call: checked canonical parameters and the kernel to run.

    Raises:
        The errors of :func:`._params.prepare` and :func:`._kernels.choose`.
    """
    k = _key(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)
    plan = None if k is None else _plans.get(k)
    if plan is not None:
        template, orders, allowed, _ = plan
        p = _planned(template, query, key, value, attn_mask)
        chosen = _kernels.pick(orders, allowed, p)
        if chosen is not None and chosen is not _state.SDPBackend.MATH:  # math may warn: the full path decides
            return p, chosen
    p = prepare(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)
    orders, allowed = _kernels.passes(p)
    chosen = _kernels.chosen_or_raise(p, _kernels.pick(orders, allowed, p))
    if k is not None and p.q is query._n and p.k is key._n and p.v is value._n and (
            attn_mask is None or p.mask is attn_mask._n):  # canonical as given
        if len(_plans) >= _MAX:
            _plans.clear()
        template = p.copy()
        template.q = template.k = template.v = template.mask = None  # the plan keeps no arrays alive
        _plans[k] = (template, orders, allowed, _direct(p, orders, allowed, chosen, attn_mask, not any(k[_GRADS_AT])))
    return p, chosen


def _direct(p, orders, allowed, chosen, attn_mask, no_grads: bool):
    """``(backend, switch, run)`` for :func:`run_planned`, where a call planned as ``p`` can run ``chosen``
    directly: no mask, the first backend of the only order (so the pick is it while its switch is on; under an
    ``sdpa_kernel`` block, part of the key, it always is), a result needing no reshape, nothing for a tape to
    record (``no_grads``: no input requires grad, on an executor that records on tdx's tape). Else None."""
    if attn_mask is not None or (p.ex.taped and not no_grads) or len(orders) != 1 or \
            orders[0][:1] != (chosen,) or tuple(p.out_shape) != (p.B, p.Hq, p.Tq, p.Ev):
        return None
    run = _kernels.direct(p, chosen)
    if run is None:
        return None
    return chosen, (None if allowed is not _state.switch else _state.switch_reader(chosen)), run


def params(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """The checked canonical parameters of one call, without choosing a kernel (a recorded call replays
    with the kernel it ran)."""
    k = _key(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)
    plan = None if k is None else _plans.get(k)
    if plan is None:
        return prepare(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)
    return _planned(plan[0], query, key, value, attn_mask)


def _planned(template, query, key, value, attn_mask):
    """The canonical parameters of a call whose plan's parameters are ``template``: its arrays put in."""
    p = template.copy()
    p.q, p.k, p.v = query._n, key._n, value._n
    p.Tk = p.k.shape[2]
    if attn_mask is not None:  # canonical as given (rank 4: _key)
        p.mask = attn_mask._n
        p.mask_shape = tuple(p.mask.shape)
    return p


def clear() -> None:
    """Forget every plan (after a change to kernel rules or costs)."""
    _plans.clear()


def _tensor_class():
    from .._tensor.tensor import Tensor

    _Tensor[0] = Tensor
    return Tensor


_Tensor = [None]
