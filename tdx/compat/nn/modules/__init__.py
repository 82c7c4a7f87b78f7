"""``tdx.nn.modules``: the module classes (base ``Module``, containers, flatten/identity).

Must never import torch or mlx.
"""

from __future__ import annotations

from .container import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from .flatten import Flatten, Identity, Unflatten
from .module import Module

__all__ = ["Module", "Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict", "Identity",
           "Flatten", "Unflatten"]

# recurrent layers (nn-seq)
from .rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase  # noqa: E402

__all__ += ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

# attention (nn-seq)
from .attention import MultiheadAttention, NonDynamicallyQuantizableLinear  # noqa: E402

__all__ += ["MultiheadAttention"]

# transformer (nn-seq)
from .transformer import (Transformer, TransformerDecoder, TransformerDecoderLayer, TransformerEncoder,  # noqa: E402
                          TransformerEncoderLayer)

__all__ += ["Transformer", "TransformerEncoder", "TransformerDecoder", "TransformerEncoderLayer",
            "TransformerDecoderLayer"]
