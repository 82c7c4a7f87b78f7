"""Checking and canonicalizing the inputs of one attention call.

``scaled_dot_product_attention`` accepts torch's shapes: query ``(..., Hq, Tq, E)``, key
``(..., Hk, Tk, E)``, value ``(..., Hv, Tk, Ev)`` with broadcastable leading dims, inputs of
rank 2 and up, and a mask broadcastable to ``(..., Hq, Tq, Tk)``. :func:`prepare` checks all
of it (typed errors that name the shapes and the rule broken) and brings the inputs to one
canonical form every kernel works on: rank-4 native arrays ``(B, H, T, E)`` with one batch
size ``B``, key and value with the same head count ``Hk`` dividing ``Hq``, and a rank-4 mask
whose dims are each full or 1. This module must never import a framework and never chooses
a kernel.
"""

from __future__ import annotations

import math

from .. import _dtypes as D
from .._errors import TdxTypeError, mismatch
from ._errors import AttentionDtypeError, AttentionShapeError, AttentionValueError, SDPAError
from ._ops import ops_for

__all__ = ["Params", "prepare"]

_FLOATS = (D.float16, D.bfloat16, D.float32, D.float64)


class Params:
    """Canonical inputs of one call.

    Attributes:
        ex, ops: the executor and its native-op adapter (None if the family has none).
        q, k, v: native arrays ``(B, Hq, Tq, E)``, ``(B, Hk, Tk, E)``, ``(B, Hk, Tk, Ev)``.
        mask: native rank-4 mask or None; ``mask_kind`` is None, ``"bool"`` or ``"float"``;
            ``mask_shape`` and ``mask_dtype`` (a tdx dtype) describe it.
        dropout_p, is_causal, scale: as given (``scale`` resolved to ``1/sqrt(E)`` when None).
        enable_gqa: as given.
        B, Hq, Hk, Tq, Tk, E, Ev: the canonical sizes; ``groups = Hq // Hk``.
        dtype: the tdx dtype of query, key and value.
        requires_grad: whether any of query, key, value records gradients (the framework's autograd
            or tdx's tape).
        mask_requires_grad: whether the mask records gradients.
        seed: the dropout seed, or None to draw one from the executor's generator.
        out_shape: the shape of the result torch would return.
    """

    # a plain instance dict (no __slots__): :meth:`copy` is then one dict copy, on every cached call

    def copy(self) -> "Params":
        """A shallow copy (the same arrays), to rebind some fields without touching this one."""
        c = object.__new__(Params)
        c.__dict__.update(self.__dict__)
        return c

    def signature(self) -> tuple:
        """What a kernel's legality and cost may depend on (the key of the choice cache)."""
        return (self.ex, self.dtype, self.B, self.Hq, self.Hk, self.Tq, self.Tk, self.E, self.Ev,
                self.mask_kind, self.mask_shape, self.mask_dtype, self.dropout_p > 0, self.dropout_p >= 1,
                self.is_causal, self.requires_grad, self.mask_requires_grad)

    def describe(self) -> str:
        """A one-line summary for messages."""
        mask = "none" if self.mask is None else f"{self.mask_kind} {list(self.mask_shape)}"
        return (f"query {list((self.B, self.Hq, self.Tq, self.E))}, key/value heads {self.Hk}, "
                f"Tk {self.Tk}, Ev {self.Ev}, {self.dtype.name}, mask {mask}, dropout_p {self.dropout_p}, "
                f"is_causal {self.is_causal}, on {self.ex.device}")


def _broadcast(shapes, what):
    """Broadcast shapes (tuples) as torch does; None when they do not broadcast."""
    n = max((len(s) for s in shapes), default=0)
    out = []
    for i in range(n):
        dims = {s[len(s) - n + i] for s in shapes if len(s) - n + i >= 0}
        dims.discard(1)
        if len(dims) > 1:
            return None
        out.append(dims.pop() if dims else 1)
    return tuple(out)


def _grad(t, native) -> bool:
    """Whether ``t`` records gradients: natively (torch) or on tdx's tape (``t._ag``)."""
    if getattr(native, "requires_grad", False):
        return True
    m = getattr(t, "_ag", None)
    return m is not None and bool(m.requires_grad)


def _tensor_class():
    from .._tensor.tensor import Tensor

    global _Tensor
    _Tensor = Tensor
    return Tensor


_Tensor = None


def _unwrap(name, t, ex):
    if t.__class__ is not (_Tensor or _tensor_class()):
        raise TdxTypeError(f"scaled_dot_product_attention(): argument '{name}' must be a tdx.Tensor, "
                           f"not {type(t).__name__}")
    if ex is not None and t._ex is not ex:
        raise mismatch("scaled_dot_product_attention", ex.device, t._ex.device)
    return t._n


def prepare(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
            enable_gqa=False) -> Params:
    """Check one call's arguments and return them in canonical form.

    Raises:
        TdxTypeError: an input is not a ``tdx.Tensor``.
        DeviceMismatchError: the inputs live on different executors.
        AttentionDtypeError: query, key, value differ in dtype or are not floating point, or the
            mask is neither bool, float32 nor the query's dtype.
        AttentionShapeError: ranks below 2, mismatched feature or sequence dims, leading dims or
            heads that do not broadcast, heads not divisible for GQA, a mask that does not broadcast.
        AttentionValueError: ``dropout_p`` outside [0, 1] or a non-finite ``scale``.
        SDPAError: ``is_causal`` together with ``attn_mask``.
    """
    qn = _unwrap("query", query, None)
    ex = query._ex
    kn, vn = _unwrap("key", key, ex), _unwrap("value", value, ex)
    mn = None if attn_mask is None else _unwrap("attn_mask", attn_mask, ex)
    dq = ex.dtype(qn)
    if qn.dtype != kn.dtype or qn.dtype != vn.dtype:
        raise AttentionDtypeError(f"Expected query, key, and value to have the same dtype, but got "
                                  f"query.dtype: {dq.name} key.dtype: {ex.dtype(kn).name} and value.dtype: "
                                  f"{ex.dtype(vn).name} instead.")
    if dq not in _FLOATS:
        raise AttentionDtypeError(f"scaled_dot_product_attention expects floating-point query, key and "
                                  f"value (float16, bfloat16, float32, float64), got {dq.name}")
    if dropout_p.__class__ is not float and (isinstance(dropout_p, bool) or not isinstance(dropout_p, (int, float))):
        raise AttentionValueError(f"dropout probability has to be a number between 0 and 1, but got {dropout_p!r}")
    if not 0.0 <= dropout_p <= 1.0:
        raise AttentionValueError(f"dropout probability has to be between 0 and 1, but got {dropout_p!r}")
    if is_causal and attn_mask is not None:
        raise SDPAError("scaled_dot_product_attention: attn_mask must be None when is_causal=True "
                        f"(got a mask of shape {list(ex.shape(mn))}); fold the causal structure into the "
                        "mask, or drop the mask")
    sq, sk, sv = tuple(qn.shape), tuple(kn.shape), tuple(vn.shape)
    p = Params()
    p.ex, p.ops, p.dtype = ex, ops_for(ex), dq
    p.dropout_p, p.is_causal, p.enable_gqa = float(dropout_p), bool(is_causal), bool(enable_gqa)
    p.requires_grad = _grad(query, qn) or _grad(key, kn) or _grad(value, vn)
    p.mask_requires_grad = attn_mask is not None and _grad(attn_mask, mn)
    p.seed = None
    fast = (len(sq) == len(sk) == len(sv) == 4 and sq[0] == sk[0] == sv[0] and sk[1] == sv[1]
            and sk[2] == sv[2] and sq[3] == sk[3]
            and (sq[1] == sk[1] or (enable_gqa and sk[1] and sq[1] % sk[1] == 0)))
    if fast:
        B, H, Tq, E = sq
        p.B, p.Hq, p.Hk, p.Tq, p.Tk, p.E, p.Ev = B, H, sk[1], Tq, sk[2], E, sv[3]
        p.q, p.k, p.v = qn, kn, vn
        p.out_shape = (B, H, Tq, sv[3])
        lead, rank = (B,), 4
    else:
        lead, rank = _general(p, qn, kn, vn, sq, sk, sv, enable_gqa)
    p.groups = p.Hq // p.Hk
    E = p.E
    if scale is None:
        p.scale = 1.0 / math.sqrt(E) if E else 1.0
    else:
        p.scale = float(scale)
        if not math.isfinite(p.scale):
            raise AttentionValueError(f"scale must be a finite number, got {scale!r}")
    _prepare_mask(p, ex, mn, lead, rank)
    return p


def _general(p, qn, kn, vn, sq, sk, sv, enable_gqa):
    """The general shape rules (any rank >= 2, broadcasting, GQA); fills ``p``'s sizes and arrays."""
    ops = p.ops
    if min(len(sq), len(sk), len(sv)) < 2:
        raise AttentionShapeError(f"Expected query, key, and value to all be at least 2 dimensional, but "
                                  f"got query {list(sq)}, key {list(sk)}, value {list(sv)}")
    Tq, E = sq[-2:]
    Tk, Ek = sk[-2:]
    Tv, Ev = sv[-2:]
    if Ek != E:
        raise AttentionShapeError(f"query and key must have the same embedding dim (last dim), but got "
                                  f"query {list(sq)} and key {list(sk)}")
    if Tv != Tk:
        raise AttentionShapeError(f"key and value must have the same sequence length (dim -2), but got "
                                  f"key {list(sk)} and value {list(sv)}")
    hq, hk, hv = (s[-3] if len(s) >= 3 else 1 for s in (sq, sk, sv))
    lead = _broadcast([s[:-3] for s in (sq, sk, sv)], "batch")
    if lead is None:
        raise AttentionShapeError(f"the batch dims of query {list(sq)}, key {list(sk)} and value {list(sv)} "
                                  "(all but the last three) do not broadcast")
    if enable_gqa and (hk != hq or hv != hq):
        if hq % hk or hq % hv:
            raise AttentionShapeError(f"Number of heads in key and value must divide the number of heads in "
                                      f"query for grouped-query attention (enable_gqa=True), but got query "
                                      f"heads {hq}, key heads {hk}, value heads {hv} (shapes {list(sq)}, "
                                      f"{list(sk)}, {list(sv)})")
        H = hq
    else:
        H = _broadcast([(hq,), (hk,), (hv,)], "heads")
        if H is None:
            hint = " (pass enable_gqa=True for grouped-query attention)" if hq % hk == 0 and hq % hv == 0 else ""
            raise AttentionShapeError(f"the head dims (dim -3) of query {list(sq)}, key {list(sk)} and value "
                                      f"{list(sv)} must be equal or 1{hint}")
        H = H[0]
    rank = max(len(sq), len(sk), len(sv))
    B = math.prod(lead)
    p.B, p.Hq, p.Tq, p.Tk, p.E, p.Ev = B, H, Tq, Tk, E, Ev
    p.out_shape = (Tq, Ev) if rank == 2 else tuple(lead) + (H, Tq, Ev)
    p.q = _canon(ops, qn, sq, lead, B, H if hq == 1 else hq)
    if hk != hv:  # both divide H: bring both to H heads
        kn = _heads_to(ops, kn, sk, H)
        vn = _heads_to(ops, vn, sv, H)
        hk = H
    p.Hk = hk
    p.k = _canon(ops, kn, sk, lead, B, hk)
    p.v = _canon(ops, vn, sv, lead, B, hk)
    return lead, rank


def _heads_to(ops, x, shape, H):
    h = shape[-3] if len(shape) >= 3 else 1
    if h == H:
        return x
    if h == 1:
        return ops.expand(x, tuple(shape[:-3]) + (H,) + tuple(shape[-2:]))
    return ops.repeat_interleave(x, H // h, len(shape) - 3)


def _canon(ops, x, shape, lead, B, h):
    """``x`` as ``(B, h, T, E)``: leading dims broadcast to ``lead`` and flattened."""
    full = tuple(lead) + (h,) + tuple(shape[-2:])
    if tuple(shape) == full and len(shape) == 4:
        return x
    if len(shape) < 3 or tuple(shape) != full:
        x = ops.expand(ops.reshape(x, (1,) * (len(full) - len(shape)) + tuple(shape)), full)
    return ops_reshape(ops, x, (B, h) + tuple(shape[-2:]))


def _prepare_mask(p, ex, mn, lead, rank) -> None:
    """Check the mask's dtype and shape and bring it to rank 4 (``(b, h, tq, tk)``, each full or 1)."""
    p.mask, p.mask_kind, p.mask_shape, p.mask_dtype = None, None, None, None
    if mn is None:
        return
    md = p.mask_dtype = ex.dtype(mn)
    if md is D.bool_:
        p.mask_kind = "bool"
    elif md is D.float32 or md is p.dtype:
        p.mask_kind = "float"
    else:
        raise AttentionDtypeError(f"Expected attn_mask dtype to be bool or float32 or to match query dtype, "
                                  f"but got attn_mask.dtype: {md.name} and query.dtype: {p.dtype.name}")
    sm = tuple(mn.shape)
    scores = (p.Tq, p.Tk) if rank == 2 else tuple(lead) + (p.Hq, p.Tq, p.Tk)
    ok = len(sm) <= len(scores) and all(m in (1, s) for m, s in zip(sm[::-1], scores[::-1]))
    if not ok:
        raise AttentionShapeError(f"attn_mask of shape {list(sm)} does not broadcast to the attention scores' "
                                  f"shape {list(scores)} (query and key batch dims, query heads, Tq, Tk); "
                                  "each mask dim must equal the scores' dim or be 1")
    padded = (1,) * (len(scores) - len(sm)) + tuple(sm)
    padded = (1,) * max(0, 4 - len(padded)) + padded
    mlead, tail = padded[:-3], padded[-3:]
    if len(padded) == 4:
        mn = ops_reshape(p.ops, mn, padded)
    elif all(d == 1 for d in mlead):
        mn = ops_reshape(p.ops, mn, (1,) + tail)
    else:
        full = tuple(lead) + tail
        mn = p.ops.reshape(p.ops.expand(p.ops.reshape(mn, padded), full), (p.B,) + tail)
    p.mask = mn
    p.mask_shape = tuple(p.ops.shape(mn))


def ops_reshape(ops, x, shape):
    return x if tuple(ops.shape(x)) == tuple(shape) else ops.reshape(x, shape)


def restore(p: Params, out):
    """The canonical ``(B, Hq, Tq, Ev)`` result in the shape torch returns."""
    return ops_reshape(p.ops, out, p.out_shape)
