"""``tdx.nn.modules``: the module classes (base ``Module``, containers, flatten/identity).

Must never import torch or mlx.
"""

from __future__ import annotations

from .container import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from .flatten import Flatten, Identity, Unflatten
from .module import Module

__all__ = ["Module", "Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict", "Identity",
           "Flatten", "Unflatten"]

# layers, activations, losses, normalizations, dropout, distances and embeddings
from .activation import *  # noqa: E402,F401,F403
from .activation import __all__ as _activation_all  # noqa: E402
from .channelshuffle import ChannelShuffle  # noqa: E402
from .distance import CosineSimilarity, PairwiseDistance  # noqa: E402
from .dropout import *  # noqa: E402,F401,F403
from .dropout import __all__ as _dropout_all  # noqa: E402
from .linear import Bilinear, LazyLinear, Linear  # noqa: E402
from .loss import *  # noqa: E402,F401,F403
from .loss import __all__ as _loss_all  # noqa: E402
from .normalization import GroupNorm, LayerNorm, LocalResponseNorm, RMSNorm  # noqa: E402
from .sparse import Embedding, EmbeddingBag  # noqa: E402

__all__ += ["Linear", "Bilinear", "LazyLinear", "Embedding", "EmbeddingBag", "LayerNorm", "GroupNorm", "RMSNorm",
            "LocalResponseNorm", "ChannelShuffle", "CosineSimilarity", "PairwiseDistance", *_activation_all,
            *_dropout_all, *_loss_all]
