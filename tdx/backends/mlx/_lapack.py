"""MLX's LAPACK-backed factorizations with the derivatives MLX lacks, as ``mx.custom_function``s.

MLX 0.32 has ``inv``, ``cholesky``, ``qr``, ``svd``, ``eigh``, ``lu`` and ``solve_triangular`` but no
vector-Jacobian product for any of them, and runs them on its CPU stream only (on ``mlx:gpu`` they
run on the CPU stream too: MLX's memory is unified, so nothing is copied). Each function here is
the forward kernel wrapped with the derivative torch's autograd uses (``FunctionsManual.cpp``:
``linalg_inv``, ``linalg_solve``, ``cholesky_backward``, ``linalg_qr_backward``, ``svd_backward``,
``linalg_eig_backward`` for Hermitian input, ``linalg_lu_backward``, ``pinv_backward``), written with
the functions here and MLX's differentiable ops, so tdx's tape differentiates them; the LU of a
rectangular matrix is composed from the square one. Real dtypes only.
Must never import torch or the facade.
"""

from __future__ import annotations

import mlx.core as mx

CPU = mx.cpu


def mT(x):  # noqa: N802 - torch's name
    """The matrix transpose of ``x``'s last two dims."""
    return mx.swapaxes(x, -1, -2)


def eye_like(x, n=None):
    n = x.shape[-1] if n is None else n
    return mx.eye(n, dtype=x.dtype)


def diagonal(x, offset=0, dim1=-2, dim2=-1):
    """``mx.diagonal``, cut from the graph on empty input, where MLX's vjp of it traps (SIGFPE); the result
    (and the gradient) is empty there anyway."""
    return mx.diagonal(mx.stop_gradient(x) if x.size == 0 else x, offset, dim1, dim2)


def diag_embed(v):
    """A batch of diagonal matrices from ``v``'s last dim."""
    return v[..., :, None] * eye_like(v)


def _batch(a):
    return tuple(a.shape[:-2])


def _eyes(a, n):
    """``n x n`` identities over ``a``'s batch dims."""
    return mx.broadcast_to(mx.eye(n, dtype=a.dtype), _batch(a) + (n, n))


def _matrix_rhs(a, b):
    """``b`` as a batch of matrices for ``a`` (torch's vector case: ``b.shape == a.shape[:-1]``), and whether
    it was a vector."""
    vector = b.ndim == 1 or (b.ndim == a.ndim - 1 and b.shape == a.shape[:-1])
    return (b[..., None] if vector else b), vector


@mx.custom_function
def inv(a):
    if a.size == 0:  # MLX's LAPACK kernels divide by the size (SIGFPE): the empty result, without them
        return mx.zeros(a.shape, a.dtype)
    return mx.linalg.inv(a, stream=CPU)


@inv.vjp
def _inv_vjp(primals, cotangent, output):
    x = output
    return (-(mT(x) @ cotangent @ mT(x)),)


@mx.custom_function
def solve(a, b):
    """``a^-1 b`` for a batch of square ``a`` and matrices ``b`` (batch dims broadcast)."""
    shape = tuple(mx.broadcast_shapes(a.shape[:-2], b.shape[:-2]))
    a = mx.broadcast_to(a, shape + a.shape[-2:])
    b = mx.broadcast_to(b, shape + b.shape[-2:])
    if a.size == 0 or b.size == 0:
        return mx.zeros(b.shape, b.dtype)
    return mx.linalg.solve(a, b, stream=CPU)


@solve.vjp
def _solve_vjp(primals, cotangent, output):
    a, b = primals
    gb = solve(mT(a), cotangent)
    ga = -(gb @ mT(output))
    return _unbroadcast(ga, a.shape), _unbroadcast(gb, b.shape)


def _unbroadcast(g, shape):
    """``g`` summed down to ``shape`` (the inverse of broadcasting's batch dims)."""
    shape = tuple(shape)
    extra = g.ndim - len(shape)
    if extra:
        g = mx.sum(g, axis=tuple(range(extra)))
    axes = tuple(i for i, (n, m) in enumerate(zip(shape, g.shape)) if n == 1 and m != 1)
    return mx.sum(g, axis=axes, keepdims=True) if axes else g


def _tri(x, upper, strict=False):
    k = 1 if strict else 0
    return mx.triu(x, k) if upper else mx.tril(x, -k)


@mx.custom_function
def _solve_tri(a, b, upper):
    """``a^-1 b`` for triangular ``a`` (``upper`` an int flag) and matrices ``b``; batch dims broadcast."""
    shape = tuple(mx.broadcast_shapes(a.shape[:-2], b.shape[:-2]))
    a = mx.broadcast_to(a, shape + a.shape[-2:])
    b = mx.broadcast_to(b, shape + b.shape[-2:])
    if a.size == 0 or b.size == 0:
        return mx.zeros(b.shape, b.dtype)
    return mx.linalg.solve_triangular(a, b, upper=bool(upper.item()), stream=CPU)


@_solve_tri.vjp
def _solve_tri_vjp(primals, cotangent, output):
    a, b, upper = primals
    up = bool(upper.item())
    gb = _solve_tri(mT(a), cotangent, mx.array(int(not up)))
    ga = _tri(-(gb @ mT(output)), up)
    return _unbroadcast(ga, a.shape), _unbroadcast(gb, b.shape), mx.zeros_like(upper)


def solve_triangular(a, b, upper, left=True, unitriangular=False):
    """torch.linalg.solve_triangular on matrices ``b``: only ``a``'s triangle is read."""
    a = _tri(a, upper, strict=unitriangular)
    if unitriangular:
        a = a + eye_like(a)
    if not left:  # x a = b  <=>  a^T x^T = b^T
        return mT(_solve_tri(mT(a), mT(b), mx.array(int(not upper))))
    return _solve_tri(a, b, mx.array(int(upper)))


def _phi(x):
    """The lower triangle of ``x`` with its diagonal halved."""
    return mx.tril(x, -1) + diag_embed(mx.diagonal(x, 0, -2, -1) * 0.5)


@mx.custom_function
def cholesky(a):
    """The lower Cholesky factor, from ``a``'s lower triangle."""
    if a.size == 0:
        return mx.zeros(a.shape, a.dtype)
    return mx.linalg.cholesky(a, upper=False, stream=CPU)


@cholesky.vjp
def _cholesky_vjp(primals, cotangent, output):
    l_ = output
    p = _phi(mT(l_) @ mx.tril(cotangent))
    s = solve_triangular(mT(l_), solve_triangular(l_, p, upper=False, left=False), upper=True)
    # s = L^-T P L^-1 ; torch symmetrizes
    return (0.5 * (s + mT(s)),)


def _copyltu(m):
    """The symmetric matrix with ``m``'s lower triangle (diagonal included)."""
    low = mx.tril(m, -1)
    return low + mT(low) + diag_embed(mx.diagonal(m, 0, -2, -1))


@mx.custom_function
def qr(a):
    """The reduced QR of ``a`` with as many rows as columns or more."""
    if a.size == 0:
        m, n = a.shape[-2:]
        return mx.zeros(_batch(a) + (m, min(m, n)), a.dtype), mx.zeros(_batch(a) + (min(m, n), n), a.dtype)
    return tuple(mx.linalg.qr(a, stream=CPU))


@qr.vjp
def _qr_vjp(primals, cotangents, outputs):
    q, r = outputs
    gq, gr = cotangents
    m = r @ mT(gr) - mT(gq) @ q
    b = gq + q @ _copyltu(m)
    return (mT(solve_triangular(r, mT(b), upper=True)),)  # b R^-T


def qr_any(a, mode):
    """torch.linalg.qr's ``(Q, R)`` for any shape; ``mode`` ``"reduced"``, ``"complete"`` or ``"r"``."""
    m, n = a.shape[-2:]
    if a.size == 0 and mode == "complete":
        return _eyes(a, m), mx.zeros(a.shape, a.dtype)
    if m >= n and mode != "complete" or m == n:
        q, r = qr(a)
    elif m < n:  # A = [X | Y]: X = QU, R = [U | Q^T Y]
        q, u = qr(a[..., :, :m])
        r = mx.concatenate([u, mT(q) @ a[..., :, m:]], axis=-1)
    else:  # complete, m > n: LAPACK's Householder reflectors (geqrf), applied to I (orgqr); forward only
        v, tau, r = householder(mx.stop_gradient(a))
        q = reflect(mx.concatenate([v, mx.zeros(a.shape[:-2] + (m, m - n), a.dtype)], axis=-1), tau)
        r = mx.concatenate([r, mx.zeros(a.shape[:-2] + (m - n, n), a.dtype)], axis=-2) if r.shape[-2] < m else r
    return q, r


def householder(a):
    """LAPACK geqrf's reflectors of ``a``: ``(v, tau, R)``, ``v`` unit lower trapezoidal (dlarfg's
    convention: ``beta = -sign(alpha) |x|``, ``tau = (beta - alpha) / beta``)."""
    m, n = a.shape[-2:]
    r, rows = a, mx.arange(m)[:, None]
    vs, taus = [], []
    for j in range(min(m, n)):
        x = r[..., :, j:j + 1]
        below = mx.where(rows > j, x, 0.0)
        alpha = x[..., j:j + 1, :]
        xnorm = mx.sqrt(mx.sum(below * below, axis=-2, keepdims=True))
        beta = -mx.where(alpha >= 0, 1.0, -1.0) * mx.sqrt(alpha * alpha + xnorm * xnorm)
        trivial = xnorm == 0
        safe = mx.where(trivial, 1.0, alpha - beta)
        v = mx.where(rows == j, 1.0, below / safe).astype(a.dtype)
        tau = mx.where(trivial, 0.0, (beta - alpha) / mx.where(trivial, 1.0, beta)).astype(a.dtype)
        r = r - tau * (v @ (mT(v) @ r))
        vs.append(v)
        taus.append(tau[..., 0, 0])
    return mx.concatenate(vs, axis=-1), mx.stack(taus, axis=-1), mx.triu(r[..., :n, :])


def reflect(v, tau):
    """``H_0 ... H_{k-1}`` applied to the first columns of I, ``H_i = I - tau_i v_i v_i^T`` (LAPACK orgqr)."""
    m, n = v.shape[-2:]
    rows = mx.arange(m)[:, None]
    q = mx.broadcast_to(mx.eye(m, n, dtype=v.dtype), v.shape)
    for i in reversed(range(tau.shape[-1])):
        col = v[..., :, i:i + 1]
        vi = mx.where(rows > i, col, mx.where(rows == i, mx.ones_like(col), mx.zeros_like(col)))
        q = q - tau[..., i, None, None] * (vi @ (mT(vi) @ q))
    return q


@mx.custom_function
def svd(a):
    """The reduced SVD ``(U, S, Vh)``."""
    if a.size == 0:
        m, n = a.shape[-2:]
        k = min(m, n)
        return (mx.zeros(_batch(a) + (m, k), a.dtype), mx.zeros(_batch(a) + (k,), a.dtype),
                mx.zeros(_batch(a) + (k, n), a.dtype))
    u, s, vh = mx.linalg.svd(a, compute_uv=True, stream=CPU)
    k = s.shape[-1]
    return u[..., :, :k], s, vh[..., :k, :]


@svd.vjp
def _svd_vjp(primals, cotangents, outputs):
    a = primals  # a single input arrives bare
    u, s, vh = outputs
    gu, gs, gvh = cotangents
    if not bool(mx.any(gu != 0).item()) and not bool(mx.any(gvh != 0).item()):
        return ((u * gs[..., None, :]) @ vh,)  # torch's case of S alone (svdvals, the spectral norms)
    m, n = a.shape[-2:]
    v, gv = mT(vh), mT(gvh)
    s2 = s * s
    e = s2[..., None, :] - s2[..., :, None]
    e = mx.where(mx.eye(s.shape[-1], dtype=mx.bool_), mx.ones_like(e), e)

    def skew(x):
        return x - mT(x)

    g = (skew(mT(u) @ gu) / e) * s[..., None, :] + s[..., :, None] * (skew(mT(v) @ gv) / e) + diag_embed(gs)
    if m > n:
        g = u @ g
        gus = gu / s[..., None, :]
        g = (g + gus - u @ (mT(u) @ gus)) @ vh
    elif m < n:
        g = g @ vh
        gvs = gv / s[..., None, :]
        g = u @ (g + mT(gvs) - (mT(gvs) @ v) @ vh)
    else:
        g = u @ g @ vh
    return (g,)


def svd_full(a):
    """``(U, S, Vh)`` with square ``U`` and ``Vh`` (forward only beyond the first ``k`` columns)."""
    if a.size == 0:  # torch completes the empty bases with identities
        m, n = a.shape[-2:]
        return _eyes(a, m), mx.zeros(_batch(a) + (min(m, n),), a.dtype), _eyes(a, n)
    u, s, vh = mx.linalg.svd(a, compute_uv=True, stream=CPU)
    return u, s, vh


@mx.custom_function
def eigh(a):
    """Eigenvalues (ascending) and eigenvectors of a symmetric ``a``, from its lower triangle."""
    if a.size == 0:
        return mx.zeros(a.shape[:-1], a.dtype), mx.zeros(a.shape, a.dtype)
    return tuple(mx.linalg.eigh(a, UPLO="L", stream=CPU))


@eigh.vjp
def _eigh_vjp(primals, cotangents, outputs):
    w, v = outputs
    gw, gv = cotangents
    e = w[..., None, :] - w[..., :, None]
    eye = mx.eye(w.shape[-1], dtype=mx.bool_)
    vhgv = mT(v) @ gv
    vhgv = 0.5 * (vhgv - mT(vhgv))  # only its skew part moves orthonormal eigenvectors
    r = mx.where(eye, diag_embed(gw), vhgv / mx.where(eye, mx.ones_like(e), e))
    return (v @ r @ mT(v),)


@mx.custom_function
def lu(a):
    """``(P, L, U)`` of a square ``a`` (P a permutation matrix in ``a``'s dtype)."""
    if a.size == 0:
        return _eyes(a, a.shape[-1]), mx.zeros(a.shape, a.dtype), mx.zeros(a.shape, a.dtype)
    rows, l_, u = mx.linalg.lu(a, stream=CPU)
    return _row_perm(rows, a), l_, u


def _row_perm(rows, a):
    """P with ``A = P L U`` from MLX's row order (``A[i] = (L U)[rows[i]]``): row ``i`` of P is ``e_rows[i]``."""
    m = a.shape[-2]
    eye = mx.broadcast_to(mx.eye(m, dtype=a.dtype), _batch(a) + (m, m))
    return mx.take_along_axis(eye, rows[..., :, None].astype(mx.int32), axis=-2)


@lu.vjp
def _lu_vjp(primals, cotangents, outputs):
    p, l_, u = outputs
    _, gl, gu = cotangents
    phi = mx.tril(mT(l_) @ gl, -1) + mx.triu(gu @ mT(u))
    x = solve_triangular(mT(l_), phi, upper=True, unitriangular=True)
    x = mT(solve_triangular(u, mT(x), upper=True))  # x U^-T
    return (p @ x,)


def lu_rows(a):
    """MLX's row order and packed ``LU`` of square or rectangular ``a`` (forward only)."""
    if a.size == 0:
        return mx.zeros(a.shape, a.dtype), mx.zeros(_batch(a) + (min(a.shape[-2:]),), mx.int32)
    lu_, piv = mx.linalg.lu_factor(a, stream=CPU)
    return lu_, piv


def lu_any(a):
    """Differentiable ``(P, L, U)`` of any ``a`` (``L`` is ``m x k``, ``U`` is ``k x n``, ``k = min(m, n)``).

    Wide ``a = [A1 | A2]``: partial pivoting only looks at ``A1``, so ``P L U1 = A1`` and ``U2 = L^-1 P^T A2``.
    Tall ``a``: with the pivots of the whole matrix held fixed, ``P^T a = [B1; B2]``, ``B1 = L1 U`` (the
    pivoting of ``B1`` is the identity: the pivots of ``a`` are its column maxima) and ``L2 = B2 U^-1``.
    """
    m, n = a.shape[-2:]
    k = min(m, n)
    if m == n:
        return lu(a)
    if a.size == 0:
        return (_eyes(a, m), mx.zeros(_batch(a) + (m, k), a.dtype), mx.zeros(_batch(a) + (k, n), a.dtype))
    if m < n:
        p, l_, u1 = lu(a[..., :, :m])
        u2 = solve_triangular(l_, mT(p) @ a[..., :, m:], upper=False, unitriangular=True)
        return p, l_, mx.concatenate([u1, u2], axis=-1)
    rows, _, _ = mx.linalg.lu(mx.stop_gradient(a), stream=CPU)
    p = _row_perm(rows, a)
    b = mT(p) @ a
    p1, l1, u = lu(b[..., :n, :])
    l2 = solve_triangular(u, b[..., n:, :], upper=True, left=False)
    return p, mx.concatenate([p1 @ l1, l2], axis=-2), u


@mx.custom_function
def with_pinv_derivative(a, p):
    """``p`` (the pseudo-inverse of ``a``, computed without gradient) with torch's ``pinv_backward`` as the
    derivative with respect to the whole of ``a`` (torch differentiates ``pinv(hermitian=True)`` this way,
    even where ``a`` is not symmetric and only its lower triangle was read)."""
    return mx.array(p)


@with_pinv_derivative.vjp
def _pinv_vjp(primals, cotangent, output):
    a, _ = primals
    p, g = output, cotangent
    m, n = a.shape[-2:]
    ph, gh = mT(p), mT(g)
    if m <= n:
        k = gh @ p
        kph = k @ ph
        ga = -mT(p @ k) + kph - (a @ p) @ kph + (ph @ p) @ (gh - k @ a)
    else:
        k = p @ gh
        phk = ph @ k
        ga = -mT(k @ p) + phk - (phk @ p) @ a + ((gh - a @ k) @ p) @ ph
    return ga, mx.zeros_like(p)
