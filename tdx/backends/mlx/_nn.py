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

On a CPU stream a product runs about twice as fast with its right operand stored row by row as with the
transposed view ``w.T`` (MLX's Linux CPU build hands both to a reference BLAS, whose loop over the transposed
operand's columns does not vectorize), and gives the same bits. So where the caller can rebind the tensor that
owns ``w`` (``linear_last``'s ``offer``), the first product with a weight array makes ``w.T`` once as a
contiguous array and offers, in ``w``'s place, its transpose: the same values, stored column by column, whose
``.T`` is that contiguous array. The memory stays one copy of the weight. :func:`column_major` tells the paths
that hand out an array's memory (NumPy views, DLPack, torch) which arrays are stored so: they hand out a
row-major copy, as torch's contiguous tensors are. A training step's forward (``rows``), whose weights are new
arrays every step and are rebound by nobody, keeps a row-major copy of ``w.T`` while that weight array lives.
"""

from __future__ import annotations

import threading
import weakref

import mlx.core as mx

from ._streams import EVAL_LOCK

# id(array) -> (weak reference to it, its transpose[, kind]); an entry dies with its array. The kind, where
# there is one, says how the transpose was made: _ROWS, a training step's row-major copy of w.T (an inference
# call relays w onto it); _RELAID, the array is a weight linear_last relaid (stored column by column, its
# transpose the contiguous array it was made from)
_TRANSPOSED: dict = {}
_ROWS = "rows"
_RELAID = "relaid"
_ROWS_SAME_BITS: dict = {}  # the device's name -> whether a row-major right operand gives the same bits
_PROBE_LOCK = threading.Lock()


def transposed(w, s, rows: bool = False):
    """``w.T`` on stream ``s``, the same array for every call with the same ``w`` while ``w`` lives; with ``rows``,
    stored row by row (a copy, kept as long as ``w``)."""
    key = id(w)
    entry = _TRANSPOSED.get(key)
    if entry is not None and entry[0]() is w:
        return entry[1]
    t = mx.transpose(w, stream=s)
    ref = weakref.ref(w, lambda _ref: _TRANSPOSED.pop(key, None))
    if rows:  # the kind marks the copy: an inference call relays ``w`` onto it (MLXNNOps.linear_last)
        t = mx.contiguous(t, stream=s)
        _TRANSPOSED[key] = (ref, t, _ROWS)
    else:
        _TRANSPOSED[key] = (ref, t)
    return t


def column_major(x) -> bool:
    """Whether ``x`` is a weight :meth:`MLXNNOps.linear_last` relaid (stored column by column)."""
    entry = _TRANSPOSED.get(id(x))
    return entry is not None and entry[-1] is _RELAID and entry[0]() is x


def _relaid(w, s, t=None):
    """``w``'s values stored column by column (the transpose of a contiguous ``w.T``: ``t`` where a training step
    made one, else computed with the first graph that reads it; nothing is evaluated here), registered so that
    :func:`transposed` returns that contiguous ``w.T``."""
    if t is None:
        t = mx.contiguous(mx.transpose(w, stream=s), stream=s)
    out = mx.transpose(t, stream=s)
    key = id(out)
    _TRANSPOSED[key] = (weakref.ref(out, lambda _ref: _TRANSPOSED.pop(key, None)), t, _RELAID)
    return out


def _rows_same_bits(s) -> bool:
    """Whether products on ``s``'s device take row-major right operands with the same bits as transposed views:
    checked once per device on fixed probe values (vector and matrix left operands, lengths across the BLAS's
    blocks), by one thread while the others wait; only CPU streams are asked (GPU kernels read a transposed
    operand natively)."""
    name = str(s.device)
    known = _ROWS_SAME_BITS.get(name)
    if known is not None:
        return known
    with _PROBE_LOCK:
        return _probe_rows(s, name)


def _probe_rows(s, name: str) -> bool:
    known = _ROWS_SAME_BITS.get(name)
    if known is None:
        same = True
        for m, k, n in ((1, 300, 70), (5, 1100, 33), (16, 64, 129)):
            a = mx.sin(mx.arange(m * k, dtype=mx.float32, stream=s) * 0.37, stream=s).reshape(m, k)
            b = mx.cos(mx.arange(n * k, dtype=mx.float32, stream=s) * 0.23, stream=s).reshape(n, k)
            view = mx.matmul(a, mx.transpose(b, stream=s), stream=s)
            rows = mx.matmul(a, mx.contiguous(mx.transpose(b, stream=s), stream=s), stream=s)
            with EVAL_LOCK:  # one thread evaluates the shared stream at a time
                same = same and bool(mx.array_equal(view, rows, stream=s).item())
        known = _ROWS_SAME_BITS[name] = same
    return known


class MLXNNOps:
    """Convolution on MLX arrays in torch's layouts; layer norm over the last axis."""

    __slots__ = ()

    def linear_last(self, x, w, b, offer=None, rows=False):
        """``x @ w.T + b`` (``b`` may be None) of float32 arrays: the product and the sum rounded as
        the composed ``matmul`` and ``add`` round them, in one call (one tape node).

        Args:
            x, w, b: the input, the weight ``(out, in)`` and the bias or None.
            offer: a list where a caller that will rebind the tensor owning ``w`` (a root, unless it is tracing a
                transformation) takes ``(w, relaid)`` from the first product with ``w`` on a CPU stream:
                ``w``'s values stored column by column, whose products run on a row-major operand (the
                module docstring). None: ``w`` stays as it is.
            rows: where no caller rebinds ``w`` (a training step's forward: its weights are new arrays every
                step), take ``w.T`` row by row on a CPU stream anyway: a copy kept as long as ``w``.
        """
        s = self._stream or self.s  # both calls name it: the per-op path
        entry = _TRANSPOSED.get(id(w))  # transposed's lookup, inlined: every nn.Linear of an MLX model
        if entry is not None and entry[0]() is w:
            t = entry[1]
            if offer is not None and entry[-1] is _ROWS and not self.shares_memory(w):
                offer.append((w, _relaid(w, s, t)))  # a training step's row-major copy: w moves onto it
        elif offer is not None and s.device == mx.cpu and not self.shares_memory(w) and _rows_same_bits(s):
            relaid = _relaid(w, s)
            t = _TRANSPOSED[id(relaid)][1]
            offer.append((w, relaid))
        else:
            t = transposed(w, s, rows and s.device == mx.cpu and _rows_same_bits(s))
        y = mx.matmul(x, t, stream=s)
        return y if b is None else mx.add(y, b, stream=s)

    def linear_prepared(self, w):
        """A function ``(x, b) -> x @ w.T + b`` (``b`` may be None) with :meth:`linear_last`'s values for a weight
        it has already laid out (its transpose kept, no relaying left to offer), or None: what a caller keeps
        beside ``w`` so that every later product of an ``nn.Linear`` in inference is one call."""
        entry = _TRANSPOSED.get(id(w))
        if entry is None or entry[0]() is not w or entry[-1] is _ROWS:
            return None
        t, s = entry[1], self._stream or self.s
        matmul, add = mx.matmul, mx.add

        def product(x, b):
            y = matmul(x, t, stream=s)
            return y if b is None else add(y, b, stream=s)

        return product

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
