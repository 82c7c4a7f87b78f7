"""Matrix products and matrix-shaped ops: ``bmm``, the fused ``addmm``/``addmv``/``baddbmm``/``addr``,
``dot``/``mv``/``inner``/``kron``, ``diag``/``trace``/``tril``/``triu``, and ``einsum``.

Each op unwraps its operands (checking they share an executor), normalizes torch's argument
forms, calls the executor and wraps the result; methods are attached to :class:`Tensor` by
:func:`wrapping.attach`. This module must never import a framework, never holds a per-executor
special case (those live in the executors), and depends on the Tensor core only, never on
another op family through it.
"""

from __future__ import annotations

import math

from .. import _dtypes as D
from .._errors import NATIVE_ERRORS, ShapeError, TdxIndexError, TdxTypeError, TdxValueError
from .operands import _addr_scalar, _coerce, _full, _fused, _not_implemented, _same_dtype, _tensor, _work, _write_like
from .tensor import Tensor
from .wrapping import attach, exporter, foreign, int_arg, need_tensor, tensor_arg, typed_errors, wrap

__all__: list = []
_export = exporter(__all__)


class LinalgMethods:
    """The linalg methods of ``tdx.Tensor``."""

    __slots__ = ()

    def tril(self, diagonal=0):
        return wrap(self._ex.tril(self._n, diagonal), self._ex)

    def triu(self, diagonal=0):
        return wrap(self._ex.triu(self._n, diagonal), self._ex)

    # linear algebra ---------------------------------------------------------------------
    def bmm(self, mat2):
        """Batched matrix product of two 3-D tensors of one dtype."""
        ex = self._ex
        return wrap(ex.bmm(self._n, tensor_arg(self, mat2, "bmm", "mat2")), ex)

    def mm(self, mat2):
        """Matrix product of two 2-D tensors: ``matmul`` without its broadcasting and vector forms.

        Raises:
            ShapeError: either operand is not 2-D (torch's "self must be a matrix"), or the shapes do not
                chain.
        """
        mat2 = _tensor(self, mat2, "mm", "mat2")
        if self.ndim != 2:
            raise ShapeError(f"self must be a matrix (mm() got a {self.ndim}-D tensor)")
        if mat2.ndim != 2:
            raise ShapeError(f"mat2 must be a matrix (mm() got a {mat2.ndim}-D tensor)")
        return self.matmul(mat2)

    def diag(self, diagonal=0):
        """A 1-D tensor's diagonal matrix, or a 2-D tensor's ``diagonal``-th diagonal."""
        return wrap(self._ex.diag(self._n, int_arg(diagonal, "diag", "diagonal")), self._ex)

    def trace(self):
        """Sum of a 2-D tensor's main diagonal."""
        return wrap(self._ex.trace(self._n), self._ex)

    # fused arithmetic ---------------------------------------------------------------------------
    def addmm(self, mat1, mat2, *, beta=1, alpha=1):
        """``beta * self + alpha * (mat1 @ mat2)``; ``self`` broadcasts to the product's shape."""
        ex = self._ex
        kernel = ex.addmm_kernel  # torch's fused kernel where the executor has it: its result and backward are torch's
        if kernel is not None and mat1.__class__ is Tensor and mat2.__class__ is Tensor and mat1._ex is ex and \
                mat2._ex is ex:
            try:
                return wrap(kernel(self._n, mat1._n, mat2._n, beta=beta, alpha=alpha), ex)
            except NATIVE_ERRORS:
                pass  # the composed path below raises tdx's typed error for the same input
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


for _name, _fn in list(vars(LinalgMethods).items()):
    if callable(_fn) and not _name.startswith("_") and not getattr(_fn, "_typed", False):
        setattr(LinalgMethods, _name, typed_errors(_fn))
attach(LinalgMethods)


@_export(record=True)
def einsum(equation, *operands):
    """Einstein summation of ``operands`` (tensors of one dtype) as ``equation`` says."""
    if not isinstance(equation, str):
        raise TdxTypeError(f"einsum(): argument 'equation' must be str, not {type(equation).__name__}")
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not operands:
        raise TdxValueError("einsum(): must provide at least one operand")
    ex = need_tensor(operands[0], "einsum", "operands")._ex
    natives = []
    for t in operands:
        natives.append(t._n if need_tensor(t, "einsum", "operands")._ex is ex else foreign("einsum", ex, t))
    return wrap(ex.einsum(equation, natives), ex)
