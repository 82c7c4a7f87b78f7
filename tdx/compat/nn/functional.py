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

from ._dropouts import dropout1d, dropout2d, dropout3d, feature_alpha_dropout
from ._dropouts import __all__ as _dropouts_all
from ._embedding_bag import embedding_bag
from ._likelihood_losses import ctc_loss, gaussian_nll_loss, linear_cross_entropy, poisson_nll_loss
from ._likelihood_losses import __all__ as _likelihood_all
from ._local_norm import local_response_norm
from ._margin_losses import (cosine_embedding_loss, hinge_embedding_loss, margin_ranking_loss, multi_margin_loss,
                             multilabel_margin_loss, multilabel_soft_margin_loss, soft_margin_loss,
                             triplet_margin_loss, triplet_margin_with_distance_loss)
from ._margin_losses import __all__ as _margin_all
from ._random_activations import gumbel_softmax, pdist, rrelu, rrelu_
from ._random_activations import __all__ as _random_all
from ._spatial_transform import affine_grid, channel_shuffle, grid_sample, native_channel_shuffle
from ._spatial_transform import __all__ as _spatial_all

__all__ = ["scaled_dot_product_attention", *_activations_all, *_layers_all, *_losses_all]
__all__ += [*_dropouts_all, "embedding_bag", *_likelihood_all, "local_response_norm", *_margin_all, *_random_all,
            *_spatial_all]

# multi-head attention (the nn.MultiheadAttention core)
from ._multihead import multi_head_attention_forward  # noqa: E402

__all__ += ["multi_head_attention_forward"]

# convolution, pooling, resampling, batch and instance norm
from ._batch_norm import batch_norm, instance_norm  # noqa: E402
from ._conv import conv1d, conv2d, conv3d, conv_transpose1d, conv_transpose2d, conv_transpose3d  # noqa: E402
from ._conv import __all__ as _conv_all  # noqa: E402
from ._pooling import (adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d,  # noqa: E402
                       adaptive_max_pool1d, adaptive_max_pool1d_with_indices, adaptive_max_pool2d,
                       adaptive_max_pool2d_with_indices, adaptive_max_pool3d, adaptive_max_pool3d_with_indices,
                       avg_pool1d, avg_pool2d, avg_pool3d, lp_pool1d, lp_pool2d, lp_pool3d, max_pool1d,
                       max_pool1d_with_indices, max_pool2d, max_pool2d_with_indices, max_pool3d,
                       max_pool3d_with_indices, max_unpool1d, max_unpool2d, max_unpool3d)
from ._pooling import __all__ as _pooling_all  # noqa: E402
from ._resample import (fold, interpolate, pixel_shuffle, pixel_unshuffle, unfold, upsample,  # noqa: E402
                        upsample_bilinear, upsample_nearest)
from ._resample import __all__ as _resample_all  # noqa: E402

__all__ += ["batch_norm", "instance_norm", *_conv_all, *[n for n in _pooling_all if n != "gather_windows"],
            *_resample_all]
from ._conv import conv_tbc  # noqa: E402
from ._pooling import (fractional_max_pool2d, fractional_max_pool2d_with_indices, fractional_max_pool3d,  # noqa
                       fractional_max_pool3d_with_indices)
from ._torch_function import (Callable, DType, Optional, Tensor, assert_int_or_pair, boolean_dispatch,  # noqa
                              handle_torch_function, has_torch_function, has_torch_function_unary,
                              has_torch_function_variadic)
from ._torch_function import __all__ as _torch_function_all  # noqa: E402

__all__ += _torch_function_all


def _autocast_policy():  # the autocast policy wraps this module's listed functions (compat/autocast_policy.py)
    import sys

    from .. import autocast_policy

    autocast_policy.install_module(sys.modules[__name__])


_autocast_policy()
