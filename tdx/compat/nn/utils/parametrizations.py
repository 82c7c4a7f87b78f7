"""``tdx.nn.utils.parametrizations``: ``weight_norm`` and ``spectral_norm`` as parametrizations
(torch's state dict keys: ``parametrizations.weight.original0``...).

``orthogonal`` needs differentiable matrix exponential / Householder / QR ops that tdx does
not have yet: it raises ``tdx.UnsupportedOpError``. Must never import torch or mlx.
"""

from __future__ import annotations

import tdx
import tdx.nn.functional as F

from ..modules.module import Module
from . import parametrize

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]


def norm_except_dim(v, pow_: float = 2, dim: int = 0):
    """The ``pow_``-norm of ``v`` over every dim but ``dim`` (keeping dims), or of all of ``v`` when dim is -1.

    torch's ``norm_except_dim``; ``dim == -1`` is torch's "no dim" sentinel.
    """
    if dim == -1:
        return v.norm(pow_)
    dims = tuple(d for d in range(v.ndim) if d != dim)
    if not dims:
        return v.abs() if pow_ != 0 else (v != 0).to(v.dtype)
    return v.norm(pow_, dim=dims, keepdim=True)


def weight_norm_value(v, g, dim: int):
    """torch's ``_weight_norm``: ``v * (g / norm_except_dim(v, 2, dim))``."""
    return v * (g / norm_except_dim(v, 2, dim))


class _WeightNorm(Module):
    def __init__(self, dim=0) -> None:
        super().__init__()
        if dim is None:
            dim = -1
        self.dim = dim

    def forward(self, weight_g, weight_v):
        return weight_norm_value(weight_v, weight_g, self.dim)

    def right_inverse(self, weight):
        return norm_except_dim(weight, 2, self.dim), weight


def weight_norm(module, name: str = "weight", dim=0):
    """Reparametrize ``module.<name>`` as ``g * v / ||v||`` (magnitude ``original0``, direction ``original1``).

    Args:
        module: the module.
        name: the parameter's name.
        dim: the dim the norm is kept over; None for the whole tensor.

    Returns:
        ``module``; its load_state_dict also accepts the old ``<name>_g``/``<name>_v`` keys.
    """
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)

    def _weight_norm_compat_hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                 error_msgs):
        g_key, v_key = f"{prefix}{name}_g", f"{prefix}{name}_v"
        if g_key in state_dict and v_key in state_dict:
            state_dict[f"{prefix}parametrizations.{name}.original0"] = state_dict.pop(g_key)
            state_dict[f"{prefix}parametrizations.{name}.original1"] = state_dict.pop(v_key)

    module._register_load_state_dict_pre_hook(_weight_norm_compat_hook)
    return module


class _SpectralNorm(Module):
    def __init__(self, weight, n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12) -> None:
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise tdx.TdxIndexError(f"Dimension out of range (expected to be in range of [-{ndim}, {ndim - 1}] but "
                                    f"got {dim})")
        if n_power_iterations <= 0:
            raise tdx.TdxValueError("Expected n_power_iterations to be positive, but got "
                                    f"n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            weight_mat = self._reshape_weight_to_matrix(weight)
            h, w = weight_mat.size()
            with tdx.no_grad():
                u = weight_mat.new_empty(h).normal_(0, 1)
                v = weight_mat.new_empty(w).normal_(0, 1)
            self.register_buffer("_u", F.normalize(u, dim=0, eps=self.eps))
            self.register_buffer("_v", F.normalize(v, dim=0, eps=self.eps))
            self._power_method(weight_mat, 15)

    def _reshape_weight_to_matrix(self, weight):
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.dim()) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, weight_mat, n_power_iterations: int) -> None:
        with tdx.no_grad():
            weight_h = weight_mat.t().conj() if weight_mat.is_complex() else weight_mat.t()
            for _ in range(n_power_iterations):
                self._u.copy_(F.normalize(tdx.mv(weight_mat, self._v), dim=0, eps=self.eps))
                self._v.copy_(F.normalize(tdx.mv(weight_h, self._u), dim=0, eps=self.eps))

    def forward(self, weight):
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        u = self._u.clone()
        v = self._v.clone()
        wv = tdx.mv(weight_mat, v)
        sigma = ((u.conj() if u.is_complex() else u) * wv).sum()
        return weight / sigma

    def right_inverse(self, value):
        return value


def spectral_norm(module, name: str = "weight", n_power_iterations: int = 1, eps: float = 1e-12, dim=None):
    """Reparametrize ``module.<name>`` divided by its spectral norm (estimated by power iteration).

    Args:
        module: the module.
        name: the weight's name.
        n_power_iterations: power iterations per training-mode access.
        eps: the normalization epsilon.
        dim: the output dim (1 for ConvTranspose modules, else 0, when None).

    Returns:
        ``module``.

    Raises:
        TdxValueError: ``module`` has no tensor named ``name``.
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, tdx.Tensor):
        raise tdx.TdxValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = 1 if type(module).__name__ in ("ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d") else 0
    parametrize.register_parametrization(module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module


def orthogonal(module, name: str = "weight", orthogonal_map=None, *, use_trivialization: bool = True):
    """Not available yet: raises ``tdx.UnsupportedOpError``.

    torch's version needs differentiable ``matrix_exp``, ``householder_product`` or ``solve``,
    which tdx does not provide on any executor yet.
    """
    raise tdx.UnsupportedOpError("tdx.nn.utils.parametrizations.orthogonal needs differentiable matrix_exp, "
                                 "householder_product or linalg.solve, which tdx does not provide yet; use "
                                 "tdx.nn.init.orthogonal_ for an orthogonal initialization")
