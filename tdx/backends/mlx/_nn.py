"""MLX-executor neural-network kernels, a mixin of the MLX executor: linear maps, convolution,
layer norm, the LSTM and GRU cells' gates and cross entropy.

``conv_nd`` takes torch's channels-first layouts (input ``(N, C, *spatial)``, weight
``(O, C / groups, *kernel)``) and runs ``mx.conv_general`` in MLX's channels-last layout;
transposed convolutions reach it as input-dilated, kernel-flipped convolutions. Every
argument used here is differentiable under ``mx.vjp``, which is how tdx's tape takes its
gradients. Must never import torch or tdx's facade.

``linear_last`` keeps each weight's transpose beside it (:func:`transposed`): an MLX array never changes, so
the transpose of one weight array is made once and, computed with the first graph that uses it, is a
constant from then on instead of a node of every call's graph. A weight written in place is a new array
(tdx rebinds the tensor), so it gets its own.
"""

from __future__ import annotations

import weakref

import mlx.core as mx

_TRANSPOSED: dict = {}  # id(array) -> (weak reference to it, its transpose); an entry dies with its array


def transposed(w, s):
    """``w.T`` on stream ``s``, the same array for every call with the same ``w`` while ``w`` lives."""
    key = id(w)
    entry = _TRANSPOSED.get(key)
    if entry is not None and entry[0]() is w:
        return entry[1]
    t = mx.transpose(w, stream=s)
    _TRANSPOSED[key] = (weakref.ref(w, lambda _ref: _TRANSPOSED.pop(key, None)), t)
    return t


class MLXNNOps:
    """Convolution on MLX arrays in torch's layouts; layer norm over the last axis."""

    __slots__ = ()

    def linear_last(self, x, w, b):
        """``x @ w.T + b`` (``b`` may be None) of float32 arrays: the product and the sum rounded as
        the composed ``matmul`` and ``add`` round them, in one call (one tape node)."""
        s = self._stream or self.s  # both calls name it: the per-op path
        entry = _TRANSPOSED.get(id(w))  # transposed's lookup, inlined: every nn.Linear of an MLX model
        y = mx.matmul(x, entry[1] if entry is not None and entry[0]() is w else transposed(w, s), stream=s)
        return y if b is None else mx.add(y, b, stream=s)

    def lstm_gates(self, hidden_part, input_part, c):
        """One LSTM step after its two projections, float32 arrays, as torch's cell: ``gates = hidden_part +
        input_part`` (``(B, 4H)`` each), chunked ``i, f, g, o``; returns ``(h', c')`` with
        ``c' = sigmoid(f) c + sigmoid(i) tanh(g)`` and ``h' = sigmoid(o) tanh(c')``, by the executor's own
        ``sigmoid`` and ``tanh`` (torch's rounding): the ops of the composed cell in one call (one tape node
        in place of ten)."""
        s = self.s
        i, f, g, o = mx.split(mx.add(hidden_part, input_part, stream=s), 4, axis=1, stream=s)
        c = mx.add(mx.multiply(self.sigmoid(f), c, stream=s), mx.multiply(self.sigmoid(i), self.tanh(g), stream=s),
                   stream=s)
        return mx.multiply(self.sigmoid(o), self.tanh(c), stream=s), c

    def gru_gates(self, hidden_part, input_part, h):
        """One GRU step after its two projections, float32 arrays, as torch's cell: ``hidden_part`` and
        ``input_part`` ``(B, 3H)`` chunked ``r, z, n``; ``r = sigmoid(h_r + i_r)``, ``z = sigmoid(h_z + i_z)``,
        ``n = tanh(i_n + h_n r)``; returns ``h' = (h - n) z + n``: the composed cell's ops in one call (one
        tape node in place of eleven)."""
        s = self.s
        i_r, i_z, i_n = mx.split(input_part, 3, axis=1, stream=s)
        h_r, h_z, h_n = mx.split(hidden_part, 3, axis=1, stream=s)
        r, z = self.sigmoid(mx.add(h_r, i_r, stream=s)), self.sigmoid(mx.add(h_z, i_z, stream=s))
        n = self.tanh(mx.add(i_n, mx.multiply(h_n, r, stream=s), stream=s))
        return mx.add(mx.multiply(mx.subtract(h, n, stream=s), z, stream=s), n, stream=s)

    def layer_norm_last(self, x, weight, bias, eps: float):
        """Layer norm of float32 ``x`` over its last axis, scaled by ``weight`` and shifted by ``bias``
        (each of that axis's size, or None): MLX's ``mx.fast.layer_norm``, with its own derivative."""
        return mx.fast.layer_norm(x, weight, bias, eps, stream=self.s)

    @staticmethod
    def conv_supports(dtype_name: str) -> bool:
        """Whether ``conv_nd`` runs this dtype (MLX's convolution has no float64 kernel)."""
        return dtype_name in ("float32", "float16", "bfloat16")

    def conv_nd(self, x, w, stride, padding_lo, padding_hi, dilation, input_dilation, groups, flip):
        """An N-d convolution (cross-correlation unless ``flip``) of channels-first arrays.

        Args:
            x: ``(N, C, *spatial)``.
            w: ``(O, C // groups, *kernel)``.
            stride, padding_lo, padding_hi, dilation, input_dilation: one int per spatial dim.
            groups: the number of channel groups.
            flip: flip the kernel spatially (a true convolution, used by transposed convolution).

        Returns:
            ``(N, O, *out_spatial)``.
        """
        nd = x.ndim - 2
        xl = mx.moveaxis(x, 1, -1)
        wl = mx.moveaxis(w, 1, -1)
        kw = dict(stride=list(stride), padding=(list(padding_lo), list(padding_hi)), kernel_dilation=list(dilation),
                  input_dilation=list(input_dilation), flip=flip, stream=self.s)
        if groups > 1 and nd > 2:  # MLX groups only 1-D and 2-D convolutions: one call per group
            xs = mx.split(xl, groups, axis=-1)
            ws = mx.split(wl, groups, axis=0)
            out = mx.concatenate([mx.conv_general(a, b, groups=1, **kw) for a, b in zip(xs, ws)], axis=-1)
        else:
            out = mx.conv_general(xl, wl, groups=groups, **kw)
        return mx.moveaxis(out, -1, 1)

    @staticmethod
    def cross_entropy_rows(x, t, ignore_index: int, reduction: str):
        """Cross entropy of logits ``x`` ``(N, C)`` against class indices ``t`` ``(N,)`` in one
        expression (``logsumexp - x[t]``), as native MLX code writes it: no ``(N, C)``
        log-probabilities are kept for the backward (tdx's tape re-runs this under ``mx.vjp``).

        Targets equal to ``ignore_index`` count for nothing (and not in the mean's count, which is
        NaN when every target is ignored, as torch's). The targets must already be in range.
        """
        valid = t != ignore_index
        safe = mx.where(valid, t, 0).astype(mx.int32)
        picked = mx.take_along_axis(x, safe[:, None], axis=1)[:, 0]
        loss = mx.where(valid, mx.logsumexp(x, axis=1) - picked, mx.zeros((), x.dtype))
        if reduction == "none":
            return loss
        if reduction == "sum":
            return loss.sum()
        count = valid.sum().astype(x.dtype)
        none = count == 0  # NaN, with a zero (not NaN) gradient, when every target is ignored
        return mx.where(none, mx.array(float("nan"), x.dtype), loss.sum() / mx.where(none, 1, count))
