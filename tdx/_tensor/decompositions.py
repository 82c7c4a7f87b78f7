"""torch's linear-algebra functions outside ``torch.linalg`` (most of them its older, deprecated forms):
``cholesky``/``cholesky_inverse``/``cholesky_solve``, ``lu``/``lu_solve``/``lu_unpack``, ``qr``,
``svd`` (which returns ``V``, not ``Vh``), ``geqrf``/``orgqr``/``ormqr``, ``triangular_solve``,
``det``/``slogdet``/``logdet``/``inverse``/``pinverse``/``matrix_power``/``matrix_exp``, ``ger``,
``chain_matmul``, ``svd_lowrank``/``pca_lowrank``, as ``torch.*`` functions and ``Tensor`` methods.

Executors with torch's own function of the name run it (values, errors and autograd are torch's);
elsewhere the composites here compute torch's result from :mod:`tdx.linalg`'s functions and tdx ops
(so they are differentiable on tdx's tape), keeping torch's argument order, defaults, result tuples
and the gradients torch defines. This module must never import a framework and holds no
per-executor logic.
"""

from __future__ import annotations

import math

from .. import _dtypes as D, return_types
from .._errors import ShapeError, TdxRuntimeError, TdxValueError
from .kernels import install

__all__: list = []


def _la():
    """``tdx.linalg`` (imported on first use: it depends on the facade being built)."""
    from ..compat import linalg

    return linalg


def _mh(x):
    """The conjugate transpose of the last two dims."""
    return x.mT.conj() if x.dtype.is_complex else x.mT


def _triangle(x, upper):
    """The values of ``x``'s ``upper`` (or lower) triangle with the gradient of all of ``x``: torch's
    ``cholesky_inverse`` and ``cholesky_solve`` read one triangle but differentiate ``L L^H`` in full."""
    tri = x.triu() if upper else x.tril()
    rest = x - tri
    return tri + rest - rest.detach()


def _gram(L, upper):  # noqa: N803 - torch's name
    """``A = L L^H`` (``U^H U`` when ``upper``) from a Cholesky factor."""
    f = _triangle(L, upper)
    return _mh(f) @ f if upper else f @ _mh(f)


# Cholesky ---------------------------------------------------------------------------------------
def cholesky(input, upper=False):  # noqa: A002 - torch's name
    """The Cholesky factor of a symmetric positive-definite matrix (deprecated: ``linalg.cholesky``)."""
    return _la().cholesky(input, upper=upper)


def cholesky_inverse(input, upper=False):  # noqa: A002
    """The inverse of ``A = L L^H`` from its Cholesky factor ``L`` (``U^H U`` with ``upper``)."""
    if input.ndim < 2:
        raise ShapeError(f"cholesky_inverse: The input tensor A must have at least 2 dimensions, got "
                         f"{input.ndim}-D")
    return _la().inv(_gram(input, upper))


def cholesky_solve(input, input2, upper=False):  # noqa: A002
    """The solution ``X`` of ``A X = B`` for ``B = input`` and ``A``'s Cholesky factor ``input2``."""
    if input.ndim < 2 or input2.ndim < 2:
        raise ShapeError(f"cholesky_solve: b and A must have at least 2 dimensions, got {input.ndim}-D and "
                         f"{input2.ndim}-D")
    return _la().solve(_gram(input2, upper), input)


# LU -----------------------------------------------------------------------------------------------
def lu(A, pivot=True, get_infos=False):  # noqa: N803
    """``(LU, pivots)`` (``(LU, pivots, infos)`` with ``get_infos``): the packed LU factorization
    (deprecated: ``linalg.lu_factor`` / ``linalg.lu_factor_ex``)."""
    packed, pivots, infos = _la().lu_factor_ex(A, pivot=pivot, check_errors=not get_infos)
    return (packed, pivots, infos) if get_infos else (packed, pivots)


def lu_solve(b, LU_data, LU_pivots):  # noqa: N803
    """The solution of ``A X = b`` from ``A``'s packed LU factorization (deprecated: ``linalg.lu_solve``)."""
    return _la().lu_solve(LU_data, LU_pivots, b)


def _permutation(pivots, m, like):
    """``P`` (``A = P L U``) from LAPACK's 1-based row interchanges, in ``like``'s dtype and device."""
    batch = tuple(pivots.shape[:-1])
    flat = pivots.reshape(-1, pivots.shape[-1]).tolist() if pivots.numel() else [[]] * math.prod(batch)
    mats = []
    for piv in flat:
        order = list(range(m))
        for i, p in enumerate(piv):
            if not 1 <= p <= m:
                raise TdxRuntimeError(f"lu_unpack: pivots must be in [1, {m}], got {p}")
            order[i], order[p - 1] = order[p - 1], order[i]
        mats.append([[1 if order[c] == r else 0 for c in range(m)] for r in range(m)])
    return like.new_tensor(mats, dtype=like.dtype).reshape(*batch, m, m)


def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True):  # noqa: N803
    """``(P, L, U)`` from a packed LU factorization; the parts not asked for are empty tensors."""
    if LU_data.ndim < 2:
        raise ShapeError(f"torch.lu_unpack: Expected tensor with 2 or more dimensions. Got size: "
                         f"{list(LU_data.shape)} instead")
    m, n = LU_data.shape[-2:]
    k = min(m, n)
    if tuple(LU_pivots.shape) != tuple(LU_data.shape[:-2]) + (k,):
        raise ShapeError(f"torch.lu_unpack: Expected LU_pivots.shape[-1] == min(LU_data.shape[-2:]) and batch "
                         f"dims to match, got LU_data {list(LU_data.shape)} and LU_pivots {list(LU_pivots.shape)}")
    if LU_pivots.dtype is not D.int32:
        raise TdxRuntimeError(f"torch.lu_unpack: LU_pivots is expected to be a contiguous tensor of torch.int32 "
                              f"dtype, got {LU_pivots.dtype}")
    empty = LU_data.new_zeros((0,))
    if unpack_data:
        low = LU_data[..., :, :k].tril(-1) + LU_data.new_tensor(
            [[1 if r == c else 0 for c in range(k)] for r in range(m)], dtype=LU_data.dtype)
        up = LU_data[..., :k, :].triu()
    else:
        low = up = empty
    perm = _permutation(LU_pivots, m, LU_data) if unpack_pivots else empty
    return return_types.lu_unpack(perm, low, up)


# QR and Householder products ---------------------------------------------------------------------------
def qr(input, some=True):  # noqa: A002
    """``(Q, R)``: the reduced QR (the complete one with ``some=False``; deprecated: ``linalg.qr``)."""
    q, r = _la().qr(input, "reduced" if some else "complete")
    return return_types.qr(q, r)


def orgqr(input, input2):  # noqa: A002
    """The first columns of the product of the Householder reflectors ``(input, tau)`` (as ``geqrf`` gives)."""
    return _la().householder_product(input, input2)


def ormqr(input, input2, input3, left=True, transpose=False):  # noqa: A002
    """``op(Q) @ C`` (``C @ op(Q)`` when not ``left``) for ``Q`` the full product of the Householder reflectors
    ``(input, tau=input2)``, ``C = input3``, ``op`` the conjugate transpose when ``transpose``."""
    mn, k = input.shape[-2], input2.shape[-1]
    if input.ndim < 2 or k > min(mn, input.shape[-1]):
        raise ShapeError(f"torch.ormqr: input must have at least 2 dimensions and tau.shape[-1] <= "
                         f"min(input.shape[-2:]), got input {list(input.shape)} and tau {list(input2.shape)}")
    need = input3.shape[-2] if left else input3.shape[-1]
    if need != mn:
        raise ShapeError(f"torch.ormqr: other.shape[{-2 if left else -1}] must equal input.shape[-2], got "
                         f"{need} and {mn}")
    v = input[..., :, :k]
    if k < mn:  # the reflectors' columns, padded with zero ones (identity reflectors) to a square Q
        from .shape import cat

        v = cat([v, v.new_zeros((*v.shape[:-1], mn - k))], -1)
    q = _la().householder_product(v, input2)
    q = _mh(q) if transpose else q
    return q @ input3 if left else input3 @ q


# SVD ---------------------------------------------------------------------------------------------------
def svd(input, some=True, compute_uv=True):  # noqa: A002
    """``(U, S, V)`` with ``input = U diag(S) V^H`` (``V``, not ``linalg.svd``'s ``Vh``); the reduced
    factors unless ``some=False``; zero-filled ``U`` and ``V`` when not ``compute_uv``."""
    if input.ndim < 2:
        raise ShapeError(f"linalg.svd: The input tensor A must have at least 2 dimensions, got {input.ndim}-D")
    if not compute_uv:
        s = _la().svdvals(input)
        m, n = input.shape[-2:]
        batch = tuple(input.shape[:-2])
        return return_types.svd(input.new_zeros((*batch, m, m)), s, input.new_zeros((*batch, n, n)))
    u, s, vh = _la().svd(input, full_matrices=not some)
    return return_types.svd(u, s, _mh(vh))


def _approximate_basis(A, q, niter, M):  # noqa: N803
    """``Q`` with ``q`` orthonormal columns spanning about the range of ``A - M`` (Halko et al., alg. 4.4)."""
    from .creation import randn

    r = randn(A.shape[-1], q, dtype=A.dtype, device=A.device)

    def project(a, m, x):
        y = a @ x
        return y if m is None else y - m @ x

    qm = _la().qr(project(A, M, r)).Q
    for _ in range(niter):
        qm = _la().qr(project(_mh(A), None if M is None else _mh(M), qm)).Q
        qm = _la().qr(project(A, M, qm)).Q
    return qm


def _svd_lowrank(A, q, niter, M):  # noqa: N803
    m, n = A.shape[-2:]
    if M is not None:
        M = M.broadcast_to(A.shape)
    if m < n:
        A, M = _mh(A), None if M is None else _mh(M)
    qm = _approximate_basis(A, q, niter, M)
    b = _mh(qm) @ A
    if M is not None:
        b = b - _mh(qm) @ M
    u, s, vh = _la().svd(b, full_matrices=False)
    v, u = _mh(vh), qm @ u
    return (v, s, u) if m < n else (u, s, v)


def svd_lowrank(A, q=6, niter=2, M=None):  # noqa: N803
    """A randomized rank-``q`` SVD ``(U, S, V)`` of ``A`` (of ``A - M`` when ``M`` is given)."""
    return _svd_lowrank(A, 6 if q is None else q, 2 if niter is None else niter, M)


def pca_lowrank(A, q=None, center=True, niter=2):  # noqa: N803
    """``(U, S, V)``: a randomized PCA of the rows of ``A`` (centered when ``center``), rank ``q``."""
    m, n = A.shape[-2:]
    if q is None:
        q = min(6, m, n)
    elif not 0 <= q <= min(m, n):
        raise TdxValueError(f"q(={q}) must be non-negative integer and not greater than min(m, n)={min(m, n)}")
    if not niter >= 0:
        raise TdxValueError(f"niter(={niter}) must be non-negative integer")
    if center:
        A = A - A.mean(dim=(-2,), keepdim=True)
    return _svd_lowrank(A, q, niter, None)


# determinants, inverses and matrix functions ----------------------------------------------------------
def det(input):  # noqa: A002
    """The determinant (``linalg.det``)."""
    return _la().det(input)


def slogdet(input):  # noqa: A002
    """``(sign, logabsdet)`` of the determinant (``linalg.slogdet``)."""
    sign, logabs = _la().slogdet(input)
    return return_types.slogdet(sign, logabs)


def logdet(input):  # noqa: A002
    """``log(det(input))``: NaN where the determinant is negative, ``-inf`` where it is zero."""
    sign, logabs = _la().slogdet(input)
    if input.dtype.is_complex:
        return logabs + sign.log()
    return logabs.where(sign != -1, float("nan"))


def inverse(input):  # noqa: A002
    """The inverse of a square matrix (``linalg.inv``)."""
    return _la().inv(input)


def pinverse(input, rcond=1e-15):  # noqa: A002
    """The pseudo-inverse, dropping singular values below ``rcond`` times the largest (``linalg.pinv``)."""
    return _la().pinv(input, rtol=rcond)


def matrix_power(input, n):  # noqa: A002
    """``input`` to the integer power ``n`` (``linalg.matrix_power``)."""
    return _la().matrix_power(input, n)


def matrix_exp(input):  # noqa: A002
    """The matrix exponential (``linalg.matrix_exp``)."""
    return _la().matrix_exp(input)


def triangular_solve(input, A, upper=True, transpose=False, unitriangular=False):  # noqa: A002, N803
    """``(solution, cloned_coefficient)``: ``X`` with ``op(A) X = input`` for triangular ``A`` (``op`` the
    transpose when ``transpose``), and ``A`` broadcast to the solution's batch."""
    if input.ndim < 2 or A.ndim < 2:
        raise ShapeError(f"torch.triangular_solve: Expected b and A to have at least 2 dimensions, got "
                         f"{input.ndim}-D and {A.ndim}-D")
    coef = _mh(A) if transpose else A
    x = _la().solve_triangular(coef, input, upper=upper != transpose, unitriangular=unitriangular)
    return return_types.triangular_solve(x, A.broadcast_to((*x.shape[:-2], *A.shape[-2:])).clone())


def ger(input, vec2):  # noqa: A002
    """The outer product of two vectors (``outer``)."""
    return input.outer(vec2)


def chain_matmul(*matrices):
    """The product of a chain of matrices (deprecated: ``linalg.multi_dot``)."""
    if len(matrices) == 1 and isinstance(matrices[0], (list, tuple)):
        matrices = tuple(matrices[0])
    if len(matrices) == 1:
        return matrices[0].clone()
    return _la().multi_dot(matrices)


def _removed(name, replacement):
    def gone(*args, **kwargs):
        raise TdxRuntimeError(f"This function was deprecated since version 1.9 and is now removed. `torch.{name}` "
                              f"is deprecated in favor of `torch.linalg.{replacement}`.")

    gone.__name__ = gone.__qualname__ = name
    gone.__doc__ = f"Removed from torch (1.9): raises, pointing to ``torch.linalg.{replacement}``."
    return gone


def geqrf(input):  # noqa: A002
    """``(a, tau)``: LAPACK's compact QR (the executor's kernel; no composite)."""
    raise TdxRuntimeError(f"geqrf() is not implemented on {input.device}")


_TABLE = {name: (fn, fn.__doc__) for name, fn in {
    "cholesky": cholesky, "cholesky_inverse": cholesky_inverse, "cholesky_solve": cholesky_solve, "lu": lu,
    "lu_solve": lu_solve, "lu_unpack": lu_unpack, "qr": qr, "orgqr": orgqr, "ormqr": ormqr, "geqrf": geqrf,
    "svd": svd, "svd_lowrank": svd_lowrank, "pca_lowrank": pca_lowrank, "det": det, "slogdet": slogdet,
    "logdet": logdet, "inverse": inverse, "pinverse": pinverse, "matrix_power": matrix_power,
    "matrix_exp": matrix_exp, "triangular_solve": triangular_solve, "ger": ger, "chain_matmul": chain_matmul,
    "lstsq": _removed("lstsq", "lstsq"), "solve": _removed("solve", "solve"), "eig": _removed("eig", "eig"),
    "symeig": _removed("symeig", "eigh"), "matrix_rank": _removed("matrix_rank", "matrix_rank")}.items()}
install(globals(), __all__, _TABLE, methods=(
    "cholesky", "cholesky_inverse", "cholesky_solve", "lu", "lu_solve", "qr", "orgqr", "ormqr", "geqrf", "svd",
    "det", "slogdet", "logdet", "inverse", "pinverse", "matrix_power", "matrix_exp", "triangular_solve", "ger",
    "lstsq", "solve", "eig", "symeig"))
