"""The torch executor's kernels for the ops whose tdx signature is torch's own: statistics, search,
scatter and index updates, products, the linear algebra outside ``torch.linalg``, special functions,
complex views and the ``*_copy`` forms.

Each is torch's function of that name, bound as it is (the facade's :mod:`tdx._tensor.kernels`
passes torch's arguments through). Must never import MLX or the facade.
"""

from __future__ import annotations

import torch

STATISTICS = ("median", "nanmedian", "quantile", "nanquantile", "kthvalue", "mode", "var_mean", "std_mean",
              "bincount", "histc", "histogram", "cov", "corrcoef")
SEARCH = ("searchsorted", "bucketize", "isin", "unique_consecutive")
SCATTER = ("index_add", "index_copy", "index_fill", "index_put", "index_reduce", "scatter_reduce",
           "take_along_dim", "masked_scatter", "diagonal_scatter", "select_scatter", "slice_scatter")
PRODUCTS = ("tensordot", "cross", "cdist", "diag_embed", "block_diag", "vdot", "diagflat",
            "combinations", "dist", "renorm", "trapezoid", "trapz", "cumulative_trapezoid")
SPECIAL = ("erfinv", "erfc", "lgamma", "digamma", "polygamma", "acosh", "asinh", "atanh", "sinc", "i0",
           "mvlgamma", "igamma", "igammac", "nextafter", "ldexp", "frexp", "gcd", "lcm", "rsub",
           "bitwise_left_shift", "bitwise_right_shift")
COMPLEX = ("real", "imag", "angle", "complex", "polar", "view_as_real", "view_as_complex", "conj_physical",
           "resolve_neg", "isreal")
CONVOLUTION = ("conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d")
COPIES = ("fill", "unsafe_chunk", "unsafe_split", "split_with_sizes", "expand_copy", "diagonal_copy",
          "alias_copy", "narrow_copy", "view_copy", "permute_copy", "squeeze_copy", "unsqueeze_copy",
          "transpose_copy", "t_copy", "unbind_copy", "unfold_copy", "split_with_sizes_copy", "as_strided",
          "as_strided_copy", "as_strided_scatter")
DECOMPOSITIONS = ("cholesky", "cholesky_inverse", "cholesky_solve", "lu", "lu_solve", "lu_unpack", "qr", "orgqr",
                  "ormqr", "geqrf", "svd", "svd_lowrank", "pca_lowrank", "det", "slogdet", "logdet", "inverse",
                  "pinverse", "matrix_power", "matrix_exp", "triangular_solve", "ger", "chain_matmul", "lstsq",
                  "solve")
# Tensor methods with no torch.* function of the name
METHODS = ("unfold", "sum_to_size", "put")


class TorchKernelOps:
    """torch's own functions for the op families above, bound as staticmethods."""

    __slots__ = ()

    complex_real = staticmethod(torch.real)
    complex_imag = staticmethod(torch.imag)

    @staticmethod
    def view_dtype(x, dtype):
        return x.view(dtype)


for _name in STATISTICS + SEARCH + SCATTER + PRODUCTS + SPECIAL + COMPLEX + COPIES + CONVOLUTION + DECOMPOSITIONS:
    setattr(TorchKernelOps, _name, staticmethod(getattr(torch, _name)))
for _name in METHODS:
    setattr(TorchKernelOps, _name, staticmethod(getattr(torch.Tensor, _name)))
