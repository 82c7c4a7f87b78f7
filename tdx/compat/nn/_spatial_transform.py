"""Spatial transformer functions of ``tdx.nn.functional``: ``affine_grid`` (the sampling grid of a
batch of affine maps), ``grid_sample`` (sample an image at grid locations, for 4-D inputs) and
``channel_shuffle``.

Each is composed from tdx ops (matmul, gather, floor, where), so it runs and differentiates
on every executor; ``grid_sample``'s gradients reach both the input and the grid.
This module must never import torch or mlx.
"""

from __future__ import annotations

import warnings

import tdx
from . import _kernels
from ._activations import need_tensor
from ..._errors import TdxRuntimeError

__all__ = ["affine_grid", "grid_sample", "channel_shuffle", "native_channel_shuffle"]

_ALIGN_WARNING = ("Default grid_sample and affine_grid behavior has changed to align_corners=False since 1.3.0. "
                  "Please specify align_corners=True if the old behavior is desired. See the documentation of "
                  "grid_sample for details.")


def _steps(n: int, align_corners: bool, like):
    """torch's normalized coordinates of ``n`` pixels in ``[-1, 1]`` (0 for a single pixel)."""
    if n <= 1:
        return tdx.zeros(max(n, 0), dtype=like.dtype, device=like.device)
    pts = tdx.linspace(-1, 1, n, dtype=like.dtype, device=like.device)
    return pts if align_corners else pts * ((n - 1) / n)


def affine_grid(theta, size, align_corners=None):
    """The ``(N, H, W, 2)`` (or ``(N, D, H, W, 3)``) grid of ``theta @ [x, y, 1]`` over the output
    pixels of ``size`` ``(N, C, H, W)`` (or ``(N, C, D, H, W)``), in normalized coordinates.

    Args:
        theta: ``(N, 2, 3)`` (or ``(N, 3, 4)``) floating point affine matrices.
        size: the output size.
        align_corners: whether -1 and 1 are the centers (True) or the outer edges (False) of the corner
            pixels; None means False, with torch's warning.

    Raises:
        TdxValueError: ``theta`` is not floating point or does not match ``size``, or ``size`` holds a
            non-positive value.
        UnsupportedOpError: ``size`` is not 4-D or 5-D (torch's NotImplementedError).
    """
    th = need_tensor(theta, "affine_grid", "theta")
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=2)
        align_corners = False
    if not th.dtype.is_floating_point:
        raise tdx.TdxValueError(f"Expected theta to have floating point type, but got {th.dtype.name}")
    size = tuple(int(s) for s in size)
    if len(size) == 4:
        if th.ndim != 3 or tuple(th.shape[-2:]) != (2, 3):
            raise tdx.TdxValueError(f"Expected a batch of 2D affine matrices of shape Nx2x3 for size {size}. Got "
                                    f"{tuple(th.shape)}.")
        spatial = size[-2:]
    elif len(size) == 5:
        if th.ndim != 3 or tuple(th.shape[-2:]) != (3, 4):
            raise tdx.TdxValueError(f"Expected a batch of 3D affine matrices of shape Nx3x4 for size {size}. Got "
                                    f"{tuple(th.shape)}.")
        spatial = size[-3:]
    else:
        raise tdx.UnsupportedOpError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
                                     f"respectively. Got size {size}.")
    if align_corners and min(spatial) == 1:
        warnings.warn("Since version 1.3.0, affine_grid behavior has changed for unit-size grids when "
                      "align_corners=True. This is not an issue for standard use, but may be a behavior change "
                      "for unit-size grids.", stacklevel=2)
    if min(size) <= 0:
        raise tdx.TdxValueError(f"Expected non-zero, positive output size. Got {size}")
    n = size[0]
    if th.shape[0] != n:
        raise TdxRuntimeError(f"affine_grid: theta holds {th.shape[0]} matrices for a batch of {n}")
    axes = [_steps(s, align_corners, th) for s in reversed(spatial)]  # x (last dim) first
    mesh = tdx.meshgrid(*reversed(axes), indexing="ij")  # (.., H, W) each, slowest dim first
    coords = list(reversed(mesh)) + [tdx.ones_like(mesh[0])]
    base = tdx.stack(coords, -1).reshape(1, -1, len(coords)).expand(n, -1, len(coords))
    grid = base.matmul(th.transpose(1, 2))
    return grid.reshape((n,) + tuple(spatial) + (len(spatial),))


def _unnormalize(coord, size: int, align_corners: bool):
    if align_corners:
        return (coord + 1) / 2 * (size - 1)
    return ((coord + 1) * size - 1) / 2


def _reflect(coord, twice_low: int, twice_high: int):
    if twice_low == twice_high:
        return coord * 0
    low = twice_low / 2
    span = (twice_high - twice_low) / 2
    dist = (coord - low).abs()
    flips = (dist / span).floor().detach()
    extra = dist - flips * span
    return tdx.where(flips.remainder(2) == 0, extra + low, span - extra + low)


def _source(coord, size: int, padding_mode: str, align_corners: bool):
    """Pixel coordinates of normalized ``coord`` along a dim of ``size``, after ``padding_mode``."""
    c = _unnormalize(coord, size, align_corners)
    if padding_mode == "border":
        c = c.clamp(0, size - 1)
    elif padding_mode == "reflection":
        c = _reflect(c, 0, 2 * (size - 1)) if align_corners else _reflect(c, -1, 2 * size - 1)
        c = c.clamp(0, size - 1)
    return c


@_kernels.torch_kernel
def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):  # noqa: A002
    """Sample ``(N, C, H, W)`` input at the normalized ``(x, y)`` locations of an ``(N, Ho, Wo, 2)`` grid.

    Args:
        input: ``(N, C, H, W)`` floating point.
        grid: ``(N, Ho, Wo, 2)``: x (width) then y (height), in ``[-1, 1]`` inside the image.
        mode: ``"bilinear"`` or ``"nearest"`` (``"bicubic"`` and 5-D inputs are not implemented).
        padding_mode: ``"zeros"``, ``"border"`` or ``"reflection"``: values for locations outside.
        align_corners: as :func:`affine_grid` (None means False, with torch's warning).

    Returns:
        ``(N, C, Ho, Wo)``.

    Raises:
        TdxValueError: an unknown ``mode`` or ``padding_mode``.
        TdxRuntimeError: shapes that do not fit, or differing dtypes.
        UnsupportedOpError: ``mode="bicubic"`` or a 5-D input.
    """
    x, g = need_tensor(input, "grid_sample"), need_tensor(grid, "grid_sample", "grid")
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise tdx.TdxValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or "
                                f"'bicubic', but got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise tdx.TdxValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
                                f"'reflection', but got: '{padding_mode}'")
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=2)
        align_corners = False
    if x.ndim == 5 or mode == "bicubic":
        raise tdx.UnsupportedOpError(f"grid_sample(): tdx implements 4-D inputs with mode 'bilinear' or 'nearest' "
                                     f"(got a {x.ndim}-D input, mode={mode!r})")
    if x.ndim != 4 or g.ndim != 4 or g.shape[-1] != 2:
        raise TdxRuntimeError(f"grid_sampler(): expected 4D input and grid of shape (N, H, W, 2), but got input "
                              f"with sizes {list(x.shape)} and grid with sizes {list(g.shape)}")
    if x.shape[0] != g.shape[0]:
        raise TdxRuntimeError(f"grid_sampler(): expected grid and input to have same batch size, but got input with "
                              f"sizes {list(x.shape)} and grid with sizes {list(g.shape)}")
    if x.dtype is not g.dtype:
        raise TdxRuntimeError(f"grid_sampler(): expected input and grid to have same dtype, but input has "
                              f"{x.dtype.name} and grid has {g.dtype.name}")
    n, c, h, w = x.shape
    ho, wo = g.shape[1], g.shape[2]
    ix = _source(g[..., 0], w, padding_mode, align_corners)
    iy = _source(g[..., 1], h, padding_mode, align_corners)
    flat = x.reshape(n, c, h * w)

    def tap(px, py):
        """input at integer pixels (px, py), zero outside the image: (N, C, Ho, Wo)."""
        inside = (px >= 0) & (px <= w - 1) & (py >= 0) & (py <= h - 1)
        idx = (py.clamp(0, h - 1) * w + px.clamp(0, w - 1)).long().reshape(n, 1, ho * wo).expand(n, c, ho * wo)
        vals = flat.gather(2, idx).reshape(n, c, ho, wo)
        return tdx.where(inside.unsqueeze(1), vals, 0.0)

    if mode == "nearest":
        return tap(ix.detach().round(), iy.detach().round())
    x0, y0 = ix.detach().floor(), iy.detach().floor()
    fx, fy = (ix - x0).unsqueeze(1), (iy - y0).unsqueeze(1)
    return (tap(x0, y0) * (1 - fx) * (1 - fy) + tap(x0 + 1, y0) * fx * (1 - fy)
            + tap(x0, y0 + 1) * (1 - fx) * fy + tap(x0 + 1, y0 + 1) * fx * fy)


def channel_shuffle(input, groups):  # noqa: A002 - torch's name
    """Rearrange the ``C`` channels of ``(N, C, *)`` input from ``groups`` groups of ``C / groups`` into
    ``C / groups`` groups of ``groups`` (channel ``g * (C / groups) + k`` moves to ``k * groups + g``).

    Raises:
        TdxRuntimeError: ``groups`` is not positive or does not divide ``C``, or ``input`` has fewer than 3 dims.
    """
    x = need_tensor(input, "channel_shuffle")
    if isinstance(groups, bool) or not isinstance(groups, int) or groups <= 0:
        raise TdxRuntimeError(f"Number of groups to divide channels in must be positive. Value of groups:{groups}")
    if x.ndim <= 2:
        raise TdxRuntimeError(f"channel_shuffle expects input to have at least 3 dimensions, but got input with "
                              f"sizes {list(x.shape)}")
    c = x.shape[1]
    if c % groups:
        raise TdxRuntimeError(f"Number of channels must be divisible by groups. Got {c} channels and {groups} "
                              "groups.")
    n, rest = x.shape[0], tuple(x.shape[2:])
    return x.reshape((n, groups, c // groups) + rest).transpose(1, 2).reshape(tuple(x.shape))


def native_channel_shuffle(input, groups):  # noqa: A002 - torch's name
    """:func:`channel_shuffle` (torch's kernel of the same result)."""
    return channel_shuffle(input, groups)
