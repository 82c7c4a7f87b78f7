"""The ``torch.*`` forms of nn ops, with ATen's signatures (``tdx.batch_norm``, ``tdx.dropout``,
``tdx.kl_div``, ``tdx.lstm``...).

torch exposes many nn ops at top level with the argument order and conventions of its ATen
schema rather than of ``torch.nn.functional``: ``torch.batch_norm(input, weight, bias,
running_mean, running_var, training, momentum, eps, cudnn_enabled)``, ``torch.embedding(weight,
indices)``, losses whose ``reduction`` is an int (0 none, 1 mean, 2 sum), dropouts whose
``train`` is required. Each function here checks those arguments and calls the
``tdx.nn.functional`` implementation, so values, gradients and errors are the functional
ones. ``tdx.nn.functional`` is imported on first call. This module must never import a
framework.
"""

from __future__ import annotations

import importlib
import warnings

from .._errors import TdxRuntimeError, TdxTypeError, TdxValueError

__all__ = ["batch_norm", "instance_norm", "dropout", "dropout_", "alpha_dropout_", "feature_dropout",
           "feature_dropout_", "feature_alpha_dropout_", "embedding", "embedding_renorm_", "kl_div",
           "hinge_embedding_loss", "margin_ranking_loss", "cosine_embedding_loss", "triplet_margin_loss",
           "poisson_nll_loss", "ctc_loss", "binary_cross_entropy_with_logits", "rrelu", "rrelu_", "selu", "selu_",
           "threshold", "threshold_", "rms_norm", "conv_tbc", "convolution", "affine_grid_generator",
           "adaptive_max_pool1d", "gru", "lstm", "rnn_tanh", "rnn_relu", "gru_cell", "lstm_cell", "rnn_tanh_cell",
           "rnn_relu_cell", "norm_except_dim", "batch_norm_stats", "batch_norm_elemt", "batch_norm_update_stats"]

_REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}


def _f():
    return importlib.import_module("tdx.compat.nn.functional")


def _recurrent():
    return importlib.import_module("tdx.compat.nn._recurrent")


def _reduction(value, op: str) -> str:
    if isinstance(value, bool) or value not in _REDUCTIONS:
        raise TdxValueError(f"{op}(): reduction must be 0 (none), 1 (mean) or 2 (sum), but got {value!r}")
    return _REDUCTIONS[value]


def _train(value, op: str) -> bool:
    if not isinstance(value, bool):
        raise TdxTypeError(f"{op}(): argument 'train' must be bool, not {type(value).__name__}")
    return value


def batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps,  # noqa: A002
               cudnn_enabled):
    """``torch.batch_norm``: ``F.batch_norm`` with ATen's argument order (``cudnn_enabled`` is ignored:
    tdx picks the kernel)."""
    return _f().batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps,  # noqa: A002
                  cudnn_enabled):
    """``torch.instance_norm``: ``F.instance_norm`` with ATen's argument order."""
    return _f().instance_norm(input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps)


def dropout(input, p, train):  # noqa: A002
    """``torch.dropout(input, p, train)``."""
    return _f().dropout(input, p, _train(train, "dropout"))


def dropout_(input, p, train):  # noqa: A002
    """In-place ``torch.dropout_``; returns ``input``."""
    return _f().dropout(input, p, _train(train, "dropout_"), inplace=True)


def alpha_dropout_(input, p, train):  # noqa: A002
    """In-place ``torch.alpha_dropout_``; returns ``input``."""
    return _f().alpha_dropout(input, p, _train(train, "alpha_dropout_"), inplace=True)


def feature_alpha_dropout_(input, p, train):  # noqa: A002
    """In-place ``torch.feature_alpha_dropout_``; returns ``input``."""
    return _f().feature_alpha_dropout(input, p, _train(train, "feature_alpha_dropout_"), inplace=True)


def feature_dropout(input, p, train):  # noqa: A002
    """``torch.feature_dropout``: zero whole channels (``input[n, c]``) with probability ``p``, scale the
    rest by ``1 / (1 - p)``.

    Raises:
        TdxValueError: ``p`` outside [0, 1].  TdxRuntimeError: ``input`` has fewer than 2 dimensions.
    """
    from .creation import full

    if not 0 <= p <= 1:
        raise TdxValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not _train(train, "feature_dropout") or p == 0:
        return input.clone() if hasattr(input, "clone") else input
    if input.dim() < 2:
        raise TdxRuntimeError(f"Feature dropout requires at least 2 dimensions in the input, got {input.dim()}")
    if p == 1:
        return input * 0
    shape = tuple(input.shape[:2]) + (1,) * (input.dim() - 2)
    keep = full(shape, 1 - p, dtype=input.dtype, device=input.device).bernoulli()
    return input * keep / (1 - p)


def feature_dropout_(input, p, train):  # noqa: A002
    """In-place ``torch.feature_dropout_``; returns ``input``."""
    return input.copy_(feature_dropout(input, p, train))


def embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    """``torch.embedding(weight, indices, padding_idx=-1, ...)``: rows of ``weight``; ``padding_idx=-1``
    means none (ATen's convention)."""
    if sparse:
        raise TdxValueError("embedding(sparse=True) needs sparse gradients, which tdx does not have; "
                            "pass sparse=False")
    return _f().embedding(indices, weight, None if padding_idx == -1 else padding_idx,
                          scale_grad_by_freq=scale_grad_by_freq)


def embedding_renorm_(input, indices, max_norm, norm_type):  # noqa: A002
    """Rescale in place the rows of ``input`` named by ``indices`` whose ``norm_type``-norm exceeds
    ``max_norm`` to norm ``max_norm`` (ATen's ``max_norm / (norm + 1e-7)``); returns ``input``."""
    from ..autograd.grad_mode import no_grad
    from .creation import ones_like
    from .namespace import where

    with no_grad():
        rows = indices.reshape(-1).unique()
        sel = input.index_select(0, rows)
        norms = sel.norm(p=norm_type, dim=1, keepdim=True)
        scale = where(norms > max_norm, max_norm / (norms + 1e-7), ones_like(norms))
        input.index_copy_(0, rows, sel * scale)
    return input


def kl_div(input, target, reduction=1, *, log_target=False):  # noqa: A002
    """``torch.kl_div`` (``reduction`` an int; 1 is the elementwise mean, as ATen's)."""
    with warnings.catch_warnings():  # ATen's kl_div does not warn about 'mean' as F.kl_div does
        warnings.filterwarnings("ignore", message="reduction: 'mean' divides", category=UserWarning)
        return _f().kl_div(input, target, reduction=_reduction(reduction, "kl_div"), log_target=log_target)


def hinge_embedding_loss(input, target, margin=1.0, reduction=1):  # noqa: A002
    """``torch.hinge_embedding_loss`` (``reduction`` an int)."""
    return _f().hinge_embedding_loss(input, target, margin, reduction=_reduction(reduction, "hinge_embedding_loss"))


def margin_ranking_loss(input1, input2, target, margin=0.0, reduction=1):
    """``torch.margin_ranking_loss`` (``reduction`` an int)."""
    return _f().margin_ranking_loss(input1, input2, target, margin,
                                    reduction=_reduction(reduction, "margin_ranking_loss"))


def cosine_embedding_loss(input1, input2, target, margin=0.0, reduction=1):
    """``torch.cosine_embedding_loss`` (``reduction`` an int)."""
    return _f().cosine_embedding_loss(input1, input2, target, margin,
                                      reduction=_reduction(reduction, "cosine_embedding_loss"))


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2.0, eps=1e-06, swap=False, reduction=1):
    """``torch.triplet_margin_loss`` (``reduction`` an int)."""
    return _f().triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                                    reduction=_reduction(reduction, "triplet_margin_loss"))


def poisson_nll_loss(input, target, log_input, full, eps, reduction):  # noqa: A002
    """``torch.poisson_nll_loss`` (every argument required, ``reduction`` an int)."""
    return _f().poisson_nll_loss(input, target, log_input, full, eps=eps,
                                 reduction=_reduction(reduction, "poisson_nll_loss"))


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction=1, zero_infinity=False):
    """``torch.ctc_loss`` (``reduction`` an int)."""
    return _f().ctc_loss(log_probs, targets, input_lengths, target_lengths, blank,
                         _reduction(reduction, "ctc_loss"), zero_infinity)


def binary_cross_entropy_with_logits(input, target, weight=None, pos_weight=None, reduction=1):  # noqa: A002
    """``torch.binary_cross_entropy_with_logits`` (``reduction`` an int)."""
    return _f().binary_cross_entropy_with_logits(input, target, weight, pos_weight=pos_weight,
                                                 reduction=_reduction(reduction, "binary_cross_entropy_with_logits"))


def rrelu(input, lower=0.125, upper=1.0 / 3.0, training=False, generator=None):  # noqa: A002
    """``torch.rrelu``; a ``generator`` is refused (tdx's rrelu draws from the default generator)."""
    if generator is not None:
        raise TdxValueError("rrelu(generator=...) is not supported by tdx; seed with tdx.manual_seed")
    return _f().rrelu(input, lower, upper, training)


def rrelu_(input, lower=0.125, upper=1.0 / 3.0, training=False, generator=None):  # noqa: A002
    """In-place ``torch.rrelu_``."""
    if generator is not None:
        raise TdxValueError("rrelu_(generator=...) is not supported by tdx; seed with tdx.manual_seed")
    return _f().rrelu_(input, lower, upper, training)


def selu(input):  # noqa: A002
    """``torch.selu``."""
    return _f().selu(input)


def selu_(input):  # noqa: A002
    """In-place ``torch.selu_``."""
    return _f().selu_(input)


def threshold(input, threshold, value):  # noqa: A002
    """``torch.threshold``: ``value`` where ``input <= threshold``, else ``input``."""
    return _f().threshold(input, threshold, value)


def threshold_(input, threshold, value):  # noqa: A002
    """In-place ``torch.threshold_``."""
    return _f().threshold_(input, threshold, value)


def rms_norm(input, normalized_shape, weight=None, eps=None):  # noqa: A002
    """``torch.rms_norm``."""
    return _f().rms_norm(input, normalized_shape, weight, eps)


def conv_tbc(input, weight, bias, pad=0):  # noqa: A002
    """``torch.conv_tbc``: a 1-d convolution over time-batch-channel input ``(T, B, C_in)`` with weight
    ``(K, C_in, C_out)``; returns ``(T', B, C_out)``."""
    out = _f().conv1d(input.permute(1, 2, 0), weight.permute(2, 1, 0), bias, padding=pad)
    return out.permute(2, 0, 1)


def convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups):  # noqa: A002
    """``torch.convolution``: the generic 1/2/3-d (transposed) convolution ATen dispatches to.

    Raises:
        TdxRuntimeError: ``input`` is not 3-, 4- or 5-dimensional.
    """
    nd = input.dim() - 2
    if nd not in (1, 2, 3):
        raise TdxRuntimeError(f"convolution: expected a 3-d, 4-d or 5-d input, got {input.dim()}-d")
    F = _f()
    if transposed:
        return getattr(F, f"conv_transpose{nd}d")(input, weight, bias, tuple(stride), tuple(padding),
                                                  tuple(output_padding), groups, tuple(dilation))
    return getattr(F, f"conv{nd}d")(input, weight, bias, tuple(stride), tuple(padding), tuple(dilation), groups)


def affine_grid_generator(theta, size, align_corners):
    """``torch.affine_grid_generator``: ``F.affine_grid`` with ``align_corners`` required."""
    return _f().affine_grid(theta, list(size), align_corners=align_corners)


def adaptive_max_pool1d(input, output_size):  # noqa: A002
    """``torch.adaptive_max_pool1d``: ``(values, indices)``, as ATen's."""
    return _f().adaptive_max_pool1d(input, output_size, return_indices=True)


def norm_except_dim(v, pow=2, dim=0):  # noqa: A002 - torch's name
    """The ``pow``-norm of ``v`` over every dimension but ``dim`` (kept, size 1 elsewhere); ``dim=-1``
    is the norm of the whole tensor (``torch.norm_except_dim``, used by weight norm)."""
    if dim == -1:
        return v.norm(pow)
    dims = [d for d in range(v.dim()) if d != dim]
    return v.norm(pow, dim=dims, keepdim=True) if dims else v.abs()


def batch_norm_stats(input, eps):  # noqa: A002
    """``(mean, invstd)`` per channel (dim 1) over every other dim, as SyncBatchNorm's first step."""
    dims = [d for d in range(input.dim()) if d != 1]
    mean = input.mean(dims)
    var = input.var(dims, correction=0)
    return mean, (var + eps).rsqrt()


def batch_norm_elemt(input, weight, bias, mean, invstd, eps):  # noqa: A002
    """``(input - mean) * invstd * weight + bias`` per channel (dim 1); ``eps`` is unused, as ATen's."""
    shape = [1, -1] + [1] * (input.dim() - 2)
    out = (input - mean.reshape(shape)) * invstd.reshape(shape)
    if weight is not None:
        out = out * weight.reshape(shape)
    return out + bias.reshape(shape) if bias is not None else out


def batch_norm_update_stats(input, running_mean, running_var, momentum):  # noqa: A002
    """``(mean, unbiased var)`` per channel, and the running statistics updated in place with ``momentum``."""
    from ..autograd.grad_mode import no_grad

    dims = [d for d in range(input.dim()) if d != 1]
    with no_grad():
        mean = input.mean(dims)
        var = input.var(dims, correction=1)
        if running_mean is not None:
            running_mean.mul_(1 - momentum).add_(mean * momentum)
        if running_var is not None:
            running_var.mul_(1 - momentum).add_(var * momentum)
    return mean, input.var(dims, correction=0)


# --- recurrent layers (ATen's input forms) ---------------------------------------------------------------------

def _rnn(mode, input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first):  # noqa: A002
    _native_rnn = importlib.import_module("tdx.compat.nn._native_rnn")
    run_rnn = _recurrent().run_rnn

    states = list(hx) if mode == "LSTM" else [hx]
    params = list(params)
    dirs = 2 if bidirectional else 1
    per = 4 if has_biases else 2
    if len(params) != per * dirs * num_layers:
        raise TdxRuntimeError(f"{mode.lower()}: expected {per * dirs * num_layers} parameters for {num_layers} "
                              f"layer(s), {dirs} direction(s) and has_biases={has_biases}, got {len(params)}")
    if _native_rnn.applies(input, *states, *params):
        out = _native_rnn.run(mode, input, hx if mode != "LSTM" else tuple(states), params, has_biases,
                              num_layers, dropout, train, bidirectional, batch_first)
    else:
        groups = [tuple(params[i:i + per]) for i in range(0, len(params), per)]
        weights = [(g[0], g[1], g[2], g[3], None) if has_biases else (g[0], g[1], None, None, None) for g in groups]
        x = input.transpose(0, 1) if batch_first else input
        out = run_rnn(mode, x, tuple(states) if mode == "LSTM" else hx, weights, num_layers, dropout, train,
                      bidirectional)
        if batch_first:
            out = (out[0].transpose(0, 1), out[1])
    if mode == "LSTM":
        return out[0], out[1][0], out[1][1]
    return out


def gru(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first):  # noqa: A002
    """``torch.gru`` (input form): ``(output, h_n)``."""
    return _rnn("GRU", input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first)


def lstm(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first):  # noqa: A002
    """``torch.lstm`` (input form): ``(output, h_n, c_n)``; ``hx`` is ``[h_0, c_0]``."""
    return _rnn("LSTM", input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first)


def rnn_tanh(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first):  # noqa: A002
    """``torch.rnn_tanh`` (input form): ``(output, h_n)``."""
    return _rnn("RNN_TANH", input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first)


def rnn_relu(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first):  # noqa: A002
    """``torch.rnn_relu`` (input form): ``(output, h_n)``."""
    return _rnn("RNN_RELU", input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first)


def gru_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):  # noqa: A002
    """``torch.gru_cell``: one GRU step."""
    cell = _recurrent().gru_cell
    return cell(input, hx, w_ih, w_hh, b_ih, b_hh)


def lstm_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):  # noqa: A002
    """``torch.lstm_cell``: one LSTM step; ``hx`` is ``[h, c]``; returns ``(h', c')``."""
    cell = _recurrent().lstm_cell
    return cell(input, tuple(hx), w_ih, w_hh, b_ih, b_hh)


def rnn_tanh_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):  # noqa: A002
    """``torch.rnn_tanh_cell``: one tanh RNN step."""
    cell = _recurrent().rnn_tanh_cell
    return cell(input, hx, w_ih, w_hh, b_ih, b_hh)


def rnn_relu_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):  # noqa: A002
    """``torch.rnn_relu_cell``: one ReLU RNN step."""
    cell = _recurrent().rnn_relu_cell
    return cell(input, hx, w_ih, w_hh, b_ih, b_hh)
