"""``tdx.linalg``: every function of ``torch.linalg``, on every executor.

Each function forwards torch's arguments to :func:`tdx._tensor.dispatch.call`: on a torch executor
that is torch's own ``torch.linalg`` function (values, errors and autograd are torch's); on MLX it
is :mod:`tdx.backends.mlx._matrix_functions` (MLX's LAPACK kernels, which run on MLX's CPU stream
even for ``mlx:gpu``, with derivatives written for tdx's tape, and compositions of them).
Multi-output functions return ``tdx.return_types`` named tuples, as torch's. This module must
never import a framework and holds no per-executor logic.
"""

from __future__ import annotations

from ... import return_types as _rt
from ..._errors import LinAlgError
from ..._tensor.dispatch import accept_out as _accept_out, call as _call

__all__ = ["LinAlgError", "cholesky", "cholesky_ex", "cond", "cross", "det", "diagonal", "eig", "eigh", "eigvals",
           "eigvalsh", "householder_product", "inv", "inv_ex", "ldl_factor", "ldl_factor_ex", "ldl_solve", "lstsq",
           "lu", "lu_factor", "lu_factor_ex", "lu_solve", "matmul", "matrix_exp", "matrix_norm", "matrix_power",
           "matrix_rank", "multi_dot", "norm", "pinv", "qr", "slogdet", "solve", "solve_ex", "solve_triangular",
           "svd", "svdvals", "tensorinv", "tensorsolve", "vander", "vecdot", "vector_norm"]


def _f(name, *args, names=None, **kwargs):
    return _call("linalg", name, *args, names=names, **kwargs)


# norms -----------------------------------------------------------------------------------------------
def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None):  # noqa: A002, N803 - torch's names
    """A vector or matrix norm (``ord`` and ``dim`` choose which), as ``torch.linalg.norm``."""
    return _f("norm", A, ord, dim, keepdim, dtype=dtype)


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):  # noqa: A002
    """``sum(|x|^ord)^(1/ord)`` over ``dim`` (all dims by default); ``inf``/``-inf``/``0`` as torch."""
    return _f("vector_norm", x, ord, dim, keepdim, dtype=dtype)


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):  # noqa: A002, N803
    """Frobenius, nuclear, spectral (``2``/``-2``) or induced (``1``/``inf``...) norm over two dims."""
    return _f("matrix_norm", A, ord, dim, keepdim, dtype=dtype)


def cond(A, p=None):  # noqa: N803
    """The condition number of ``A`` in norm ``p`` (the 2-norm by default)."""
    return _f("cond", A, p)


# solves and inverses ---------------------------------------------------------------------------
def solve(A, B, *, left=True):  # noqa: N803
    """The solution ``X`` of ``A X = B`` (``X A = B`` with ``left=False``)."""
    return _f("solve", A, B, left=left)


def solve_ex(A, B, *, left=True, check_errors=False):  # noqa: N803
    """``(result, info)``: :func:`solve` and LAPACK's status (0 where it succeeded)."""
    return _f("solve_ex", A, B, left=left, check_errors=check_errors, names=_rt.linalg_solve_ex)


def solve_triangular(A, B, *, upper, left=True, unitriangular=False):  # noqa: N803
    """The solution of a triangular system; only ``A``'s ``upper`` or lower triangle is read."""
    return _f("solve_triangular", A, B, upper=upper, left=left, unitriangular=unitriangular)


def inv(A):  # noqa: N803
    """The inverse of a square matrix (or batch); LinAlgError for a singular one."""
    return _f("inv", A)


def inv_ex(A, *, check_errors=False):  # noqa: N803
    """``(inverse, info)``: :func:`inv` and LAPACK's status."""
    return _f("inv_ex", A, check_errors=check_errors, names=_rt.linalg_inv_ex)


def pinv(A, *, atol=None, rtol=None, hermitian=False):  # noqa: N803
    """The Moore-Penrose pseudo-inverse; singular values at most ``max(atol, rtol * s_max)`` are dropped."""
    return _f("pinv", A, atol=atol, rtol=rtol, hermitian=hermitian)


def lstsq(A, B, rcond=None, *, driver=None):  # noqa: N803
    """``(solution, residuals, rank, singular_values)`` of the least-squares problem ``min |A X - B|``."""
    x, res, rank, sv = _f("lstsq", A, B, rcond, driver=driver)
    return _rt.linalg_lstsq(x, res, rank, sv.detach())  # torch: the singular values are not differentiable


def tensorinv(A, ind=2):  # noqa: N803
    """The inverse of ``A`` seen as a linear map from its last dims to its first ``ind`` dims."""
    return _f("tensorinv", A, ind)


def tensorsolve(A, B, dims=None):  # noqa: N803
    """The ``X`` with ``tensordot(A, X, X.ndim) = B``."""
    return _f("tensorsolve", A, B, dims)


# determinants -------------------------------------------------------------------------------------
def det(A):  # noqa: N803
    """The determinant of a square matrix (or batch)."""
    return _f("det", A)


def slogdet(A):  # noqa: N803
    """``(sign, logabsdet)``: the sign and the log of the absolute value of the determinant."""
    return _f("slogdet", A, names=_rt.linalg_slogdet)


# factorizations -----------------------------------------------------------------------------------
def cholesky(A, *, upper=False):  # noqa: N803
    """The Cholesky factor of a symmetric (Hermitian) positive-definite matrix."""
    return _f("cholesky", A, upper=upper)


def cholesky_ex(A, *, upper=False, check_errors=False):  # noqa: N803
    """``(L, info)``: :func:`cholesky` and LAPACK's status."""
    return _f("cholesky_ex", A, upper=upper, check_errors=check_errors, names=_rt.linalg_cholesky_ex)


def qr(A, mode="reduced"):  # noqa: N803
    """``(Q, R)`` with ``A = Q R``; ``mode`` ``"reduced"``, ``"complete"`` or ``"r"``."""
    return _f("qr", A, mode, names=_rt.linalg_qr)


def svd(A, full_matrices=True, *, driver=None):  # noqa: N803
    """``(U, S, Vh)`` with ``A = U diag(S) Vh``, singular values descending."""
    return _f("svd", A, full_matrices, driver=driver, names=_rt.linalg_svd)


def svdvals(A, *, driver=None):  # noqa: N803
    """The singular values of ``A``, descending."""
    return _f("svdvals", A, driver=driver)


def eig(A):  # noqa: N803
    """``(eigenvalues, eigenvectors)`` of a square matrix, complex."""
    return _f("eig", A, names=_rt.linalg_eig)


def eigvals(A):  # noqa: N803
    """The eigenvalues of a square matrix, complex."""
    return _f("eigvals", A)


def eigh(A, UPLO="L"):  # noqa: N803
    """``(eigenvalues, eigenvectors)`` of a symmetric (Hermitian) matrix, eigenvalues ascending."""
    return _f("eigh", A, UPLO, names=_rt.linalg_eigh)


def eigvalsh(A, UPLO="L"):  # noqa: N803
    """The eigenvalues of a symmetric (Hermitian) matrix, ascending."""
    return _f("eigvalsh", A, UPLO)


def lu(A, *, pivot=True):  # noqa: N803
    """``(P, L, U)`` with ``A = P L U``."""
    return _f("lu", A, pivot=pivot, names=_rt.linalg_lu)


def lu_factor(A, *, pivot=True):  # noqa: N803
    """``(LU, pivots)``: LAPACK's packed LU and its 1-based row interchanges."""
    return _f("lu_factor", A, pivot=pivot, names=_rt.linalg_lu_factor)


def lu_factor_ex(A, *, pivot=True, check_errors=False):  # noqa: N803
    """``(LU, pivots, info)``: :func:`lu_factor` and LAPACK's status."""
    return _f("lu_factor_ex", A, pivot=pivot, check_errors=check_errors, names=_rt.linalg_lu_factor_ex)


def lu_solve(LU, pivots, B, *, left=True, adjoint=False):  # noqa: N803
    """The solution of ``A X = B`` from :func:`lu_factor`'s ``(LU, pivots)`` of ``A``."""
    return _f("lu_solve", LU, pivots, B, left=left, adjoint=adjoint)


def ldl_factor(A, *, hermitian=False):  # noqa: N803
    """``(LD, pivots)``: the Bunch-Kaufman LDL^T factorization of a symmetric matrix."""
    return _f("ldl_factor", A, hermitian=hermitian, names=_rt.linalg_ldl_factor)


def ldl_factor_ex(A, *, hermitian=False, check_errors=False):  # noqa: N803
    """``(LD, pivots, info)``: :func:`ldl_factor` and LAPACK's status."""
    return _f("ldl_factor_ex", A, hermitian=hermitian, check_errors=check_errors, names=_rt.linalg_ldl_factor_ex)


def ldl_solve(LD, pivots, B, *, hermitian=False):  # noqa: N803
    """The solution of ``A X = B`` from :func:`ldl_factor`'s ``(LD, pivots)`` of ``A``."""
    return _f("ldl_solve", LD, pivots, B, hermitian=hermitian)


def householder_product(A, tau):  # noqa: N803
    """The first columns of the product of Householder reflectors ``I - tau_i v_i v_i^H`` stored in ``A``."""
    return _f("householder_product", A, tau)


# matrix functions ---------------------------------------------------------------------------------
def matrix_power(A, n):  # noqa: N803
    """``A`` to the integer power ``n`` (the inverse's power for ``n < 0``; the identity for 0)."""
    return _f("matrix_power", A, n)


def matrix_exp(A):  # noqa: N803
    """The matrix exponential ``sum_k A^k / k!``."""
    return _f("matrix_exp", A)


def matrix_rank(A, *, atol=None, rtol=None, hermitian=False):  # noqa: N803
    """The number of singular values above ``max(atol, rtol * s_max)``."""
    return _f("matrix_rank", A, atol=atol, rtol=rtol, hermitian=hermitian)


# products and shapes ---------------------------------------------------------------------------------
def matmul(input, other):  # noqa: A002
    """``input @ other`` (an alias of ``tdx.matmul``)."""
    return _f("matmul", input, other)


def multi_dot(tensors):
    """The product of a chain of matrices (the first and last may be vectors)."""
    return _f("multi_dot", list(tensors))


def vecdot(x, y, *, dim=-1):
    """``sum(conj(x) * y, dim)``."""
    return _f("vecdot", x, y, dim=dim)


def cross(input, other, *, dim=-1):  # noqa: A002
    """The cross product of 3-vectors along ``dim`` (batch dims broadcast)."""
    return _f("cross", input, other, dim=dim)


def diagonal(A, *, offset=0, dim1=-2, dim2=-1):  # noqa: N803
    """The ``offset``-th diagonal of the matrices over ``dim1`` and ``dim2``."""
    return _f("diagonal", A, offset=offset, dim1=dim1, dim2=dim2)


def vander(x, *, N=None):  # noqa: N803
    """The Vandermonde matrix of ``x``: columns ``x^0 ... x^(N-1)``."""
    return _f("vander", x, N=N)


def _autocast_policy():  # the autocast policy wraps this module's listed functions (compat/amp/autocast_state.py)
    import sys

    from ..amp import autocast_state

    autocast_state.install_module(sys.modules[__name__])


_accept_out(globals(), __all__)  # torch's out= on every function
_autocast_policy()
