"""The LDL^T factorization of symmetric matrices for MLX, which has no kernel for it (forward only).

``torch.linalg.ldl_factor``/``ldl_factor_ex``/``ldl_solve`` are LAPACK's ``sytrf``/``sytrs`` with
``uplo='L'``: Bunch-Kaufman diagonal pivoting, ``1 x 1`` and ``2 x 2`` blocks of ``D``, and LAPACK's
pivot encoding (1-based; a ``2 x 2`` block stores ``-p`` in both of its entries). Here the same
algorithm (LAPACK's unblocked ``dsytf2`` and ``dsytrs``) runs on the host on NumPy copies of the
MLX arrays, one matrix of the batch at a time, so the factors and pivots are torch's. torch defines
no derivative for these functions. Real dtypes only; must never import torch or the facade.
"""

from __future__ import annotations

import math

import numpy as np

_ALPHA = (1.0 + math.sqrt(17.0)) / 8.0  # Bunch-Kaufman's growth bound


def _swap_symmetric(a, k, kk, kp, kstep):
    """LAPACK's interchange of rows and columns ``kk`` and ``kp`` of the lower triangle's trailing part."""
    n = a.shape[0]
    if kp + 1 < n:
        a[kp + 1:, [kk, kp]] = a[kp + 1:, [kp, kk]]
    seg = a[kk + 1:kp, kk].copy()
    a[kk + 1:kp, kk] = a[kp, kk + 1:kp]
    a[kp, kk + 1:kp] = seg
    a[kk, kk], a[kp, kp] = a[kp, kp], a[kk, kk]
    if kstep == 2:
        a[k + 1, k], a[kp, k] = a[kp, k], a[k + 1, k]


def _factor_one(a):
    """``dsytf2('L')`` on one matrix ``a`` (overwritten): ``(pivots 1-based, info)``."""
    n = a.shape[0]
    piv = np.zeros(n, dtype=np.int32)
    info, k = 0, 0
    while k < n:
        kstep = 1
        absakk = abs(a[k, k])
        if k + 1 < n:
            imax = k + 1 + int(np.argmax(np.abs(a[k + 1:, k])))
            colmax = abs(a[imax, k])
        else:
            imax, colmax = k, 0.0
        if max(absakk, colmax) == 0 or math.isnan(absakk):
            info = info or k + 1
            kp = k
        else:
            if absakk >= _ALPHA * colmax:
                kp = k
            else:
                rowmax = np.max(np.abs(a[imax, k:imax])) if imax > k else 0.0
                if imax + 1 < n:
                    rowmax = max(rowmax, np.max(np.abs(a[imax + 1:, imax])))
                if absakk >= _ALPHA * colmax * (colmax / rowmax):
                    kp = k
                elif abs(a[imax, imax]) >= _ALPHA * rowmax:
                    kp = imax
                else:
                    kp, kstep = imax, 2
            kk = k + kstep - 1
            if kp != kk:
                _swap_symmetric(a, k, kk, kp, kstep)
            if kstep == 1:
                if k + 1 < n:
                    x = a[k + 1:, k].copy()
                    d11 = 1.0 / a[k, k]
                    a[k + 1:, k + 1:] -= np.tril(np.outer(x, d11 * x))  # dsyr, then dscal
                    a[k + 1:, k] = x * d11
            elif k + 2 < n:
                d21 = a[k + 1, k]
                d11 = a[k + 1, k + 1] / d21
                d22 = a[k, k] / d21
                t = 1.0 / (d11 * d22 - 1.0)
                d21 = t / d21
                c0, c1 = a[k + 2:, k].copy(), a[k + 2:, k + 1].copy()
                wk = d21 * (d11 * c0 - c1)
                wkp1 = d21 * (d22 * c1 - c0)
                a[k + 2:, k + 2:] -= np.tril(np.outer(c0, wk) + np.outer(c1, wkp1))
                a[k + 2:, k], a[k + 2:, k + 1] = wk, wkp1
        if kstep == 1:
            piv[k] = kp + 1
        else:
            piv[k] = piv[k + 1] = -(kp + 1)
        k += kstep
    return piv, info


def factor(a):
    """``(LD, pivots, info)`` of a batch of matrices ``a`` (NumPy), as ``torch.linalg.ldl_factor_ex``."""
    batch, n = a.shape[:-2], a.shape[-1]
    flat = np.tril(np.array(a, copy=True)).reshape((math.prod(batch), n, n))
    pivs = np.zeros((flat.shape[0], n), dtype=np.int32)
    infos = np.zeros(flat.shape[0], dtype=np.int32)
    for i in range(flat.shape[0]):
        pivs[i], infos[i] = _factor_one(flat[i])
    return np.tril(flat).reshape(a.shape), pivs.reshape(batch + (n,)), infos.reshape(batch)


def _solve_one(ld, piv, b):
    """``dsytrs('L')``: ``b`` (``n x k``, overwritten) becomes ``A^-1 b`` for ``A``'s factors ``ld``, ``piv``."""
    n = ld.shape[0]
    k = 0
    while k < n:  # L D X = B
        if piv[k] > 0:
            kp = piv[k] - 1
            if kp != k:
                b[[k, kp]] = b[[kp, k]]
            b[k + 1:] -= np.outer(ld[k + 1:, k], b[k])
            b[k] /= ld[k, k]
            k += 1
        else:
            kp = -piv[k] - 1
            if kp != k + 1:
                b[[k + 1, kp]] = b[[kp, k + 1]]
            if k + 2 < n:
                b[k + 2:] -= np.outer(ld[k + 2:, k], b[k]) + np.outer(ld[k + 2:, k + 1], b[k + 1])
            akm1k = ld[k + 1, k]
            akm1, ak = ld[k, k] / akm1k, ld[k + 1, k + 1] / akm1k
            denom = akm1 * ak - 1.0
            bkm1, bk = b[k] / akm1k, b[k + 1] / akm1k
            b[k], b[k + 1] = (ak * bkm1 - bk) / denom, (akm1 * bk - bkm1) / denom
            k += 2
    k = n - 1
    while k >= 0:  # L^T X = B
        if piv[k] > 0:
            b[k] -= ld[k + 1:, k] @ b[k + 1:]
            kp = piv[k] - 1
            if kp != k:
                b[[k, kp]] = b[[kp, k]]
            k -= 1
        else:
            b[k] -= ld[k + 1:, k] @ b[k + 1:]
            b[k - 1] -= ld[k + 1:, k - 1] @ b[k + 1:]
            kp = -piv[k] - 1
            if kp != k:
                b[[k, kp]] = b[[kp, k]]
            k -= 2
    return b


def solve(ld, piv, b):
    """``torch.linalg.ldl_solve(LD, pivots, B)`` on NumPy arrays (batch dims broadcast)."""
    n = ld.shape[-1]
    batch = np.broadcast_shapes(ld.shape[:-2], piv.shape[:-1], b.shape[:-2])
    count = math.prod(batch)
    ld = np.broadcast_to(ld, batch + (n, n)).reshape((count, n, n))
    piv = np.broadcast_to(piv, batch + (n,)).reshape((count, n))
    out = np.array(np.broadcast_to(b, batch + b.shape[-2:]), copy=True).reshape((count,) + b.shape[-2:])
    for i in range(out.shape[0]):
        _solve_one(ld[i], piv[i], out[i])
    return out.reshape(batch + b.shape[-2:])
