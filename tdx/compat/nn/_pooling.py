"""Pooling and pixel rearrangement of ``tdx.nn.functional``: ``max_pool1d/2d/3d`` (with indices),
``avg_pool1d/2d/3d``, ``adaptive_avg_pool1d/2d/3d``, ``adaptive_max_pool1d/2d/3d``, ``pixel_shuffle``
and ``pixel_unshuffle``.

Each is composed from tdx ops: windows are gathered with ``Tensor.unfold`` over the padded input
(``-inf`` padding for max, zeros for average), so every pool runs and differentiates on every
executor; max-pool indices are flat positions in each input plane, as torch's. This module must
never import torch or mlx.
"""

from __future__ import annotations

import math

import tdx
from ._activations import need_tensor
from ._error_kinds import TdxRuntimeError

__all__ = ["max_pool1d", "max_pool2d", "max_pool3d", "max_pool1d_with_indices", "max_pool2d_with_indices",
           "max_pool3d_with_indices", "avg_pool1d", "avg_pool2d", "avg_pool3d", "adaptive_avg_pool1d",
           "adaptive_avg_pool2d", "adaptive_avg_pool3d", "adaptive_max_pool1d", "adaptive_max_pool2d",
           "adaptive_max_pool3d", "pixel_shuffle", "pixel_unshuffle"]


def _tuple(v, n, name):
    if isinstance(v, int):
        return (v,) * n
    v = tuple(v)
    if len(v) == 1:
        return v * n
    if len(v) != n:
        raise TdxRuntimeError(f"{name} must be a single int or a tuple of {n} ints, got {list(v)}")
    return v


def _out_size(size, k, s, p, d, ceil_mode):
    span = size + 2 * p - d * (k - 1) - 1
    out = (-(-span // s) if ceil_mode else span // s) + 1
    if ceil_mode and (out - 1) * s >= size + p:  # the last window must start inside the input or left padding
        out -= 1
    return out


def _windows(x, n, kernel, stride, padding, dilation, ceil_mode, fill):
    """``x`` (``(B, *spatial)``) padded by ``fill`` and unfolded: ``(B, *out, *kernel)`` windows."""
    sp = x.shape[-n:]
    outs = [_out_size(sp[i], kernel[i], stride[i], padding[i], dilation[i], ceil_mode) for i in range(n)]
    for i in range(n):
        dim = x.ndim - n + i
        right = max(0, (outs[i] - 1) * stride[i] + dilation[i] * (kernel[i] - 1) + 1 - sp[i] - padding[i])
        if padding[i] or right:
            shape = list(x.shape)
            shape[dim] = padding[i]
            left_fill = tdx.full(shape, fill, dtype=x.dtype, device=x.device)
            shape[dim] = right
            right_fill = tdx.full(shape, fill, dtype=x.dtype, device=x.device)
            x = tdx.cat([left_fill, x, right_fill], dim)
    lead = x.ndim - n
    for i in range(n):
        span = dilation[i] * (kernel[i] - 1) + 1
        x = x.unfold(lead + i, span, stride[i])  # (..., out_i, ..., span_i) appended last
        if dilation[i] > 1:
            x = x[..., ::dilation[i]]
        x = x.narrow(lead + i, 0, outs[i])
    return x, outs


def _plane_positions(sp, n, kernel, stride, padding, dilation, ceil_mode, device):
    """Flat input positions of every window element (-1 for padding), shaped ``(*out, *kernel)``."""
    idx = tdx.arange(math.prod(sp), device=device).reshape(sp).to(tdx.float64)
    win, _ = _windows(idx.unsqueeze(0), n, kernel, stride, padding, dilation, ceil_mode, -1.0)
    return win[0].long()


def _max_pool(n):
    def fn(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):  # noqa: A002
        x = need_tensor(input, f"max_pool{n}d")
        if x.ndim not in (n + 1, n + 2):
            raise TdxRuntimeError(f"max_pool{n}d: Expected {n + 1}D or {n + 2}D input, got {x.ndim}D")
        k = _tuple(kernel_size, n, "kernel_size")
        s = k if stride is None or stride == [] or stride == () else _tuple(stride, n, "stride")
        p, d = _tuple(padding, n, "padding"), _tuple(dilation, n, "dilation")
        if any(pp > kk // 2 for pp, kk in zip(p, k)):
            raise TdxRuntimeError(f"pad should be at most half of effective kernel size, but got pad={list(p)}, "
                                  f"kernel_size={list(k)}")
        lead = x.shape[:-n]
        flat = x.reshape(-1, *x.shape[-n:])
        fill = -math.inf if x.dtype.is_floating_point else (0 if x.dtype in (tdx.uint8, tdx.bool) else
                                                            -(2 ** (8 * x.dtype.itemsize - 1)))
        win, outs = _windows(flat, n, k, s, p, d, ceil_mode, fill)
        win = win.reshape(*win.shape[:n + 1], math.prod(k))
        values, arg = win.max(-1)
        out = values.reshape(*lead, *outs)
        if not return_indices:
            return out
        pos = _plane_positions(tuple(x.shape[-n:]), n, k, s, p, d, ceil_mode, x.device).reshape(*outs, math.prod(k))
        idx = pos.expand(arg.shape[0], *pos.shape).gather(-1, arg.unsqueeze(-1)).squeeze(-1)
        return out, idx.reshape(*lead, *outs)

    fn.__name__ = f"max_pool{n}d"
    fn.__doc__ = f"The {n}-D max pooling of ``input`` (with the flat indices of the maxima when asked)."
    return fn


def _avg_pool(n):
    def fn(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,  # noqa: A002
           divisor_override=None):
        x = need_tensor(input, f"avg_pool{n}d")
        if x.ndim not in (n + 1, n + 2):
            raise TdxRuntimeError(f"avg_pool{n}d: Expected {n + 1}D or {n + 2}D input, got {x.ndim}D")
        k = _tuple(kernel_size, n, "kernel_size")
        s = k if stride is None or stride == [] or stride == () else _tuple(stride, n, "stride")
        p = _tuple(padding, n, "padding")
        if any(pp > kk // 2 for pp, kk in zip(p, k)):
            raise TdxRuntimeError(f"pad should be at most half of kernel size, but got pad={list(p)}, "
                                  f"kernel_size={list(k)}")
        lead = x.shape[:-n]
        flat = x.reshape(-1, *x.shape[-n:])
        win, outs = _windows(flat, n, k, s, p, (1,) * n, ceil_mode, 0.0)
        total = win.reshape(*win.shape[:n + 1], math.prod(k)).sum(-1)
        if divisor_override:
            div = float(divisor_override)
        else:
            # the elements each window covers: inside the padded input (count_include_pad) or the input itself
            ones = tdx.ones(tuple(x.shape[-n:]), dtype=tdx.float64, device=x.device)
            if count_include_pad:
                padded = tuple(sz + 2 * pp for sz, pp in zip(x.shape[-n:], p))
                ones = tdx.ones(padded, dtype=tdx.float64, device=x.device)
                cw, _ = _windows(ones.unsqueeze(0), n, k, s, (0,) * n, (1,) * n, ceil_mode, 0.0)
            else:
                cw, _ = _windows(ones.unsqueeze(0), n, k, s, p, (1,) * n, ceil_mode, 0.0)
            cw = cw.narrow(1, 0, outs[0]) if n >= 1 else cw
            div = cw.reshape(*cw.shape[:n + 1], math.prod(k)).sum(-1)[0]
            for i in range(n):
                div = div.narrow(i, 0, outs[i])
            div = div.to(total.dtype)
        return (total / div).to(x.dtype).reshape(*lead, *outs)

    fn.__name__ = f"avg_pool{n}d"
    fn.__doc__ = f"The {n}-D average pooling of ``input``."
    return fn


def _adaptive(n, kind):
    def fn(input, output_size, return_indices=False):  # noqa: A002
        x = need_tensor(input, f"adaptive_{kind}_pool{n}d")
        if x.ndim not in (n + 1, n + 2):
            raise TdxRuntimeError(f"adaptive_{kind}_pool{n}d(): Expected {n + 1}D or {n + 2}D tensor, but got "
                                  f"{list(x.shape)}")
        sizes = _tuple(output_size, n, "output_size")
        sp = x.shape[-n:]
        sizes = tuple(sp[i] if sizes[i] is None else sizes[i] for i in range(n))
        out, idx = x, None
        pos = tdx.arange(math.prod(sp), device=x.device).reshape(sp) if kind == "max" else None
        for i in range(n):
            dim = x.ndim - n + i
            size, o = sp[i], sizes[i]
            pieces, ipieces = [], []
            for j in range(o):
                a, b = (j * size) // o, -(-((j + 1) * size) // o)
                seg = out.narrow(dim, a, b - a)
                if kind == "avg":
                    pieces.append(seg.mean(dim, keepdim=True))
                else:
                    pieces.append(seg)
            if kind == "avg":
                out = tdx.cat(pieces, dim)
            else:
                out = pieces  # resolved below, all dims at once
                break
        if kind == "avg":
            return out
        return _adaptive_max(x, n, sizes, pos, return_indices)

    fn.__name__ = f"adaptive_{kind}_pool{n}d"
    fn.__doc__ = f"The {n}-D adaptive {kind} pooling of ``input`` to ``output_size``."
    return fn


def _adaptive_max(x, n, sizes, pos, return_indices):
    sp = x.shape[-n:]
    lead = x.shape[:-n]
    flat = x.reshape(-1, *sp)
    vals, idxs = [], []
    for cell in _cells(sizes):
        index = [slice(None)]
        for i, j in enumerate(cell):
            a, b = (j * sp[i]) // sizes[i], -(-((j + 1) * sp[i]) // sizes[i])
            index.append(slice(a, b))
        block = flat[tuple(index)].reshape(flat.shape[0], -1)
        v, a = block.max(-1)
        vals.append(v)
        idxs.append(pos[tuple(index[1:])].reshape(-1).gather(0, a) if return_indices else None)
    out = tdx.stack(vals, -1).reshape(*lead, *sizes)
    if not return_indices:
        return out
    return out, tdx.stack(idxs, -1).reshape(*lead, *sizes)


def _cells(sizes):
    if not sizes:
        yield ()
        return
    for j in range(sizes[0]):
        for rest in _cells(sizes[1:]):
            yield (j, *rest)


def pixel_shuffle(input, upscale_factor):  # noqa: A002
    """``(*, C * r * r, H, W)`` rearranged to ``(*, C, H * r, W * r)``."""
    x = need_tensor(input, "pixel_shuffle")
    r = upscale_factor
    if x.ndim < 3:
        raise TdxRuntimeError(f"pixel_shuffle expects input to have at least 3 dimensions, but got input with "
                              f"{x.ndim} dimension(s)")
    c, h, w = x.shape[-3:]
    if c % (r * r):
        raise TdxRuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the square "
                              f"of upscale_factor, but input.size(-3)={c} is not divisible by {r * r}")
    lead = x.shape[:-3]
    y = x.reshape(*lead, c // (r * r), r, r, h, w)
    k = len(lead)
    y = y.permute(*range(k), k, k + 3, k + 1, k + 4, k + 2)
    return y.reshape(*lead, c // (r * r), h * r, w * r)


def pixel_unshuffle(input, downscale_factor):  # noqa: A002
    """``(*, C, H * r, W * r)`` rearranged to ``(*, C * r * r, H, W)``."""
    x = need_tensor(input, "pixel_unshuffle")
    r = downscale_factor
    if x.ndim < 3:
        raise TdxRuntimeError(f"pixel_unshuffle expects input to have at least 3 dimensions, but got input with "
                              f"{x.ndim} dimension(s)")
    c, h, w = x.shape[-3:]
    if h % r or w % r:
        raise TdxRuntimeError(f"pixel_unshuffle expects height and width to be divisible by downscale_factor, got "
                              f"{h}x{w} and {r}")
    lead = x.shape[:-3]
    k = len(lead)
    y = x.reshape(*lead, c, h // r, r, w // r, r)
    y = y.permute(*range(k), k, k + 2, k + 4, k + 1, k + 3)
    return y.reshape(*lead, c * r * r, h // r, w // r)


def _dispatching(impl):
    """``impl`` behind torch's ``(*args, **kwargs)`` signature (torch's boolean dispatch on ``return_indices``)."""
    def fn(*args, **kwargs):
        return impl(*args, **kwargs)

    fn.__name__ = fn.__qualname__ = impl.__name__
    fn.__doc__ = impl.__doc__
    return fn


def _two_args(impl):
    """``impl`` with torch's ``(input, output_size)`` signature."""
    def fn(input, output_size):  # noqa: A002
        return impl(input, output_size)

    fn.__name__ = fn.__qualname__ = impl.__name__
    fn.__doc__ = impl.__doc__
    return fn


for _n in (1, 2, 3):
    globals()[f"max_pool{_n}d"] = _dispatching(_max_pool(_n))
    globals()[f"avg_pool{_n}d"] = _avg_pool(_n)
    globals()[f"adaptive_avg_pool{_n}d"] = _two_args(_adaptive(_n, "avg"))
    globals()[f"adaptive_max_pool{_n}d"] = _dispatching(_adaptive(_n, "max"))


def _with_indices(n):
    pool = _max_pool(n)

    def fn(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=True):  # noqa: A002
        return pool(input, kernel_size, stride, padding, dilation, ceil_mode, True)

    fn.__name__ = f"max_pool{n}d_with_indices"
    return fn


for _n in (1, 2, 3):
    globals()[f"max_pool{_n}d_with_indices"] = _with_indices(_n)
