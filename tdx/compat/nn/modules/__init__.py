"""``tdx.nn.modules``: the module classes: the base ``Module`` and containers, layers, activations,
losses, normalizations, dropout, embeddings, recurrent layers, attention and the transformer,
convolutions, pooling, padding, resampling and batch/instance norm.

Each module builds on ``tdx.nn.functional``, so it runs and differentiates on every executor.
Each class's submodule is imported the first time one of its names is asked (:mod:`tdx.aliasing.lazy_names`):
a program pays the memory of the layers it uses. Must never import torch or mlx.
"""

from __future__ import annotations

from ....aliasing.lazy_names import attach as _attach

# where each class lives ({".submodule": names}); the submodules of _WHOLE are offered whole (their __all__, which
# tests/test_lazy_names.py keeps equal to the table)
_HOMES = {
    ".adaptive": ("AdaptiveLogSoftmaxWithLoss",),
    ".activation": ("Threshold", "ReLU", "RReLU", "Hardtanh", "ReLU6", "Sigmoid", "Hardsigmoid", "Tanh", "SiLU",
                    "Mish", "Hardswish", "ELU", "CELU", "SELU", "GLU", "GELU", "Hardshrink", "LeakyReLU",
                    "LogSigmoid", "Softplus", "Softshrink", "PReLU", "Softsign", "Tanhshrink", "Softmin", "Softmax",
                    "Softmax2d", "LogSoftmax"),
    ".attention": ("MultiheadAttention",),
    ".batchnorm": ("BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm", "InstanceNorm1d", "InstanceNorm2d",
                   "InstanceNorm3d", "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d", "LazyInstanceNorm1d",
                   "LazyInstanceNorm2d", "LazyInstanceNorm3d"),
    ".channelshuffle": ("ChannelShuffle",),
    ".container": ("ModuleDict", "ModuleList", "ParameterDict", "ParameterList", "Sequential"),
    ".conv": ("Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d", "LazyConv1d",
              "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d", "LazyConvTranspose2d", "LazyConvTranspose3d"),
    ".distance": ("CosineSimilarity", "PairwiseDistance"),
    ".dropout": ("Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout"),
    ".factory": ("Container", "factory_kwargs"),
    ".flatten": ("Flatten", "Identity", "Unflatten"),
    ".hooks": (),
    ".linear": ("Bilinear", "LazyLinear", "Linear", "NonDynamicallyQuantizableLinear"),
    ".linear_cross_entropy_options": ("LinearCrossEntropyOptions",),
    ".loss": ("LinearCrossEntropyLoss", "L1Loss", "NLLLoss", "NLLLoss2d", "PoissonNLLLoss", "GaussianNLLLoss", "KLDivLoss", "MSELoss",
              "BCELoss", "BCEWithLogitsLoss", "HingeEmbeddingLoss", "MultiLabelMarginLoss", "SmoothL1Loss",
              "HuberLoss", "SoftMarginLoss", "CrossEntropyLoss", "MultiLabelSoftMarginLoss", "CosineEmbeddingLoss",
              "MarginRankingLoss", "MultiMarginLoss", "TripletMarginLoss", "TripletMarginWithDistanceLoss",
              "CTCLoss"),
    ".module": ("Module",),
    ".normalization": ("GroupNorm", "LayerNorm", "LocalResponseNorm", "RMSNorm"),
    ".padding": ("ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d",
                 "ReplicationPad3d", "CircularPad1d", "CircularPad2d", "CircularPad3d", "ConstantPad1d",
                 "ConstantPad2d", "ConstantPad3d", "ZeroPad1d", "ZeroPad2d", "ZeroPad3d"),
    ".pooling": ("MaxPool1d", "MaxPool2d", "MaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d", "AdaptiveAvgPool1d",
                 "AdaptiveAvgPool2d", "AdaptiveAvgPool3d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d",
                 "AdaptiveMaxPool3d", "LPPool1d", "LPPool2d", "LPPool3d", "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d",
                 "FractionalMaxPool2d", "FractionalMaxPool3d"),
    ".resampling": ("Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d", "PixelShuffle", "PixelUnshuffle",
                    "Unfold", "Fold"),
    ".rnn": ("GRU", "LSTM", "RNN", "GRUCell", "LSTMCell", "RNNBase", "RNNCell", "RNNCellBase"),
    ".sparse": ("Embedding", "EmbeddingBag"),
    ".state_dict": (),
    ".transformer": ("Transformer", "TransformerDecoder", "TransformerDecoderLayer", "TransformerEncoder",
                     "TransformerEncoderLayer"),
}
_WHOLE = (".activation", ".batchnorm", ".conv", ".dropout", ".loss", ".padding", ".pooling", ".resampling")
__getattr__, __dir__ = _attach(globals(), _HOMES)

__all__ = ["Module", "Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict", "Identity",
           "Flatten", "Unflatten", "Linear", "Bilinear", "LazyLinear", "Embedding", "EmbeddingBag", "LayerNorm",
           "GroupNorm", "RMSNorm", "LocalResponseNorm", "ChannelShuffle", "CosineSimilarity", "PairwiseDistance",
           "RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell", "MultiheadAttention",
           "Transformer", "TransformerEncoder", "TransformerDecoder", "TransformerEncoderLayer",
           "TransformerDecoderLayer", "AdaptiveLogSoftmaxWithLoss", "LinearCrossEntropyOptions", *_HOMES[".activation"], *_HOMES[".dropout"], *_HOMES[".loss"]]
__all__ += ["Container", "factory_kwargs", *_HOMES[".batchnorm"], *_HOMES[".conv"], *_HOMES[".padding"],
            *_HOMES[".pooling"], *_HOMES[".resampling"]]
