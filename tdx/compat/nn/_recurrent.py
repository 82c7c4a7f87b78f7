"""Functional cores of the recurrent layers: torch's RNN (tanh/relu), LSTM and GRU recurrences.

The cells and the layer loops follow the op order of torch's CPU implementation (ATen's
``RNN.cpp``): the input projection of a whole layer is computed once (``linear`` over every step),
each step adds the hidden projection to it, LSTM gates are chunked ``i, f, g, o`` and GRU gates
``r, z, n`` with ``n = tanh(W_in x + b_in + r * (W_hn h + b_hn))`` and ``h' = (h - n) * z + n``.
Packed sequences are run step by step with shrinking (forward) or growing (reverse) batches, as
torch's packed layers. Everything is composed from tdx tensor ops, so it runs and
differentiates on every executor (torch's autograd, or tdx's tape on MLX); an LSTM or GRU step's gates run
as one call of the executor's ``lstm_gates``/``gru_gates`` kernel where it has one (MLX: one tape node in
place of ten), the same ops in the same order.

This module must never import torch or mlx, and holds no state: the modules in
``modules/rnn.py`` own the parameters.
"""

from __future__ import annotations

import tdx

from ._kernels import NOT_NATIVE, fused_gru_gates, fused_lstm_gates
from ._layers import dropout as _dropout
from ._layers import linear

__all__ = ["rnn_tanh_cell", "rnn_relu_cell", "lstm_cell", "gru_cell", "run_rnn", "GATES"]

GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


# one step, given the input projection ``gi = W_ih x + b_ih`` -------------------------------------------------
def _simple_step(act):
    def step(gi, h, w):
        return act(linear(h, w[1], w[3]) + gi)
    return step


def _lstm_step(gi, hidden, w):
    h, c = hidden
    gh = linear(h, w[1], w[3])
    fused = fused_lstm_gates(gh, gi, c)  # the executor's kernel for what follows, where it has one (MLX)
    if fused is not NOT_NATIVE:
        hy, cy = fused
    else:
        i, f, g, o = (gh + gi).chunk(4, 1)
        i, f, g, o = i.sigmoid(), f.sigmoid(), g.tanh(), o.sigmoid()
        cy = f * c + i * g
        hy = o * cy.tanh()
    if w[4] is not None:
        hy = hy.matmul(w[4].t())
    return hy, cy


def _gru_step(gi, h, w):
    gh = linear(h, w[1], w[3])
    fused = fused_gru_gates(gh, gi, h)  # the executor's kernel for what follows, where it has one (MLX)
    if fused is not NOT_NATIVE:
        return fused
    i_r, i_z, i_n = gi.chunk(3, 1)
    h_r, h_z, h_n = gh.chunk(3, 1)
    r = (h_r + i_r).sigmoid()
    z = (h_z + i_z).sigmoid()
    n = (i_n + h_n * r).tanh()
    return (h - n) * z + n


_STEPS = {"RNN_TANH": _simple_step(lambda t: t.tanh()), "RNN_RELU": _simple_step(lambda t: t.relu()),
          "LSTM": _lstm_step, "GRU": _gru_step}


# the cells (torch.rnn_tanh_cell, torch.lstm_cell...) ---------------------------------------------------------
def rnn_tanh_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):  # noqa: A002 - torch's name
    """One Elman step ``tanh(W_ih x + b_ih + W_hh h + b_hh)`` for a ``(B, I)`` input and ``(B, H)`` state."""
    return _STEPS["RNN_TANH"](linear(input, w_ih, b_ih), hx, (w_ih, w_hh, b_ih, b_hh, None))


def rnn_relu_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):  # noqa: A002 - torch's name
    """One Elman step with ReLU: ``relu(W_ih x + b_ih + W_hh h + b_hh)``."""
    return _STEPS["RNN_RELU"](linear(input, w_ih, b_ih), hx, (w_ih, w_hh, b_ih, b_hh, None))


def lstm_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):  # noqa: A002 - torch's name
    """One LSTM step; ``hx`` is ``(h, c)``; returns ``(h', c')``."""
    return _lstm_step(linear(input, w_ih, b_ih), tuple(hx), (w_ih, w_hh, b_ih, b_hh, None))


def gru_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):  # noqa: A002 - torch's name
    """One GRU step (gates ``r, z, n`` in torch's order); returns ``h'``."""
    return _gru_step(linear(input, w_ih, b_ih), hx, (w_ih, w_hh, b_ih, b_hh, None))


# hidden-state helpers: a state is a tensor, or a (h, c) tuple for LSTM ------------------------------------------
def _slice(hidden, start, stop):
    if isinstance(hidden, tuple):
        return tuple(t.narrow(0, start, stop - start) for t in hidden)
    return hidden.narrow(0, start, stop - start)


def _concat(hiddens):
    if isinstance(hiddens[0], tuple):
        return tuple(tdx.cat([h[k] for h in hiddens], 0) for k in range(len(hiddens[0])))
    return tdx.cat(hiddens, 0)


def _output(hidden):
    return hidden[0] if isinstance(hidden, tuple) else hidden


# one direction of one layer ------------------------------------------------------------------------------------
def _full_layer(step, x, hidden, w, reverse):
    gi = linear(x, w[0], w[2])
    steps = gi.unbind(0)
    outputs = []
    for g in (reversed(steps) if reverse else steps):
        hidden = step(g, hidden, w)
        outputs.append(_output(hidden))
    if reverse:
        outputs.reverse()
    return tdx.stack(outputs, 0), hidden


def _packed_layer(step, data, batch_sizes, hidden, w):
    gi = linear(data, w[0], w[2])
    outputs, finished, offset, last = [], [], 0, batch_sizes[0]
    for bs in batch_sizes:
        g = gi.narrow(0, offset, bs)
        offset += bs
        if last > bs:  # sequences that ended keep their last state
            finished.append(_slice(hidden, bs, last))
            hidden = _slice(hidden, 0, bs)
        last = bs
        hidden = step(g, hidden, w)
        outputs.append(_output(hidden))
    finished.append(hidden)
    finished.reverse()
    return tdx.cat(outputs, 0), _concat(finished)


def _reversed_packed_layer(step, data, batch_sizes, initial, w):
    gi = linear(data, w[0], w[2])
    offset, last = data.shape[0], batch_sizes[-1]
    hidden = _slice(initial, 0, last)
    outputs = []
    for bs in reversed(batch_sizes):
        if bs > last:  # sequences that start later join with their initial state
            hidden = _concat([hidden, _slice(initial, last, bs)])
        g = gi.narrow(0, offset - bs, bs)
        offset -= bs
        last = bs
        hidden = step(g, hidden, w)
        outputs.append(_output(hidden))
    outputs.reverse()
    return tdx.cat(outputs, 0), hidden


def run_rnn(mode, input, hx, weights, num_layers, dropout, training, bidirectional,  # noqa: A002, PLR0913
            batch_sizes=None):
    """Run a stack of recurrent layers as torch's ``_VF.rnn_tanh`` / ``lstm`` / ``gru`` do.

    Args:
        mode: ``"RNN_TANH"``, ``"RNN_RELU"``, ``"LSTM"`` or ``"GRU"``.
        input: ``(T, B, I)`` (time first), or the ``(N, I)`` data of a packed sequence.
        hx: ``(L * D, B, H_out)``, or ``(h, c)`` for LSTM.
        weights: one ``(w_ih, w_hh, b_ih, b_hh, w_hr)`` tuple per layer and direction, in torch's order
            (``b_*`` and ``w_hr`` may be None).
        num_layers, dropout, training, bidirectional: as the module's.
        batch_sizes: the packed sequence's batch sizes (a list of ints), or None for a padded input.

    Returns:
        ``(output, h_n)`` (``h_n`` a ``(h, c)`` tuple for LSTM).
    """
    step = _STEPS[mode]
    dirs = 2 if bidirectional else 1
    is_lstm = mode == "LSTM"
    finals = []
    layer_input = input
    for layer in range(num_layers):
        outs = []
        for d in range(dirs):
            idx = layer * dirs + d
            h0 = (hx[0][idx], hx[1][idx]) if is_lstm else hx[idx]
            w = weights[idx]
            if batch_sizes is None:
                out, hn = _full_layer(step, layer_input, h0, w, reverse=d == 1)
            elif d == 0:
                out, hn = _packed_layer(step, layer_input, batch_sizes, h0, w)
            else:
                out, hn = _reversed_packed_layer(step, layer_input, batch_sizes, h0, w)
            outs.append(out)
            finals.append(hn)
        layer_output = outs[0] if dirs == 1 else tdx.cat(outs, outs[0].ndim - 1)
        if dropout != 0 and training and layer < num_layers - 1:
            layer_output = _dropout(layer_output, dropout, True)
        layer_input = layer_output
    if is_lstm:
        h_n = (tdx.stack([f[0] for f in finals], 0), tdx.stack([f[1] for f in finals], 0))
    else:
        h_n = tdx.stack(finals, 0)
    return layer_input, h_n
