"""``tdx.masked``: torch.masked's reductions and normalizations over the elements a ``mask`` keeps.

Each function follows torch.masked on strided tensors: the masked-out elements of ``input`` are
replaced by the operation's identity (0 for sums, 1 for products, -inf/+inf or the integer
range's end for max/min, NaN for median) and the ordinary tdx op runs on the result, so values,
dtypes and the treatment of fully masked slices are torch's (a fully masked ``mean``/``var``
slice is NaN, ``amax`` is -inf, ``softmax`` is NaN), and gradients reach only the kept elements.
Everything is composed from tdx ops (:mod:`.reductions`, :mod:`.normalization`), so it runs and
differentiates on every executor. torch's ``MaskedTensor`` class (a prototype tensor subclass) is
not provided. Must never import a framework.
"""

from __future__ import annotations

from .normalization import log_softmax, normalize, softmax, softmin
from .reductions import (amax, amin, argmax, argmin, cumprod, cumsum, logaddexp, logsumexp, mean, median, norm, prod,
                         std, sum, var)

__all__ = ["amax", "amin", "argmax", "argmin", "cumprod", "cumsum", "is_masked_tensor", "log_softmax", "logaddexp",
           "logsumexp", "mean", "median", "norm", "normalize", "prod", "softmax", "softmin", "std", "sum", "var"]
__tdx_partial__ = True  # torch's other names of this module refuse at use (tdx.aliasing.torch_paths)


def is_masked_tensor(obj) -> bool:
    """Whether ``obj`` is a ``MaskedTensor``: always False, tdx has no MaskedTensor class."""
    return False
