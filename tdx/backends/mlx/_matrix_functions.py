"""``torch.linalg`` on MLX: each function of torch's namespace as ``linalg_<name>`` on native arrays.

Factorizations come from :mod:`._lapack` (MLX's CPU-stream kernels with their derivatives); the
rest is composed from them and MLX's differentiable ops: ``det``/``slogdet`` from LU, ``pinv``,
``lstsq``, ``matrix_rank``, ``cond`` and the spectral norms from the SVD, ``matrix_exp`` by scaling
and squaring a Taylor polynomial, ``householder_product`` as a product of reflectors, the LDL^T
factorization by LAPACK's algorithm on the host (:mod:`._ldl`). Checks and messages follow torch's.
Complex inputs are refused with typed errors (MLX has no complex LAPACK kernels). Must never import
torch or the facade.
"""

from __future__ import annotations

import math

import mlx.core as mx

from ..._errors import (DtypeError, LinAlgError, OpDtypeError, ShapeError, TdxIndexError, TdxRuntimeError,
                        UnsupportedOpError)
from . import _lapack as L
from ._lapack import mT

_FLOATS = (mx.float32, mx.float64)
_NAMES = {mx.float32: "Float", mx.float64: "Double", mx.float16: "Half", mx.bfloat16: "BFloat16",
          mx.int64: "Long", mx.int32: "Int", mx.int16: "Short", mx.int8: "Char", mx.uint8: "Byte",
          mx.bool_: "Bool", mx.complex64: "ComplexFloat"}


def _real(op, *arrays):
    for a in arrays:
        if a.dtype == mx.complex64:
            raise DtypeError(f"linalg.{op}: complex input is not supported on MLX (no complex LAPACK kernels); "
                             "accepted: float32, float64")
        if a.dtype not in _FLOATS:
            raise OpDtypeError(f"linalg.{op}: Expected a floating point or complex tensor as input. Got "
                               f"{_NAMES.get(a.dtype, a.dtype)}")


def _square(op, a, what="A"):
    if a.ndim < 2:
        raise ShapeError(f"linalg.{op}: The input tensor {what} must have at least 2 dimensions.")
    if a.shape[-1] != a.shape[-2]:
        raise ShapeError(f"linalg.{op}: {what} must be batches of square matrices, but they are "
                         f"{a.shape[-2]} by {a.shape[-1]} matrices")


def _matrix(op, a, what="A"):
    if a.ndim < 2:
        raise ShapeError(f"linalg.{op}: The input tensor {what} must have at least 2 dimensions.")


class MLXMatrixFunctions:
    """The functions of ``torch.linalg`` on MLX arrays (``linalg_<name>``)."""

    __slots__ = ()

    # inverses and solves ---------------------------------------------------------------------
    def linalg_inv(self, A):
        _real("inv", A)
        _square("inv", A)
        self._invertible("inv", A)
        return L.inv(A)

    def _invertible(self, op, A):
        if A.size == 0:
            return
        lu_, _ = L.lu_rows(mx.stop_gradient(A))
        d = mx.diagonal(lu_, 0, -2, -1)
        bad = mx.logical_not(mx.isfinite(d)) | (d == 0)
        if bool(mx.any(bad).item()):
            k = int(mx.argmax(mx.any(bad, axis=tuple(range(d.ndim - 1))) if d.ndim > 1 else bad).item()) + 1
            raise LinAlgError(f"linalg.{op}: The diagonal element {k} is zero, the inversion could not be "
                              "completed because the input matrix is singular.")

    def linalg_inv_ex(self, A, *, check_errors=False):
        return self.linalg_inv(A), mx.zeros(A.shape[:-2], mx.int32)

    def linalg_solve(self, A, B, *, left=True):
        _real("solve", A, B)
        _square("solve", A)
        if B.dtype != A.dtype:
            raise TdxRuntimeError(f"linalg.solve: Expected A and B to have the same dtype, but found "
                                  f"A of type {_NAMES[A.dtype]} and B of type {_NAMES[B.dtype]} instead")
        self._invertible("solve", A)
        if not left:  # x A = B  <=>  A^T x^T = B^T
            return mT(L.solve(mT(A), mT(B)))
        b, vector = L._matrix_rhs(A, B)
        if b.shape[-2] != A.shape[-1]:
            raise ShapeError(f"linalg.solve: Incompatible shapes of A and B for the equation AX = B "
                             f"({A.shape[-2]}x{A.shape[-1]} and {b.shape[-2]}x{b.shape[-1]})")
        x = L.solve(A, b)
        return x[..., 0] if vector else x

    def linalg_solve_ex(self, A, B, *, left=True, check_errors=False):
        x = self.linalg_solve(A, B, left=left)
        return x, mx.zeros(A.shape[:-2], mx.int32)

    def linalg_solve_triangular(self, A, B, *, upper, left=True, unitriangular=False):
        _real("solve_triangular", A, B)
        _square("solve_triangular", A)
        _matrix("solve_triangular", B, "B")
        return L.solve_triangular(A, B, upper, left, unitriangular)

    def linalg_tensorinv(self, A, ind=2):
        if ind <= 0:
            raise TdxRuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
        rows, cols = A.shape[:ind], A.shape[ind:]
        n = math.prod(rows)
        if n != math.prod(cols):
            raise ShapeError(f"Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                             f"prod(self.shape[:ind]), but got {math.prod(cols)} != {n}")
        return mx.reshape(self.linalg_inv(mx.reshape(A, (n, n))), cols + rows)

    def linalg_tensorsolve(self, A, B, dims=None):
        if dims is not None:
            nd = A.ndim
            dims = [d % nd for d in dims]
            rest = [d for d in range(nd) if d not in dims]
            A = mx.transpose(A, rest + dims)  # dims moved to the end, in order
        rest = A.shape[B.ndim:]
        n = math.prod(B.shape)
        if n != math.prod(rest):
            raise ShapeError(f"Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == "
                             f"prod(self.shape[:other.ndim]), but got {math.prod(rest)} != {n}")
        x = self.linalg_solve(mx.reshape(A, (n, n)), mx.reshape(B, (n,)))
        return mx.reshape(x, rest)

    # factorizations ------------------------------------------------------------------------------
    def linalg_cholesky(self, A, *, upper=False):
        out, info = self.linalg_cholesky_ex(A, upper=upper)
        if bool(mx.any(info).item()):
            order = int(mx.min(mx.where(info > 0, info, A.shape[-1] + 1)).item())  # the first, over the batch
            raise LinAlgError(f"linalg.cholesky: The factorization could not be completed because the input "
                              f"is not positive-definite (the leading minor of order {order} is not "
                              "positive-definite).")
        return out

    def linalg_cholesky_ex(self, A, *, upper=False, check_errors=False):
        if check_errors:
            return self.linalg_cholesky(A, upper=upper), mx.zeros(A.shape[:-2], mx.int32)
        _real("cholesky", A)
        _square("cholesky", A)
        out = L.cholesky(A)
        if not out.size:
            return out, mx.zeros(A.shape[:-2], mx.int32)
        bad = mx.logical_not(mx.diagonal(out, 0, -2, -1) > 0)  # NaN included, as a failed step leaves
        # torch's info: the order of the first leading minor that is not positive-definite, 0 where all are
        info = mx.where(mx.any(bad, axis=-1), mx.argmax(bad, axis=-1) + 1, 0).astype(mx.int32)
        return (mT(out) if upper else out), info

    def linalg_qr(self, A, mode="reduced"):
        _real("qr", A)
        _matrix("qr", A)
        if mode not in ("reduced", "complete", "r"):
            raise TdxRuntimeError(f"qr received unrecognized mode '{mode}' but expected one of 'reduced' "
                                  "(default), 'r', or 'complete'")
        q, r = L.qr_any(A, mode)
        return (mx.zeros((0,), A.dtype) if mode == "r" else q), r

    def linalg_svd(self, A, full_matrices=True, *, driver=None):
        _real("svd", A)
        _matrix("svd", A)
        m, n = A.shape[-2:]
        if full_matrices and m != n:
            u, s, vh = L.svd(A)
            uf, _, vhf = L.svd_full(mx.stop_gradient(A))
            k = s.shape[-1]  # the first k columns carry the gradient; the rest complete the bases
            u = mx.concatenate([u, uf[..., :, k:]], axis=-1) if m > k else u
            vh = mx.concatenate([vh, vhf[..., k:, :]], axis=-2) if n > k else vh
            return u, s, vh
        return L.svd(A)

    def linalg_svdvals(self, A, *, driver=None):
        return self.linalg_svd(A, False)[1]

    def linalg_eigh(self, A, UPLO="L"):  # noqa: N803 - torch's name
        _real("eigh", A)
        _square("eigh", A)
        if UPLO not in ("L", "U"):
            raise TdxRuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
        if UPLO == "U":
            A = mT(A)
        return L.eigh(A)

    def linalg_eigvalsh(self, A, UPLO="L"):  # noqa: N803
        return self.linalg_eigh(A, UPLO)[0]

    def linalg_eig(self, A):
        _real("eig", A)
        _square("eig", A)
        if A.dtype == mx.float64:
            raise DtypeError("linalg.eig: a float64 matrix has complex128 eigenvalues, which MLX cannot hold; "
                             "accepted on MLX: float32 (complex64 results)")
        if A.size == 0:
            return mx.zeros(A.shape[:-1], mx.complex64), mx.zeros(A.shape, mx.complex64)
        w, v = mx.linalg.eig(mx.stop_gradient(A), stream=L.CPU)
        return w, v

    def linalg_eigvals(self, A):
        return self.linalg_eig(A)[0]

    def linalg_lu_factor(self, A, *, pivot=True):
        _real("lu_factor", A)
        _matrix("lu_factor", A)
        if not pivot:
            raise UnsupportedOpError("linalg.lu_factor: pivot=False is not supported on MLX (LAPACK pivots)")
        m, n = A.shape[-2:]
        k = min(m, n)
        _, piv = L.lu_rows(mx.stop_gradient(A))  # LAPACK's pivots; the packed factors of the differentiable LU
        _, l_, u = L.lu_any(A)
        lower = mx.tril(l_, -1)
        if n > m:
            lower = mx.concatenate([lower, mx.zeros(A.shape[:-2] + (m, n - m), A.dtype)], axis=-1)
        elif m > n:
            u = mx.concatenate([u, mx.zeros(A.shape[:-2] + (m - n, n), A.dtype)], axis=-2)
        return lower + u, piv[..., :k].astype(mx.int32) + 1

    def linalg_lu_factor_ex(self, A, *, pivot=True, check_errors=False):
        lu_, piv = self.linalg_lu_factor(A, pivot=pivot)
        return lu_, piv, mx.zeros(A.shape[:-2], mx.int32)

    def linalg_lu(self, A, *, pivot=True):
        _real("lu", A)
        _matrix("lu", A)
        if not pivot:
            raise UnsupportedOpError("linalg.lu: pivot=False is not supported on MLX (LAPACK pivots)")
        return L.lu_any(A)

    def linalg_lu_solve(self, LU, pivots, B, *, left=True, adjoint=False):  # noqa: N803
        _real("lu_solve", LU, B)
        n = LU.shape[-1]
        l_ = mx.tril(LU, -1) + mx.eye(n, dtype=LU.dtype)
        u = mx.triu(LU)
        perm = self._perm_matrix(pivots, n, LU.dtype)  # A = P L U
        if left and not adjoint:
            return L.solve_triangular(u, L.solve_triangular(l_, mT(perm) @ B, False, unitriangular=True), True)
        if left:  # A^T X = B: U^T L^T P^T X = B
            y = L.solve_triangular(mT(l_), L.solve_triangular(mT(u), B, False), True, unitriangular=True)
            return perm @ y
        if not adjoint:  # X A = B: X P L U = B
            y = L.solve_triangular(l_, L.solve_triangular(u, B, True, left=False), False, left=False,
                                   unitriangular=True)
            return y @ mT(perm)
        y = B @ perm  # X A^T = B: X U^T L^T P^T = B
        return L.solve_triangular(mT(u), L.solve_triangular(mT(l_), y, True, left=False, unitriangular=True),
                                  False, left=False)

    @staticmethod
    def _perm_matrix(pivots, n, dtype):
        """P with ``A = P L U`` from LAPACK's 1-based row interchanges (applied in order)."""
        piv = (pivots.astype(mx.int32) - 1).tolist()
        batch = pivots.shape[:-1]
        flat = [piv] if not batch else [row for row in mx.reshape(pivots.astype(mx.int32) - 1, (-1, pivots.shape[-1])
                                                                  ).tolist()]
        mats = []
        for p in flat:
            order = list(range(n))
            for i, j in enumerate(p):
                order[i], order[j] = order[j], order[i]
            mats.append([[1.0 if order[c] == r else 0.0 for c in range(n)] for r in range(n)])
        out = mx.array(mats, dtype=dtype)
        return mx.reshape(out, batch + (n, n))

    def linalg_ldl_factor_ex(self, A, *, hermitian=False, check_errors=False):
        """LAPACK's Bunch-Kaufman ``sytrf`` on the host (see :mod:`._ldl`): MLX has no LDL^T kernel."""
        import numpy as np

        from . import _ldl

        _real("ldl_factor", A)
        _square("ldl_factor", A)
        ld, piv, info = _ldl.factor(np.array(mx.stop_gradient(A)))
        if check_errors and info.size and info.max() > 0:
            raise LinAlgError(f"torch.linalg.ldl_factor_ex: D[{int(info.max())}, {int(info.max())}] is zero: the "
                              "factorization completed, but D is singular.")
        return mx.array(ld, dtype=A.dtype), mx.array(piv, dtype=mx.int32), mx.array(info, dtype=mx.int32)

    def linalg_ldl_factor(self, A, *, hermitian=False):
        ld, piv, info = self.linalg_ldl_factor_ex(A, hermitian=hermitian)
        worst = int(mx.max(info).item()) if info.size else 0
        if worst > 0:
            raise LinAlgError(f"torch.linalg.ldl_factor: D[{worst}, {worst}] is zero: the input is singular "
                              "(LAPACK sytrf info > 0).")
        return ld, piv

    def linalg_ldl_solve(self, LD, pivots, B, *, hermitian=False):  # noqa: N803
        import numpy as np

        from . import _ldl

        _real("ldl_solve", LD, B)
        _square("ldl_solve", LD, "LD")
        _matrix("ldl_solve", B, "B")
        if B.dtype != LD.dtype:
            raise TdxRuntimeError(f"torch.linalg.ldl_solve: Expected LD and B to have the same dtype, but found "
                                  f"LD of type {_NAMES[LD.dtype]} and B of type {_NAMES[B.dtype]} instead")
        if pivots.dtype != mx.int32:
            raise OpDtypeError(f"torch.linalg.ldl_solve: Expected pivots to be integers. Got {_NAMES[pivots.dtype]}")
        if B.shape[-2] != LD.shape[-1]:
            raise ShapeError(f"torch.linalg.ldl_solve: Incompatible shapes of LD and B for the equation "
                             f"LD X = B ({LD.shape[-2]}x{LD.shape[-1]} and {B.shape[-2]}x{B.shape[-1]})")
        x = _ldl.solve(np.array(mx.stop_gradient(LD)), np.array(pivots), np.array(mx.stop_gradient(B)))
        return mx.array(x, dtype=B.dtype)

    def geqrf(self, A):  # noqa: N803 - torch's name
        """torch.geqrf: ``(a, tau)``, ``R`` on and above ``a``'s diagonal, the reflectors below (forward only)."""
        _real("geqrf", A)
        _matrix("geqrf", A)
        m, n = A.shape[-2:]
        if 0 in (m, n):
            return A, mx.zeros(A.shape[:-2] + (min(m, n),), A.dtype)
        v, tau, r = L.householder(mx.stop_gradient(A))
        k = v.shape[-1]
        if k < n:
            v = mx.concatenate([v, mx.zeros(A.shape[:-2] + (m, n - k), A.dtype)], axis=-1)
        if r.shape[-2] < m:
            r = mx.concatenate([r, mx.zeros(A.shape[:-2] + (m - r.shape[-2], n), A.dtype)], axis=-2)
        return mx.triu(r) + mx.tril(v, -1), tau

    def linalg_householder_product(self, A, tau):
        _real("householder_product", A, tau)
        m, n = A.shape[-2:]
        k = tau.shape[-1]
        if n > m or k > n:
            raise TdxRuntimeError(f"torch.linalg.householder_product: input.shape[-2] must be greater than or "
                                  f"equal to input.shape[-1] and input.shape[-1] must be greater than or equal "
                                  f"to tau.shape[-1], got {m}x{n} and {k}")
        return L.reflect(A, tau)

    # determinants ---------------------------------------------------------------------------------
    def _lu_det(self, A):
        """(sign of the permutation and of U's diagonal, log |det|) from a differentiable LU."""
        p, _, u = L.lu(A)
        d = L.diagonal(u)
        perm_sign = self._perm_sign(mx.stop_gradient(p))
        return perm_sign * mx.prod(mx.sign(d), axis=-1), mx.sum(mx.log(mx.abs(d)), axis=-1), d

    @staticmethod
    def _perm_sign(p):
        """det of a batch of permutation matrices, exactly (+-1), by counting cycles on the host."""
        import numpy as np

        arr = np.array(p)
        n = arr.shape[-1]
        flat = arr.reshape(-1, n, n)
        signs = []
        for mat in flat:
            order = mat.argmax(axis=0)
            seen, sign = [False] * n, 1.0
            for i in range(n):
                if not seen[i]:
                    j, length = i, 0
                    while not seen[j]:
                        seen[j], j, length = True, int(order[j]), length + 1
                    sign *= -1.0 if length % 2 == 0 else 1.0
            signs.append(sign)
        return mx.array(np.array(signs, dtype=arr.dtype).reshape(arr.shape[:-2]))

    def linalg_det(self, A):
        _real("det", A)
        _square("det", A)
        if A.shape[-1] == 0:
            return mx.ones(A.shape[:-2], A.dtype)
        p, _, u = L.lu(A)
        return self._perm_sign(mx.stop_gradient(p)) * mx.prod(L.diagonal(u), axis=-1)

    def linalg_slogdet(self, A):
        _real("slogdet", A)
        _square("slogdet", A)
        if A.shape[-1] == 0:
            return mx.ones(A.shape[:-2], A.dtype), mx.zeros(A.shape[:-2], A.dtype)
        sign, logabs, _ = self._lu_det(A)
        return sign, logabs  # sign has a zero derivative (MLX vjp zeroes every input gradient when an output is stop_gradient)

    # matrix functions ----------------------------------------------------------------------------
    def linalg_matrix_power(self, A, n):
        _square("matrix_power", A)
        if not isinstance(n, int):
            raise TdxRuntimeError(f"matrix_power(): argument 'n' must be int, not {type(n).__name__}")
        if n == 0:
            return mx.broadcast_to(mx.eye(A.shape[-1], dtype=A.dtype), A.shape)
        if n < 0:
            A, n = self.linalg_inv(A), -n
        out, base = None, A
        while n:
            if n & 1:
                out = base if out is None else self.matmul(out, base)
            n >>= 1
            if n:
                base = self.matmul(base, base)
        return out

    def linalg_matrix_exp(self, A):
        _real("matrix_exp", A)
        _square("matrix_exp", A)
        if A.size == 0:
            return A
        if A.dtype == mx.float32:  # float32's squarings lose digits torch's Pade approximant keeps: float64 inside
            with mx.stream(mx.cpu):
                return self.linalg_matrix_exp(A.astype(mx.float64)).astype(mx.float32)
        norm1 = float(mx.max(mx.sum(mx.abs(mx.stop_gradient(A)), axis=-2)).item())
        s = max(0, math.ceil(math.log2(norm1 / 0.5))) if norm1 > 0.5 else 0
        x = A * (0.5 ** s)
        eye = mx.broadcast_to(mx.eye(A.shape[-1], dtype=A.dtype), A.shape)
        degree = 18 if A.dtype == mx.float64 else 10
        out = eye
        for k in range(degree, 0, -1):  # Horner: I + x/1 (I + x/2 (I + ...))
            out = eye + (x @ out) * (1.0 / k)
        for _ in range(s):
            out = out @ out
        return out

    def linalg_pinv(self, A, *, atol=None, rtol=None, hermitian=False):
        _real("pinv", A)
        _matrix("pinv", A)
        if hermitian:  # torch: from the eigendecomposition of A's lower triangle, cut by |eigenvalue|
            _square("pinv", A)
            w, v = L.eigh(mx.stop_gradient(A))
            mag = mx.abs(w)
            cut = self._cutoff(A, mx.sort(mag, axis=-1)[..., ::-1] if mag.size else mag, atol, rtol)
            inv_w = mx.where(mag > cut, 1.0 / mx.where(mag > cut, w, mx.ones_like(w)), mx.zeros_like(w))
            return L.with_pinv_derivative(A, (v * inv_w[..., None, :]) @ mT(v))
        u, s, vh = L.svd(mx.stop_gradient(A))  # torch's pinv_backward, not the SVD's (they differ where the
        cut = self._cutoff(A, s, atol, rtol)    # cut-off drops singular values: rank-deficient A)
        inv_s = mx.where(s > cut, 1.0 / mx.where(s > cut, s, mx.ones_like(s)), mx.zeros_like(s))
        return L.with_pinv_derivative(A, (mT(vh) * inv_s[..., None, :]) @ mT(u))

    @staticmethod
    def _cutoff(A, s, atol, rtol):
        """torch's singular value cut-off ``max(atol, rtol * s_max)`` (``s`` descending), as an array."""
        def value(x):
            return x if isinstance(x, mx.array) else mx.array(0.0 if x is None else x, dtype=s.dtype)

        if rtol is None:
            rtol = (max(A.shape[-2:]) * (2.220446049250313e-16 if A.dtype == mx.float64 else 1.1920928955078125e-07)
                    if atol is None or (isinstance(atol, (int, float)) and atol <= 0) else 0.0)
        smax = s[..., :1] if s.shape[-1] else mx.zeros(s.shape[:-1] + (1,), s.dtype)
        return mx.stop_gradient(mx.maximum(value(atol)[..., None] if isinstance(atol, mx.array) else value(atol),
                                           (value(rtol)[..., None] if isinstance(rtol, mx.array) else value(rtol))
                                           * smax))

    def linalg_matrix_rank(self, A, *, atol=None, rtol=None, hermitian=False, tol=None):
        _real("matrix_rank", A)
        _matrix("matrix_rank", A)
        if tol is not None:
            atol, rtol = tol, 0.0
        s = mx.abs(self.linalg_eigvalsh(A)) if hermitian else self.linalg_svdvals(A)
        if hermitian:
            s = mx.sort(s, axis=-1)[..., ::-1]
        return mx.sum(s > self._cutoff(A, s, atol, rtol), axis=-1).astype(mx.int64)

    def linalg_lstsq(self, A, B, rcond=None, *, driver=None):
        _real("lstsq", A, B)
        _matrix("lstsq", A)
        if driver not in (None, "gelsy", "gelsd", "gelss", "gels"):
            raise TdxRuntimeError(f"torch.linalg.lstsq: parameter `driver` should be one of "
                                  f"(gels, gelsy, gelsd, gelss), but got {driver}")
        vector = B.ndim == A.ndim - 1
        b = B[..., None] if vector else B
        x = self.linalg_pinv(A, rtol=rcond) @ b
        x = x[..., 0] if vector else x
        empty = mx.zeros((0,), A.dtype)
        rank = self.linalg_matrix_rank(A, rtol=rcond) if driver in (None, "gelsy", "gelsd", "gelss") else \
            mx.zeros((0,), mx.int64)
        sv = self.linalg_svdvals(A) if driver in ("gelsd", "gelss") else empty
        m, n = A.shape[-2:]
        res = empty
        if driver in ("gelsd", "gelss", "gels") and m > n and bool(mx.all(rank == n).item()):
            res = mx.sum(mx.square(A @ (x[..., None] if vector else x) - b), axis=-2)
            res = res[..., 0] if vector else res
        return x, res, rank, sv

    def linalg_cond(self, A, p=None):
        _real("cond", A)
        _matrix("cond", A)
        if p in (None, 2, -2):
            s = self.linalg_svdvals(A)
            big, small = s[..., 0], s[..., -1]
            return small / big if p == -2 else big / small
        _square("cond", A)
        return self.linalg_matrix_norm(A, p) * self.linalg_matrix_norm(self.linalg_inv(A), p)

    # norms ------------------------------------------------------------------------------------------
    def linalg_vector_norm(self, x, ord=2, dim=None, keepdim=False, *, dtype=None):  # noqa: A002
        if dtype is not None:
            x = x.astype(self.native_dtype(dtype))
        if x.dtype not in _FLOATS + (mx.float16, mx.bfloat16, mx.complex64):
            raise OpDtypeError(f"linalg.vector_norm: Expected a floating point or complex tensor as input. "
                               f"Got {_NAMES.get(x.dtype, x.dtype)}")
        axes = None if dim is None else ((dim,) if isinstance(dim, int) else tuple(dim))
        if x.ndim == 0 and axes is not None:  # torch takes dim 0 or -1 of a 0-d tensor as its one element
            for d in axes:
                if d not in (0, -1):
                    raise TdxIndexError(f"linalg.vector_norm: Dimension out of range (expected to be in range of "
                                        f"[-1, 0], but got {d})")
            axes = None
        a = mx.abs(x)
        if ord == math.inf:
            return mx.max(a, axis=axes, keepdims=keepdim)
        if ord == -math.inf:
            return mx.min(a, axis=axes, keepdims=keepdim)
        if ord == 0:
            return mx.sum((a != 0).astype(a.dtype), axis=axes, keepdims=keepdim)
        if ord == 1:
            return mx.sum(a, axis=axes, keepdims=keepdim)
        # torch's derivative is 0 where an element or the norm is 0 (MLX's would be NaN): the where()s keep the
        # values and route those points' cotangents to constants
        if ord == 2:
            t = mx.square(a)
        else:
            zero_a = a == 0
            t = mx.where(zero_a, mx.array(0.0 if ord > 0 else math.inf, a.dtype),
                         mx.power(mx.where(zero_a, mx.ones_like(a), a), ord))
        s = mx.sum(t, axis=axes, keepdims=keepdim)
        if ord < 0:
            return mx.power(s, 1.0 / ord)
        zero = s == 0
        safe = mx.where(zero, mx.ones_like(s), s)
        return mx.where(zero, mx.zeros_like(s), mx.sqrt(safe) if ord == 2 else mx.power(safe, 1.0 / ord))

    def linalg_matrix_norm(self, A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):  # noqa: A002
        if dtype is not None:
            A = A.astype(self.native_dtype(dtype))
        _matrix("matrix_norm", A)
        d0, d1 = (d % A.ndim for d in dim)
        if ord == "fro":
            return self.linalg_vector_norm(A, 2, (d0, d1), keepdim)
        if ord in ("nuc", 2, -2):
            rest = [d for d in range(A.ndim) if d not in (d0, d1)]
            moved = mx.transpose(A, rest + [d0, d1])
            s = self.linalg_svdvals(moved)
            out = mx.sum(s, axis=-1) if ord == "nuc" else s[..., 0] if ord == 2 else s[..., -1]
            if keepdim:
                for d in sorted((d0, d1)):
                    out = mx.expand_dims(out, d)
            return out
        if ord in (1, -1, math.inf, -math.inf):
            summed, other = (d0, d1) if ord in (1, -1) else (d1, d0)
            sums = mx.sum(mx.abs(A), axis=summed, keepdims=True)
            red = mx.max if ord > 0 else mx.min
            out = red(sums, axis=other, keepdims=True)
            return out if keepdim else mx.squeeze(out, axis=(d0, d1))
        raise TdxRuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")

    def linalg_norm(self, A, ord=None, dim=None, keepdim=False, *, dtype=None):  # noqa: A002
        if isinstance(dim, int):
            dim = (dim,)
        if ord is None:
            if dim is not None and len(dim) == 2:
                return self.linalg_matrix_norm(A, "fro", dim, keepdim, dtype=dtype)
            return self.linalg_vector_norm(A, 2, dim, keepdim, dtype=dtype)
        if dim is None:
            if A.ndim not in (1, 2):
                raise TdxRuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be 1D or "
                                      f"2D. Got {A.ndim}D.")
            dim = tuple(range(A.ndim))
        if len(dim) == 2:
            return self.linalg_matrix_norm(A, ord, dim, keepdim, dtype=dtype)
        if isinstance(ord, str):
            raise TdxRuntimeError(f"linalg.vector_norm: ord must be a number, got {ord}")
        return self.linalg_vector_norm(A, ord, dim, keepdim, dtype=dtype)

    # products and shapes --------------------------------------------------------------------------
    def linalg_matmul(self, a, b):
        return self.matmul(a, b)

    def linalg_multi_dot(self, tensors):
        if len(tensors) < 2:
            raise TdxRuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(tensors)}")
        out = tensors[0]
        for t in tensors[1:]:
            out = self.matmul(out, t)
        return out

    def linalg_vecdot(self, x, y, *, dim=-1):
        if x.dtype == mx.complex64:
            x = mx.conj(x)
        return mx.sum(x * y, axis=dim)

    def linalg_cross(self, a, b, *, dim=-1):
        if a.shape[dim] != 3 or b.shape[dim] != 3:
            raise TdxRuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got "
                                  f"{a.shape[dim]} and {b.shape[dim]}")
        a, b = mx.moveaxis(a, dim, -1), mx.moveaxis(b, dim, -1)
        a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
        b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
        out = mx.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)
        return mx.moveaxis(out, -1, dim)

    def linalg_diagonal(self, A, *, offset=0, dim1=-2, dim2=-1):
        return L.diagonal(A, offset, dim1, dim2)

    def linalg_vander(self, x, *, N=None):  # noqa: N803
        if x.ndim == 0:  # torch treats a scalar as one element
            x = mx.reshape(x, (1,))
        n = x.shape[-1] if N is None else N
        if n <= 0:
            raise TdxRuntimeError("N must be greater than 1.")
        cols = [mx.ones_like(x)]
        for _ in range(1, n):
            cols.append(cols[-1] * x)
        return mx.stack(cols, axis=-1)
