"""Tensor methods composed from the op surface: fused arithmetic (addmm, addcmul, lerp...),
comparisons of whole tensors (isclose, allclose, equal), NaN-aware reductions and products.

A mixin of ``tdx.Tensor``. Each method is written with other tdx ops, so it runs on every
executor, records on tdx's tape as one op, and raises what its parts raise; the shared
helpers are in :mod:`tdx._math_support`. Must never import a framework and holds no
per-executor special case.

Half precision inputs (float16, bfloat16) of fused ops are computed in float32 and rounded
once at the end, as torch's kernels compute them (its "opmath" type).
"""

from __future__ import annotations

import math

from . import _dtypes as D
from . import _tensor_methods as TM
from . import return_types
from ._errors import (CastError, DtypeMismatchError, ShapeError, TdxIndexError, TdxRuntimeError, TdxTypeError,
                      UnsupportedOpError)
from ._math_support import (_FMAX, _addr_scalar, _coerce, _full, _fused, _inplace, _is_float, _no_complex,
                            _not_implemented, _operand, _requires_grad, _result_type, _same_dtype, _scan_extreme,
                            _shifted, _signbit, _tensor, _work, _write, _write_like, cat_promoted)
from ._tensor_methods import typed_errors
from .backends.base import norm_dim


class MathTensorMethods:
    """Composite math methods of ``tdx.Tensor``."""

    __slots__ = ()

    # fused arithmetic ---------------------------------------------------------------------------
    def addmm(self, mat1, mat2, *, beta=1, alpha=1):
        """``beta * self + alpha * (mat1 @ mat2)``; ``self`` broadcasts to the product's shape."""
        mat1, mat2 = _tensor(self, mat1, "addmm", "mat1"), _tensor(self, mat2, "addmm", "mat2")
        if mat1.ndim != 2 or mat2.ndim != 2:
            raise ShapeError(f"addmm(): mat1 and mat2 must be matrices, got {mat1.ndim}-D and {mat2.ndim}-D")
        (n, k), (k2, p) = mat1.shape, mat2.shape
        if k != k2:
            raise ShapeError(f"addmm(): mat1 and mat2 shapes cannot be multiplied ({n}x{k} and {k2}x{p})")
        _same_dtype("addmm", ("self", self), ("mat1", mat1), ("mat2", mat2))
        return _fused("addmm", self, (n, p), lambda w: mat1._cast(w).matmul(mat2._cast(w)), (mat1, mat2),
                      beta, alpha, skip_zero_alpha=True, empty_sum=k == 0)

    def addmv(self, mat, vec, *, beta=1, alpha=1):
        """``beta * self + alpha * (mat @ vec)`` for a matrix ``mat`` and a vector ``vec``."""
        mat, vec = _tensor(self, mat, "addmv", "mat"), _tensor(self, vec, "addmv", "vec")
        if mat.ndim != 2 or vec.ndim != 1 or self.ndim > 1:
            raise ShapeError(f"addmv(): vector + matrix @ vector expected, got {self.ndim}-D, {mat.ndim}-D and "
                             f"{vec.ndim}-D tensors")
        (n, k), m = mat.shape, vec.shape[0]
        if k != m or (self.ndim == 1 and self.shape[0] not in (1, n)):
            raise ShapeError(f"addmv(): size mismatch, got input ({', '.join(map(str, self.shape))}), "
                             f"mat ({n}x{k}), vec ({m})")
        _same_dtype("addmv", ("self", self), ("mat", mat), ("vec", vec))
        if mat.numel() == 0:  # torch's shortcut for an empty matrix: beta * self, in self's shape
            return _full(self, (n,), 0, self.dtype) if beta == 0 else \
                (self * _coerce(beta, self.dtype, "addmv", "beta"))._cast(self.dtype)
        return _fused("addmv", self, (n,), lambda w: mat._cast(w).matmul(vec._cast(w)), (mat, vec),
                      beta, alpha, skip_zero_alpha=True, empty_sum=False)

    def _batched(self, op, batch1, batch2):
        b1, b2 = _tensor(self, batch1, op, "batch1"), _tensor(self, batch2, op, "batch2")
        if b2.ndim < 3:  # torch reads batch2's dim 2 first
            raise TdxIndexError(f"{op}(): batch2 must be a 3-D tensor, got {b2.ndim}-D (Dimension out of range: "
                                "dim 2)")
        if b1.ndim != 3 or b2.ndim != 3:
            raise ShapeError(f"{op}(): batch1 and batch2 must be 3-D tensors, got {b1.ndim}-D and {b2.ndim}-D")
        if b1.shape[0] != b2.shape[0] or b1.shape[2] != b2.shape[1]:
            raise ShapeError(f"{op}(): batch1 {list(b1.shape)} and batch2 {list(b2.shape)} do not multiply "
                             f"(one batch count; batch1's columns must equal batch2's rows)")
        if op == "baddbmm" or b1.shape[0]:
            _same_dtype(op, ("self", self), ("batch1", b1), ("batch2", b2))
        return b1, b2

    def baddbmm(self, batch1, batch2, *, beta=1, alpha=1):
        """``beta * self + alpha * (batch1 @ batch2)`` over a batch of matrix products."""
        b1, b2 = self._batched("baddbmm", batch1, batch2)
        shape = (b1.shape[0], b1.shape[1], b2.shape[2])
        return _fused("baddbmm", self, shape, lambda w: b1._cast(w).matmul(b2._cast(w)), (b1, b2),
                      beta, alpha, skip_zero_alpha=False, empty_sum=b1.shape[2] == 0)

    def addbmm(self, batch1, batch2, *, beta=1, alpha=1):
        """``beta * self + alpha * sum_b(batch1[b] @ batch2[b])``: the batch of products, summed."""
        b1, b2 = self._batched("addbmm", batch1, batch2)
        shape = (b1.shape[1], b2.shape[2])
        if b1.shape[0] == 0:  # torch: beta * self for an empty batch, without its dtype checks
            base = self.expand(shape)
            return _full(self, shape, 0, self.dtype) if beta == 0 else _write_like(self, base * beta, "addbmm")
        out = _fused("addbmm", self, shape, lambda w: b1._cast(w).matmul(b2._cast(w)).sum(0, dtype=w), (b1, b2),
                     beta, alpha, skip_zero_alpha=True, empty_sum=b1.shape[2] == 0)
        if b1.shape[2] == 0 and b1.shape[0] > 1 and out.numel():  # torch scales by 1 for each further batch
            out = _write_like(self, out * 1, "addbmm")
        return out

    def addr(self, vec1, vec2, *, beta=1, alpha=1):
        """``beta * self + alpha * outer(vec1, vec2)`` (dtypes promote; bools combine with and/or)."""
        vec1, vec2 = _tensor(self, vec1, "addr", "vec1"), _tensor(self, vec2, "addr", "vec2")
        if vec1.ndim != 1 or vec2.ndim != 1:
            raise ShapeError(f"addr(): expected 1-D vec1 and vec2, got {vec1.ndim}-D and {vec2.ndim}-D")
        rt = D.promote_types(D.promote_types(self.dtype, vec1.dtype), vec2.dtype)  # self counts as expanded
        beta, alpha = _addr_scalar(beta, rt, "beta"), _addr_scalar(alpha, rt, "alpha")
        shape = (vec1.shape[0], vec2.shape[0])
        base = self.expand(shape)
        work = _work(rt)
        outer = vec1._cast(work).reshape(shape[0], 1) * vec2._cast(work).reshape(1, shape[1])
        if rt is D.bool_:
            out = outer if alpha else _full(self, shape, False, rt)
            return out.logical_or(base) if beta else out
        out = outer if alpha == 1 else outer * alpha
        if beta != 0:
            out = out + (base._cast(work) if beta == 1 else base._cast(work) * beta)
        return out._cast(rt)

    def addcmul(self, tensor1, tensor2, *, value=1):
        """``self + value * tensor1 * tensor2``, broadcast and promoted over all three."""
        t1, t2 = _tensor(self, tensor1, "addcmul", "tensor1"), _tensor(self, tensor2, "addcmul", "tensor2")
        rt = _result_type(self, t1, t2)
        if rt is D.bool_:
            raise _not_implemented("addcmul", rt, "numeric tensors")
        value = _coerce(value, rt, "addcmul", "value")
        w = _work(rt)
        prod = t1._cast(w) * t2._cast(w) if value == 1 else (t1._cast(w) * value) * t2._cast(w)
        return (self._cast(w) + prod)._cast(rt)

    def addcdiv(self, tensor1, tensor2, *, value=1):
        """``self + value * tensor1 / tensor2`` (true division), broadcast and promoted over all three."""
        t1, t2 = _tensor(self, tensor1, "addcdiv", "tensor1"), _tensor(self, tensor2, "addcdiv", "tensor2")
        if not _is_float(t1.dtype) and not _is_float(t2.dtype):
            raise TdxRuntimeError(f"addcdiv(): integer division ({t1.dtype.name} / {t2.dtype.name}) is no longer "
                                  "supported; use (input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) "
                                  "or pass floating point tensors")
        rt = _result_type(self, t1, t2)
        value = _coerce(value, rt, "addcdiv", "value")
        w = _work(rt)
        num = t1._cast(w) if value == 1 else t1._cast(w) * value
        return (self._cast(w) + num / t2._cast(w))._cast(rt)

    def lerp(self, end, weight):
        """``self + weight * (end - self)``, computed as torch does for accuracy near ``weight = 1``."""
        end = _tensor(self, end, "lerp", "end")
        rt = self.dtype
        if end.dtype is not rt:
            raise DtypeMismatchError(f"lerp(): expected dtype {rt.name} for `end` but got dtype {end.dtype.name}")
        weight = _operand(self, weight, "lerp", "weight")
        if weight.__class__ is TM.Tensor:
            if weight.ndim and weight.dtype is not rt:
                raise DtypeMismatchError(f"lerp(): expected dtype {rt.name} for `weight` but got dtype "
                                         f"{weight.dtype.name}")
            rt = _result_type(self, end, weight)  # a 0-d weight promotes 0-d inputs only
        if not _is_float(rt):
            raise _not_implemented("lerp", rt)
        w = _work(rt)
        a, b = self._cast(w), end._cast(w)
        if weight.__class__ is TM.Tensor:
            wt = weight._cast(w)
            small = a + wt * (b - a)
            large = b - (b - a) * (1 - wt)
            return small.where(wt.abs() < 0.5, large)._cast(rt)
        weight = _coerce(weight, rt, "lerp", "weight")
        out = a + weight * (b - a) if abs(weight) < 0.5 else b - (b - a) * (1 - weight)
        return out._cast(rt)

    # elementwise ----------------------------------------------------------------------------------
    def _pair(self, other, op: str):
        """(self, other) cast to their common floating dtype's compute dtype, and that dtype."""
        other = _tensor(self, other, op, "other")
        rt = _result_type(self, other)
        if not _is_float(rt):
            raise _not_implemented(op, rt)
        if rt.is_complex:
            raise UnsupportedOpError(f"{op}() of complex tensors is not supported (got {rt.name})")
        w = _work(rt)
        return self._cast(w), other._cast(w), rt

    def _logaddexp(self, other, op: str, log1p_exp):
        a, b, rt = self._pair(other, op)
        m = a.maximum(b)
        out = m + log1p_exp(-(a - b).abs())
        return out.where((a != b) | a.isfinite(), a)._cast(rt)  # equal infinities: the infinity itself

    def logaddexp(self, other):
        """``log(exp(self) + exp(other))``, computed without overflow."""
        return self._logaddexp(other, "logaddexp", lambda x: x.exp().log1p())

    def logaddexp2(self, other):
        """``log2(2**self + 2**other)``, computed without overflow."""
        return self._logaddexp(other, "logaddexp2", lambda x: x.exp2().log1p() * (1 / math.log(2)))

    def hypot(self, other):
        """``sqrt(self**2 + other**2)`` without overflow (infinite if either is, even with a NaN)."""
        a, b, rt = self._pair(other, "hypot")
        a, b = a.abs(), b.abs()
        big, small = a.maximum(b), a.minimum(b)
        safe = big.where(big != 0, 1)
        r = small / safe
        out = (big * (r * r + 1).sqrt()).where(big != 0, 0)
        inf = a.isinf() | b.isinf()
        return out.where(inf.logical_not(), math.inf)._cast(rt)

    def xlogy(self, other):
        """``self * log(other)``, 0 where ``self`` is 0 (unless ``other`` is NaN); ints give floats."""
        from ._functional_math import xlogy_of

        return xlogy_of(self, _operand(self, other, "xlogy", "other"))

    def fmax(self, other):
        """Elementwise maximum that ignores NaN (NaN only where both are)."""
        other = _tensor(self, other, "fmax", "other")
        _no_complex(self, "fmax")
        return self.where((self >= other) | other.isnan(), other)

    def fmin(self, other):
        """Elementwise minimum that ignores NaN (NaN only where both are)."""
        other = _tensor(self, other, "fmin", "other")
        _no_complex(self, "fmin")
        return self.where((self <= other) | other.isnan(), other)

    def copysign(self, other):
        """The magnitude of ``self`` with the sign of ``other`` (ints give floats; -0.0 counts negative)."""
        other = _operand(self, other, "copysign", "other")
        _no_complex(self, "copysign")
        if other.__class__ is TM.Tensor:
            _no_complex(other, "copysign")
        rt = D.float_for(_result_type(self, other))
        mag = self._cast(rt).abs()
        if other.__class__ is not TM.Tensor:
            return -mag if math.copysign(1.0, other) < 0 else mag
        out = (-mag).where(_signbit(other), mag)
        if _requires_grad(other):  # torch gives ``other`` a zero gradient
            out = out - other._cast(rt).masked_fill(_full(other, other.shape, True, D.bool_), 0)
        return out

    def signbit(self):
        """Whether each element's sign bit is set (-0.0 included)."""
        _no_complex(self, "signbit")
        return _signbit(self)

    def heaviside(self, values):
        """0 where ``self < 0``, 1 where ``self > 0``, ``values`` where ``self == 0`` (NaN gives 0)."""
        values = _tensor(self, values, "heaviside", "values")
        if self.dtype.is_complex or values.dtype.is_complex:
            raise TdxRuntimeError("heaviside is not yet implemented for complex tensors.")
        if self.dtype is not values.dtype:
            raise DtypeMismatchError(f"heaviside is not yet implemented for tensors with different dtypes "
                                     f"({self.dtype.name} and {values.dtype.name})")
        return (self > 0)._cast(self.dtype).where(self != 0, values)

    def _signed_inf(self, op: str, inf: float):
        if self.dtype.is_complex:
            raise TdxRuntimeError(f"{op} does not support complex inputs.")
        return self == inf if self.dtype.is_floating_point else _full(self, self.shape, False, D.bool_)

    def isposinf(self):
        """Whether each element is +inf."""
        return self._signed_inf("isposinf", math.inf)

    def isneginf(self):
        """Whether each element is -inf."""
        return self._signed_inf("isneginf", -math.inf)

    def _scaled(self, op: str, factor: float):
        if self.dtype.is_complex:
            raise TdxRuntimeError(f"{op} is not supported for complex tensors.")
        return self._cast(D.float_for(self.dtype)) * factor

    def deg2rad(self):
        """Degrees to radians (ints and bools give the default float dtype)."""
        return self._scaled("deg2rad", math.pi / 180)

    def rad2deg(self):
        """Radians to degrees (ints and bools give the default float dtype)."""
        return self._scaled("rad2deg", 180 / math.pi)

    def logit(self, eps=None):
        """``log(p / (1 - p))``; with ``eps`` >= 0, ``p`` is first held inside ``[eps, 1 - eps]``."""
        if self.dtype.is_complex:
            raise _not_implemented("logit", self.dtype, "real tensors")
        rt = D.float_for(self.dtype)
        p = self._cast(_work(rt))
        if eps is not None and eps >= 0:
            lo, hi = float(eps), 1.0 - float(eps)
            p = p.where((p > hi).logical_not(), hi).where((p < lo).logical_not(), lo)
        return (p / (1 - p)).log()._cast(rt)

    def float_power(self, exponent):
        """``self ** exponent`` computed in float64 (complex128 when either is complex)."""
        from ._functional_math import float_power_of

        return float_power_of(self, _operand(self, exponent, "float_power", "exponent"))

    def float_power_(self, exponent):
        """In-place ``float_power``: self must already be float64 (or complex128)."""
        out = self.float_power(exponent)
        if out.dtype is not self.dtype:
            raise CastError(f"the base given to float_power_ has dtype {self.dtype.name} but the operation's "
                            f"result requires dtype {out.dtype.name}")
        return _write(self, out, "float_power_")

    def nan_to_num(self, nan=0.0, posinf=None, neginf=None):
        """NaN, +inf and -inf replaced by ``nan`` and the dtype's largest / lowest finite values (or the
        given ones); integer and bool tensors come back unchanged (a copy)."""
        d = self.dtype
        if not d.is_floating_point:
            if d.is_complex:
                raise UnsupportedOpError("nan_to_num() of complex tensors is not supported")
            return self.clone()
        big = _FMAX[d]
        out = self.where(self.isnan().logical_not(), 0.0 if nan is None else nan)
        out = out.where(self != math.inf, big if posinf is None else posinf)
        return out.where(self != -math.inf, -big if neginf is None else neginf)

    # reductions and scans ------------------------------------------------------------------------
    def nansum(self, dim=None, keepdim=False, *, dtype=None):
        """Sum over ``dim`` (all when None) counting NaN as zero."""
        if self.dtype.is_complex:
            raise TdxRuntimeError("nansum does not support complex inputs")
        x = self.where(self.isnan().logical_not(), 0) if self.dtype.is_floating_point else self
        return x.sum(dim, keepdim, dtype=dtype)

    def nanmean(self, dim=None, keepdim=False, *, dtype=None):
        """Mean over ``dim`` (all when None) of the non-NaN elements (NaN where there are none)."""
        if not _is_float(self.dtype):
            raise TdxRuntimeError(f"nanmean(): expected a floating point or complex input, got {self.dtype.name}")
        if dtype is not None and not _is_float(D.as_dtype(dtype)):
            raise TdxRuntimeError(f"nanmean(): dtype must be floating point or complex, got {D.as_dtype(dtype).name}")
        count = self.isnan().logical_not().sum(dim, keepdim)
        return self.nansum(dim, keepdim, dtype=dtype) / count

    def count_nonzero(self, dim=None):
        """int64 count of non-zero elements over ``dim`` (an int or a tuple; all when None)."""
        return (self != 0).sum(dim)

    def aminmax(self, *, dim=None, keepdim=False):
        """(min, max) over ``dim``, or over all elements when None."""
        _no_complex(self, "aminmax")
        if dim is None:
            if self.numel() == 0:
                raise TdxRuntimeError("aminmax(): cannot reduce an empty tensor (the operation has no identity)")
            lo, hi = self.amin(), self.amax()
            if keepdim:
                shape = (1,) * self.ndim
                lo, hi = lo.reshape(shape), hi.reshape(shape)
            return return_types.aminmax(lo, hi)
        if isinstance(dim, bool) or not isinstance(dim, int):
            raise TdxTypeError(f"aminmax(): argument 'dim' must be int, not {type(dim).__name__}")
        return return_types.aminmax(self.amin(dim, keepdim), self.amax(dim, keepdim))

    def cummax(self, dim):
        """(values, indices) of the running maximum along ``dim`` (ties and NaNs take the later index)."""
        return _scan_extreme(self, dim, "cummax", lambda cur, prev: cur >= prev)

    def cummin(self, dim):
        """(values, indices) of the running minimum along ``dim`` (ties and NaNs take the later index)."""
        return _scan_extreme(self, dim, "cummin", lambda cur, prev: cur <= prev)

    def logcumsumexp(self, dim):
        """``log(cumsum(exp(self)))`` along ``dim``, computed without overflow or underflow."""
        d = norm_dim(dim, self.ndim)
        if not self.dtype.is_floating_point:
            if self.dtype.is_complex:
                raise UnsupportedOpError("logcumsumexp() of complex tensors is not supported")
            raise _not_implemented("logcumsumexp", self.dtype)
        x = (self.reshape(1) if self.ndim == 0 else self)._cast(_work(self.dtype))
        n, step = x.shape[d], 1
        while step < n:
            pad_shape = tuple(step if i == d else s for i, s in enumerate(x.shape))
            prev = _shifted(x, d, step, _full(x, pad_shape, -math.inf, x.dtype))
            x = x.logaddexp(prev)
            step *= 2
        return x.reshape(self.shape)._cast(self.dtype)

    # products and comparisons of whole tensors ----------------------------------------------------
    def dot(self, tensor):
        """Inner product of two 1-D tensors of one dtype and length."""
        other = _tensor(self, tensor, "dot", "tensor")
        if self.ndim != 1 or other.ndim != 1 or self.shape != other.shape:
            raise ShapeError(f"dot(): 1-D tensors of one length expected, got {list(self.shape)} and "
                             f"{list(other.shape)}")
        _same_dtype("dot", ("self", self), ("tensor", other))
        if self.dtype is D.bool_:
            raise _not_implemented("dot", self.dtype, "numeric tensors")
        return self.matmul(other)

    def mv(self, vec):
        """Matrix-vector product of a 2-D ``self`` and a 1-D ``vec`` of one dtype."""
        vec = _tensor(self, vec, "mv", "vec")
        if self.ndim != 2 or vec.ndim != 1 or self.shape[1] != vec.shape[0]:
            raise ShapeError(f"mv(): a matrix and a vector of its row length expected, got {list(self.shape)} and "
                             f"{list(vec.shape)}")
        _same_dtype("mv", ("self", self), ("vec", vec))
        if self.dtype is D.bool_:
            if self.numel():
                raise _not_implemented("mv", self.dtype, "numeric tensors")
            return _full(self, (self.shape[0],), False, D.bool_)  # an empty sum, as torch gives it
        return self.matmul(vec)

    def inner(self, other):
        """Sum of products over the last dims (``self * other`` when either is 0-d)."""
        other = _tensor(self, other, "inner", "other")
        if self.ndim == 0 or other.ndim == 0:
            return self * other
        k = self.shape[-1]
        if other.shape[-1] != k:
            raise ShapeError(f"inner() the last dimension must match on both input tensors but got shapes "
                             f"{list(self.shape)} and {list(other.shape)}")
        _same_dtype("inner", ("self", self), ("other", other))
        if self.ndim == 1 and other.ndim == 1:
            return self.dot(other)
        rows, cols = math.prod(self.shape[:-1]), math.prod(other.shape[:-1])
        out_shape = tuple(self.shape[:-1]) + tuple(other.shape[:-1])
        if self.dtype is D.bool_:
            if rows == cols == 1:  # torch takes its dot path here
                raise _not_implemented("dot", self.dtype, "numeric tensors")
            if k == 0 or rows * cols == 0:  # empty sums (or no result), as torch gives them
                return _full(self, out_shape, False, D.bool_)
        a, b = self.reshape(rows, k), other.reshape(cols, k)
        return a.matmul(b.t()).reshape(out_shape)

    def kron(self, other):
        """Kronecker product: every element of ``self`` times a block of ``other``."""
        other = _tensor(self, other, "kron", "other")
        n = max(self.ndim, other.ndim)
        sa = (1,) * (n - self.ndim) + tuple(self.shape)
        sb = (1,) * (n - other.ndim) + tuple(other.shape)
        a = self.reshape(tuple(s for x in sa for s in (x, 1)))
        b = other.reshape(tuple(s for x in sb for s in (1, x)))
        return (a * b).reshape(tuple(x * y for x, y in zip(sa, sb)))

    def isclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
        """Elementwise ``|self - other| <= atol + rtol * |other|`` (or equal), with broadcasting."""
        other = _tensor(self, other, "isclose", "other")
        d = self.dtype
        if other.dtype is not d:
            raise DtypeMismatchError(f"isclose(): {d.name} did not match {other.dtype.name} (both tensors must "
                                     "have one dtype)")
        if d.is_complex and equal_nan:
            raise TdxRuntimeError("isclose with equal_nan=True is not supported for complex inputs.")
        rtol, atol = float(rtol), float(atol)
        if rtol < 0 or atol < 0:
            raise TdxRuntimeError(f"isclose(): rtol and atol must be >= 0, but got rtol={rtol}, atol={atol}")
        close = self == other
        if equal_nan and d.is_floating_point:
            close = close | (self.isnan() & other.isnan())
        if rtol == 0 and atol == 0:
            return close
        wide = d if _is_float(d) else D.get_default_dtype()  # ints compare in the default float dtype
        a, b = self._cast(wide), other._cast(wide)
        actual = (a - b).abs()
        return close | (actual.isfinite() & (actual <= (b * rtol).abs() + atol))

    def allclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False) -> bool:
        """Whether every element pair is close (``isclose``), as a Python bool."""
        return bool(self.isclose(other, rtol, atol, equal_nan).all().item())

    def equal(self, other) -> bool:
        """Whether both tensors have one shape and equal elements (NaN is never equal), as a Python bool."""
        other = _tensor(self, other, "equal", "other")
        return self.shape == other.shape and bool((self == other).all().item())

    # rearranging ---------------------------------------------------------------------------------
    def diff(self, n=1, dim=-1, prepend=None, append=None):
        """The ``n``-th forward difference along ``dim`` (``!=`` for bools), after adding ``prepend``/``append``."""
        if isinstance(n, bool) or not isinstance(n, int):
            raise TdxTypeError(f"diff(): argument 'n' must be int, not {type(n).__name__}")
        if self.ndim == 0:
            raise ShapeError("diff expects input to be at least one-dimensional")
        if n < 0:
            raise TdxRuntimeError(f"order must be non-negative but got {n}")
        d = norm_dim(dim, self.ndim)
        parts = []
        for name, extra in (("prepend", prepend), ("append", append)):
            if extra is None:
                continue
            extra = _tensor(self, extra, "diff", name)
            if extra.ndim != self.ndim:
                raise ShapeError(f"diff(): {name} must have input's {self.ndim} dims, got {extra.ndim}")
            for i, (a, b) in enumerate(zip(self.shape, extra.shape)):
                if i != d and a != b:
                    raise ShapeError(f"diff(): {name} must match input's shape except along dim {d}; "
                                     f"input.size({i}) = {a}, but {name}.size({i}) = {b}")
            parts.append((name, extra))
        if n == 0:
            return self
        x = self
        if parts:
            x = cat_promoted([t for name, t in parts if name == "prepend"] + [self] +
                             [t for name, t in parts if name == "append"], d)
        for _ in range(min(n, x.shape[d])):
            m = x.shape[d] - 1
            hi, lo = x.narrow(d, 1, m), x.narrow(d, 0, m)
            x = hi.logical_xor(lo) if x.dtype is D.bool_ else hi - lo
        return x

    def broadcast_to(self, size):
        """``self`` expanded (a view) to ``size``; -1 keeps a dim."""
        return self.expand(size)

    def clamp_min(self, min):  # noqa: A002 - torch's name
        """Elementwise ``max(self, min)`` (a number or a broadcastable tensor)."""
        return self.clamp(min=_operand(self, min, "clamp_min", "min"))

    def clamp_max(self, max):  # noqa: A002 - torch's name
        """Elementwise ``min(self, max)`` (a number or a broadcastable tensor)."""
        return self.clamp(max=_operand(self, max, "clamp_max", "max"))

    def _flip_at_least(self, op: str, dim: int):
        if self.ndim <= dim:
            raise ShapeError(f"{op}(): Input must be >= {dim + 1}-d, got {self.ndim}-d")
        return self.flip(dim)

    def fliplr(self):
        """Reverse the columns (dim 1) of a tensor of at least 2 dims."""
        return self._flip_at_least("fliplr", 1)

    def flipud(self):
        """Reverse the rows (dim 0) of a tensor of at least 1 dim."""
        return self._flip_at_least("flipud", 0)

    def rot90(self, k=1, dims=(0, 1)):
        """Rotate by 90 degrees ``k`` times in the plane of ``dims`` (from the first towards the second)."""
        dims = [int(x) for x in dims]
        if len(dims) != 2:
            raise TdxRuntimeError(f"rot90(): expected total rotation dims == 2, but got dims = {len(dims)}")
        n = self.ndim
        if n < 2:
            raise ShapeError(f"rot90(): expected total dims >= 2, but got total dims = {n}")
        d0, d1 = norm_dim(dims[0], n), norm_dim(dims[1], n)
        if d0 == d1:
            raise TdxRuntimeError(f"rot90(): expected rotation dims to be different, but got dim0 = {dims[0]} and "
                                  f"dim1 = {dims[1]}")
        k = int(k) % 4
        if k == 1:
            return self.flip(d1).transpose(d0, d1)
        if k == 2:
            return self.flip(d0, d1)
        if k == 3:
            return self.flip(d0).transpose(d0, d1)
        return self.clone()

    def msort(self):
        """``self`` sorted along dim 0."""
        return self.sort(0).values

    def argwhere(self):
        """Indices of the non-zero elements, as an (n, ndim) int64 tensor."""
        return self.nonzero()

    def take(self, index):
        """Elements of ``self`` read as 1-D at int64 ``index`` (negative counts from the end), shaped as ``index``."""
        index = _tensor(self, index, "take", "index")
        if index.dtype is not D.int64:
            raise TdxRuntimeError(f"take(): Expected a long tensor for index, but got {index.dtype.name}")
        n = self.numel()
        if index.numel():
            if n == 0:
                raise TdxIndexError("take(): tried to take from an empty tensor")
            bad = (index >= n) | (index < -n)
            if bool(bad.any().item()):
                first = index.reshape(-1)[bad.reshape(-1)][0].item()
                raise TdxIndexError(f"take(): index {first} is out of range for a tensor of {n} elements")
        return self.reshape(-1)[index]


INPLACE = ("addmm", "addmv", "baddbmm", "addbmm", "addr", "addcmul", "addcdiv", "lerp", "hypot", "xlogy",
           "copysign", "heaviside", "deg2rad", "rad2deg", "logit", "nan_to_num", "clamp_min", "clamp_max")
for _name in INPLACE:
    setattr(MathTensorMethods, _name + "_", _inplace(_name))

for _name, _fn in list(vars(MathTensorMethods).items()):
    if callable(_fn) and not _name.startswith("_") and not getattr(_fn, "_typed", False):
        setattr(MathTensorMethods, _name, typed_errors(_fn))
