"""The one bridge from ``tdx.nn``'s recurrent layers to torch's fused recurrent kernels.

On a torch executor (cpu, cuda, mps) the recurrent layers call torch's own ``_VF.rnn_tanh``,
``_VF.rnn_relu``, ``_VF.lstm`` and ``_VF.gru``: torch's CPU LSTM runs through oneDNN, whose
rounding a composition of tdx ops cannot reproduce, and calling the same kernel makes results,
gradients (torch's autograd) and dropout's random draws equal torch's bit for bit. Every other
executor runs the composed recurrence of :mod:`._recurrent`.

This is the only module of ``tdx.nn`` that touches tensor internals: ``Tensor._n`` (the native
array), ``Tensor._ex`` (its executor) and ``tdx._tensor.wrapping.wrap``. It imports torch only
inside :func:`run`, which is only reached for tensors already on a torch executor; it must never
import mlx.
"""

from __future__ import annotations

from ..._tensor.wrapping import wrap

__all__ = ["applies", "run"]


def applies(*tensors) -> bool:
    """Whether every given tensor (None skipped) lives on a torch executor."""
    return all(t is None or getattr(t._ex, "name", None) == "torch" for t in tensors)


def run(mode, input, hx, flat_weights, has_biases, num_layers, dropout, training, bidirectional,  # noqa: A002
        batch_first, batch_sizes=None):
    """torch's ``_VF.<mode>`` on the native tensors; results wrapped back as tdx tensors.

    Args:
        mode: ``"RNN_TANH"``, ``"RNN_RELU"``, ``"LSTM"`` or ``"GRU"``.
        input: padded input, or a packed sequence's data when ``batch_sizes`` is given.
        hx: the initial state (``(h, c)`` for LSTM).
        flat_weights: the parameters in torch's ``_flat_weights`` order.
        batch_sizes: the packed sequence's ``batch_sizes`` tensor, or None.

    Returns:
        ``(output, h_n)``, with ``h_n`` a ``(h, c)`` tuple for LSTM.
    """
    from torch import _VF  # the executor is torch: torch is already loaded

    ex = input._ex
    fn = {"RNN_TANH": _VF.rnn_tanh, "RNN_RELU": _VF.rnn_relu, "LSTM": _VF.lstm, "GRU": _VF.gru}[mode]
    weights = [w._n for w in flat_weights]
    native_hx = [h._n for h in hx] if mode == "LSTM" else hx._n
    if batch_sizes is None:
        result = fn(input._n, native_hx, weights, has_biases, num_layers, dropout, training, bidirectional,
                    batch_first)
    else:
        sizes = batch_sizes._n if getattr(batch_sizes._ex, "name", None) == "torch" else None
        if sizes is None or sizes.device.type != "cpu":
            import torch
            sizes = torch.tensor(batch_sizes.tolist(), dtype=torch.int64)
        result = fn(input._n, sizes, native_hx, weights, has_biases, num_layers, dropout, training,
                    bidirectional)
    output = wrap(result[0], ex)
    if mode == "LSTM":
        return output, (wrap(result[1], ex), wrap(result[2], ex))
    return output, wrap(result[1], ex)
