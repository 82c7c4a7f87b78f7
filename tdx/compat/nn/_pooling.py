"""Pooling functions of ``tdx.nn.functional``: max, average, adaptive, power-average (LP) pooling
in 1, 2 and 3 dims, and max unpooling.

On an executor with torch's kernels each call is torch's own (bit for bit). Elsewhere the
windows are gathered with one ``index_select`` per spatial dim into a ``(..., *out, K)`` tensor
(``K`` elements per window) and reduced with tdx ops, so every result is differentiable on every
executor; max pooling's indices are positions in the flattened spatial input, as torch's.
This module must never import torch or mlx.
"""

from __future__ import annotations

import math

import tdx
from ..._errors import ShapeError, TdxRuntimeError, TdxValueError, UnsupportedOpError
from . import _kernels
from ._activations import need_float, need_tensor, relu, tuple_arg
from ._layers import pad

__all__ = ["max_pool1d", "max_pool2d", "max_pool3d", "max_pool1d_with_indices", "max_pool2d_with_indices",
           "max_pool3d_with_indices", "avg_pool1d", "avg_pool2d", "avg_pool3d", "adaptive_avg_pool1d",
           "adaptive_avg_pool2d", "adaptive_avg_pool3d", "adaptive_max_pool1d", "adaptive_max_pool2d",
           "adaptive_max_pool3d", "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices",
           "adaptive_max_pool3d_with_indices", "lp_pool1d", "lp_pool2d", "lp_pool3d", "max_unpool1d",
           "max_unpool2d", "max_unpool3d", "fractional_max_pool2d", "fractional_max_pool3d",
           "fractional_max_pool2d_with_indices", "fractional_max_pool3d_with_indices", "gather_windows"]


def gather_windows(x, tables):
    """The windows of ``x``'s trailing ``len(tables)`` dims, as ``(..., *out, K)``.

    Args:
        x: a tensor.
        tables: per trailing dim, a list of ``out_i`` lists of ``k_i`` source positions in that dim.
    """
    nd = len(tables)
    lead = x.ndim - nd
    for i, tab in enumerate(tables):
        pos = lead + 2 * i
        out_i, k_i = len(tab), len(tab[0]) if tab else 0
        idx = tdx.tensor([p for row in tab for p in row], dtype=tdx.int64, device=x.device)
        x = x.index_select(pos, idx)
        x = x.reshape(tuple(x.shape[:pos]) + (out_i, k_i) + tuple(x.shape[pos + 1:]))
    order = list(range(lead)) + [lead + 2 * i for i in range(nd)] + [lead + 2 * i + 1 for i in range(nd)]
    x = x.permute(*order)
    return x.reshape(tuple(x.shape[:lead + nd]) + (math.prod(x.shape[lead + nd:]),))  # no -1: zero-size x


def _flat_positions(tables, sizes, device):
    """``(*out, K)`` int64: each window element's position in the flattened spatial input."""
    nd = len(tables)
    total = None
    step = 1
    for i in reversed(range(nd)):
        t = tdx.tensor(tables[i], dtype=tdx.int64, device=device) * step  # (out_i, k_i)
        shape = [1] * (2 * nd)
        shape[i], shape[nd + i] = t.shape[0], t.shape[1]
        t = t.reshape(shape)
        total = t if total is None else total + t
        step *= sizes[i]
    return total.reshape(tuple(total.shape[:nd]) + (-1,))


def _batched(x, nd, op):
    if x.ndim not in (nd + 1, nd + 2):
        raise ShapeError(f"{op}: Expected {nd + 1}D or {nd + 2}D (batch mode) tensor for input, got input of size "
                         f"{list(x.shape)}")
    return (x.unsqueeze(0), True) if x.ndim == nd + 1 else (x, False)


def _out_size(n, k, s, p, d, ceil_mode):
    out = (n + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (out - 1) * s >= n + p:
        out -= 1
    return out


def _pool_args(x, nd, op, kernel_size, stride, padding, dilation, ceil_mode):
    k = tuple_arg(kernel_size, nd, op, "kernel_size")
    s = k if stride is None or (not isinstance(stride, int) and len(stride) == 0) else tuple_arg(stride, nd, op,
                                                                                                   "stride")
    p, d = tuple_arg(padding, nd, op, "padding"), tuple_arg(dilation, nd, op, "dilation")
    if any(v <= 0 for v in k) or any(v <= 0 for v in s) or any(v <= 0 for v in d):
        raise TdxRuntimeError(f"{op}: kernel_size, stride and dilation must be greater than zero, but got "
                              f"kernel_size={list(k)}, stride={list(s)}, dilation={list(d)}")
    if any(pp < 0 or pp > (dd * (kk - 1) + 1) // 2 for pp, kk, dd in zip(p, k, d)):
        raise TdxRuntimeError(f"{op}() padding should be at most half of kernel size, but got padding={list(p)} and "
                              f"kernel_size={list(k)}")
    sizes = tuple(x.shape[-nd:])
    outs = tuple(_out_size(n, kk, ss, pp, dd, ceil_mode) for n, kk, ss, pp, dd in zip(sizes, k, s, p, d))
    if any(o < 1 for o in outs):
        raise TdxRuntimeError(f"Given input size: ({'x'.join(map(str, x.shape[-nd - 1:]))}). Calculated output size: "
                              f"({'x'.join(map(str, (x.shape[-nd - 1],) + outs))}). Output size is too small")
    return k, s, p, d, sizes, outs


def _max_pool(nd, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices):  # noqa: A002
    op = f"max_pool{nd}d"
    x = need_tensor(input, op)
    done = _kernels.native(f"{op}_with_indices" if return_indices else op, x, kernel_size, stride, padding, dilation,
                           ceil_mode=ceil_mode)
    if done is not _kernels.NOT_NATIVE:
        return done
    xb, unbatched = _batched(x, nd, op)
    k, s, p, d, sizes, outs = _pool_args(xb, nd, op, kernel_size, stride, padding, dilation, ceil_mode)
    tables = [[[o * ss + j * dd - pp for j in range(kk)] for o in range(n_o)]
              for kk, ss, pp, dd, n_o in zip(k, s, p, d, outs)]
    # positions outside the input (padding, or a ceil_mode window's tail) read -inf
    spans = [max(max(r[-1] for r in tab) + 1 - n, 0) for tab, n in zip(tables, sizes)]
    lows = list(p)
    fill = -math.inf if x.dtype.is_floating_point else _lowest(x.dtype)
    padded = xb
    amounts = []
    for lo, hi in zip(reversed(lows), reversed(spans)):
        amounts += [lo, hi]
    if any(amounts):
        padded = pad(xb, amounts, value=fill)
    shifted = [[[q + lo for q in r] for r in tab] for tab, lo in zip(tables, lows)]
    win = gather_windows(padded, shifted)
    values, arg = win.max(-1)
    out = values.squeeze(0) if unbatched else values
    if not return_indices:
        return out
    pos = _flat_positions(tables, sizes, x.device)
    pos = pos.expand(tuple(win.shape))
    idx = pos.gather(-1, arg.unsqueeze(-1)).squeeze(-1)
    return out, (idx.squeeze(0) if unbatched else idx)


def _lowest(dtype):
    return tdx.iinfo(dtype).min if dtype is not tdx.bool else False


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,  # noqa: A002
               return_indices=False):
    """Max over sliding windows of the last dim of ``(N, C, L)`` (or ``(C, L)``).

    Args:
        kernel_size: window size; stride: step (default ``kernel_size``); padding: implicit -inf on both sides
            (at most half the window); dilation: spacing of window elements; ceil_mode: round the output size up;
        return_indices: also return the flat positions of the maxima (for :func:`max_unpool1d`).

    Raises:
        TdxRuntimeError: non-positive sizes, padding over half the kernel, an output size below 1.
        ShapeError: an input that is not 2-D or 3-D.
    """
    return _max_pool(1, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,  # noqa: A002
               return_indices=False):
    """Max pooling over ``(N, C, H, W)`` (or unbatched); see :func:`max_pool1d`."""
    return _max_pool(2, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,  # noqa: A002
               return_indices=False):
    """Max pooling over ``(N, C, D, H, W)`` (or unbatched); see :func:`max_pool1d`."""
    return _max_pool(3, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,  # noqa: A002
                            return_indices=True):
    """:func:`max_pool1d` returning ``(values, indices)``."""
    return _max_pool(1, input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,  # noqa: A002
                            return_indices=True):
    """:func:`max_pool2d` returning ``(values, indices)``."""
    return _max_pool(2, input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,  # noqa: A002
                            return_indices=True):
    """:func:`max_pool3d` returning ``(values, indices)``."""
    return _max_pool(3, input, kernel_size, stride, padding, dilation, ceil_mode, True)


def _avg_pool(nd, input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):  # noqa: A002
    op = f"avg_pool{nd}d"
    x = need_tensor(input, op)
    extra = () if nd == 1 else (divisor_override,)
    done = _kernels.native(op, x, kernel_size, stride, padding, ceil_mode, count_include_pad, *extra)
    if done is not _kernels.NOT_NATIVE:
        return done
    if divisor_override is not None and divisor_override == 0:
        raise TdxRuntimeError("divisor must be not zero")
    integral = not (x.dtype.is_floating_point or x.dtype.is_complex)
    if integral and x.dtype is not tdx.int64:  # torch's CPU kernels: floating dtypes and int64
        need_float(x, op, "avg_pool3d_out_frame" if nd == 3 else "avg_pool2d")
    xb, unbatched = _batched(x, nd, op)
    k, s, p, _, sizes, outs = _pool_args(xb, nd, op, kernel_size, stride, padding, 1, ceil_mode)
    tables = [[[o * ss + j - pp for j in range(kk)] for o in range(n_o)] for kk, ss, pp, n_o in zip(k, s, p, outs)]
    spans = [max(max(r[-1] for r in tab) + 1 - n, 0) for tab, n in zip(tables, sizes)]
    amounts = []
    for lo, hi in zip(reversed(p), reversed(spans)):
        amounts += [lo, hi]
    padded = pad(xb, amounts) if any(amounts) else xb
    win = gather_windows(padded, [[[q + lo for q in r] for r in tab] for tab, lo in zip(tables, p)])
    total = win.sum(-1)
    # int64 windows: the sum (wrapping as torch's) divided with truncation toward zero, as torch's kernel
    mode = "trunc" if integral else None
    if divisor_override is not None:
        return _unbatch(total.div(divisor_override, rounding_mode=mode), unbatched)
    counts = []
    for kk, ss, pp, n, n_o in zip(k, s, p, sizes, outs):
        row = []
        for o in range(n_o):
            start, end = o * ss - pp, min(o * ss - pp + kk, n + pp)
            if not count_include_pad:
                start, end = max(start, 0), min(end, n)
            row.append(end - start)
        counts.append(row)
    div = None
    for i, row in enumerate(counts):
        shape = [1] * nd
        shape[i] = len(row)
        t = tdx.tensor(row, dtype=total.dtype, device=x.device).reshape(shape)
        div = t if div is None else div * t
    return _unbatch(total.div(div, rounding_mode=mode), unbatched)


def _unbatch(t, unbatched):
    return t.squeeze(0) if unbatched else t


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):  # noqa: A002
    """Mean over sliding windows of the last dim of ``(N, C, L)`` (or ``(C, L)``).

    Args:
        count_include_pad: count the implicit zero padding in each window's divisor.

    Raises:
        TdxRuntimeError: non-positive sizes, padding over half the kernel, an output size below 1.
    """
    return _avg_pool(1, input, kernel_size, stride, padding, ceil_mode, count_include_pad, None)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,  # noqa: A002
               divisor_override=None):
    """Average pooling over ``(N, C, H, W)``; ``divisor_override`` replaces every window's divisor."""
    return _avg_pool(2, input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,  # noqa: A002
               divisor_override=None):
    """Average pooling over ``(N, C, D, H, W)``; see :func:`avg_pool2d`."""
    return _avg_pool(3, input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)


def _adaptive_tables(sizes, outs):
    """Per dim, torch's adaptive windows ``[floor(i*n/o), ceil((i+1)*n/o))``, padded to the widest by
    repeating the last position (a repeat changes neither a max nor its first index)."""
    tables = []
    for n, o in zip(sizes, outs):
        rows = [list(range((i * n) // o, -((-(i + 1) * n) // o))) for i in range(o)]
        width = max(len(r) for r in rows)
        tables.append([r + [r[-1]] * (width - len(r)) for r in rows])
    return tables


_SHORT_WINDOW = 8  # windows up to this long are summed as slices (a short reduction is slow on some executors)
_MAX_PHASES = 8  # output windows repeating with a period up to this are computed by phase, as slices


def _adaptive_mean(x, d, o):
    """The means of ``x`` over torch's ``o`` adaptive windows along ``d``, in a number of ops that does not grow
    with ``o``. Windows repeat with period ``p = o / gcd(n, o)``, shifted by ``q = n / gcd(n, o)``: when ``p`` and
    the windows are short, each phase (windows ``r, r + p, ...``) is a sum of strided slices, the phases
    interleaved; equal long windows (``p == 1``) are a reshape and a mean; the rest one gather of the windows,
    padded to the widest with a position holding zero, summed and divided by each window's length."""
    n = x.shape[d]
    lead, tail = tuple(x.shape[:d]), tuple(x.shape[d + 1:])
    g = math.gcd(n, o)
    p, q = (o // g, n // g) if o else (0, 0)
    rows = [range((j * n) // o, -((-(j + 1) * n) // o)) for j in range(min(o, p) if o else 0)]
    width = max((len(r) for r in rows), default=1)
    if p == 1 and width > _SHORT_WINDOW:
        return x.reshape(*lead, o, q, *tail).mean(d + 1)
    if o and p <= _MAX_PHASES and width <= _SHORT_WINDOW:
        head = (slice(None),) * d
        phases = []
        for r in rows:
            total = None
            for k in r:
                tap = x[head + (slice(k, k + q * (g - 1) + 1, q),)]
                total = tap if total is None else total + tap
            phases.append(total / len(r))
        return phases[0] if p == 1 else tdx.stack(phases, d + 1).reshape(*lead, o, *tail)
    rows = [range((j * n) // o, -((-(j + 1) * n) // o)) for j in range(o)]
    width = max((len(r) for r in rows), default=1)
    table = [list(r) + [n] * (width - len(r)) for r in rows]  # n: the zero appended below
    padded = tdx.cat([x, x.new_zeros((*lead, 1, *tail))], d)
    idx = tdx.tensor([p for row in table for p in row], dtype=tdx.int64, device=x.device)
    sums = padded.index_select(d, idx).reshape(*lead, o, width, *tail).sum(d + 1)
    lengths = tdx.tensor([len(r) for r in rows], dtype=x.dtype, device=x.device).reshape(o, *(1,) * len(tail))
    return sums / lengths


def _adaptive_out(x, nd, op, output_size):
    if isinstance(output_size, int) or output_size is None:
        output_size = (output_size,) * nd
    output_size = tuple(output_size)
    if len(output_size) != nd:
        raise TdxValueError(f"{op}: output_size must be an int or {nd} values, got {output_size!r}")
    outs = tuple(n if o is None else int(o) for o, n in zip(output_size, x.shape[-nd:]))
    if any(n == 0 for n in x.shape[-nd:]) or any(o < 0 for o in outs):
        raise TdxRuntimeError(f"{op}(): Expected input to have non-zero size for non-batch dimensions, but input has "
                              f"sizes {list(x.shape)}, output_size {list(outs)}")
    return outs


def _adaptive(nd, kind, input, output_size, return_indices=False):  # noqa: A002
    op = f"adaptive_{kind}_pool{nd}d"
    x = need_tensor(input, op)
    args = (x, output_size) if kind == "avg" else (x, output_size, return_indices)
    done = _kernels.native(op, *args)
    if done is not _kernels.NOT_NATIVE:
        return done
    xb, unbatched = _batched(x, nd, op)
    outs = _adaptive_out(xb, nd, op, output_size)
    sizes = tuple(xb.shape[-nd:])
    if kind == "avg":  # separable: the mean over a box is the mean of means along each dim
        out = xb
        for i, (n, o) in enumerate(zip(sizes, outs)):
            out = _adaptive_mean(out, xb.ndim - nd + i, o)
        return _unbatch(out, unbatched)
    tables = _adaptive_tables(sizes, outs)
    win = gather_windows(xb, tables)
    values, arg = win.max(-1)
    if not return_indices:
        return _unbatch(values, unbatched)
    pos = _flat_positions(tables, sizes, x.device).expand(tuple(win.shape))
    return _unbatch(values, unbatched), _unbatch(pos.gather(-1, arg.unsqueeze(-1)).squeeze(-1), unbatched)


def adaptive_avg_pool1d(input, output_size):  # noqa: A002 - torch's name
    """Average pooling of ``(N, C, L)`` to ``output_size`` windows chosen as torch chooses them."""
    return _adaptive(1, "avg", input, output_size)


def adaptive_avg_pool2d(input, output_size):  # noqa: A002 - torch's name
    """Adaptive average pooling of ``(N, C, H, W)``; ``output_size`` an int or pair (None keeps a dim)."""
    return _adaptive(2, "avg", input, output_size)


def adaptive_avg_pool3d(input, output_size):  # noqa: A002 - torch's name
    """Adaptive average pooling of ``(N, C, D, H, W)``."""
    return _adaptive(3, "avg", input, output_size)


def adaptive_max_pool1d(input, output_size, return_indices=False):  # noqa: A002 - torch's name
    """Adaptive max pooling of ``(N, C, L)``; with ``return_indices`` also the flat positions of the maxima."""
    return _adaptive(1, "max", input, output_size, return_indices)


def adaptive_max_pool2d(input, output_size, return_indices=False):  # noqa: A002 - torch's name
    """Adaptive max pooling of ``(N, C, H, W)``."""
    return _adaptive(2, "max", input, output_size, return_indices)


def adaptive_max_pool3d(input, output_size, return_indices=False):  # noqa: A002 - torch's name
    """Adaptive max pooling of ``(N, C, D, H, W)``."""
    return _adaptive(3, "max", input, output_size, return_indices)


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=True):  # noqa: A002
    """:func:`adaptive_max_pool1d` returning ``(values, indices)``."""
    return _adaptive(1, "max", input, output_size, True)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=True):  # noqa: A002
    """:func:`adaptive_max_pool2d` returning ``(values, indices)``."""
    return _adaptive(2, "max", input, output_size, True)


def adaptive_max_pool3d_with_indices(input, output_size, return_indices=True):  # noqa: A002
    """:func:`adaptive_max_pool3d` returning ``(values, indices)``."""
    return _adaptive(3, "max", input, output_size, True)


def _lp_pool(nd, input, norm_type, kernel_size, stride, ceil_mode):  # noqa: A002
    """torch's definition: ``(sum over the window of x**p) ** (1/p)``, through average pooling."""
    x = need_tensor(input, f"lp_pool{nd}d")
    done = _kernels.native(f"lp_pool{nd}d", x, norm_type, kernel_size, stride, ceil_mode)
    if done is not _kernels.NOT_NATIVE:
        return done
    k = tuple_arg(kernel_size, nd, f"lp_pool{nd}d", "kernel_size")
    pool = (avg_pool1d, avg_pool2d, avg_pool3d)[nd - 1]
    out = pool(x.pow(norm_type), k, stride, 0, ceil_mode)
    return (out.sign() * relu(out.abs())).mul(math.prod(k)).pow(1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):  # noqa: A002 - torch's name
    """Power-average pooling ``(sum x**p) ** (1/p)`` over windows of ``(N, C, L)``."""
    return _lp_pool(1, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):  # noqa: A002 - torch's name
    """Power-average pooling over ``(N, C, H, W)``."""
    return _lp_pool(2, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):  # noqa: A002 - torch's name
    """Power-average pooling over ``(N, C, D, H, W)``."""
    return _lp_pool(3, input, norm_type, kernel_size, stride, ceil_mode)


def _max_unpool(nd, input, indices, kernel_size, stride, padding, output_size):  # noqa: A002
    op = f"max_unpool{nd}d"
    x, idx = need_tensor(input, op), need_tensor(indices, op, "indices")
    done = _kernels.native(op, x, idx, kernel_size, stride, padding, output_size)
    if done is not _kernels.NOT_NATIVE:
        return done
    k = tuple_arg(kernel_size, nd, op, "kernel_size")
    s = k if stride is None else tuple_arg(stride, nd, op, "stride")
    p = tuple_arg(padding, nd, op, "padding")
    xb, unbatched = _batched(x, nd, op)
    ib = idx.unsqueeze(0) if unbatched else idx
    if tuple(ib.shape) != tuple(xb.shape):
        raise ShapeError(f"{op}: Expected shape of indices to be same as that of the input tensor "
                         f"({list(x.shape)}) but got indices tensor with shape: {list(idx.shape)}")
    default = tuple((n - 1) * ss - 2 * pp + kk for n, ss, pp, kk in zip(xb.shape[-nd:], s, p, k))
    if output_size is None:
        size = default
    else:
        size = tuple(int(v) for v in output_size)[-nd:]
        if len(size) != nd:
            raise TdxValueError(f"{op}: output_size must have {nd} or {nd + 2} elements, got {list(output_size)}")
        for got, want, ss in zip(size, default, s):
            if not want - ss < got < want + ss:
                raise TdxValueError(f"invalid output_size {list(output_size)} (dim must be between {want - ss} and "
                                    f"{want + ss}, exclusive)")
    lead = tuple(xb.shape[:2])
    flat = math.prod(size)
    if ib.numel() and bool(((ib < 0) | (ib >= flat)).any().item()):
        bad = int(ib.masked_select((ib < 0) | (ib >= flat))[0].item())
        raise TdxRuntimeError(f"Found an invalid max index: {bad} (output volumes are of size "
                              f"{'x'.join(map(str, size))})")
    out = xb.new_zeros(lead + (flat,)).scatter(-1, ib.reshape(lead + (-1,)), xb.reshape(lead + (-1,)))
    return _unbatch(out.reshape(lead + size), unbatched)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):  # noqa: A002
    """The partial inverse of :func:`max_pool1d`: each value goes to its index, zeros elsewhere.

    Raises:
        TdxValueError: an ``output_size`` outside ``default +- stride``.
        TdxRuntimeError: an index outside the output.
    """
    return _max_unpool(1, input, indices, kernel_size, stride, padding, output_size)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):  # noqa: A002
    """The partial inverse of :func:`max_pool2d`; see :func:`max_unpool1d`."""
    return _max_unpool(2, input, indices, kernel_size, stride, padding, output_size)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):  # noqa: A002
    """The partial inverse of :func:`max_pool3d`; see :func:`max_unpool1d`."""
    return _max_unpool(3, input, indices, kernel_size, stride, padding, output_size)




def _fractional(nd, input, kernel_size, output_size, output_ratio, return_indices, _random_samples):  # noqa: A002
    op = f"fractional_max_pool{nd}d"
    x = need_tensor(input, op)
    done = _kernels.native(op, x, kernel_size, output_size, output_ratio, True, _random_samples)
    if done is not _kernels.NOT_NATIVE:
        return done if return_indices else done[0]
    raise UnsupportedOpError(f"{op} is not supported on {x.device}; tdx runs fractional max pooling on torch "
                             "executors only")


def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,  # noqa: A002
                          _random_samples=None):
    """Max pooling over pseudo-random windows (Graham's fractional max pooling) of ``(N, C, H, W)``.

    Raises:
        UnsupportedOpError: on an executor without torch's kernels (MLX).
    """
    return _fractional(2, input, kernel_size, output_size, output_ratio, return_indices, _random_samples)


def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,  # noqa: A002
                          _random_samples=None):
    """Fractional max pooling of ``(N, C, D, H, W)``; see :func:`fractional_max_pool2d`."""
    return _fractional(3, input, kernel_size, output_size, output_ratio, return_indices, _random_samples)


def fractional_max_pool2d_with_indices(input, kernel_size, output_size=None, output_ratio=None,  # noqa: A002
                                       return_indices=True, _random_samples=None):
    """:func:`fractional_max_pool2d` returning ``(values, indices)``."""
    return _fractional(2, input, kernel_size, output_size, output_ratio, True, _random_samples)


def fractional_max_pool3d_with_indices(input, kernel_size, output_size=None, output_ratio=None,  # noqa: A002
                                       return_indices=True, _random_samples=None):
    """:func:`fractional_max_pool3d` returning ``(values, indices)``."""
    return _fractional(3, input, kernel_size, output_size, output_ratio, True, _random_samples)
