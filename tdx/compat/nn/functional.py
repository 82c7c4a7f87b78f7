"""``tdx.nn.functional``: torch's ``torch.nn.functional`` for tdx tensors.

Activations (:mod:`._activations`), layers such as linear maps, normalizations, embeddings,
padding and dropout (:mod:`._layers`), losses (:mod:`._losses`, :mod:`._margin_losses`,
:mod:`._likelihood_losses`), channel dropout (:mod:`._dropouts`), bags of embeddings
(:mod:`._embedding_bag`), local response norm (:mod:`._local_norm`), randomized activations and
``pdist`` (:mod:`._random_activations`), spatial transformers and ``channel_shuffle``
(:mod:`._spatial_transform`), attention, convolutions (:mod:`._conv`), pooling (:mod:`._pooling`),
resampling (:mod:`._resample`), batch and instance norm (:mod:`._batch_norm`). Every function
keeps torch's signature and semantics on every executor, and is differentiable on each (MLX
through tdx's tape). Importing this module must never import a framework.
"""

from __future__ import annotations

from ...attention import scaled_dot_product_attention
from ...aliasing.lazy_names import attach as _attach
from ._activations import (celu, celu_, elu, elu_, gelu, glu, hardshrink, hardsigmoid, hardswish, hardtanh,
                           hardtanh_, leaky_relu, leaky_relu_, log_softmax, logsigmoid, mish, prelu, relu, relu6,
                           relu_, selu, selu_, sigmoid, silu, softmax, softmin, softplus, softshrink, softsign, tanh,
                           tanhshrink, threshold, threshold_)
from ._activations import __all__ as _activations_all
from ._layers import (alpha_dropout, bilinear, dropout, embedding, group_norm, layer_norm, linear, normalize, one_hot,
                      pad, rms_norm)
from ._layers import __all__ as _layers_all
from ._losses import (binary_cross_entropy, binary_cross_entropy_with_logits, cosine_similarity, cross_entropy,
                      huber_loss, kl_div, l1_loss, mse_loss, nll_loss, pairwise_distance, smooth_l1_loss)
from ._losses import __all__ as _losses_all

# the other families' modules are imported on first use (tdx.aliasing.lazy_names); the listed names are each
# module's __all__ (tests/test_lazy_names.py keeps them equal), torch's typing names come with _torch_function's
_HOMES = {
    "._dropouts": ("dropout1d", "dropout2d", "dropout3d", "feature_alpha_dropout"),
    "._embedding_bag": ("embedding_bag",),
    "._likelihood_losses": ("poisson_nll_loss", "gaussian_nll_loss", "ctc_loss", "linear_cross_entropy"),
    "._local_norm": ("local_response_norm",),
    "._margin_losses": ("cosine_embedding_loss", "margin_ranking_loss", "hinge_embedding_loss", "soft_margin_loss",
                        "multilabel_soft_margin_loss", "multilabel_margin_loss", "multi_margin_loss",
                        "triplet_margin_loss", "triplet_margin_with_distance_loss"),
    "._random_activations": ("rrelu", "rrelu_", "gumbel_softmax", "pdist"),
    "._spatial_transform": ("affine_grid", "grid_sample", "channel_shuffle", "native_channel_shuffle"),
    "._multihead": ("multi_head_attention_forward",),  # the nn.MultiheadAttention core
    "._batch_norm": ("batch_norm", "instance_norm"),
    "._conv": ("conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "conv_tbc"),
    "._pooling": ("max_pool1d", "max_pool2d", "max_pool3d", "max_pool1d_with_indices", "max_pool2d_with_indices",
                  "max_pool3d_with_indices", "avg_pool1d", "avg_pool2d", "avg_pool3d", "adaptive_avg_pool1d",
                  "adaptive_avg_pool2d", "adaptive_avg_pool3d", "adaptive_max_pool1d", "adaptive_max_pool2d",
                  "adaptive_max_pool3d", "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices",
                  "adaptive_max_pool3d_with_indices", "lp_pool1d", "lp_pool2d", "lp_pool3d", "max_unpool1d",
                  "max_unpool2d", "max_unpool3d", "fractional_max_pool2d", "fractional_max_pool3d",
                  "fractional_max_pool2d_with_indices", "fractional_max_pool3d_with_indices"),
    "._resample": ("interpolate", "upsample", "upsample_nearest", "upsample_bilinear", "unfold", "fold", "pixel_shuffle",
                   "pixel_unshuffle"),
    "._torch_function": ("has_torch_function", "has_torch_function_unary", "has_torch_function_variadic",
                         "handle_torch_function", "boolean_dispatch", "assert_int_or_pair"),
}
_TYPING = ("Callable", "DType", "Optional", "Tensor")  # torch.nn.functional's typing names (not in __all__)


def _adapt(name, value):  # a function resolved on first use gets its autocast wrapper (compat/amp/autocast_state.py)
    from ..amp import autocast_state

    return autocast_state.wrapped(__name__, name, value)


__getattr__, __dir__ = _attach(globals(), {**_HOMES, "._torch_function": _HOMES["._torch_function"] + _TYPING}, _adapt)

__all__ = ["scaled_dot_product_attention", *_activations_all, *_layers_all, *_losses_all]
__all__ += [*_HOMES["._dropouts"], "embedding_bag", *_HOMES["._likelihood_losses"], "local_response_norm",
            *_HOMES["._margin_losses"], *_HOMES["._random_activations"], *_HOMES["._spatial_transform"],
            "multi_head_attention_forward", "batch_norm", "instance_norm", *_HOMES["._conv"], *_HOMES["._pooling"],
            *_HOMES["._resample"], *_HOMES["._torch_function"]]


def _autocast_policy():  # the autocast policy wraps this module's listed functions (compat/amp/autocast_state.py)
    import sys

    from ..amp import autocast_state

    autocast_state.install_module(sys.modules[__name__])


_autocast_policy()
