"""Resampling functions of ``tdx.nn.functional``: ``interpolate`` (and the deprecated ``upsample*``),
``unfold``/``fold`` (im2col and its adjoint), ``pixel_shuffle``/``pixel_unshuffle``.

On an executor with torch's kernels each call is torch's own (bit for bit). Elsewhere they are
composed from tdx ops: interpolation is separable, one dim at a time, with torch's source-index
rules (``align_corners``, a given ``scale_factor``, nearest's float32 index arithmetic, cubic
convolution with A = -0.75, area as adaptive average pooling); ``unfold`` gathers windows and
``fold`` scatter-adds them back. Antialiased interpolation runs only on torch's kernels.
This module must never import torch or mlx.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

import tdx
from ..._errors import ShapeError, TdxNotImplementedError, TdxRuntimeError, TdxValueError, UnsupportedOpError
from . import _kernels
from ._activations import need_tensor, tuple_arg
from ._layers import pad
from ._pooling import adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d, gather_windows

__all__ = ["interpolate", "upsample", "upsample_nearest", "upsample_bilinear", "unfold", "fold", "pixel_shuffle",
           "pixel_unshuffle"]

_LINEAR = {"linear": 1, "bilinear": 2, "trilinear": 3, "bicubic": 2}
_MODES = ("nearest", "nearest-exact", "linear", "bilinear", "bicubic", "trilinear", "area")


def _check_size(shape, x, op: str) -> None:
    """Refuse, before any work, a result of ``shape`` in ``x``'s dtype that cannot exist: a size calculation
    that overflows, or more bytes than can be allocated (``tdx.empty`` checks both on every executor, with
    torch's words, and makes nothing on a lazy one)."""
    del op  # the executor's check names the allocation
    tdx.empty(tuple(shape), dtype=x.dtype, device=x.device)


def _sizes(x, nd, size, scale_factor, recompute_scale_factor):
    """The output sizes and the scales the kernels use (None where the size ratio is used)."""
    if size is not None and scale_factor is not None:
        raise TdxValueError("only one of size or scale_factor should be defined")
    if size is None and scale_factor is None:
        raise TdxValueError("either size or scale_factor should be defined")
    ins = tuple(x.shape[2:])
    if size is not None:
        if isinstance(size, (list, tuple)):
            if len(size) != nd:
                raise TdxValueError(f"Input and output must have the same number of spatial dimensions, but got "
                                    f"input with spatial dimensions of {list(ins)} and output size of {list(size)}. "
                                    "Please provide input tensor in (N, C, d1, d2, ...,dK) format and output size "
                                    "in (o1, o2, ...,oK) format.")
            outs = tuple(int(s) for s in size)
        else:
            outs = (int(size),) * nd
        return outs, (None,) * nd
    if isinstance(scale_factor, (list, tuple)):
        if len(scale_factor) != nd:
            raise TdxValueError(f"Input and scale_factor must have the same number of spatial dimensions, but got "
                                f"input with spatial dimensions of {list(ins)} and scale_factor of shape "
                                f"{list(scale_factor)}.")
        scales = tuple(float(s) for s in scale_factor)
    else:
        scales = (float(scale_factor),) * nd
    outs = tuple(math.floor(n * s) for n, s in zip(ins, scales))
    return outs, ((None,) * nd if recompute_scale_factor else scales)


def _linear_source(n_in, n_out, scale, align_corners, cubic=False):
    """torch's ``area_pixel_compute_source_index`` for each output position (float64)."""
    i = np.arange(n_out, dtype=np.float64)
    if align_corners:
        return ((n_in - 1) / (n_out - 1) if n_out > 1 else 0.0) * i
    ratio = 1.0 / scale if scale is not None and scale > 0 else n_in / n_out
    src = ratio * (i + 0.5) - 0.5
    return src if cubic else np.maximum(src, 0.0)


def _along(x, d, idx):
    return x.index_select(d, tdx.tensor(idx, dtype=tdx.int64, device=x.device))


def _weights(vals, x, d):
    shape = [1] * x.ndim
    shape[d] = len(vals)
    return tdx.tensor(vals, dtype=x.dtype, device=x.device).reshape(shape)


_CUBIC_A = -0.75
_MAX_PHASES = 8  # past this many phases, a gather of the source rows costs less than the phases' slices


def _cubic_weights(t):
    """The four cubic-convolution tap weights (A = -0.75) at fractional offset ``t``."""
    a = _CUBIC_A

    def near(s):
        return ((a + 2) * s - (a + 3)) * s * s + 1

    def far(s):
        return ((a * s - 5 * a) * s + 8 * a) * s - 4 * a
    return far(t + 1), near(t), near(1 - t), far(2 - t)


def _taps(src, cubic):
    """``(first tap, weights)`` per source position: the source rows ``first + k`` (before clamping to the
    input) weigh ``weights[k]``. Clamping a row to the input is the input extended by its edge values."""
    base = np.floor(src)
    t = src - base
    base = base.astype(np.int64)
    if cubic:
        return base - 1, np.stack(_cubic_weights(t), axis=-1)
    return base, np.stack((1 - t, t), axis=-1)


def _period(src):
    """``(p, q)``: the smallest ``p <= _MAX_PHASES`` with ``src[o + p] == src[o] + q`` for a whole ``q >= 1``,
    or None. Output positions ``r, r + p, r + 2p, ...`` then read the input at a stride of ``q`` with one
    set of weights (a source-to-output ratio of q/p, as an integer scale factor gives)."""
    n_out = len(src)
    if n_out <= _MAX_PHASES:
        return n_out, 1  # one output per phase
    for p in range(1, _MAX_PHASES + 1):
        step = src[p:] - src[:-p]
        q = round(float(step[0]))
        if q >= 1 and np.all(np.abs(step - q) < 1e-9):
            return p, q
    return None


def _edge_pad(x, d, left, right):
    """``x`` extended along ``d`` by ``left``/``right`` copies of its first/last entries."""
    n = x.shape[d]
    parts = [x.narrow(d, 0, 1).expand(*x.shape[:d], left, *x.shape[d + 1:])] if left else []
    parts.append(x)
    if right:
        parts.append(x.narrow(d, n - 1, 1).expand(*x.shape[:d], right, *x.shape[d + 1:]))
    return tdx.cat(parts, d) if len(parts) > 1 else x


def _resize_by_phases(x, d, n_out, src, p, q, cubic):
    """Each phase ``r`` (outputs ``r, r + p, ...``, at source positions ``src[r] + q * j``) as a weighted sum of
    strided slices of the edge-extended input, the phases interleaved: slices and elementwise ops only, no
    gather (nor a scatter in backward)."""
    n_in = x.shape[d]
    count = -(-n_out // p)  # every phase makes ``count`` outputs; the surplus is cut off at the end
    first, weights = _taps(src[:p], cubic)
    taps = weights.shape[1]
    lo, hi = int(first.min()), int(first.max()) + taps - 1 + q * (count - 1)
    left, right = max(0, -lo), max(0, hi - (n_in - 1))
    xp = _edge_pad(x, d, left, right)
    head = (slice(None),) * d
    phases = []
    for r in range(p):
        acc = None
        for k in range(taps):
            begin = int(first[r]) + k + left
            term = xp[head + (slice(begin, begin + q * (count - 1) + 1, q),)] * float(weights[r, k])
            acc = term if acc is None else acc + term
        phases.append(acc)
    if p == 1:
        return phases[0]
    out = tdx.stack(phases, d + 1).reshape(*x.shape[:d], count * p, *x.shape[d + 1:])
    return out.narrow(d, 0, n_out) if count * p != n_out else out


def _resize_dim(x, d, n_out, mode, scale, align_corners):
    n_in = x.shape[d]
    if mode in ("nearest", "nearest-exact"):
        if n_out == n_in:
            return x
        # torch computes in float32: the ratio, the (shifted) output position and their product
        ratio = np.float32(1.0 / scale) if scale is not None and scale > 0 else np.float32(np.float32(n_in) /
                                                                                        np.float32(n_out))
        off = 0.5 if mode == "nearest-exact" else 0.0
        pos = (np.arange(n_out, dtype=np.float64) + off).astype(np.float32)
        return _along(x, d, np.minimum(np.floor(pos * ratio).astype(np.int64), n_in - 1))
    cubic = mode == "bicubic"
    # unclamped positions: linear's clamp of a negative position to 0 reads the edge value, as the edge
    # extension does, so the positions stay periodic
    src = _linear_source(n_in, n_out, scale, align_corners, cubic=True)
    period = _period(src)
    if period is not None:
        return _resize_by_phases(x, d, n_out, src, *period, cubic)
    if not cubic:
        src = np.maximum(src, 0.0)
    first, weights = _taps(src, cubic)
    out = None
    for k in range(weights.shape[1]):
        term = _along(x, d, np.clip(first + k, 0, n_in - 1)) * _weights(weights[:, k], x, d)
        out = term if out is None else out + term
    return out


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,  # noqa: A002
                recompute_scale_factor=None, antialias=False):
    """Resize the spatial dims of ``(N, C, *spatial)`` (1 to 3 spatial dims) to ``size`` or by ``scale_factor``.

    Args:
        size: output spatial size (an int or one per dim).
        scale_factor: multiplier per dim; the output size is ``floor(in * scale_factor)`` and, unless
            ``recompute_scale_factor``, the kernels use ``1 / scale_factor`` as the source step.
        mode: ``nearest``, ``nearest-exact``, ``linear`` (3-D input), ``bilinear``/``bicubic`` (4-D),
            ``trilinear`` (5-D) or ``area``.
        align_corners: for the interpolating modes, align the corner pixels' centers (default False).
        antialias: low-pass filter when downsampling (bilinear and bicubic; torch executors only).

    Raises:
        TdxValueError: both or neither of size/scale_factor, ``align_corners`` with a non-interpolating mode,
            ``recompute_scale_factor`` with ``size``.
        TdxNotImplementedError: a mode that does not fit the input's dims, or an unknown mode.
        UnsupportedOpError: ``antialias`` on an executor without torch's kernels.
    """
    x = need_tensor(input, "interpolate")
    if mode not in _MODES:
        raise TdxNotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {x.ndim}D) for "
                                     f"the modes: nearest | linear | bilinear | bicubic | trilinear | area | "
                                     f"nearest-exact (got {mode!r})")
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise TdxValueError("align_corners option can only be set with the interpolating modes: linear | "
                                f"bilinear | bicubic | trilinear (got mode={mode!r})")
    elif align_corners is None:
        align_corners = False
    if recompute_scale_factor and size is not None:
        raise TdxValueError("recompute_scale_factor is not meaningful with an explicit size.")
    done = _kernels.native("interpolate", x, size, scale_factor, mode, align_corners, recompute_scale_factor,
                           antialias)
    if done is not _kernels.NOT_NATIVE:
        return done
    nd = x.ndim - 2
    if nd not in (1, 2, 3):
        raise TdxNotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {x.ndim}D) for "
                                     f"the modes: nearest | linear | bilinear | bicubic | trilinear | area | "
                                     f"nearest-exact (got {mode})")
    if mode in _LINEAR and _LINEAR[mode] != nd:
        need = {"linear": 3, "bilinear": 4, "bicubic": 4, "trilinear": 5}[mode]
        raise TdxNotImplementedError(f"Got {x.ndim}D input, but {mode} mode needs {need}D input")
    if antialias:
        raise UnsupportedOpError(f"interpolate(antialias=True) is not supported on {x.device}; tdx runs antialiased "
                                 "resampling on torch executors only")
    outs, scales = _sizes(x, nd, size, scale_factor, recompute_scale_factor)
    if any(o <= 0 for o in outs):
        raise TdxRuntimeError(f"Input and output sizes should be greater than 0, but got input {list(x.shape[2:])} "
                              f"output {list(outs)}")
    _check_size((*x.shape[:2], *outs), x, "interpolate")  # a scale of 1e12 is refused before any index is made
    if mode == "area":
        return (adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d)[nd - 1](x, outs)
    work = x
    for i in range(nd):
        work = _resize_dim(work, 2 + i, outs[i], mode, scales[i], align_corners)
    return work


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):  # noqa: A002
    """Deprecated alias of :func:`interpolate` (warns as torch does)."""
    warnings.warn("nn.functional.upsample is deprecated. Use nn.functional.interpolate instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):  # noqa: A002 - torch's name
    """Deprecated: :func:`interpolate` with ``mode="nearest"``."""
    warnings.warn("nn.functional.upsample_nearest is deprecated. Use nn.functional.interpolate instead.",
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):  # noqa: A002 - torch's name
    """Deprecated: :func:`interpolate` with ``mode="bilinear", align_corners=True``."""
    warnings.warn("nn.functional.upsample_bilinear is deprecated. Use nn.functional.interpolate instead.",
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


def _fold_args(op, kernel_size, dilation, padding, stride):
    k, d = tuple_arg(kernel_size, 2, op, "kernel_size"), tuple_arg(dilation, 2, op, "dilation")
    p, s = tuple_arg(padding, 2, op, "padding"), tuple_arg(stride, 2, op, "stride")
    if any(v <= 0 for v in (*k, *d, *s)) or any(v < 0 for v in p):
        raise TdxRuntimeError(f"{op}: kernel_size, dilation and stride must be positive and padding non-negative, "
                              f"but got kernel_size={list(k)}, dilation={list(d)}, padding={list(p)}, "
                              f"stride={list(s)}")
    return k, d, p, s


def _blocks(sizes, k, d, p, s, op):
    outs = [(n + 2 * pp - dd * (kk - 1) - 1) // ss + 1 for n, kk, dd, pp, ss in zip(sizes, k, d, p, s)]
    if any(o < 1 for o in outs):
        raise TdxRuntimeError(f"{op}: Given input with spatial size {list(sizes)}, kernel_size={list(k)}, "
                              f"dilation={list(d)}, padding={list(p)}, calculated shape of the array of sliding "
                              f"blocks as {outs}, but its components must be at least one.")
    return outs


def _tables(outs, k, d, s):
    """Per spatial dim, the input positions of each block's taps (``out_i`` lists of ``k_i``)."""
    return [[[o * ss + j * dd for j in range(kk)] for o in range(n_o)] for kk, ss, dd, n_o in zip(k, s, d, outs)]


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):  # noqa: A002 - torch's name
    """Sliding local blocks of ``(N, C, H, W)`` (or ``(C, H, W)``) as ``(N, C * kH * kW, L)`` columns (im2col).

    Raises:
        TdxNotImplementedError: an input that is not 3-D or 4-D.
        TdxRuntimeError: non-positive sizes or no complete block.
    """
    x = need_tensor(input, "unfold")
    done = _kernels.native("unfold", x, kernel_size, dilation, padding, stride)
    if done is not _kernels.NOT_NATIVE:
        return done
    if x.ndim not in (3, 4):
        raise TdxNotImplementedError(f"Input Error: Only 3D or 4D input Tensors are supported (got {x.ndim}D)")
    k, d, p, s = _fold_args("unfold", kernel_size, dilation, padding, stride)
    xb = x.unsqueeze(0) if x.ndim == 3 else x
    outs = _blocks(tuple(xb.shape[2:]), k, d, p, s, "unfold")
    n, c = xb.shape[:2]
    _check_size((n, c, *(size + 2 * pp for size, pp in zip(xb.shape[2:], p))), x, "unfold")  # the padded input
    _check_size((n, c * k[0] * k[1], outs[0] * outs[1]), x, "unfold")  # and the columns, before any table
    tables = _tables(outs, k, d, s)
    padded = pad(xb, [p[1], p[1], p[0], p[0]]) if any(p) else xb
    win = gather_windows(padded, tables)  # (N, C, oh, ow, K)
    out = win.permute(0, 1, 4, 2, 3).reshape(n, c * k[0] * k[1], win.shape[2] * win.shape[3])
    return out.squeeze(0) if x.ndim == 3 else out


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):  # noqa: A002 - torch's name
    """Sum columns ``(N, C * kH * kW, L)`` (or unbatched) back into ``(N, C, *output_size)`` (col2im).

    Raises:
        TdxRuntimeError: the column count does not divide by the kernel size or ``L`` does not match the
            number of blocks of ``output_size``.
        TdxNotImplementedError: an input that is not 2-D or 3-D.
    """
    x = need_tensor(input, "fold")
    done = _kernels.native("fold", x, output_size, kernel_size, dilation, padding, stride)
    if done is not _kernels.NOT_NATIVE:
        return done
    if x.ndim not in (2, 3):
        raise TdxNotImplementedError(f"Input Error: Only unbatched (2D) or batched (3D) input Tensors are supported "
                                     f"(got {x.ndim}D)")
    k, d, p, s = _fold_args("fold", kernel_size, dilation, padding, stride)
    size = tuple_arg(output_size, 2, "fold", "output_size")
    xb = x.unsqueeze(0) if x.ndim == 2 else x
    n, ck, length = xb.shape
    if ck % (k[0] * k[1]):
        raise TdxRuntimeError(f"Expected size of input's dimension 1 to be divisible by the product of kernel_size, "
                              f"but got input.size(1)={ck} and kernel_size={tuple(k)}")
    outs = _blocks(size, k, d, p, s, "fold")
    if outs[0] * outs[1] != length:
        raise TdxRuntimeError(f"Given output_size={tuple(size)}, kernel_size={tuple(k)}, dilation={tuple(d)}, "
                              f"padding={tuple(p)}, stride={tuple(s)}, expected size of input's dimension 2 to match "
                              f"the calculated number of sliding blocks {outs[0]} * {outs[1]} = {outs[0] * outs[1]}, "
                              f"but got input.size(2)={length}.")
    c = ck // (k[0] * k[1])
    hp, wp = size[0] + 2 * p[0], size[1] + 2 * p[1]
    _check_size((n, c, hp, wp), x, "fold")
    tables = _tables(outs, k, d, s)
    pos = [[r * wp + q for r in rows_h for q in rows_w] for rows_h in tables[0] for rows_w in tables[1]]
    # pos[(oh, ow)] lists the K = kH * kW padded positions of one block, in (i, j) order
    flat = tdx.tensor(pos, dtype=tdx.int64, device=x.device).t().reshape(-1)  # (K * L,) matching the columns
    cols = xb.reshape(n, c, k[0] * k[1] * length)
    index = flat.reshape(1, 1, -1).expand(n, c, flat.shape[0])
    out = xb.new_zeros((n, c, hp * wp)).scatter_add(2, index, cols)
    out = out.reshape(n, c, hp, wp)[:, :, p[0]:p[0] + size[0], p[1]:p[1] + size[1]]
    return out.squeeze(0) if x.ndim == 2 else out


def pixel_shuffle(input, upscale_factor):  # noqa: A002 - torch's name
    """``(*, C * r**2, H, W)`` to ``(*, C, H * r, W * r)``.

    Raises:
        ShapeError: fewer than 3 dims, or channels not divisible by ``r**2``.
    """
    x = need_tensor(input, "pixel_shuffle")
    done = _kernels.native("pixel_shuffle", x, upscale_factor)
    if done is not _kernels.NOT_NATIVE:
        return done
    r = int(upscale_factor)
    if x.ndim < 3:
        raise ShapeError(f"pixel_shuffle expects input to have at least 3 dimensions, but got input with {x.ndim} "
                         "dimension(s)")
    if r <= 0:
        raise TdxRuntimeError(f"pixel_shuffle expects a positive upscale_factor, but got {r}")
    lead, (c, h, w) = tuple(x.shape[:-3]), x.shape[-3:]
    if c % (r * r):
        raise ShapeError(f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of "
                         f"upscale_factor, but input.size(-3)={c} is not divisible by {r * r}")
    b = len(lead)
    y = x.reshape(lead + (c // (r * r), r, r, h, w))
    y = y.permute(*range(b), b, b + 3, b + 1, b + 4, b + 2)
    return y.reshape(lead + (c // (r * r), h * r, w * r))


def pixel_unshuffle(input, downscale_factor):  # noqa: A002 - torch's name
    """``(*, C, H * r, W * r)`` to ``(*, C * r**2, H, W)``, the inverse of :func:`pixel_shuffle`.

    Raises:
        ShapeError: fewer than 3 dims, or height/width not divisible by ``r``.
    """
    x = need_tensor(input, "pixel_unshuffle")
    done = _kernels.native("pixel_unshuffle", x, downscale_factor)
    if done is not _kernels.NOT_NATIVE:
        return done
    r = int(downscale_factor)
    if x.ndim < 3:
        raise ShapeError(f"pixel_unshuffle expects input to have at least 3 dimensions, but got input with {x.ndim} "
                         "dimension(s)")
    if r <= 0:
        raise TdxRuntimeError(f"pixel_unshuffle expects a positive downscale_factor, but got {r}")
    lead, (c, h, w) = tuple(x.shape[:-3]), x.shape[-3:]
    if h % r or w % r:
        raise ShapeError(f"pixel_unshuffle expects height ({h}) and width ({w}) to be divisible by "
                         f"downscale_factor ({r})")
    b = len(lead)
    y = x.reshape(lead + (c, h // r, r, w // r, r))
    y = y.permute(*range(b), b, b + 2, b + 4, b + 1, b + 3)
    return y.reshape(lead + (c * r * r, h // r, w // r))
