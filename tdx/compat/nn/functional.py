"""``tdx.nn.functional``: torch's ``torch.nn.functional`` for tdx tensors.

Activations (:mod:`._activations`), layers such as linear maps, normalizations, embeddings,
padding and dropout (:mod:`._layers`), losses (:mod:`._losses`) and attention. Every function
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

__all__ = ["scaled_dot_product_attention", *_activations_all, *_layers_all, *_losses_all]

# multi-head attention (the nn.MultiheadAttention core)
from ._multihead import multi_head_attention_forward  # noqa: E402

__all__ += ["multi_head_attention_forward"]
