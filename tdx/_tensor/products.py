"""Products and distances built from matmul and broadcasting: ``tensordot``, ``cross``, ``cdist``,
``dist``, ``vdot``, ``renorm``, ``diag_embed``/``diagflat``/``block_diag``, ``combinations`` and the
trapezoid rules, as ``torch.*`` functions and ``Tensor`` methods.

Executors with a kernel of torch's signature run it; elsewhere the composites here, written with
tdx ops, compute torch's result (its defaults, result dtypes and shapes). This module must never
import a framework.
"""

from __future__ import annotations

import itertools

from .. import _dtypes as D
from .._errors import TdxRuntimeError
from ..backends.base import norm_dim
from .kernels import install
from .tensor import Tensor

__all__: list = []


def tensordot(a, b, dims=2, out=None):
    """Sum of products over ``dims`` of ``a``'s last and ``b``'s first dims (or the listed pairs)."""
    if isinstance(dims, Tensor):
        dims = dims.tolist()
    if isinstance(dims, int):
        if dims < 0:
            raise TdxRuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        da, db = list(range(a.ndim - dims, a.ndim)), list(range(dims))
    else:
        da, db = dims
        da = [da] if isinstance(da, int) else list(da)
        db = [db] if isinstance(db, int) else list(db)
    da = [norm_dim(d, a.ndim) for d in da]
    db = [norm_dim(d, b.ndim) for d in db]
    for i, j in zip(da, db):
        if a.shape[i] != b.shape[j] and b.shape[j] == 1:  # a size-1 dim contracts against the other's sum
            a = a.sum(i, keepdim=True)
        elif a.shape[i] != b.shape[j] and a.shape[i] == 1:
            b = b.sum(j, keepdim=True)
        elif a.shape[i] != b.shape[j]:
            raise TdxRuntimeError(f"contracted dimensions need to match, but first has size {a.shape[i]} in dim "
                                  f"{i} and second has size {b.shape[j]} in dim {j}")
    fa = [d for d in range(a.ndim) if d not in da]
    fb = [d for d in range(b.ndim) if d not in db]
    k = 1
    for d in da:
        k *= a.shape[d]
    am = a.permute(*fa, *da).reshape(-1, k)
    bm = b.permute(*db, *fb).reshape(k, -1)
    return am.matmul(bm).reshape(*[a.shape[d] for d in fa], *[b.shape[d] for d in fb])


def cross(input, other, dim=None):  # noqa: A002
    """The 3-D cross product along ``dim`` (the first dim of size 3 when None)."""
    from .shape import broadcast_tensors

    a, b = broadcast_tensors(input, other)
    if dim is None:
        dim = next((i for i, n in enumerate(a.shape) if n == 3), None)
        if dim is None:
            raise TdxRuntimeError("no dimension of size 3 in input")
    d = norm_dim(dim, a.ndim)
    if a.shape[d] != 3:
        raise TdxRuntimeError(f"linalg.cross: inputs dimension {d} must have length 3. Got {input.shape[d]} and "
                              f"{other.shape[d] if other.ndim > d else 1}")
    a0, a1, a2 = a.unbind(d)
    b0, b1, b2 = b.unbind(d)
    from .shape import stack

    return stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], d)


def _pnorm(diff, p, dim):
    if p == 0:  # a count: its gradient is zero, as torch's
        return (diff != 0).to(diff.dtype).sum(dim) + (diff * 0).sum(dim)
    if p == float("inf"):
        return diff.abs().amax(dim)
    return diff.norm(p, dim)


def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """The p-norm distance between each pair of rows of ``x1`` and ``x2`` (batched)."""
    if p < 0:
        raise TdxRuntimeError(f"cdist only supports non-negative p values, got {p}")
    if x1.ndim < 2 or x2.ndim < 2:
        raise TdxRuntimeError(f"cdist only supports at least 2D tensors, X1 got: {x1.ndim}D, X2 got: {x2.ndim}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise TdxRuntimeError(f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} X2: "
                              f"{x2.shape[-1]}")
    diff = x1.unsqueeze(-2) - x2.unsqueeze(-3)
    if x1.shape[-1] == 0:
        return diff.sum(-1).abs()
    return _pnorm(diff, p, -1)


def dist(input, other, p=2):  # noqa: A002
    """The p-norm of ``input - other``."""
    diff = input - other
    return _pnorm(diff.reshape(-1), float(p), 0) if diff.numel() else diff.sum() * 0


def vdot(input, other):  # noqa: A002
    """The dot product of two 1-D tensors, conjugating the first."""
    if input.ndim != 1 or other.ndim != 1:
        raise TdxRuntimeError(f"1D tensors expected, but got {input.ndim}D and {other.ndim}D tensors")
    if input.dtype is not other.dtype:
        raise TdxRuntimeError(f"vdot : expected both vectors to have same dtype, but found {input.dtype.name} "
                              f"and {other.dtype.name}")
    return (input.conj() * other).sum()


def renorm(input, p, dim, maxnorm):  # noqa: A002
    """Each slice along ``dim`` rescaled so its p-norm is at most ``maxnorm``."""
    d = norm_dim(dim, input.ndim)
    others = [i for i in range(input.ndim) if i != d]
    norms = input.norm(p, others, keepdim=True) if others else input.abs()
    factor = (maxnorm / (norms + 1e-7)).where(norms > maxnorm, 1.0)
    return (input * factor).to(input.dtype)


def diag_embed(input, offset=0, dim1=-2, dim2=-1):  # noqa: A002
    """Matrices with the last dim of ``input`` on their ``offset`` diagonal, placed at dims (dim1, dim2)."""
    m = input.shape[-1]
    n = m + abs(offset)
    nd = input.ndim + 1
    d1, d2 = norm_dim(dim1, nd), norm_dim(dim2, nd)
    if d1 == d2:
        raise TdxRuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    rows = input.new_tensor(list(range(m)), dtype=D.int64) + max(-offset, 0)
    cols = rows + offset
    grid_r = input.new_tensor(list(range(n)), dtype=D.int64)
    hit = (grid_r.reshape(n, 1, 1) == rows.reshape(1, 1, m)) & (grid_r.reshape(1, n, 1) == cols.reshape(1, 1, m))
    out = input.unsqueeze(-2).unsqueeze(-2).where(hit, 0).sum(-1).to(input.dtype) if m else \
        input.new_zeros((*input.shape[:-1], n, n))
    return out.movedim((-2, -1), (d1, d2)) if (d1, d2) != (nd - 2, nd - 1) else out


def diagflat(input, offset=0):  # noqa: A002
    """A 2-D matrix with the flattened ``input`` on its ``offset`` diagonal."""
    return diag_embed(input.reshape(-1), offset)


def block_diag(*tensors):
    """The block-diagonal matrix of ``tensors`` (0-d, 1-D or 2-D), promoted to their common dtype."""
    mats = []
    for t in tensors:
        if t.ndim > 2:
            raise TdxRuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input "
                                  f"{len(mats)} has {t.ndim} dimensions")
        mats.append(t.reshape(1, 1) if t.ndim == 0 else t.reshape(1, -1) if t.ndim == 1 else t)
    dt = D.result_type([m.dtype for m in mats], [], [])
    width = sum(m.shape[1] for m in mats)
    rows, col = [], 0
    from .shape import cat

    for m in mats:
        parts = [m.new_zeros((m.shape[0], col), dtype=dt), m.to(dt),
                 m.new_zeros((m.shape[0], width - col - m.shape[1]), dtype=dt)]
        rows.append(cat(parts, 1))
        col += m.shape[1]
    return cat(rows, 0)


def combinations(input, r=2, with_replacement=False):  # noqa: A002
    """The length-``r`` combinations of a 1-D tensor's elements, one per row."""
    if input.ndim != 1:
        raise TdxRuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    if r < 0:
        raise TdxRuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return input.new_zeros((0,))
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    combos = list(pick(range(input.shape[0]), r))
    if not combos:
        return input.new_zeros((0, r))
    idx = input.new_tensor(combos, dtype=D.int64)
    return input.index_select(0, idx.reshape(-1)).reshape(len(combos), r)


def _spacing(y, x, dx, dim):
    d = norm_dim(dim, y.ndim)
    if x is None:
        return None, d, (1 if dx is None else dx)
    if isinstance(x, Tensor):
        if x.ndim == 1:
            shape = [1] * y.ndim
            shape[d] = -1
            x = x.reshape(shape)
        n = x.shape[d] if x.ndim else 1
        return x.narrow(d, 1, n - 1) - x.narrow(d, 0, n - 1), d, None
    return None, d, x


def trapezoid(y, x=None, *, dx=None, dim=-1):
    """The trapezoid rule integral of ``y`` along ``dim`` (sample points ``x`` or spacing ``dx``)."""
    if isinstance(x, (int, float)) and dx is None:
        x, dx = None, x
    h, d, step = _spacing(y, x, dx, dim)
    n = y.shape[d]
    if n == 0:
        return y.sum(d) * 0
    mids = (y.narrow(d, 1, n - 1) + y.narrow(d, 0, n - 1))
    if h is None:
        return mids.sum(d) * (step / 2)
    return (mids * h).sum(d) / 2


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    """The running trapezoid rule integral of ``y`` along ``dim``."""
    if isinstance(x, (int, float)) and dx is None:
        x, dx = None, x
    h, d, step = _spacing(y, x, dx, dim)
    n = y.shape[d]
    if n == 0:
        return y.narrow(d, 0, 0) * 1.0
    mids = (y.narrow(d, 1, n - 1) + y.narrow(d, 0, n - 1))
    parts = mids * (step / 2) if h is None else mids * h / 2
    return parts.cumsum(d)


def trapz(y, x=None, *, dx=None, dim=-1):
    """``trapezoid`` (torch's older name)."""
    return trapezoid(y, x, dx=dx, dim=dim)


_TABLE = {name: (fn, fn.__doc__) for name, fn in {
    "tensordot": tensordot, "cross": cross, "cdist": cdist, "dist": dist, "vdot": vdot, "renorm": renorm,
    "diag_embed": diag_embed, "diagflat": diagflat, "block_diag": block_diag, "combinations": combinations,
    "trapezoid": trapezoid, "trapz": trapz, "cumulative_trapezoid": cumulative_trapezoid}.items()}
install(globals(), __all__, _TABLE, methods=("cross", "dist", "vdot", "renorm", "diag_embed", "diagflat"),
        inplace=("renorm",))
