"""Convolutions of ``tdx.nn.functional``: ``conv1d/2d/3d`` and ``conv_transpose1d/2d/3d``.

On an executor with torch's kernels (cpu, cuda, mps) each call runs torch's own convolution
(results, gradients and errors bit for bit). Elsewhere (MLX) the arguments are checked as torch
checks them and the executor's ``conv_nd`` kernel runs as one tape node; a transposed
convolution is an input-dilated convolution with the kernel flipped and its channel axes
swapped per group. Bias is added by a tdx op, so every input and parameter gets its gradient.
This module must never import torch or mlx.
"""

from __future__ import annotations

import tdx
from ..._errors import DtypeMismatchError, ShapeError, TdxRuntimeError, TdxTypeError
from . import _kernels
from ._activations import need_float, need_tensor, torch_name, tuple_arg
from ._layers import pad

__all__ = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "conv_tbc"]


def _need_kernel_dtype(x, op, nd, transposed):
    """torch's CPU kernels: a convolution takes floating and integer tensors (not bool), a transposed one
    floating tensors and int64.

    Raises:
        TdxNotImplementedError: another dtype, with torch's kernel name.
    """
    d = x.dtype
    if d.is_floating_point or (not d.is_complex and d is not tdx.bool and (not transposed or d is tdx.int64)):
        return
    kernel = f"slow_conv_transpose{3 if nd == 3 else 2}d_out_cpu" if transposed else f"slow_conv{nd}d_cpu"
    need_float(x, op, kernel)


def _check(op, nd, x, w, b, groups, in_channels, transposed=False):
    """torch's checks of the input, weight and bias of a convolution; returns ``(x, unbatched)``."""
    if x.ndim not in (nd + 1, nd + 2):
        raise ShapeError(f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to {op}, but got input of "
                         f"size: {list(x.shape)}")
    if w.ndim != nd + 2:
        raise ShapeError(f"{op}: weight should have {nd + 2} dimensions, got a weight of size {list(w.shape)}")
    need_tensor(x, op)
    _need_kernel_dtype(x, op, nd, transposed)
    if x.dtype is not w.dtype:
        raise DtypeMismatchError(f"Input type ({torch_name(x.dtype)}) and weight type ({torch_name(w.dtype)}) "
                                 "should be the same")
    if b is not None and b.dtype is not x.dtype:
        raise DtypeMismatchError(f"Input type ({torch_name(x.dtype)}) and bias type ({torch_name(b.dtype)}) "
                                 "should be the same")
    if isinstance(groups, bool) or not isinstance(groups, int) or groups <= 0:
        raise TdxRuntimeError(f"non-positive groups is not supported (got groups={groups!r})")
    unbatched = x.ndim == nd + 1
    x = x.unsqueeze(0) if unbatched else x
    if x.shape[1] != in_channels:
        raise TdxRuntimeError(f"Given groups={groups}, weight of size {list(w.shape)}, expected input"
                              f"{list(x.shape)} to have {in_channels} channels, but got {x.shape[1]} channels "
                              "instead")
    return x, unbatched


def _positive(values, what):
    if any(v <= 0 for v in values):
        raise TdxRuntimeError(f"non-positive {what} is not supported (got {what}={list(values)})")


def _add_bias(out, b, nd, n_out):
    if b is None:
        return out
    if b.ndim != 1 or b.shape[0] != n_out:
        raise TdxRuntimeError(f"Given weight of size {n_out} output channels, expected bias to be 1-dimensional with "
                              f"{n_out} elements, but got bias of size {list(b.shape)} instead")
    return out + b.reshape((1, n_out) + (1,) * nd)


def _conv(nd, input, weight, bias, stride, padding, dilation, groups):  # noqa: A002 - torch's name
    op = f"conv{nd}d"
    x, w = need_tensor(input, op), need_tensor(weight, op, "weight")
    if bias is not None:
        need_tensor(bias, op, "bias")
    done = _kernels.native(op, x, w, bias, stride, padding, dilation, groups)
    if done is not _kernels.NOT_NATIVE:
        return done
    stride, dilation = tuple_arg(stride, nd, op, "stride"), tuple_arg(dilation, nd, op, "dilation")
    _positive(stride, "stride")
    _positive(dilation, "dilation")
    x, unbatched = _check(op, nd, x, w, bias, groups, w.shape[1] * groups if w.ndim == nd + 2 else -1)
    if w.shape[0] % groups:
        raise TdxRuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, "
                              f"but got weight of size {list(w.shape)} instead")
    kernel = tuple(w.shape[2:])
    if isinstance(padding, str):
        if padding == "valid":
            lo = hi = (0,) * nd
        elif padding == "same":
            if any(s != 1 for s in stride):
                raise TdxRuntimeError("padding='same' is not supported for strided convolutions")
            total = [d * (k - 1) for d, k in zip(dilation, kernel)]
            lo = tuple(t // 2 for t in total)
            hi = tuple(t - t // 2 for t in total)
        else:
            raise TdxRuntimeError(f"Invalid padding string: {padding!r}")
    else:
        lo = hi = tuple_arg(padding, nd, op, "padding")
        if any(p < 0 for p in lo):
            raise TdxRuntimeError(f"negative padding is not supported (got padding={list(lo)})")
    padded = [s + a + b for s, a, b in zip(x.shape[2:], lo, hi)]
    span = [d * (k - 1) + 1 for d, k in zip(dilation, kernel)]
    if any(p < s for p, s in zip(padded, span)):
        raise TdxRuntimeError(f"Calculated padded input size per channel: ({' x '.join(map(str, padded))}). Kernel "
                              f"size: ({' x '.join(map(str, span))}). Kernel size can't be greater than actual input "
                              "size")
    outs = [(p - s) // st + 1 for p, s, st in zip(padded, span, stride)]
    tdx.empty((x.shape[0], w.shape[0], *outs), dtype=x.dtype, device=x.device)  # too large: refused before any work
    if _kernels.has_conv(x) and x.dtype.is_floating_point:
        out = _kernels.conv_nd(x, w, stride, lo, hi, dilation, (1,) * nd, groups, False)
    else:
        out = _conv_windows(x, w, stride, lo, hi, dilation, groups)
    out = _add_bias(out, bias, nd, w.shape[0])
    return out.squeeze(0) if unbatched else out


def _conv_windows(x, w, stride, lo, hi, dilation, groups):
    """A convolution as gathered windows times the weight (one matmul per group), for dtypes the executor's
    convolution kernel lacks (float64 on MLX): every step is a tdx op, so it differentiates on the tape."""
    from ._pooling import gather_windows

    nd = x.ndim - 2
    amounts = []
    for a, b in zip(reversed(lo), reversed(hi)):
        amounts += [a, b]
    padded = pad(x, amounts) if any(amounts) else x
    kernel = tuple(w.shape[2:])
    outs = [(n - d * (k - 1) - 1) // s + 1 for n, d, k, s in zip(padded.shape[2:], dilation, kernel, stride)]
    tables = [[[o * s + j * d for j in range(k)] for o in range(n_o)]
              for k, s, d, n_o in zip(kernel, stride, dilation, outs)]
    win = gather_windows(padded, tables)  # (N, C, *out, K)
    n, c = x.shape[:2]
    k_total = win.shape[-1]
    cg, og = c // groups, w.shape[0] // groups
    # (N, g, C/g, *out, K) -> (N, g, *out, C/g * K) @ (g, C/g * K, O/g) -> (N, g, *out, O/g)
    win = win.reshape((n, groups, cg) + tuple(outs) + (k_total,))
    order = [0, 1] + [3 + i for i in range(nd)] + [2, 3 + nd]
    cols = win.permute(*order).reshape((n, groups) + tuple(outs) + (cg * k_total,))
    cols = cols.reshape(n, groups, -1, cg * k_total)
    wm = w.reshape(groups, og, cg * k_total).transpose(1, 2)
    out = cols.matmul(wm.unsqueeze(0))  # (N, g, prod(out), O/g)
    out = out.permute(0, 1, 3, 2).reshape((n, groups * og) + tuple(outs))
    return out


def _dilate(x, stride):
    """``x`` with ``stride - 1`` zeros between neighbours along each spatial dim (tdx ops: MLX's vjp of an
    input-dilated convolution mis-sizes the input gradient when the stride does not divide the span)."""
    for i, s in enumerate(stride):
        if s == 1:
            continue
        d = 2 + i
        n = x.shape[d]
        z = x.new_zeros(tuple(x.shape[:d + 1]) + (s - 1,) + tuple(x.shape[d + 1:]))
        x = tdx.cat([x.unsqueeze(d + 1), z], d + 1).reshape(tuple(x.shape[:d]) + (n * s,) + tuple(x.shape[d + 1:]))
        x = x.narrow(d, 0, (n - 1) * s + 1)
    return x


def _conv_transpose(nd, input, weight, bias, stride, padding, output_padding, groups, dilation):  # noqa: A002
    op = f"conv_transpose{nd}d"
    x, w = need_tensor(input, op), need_tensor(weight, op, "weight")
    if bias is not None:
        need_tensor(bias, op, "bias")
    if isinstance(padding, str):
        raise TdxTypeError(f"{op}(): argument 'padding' must be an int or a tuple of ints, not str "
                           f"({padding!r}); transposed convolutions take no padding string")
    done = _kernels.native(op, x, w, bias, stride, padding, output_padding, groups, dilation)
    if done is not _kernels.NOT_NATIVE:
        return done
    stride, dilation = tuple_arg(stride, nd, op, "stride"), tuple_arg(dilation, nd, op, "dilation")
    padding, out_pad = tuple_arg(padding, nd, op, "padding"), tuple_arg(output_padding, nd, op, "output_padding")
    _positive(stride, "stride")
    _positive(dilation, "dilation")
    if any(p < 0 for p in padding):
        raise TdxRuntimeError(f"negative padding is not supported (got padding={list(padding)})")
    if any(p < 0 for p in out_pad):
        raise TdxRuntimeError(f"negative output_padding is not supported (got output_padding={list(out_pad)})")
    if any(op_ >= s and op_ >= d for op_, s, d in zip(out_pad, stride, dilation)):
        raise TdxRuntimeError(f"output padding must be smaller than either stride or dilation, but got "
                              f"output_padding={list(out_pad)}, stride={list(stride)}, dilation={list(dilation)}")
    x, unbatched = _check(op, nd, x, w, bias, groups, w.shape[0] if w.ndim == nd + 2 else -1, transposed=True)
    if w.shape[0] % groups:
        raise TdxRuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, "
                              f"but got weight of size {list(w.shape)} instead")
    kernel = tuple(w.shape[2:])
    c_in, c_out_g = w.shape[0], w.shape[1]
    sizes = [(n - 1) * s - 2 * p + d * (k - 1) + o + 1
             for n, s, p, d, k, o in zip(x.shape[2:], stride, padding, dilation, kernel, out_pad)]
    if any(s <= 0 for s in sizes):
        raise TdxRuntimeError(f"Given input size per channel: ({' x '.join(map(str, x.shape[2:]))}). Calculated "
                              f"output size per channel: ({' x '.join(map(str, sizes))}). Output size is too small")
    # (C_in, C_out/g, *k) -> (C_out, C_in/g, *k): swap the channel axes within each group
    wt = w.reshape((groups, c_in // groups, c_out_g) + kernel).transpose(1, 2)
    wt = wt.reshape((groups * c_out_g, c_in // groups) + kernel)
    lo = [d * (k - 1) - p for d, k, p in zip(dilation, kernel, padding)]
    hi = [a + o for a, o in zip(lo, out_pad)]
    lo_, hi_ = tuple(max(a, 0) for a in lo), tuple(max(a, 0) for a in hi)
    if _kernels.has_conv(x) and x.dtype.is_floating_point:
        out = _kernels.conv_nd(_dilate(x, stride), wt, (1,) * nd, lo_, hi_, dilation, (1,) * nd, groups, True)
    else:
        out = _conv_windows(_dilate(x, stride), wt.flip(list(range(2, 2 + nd))), (1,) * nd, lo_, hi_, dilation,
                            groups)
    for i, (a, b) in enumerate(zip(lo, hi)):  # negative padding crops the result
        if a < 0 or b < 0:
            out = out.narrow(2 + i, max(-a, 0), sizes[i])
    out = _add_bias(out, bias, nd, groups * c_out_g)
    return out.squeeze(0) if unbatched else out


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):  # noqa: A002 - torch's name
    """1-D convolution (cross-correlation) of ``(N, C_in, L)`` (or ``(C_in, L)``) by ``(C_out, C_in/groups, k)``.

    Args:
        input: the input; weight: the kernel; bias: optional ``(C_out,)``.
        stride, dilation: an int or a 1-tuple.
        padding: an int, a 1-tuple, ``"valid"`` (none) or ``"same"`` (output as long as the input; stride 1).
        groups: channel groups dividing ``C_in`` and ``C_out``.

    Raises:
        ShapeError, TdxRuntimeError, DtypeMismatchError: torch's refusals (dims, channels, strided ``"same"``,
            unknown padding string, a kernel larger than the padded input, mixed dtypes).
    """
    return _conv(1, input, weight, bias, stride, padding, dilation, groups)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):  # noqa: A002 - torch's name
    """2-D convolution of ``(N, C_in, H, W)`` (or unbatched) by ``(C_out, C_in/groups, kH, kW)``; see :func:`conv1d`."""
    return _conv(2, input, weight, bias, stride, padding, dilation, groups)


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):  # noqa: A002 - torch's name
    """3-D convolution of ``(N, C_in, D, H, W)`` (or unbatched); see :func:`conv1d`."""
    return _conv(3, input, weight, bias, stride, padding, dilation, groups)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,  # noqa: A002
                     dilation=1):
    """1-D transposed convolution ("deconvolution") of ``(N, C_in, L)`` by ``(C_in, C_out/groups, k)``.

    The output length is ``(L - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding + 1``.

    Raises:
        TdxRuntimeError: ``output_padding`` not smaller than ``stride`` or ``dilation``, an output size
            below 1, channels that do not match, negative padding.
        TdxTypeError: a padding string (transposed convolutions take none).
    """
    return _conv_transpose(1, input, weight, bias, stride, padding, output_padding, groups, dilation)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,  # noqa: A002
                     dilation=1):
    """2-D transposed convolution of ``(N, C_in, H, W)``; see :func:`conv_transpose1d`."""
    return _conv_transpose(2, input, weight, bias, stride, padding, output_padding, groups, dilation)


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,  # noqa: A002
                     dilation=1):
    """3-D transposed convolution of ``(N, C_in, D, H, W)``; see :func:`conv_transpose1d`."""
    return _conv_transpose(3, input, weight, bias, stride, padding, output_padding, groups, dilation)


@_kernels.torch_kernel
def conv_tbc(input, weight, bias, pad=0):  # noqa: A002 - torch's name
    """1-D convolution in time-batch-channel layout: ``input`` ``(T, B, C_in)``, ``weight`` ``(k, C_in, C_out)``,
    ``bias`` ``(C_out,)``, ``pad`` zeros on both ends of time; the result is ``(T', B, C_out)``.

    Raises:
        ShapeError: ``input`` not 3-D, ``weight`` not 3-D or ``bias`` not 1-D.
    """
    x, w, b = need_tensor(input, "conv_tbc"), need_tensor(weight, "conv_tbc", "weight"), need_tensor(bias, "conv_tbc",
                                                                                                    "bias")
    if x.ndim != 3 or w.ndim != 3 or b.ndim != 1:
        raise ShapeError(f"conv_tbc: expected a 3-D input, a 3-D weight and a 1-D bias, got {list(x.shape)}, "
                         f"{list(w.shape)} and {list(b.shape)}")
    out = conv1d(x.permute(1, 2, 0), w.permute(2, 1, 0), b, padding=pad)
    return out.permute(2, 0, 1)
