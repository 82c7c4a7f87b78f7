"""MLX matrix products with torch's semantics: ``matmul``'s batched forms, ``bmm``, ``einsum``,
``diag``/``trace``; and the writes ``fill_``/``copy_``, which return the new array (MLX arrays are
values: the facade rebinds).

Every op names its stream (``self.s``), follows torch's promotion and checks, and raises typed errors.
Must never import torch or the facade.
"""

from __future__ import annotations

import mlx.core as mx
import numpy as np

from ..._errors import DtypeMismatchError, OpDtypeError, ShapeError, TdxRuntimeError, TdxTypeError
from ._indexing import broadcast_shape, fit_scalar, on_stream, scalar_name
from ._rules import _INTS
from ._value_bounds import constant as constant_bounds


@on_stream
class MLXLinalgOpsStreamed:
    """The ops of this family that run with ``self.s`` as MLX's default stream (operators and
    ``.at[]`` updates take no ``stream=``)."""

    __slots__ = ()

    # linear algebra -------------------------------------------------------------------------
    def bmm(self, a, b):
        for name, t in (("batch1", a), ("batch2", b)):
            if not isinstance(t, mx.array):
                raise TdxTypeError(f"bmm(): argument '{name}' must be Tensor, not {type(t).__name__}")
            if t.ndim != 3:
                raise TdxRuntimeError(f"{name} must be a 3D tensor")
        if b.shape[0] != a.shape[0] or b.shape[1] != a.shape[2]:
            raise ShapeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                             f"[{a.shape[0]}, {a.shape[2]}] but got: [{b.shape[0]}, {b.shape[1]}].")
        shape = (a.shape[0], a.shape[1], b.shape[2])
        if 0 in shape or a.shape[2] == 0:  # torch checks nothing more and returns mat2's dtype
            return mx.zeros(shape, b.dtype, stream=self.s)
        if a.dtype != b.dtype:
            raise DtypeMismatchError(f"expected scalar type {scalar_name(self._tdx(a))} but found "
                                     f"{scalar_name(self._tdx(b))}")
        if a.dtype == mx.bool_:
            raise OpDtypeError("\"bmm\" not implemented for 'Bool'")
        return self.matmul(a, b)

    def einsum(self, equation, operands):
        if not operands:
            raise TdxRuntimeError("einsum(): must provide at least one operand")
        first = operands[0]
        for t in operands[1:]:
            if t.dtype != first.dtype:
                raise DtypeMismatchError(f"expected scalar type {scalar_name(self._tdx(first))} but found "
                                         f"{scalar_name(self._tdx(t))}")
        if first.dtype in _INTS:
            lhs, arrow, rhs = equation.replace(" ", "").partition("->")
            labels = [c for c in lhs if c.isalpha()]
            kept = set(rhs) if arrow else {c for c in labels if labels.count(c) == 1}
            reduced = bool(set(labels) - kept)
            if first.dtype == mx.bool_ and len(operands) > 1 and self._contracts(lhs, kept, operands):
                raise OpDtypeError("\"bmm\" not implemented for 'Bool'")
            arrays = [np.array(t).astype(np.int64) for t in operands]
            eq, widened = equation.replace(" ", ""), False
            if arrow and "..." in lhs and "..." not in rhs:  # torch sums the broadcast dims NumPy refuses to drop
                eq, widened = f"{lhs}->...{rhs}", True
            try:
                out = np.einsum(eq, *arrays)
                if widened:
                    out = np.sum(out, axis=tuple(range(np.ndim(out) - len(rhs))))
            except ValueError as err:
                raise TdxRuntimeError(f"einsum(): {err}") from None
            dtype = mx.int64 if len(operands) == 1 and reduced else first.dtype  # torch sums ints in int64
            return mx.array(np.asarray(out)).astype(dtype, stream=self.s)
        if any(t.size == 0 for t in operands):  # MLX's reductions over empty inputs are unreliable
            try:
                out = np.einsum(equation, *[self.host_numpy(t) for t in operands])
            except ValueError as err:
                raise TdxRuntimeError(f"einsum(): {err}") from None
            return mx.array(np.asarray(out)).astype(first.dtype, stream=self.s)
        return mx.einsum(equation, *operands, stream=self.s)

    @staticmethod
    def _contracts(lhs: str, kept: set, operands) -> bool:
        """Whether torch's einsum would run a real (non-empty, size > 1) contraction."""
        if any(t.size == 0 for t in operands):
            return False
        sizes = {}
        for spec, t in zip(lhs.split(","), operands):
            if "." in spec:
                return True
            sizes.update(zip(spec, t.shape))
        return any(n > 1 for c, n in sizes.items() if c not in kept)

    def diag(self, x, diagonal=0):
        if x.ndim not in (1, 2):
            raise TdxRuntimeError(f"diag(): Supports 1D or 2D tensors. Got {x.ndim}D")
        if x.ndim == 2:
            rows, cols = x.shape
            if diagonal >= cols or -diagonal >= rows or not x.size:
                return mx.zeros((0,), x.dtype, stream=self.s)
        if x.ndim == 1 and x.size == 0:
            n = abs(diagonal)
            return mx.zeros((n, n), x.dtype, stream=self.s)
        return mx.diag(x, diagonal, stream=self.s)

    def trace(self, x):
        if x.ndim != 2:
            raise TdxRuntimeError(f"trace: expected a matrix, but got tensor with dim {x.ndim}")
        if x.dtype == mx.bool_:
            raise OpDtypeError("\"trace\" not implemented for 'Bool'")
        n = min(x.shape)
        if n == 0:
            return self.sum(mx.zeros((0,), x.dtype, stream=self.s))
        return self.sum(mx.diagonal(x, stream=self.s))

    # writes: return the new value; the facade rebinds -----------------------------------------
    def fill_(self, x, value):
        if isinstance(value, mx.array) and value.ndim:
            raise TdxRuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with "
                                  f"{value.ndim} dimensions.")
        value = fit_scalar(value, self._tdx(x))
        return constant_bounds(mx.full(x.shape, self._cast(value, self._tdx(x)), stream=self.s), value)

    def copy_(self, x, src):
        if not isinstance(src, mx.array):
            raise TdxTypeError(f"copy_(): argument 'other' must be Tensor, not {type(src).__name__}")
        shape = tuple(x.shape)
        if broadcast_shape(shape, tuple(src.shape)) != shape:
            raise ShapeError(f"output with shape {list(shape)} doesn't match the broadcast shape "
                             f"{list(broadcast_shape(shape, tuple(src.shape)))}")
        if src.dtype == mx.complex64 and x.dtype != mx.complex64:
            src = mx.real(src, stream=self.s)
        out = mx.broadcast_to(src.astype(x.dtype, stream=self.s), shape, stream=self.s)
        return mx.array(out) if out is src else out


class MLXLinalgOps(MLXLinalgOpsStreamed):
    """MLX matrix products with torch's semantics: ``matmul``'s batched forms, ``bmm``, ``einsum``,"""

    __slots__ = ()
