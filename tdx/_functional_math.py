"""Module-level torch functions composed from the op surface (``tdx.addmm``, ``tdx.lerp``,
``tdx.isclose``, ``tdx.hstack``...), with torch's signatures.

Each forwards to a Tensor method or composes other tdx functions. Must never import a framework.
"""

from __future__ import annotations

import inspect
import math
import operator
import warnings

from . import _dtypes as D
from . import _tensor_math as TMath
from . import backends
from ._errors import (DtypeMismatchError, ShapeError, TdxNotImplementedError, TdxRuntimeError, TdxTypeError,
                      TdxValueError)
from ._functional import stack
from ._functional_more import _need_tensor, exporter
from ._tensor_methods import foreign
from ._tensor import Tensor
from ._tensor_methods import Size, wrap

__all__: list = []


_export = exporter(__all__)


def _forward(name: str):
    """``tdx.name(input, ...)``: ``input.name(...)``, with the method's signature and docstring."""
    method = getattr(Tensor, name)

    def fn(input, *args, **kwargs):  # noqa: A002 - torch's name
        return getattr(_need_tensor(input, name), name)(*args, **kwargs)

    sig = inspect.signature(method)
    params = list(sig.parameters.values())
    fn.__signature__ = sig.replace(parameters=[params[0].replace(name="input")] + params[1:])
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = method.__doc__.replace("``self``", "``input``")
    return fn


_FORWARDED = ("addmm", "addmv", "addr", "baddbmm", "addbmm", "addcmul", "addcdiv", "lerp", "logaddexp",
              "logaddexp2", "hypot", "fmax", "fmin", "copysign", "signbit", "heaviside", "isposinf", "isneginf",
              "deg2rad", "rad2deg", "logit", "nan_to_num", "nansum", "nanmean", "count_nonzero", "aminmax",
              "cummax", "cummin", "logcumsumexp", "dot", "mv", "inner", "kron", "isclose", "allclose", "equal",
              "diff", "broadcast_to", "clamp_min", "clamp_max", "fliplr", "flipud", "rot90", "msort", "argwhere",
              "take")
for _name in _FORWARDED:
    globals()[_name] = _export(_forward(_name))


@_export(record=True)
def xlogy(input, other):  # noqa: A002 - torch's name
    """``input * log(other)``, 0 where ``input`` is 0 (unless ``other`` is NaN); either may be a number."""
    if isinstance(input, Tensor):
        return input.xlogy(other)
    _need_tensor(other, "xlogy", "other")
    return xlogy_of(TMath._operand(other, input, "xlogy", "input"), other)


@_export(record=True)
def float_power(input, exponent):  # noqa: A002 - torch's name
    """``input ** exponent`` computed in float64 (complex128 if either is complex); either may be a number."""
    if isinstance(input, Tensor):
        return input.float_power(exponent)
    _need_tensor(exponent, "float_power", "exponent")
    return float_power_of(TMath._operand(exponent, input, "float_power", "input"), exponent)


def xlogy_of(x, y):
    """``x * log(y)`` (0 where ``x == 0`` unless ``y`` is NaN); either may be a Python number."""
    ref = x if x.__class__ is Tensor else y
    for v in (x, y):
        if v.__class__ is Tensor:
            TMath._no_complex(v, "xlogy")
    rt = D.float_for(TMath._result_type(x, y))
    w = TMath._work(rt)
    xs = x._cast(w) if x.__class__ is Tensor else TMath._full(ref, (), x, w)
    ys = y._cast(w) if y.__class__ is Tensor else TMath._full(ref, (), y, w)
    safe = ys.log().where(((xs == 0) & ((ys <= 0) | (ys == math.inf))).logical_not(), 0)
    return (xs * safe)._cast(rt)


def float_power_of(x, y):
    """``x ** y`` in float64 (complex128 when either is complex); either may be a Python number."""
    def wide(v):
        if v.__class__ is Tensor:
            return v.dtype.is_complex
        return isinstance(v, complex)

    rt = D.complex128 if wide(x) or wide(y) else D.float64
    if x.__class__ is Tensor:
        return x._cast(rt).pow(y._cast(rt) if y.__class__ is Tensor else y)
    ref = y._cast(rt)
    return TMath._full(ref, (), x, rt).pow(ref)


# broadcasting -----------------------------------------------------------------------------------------
def _broadcast(shapes, what: str = "shape") -> Size:
    """The broadcast of ``shapes`` (tuples of ints), with torch's errors."""
    ndim = max((len(s) for s in shapes), default=0)
    out = [1] * ndim
    for i, shape in enumerate(shapes):
        for j in range(-1, -len(shape) - 1, -1):
            n = shape[j]
            if n < 0:
                raise TdxValueError(f"Attempting to broadcast a dimension with negative length! (got {n} in "
                                    f"{what} {i}: {tuple(shape)})")
            if n == 1 or n == out[j]:
                continue
            if out[j] != 1:
                raise ShapeError(f"Attempting to broadcast a dimension of length {n} at {j}! Mismatching "
                                 f"{what} {i} had {tuple(shape)}; but expected shape should be broadcastable to "
                                 f"{out}")
            out[j] = n
    return Size(out)


@_export
def broadcast_shapes(*shapes) -> Size:
    """The shape tensors of ``shapes`` (ints or sequences of ints) broadcast to, as a ``tdx.Size``."""
    norm = []
    for shape in shapes:
        if isinstance(shape, (tuple, list)):
            items = shape
        elif isinstance(shape, int) or hasattr(shape, "__index__"):
            items = (shape,)
        else:
            raise TdxTypeError(f"broadcast_shapes(): expected ints or sequences of ints, got "
                               f"{type(shape).__name__}")
        try:
            norm.append(tuple(operator.index(n) for n in items))
        except TypeError:
            raise TdxTypeError(f"broadcast_shapes(): a shape holds ints only, got {shape!r}") from None
    return _broadcast(norm)


def _same_executor(tensors, op: str) -> list:
    """``tensors`` on the first one's executor: torch's mixed-device error unless auto_transfer moves them."""
    ex = tensors[0]._ex
    return [t if t._ex is ex else wrap(foreign(op, ex, t), ex) for t in tensors]


@_export(record=True)
def broadcast_tensors(*tensors) -> tuple:
    """The tensors expanded (as views) to their common broadcast shape."""
    for t in tensors:
        _need_tensor(t, "broadcast_tensors", "tensors")
    if not tensors:
        return ()
    tensors = _same_executor(tensors, "broadcast_tensors")
    shape = _broadcast([tuple(t.shape) for t in tensors], "tensor")
    return tuple(t.expand(shape) for t in tensors)


# rank lifting and stacking ----------------------------------------------------------------------------
def _lift(t, n: int):
    """``t`` viewed with at least ``n`` dims, as torch's atleast_{n}d places the new ones."""
    if t.ndim >= n:
        return t
    if t.ndim == 0:
        return t.reshape((1,) * n)
    if t.ndim == 1:
        return t.unsqueeze(0) if n == 2 else t.unsqueeze(0).unsqueeze(2)
    return t.unsqueeze(2)


def _atleast(tensors, n: int):
    single = len(tensors) == 1 and not isinstance(tensors[0], (list, tuple))
    seq = tensors[0] if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)) else tensors
    out = tuple(_lift(_need_tensor(t, f"atleast_{n}d", "tensors"), n) for t in seq)
    return out[0] if single else out


@_export
def atleast_1d(*tensors):
    """Each tensor viewed with at least 1 dim (a tensor for one argument, else a tuple)."""
    return _atleast(tensors, 1)


@_export
def atleast_2d(*tensors):
    """Each tensor viewed with at least 2 dims (a 1-D tensor becomes one row)."""
    return _atleast(tensors, 2)


@_export
def atleast_3d(*tensors):
    """Each tensor viewed with at least 3 dims ((n,) becomes (1, n, 1); (m, n) becomes (m, n, 1))."""
    return _atleast(tensors, 3)


def _tensor_list(tensors, op: str) -> list:
    if not isinstance(tensors, (list, tuple)):
        raise TdxTypeError(f"{op}(): argument 'tensors' must be tuple of Tensors, not {type(tensors).__name__}")
    if not tensors:
        raise TdxRuntimeError(f"{op} expects a non-empty TensorList")
    return [_need_tensor(t, op, "tensors") for t in tensors]


@_export(record=True)
def hstack(tensors):
    """Concatenate column-wise: along dim 1, or dim 0 for 1-D tensors (0-d ones become 1-D)."""
    parts = [_lift(t, 1) for t in _tensor_list(tensors, "hstack")]
    return TMath.cat_promoted(parts, 0 if parts[0].ndim == 1 else 1)


@_export(record=True)
def vstack(tensors):
    """Concatenate row-wise (dim 0), after viewing each tensor with at least 2 dims."""
    return TMath.cat_promoted([_lift(t, 2) for t in _tensor_list(tensors, "vstack")], 0)


@_export(record=True)
def row_stack(tensors):
    """Alias of :func:`vstack`."""
    return TMath.cat_promoted([_lift(t, 2) for t in _tensor_list(tensors, "row_stack")], 0)


@_export(record=True)
def dstack(tensors):
    """Concatenate depth-wise (dim 2), after viewing each tensor with at least 3 dims."""
    return TMath.cat_promoted([_lift(t, 3) for t in _tensor_list(tensors, "dstack")], 2)


@_export(record=True)
def column_stack(tensors):
    """Concatenate along dim 1, 0-d and 1-D tensors becoming columns."""
    parts = _tensor_list(tensors, "column_stack")
    return TMath.cat_promoted([t.reshape(t.numel(), 1) if t.ndim <= 1 else t for t in parts], 1)


# grids and index sets -------------------------------------------------------------------------------
@_export(record=True)
def meshgrid(*tensors, indexing=None) -> tuple:
    """Coordinate grids of 0-D/1-D tensors: ``indexing="ij"`` (matrix) or ``"xy"`` (Cartesian)."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if not tensors:
        raise TdxRuntimeError("meshgrid expects a non-empty TensorList")
    if indexing is None:
        warnings.warn("torch.meshgrid: in an upcoming release, it will be required to pass the indexing "
                      "argument.", UserWarning, stacklevel=3)
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise TdxRuntimeError(f'torch.meshgrid: indexing must be one of "xy" or "ij", but received: {indexing}')
    for t in tensors:
        if _need_tensor(t, "meshgrid", "tensors").ndim > 1:
            raise ShapeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got a "
                             f"{t.ndim}-D tensor of shape {list(t.shape)}")
    tensors = _same_executor(tensors, "meshgrid")
    if any(t.dtype is not tensors[0].dtype for t in tensors):
        raise DtypeMismatchError(f"meshgrid expects all tensors to have the same dtype, got "
                                 f"{[t.dtype.name for t in tensors]}")
    ts = list(tensors)
    swap = indexing == "xy" and len(ts) >= 2
    if swap:
        ts[0], ts[1] = ts[1], ts[0]
    shape = tuple(t.numel() for t in ts)
    grids = [t.reshape(tuple(s if j == i else 1 for j, s in enumerate(shape))).expand(shape)
             for i, t in enumerate(ts)]
    if swap:
        grids[0], grids[1] = grids[1], grids[0]
    return tuple(grids)


@_export(record=True)
def cartesian_prod(*tensors):
    """All combinations of the elements of 1-D tensors, one per row (the tensor itself for one)."""
    for t in tensors:
        if _need_tensor(t, "cartesian_prod", "tensors").ndim != 1:
            raise ShapeError(f"cartesian_prod(): Expect a 1D vector, but got shape {list(t.shape)}")
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return stack([g.reshape(-1) for g in grids], 1)


def _triangle_indices(op: str, row, col, offset, dtype, device, keep):
    for name, v in (("row", row), ("col", col), ("offset", offset)):
        if isinstance(v, bool) or not isinstance(v, int):
            raise TdxTypeError(f"{op}(): argument '{name}' must be int, not {type(v).__name__}")
    for name, v in (("row", row), ("col", col)):
        if v < 0:
            raise TdxRuntimeError(f"{op}(): {name} must be non-negative, got {v}")
    dtype = D.int64 if dtype is None else D.as_dtype(dtype)
    if dtype not in (D.int32, D.int64):
        raise TdxNotImplementedError(f"\"{op}\" not implemented for {dtype.name} (it gives int32 or int64)")
    ex = backends.get(device)
    r = wrap(ex.arange(0, row, 1, D.int64), ex).reshape(row, 1)
    c = wrap(ex.arange(0, col, 1, D.int64), ex).reshape(1, col)
    return keep(c - r, offset).nonzero().t().contiguous()._cast(dtype)


@_export
def tril_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    """The (2, N) row and column indices of the lower triangle of a ``row`` x ``col`` matrix."""
    return _triangle_indices("tril_indices", row, col, offset, dtype, device, lambda d, k: d <= k)


@_export
def triu_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    """The (2, N) row and column indices of the upper triangle of a ``row`` x ``col`` matrix."""
    return _triangle_indices("triu_indices", row, col, offset, dtype, device, lambda d, k: d >= k)
