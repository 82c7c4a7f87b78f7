"""MLX kernels for convolutions with torch's signatures: ``conv{1,2,3}d`` and ``conv_transpose{1,2,3}d``.

torch lays channels first (``N, C, *spatial``) and weights as ``(C_out, C_in / groups, *k)``
(transposed: ``(C_in, C_out / groups, *k)``); MLX lays channels last. Each kernel moves the
channels, calls ``mx.conv_general`` (a transposed convolution is a convolution of the
stride-dilated input with the flipped kernel), adds the bias and moves the channels back.
Unbatched inputs get a batch dim of 1. Must never import torch or the facade.
"""

from __future__ import annotations

import mlx.core as mx

from ..._errors import TdxRuntimeError
from ._indexing import on_stream


def _dilate(x, stride):
    """Channels-last ``x`` with ``stride - 1`` zeros between neighbours along each spatial axis."""
    for a, st in enumerate(stride, 1):
        if st == 1 or x.shape[a] == 0:
            continue
        moved = mx.moveaxis(x, a, -1)[..., None]
        grown = mx.concatenate([moved, mx.zeros((*moved.shape[:-1], st - 1), moved.dtype)], axis=-1)
        grown = mx.reshape(grown, (*moved.shape[:-2], moved.shape[-2] * st))[..., :(moved.shape[-2] - 1) * st + 1]
        x = mx.moveaxis(grown, -1, a)
    return x


def _exact(x, w, stride, lo, hi, dilation, groups):
    """Channels-last convolution by a sum over kernel positions of elementwise products: float64-accurate
    (MLX's own float64 convolution is float32-accurate) and any ``groups`` in any dimension."""
    n = x.ndim - 2
    x = mx.pad(x, [(0, 0)] + [(a, b) for a, b in zip(lo, hi)] + [(0, 0)])
    k = w.shape[1:-1]
    out_sp = [(x.shape[i + 1] - dilation[i] * (k[i] - 1) - 1) // stride[i] + 1 for i in range(n)]
    c_out, cin_g = w.shape[0], w.shape[-1]
    wg = mx.reshape(w, (groups, c_out // groups, *k, cin_g))
    total = None
    for pos in _positions(k):
        index = (slice(None),) + tuple(slice(p * d, p * d + (o - 1) * st + 1, st)
                                       for p, d, o, st in zip(pos, dilation, out_sp, stride))
        xs = mx.reshape(x[index], (x.shape[0], *out_sp, groups, 1, cin_g))
        wp = wg[(slice(None), slice(None), *pos)]  # (g, cout_g, cin_g)
        term = mx.sum(xs * wp, axis=-1)
        total = term if total is None else total + term
    return mx.reshape(total, (x.shape[0], *out_sp, c_out))


def _positions(k):
    if not k:
        yield ()
        return
    for i in range(k[0]):
        for rest in _positions(k[1:]):
            yield (i, *rest)


def _last(x):
    return mx.moveaxis(x, 1, -1)


def _first(x):
    return mx.moveaxis(x, -1, 1)


@on_stream
class MLXConvolutionOps:
    """Convolutions on MLX arrays, laid out as torch's."""

    __slots__ = ()

    def _conv(self, n, x, w, bias, stride, padding, dilation, groups):
        batched = x.ndim == n + 2
        x = x if batched else x[None]
        if x.dtype != w.dtype:
            raise TdxRuntimeError(f"Input type ({self._tdx(x).name}) and weight type ({self._tdx(w).name}) should "
                                  "be the same")
        if x.shape[1] != w.shape[1] * groups:
            raise TdxRuntimeError(f"Given groups={groups}, weight of size {list(w.shape)}, expected input"
                                  f"{list(x.shape)} to have {w.shape[1] * groups} channels, but got {x.shape[1]} "
                                  "channels instead")
        k = w.shape[2:]
        if padding == "valid":
            lo = hi = (0,) * n
        elif padding == "same":
            total = [d * (kk - 1) for d, kk in zip(dilation, k)]
            lo = tuple(t // 2 for t in total)
            hi = tuple(t - t // 2 for t in total)
        else:
            lo = hi = tuple(padding)
        out = self._run(_last(x), _last(w), stride, lo, hi, dilation, groups)
        out = _first(out)
        if bias is not None:
            out = out + mx.reshape(bias, (1, -1) + (1,) * n)
        return out if batched else out[0]

    def _conv_t(self, n, x, w, bias, stride, padding, output_padding, groups, dilation):
        batched = x.ndim == n + 2
        x = x if batched else x[None]
        if x.shape[1] != w.shape[0]:
            raise TdxRuntimeError(f"Given transposed=1, weight of size {list(w.shape)}, expected input "
                                  f"{list(x.shape)} to have {w.shape[0]} channels, but got {x.shape[1]} channels "
                                  "instead")
        c_in, c_out_g, k = w.shape[0], w.shape[1], w.shape[2:]
        # (C_in, C_out/g, *k) -> (g, C_out/g, *k, C_in/g) -> (C_out, *k, C_in/g)
        wg = mx.reshape(w, (groups, c_in // groups, c_out_g, *k))
        wg = mx.transpose(wg, (0, 2, *range(3, 3 + n), 1))
        wg = mx.reshape(wg, (groups * c_out_g, *k, c_in // groups))
        lo = [d * (kk - 1) - p for d, kk, p in zip(dilation, k, padding)]
        hi = [a + op for a, op in zip(lo, output_padding)]
        # the stride-dilated input (zeros inserted explicitly: MLX's input_dilation has no correct derivative)
        # convolved with the flipped kernel; negative padding crops
        xd = _dilate(_last(x), stride)
        crop = (slice(None),) + tuple(slice(-a if a < 0 else 0, xd.shape[i + 1] + b if b < 0 else None)
                                      for i, (a, b) in enumerate(zip(lo, hi)))
        xd = xd[crop]
        wf = wg[(slice(None), *(slice(None, None, -1),) * n)]
        out = self._run(xd, wf, (1,) * n, [max(a, 0) for a in lo], [max(b, 0) for b in hi], dilation, groups)
        out = _first(out)
        if bias is not None:
            out = out + mx.reshape(bias, (1, -1) + (1,) * n)
        return out if batched else out[0]

    def _run(self, x, w, stride, lo, hi, dilation, groups):
        if x.dtype == mx.float64 or (groups != 1 and x.ndim == 5) or x.dtype not in (mx.float32, mx.float16,
                                                                                        mx.bfloat16):
            return _exact(x, w, tuple(stride), tuple(lo), tuple(hi), tuple(dilation), groups)
        return mx.conv_general(x, w, stride=list(stride), padding=(list(lo), list(hi)),
                               kernel_dilation=list(dilation), groups=groups)

    def conv1d(self, *args):
        return self._conv(1, *args)

    def conv2d(self, *args):
        return self._conv(2, *args)

    def conv3d(self, *args):
        return self._conv(3, *args)

    def conv_transpose1d(self, *args):
        return self._conv_t(1, *args)

    def conv_transpose2d(self, *args):
        return self._conv_t(2, *args)

    def conv_transpose3d(self, *args):
        return self._conv_t(3, *args)
