"""``tdx.nn.modules``: the module classes: the base ``Module`` and containers, layers, activations,
losses, normalizations, dropout, embeddings, recurrent layers, attention and the transformer,
convolutions, pooling, padding, resampling and batch/instance norm.

Each module builds on ``tdx.nn.functional``, so it runs and differentiates on every executor.
Must never import torch or mlx.
"""

from __future__ import annotations

from .activation import *  # noqa: F401,F403
from .activation import __all__ as _activation_all
from .attention import MultiheadAttention, NonDynamicallyQuantizableLinear  # noqa: F401
from .batchnorm import *  # noqa: F401,F403
from .batchnorm import __all__ as _batchnorm_all
from .channelshuffle import ChannelShuffle
from .conv import *  # noqa: F401,F403
from .conv import __all__ as _conv_all
from .container import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from .distance import CosineSimilarity, PairwiseDistance
from .dropout import *  # noqa: F401,F403
from .dropout import __all__ as _dropout_all
from .factory import Container, factory_kwargs
from .flatten import Flatten, Identity, Unflatten
from .linear import Bilinear, LazyLinear, Linear
from .loss import *  # noqa: F401,F403
from .loss import __all__ as _loss_all
from .module import Module
from .normalization import GroupNorm, LayerNorm, LocalResponseNorm, RMSNorm
from .padding import *  # noqa: F401,F403
from .padding import __all__ as _padding_all
from .pooling import *  # noqa: F401,F403
from .pooling import __all__ as _pooling_all
from .resampling import *  # noqa: F401,F403
from .resampling import __all__ as _resampling_all
from .rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase
from .sparse import Embedding, EmbeddingBag
from .transformer import (Transformer, TransformerDecoder, TransformerDecoderLayer, TransformerEncoder,
                          TransformerEncoderLayer)

__all__ = ["Module", "Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict", "Identity",
           "Flatten", "Unflatten", "Linear", "Bilinear", "LazyLinear", "Embedding", "EmbeddingBag", "LayerNorm",
           "GroupNorm", "RMSNorm", "LocalResponseNorm", "ChannelShuffle", "CosineSimilarity", "PairwiseDistance",
           "RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell", "MultiheadAttention",
           "Transformer", "TransformerEncoder", "TransformerDecoder", "TransformerEncoderLayer",
           "TransformerDecoderLayer", *_activation_all, *_dropout_all, *_loss_all]
__all__ += ["Container", "factory_kwargs", *_batchnorm_all, *_conv_all, *_padding_all, *_pooling_all,
            *_resampling_all]
