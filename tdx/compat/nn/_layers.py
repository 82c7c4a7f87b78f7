"""Layer functions of ``tdx.nn.functional``: linear maps, normalizations, embeddings, one-hot,
padding and dropout.

Each function has ``torch.nn.functional``'s signature, checks, result dtype and error kinds,
and is composed from tdx tensor ops, so it runs on every executor and is differentiable
wherever those ops are (through torch's autograd, or tdx's tape on MLX). Normalizations of
half precision inputs are computed in float32 and rounded once, as torch's CPU kernels do.

This module must never import torch or mlx, and never touches executor internals: only
the public ``tdx`` API (and tdx's shared dropout helper).
"""

from __future__ import annotations

import math

import tdx
from ..._errors import (DtypeMismatchError, ShapeError, TdxIndexError, TdxRuntimeError, TdxValueError,
                        TdxNotImplementedError, UnsupportedOpError)
from ..._tensor.random import bernoulli_like, dropout as _dropout
from . import _kernels
from ._padding import pad_mode
from ._activations import (int_list, need_float, need_tensor, norm_dim, opmath, torch_name, wants_grad,
                           write_inplace)

__all__ = ["linear", "bilinear", "layer_norm", "rms_norm", "group_norm", "normalize", "embedding", "one_hot",
           "pad", "dropout", "alpha_dropout"]

_HALF = (tdx.float16, tdx.bfloat16)
_EPS = {"float32": 1.1920928955078125e-07, "float64": 2.220446049250313e-16}  # finfo(...).eps
_SELU_NEG = 1.7580993408473766  # SELU's scale * alpha: alpha_dropout sets dropped units to minus this (then rescales)


def _shape(t) -> list:
    return list(t.shape)


# linear maps -----------------------------------------------------------------------------------------
def linear(input, weight, bias=None):  # noqa: A002 - torch's name
    """``input @ weight.T + bias``.

    Args:
        input: a tensor of shape ``(*, in_features)``.
        weight: ``(out_features, in_features)``, or ``(in_features,)`` for a single output.
        bias: optional, broadcastable to the result (usually ``(out_features,)``).

    Raises:
        ShapeError: ``input`` or ``weight`` is 0-D, ``weight`` has more than 2 dims, a 2-D ``input`` with a
            ``bias`` meets a 1-D ``weight`` (as torch's addmm path), or the sizes do not multiply (``bias``
            that does not broadcast to the result raises as ``expand``).
        DtypeMismatchError: ``bias``'s dtype differs from the product's (matmul refuses mixed dtypes too).
    """
    done = _kernels.linear_kernel(input, weight, bias)  # torch's kernel where the executor has it
    if done is not _kernels.NOT_NATIVE:
        return done
    done = _kernels.fast("linear", input, weight, bias)  # nn_functional's, or NOT_NATIVE where it refuses
    if done is not _kernels.NOT_NATIVE:
        return done
    done = _kernels.fused_linear(input, weight, bias)  # one node on executors with a linear kernel (MLX)
    if done is not _kernels.NOT_NATIVE:
        return done
    x, w = need_tensor(input, "linear"), need_tensor(weight, "linear", "weight")
    if x.ndim == 0 or w.ndim == 0:
        raise ShapeError(f"both arguments to linear need to be at least 1D, but they are {x.ndim}D and {w.ndim}D")
    if w.ndim > 2:
        raise ShapeError(f"t() expects a tensor with <= 2 dimensions, but self is {w.ndim}D (linear's weight is "
                         "(out_features, in_features))")
    out = x.matmul(w.t() if w.ndim == 2 else w)
    if bias is None:
        return out
    b = need_tensor(bias, "linear", "bias")
    if x.ndim == 2 and w.ndim == 1:  # torch's addmm path for a 2-D input with bias needs a matrix weight
        raise ShapeError("mat2 must be a matrix, got 1-D tensor (linear with a 2-D input and a bias takes a "
                         "(out_features, in_features) weight)")
    if b.dtype is not out.dtype:
        raise DtypeMismatchError(f"linear(): bias and input must have the same dtype, but got "
                                 f"{torch_name(b.dtype)} and {torch_name(out.dtype)}")
    return out + b.expand(tuple(out.shape))


@_kernels.torch_kernel
def bilinear(input1, input2, weight, bias=None):
    """``y[..., o] = sum_ij input1[..., i] * weight[o, i, j] * input2[..., j] + bias[o]``.

    Args:
        input1: ``(*, in1_features)``.
        input2: ``(*, in2_features)``, with the same leading dims as ``input1``.
        weight: ``(out_features, in1_features, in2_features)``.
        bias: optional ``(out_features,)``.

    Raises:
        TdxIndexError: an input is 0-D, or ``weight`` has fewer than 3 dims.
        ShapeError: the dims or sizes of the inputs, weight and bias do not fit together.
    """
    x1, x2 = need_tensor(input1, "bilinear", "input1"), need_tensor(input2, "bilinear", "input2")
    w = need_tensor(weight, "bilinear", "weight")
    if x1.ndim != x2.ndim:
        raise ShapeError(f"bilinear(): input dimensions do not match: got {x1.ndim} and {x2.ndim}")
    if x1.ndim == 0:
        raise TdxIndexError("bilinear(): Dimension specified as -1 but tensor has no dimensions (inputs must "
                            "be at least 1-D)")
    for a, b in zip(x1.shape[:-1], x2.shape[:-1]):
        if a != b:
            raise ShapeError(f"bilinear(): input batch dimensions do not match: got {a} and {b}")
    if w.ndim != 3:
        raise TdxIndexError(f"bilinear(): weight must be 3-D (out_features, in1_features, in2_features), got "
                            f"{w.ndim}-D")
    n_out, n1, n2 = w.shape
    if x1.shape[-1] != n1:
        raise ShapeError(f"bilinear(): input1 size does not match weight size: got {x1.shape[-1]} but expected {n1}")
    if x2.shape[-1] != n2:
        raise ShapeError(f"bilinear(): input2 size does not match weight size: got {x2.shape[-1]} but expected {n2}")
    if bias is not None:
        need_tensor(bias, "bilinear", "bias")
        if bias.ndim == 0 or bias.shape[0] != n_out:
            got = bias.shape[0] if bias.ndim else "a 0-D tensor"
            raise ShapeError(f"bilinear(): bias size does not match weight size: got {got} but expected {n_out}")
    lead = tuple(x1.shape[:-1])
    rows = math.prod(lead)
    # half precision is computed in float32 (after matmul's own dtype check) and rounded once
    same = x1.dtype is x2.dtype is w.dtype and (bias is None or bias.dtype is w.dtype)
    a, b, ww = (opmath(v) if same else v for v in (x1.reshape(rows, n1), x2.reshape(rows, n2), w))
    t = a.matmul(ww.permute(1, 0, 2).reshape(n1, n_out * n2)).reshape(rows, n_out, n2)
    out = (t * b.unsqueeze(1)).sum(-1).reshape(lead + (n_out,))
    out = out if bias is None else out + opmath(bias)
    return out.to(x1.dtype) if same else out


# normalizations -------------------------------------------------------------------------------------
def _normalized_shape(x, normalized_shape, op: str, weight=None, bias=None) -> tuple:
    """``normalized_shape`` as a tuple, checked against ``x``'s trailing dims and the affine parameters."""
    shape = int_list(normalized_shape, op, "normalized_shape")
    if not shape:
        raise TdxRuntimeError("Expected normalized_shape to be at least 1-dimensional, i.e., containing at least "
                              "one element, but got normalized_shape = []")
    for name, p in (("weight", weight), ("bias", bias)):
        if p is not None and tuple(need_tensor(p, op, name).shape) != shape:
            raise TdxRuntimeError(f"Expected {name} to be of same shape as normalized_shape, but got {name} of "
                                  f"shape {_shape(p)} and normalized_shape = {list(shape)}")
    if op == "rms_norm" and x.ndim < len(shape):
        raise TdxValueError(f"Input tensor must have at least {len(shape)} dimensions, but got {x.ndim} (rms_norm's "
                            f"normalized_shape={list(shape)})")
    if x.ndim < len(shape) or tuple(x.shape[x.ndim - len(shape):]) != shape:
        raise TdxRuntimeError(f"Given normalized_shape={list(shape)}, expected input with shape "
                              f"[*, {', '.join(map(str, shape))}], but got input of size{_shape(x)}")
    return shape


def _param_dtypes(x, op: str, *params) -> None:
    """torch's rule for affine parameters: the input's dtype, or float32 for a half precision input."""
    given = [p for p in params if p is not None]
    if not given:
        return
    dt = given[0].dtype
    if any(p.dtype is not dt for p in given) or not (dt is x.dtype or (x.dtype in _HALF and dt is tdx.float32)):
        got = ", ".join(p.dtype.name for p in given)
        raise DtypeMismatchError(f"{op}(): mixed dtype: expected weight and bias of dtype {x.dtype.name} (or "
                                 f"float32 for a half precision input), got {got}")


def _standardize(w, dims, eps):
    """``(w - mean) / sqrt(var + eps)`` over ``dims`` (biased variance, two passes)."""
    centered = w - w.mean(dims, keepdim=True)
    return centered * ((centered * centered).mean(dims, keepdim=True) + eps).rsqrt()


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):  # noqa: A002 - torch's name
    """Normalize over the trailing ``normalized_shape`` dims to zero mean and unit variance, then scale
    by ``weight`` and shift by ``bias`` (elementwise, of shape ``normalized_shape``).

    Raises:
        TdxTypeError: ``normalized_shape`` is not a list/tuple of ints.
        TdxRuntimeError: ``normalized_shape`` is empty, does not match ``input``'s trailing dims, or the
            shape of ``weight``/``bias``.
        DtypeMismatchError: ``weight``/``bias`` have another dtype than ``input`` (float32 is accepted for
            a float16/bfloat16 input).
        TdxNotImplementedError: ``input`` is not floating point.
    """
    if isinstance(normalized_shape, (list, tuple)):
        done = _kernels.fast("layer_norm", input, normalized_shape, weight, bias, eps)
        if done is not _kernels.NOT_NATIVE:
            return done
    x = need_tensor(input, "layer_norm")
    shape = _normalized_shape(x, normalized_shape, "layer_norm", weight, bias)
    need_float(x, "layer_norm", "LayerNormKernelImpl")
    _param_dtypes(x, "layer_norm", weight, bias)
    done = _kernels.native("layer_norm", x, shape, weight, bias, eps)  # torch's kernel where the executor has it
    if done is not _kernels.NOT_NATIVE:
        return done
    done = _kernels.fused_layer_norm(x, shape, weight, bias, eps)  # MLX's fused kernel, one tape node
    if done is not _kernels.NOT_NATIVE:
        return done
    dims = tuple(range(x.ndim - len(shape), x.ndim))
    out = _standardize(opmath(x), dims, eps)
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out.to(x.dtype)


@_kernels.torch_kernel
def rms_norm(input, normalized_shape, weight=None, eps=None):  # noqa: A002 - torch's name
    """``x / sqrt(mean(x**2) + eps) * weight`` over the trailing ``normalized_shape`` dims.

    ``eps`` defaults to the machine epsilon of the compute dtype (float32 for half precision
    inputs), as torch's. The result keeps ``input``'s dtype.

    Raises:
        TdxTypeError: ``normalized_shape`` is not a list/tuple of ints.
        TdxRuntimeError: ``normalized_shape`` is empty or does not match ``input`` or ``weight``.
        TdxValueError: ``input`` has fewer dims than ``normalized_shape``.
        TdxNotImplementedError: ``input`` is not floating point.
    """
    x = need_tensor(input, "rms_norm")
    shape = _normalized_shape(x, normalized_shape, "rms_norm", weight)
    need_float(x, "rms_norm")
    w = opmath(x)
    dims = tuple(range(x.ndim - len(shape), x.ndim))
    if eps is None:
        eps = _EPS.get(w.dtype.name, _EPS["float32"])
    out = w * ((w * w).mean(dims, keepdim=True) + eps).rsqrt()
    if weight is not None:
        out = out * weight
    return out.to(x.dtype)


@_kernels.torch_kernel
def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):  # noqa: A002 - torch's name
    """Normalize ``(N, C, *)`` input over each of ``num_groups`` groups of channels (and all spatial
    positions), then apply per-channel ``weight`` and ``bias`` of shape ``(C,)``.

    Raises:
        TdxRuntimeError: ``input`` has fewer than 2 dims, ``C`` is not divisible by ``num_groups``, or
            ``weight``/``bias`` do not hold ``C`` values.
        TdxValueError: ``num_groups`` is not positive, or each group would hold a single value
            (torch's "Expected more than 1 value per channel").
        DtypeMismatchError: as :func:`layer_norm`.
        TdxNotImplementedError: ``input`` is not floating point.
    """
    x = need_tensor(input, "group_norm")
    if x.ndim < 2:
        raise TdxRuntimeError(f"Expected at least 2 dimensions for input tensor but received {x.ndim}")
    if isinstance(num_groups, bool) or not isinstance(num_groups, int) or num_groups <= 0:
        raise TdxValueError(f"group_norm(): num_groups must be a positive int, got {num_groups!r}")
    n, c = x.shape[0], x.shape[1]
    spatial = math.prod(x.shape[2:])
    if n * c // num_groups * spatial == 1:
        raise TdxValueError(f"Expected more than 1 value per channel when training, got input size "
                            f"{[n * c // num_groups, num_groups, *x.shape[2:]]}")
    if c % num_groups:
        raise TdxRuntimeError(f"Expected number of channels in input to be divisible by num_groups, but got input "
                              f"of shape {_shape(x)} and num_groups={num_groups}")
    for name, p in (("weight", weight), ("bias", bias)):
        if p is not None and (need_tensor(p, "group_norm", name).ndim != 1 or p.numel() != c):
            raise TdxRuntimeError(f"Expected {name} to be a vector of size equal to the number of channels in "
                                  f"input, but got {name} of shape {_shape(p)} and input of shape {_shape(x)}")
    need_float(x, "group_norm", "GroupNormKernelImpl")
    _param_dtypes(x, "group_norm", weight, bias)
    grouped = opmath(x).reshape(n, num_groups, c // num_groups * spatial)
    out = _standardize(grouped, (2,), eps).reshape(tuple(x.shape))
    per_channel = (c,) + (1,) * (x.ndim - 2)
    if weight is not None:
        out = out * weight.reshape(per_channel)
    if bias is not None:
        out = out + bias.reshape(per_channel)
    return out.to(x.dtype)


def _norm(x, p, dim, op="normalize"):
    """``x.norm(p, dim, keepdim=True)``, with a zero (not NaN) gradient for all-zero slices on every
    executor, as torch's.

    Raises:
        TdxIndexError: a dim is out of range (checked here: MLX's norm of a 0-d tensor accepts any dim).
    """
    for d in dim if isinstance(dim, (tuple, list)) else (dim,):
        norm_dim(d, x.ndim, op)
    if not wants_grad(x) or x.numel() == 0:
        return x.norm(p, dim, keepdim=True)
    zero = x.ne(0).sum(dim, keepdim=True) == 0
    safe = tdx.where(zero, 1.0, x)
    return tdx.where(zero, 0.0, safe.norm(p, dim, keepdim=True))


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):  # noqa: A002 - torch's name
    """``input / max(||input||_p, eps)``, the norm taken over ``dim`` (an int or a tuple).

    Args:
        input: a floating point tensor.
        p: the norm's exponent.
        dim: the dim(s) to normalize over.
        eps: the smallest divisor.
        out: optional tensor of the result's shape to write the result into (and return).

    Raises:
        ShapeError: ``out`` does not have the result's shape (torch would resize it).
    """
    x = need_tensor(input, "normalize")
    result = x / _norm(x, p, dim).clamp_min(eps).expand_as(x)
    if out is None:
        return result
    need_tensor(out, "normalize", "out")
    if tuple(out.shape) != tuple(result.shape):
        raise ShapeError(f"normalize(): out has shape {_shape(out)}, the result has shape {_shape(result)} "
                         "(tdx does not resize out)")
    return out.copy_(result)


# lookups ----------------------------------------------------------------------------------------------
def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,  # noqa: A002
              sparse=False):
    """Rows of ``weight`` at the indices ``input``: a result of shape ``input.shape + (embedding_dim,)``.

    Args:
        input: int64 or int32 indices into the rows of ``weight``.
        weight: ``(num_embeddings, embedding_dim)``.
        padding_idx: a row whose entries get no gradient (negative values count from the end).
        max_norm: rows looked up whose ``norm_type``-norm exceeds this are rescaled to it, in place in
            ``weight`` (as torch's, outside autograd).
        norm_type: the norm's exponent for ``max_norm``.
        scale_grad_by_freq: divide the gradient of each row by how often its index occurs in ``input``.
        sparse: not supported (raises when true; tdx gradients are dense).

    Raises:
        TdxRuntimeError: ``input`` is not int64/int32, or ``weight`` is not 2-D.
        TdxIndexError: an index is out of range.
        TdxValueError: ``padding_idx`` is out of range (torch raises AssertionError).
        UnsupportedOpError: ``sparse`` is true.
    """
    if not sparse and padding_idx is None and _has_width(weight):  # torch's kernel (and its renorm for max_norm)
        done = _kernels.fast("embedding", input, weight, None, max_norm, norm_type, scale_grad_by_freq, False)
        if done is not _kernels.NOT_NATIVE:
            return done
    idx, w = need_tensor(input, "embedding"), need_tensor(weight, "embedding", "weight")
    if sparse:
        raise UnsupportedOpError("embedding(): sparse=True is not supported by tdx (gradients are dense); pass False")
    if idx.dtype not in (tdx.int64, tdx.int32):
        raise TdxRuntimeError(f"Expected tensor for argument #1 'indices' to have one of the following scalar "
                              f"types: Long, Int; but got {idx.dtype.name} instead (while checking arguments for "
                              f"embedding)")
    if w.ndim != 2:
        raise TdxRuntimeError(f"'weight' must be 2-D, got {w.ndim}-D")
    rows = w.shape[0]
    if padding_idx is not None:
        if not -rows <= padding_idx < rows:
            raise TdxValueError(f"Padding_idx must be within num_embeddings (got padding_idx={padding_idx} for "
                                f"{rows} embeddings)")
        padding_idx %= rows
    flat = idx.reshape(-1)  # index_select raises IndexError for indices out of range, as torch
    if max_norm is not None and flat.numel():
        _renorm_rows(w, flat, max_norm, norm_type)
    out = w.index_select(0, flat)
    if scale_grad_by_freq and wants_grad(w) and flat.numel():
        out = scale_grad_by_count(out, flat.long(), rows)
    out = out.reshape(tuple(idx.shape) + (w.shape[1],))
    if padding_idx is not None and wants_grad(w):
        out = tdx.where((idx == padding_idx).unsqueeze(-1), out.detach(), out)
    return out


def _has_width(weight) -> bool:
    """Whether ``weight``'s rows hold elements. torch's CUDA embedding kernels read a zero-width table's rows
    as one element wide (its row stride), outside any allocation: the backward and ``max_norm``'s renorm end the
    process's use of the device. Zero-width tables take the composed path (``index_select``), whose kernels
    touch nothing for an empty slice, on every device alike."""
    shape = getattr(weight, "shape", None)
    return shape is None or len(shape) != 2 or shape[1] != 0


def scale_grad_by_count(rows, flat, num_rows: int):
    """``rows`` (one per index of ``flat``, along dim 0) unchanged, with each one's gradient divided by how
    often its index occurs in ``flat`` (torch's ``scale_grad_by_freq``)."""
    counts = tdx.zeros(num_rows, dtype=rows.dtype, device=rows.device).scatter_add(
        0, flat, tdx.ones(flat.shape[0], dtype=rows.dtype, device=rows.device))
    per = (1 / counts.index_select(0, flat)).reshape((flat.shape[0],) + (1,) * (rows.ndim - 1))
    still = rows.detach()
    return still + (rows - still) * per


def _renorm_rows(w, flat, max_norm, norm_type) -> None:
    """Rescale, in place and outside autograd, the rows of ``w`` at ``flat`` whose norm exceeds ``max_norm``."""
    with tdx.no_grad():
        ids = flat.unique()
        picked = w.index_select(0, ids)
        norms = picked.norm(norm_type, 1, keepdim=True)
        scale = tdx.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)
        w[ids] = (picked * scale).to(w.dtype)


def one_hot(tensor, num_classes=-1):
    """int64 one-hot encoding: ``result[..., c] = (tensor[...] == c)``, of ``num_classes`` classes
    (``max + 1`` when -1).

    Raises:
        TdxRuntimeError: ``tensor`` is not int64, holds negative values or values ``>= num_classes``,
            or is empty with ``num_classes`` left to infer.
    """
    t = need_tensor(tensor, "one_hot", "tensor")
    if t.dtype is not tdx.int64:
        raise TdxRuntimeError(f"one_hot is only applicable to index tensor of type LongTensor (got {t.dtype.name}).")
    if t.numel() == 0:
        if num_classes <= 0:
            raise TdxRuntimeError("Can not infer total number of classes from empty tensor.")
        return tdx.zeros(tuple(t.shape) + (num_classes,), dtype=tdx.int64, device=t.device)
    if int(t.min().item()) < 0:
        raise TdxRuntimeError("Class values must be non-negative.")
    top = int(t.max().item())
    if num_classes == -1:
        num_classes = top + 1
    elif num_classes <= top:
        raise TdxRuntimeError(f"Class values must be smaller than num_classes (got {top} for num_classes="
                              f"{num_classes}).")
    classes = tdx.arange(num_classes, device=t.device)
    return (t.unsqueeze(-1) == classes).long()


def pad(input, pad, mode="constant", value=None):  # noqa: A002 - torch's names
    """Pad (or, with negative amounts, crop) the trailing dims of ``input`` by ``value``.

    Args:
        input: any tensor.
        pad: ``(left, right)`` amounts for the last dim, then for the one before it, and so on.
        mode: ``"constant"``, ``"reflect"`` (mirror without the edge), ``"replicate"`` (repeat the edge) or
            ``"circular"`` (wrap around); the last three pad 1 to 3 trailing dims of a batched or unbatched input.
        value: the fill value (0 when None), converted to ``input``'s dtype.

    Raises:
        TdxTypeError: ``pad`` is not a list/tuple of ints.
        TdxRuntimeError: ``pad`` has odd length, covers more dims than ``input`` has, or crops a dim
            below size 0.
        TdxNotImplementedError: ``mode`` is unknown, or the dims do not fit a non-constant mode.
    """
    x = need_tensor(input, "pad")
    if mode not in ("constant", "reflect", "replicate", "circular"):
        raise TdxNotImplementedError(f"Unrecognised padding mode {mode!r}; accepted: 'constant', 'reflect', "
                                "'replicate', 'circular'")
    amounts = int_list(pad, "pad", "pad")
    if len(amounts) % 2:
        raise TdxRuntimeError(f"Padding length must be divisible by 2 (got {len(amounts)})")
    if mode != "constant":
        return pad_mode(x, amounts, mode, value)
    if len(amounts) // 2 > x.ndim:
        raise TdxRuntimeError(f"Padding length should be less than or equal to two times the input dimension but "
                              f"got padding length {len(amounts)} and input of dimension {x.ndim}")
    fill = 0 if value is None else value
    _check_padded_size(x, amounts)
    for i in range(len(amounts) // 2):
        d, left, right = x.ndim - 1 - i, amounts[2 * i], amounts[2 * i + 1]
        size = x.shape[d]
        kept = size + min(left, 0) + min(right, 0)
        if kept < 0:
            raise TdxRuntimeError(f"The input size {size}, plus negative padding {left} and {right} resulted in a "
                                  f"negative output size, which is invalid. Check dimension {d} of your input.")
        if left < 0 or right < 0:
            x = x.narrow(d, -min(left, 0), kept)
        parts = []
        for amount in (left, right):
            side = tuple(x.shape[:d]) + (max(amount, 0),) + tuple(x.shape[d + 1:])
            parts.append(x.new_full(side, fill) if amount > 0 else None)
        if parts[0] is not None or parts[1] is not None:
            x = tdx.cat([p for p in (parts[0], x, parts[1]) if p is not None], d)
    return x if x is not input else x.clone()


def _check_padded_size(x, amounts: list) -> None:
    """Refuse, before any part is made, a padded size whose byte count overflows 64 bits (torch's message)."""
    sizes = list(x.shape)
    for i in range(len(amounts) // 2):
        sizes[x.ndim - 1 - i] += amounts[2 * i] + amounts[2 * i + 1]
    count = 1
    for n in sizes:
        count *= max(n, 0)
    if count * x.dtype.itemsize >= 1 << 63:
        raise TdxRuntimeError(f"Storage size calculation overflowed with sizes={sizes}")


# dropout ----------------------------------------------------------------------------------------------
def _check_p(p) -> None:
    if p < 0.0 or p > 1.0:
        raise TdxValueError(f"dropout probability has to be between 0 and 1, but got {p}")


@_kernels.torch_kernel
def dropout(input, p=0.5, training=True, inplace=False):  # noqa: A002 - torch's name
    """Zero each element with probability ``p`` and scale the rest by ``1 / (1 - p)`` (only when
    ``training``). On a torch executor torch's own kernel draws the mask: on CUDA that is a fused
    kernel drawing other numbers than ``bernoulli_`` does, so composing it would not give torch's mask.

    Raises:
        TdxValueError: ``p`` is outside ``[0, 1]`` (checked even when not training, as torch).
    """
    _check_p(p)
    x = need_tensor(input, "dropout")
    if not training or p == 0:
        return x

    def compute(s):
        # the keep-mask is drawn from the detached input, in its memory order as torch's: a constant to autograd
        return _dropout(s, p, True)

    return write_inplace(x, compute) if inplace else compute(x)


@_kernels.torch_kernel
def alpha_dropout(input, p=0.5, training=False, inplace=False):  # noqa: A002 - torch's name
    """Dropout for SELU networks: dropped elements take SELU's negative saturation value, and the
    result is scaled and shifted to keep zero mean and unit variance.

    Raises:
        TdxValueError: ``p`` is outside ``[0, 1]``.
    """
    _check_p(p)
    x = need_tensor(input, "alpha_dropout")
    if p == 0 or not training or x.numel() == 0:
        return x

    def compute(s):
        if p == 1:
            return s * 0
        with tdx.no_grad():  # torch's empty_like(input).bernoulli_(1 - p): a constant to autograd
            keep = bernoulli_like(s.detach(), 1.0 - p)
        a = 1.0 / math.sqrt((_SELU_NEG * _SELU_NEG * p + 1) * (1 - p))
        return s * (keep * a) + ((keep - 1) * (_SELU_NEG * a) + _SELU_NEG * a * p)

    return write_inplace(x, compute) if inplace else compute(x)
