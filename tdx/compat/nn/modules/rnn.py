"""Recurrent modules of ``tdx.nn``: ``RNN``, ``LSTM``, ``GRU`` and their single-step cells.

Parameter names, shapes, registration order and default initialisation (``uniform_(-1/sqrt(H),
1/sqrt(H))`` over ``parameters()`` in order) are torch's, so a torch state dict loads and, for the
same seed on the cpu executor, the parameters are torch's bit for bit. On a torch executor the
layers call torch's fused kernels through :mod:`.._native_rnn` (bit-exact with torch); elsewhere
they run the composed recurrence of :mod:`.._recurrent`, differentiable on every executor.

This module must never import torch or mlx.
"""

from __future__ import annotations

import math
import numbers
import warnings

import tdx

from .. import _native_rnn
from .._recurrent import GATES, gru_cell, lstm_cell, rnn_relu_cell, rnn_tanh_cell, run_rnn
from ..parameter import Parameter
from ..utils.rnn import PackedSequence
from .module import Module

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]


class RNNBase(Module):
    """The shared machinery of :class:`RNN`, :class:`LSTM` and :class:`GRU` (torch's ``nn.RNNBase``).

    Args:
        mode: ``"RNN_TANH"``, ``"RNN_RELU"``, ``"LSTM"`` or ``"GRU"``.
        input_size, hidden_size: features of the input and of the hidden state.
        num_layers: stacked recurrent layers (default 1).
        bias: whether the layers have ``b_ih`` and ``b_hh``.
        batch_first: inputs and outputs are ``(B, T, *)`` instead of ``(T, B, *)``.
        dropout: dropout probability on the outputs of every layer but the last (training only).
        bidirectional: add a reverse direction to every layer.
        proj_size: LSTM only: project the hidden state to this size (0 = no projection).
        device, dtype: where and how the parameters are created.

    Raises:
        TdxValueError: a bad ``dropout``, ``num_layers``, ``proj_size``, ``hidden_size`` or ``mode``.
        TdxTypeError: a ``hidden_size`` or ``num_layers`` that is not an int.
    """

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__()
        if mode not in GATES:
            raise tdx.TdxValueError(f"Unrecognized RNN mode: {mode} (expected one of {list(GATES)})")
        if (not isinstance(dropout, numbers.Number) or isinstance(dropout, bool) or not 0 <= dropout <= 1):
            raise tdx.TdxValueError("dropout should be a number in range [0, 1] representing the probability of an "
                                    f"element being zeroed, got {dropout!r}")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so non-zero dropout "
                          f"expects num_layers greater than 1, but got dropout={dropout} and num_layers={num_layers}",
                          UserWarning, stacklevel=2)
        if not isinstance(hidden_size, int) or isinstance(hidden_size, bool):
            raise tdx.TdxTypeError(f"hidden_size should be of type int, got: {type(hidden_size).__name__}")
        if hidden_size <= 0:
            raise tdx.TdxValueError(f"hidden_size must be greater than zero, got {hidden_size}")
        if not isinstance(num_layers, int) or isinstance(num_layers, bool):
            raise tdx.TdxTypeError(f"num_layers should be of type int, got: {type(num_layers).__name__}")
        if num_layers <= 0:
            raise tdx.TdxValueError(f"num_layers must be greater than zero, got {num_layers}")
        if proj_size < 0:
            raise tdx.TdxValueError(f"proj_size should be a positive integer or zero to disable projections, got "
                                    f"{proj_size}")
        if proj_size >= hidden_size:
            raise tdx.TdxValueError(f"proj_size has to be smaller than hidden_size (got proj_size={proj_size}, "
                                    f"hidden_size={hidden_size})")
        if proj_size and mode != "LSTM":
            raise tdx.TdxValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        dirs = 2 if bidirectional else 1
        gate_size = GATES[mode] * hidden_size
        real_hidden = proj_size if proj_size > 0 else hidden_size
        names = []
        for layer in range(num_layers):
            for d in range(dirs):
                layer_in = input_size if layer == 0 else real_hidden * dirs
                sfx = "_reverse" if d == 1 else ""
                shapes = [("weight_ih", (gate_size, layer_in)), ("weight_hh", (gate_size, real_hidden))]
                if bias:
                    shapes += [("bias_ih", (gate_size,)), ("bias_hh", (gate_size,))]
                if proj_size > 0:
                    shapes.append(("weight_hr", (proj_size, hidden_size)))
                for key, shape in shapes:
                    name = f"{key}_l{layer}{sfx}"
                    setattr(self, name, Parameter(tdx.empty(shape, device=device, dtype=dtype)))
                    names.append(name)
        self._flat_weights_names = names
        self.reset_parameters()

    @property
    def _flat_weights(self) -> list:
        return [getattr(self, n) for n in self._flat_weights_names]

    @property
    def all_weights(self) -> list:
        """The parameters grouped per layer and direction, as torch's ``all_weights``."""
        per = len(self._flat_weights_names) // (self.num_layers * (2 if self.bidirectional else 1))
        flat = self._flat_weights
        return [flat[i:i + per] for i in range(0, len(flat), per)]

    def flatten_parameters(self) -> None:
        """No effect here (torch packs cuDNN weights into one buffer); kept for code that calls it."""

    def reset_parameters(self) -> None:
        """Draw every parameter from ``U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))``, in order."""
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        with tdx.no_grad():  # what nn.init.uniform_ does, draw for draw
            for weight in self.parameters():
                weight.uniform_(-stdv, stdv)

    def _weights_per_direction(self) -> list:
        """One ``(w_ih, w_hh, b_ih, b_hh, w_hr)`` tuple per layer and direction."""
        dirs = 2 if self.bidirectional else 1
        out = []
        for layer in range(self.num_layers):
            for d in range(dirs):
                sfx = f"_l{layer}{'_reverse' if d == 1 else ''}"
                out.append(tuple(getattr(self, k + sfx, None)
                                 for k in ("weight_ih", "weight_hh", "bias_ih", "bias_hh", "weight_hr")))
        return out

    # checks --------------------------------------------------------------------------------------------------
    def check_input(self, input, batch_sizes) -> None:  # noqa: A002 - torch's name
        weight = self._flat_weights[0]
        if input.dtype is not weight.dtype:
            raise tdx.TdxValueError(f"input must have the type {weight.dtype}, got type {input.dtype}")
        expected = 2 if batch_sizes is not None else 3
        if input.ndim != expected:
            raise tdx.ShapeError(f"input must have {expected} dimensions, got {input.ndim}")
        if self.input_size != input.shape[-1]:
            raise tdx.ShapeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, "
                                 f"got {input.shape[-1]}")

    def get_expected_hidden_size(self, input, batch_sizes) -> tuple:  # noqa: A002 - torch's name
        if batch_sizes is not None:
            mini_batch = int(batch_sizes[0])
        else:
            mini_batch = input.shape[0] if self.batch_first else input.shape[1]
        dirs = 2 if self.bidirectional else 1
        real_hidden = self.proj_size if self.proj_size > 0 else self.hidden_size
        return (self.num_layers * dirs, mini_batch, real_hidden)

    @staticmethod
    def check_hidden_size(hx, expected, msg="Expected hidden size {}, got {}") -> None:
        if tuple(hx.shape) != tuple(expected):
            raise tdx.ShapeError(msg.format(tuple(expected), list(hx.shape)))

    def check_forward_args(self, input, hidden, batch_sizes) -> None:  # noqa: A002 - torch's name
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden, self.get_expected_hidden_size(input, batch_sizes))

    @staticmethod
    def permute_hidden(hx, permutation):
        if permutation is None:
            return hx
        return hx.index_select(1, permutation)

    # running --------------------------------------------------------------------------------------------------
    def _run(self, input, hx, batch_sizes):  # noqa: A002 - torch's name
        flat = self._flat_weights
        states = list(hx) if isinstance(hx, tuple) else [hx]
        if _native_rnn.applies(input, *states, *flat):
            return _native_rnn.run(self.mode, input, hx, flat, self.bias, self.num_layers, self.dropout,
                                   self.training, self.bidirectional, self.batch_first, batch_sizes)
        sizes = None if batch_sizes is None else [int(v) for v in batch_sizes.tolist()]
        x = input.transpose(0, 1) if (self.batch_first and sizes is None) else input
        output, h_n = run_rnn(self.mode, x, hx, self._weights_per_direction(), self.num_layers, self.dropout,
                              self.training, self.bidirectional, sizes)
        if self.batch_first and sizes is None:
            output = output.transpose(0, 1)
        return output, h_n

    def _prepare(self, input, hx, name):  # noqa: A002 - torch's name
        """Unpack a PackedSequence, add the batch dim of an unbatched input; shared by every subclass."""
        if isinstance(input, PackedSequence):
            data, batch_sizes, sorted_indices, unsorted_indices = input
            return data, batch_sizes, sorted_indices, unsorted_indices, True, int(batch_sizes[0])
        if input.ndim not in (2, 3):
            raise tdx.TdxValueError(f"{name}: Expected input to be 2D or 3D, got {input.ndim}D tensor instead")
        batched = input.ndim == 3
        if not batched:
            input = input.unsqueeze(0 if self.batch_first else 1)
        batch = input.shape[0] if self.batch_first else input.shape[1]
        return input, None, None, None, batched, batch

    def _wrap_output(self, output, batch_sizes, sorted_indices, unsorted_indices, batched):
        if batch_sizes is not None:
            return PackedSequence(output, batch_sizes, sorted_indices, unsorted_indices)
        if not batched:
            return output.squeeze(0 if self.batch_first else 1)
        return output

    def _zeros(self, input, batch, size):  # noqa: A002 - torch's name
        dirs = 2 if self.bidirectional else 1
        return tdx.zeros(self.num_layers * dirs, batch, size, dtype=input.dtype, device=input.device)

    def extra_repr(self) -> str:
        s = "{input_size}, {hidden_size}"
        if self.proj_size != 0:
            s += ", proj_size={proj_size}"
        if self.num_layers != 1:
            s += ", num_layers={num_layers}"
        if self.bias is not True:
            s += ", bias={bias}"
        if self.batch_first is not False:
            s += ", batch_first={batch_first}"
        if self.dropout != 0:
            s += ", dropout={dropout}"
        if self.bidirectional is not False:
            s += ", bidirectional={bidirectional}"
        return s.format(**self.__dict__)

    def forward(self, input, hx=None):  # noqa: A002 - torch's name
        """Run the (tanh/relu RNN or GRU) layers; see :class:`RNN`. LSTM overrides this."""
        name = "RNN" if self.mode.startswith("RNN") else self.mode
        input, batch_sizes, sorted_indices, unsorted_indices, batched, batch = self._prepare(input, hx, name)
        if hx is None:
            hx = self._zeros(input, batch, self.hidden_size)
        elif batch_sizes is None and not batched:
            if hx.ndim != 2:
                raise tdx.ShapeError(f"For unbatched 2-D input, hx should also be 2-D but got {hx.ndim}-D tensor")
            hx = hx.unsqueeze(1)
        else:
            if batch_sizes is None and hx.ndim != 3:
                raise tdx.ShapeError(f"For batched 3-D input, hx should also be 3-D but got {hx.ndim}-D tensor")
            hx = self.permute_hidden(hx, sorted_indices)
        self.check_forward_args(input, hx, batch_sizes)
        output, hidden = self._run(input, hx, batch_sizes)
        output = self._wrap_output(output, batch_sizes, sorted_indices, unsorted_indices, batched)
        if batch_sizes is None and not batched:
            hidden = hidden.squeeze(1)
        return output, self.permute_hidden(hidden, unsorted_indices)


class RNN(RNNBase):
    """Elman RNN: ``h_t = act(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)`` with ``act`` tanh or relu.

    Takes torch's arguments: ``RNN(input_size, hidden_size, num_layers=1, nonlinearity='tanh', bias=True,
    batch_first=False, dropout=0.0, bidirectional=False, device=None, dtype=None)`` (positionally too).
    ``forward(input, hx=None)`` returns ``(output, h_n)``; ``input`` may be a :class:`PackedSequence`.

    Raises:
        TdxValueError: an unknown ``nonlinearity``.
    """

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise tdx.TdxValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if len(args) > 3:
            self.nonlinearity = args[3]
            args = args[:3] + args[4:]
            kwargs.pop("nonlinearity", None)
        else:
            self.nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if self.nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif self.nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise tdx.TdxValueError(f"Unknown nonlinearity '{self.nonlinearity}'. Select from 'tanh' or 'relu'.")
        super().__init__(mode, *args, **kwargs)


class LSTM(RNNBase):
    """Long short-term memory layers (gates ``i, f, g, o`` in torch's order), optionally projected.

    ``LSTM(input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
    bidirectional=False, proj_size=0, device=None, dtype=None)``; ``forward(input, hx=None)`` takes
    ``hx = (h_0, c_0)`` and returns ``(output, (h_n, c_n))``.
    """

    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)

    def get_expected_cell_size(self, input, batch_sizes) -> tuple:  # noqa: A002 - torch's name
        expected = self.get_expected_hidden_size(input, batch_sizes)
        return (expected[0], expected[1], self.hidden_size)

    def check_forward_args(self, input, hidden, batch_sizes) -> None:  # noqa: A002 - torch's name
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden[0], self.get_expected_hidden_size(input, batch_sizes),
                               "Expected hidden[0] size {}, got {}")
        self.check_hidden_size(hidden[1], self.get_expected_cell_size(input, batch_sizes),
                               "Expected hidden[1] size {}, got {}")

    @staticmethod
    def permute_hidden(hx, permutation):
        if permutation is None:
            return hx
        return (hx[0].index_select(1, permutation), hx[1].index_select(1, permutation))

    def forward(self, input, hx=None):  # noqa: A002 - torch's name
        input, batch_sizes, sorted_indices, unsorted_indices, batched, batch = self._prepare(input, hx, "LSTM")
        real_hidden = self.proj_size if self.proj_size > 0 else self.hidden_size
        if hx is None:
            hx = (self._zeros(input, batch, real_hidden), self._zeros(input, batch, self.hidden_size))
        else:
            if not isinstance(hx, (tuple, list)) or len(hx) != 2:
                raise tdx.TdxTypeError(f"LSTM expects hx as a tuple (h_0, c_0), got {type(hx).__name__}")
            hx = tuple(hx)
            if batch_sizes is None and not batched:
                if hx[0].ndim != 2 or hx[1].ndim != 2:
                    raise tdx.ShapeError(f"For unbatched 2-D input, hx and cx should also be 2-D but got "
                                         f"({hx[0].ndim}-D, {hx[1].ndim}-D) tensors")
                hx = (hx[0].unsqueeze(1), hx[1].unsqueeze(1))
            else:
                if batch_sizes is None and (hx[0].ndim != 3 or hx[1].ndim != 3):
                    raise tdx.ShapeError(f"For batched 3-D input, hx and cx should also be 3-D but got "
                                         f"({hx[0].ndim}-D, {hx[1].ndim}-D) tensors")
                hx = self.permute_hidden(hx, sorted_indices)
        self.check_forward_args(input, hx, batch_sizes)
        output, hidden = self._run(input, hx, batch_sizes)
        output = self._wrap_output(output, batch_sizes, sorted_indices, unsorted_indices, batched)
        if batch_sizes is None and not batched:
            hidden = (hidden[0].squeeze(1), hidden[1].squeeze(1))
        return output, self.permute_hidden(hidden, unsorted_indices)


class GRU(RNNBase):
    """Gated recurrent unit layers (gates ``r, z, n`` in torch's order).

    ``GRU(input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
    bidirectional=False, device=None, dtype=None)``; ``forward(input, hx=None)`` returns ``(output, h_n)``.
    """

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise tdx.TdxValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)


# cells ---------------------------------------------------------------------------------------------------------
class RNNCellBase(Module):
    """Parameters and checks shared by the cells: ``weight_ih``, ``weight_hh``, ``bias_ih``, ``bias_hh``."""

    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = Parameter(tdx.empty((num_chunks * hidden_size, input_size), device=device, dtype=dtype))
        self.weight_hh = Parameter(tdx.empty((num_chunks * hidden_size, hidden_size), device=device, dtype=dtype))
        if bias:
            self.bias_ih = Parameter(tdx.empty((num_chunks * hidden_size,), device=device, dtype=dtype))
            self.bias_hh = Parameter(tdx.empty((num_chunks * hidden_size,), device=device, dtype=dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def extra_repr(self) -> str:
        s = "{input_size}, {hidden_size}"
        if "bias" in self.__dict__ and self.bias is not True:
            s += ", bias={bias}"
        if "nonlinearity" in self.__dict__ and self.nonlinearity != "tanh":
            s += ", nonlinearity={nonlinearity}"
        return s.format(**self.__dict__)

    def reset_parameters(self) -> None:
        """Draw every parameter from ``U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))``, in order."""
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        with tdx.no_grad():  # what nn.init.uniform_ does, draw for draw
            for weight in self.parameters():
                weight.uniform_(-stdv, stdv)

    def _batch(self, input, hx, name):  # noqa: A002 - torch's name
        if input.ndim not in (1, 2):
            raise tdx.TdxValueError(f"{name}: Expected input to be 1D or 2D, got {input.ndim}D instead")
        for h in (hx if isinstance(hx, tuple) else (hx,)):
            if h is not None and h.ndim not in (1, 2):
                raise tdx.TdxValueError(f"{name}: Expected hidden to be 1D or 2D, got {h.ndim}D instead")
        batched = input.ndim == 2
        if not batched:
            input = input.unsqueeze(0)
        if input.shape[1] != self.input_size:
            raise tdx.ShapeError(f"input has inconsistent input_size: got {input.shape[1]} expected "
                                 f"{self.input_size}")
        return input, batched

    def _state(self, input, hx, batched):  # noqa: A002 - torch's name
        if hx is None:
            return tdx.zeros(input.shape[0], self.hidden_size, dtype=input.dtype, device=input.device)
        hx = hx if batched else hx.unsqueeze(0)
        if tuple(hx.shape) != (input.shape[0], self.hidden_size):
            raise tdx.ShapeError(f"hidden has inconsistent hidden_size or batch: got {tuple(hx.shape)}, expected "
                                 f"{(input.shape[0], self.hidden_size)}")
        return hx


class RNNCell(RNNCellBase):
    """One Elman step: ``RNNCell(input_size, hidden_size, bias=True, nonlinearity='tanh')``; returns ``h'``."""

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=1, device=device, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):  # noqa: A002 - torch's name
        x, batched = self._batch(input, hx, "RNNCell")
        h = self._state(x, hx, batched)
        if self.nonlinearity == "tanh":
            out = rnn_tanh_cell(x, h, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        elif self.nonlinearity == "relu":
            out = rnn_relu_cell(x, h, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        else:
            raise tdx.UnsupportedOpError(f"Unknown nonlinearity: {self.nonlinearity} (expected 'tanh' or 'relu')")
        return out if batched else out.squeeze(0)


class LSTMCell(RNNCellBase):
    """One LSTM step: ``LSTMCell(input_size, hidden_size, bias=True)``; ``forward(input, (h, c))`` returns
    ``(h', c')``."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=4, device=device, dtype=dtype)

    def forward(self, input, hx=None):  # noqa: A002 - torch's name
        x, batched = self._batch(input, tuple(hx) if hx is not None else None, "LSTMCell")
        if hx is None:
            h = c = self._state(x, None, batched)
        else:
            h, c = self._state(x, hx[0], batched), self._state(x, hx[1], batched)
        out = lstm_cell(x, (h, c), self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        return out if batched else (out[0].squeeze(0), out[1].squeeze(0))


class GRUCell(RNNCellBase):
    """One GRU step: ``GRUCell(input_size, hidden_size, bias=True)``; returns ``h'``."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=3, device=device, dtype=dtype)

    def forward(self, input, hx=None):  # noqa: A002 - torch's name
        x, batched = self._batch(input, hx, "GRUCell")
        h = self._state(x, hx, batched)
        out = gru_cell(x, h, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        return out if batched else out.squeeze(0)
