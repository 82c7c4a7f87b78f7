"""``tdx.nn.init``: torch.nn.init's initializers for tdx tensors.

Each initializer calls the same in-place random ops, in the same order and with the same
arguments, as torch.nn.init: on the torch cpu executor (which draws from torch's
generator) ``tdx.manual_seed(s)`` then gives torch's values bit for bit; on MLX the draws
come from torch's CPU generator under the torch random stream (the default). ``orthogonal_``
factors its random matrix with ``tdx.linalg.qr``, as torch's with ``torch.linalg.qr``. Every
function runs under ``no_grad`` and returns its argument.

This module must never import torch or mlx.
"""

from __future__ import annotations

import math
import warnings
from typing import Callable, Literal, ParamSpec, TypeVar  # noqa: F401 - torch.nn.init re-exports them

import tdx
from tdx import Tensor

__all__ = ["calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "ones_", "zeros_", "eye_",
           "dirac_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_", "orthogonal_",
           "sparse_", "uniform", "normal", "constant", "eye", "dirac", "xavier_uniform", "xavier_normal",
           "kaiming_uniform", "kaiming_normal", "orthogonal", "sparse"]


def _no_grad_uniform_(tensor, a, b, generator=None):
    with tdx.no_grad():
        return tensor.uniform_(a, b, generator=generator)


def _no_grad_normal_(tensor, mean, std, generator=None):
    with tdx.no_grad():
        return tensor.normal_(mean, std, generator=generator)


def _no_grad_fill_(tensor, val):
    with tdx.no_grad():
        return tensor.fill_(val)


def _no_grad_zero_(tensor):
    with tdx.no_grad():
        return tensor.zero_()


def calculate_gain(nonlinearity, param=None):
    """The recommended gain for a nonlinearity (torch's table).

    Args:
        nonlinearity: "linear", "conv1d".."conv_transpose3d", "sigmoid", "tanh", "relu",
            "leaky_relu" or "selu".
        param: leaky_relu's negative slope (default 0.01).

    Raises:
        TdxValueError: unknown ``nonlinearity`` or a non-number ``param``.
    """
    linear_fns = ["linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                  "conv_transpose3d"]
    if nonlinearity in linear_fns or nonlinearity == "sigmoid":
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            negative_slope = 0.01
        elif (not isinstance(param, bool) and isinstance(param, int)) or isinstance(param, float):
            negative_slope = param
        else:
            raise tdx.TdxValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + negative_slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise tdx.TdxValueError(f"Unsupported nonlinearity {nonlinearity}")


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0, generator=None) -> Tensor:
    """Fill ``tensor`` with draws from U(a, b)."""
    return _no_grad_uniform_(tensor, a, b, generator)


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator=None) -> Tensor:
    """Fill ``tensor`` with draws from N(mean, std^2)."""
    return _no_grad_normal_(tensor, mean, std, generator)


def trunc_normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0, b: float = 2.0,
                  generator=None) -> Tensor:
    """Fill ``tensor`` with draws from N(mean, std^2) truncated to [a, b], by torch's rejection sampling.

    Warns when ``mean`` is more than 2 std outside [a, b].
    """
    def norm_cdf(x):
        return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0

    if (mean < a - 2 * std) or (mean > b + 2 * std):
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. The distribution of values "
                      "may be incorrect.", stacklevel=2)
    with tdx.no_grad():
        p = norm_cdf((b - mean) / std) - norm_cdf((a - mean) / std)
        if p > 0.3:  # plain rejection: redraw the out-of-range values
            lo = tensor.new_tensor(a).item()
            hi = tensor.new_tensor(b).item()
            result = tensor.normal_(mean, std, generator=generator)
            while True:
                mask = (result < lo) | (result > hi)
                if not mask.any():
                    break
                result = tdx.where(mask, tdx.empty_like(result).normal_(mean, std, generator=generator), result)
            if tensor is not result:
                tensor.copy_(result)
        else:  # uniform proposals accepted with the normal density (the mass is far from the mean)
            mode = max(a, min(mean, b))
            log_peak = -0.5 * ((mode - mean) / std) ** 2
            candidates = tdx.empty_like(tensor)
            accept_buf = tdx.empty_like(tensor)
            tensor.uniform_(a, b, generator=generator)
            candidates.copy_(tensor)
            candidates.sub_(mean).div_(std).pow_(2).mul_(-0.5).sub_(log_peak)
            pending = accept_buf.uniform_(generator=generator).log_().gt(candidates)
            if pending.any():
                result = tensor
                while True:
                    candidates.uniform_(a, b, generator=generator)
                    result = tdx.where(pending, candidates, result)
                    candidates.sub_(mean).div_(std).pow_(2).mul_(-0.5).sub_(log_peak)
                    pending = tdx.where(pending, accept_buf.uniform_(generator=generator).log_().gt(candidates),
                                        pending)
                    if not pending.any():
                        break
                tensor.copy_(result)
        return tensor


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fill ``tensor`` with ``val``."""
    return _no_grad_fill_(tensor, val)


def ones_(tensor: Tensor) -> Tensor:
    """Fill ``tensor`` with ones."""
    return _no_grad_fill_(tensor, 1.0)


def zeros_(tensor: Tensor) -> Tensor:
    """Fill ``tensor`` with zeros."""
    return _no_grad_zero_(tensor)


def eye_(tensor: Tensor) -> Tensor:
    """Fill the 2-D ``tensor`` with the identity matrix.

    Raises:
        TdxValueError: ``tensor`` is not 2-D.
    """
    if tensor.ndimension() != 2:
        raise tdx.TdxValueError(f"Only tensors with 2 dimensions are supported (got {tensor.ndimension()})")
    with tdx.no_grad():
        tensor.copy_(tdx.eye(*tensor.shape, dtype=tensor.dtype, device=tensor.device))
    return tensor


def dirac_(tensor: Tensor, groups: int = 1) -> Tensor:
    """Fill the 3-, 4- or 5-D ``tensor`` with the Dirac delta (identity convolution), per group.

    Raises:
        TdxValueError: wrong number of dims, or dim 0 not divisible by ``groups``.
    """
    dims = tensor.ndimension()
    if dims not in [3, 4, 5]:
        raise tdx.TdxValueError(f"Only tensors with 3, 4, or 5 dimensions are supported (got {dims})")
    sizes = tensor.size()
    if sizes[0] % groups != 0:
        raise tdx.TdxValueError(f"dim 0 must be divisible by groups (got size {sizes[0]} and groups={groups})")
    per_group = sizes[0] // groups
    min_dim = min(per_group, sizes[1])
    centre = tuple(s // 2 for s in sizes[2:])
    with tdx.no_grad():
        tensor.zero_()
        for g in range(groups):
            for d in range(min_dim):
                tensor[(g * per_group + d, d, *centre)] = 1
    return tensor


def _calculate_fan_in_and_fan_out(tensor):
    if tensor.dim() < 2:
        raise tdx.TdxValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    receptive = 1
    for s in tensor.shape[2:]:
        receptive *= s
    return tensor.size(1) * receptive, tensor.size(0) * receptive


def xavier_uniform_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """Glorot uniform: U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out)).

    Raises:
        TdxValueError: ``tensor`` has fewer than 2 dims.
    """
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    a = math.sqrt(3.0) * std
    return _no_grad_uniform_(tensor, -a, a, generator)


def xavier_normal_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """Glorot normal: N(0, std^2) with std = gain * sqrt(2 / (fan_in + fan_out)).

    Raises:
        TdxValueError: ``tensor`` has fewer than 2 dims.
    """
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return _no_grad_normal_(tensor, 0.0, std, generator)


def _calculate_correct_fan(tensor, mode):
    mode = mode.lower()
    valid = ["fan_in", "fan_out"]
    if mode not in valid:
        raise tdx.TdxValueError(f"Mode {mode} not supported, please use one of {valid}")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def kaiming_uniform_(tensor: Tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
                     generator=None) -> Tensor:
    """He uniform: U(-bound, bound) with bound = gain * sqrt(3 / fan); a zero-element tensor warns.

    Raises:
        TdxValueError: bad ``mode`` or ``nonlinearity``, or fewer than 2 dims.
    """
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    std = calculate_gain(nonlinearity, a) / math.sqrt(fan)
    bound = math.sqrt(3.0) * std
    with tdx.no_grad():
        return tensor.uniform_(-bound, bound, generator=generator)


def kaiming_normal_(tensor: Tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
                    generator=None) -> Tensor:
    """He normal: N(0, std^2) with std = gain / sqrt(fan); a zero-element tensor warns.

    Raises:
        TdxValueError: bad ``mode`` or ``nonlinearity``, or fewer than 2 dims.
    """
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    std = calculate_gain(nonlinearity, a) / math.sqrt(fan)
    with tdx.no_grad():
        return tensor.normal_(0, std, generator=generator)


def orthogonal_(tensor: Tensor, gain: float = 1, generator=None) -> Tensor:
    """Fill ``tensor`` (viewed as rows x rest) with a (semi-)orthogonal matrix times ``gain``.

    The random matrix is drawn on the tensor's executor (torch's stream on cpu); its QR
    factorization is ``tdx.linalg.qr``'s, as torch's is ``torch.linalg.qr``'s.

    Raises:
        TdxValueError: ``tensor`` has fewer than 2 dims.
    """
    if tensor.ndimension() < 2:
        raise tdx.TdxValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.size(0)
    cols = tensor.numel() // rows
    with tdx.no_grad():
        flattened = tensor.new_empty((rows, cols)).normal_(0, 1, generator=generator)
        if rows < cols:
            flattened = flattened.t()
        q, r = tdx.linalg.qr(flattened)  # torch's own QR on a torch device: torch's values bit for bit
        q = q * tdx.diag(r, 0).sign()
        if rows < cols:
            q = q.t()
        tensor.copy_(q.reshape(tensor.shape))
        tensor.mul_(gain)
    return tensor


def sparse_(tensor: Tensor, sparsity: float, std: float = 0.01, generator=None) -> Tensor:
    """Fill the 2-D ``tensor`` from N(0, std^2), then zero ``ceil(sparsity * rows)`` random rows per column.

    The row permutations come from the default device's generator, as torch's (its CPU one when
    ``tensor`` is on cuda).

    Raises:
        TdxValueError: ``tensor`` is not 2-D.
    """
    if tensor.ndimension() != 2:
        raise tdx.TdxValueError(f"Only tensors with 2 dimensions are supported (got {tensor.ndimension()})")
    rows, cols = tensor.shape
    num_zeros = math.ceil(sparsity * rows)
    with tdx.no_grad():
        tensor.normal_(0, std, generator=generator)
        for col in range(cols):
            zero_rows = tdx.randperm(rows)[:num_zeros].to(tensor.device)  # the default device's, as torch
            tensor[zero_rows, col] = 0
    return tensor


def _make_deprecate(meth):
    new_name = meth.__name__
    old_name = new_name[:-1]

    def deprecated_init(*args, **kwargs):
        warnings.warn(f"`nn.init.{old_name}` is now deprecated in favor of `nn.init.{new_name}`.", FutureWarning,
                      stacklevel=2)
        return meth(*args, **kwargs)

    deprecated_init.__doc__ = f"Deprecated alias of :func:`{new_name}` (warns with a FutureWarning)."
    deprecated_init.__name__ = old_name
    return deprecated_init


uniform = _make_deprecate(uniform_)
normal = _make_deprecate(normal_)
constant = _make_deprecate(constant_)
eye = _make_deprecate(eye_)
dirac = _make_deprecate(dirac_)
xavier_uniform = _make_deprecate(xavier_uniform_)
xavier_normal = _make_deprecate(xavier_normal_)
kaiming_uniform = _make_deprecate(kaiming_uniform_)
kaiming_normal = _make_deprecate(kaiming_normal_)
orthogonal = _make_deprecate(orthogonal_)
sparse = _make_deprecate(sparse_)
