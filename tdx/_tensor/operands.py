"""Shared rules of the composite ops (:mod:`.elementwise`, :mod:`.reduction`, :mod:`.linalg`...): operand checks, result
types, torch's error texts, and the shared forms of fused and in-place ops.

Everything here is written with tdx ops. Must never import a framework.
"""

from __future__ import annotations

import math
import sys

from .. import _dtypes as D
from . import wrapping as TM
from .. import return_types
from .._errors import CastError, DtypeMismatchError, ShapeError, TdxNotImplementedError, TdxRuntimeError, TdxTypeError
from .wrapping import wrap
from . import recording as _tape
from ..autograd.grad_mode import is_grad_enabled
from ..backends.base import norm_dim

_HALF = (D.float16, D.bfloat16)
# largest finite value of each floating dtype (nan_to_num's defaults)
_FMAX = {D.float16: 65504.0, D.bfloat16: 3.3895313892515355e38, D.float32: 3.4028234663852886e38,
         D.float64: sys.float_info.max}
# torch's names of dtypes in its "not implemented for 'Long'" messages
_TORCH_NAMES = {"bool": "Bool", "uint8": "Byte", "int8": "Char", "int16": "Short", "int32": "Int",
                "int64": "Long", "float16": "Half", "bfloat16": "BFloat16", "float32": "Float",
                "float64": "Double", "complex64": "ComplexFloat", "complex128": "ComplexDouble"}


# helpers ------------------------------------------------------------------------------------------
def _tensor(t, x, op: str, arg: str):
    """``x``, which must be a Tensor on ``t``'s executor (else TdxTypeError / DeviceMismatchError)."""
    if x.__class__ is not TM.Tensor:
        raise TdxTypeError(f"{op}(): argument '{arg}' must be Tensor, not {type(x).__name__}")
    if x._ex is not t._ex:
        return wrap(TM.foreign(op, t._ex, x), t._ex)  # torch's mixed-device error unless auto_transfer
    return x


def _operand(t, x, op: str, arg: str):
    """``x`` as a Tensor on ``t``'s executor or a Python number (NumPy scalars become numbers)."""
    if x.__class__ is TM.Tensor:
        return _tensor(t, x, op, arg)
    value = x if isinstance(x, (bool, int, float, complex)) else TM.scalar(x)
    if value is NotImplemented:
        raise TdxTypeError(f"{op}(): argument '{arg}' must be Tensor or Number, not {type(x).__name__}")
    return value


def _result_type(*xs):
    """torch's result dtype of tensors (dim>0 above 0-d) and Python numbers."""
    dims, zeros, scalars = [], [], []
    for x in xs:
        if x.__class__ is TM.Tensor:
            (dims if x._n.ndim else zeros).append(x.dtype)
        elif x is not None:
            scalars.append(x)
    return D.result_type(dims, zeros, scalars)


def _is_float(d) -> bool:
    return d.is_floating_point or d.is_complex


def _work(d):
    """The dtype an op on ``d`` computes in: float32 for half precision, else ``d``."""
    return D.float32 if d in _HALF else d


def _not_implemented(op: str, d, accepted: str = "floating point tensors"):
    name = _TORCH_NAMES.get(d.name, d.name)
    return TdxNotImplementedError(f"\"{op}\" not implemented for '{name}' (it takes {accepted})")


def _no_complex(t, op: str) -> None:
    if t.dtype.is_complex:
        raise _not_implemented(op, t.dtype, "real tensors")


def _coerce(value, rt, op: str, arg: str):
    """A Number argument (``alpha``, ``beta``, ``value``) converted to ``rt`` as torch converts it:
    truncated for integer results, refused where it does not fit.

    Raises:
        TdxTypeError: ``value`` is not a number.
        TdxRuntimeError: ``value`` cannot be represented in ``rt``.
    """
    if value.__class__ is TM.Tensor:
        value = value.item()
    number = value if isinstance(value, (bool, int, float, complex)) else TM.scalar(value)
    if number is NotImplemented:
        raise TdxTypeError(f"{op}(): argument '{arg}' must be Number, not {type(value).__name__}")
    value = number
    if isinstance(value, bool):
        return value if rt is D.bool_ else int(value)
    if rt is D.bool_ or rt.is_complex:
        return value
    bad = TdxRuntimeError(f"{op}(): {arg}={value!r} cannot be converted to {rt.name} without overflow")
    if isinstance(value, complex):
        raise bad
    if rt.is_floating_point:
        return value
    if isinstance(value, float) and not math.isfinite(value):
        raise bad
    value, bits = int(value), 8 * rt.itemsize  # a float truncates toward zero, as torch's cast
    lo, hi = (0, 2 ** bits - 1) if rt is D.uint8 else (-2 ** (bits - 1), 2 ** (bits - 1) - 1)
    if not lo <= value <= hi:
        raise bad
    return value


def _saturated(value, d):
    """A replacement ``value`` as a float ``d`` holds it (what torch's cast of it gives): past ``d``'s largest finite
    value by half an ulp or more, infinity; up to that, the largest finite value. In range, ``value`` itself (an
    elementwise op then converts it as torch's does, and no kernel checks it for overflow)."""
    big = _FMAX[d]
    if not big < abs(value) < math.inf:
        return value
    mantissa, exponent = math.frexp(big)  # big = (2 - eps) * 2**(exponent - 1): the top ulp is eps * 2**(exponent - 1)
    half_ulp = math.ldexp(2 * (1 - mantissa), exponent - 2)
    return math.copysign(math.inf if abs(value) >= big + half_ulp else big, value)


def _cut_points(indices, op: str):
    """``tensor_split``'s ``indices``, a sequence or an int, as Python values (``tolist()`` where it has one); a tdx
    tensor with torch's checks: 0-d or 1-d, int64, and on the host (torch reads it there: one on a CUDA or MPS device
    is refused; an MLX one, whose torch twin is the CPU, is read as a CPU tensor).

    Raises:
        TdxRuntimeError: a tensor ``indices`` on a torch accelerator, not int64, or more than 1-d.
    """
    if not isinstance(indices, TM.Tensor):
        return indices.tolist() if hasattr(indices, "tolist") else indices
    if not (indices.is_cpu or indices.is_mlx):
        raise TdxRuntimeError(f"{op} expected tensor_indices_or_sections to be on cpu, but it's on {indices.device}")
    if indices.dtype is not D.int64:
        raise TdxRuntimeError(f"{op} expected tensor_indices_or_sections to have dtype of long, but got "
                              f"{_TORCH_NAMES.get(indices.dtype.name, indices.dtype.name)}")
    if indices.ndim > 1:
        raise TdxRuntimeError(f"{op} expected tensor_indices_or_sections to be a zero-dimensional or one-dimensional "
                              f"tensor, but got a tensor with {indices.ndim} dims")
    return indices.tolist()


def _full(t, shape, value, dtype):
    """A new tensor of ``shape`` filled with ``value`` on ``t``'s executor."""
    return wrap(t._ex.full(tuple(shape), value, dtype), t._ex)


def _shifted(x, d: int, step: int, pad=None):
    """``x`` moved ``step`` places later along ``d``; the first ``step`` places hold ``pad``, or ``x``'s own."""
    from .shape import cat

    head = x.narrow(d, 0, step) if pad is None else pad
    return cat([head, x.narrow(d, 0, x.shape[d] - step)], d)


def cat_promoted(tensors, dim: int):
    """``cat`` of ``tensors`` cast to their promoted dtype first (empty ones count, as in torch)."""
    from .shape import cat

    rt = tensors[0].dtype
    for t in tensors[1:]:
        rt = D.promote_types(rt, t.dtype)
    return cat([t._cast(rt) for t in tensors], dim)


def _requires_grad(*ts) -> bool:
    return is_grad_enabled() and any(t.__class__ is TM.Tensor and t.requires_grad for t in ts)


def _same_dtype(op: str, *named) -> None:
    dtypes = [t.dtype for _, t in named]
    if any(d is not dtypes[0] for d in dtypes):
        got = ", ".join(f"{n} {t.dtype.name}" for n, t in named)
        raise DtypeMismatchError(f"{op}(): expected one dtype for all inputs, got {got}")


def _fused(op: str, t, shape, product, mats, beta, alpha, skip_zero_alpha: bool, empty_sum: bool):
    """``beta * t + alpha * product`` with torch's rules for the addmm family.

    ``product(dtype)`` computes the matrix product in ``dtype``. ``beta == 0`` ignores ``t`` (its NaNs
    included); ``alpha == 0`` drops the product where torch's kernel skips it (``skip_zero_alpha``): a floating
    product is then not computed, an integer one is (the executor's kernel refuses it where torch's refuses the
    call, whatever alpha).
    A product that sums over nothing (``empty_sum``) gives ``beta * t``, cast back to ``t``'s dtype
    under the in-place rule, as torch's shortcut for it; an empty result skips every dtype rule.
    """
    rt = t.dtype
    base = t.expand(shape)
    if math.prod(shape) == 0:
        return _full(t, shape, 0, rt)
    if empty_sum:
        return _full(t, shape, 0, rt) if beta == 0 else _write_like(t, base * beta, op)
    if rt is D.bool_:
        raise _not_implemented(op, rt, "numeric tensors")
    beta, alpha = _coerce(beta, rt, op, "beta"), _coerce(alpha, rt, op, "alpha")
    work = _work(rt)
    out = None
    if alpha != 0 or not skip_zero_alpha:
        prod = product(work)
        out = prod if alpha == 1 else prod * alpha
    elif _requires_grad(*mats) or not _is_float(rt):
        # torch still gives the matrices (zero) gradients, and refuses an integer product where its device has no
        # integer kernel (CUDA) before it looks at alpha: the product is computed and its values dropped
        out = product(work).masked_fill(_full(t, shape, True, D.bool_), 0)
    if beta != 0:
        scaled = base._cast(work) if beta == 1 else base._cast(work) * beta
        out = scaled if out is None else out + scaled
    if out is None:
        return _full(t, shape, 0, rt)
    return out.clone() if out is base else out._cast(rt)


def _addr_scalar(value, rt, arg: str):
    """``addr``'s stricter rule for ``alpha``/``beta``: no floats for integral results, bools only for bool."""
    if value.__class__ is TM.Tensor:
        value = value.item()
    if not rt.is_floating_point and not rt.is_complex and isinstance(value, (float, complex)):
        raise TdxRuntimeError(f"For integral input tensors, argument {arg} must not be a floating point number "
                              f"(got {value!r})")
    if rt is not D.bool_ and isinstance(value, bool):
        raise TdxRuntimeError(f"Boolean {arg} only supported for Boolean results (got {arg}={value!r} for "
                              f"{rt.name})")
    return _coerce(value, rt, "addr", arg)


def _scan_extreme(t, dim, op: str, later_wins):
    """(values, indices) of the running max/min of ``t`` along ``dim`` (cummax/cummin).

    A log-step scan over (value, index) pairs: a later element wins ties (as torch's kernel, which
    keeps the last index of the extreme), and NaN wins over numbers (the last NaN's index). The
    indices are computed beside the values, never used to gather: they stay constants to autodiff.
    """
    _no_complex(t, op)
    if t.numel() == 0:  # torch accepts any dim here
        pair = return_types.cummax if op == "cummax" else return_types.cummin
        return pair(t.clone(), _full(t, t.shape, 0, D.int64))
    d = norm_dim(dim, t.ndim)
    x = t.reshape(1) if t.ndim == 0 else t
    shape = tuple(x.shape)
    idx = wrap(x._ex.arange(0, shape[d], 1, D.int64), x._ex)
    idx = idx.reshape(tuple(n if i == d else 1 for i, n in enumerate(shape))).expand(shape)
    key = x
    nan = x.isnan() if x.dtype.is_floating_point else None
    n, step = x.shape[d], 1
    while step < n:
        prev_key, prev_idx = _shifted(key, d, step), _shifted(idx, d, step)
        win = later_wins(key, prev_key)
        if nan is not None:
            prev_nan = _shifted(nan, d, step)
            win = nan | (win & prev_nan.logical_not())
            nan = nan | prev_nan
        key, idx = key.where(win, prev_key), idx.where(win, prev_idx)
        step *= 2
    values = key  # the winners' own values (NaN and -0.0 included); gradients reach the winners
    if t.ndim == 0:
        values, idx = values.reshape(()), idx.reshape(())
    return (return_types.cummax if op == "cummax" else return_types.cummin)(values, idx)


def _signbit(t):
    """Whether each element's sign bit is set (-0.0 included; a NaN counts as positive)."""
    if t.dtype is D.bool_ or t.dtype is D.uint8:
        return _full(t, t.shape, False, D.bool_)
    neg = t < 0
    if not t.dtype.is_floating_point:
        return neg
    return neg | ((t == 0) & (t.reciprocal() < 0))


def _write_like(t, out, op: str):
    """``out`` cast to ``t``'s dtype where torch's in-place cast rule allows (else CastError)."""
    return _tape.written_as(out, t.dtype, op)


def _write(t, out, op: str):
    """Write ``out`` into ``t`` as an in-place op does: torch's cast rule (else CastError), and no
    broadcasting of ``t`` (else ShapeError)."""
    _write_like(t, out, op)
    if out.shape != t.shape:
        raise ShapeError(f"{op}: output with shape {list(t.shape)} doesn't match the broadcast shape "
                         f"{list(out.shape)}")
    return t.copy_(out)


def _inplace(name: str):
    """The in-place method ``name_`` of the composite ``name``: computed out of place, then written."""
    def method(self, *args, **kwargs):
        # (torch's own in-place kernel, where it applies, is taken before: wrapping.native_inplace)
        # a clone keeps the values torch's autograd saved for the backward from being overwritten
        src = self.clone() if self._ex.caps.native_autograd and _requires_grad(self) else self
        return _write(self, getattr(src, name)(*args, **kwargs), name + "_")

    method.__name__ = name + "_"
    method.__qualname__ = f"MathTensorMethods.{name}_"
    method.__doc__ = f"In-place ``{name}``: the result must cast to self's dtype and keep self's shape."
    return method
