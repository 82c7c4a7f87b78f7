"""``tdx.linalg`` against torch.linalg on CPU: values on every device, gradients where torch has them.

Inputs are well conditioned (a random matrix plus a multiple of the identity; symmetric positive
definite ones for cholesky/eigh), so float32 results agree to a few ulps of the result's scale.
Decompositions whose factors are defined up to signs (svd, eigh, eig) are compared through
gauge-invariant quantities (the reconstruction, squared entries of the vectors), as their
gradients are.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import tdx
import tdx.linalg as LA
from tdx.testing.parity import assert_close
from conftest import torch_twin

TOL = {"float32": dict(rtol=2e-5, atol=2e-5), "float64": dict(rtol=1e-10, atol=1e-10)}
GTOL = {"float32": dict(rtol=1e-4, atol=1e-4), "float64": dict(rtol=1e-9, atol=1e-9)}  # a backward pass of
# solves and products: float32 gradients measured within 3e-5 of torch's


def _mat(shape, seed, spd=False, shift=3.0):
    rng = np.random.default_rng(seed)
    a = rng.uniform(-1, 1, size=shape)
    n = shape[-1]
    if spd:
        return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)
    if len(shape) > 1 and shape[-1] == shape[-2]:
        a = a + shift * np.eye(n)
    return a


def _mk(m, arrays, device, dtype, grad):
    out = []
    for a in arrays:
        if isinstance(a, np.ndarray) and a.dtype.kind == "f":
            t = m.tensor(a, dtype=getattr(m, dtype), device=device) if m is tdx else torch.tensor(a).to(getattr(m, dtype))
            out.append(t.requires_grad_() if grad else t)
        elif isinstance(a, np.ndarray):
            out.append(m.tensor(a, device=device) if m is tdx else torch.tensor(a))
        else:
            out.append(a)
    return out


def _outs(o):
    return list(o) if isinstance(o, (tuple, list)) else [o]


def sym(x):
    return x + x.mT


CASES = {
    "inv": (lambda m, a: m.linalg.inv(a), [(4, 4)]),
    "inv_batch": (lambda m, a: m.linalg.inv(a), [(2, 3, 3)]),
    "inv_ex": (lambda m, a: m.linalg.inv_ex(a).inverse, [(3, 3)]),
    "solve": (lambda m, a, b: m.linalg.solve(a, b), [(4, 4), (4, 2)]),
    "solve_vec": (lambda m, a, b: m.linalg.solve(a, b), [(2, 3, 3), (2, 3)]),
    "solve_bcast": (lambda m, a, b: m.linalg.solve(a, b), [(3, 3), (2, 3, 2)]),
    "solve_right": (lambda m, a, b: m.linalg.solve(a, b, left=False), [(3, 3), (2, 3)]),
    "solve_ex": (lambda m, a, b: m.linalg.solve_ex(a, b).result, [(3, 3), (3, 1)]),
    "solve_tri_up": (lambda m, a, b: m.linalg.solve_triangular(a, b, upper=True), [(4, 4), (4, 2)]),
    "solve_tri_low_right": (lambda m, a, b: m.linalg.solve_triangular(a, b, upper=False, left=False),
                            [(3, 3), (2, 3)]),
    "solve_tri_unit": (lambda m, a, b: m.linalg.solve_triangular(a, b, upper=False, unitriangular=True),
                       [(3, 3), (3, 2)]),
    "det": (lambda m, a: m.linalg.det(a), [(4, 4)]),
    "det_batch": (lambda m, a: m.linalg.det(a), [(2, 3, 3)]),
    "det_neg": (lambda m, a: m.linalg.det(a.flip(-2)), [(3, 3)]),
    "slogdet": (lambda m, a: m.linalg.slogdet(a), [(3, 3)]),
    "cholesky": (lambda m, a: m.linalg.cholesky(a), ["spd4"]),
    "cholesky_upper": (lambda m, a: m.linalg.cholesky(sym(a) / 2, upper=True), ["spd3"]),
    "cholesky_ex": (lambda m, a: m.linalg.cholesky_ex(a).L, ["spd3"]),
    "qr": (lambda m, a: m.linalg.qr(a), [(5, 3)]),
    "qr_square": (lambda m, a: m.linalg.qr(a), [(3, 3)]),
    "qr_wide": (lambda m, a: m.linalg.qr(a), [(3, 5)]),
    "qr_complete": (lambda m, a: m.linalg.qr(a.detach(), mode="complete"), [(4, 2)]),
    "qr_r": (lambda m, a: m.linalg.qr(a.detach(), mode="r").R, [(4, 3)]),  # torch: no derivative
    "svd_tall": (lambda m, a: [(lambda u, s, vh: [u @ torch_diag(m, s) @ vh, s, u * u, vh * vh])(
        *m.linalg.svd(a, full_matrices=False))][0], [(5, 3)]),
    "svd_wide": (lambda m, a: [(lambda u, s, vh: [s, u * u, vh * vh])(*m.linalg.svd(a, full_matrices=False))][0],
                 [(3, 4)]),
    "svd_full": (lambda m, a: [(lambda u, s, vh: [s, (u * u).detach(), (vh * vh).detach()])(*m.linalg.svd(a))][0],
                 [(4, 2)]),
    "svdvals": (lambda m, a: m.linalg.svdvals(a), [(2, 4, 3)]),
    "eigh": (lambda m, a: [(lambda w, v: [w, v * v])(*m.linalg.eigh(a))][0], ["spd4"]),
    "eigh_upper": (lambda m, a: [(lambda w, v: [w, v * v])(*m.linalg.eigh(a, UPLO="U"))][0], ["spd3"]),
    "eigvalsh": (lambda m, a: m.linalg.eigvalsh(a), ["spd3"]),
    "eigvals": (lambda m, a: m.linalg.eigvals(a.detach()).abs().sort().values, [(3, 3)]),
    "eig": (lambda m, a: [(lambda w, v: [w.abs().sort().values, v.abs().sum()])(*m.linalg.eig(a.detach()))][0],
            ["spd3"]),
    "lu": (lambda m, a: m.linalg.lu(a), [(4, 4)]),
    "lu_factor": (lambda m, a: m.linalg.lu_factor(a.detach()), [(2, 4, 4)]),
    "lu_factor_ex": (lambda m, a: m.linalg.lu_factor_ex(a.detach())[:2], [(3, 3)]),
    "lu_solve": (lambda m, a, b: m.linalg.lu_solve(*m.linalg.lu_factor(a.detach()), b), [(4, 4), (4, 2)]),
    "lu_solve_adj": (lambda m, a, b: m.linalg.lu_solve(*m.linalg.lu_factor(a.detach()), b, adjoint=True),
                     [(3, 3), (3, 2)]),
    "lu_solve_right": (lambda m, a, b: m.linalg.lu_solve(*m.linalg.lu_factor(a.detach()), b, left=False),
                       [(3, 3), (2, 3)]),
    "pinv": (lambda m, a: m.linalg.pinv(a), [(4, 3)]),
    "lstsq": (lambda m, a, b: m.linalg.lstsq(a, b).solution, [(5, 3), (5, 2)]),
    "matrix_rank": (lambda m, a: m.linalg.matrix_rank(a.detach() @ a.detach().mT[:, :2] @ a.detach()[:2]),
                    [(4, 4)]),
    "cond": (lambda m, a: m.linalg.cond(a), [(3, 3)]),
    "cond_fro": (lambda m, a: m.linalg.cond(a.detach(), "fro"), [(3, 3)]),  # torch cannot differentiate it
    "matrix_power": (lambda m, a: m.linalg.matrix_power(a / 4, 5), [(3, 3)]),
    "matrix_power_neg": (lambda m, a: m.linalg.matrix_power(a, -2), [(3, 3)]),
    "matrix_power_0": (lambda m, a: m.linalg.matrix_power(a, 0), [(2, 3, 3)]),
    "matrix_exp": (lambda m, a: m.linalg.matrix_exp(a), [(4, 4)]),
    "matrix_exp_small": (lambda m, a: m.linalg.matrix_exp(a / 10), [(2, 3, 3)]),
    "householder": (lambda m, a, t: m.linalg.householder_product(a, t), [(4, 3), (3,)]),
    "vector_norm": (lambda m, a: m.linalg.vector_norm(a), [(3, 4)]),
    "vector_norm_p": (lambda m, a: [m.linalg.vector_norm(a, 3, dim=1), m.linalg.vector_norm(a, 1, dim=(0, 1)),
                                    m.linalg.vector_norm(a, math.inf, dim=0, keepdim=True),
                                    m.linalg.vector_norm(a, -math.inf), m.linalg.vector_norm(a, 0).detach()],
                      [(3, 4)]),
    "matrix_norm": (lambda m, a: [m.linalg.matrix_norm(a), m.linalg.matrix_norm(a, 1),
                                  m.linalg.matrix_norm(a, -math.inf), m.linalg.matrix_norm(a, 2),
                                  m.linalg.matrix_norm(a, "nuc", keepdim=True)], [(2, 3, 4)]),
    "norm": (lambda m, a: [m.linalg.norm(a), m.linalg.norm(a, dim=1), m.linalg.norm(a, 2), m.linalg.norm(a, "fro"),
                           m.linalg.norm(a[0], 3)], [(3, 4)]),
    "matmul": (lambda m, a, b: m.linalg.matmul(a, b), [(3, 4), (4, 2)]),
    "multi_dot": (lambda m, a, b, c: m.linalg.multi_dot([a, b, c]), [(4,), (4, 3), (3, 2)]),
    "vecdot": (lambda m, a, b: m.linalg.vecdot(a, b, dim=0), [(3, 4), (3, 4)]),
    "cross": (lambda m, a, b: m.linalg.cross(a, b), [(2, 3), (1, 3)]),
    "diagonal": (lambda m, a: m.linalg.diagonal(a, offset=1), [(2, 3, 4)]),
    "vander": (lambda m, a: m.linalg.vander(a, N=4), [(3,)]),
    "tensorinv": (lambda m, a: m.linalg.tensorinv(a.reshape(2, 2, 4), ind=2), [(4, 4)]),
    "tensorsolve": (lambda m, a, b: m.linalg.tensorsolve(a.reshape(2, 3, 6), b), [(6, 6), (2, 3)]),
    # MLX's LU: rectangular and pivoted (a cyclic row permutation) factors with their gradients
    "lu_tall": (lambda m, a: m.linalg.lu(a), [(5, 3)]),
    "lu_wide": (lambda m, a: m.linalg.lu(a), [(3, 5)]),
    "lu_pivoted": (lambda m, a: m.linalg.lu(a[..., [1, 2, 3, 0], :]), [(2, 4, 4)]),
    "lu_factor_tall_grad": (lambda m, a: m.linalg.lu_factor(a), [(2, 4, 3)]),
    "lu_factor_wide_grad": (lambda m, a: m.linalg.lu_factor(a), [(3, 5)]),
    "lu_factor_square_grad": (lambda m, a: m.linalg.lu_factor(a[..., [2, 0, 1], :]), [(3, 3)]),
    # torch reads A's lower triangle but differentiates pinv in the whole (non-symmetric) A
    "pinv_hermitian": (lambda m, a: m.linalg.pinv(a, hermitian=True), [(4, 4)]),
    # rank-deficient: torch differentiates pinv by its pinv_backward formula, not through the SVD's cut-off
    "pinv_rank_deficient": (lambda m, a, b: m.linalg.pinv(m.linalg.qr(a).Q @ m.linalg.qr(b).Q.mT),  # s = 1, 1, 0
                            [(3, 2), (3, 2)]),
    "norm_nuc": (lambda m, a: [m.norm(a[0], "nuc"), m.norm(a, p="nuc", dim=(0, 2), keepdim=True)], [(3, 2, 4)]),
    "vector_norm_at_zero": (lambda m, a: [m.linalg.vector_norm(a * 0, p) for p in (2, 0.5, 1.5, 3.5, -1)]
                            + [m.linalg.norm(a[0] * 0), m.linalg.matrix_norm(a * 0)], [(3, 4)]),
    "vander_scalar": (lambda m, a: m.linalg.vander(a[0], N=3), [(3,)]),
    "tensorsolve_dims": (lambda m, a, b: m.linalg.tensorsolve(a.reshape(6, 2, 3), b, dims=(0,)), [(6, 6), (2, 3)]),
    # torch.* and Tensor-method forms outside torch.linalg
    "torch_lu": (lambda m, a: m.lu(a[..., [1, 2, 0], :], get_infos=True), [(2, 3, 3)]),
    "torch_lu_unpack": (lambda m, a: m.lu_unpack(*m.lu(a[..., [1, 2, 0], :])), [(3, 3)]),
    "torch_lu_solve": (lambda m, a, b: [m.lu_solve(b, *m.lu(a)), b.lu_solve(*a.lu())], [(3, 3), (3, 2)]),
    "torch_svd": (lambda m, a: [(lambda u, s, v: [u @ torch_diag(m, s) @ v.mT, s, u * u, v * v])(*m.svd(a))][0],
                  [(4, 3)]),
    "torch_svd_some_false": (lambda m, a: [(lambda u, s, v: [(u * u).detach(), s, (v * v).detach()])(
        *a.svd(some=False))][0], [(4, 3)]),
    "torch_svd_no_uv": (lambda m, a: list(m.svd(a, compute_uv=False)), [(3, 4)]),
    "torch_qr": (lambda m, a: [*m.qr(a), *a.detach().qr(some=False)], [(4, 3)]),
    "torch_cholesky": (lambda m, a: [m.cholesky(a), a.cholesky(upper=True)], ["spd3"]),
    "cholesky_inverse": (lambda m, a: [m.cholesky_inverse(m.linalg.cholesky(a)),
                                       m.linalg.cholesky(a).mT.cholesky_inverse(upper=True)], ["spd3"]),
    "cholesky_solve": (lambda m, a, b: m.cholesky_solve(b, m.linalg.cholesky(a)), ["spd3", (3, 2)]),
    "geqrf_orgqr_ormqr": (lambda m, a, c: [*m.geqrf(a.detach()), m.orgqr(*m.geqrf(a.detach())),
                                          m.ormqr(*m.geqrf(a.detach()), c.detach(), transpose=True)],
                          [(4, 3), (4, 2)]),
    "triangular_solve": (lambda m, a, b: list(m.triangular_solve(b, a, upper=False)), [(3, 3), (3, 2)]),
    "det_forms": (lambda m, a: [m.det(a), m.logdet(a), *m.slogdet(a), a.det(), a.logdet(), a.slogdet()[1]],
                  ["spd3"]),
    "inverse_forms": (lambda m, a: [m.inverse(a), a.pinverse(), m.matrix_power(a, 3), a.matrix_power(-1),
                                    m.matrix_exp(a / 4), a.inverse()], [(3, 3)]),
    "ger_chain_matmul": (lambda m, a, b, c: [m.ger(a, b), a.ger(b), m.chain_matmul(c, c.mT, c)],
                         [(3,), (4,), (2, 3)]),
    "svd_lowrank": (lambda m, a, b: [(lambda u, s, v: [u @ torch_diag(m, s) @ v.mT, s])(
        *m.svd_lowrank(a.detach() @ b.detach(), q=2))][0], [(5, 2), (2, 4)]),
}


def torch_diag(m, s):
    return m.diag_embed(s) if hasattr(m, "diag_embed") else s.unsqueeze(-1) * m.eye(s.shape[-1], dtype=s.dtype,
                                                                                     device=s.device)


def _arrays(spec, seed):
    out = []
    for i, s in enumerate(spec):
        if isinstance(s, str):
            out.append(_mat((int(s[3:]),) * 2, seed + i, spd=True))
        else:
            out.append(_mat(s, seed + i))
    return out


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_values_and_gradients(device, name, dtype):
    if dtype == "float64" and device.startswith("mlx") and name in ("eig", "eigvals"):
        pytest.skip("float64 eig needs complex128 (checked to raise in test_mlx_eig_float64_raises)")
    fn, spec = CASES[name]
    arrays = _arrays(spec, seed=sum(map(ord, name)))
    want_t = _mk(torch, arrays, None, dtype, True)
    got_t = _mk(tdx, arrays, device, dtype, True)
    want = _outs(fn(torch, *want_t))
    got = _outs(fn(tdx, *got_t))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert_close(g, w.detach(), msg=name, **TOL[dtype])
    diff = [(g, w) for g, w in zip(got, want) if w.requires_grad]
    if not diff:
        return
    rng = np.random.default_rng(7)
    ws = [rng.uniform(-1, 1, size=tuple(w.shape)) for _, w in diff]
    sum((w * torch.tensor(c).to(w.dtype)).sum() for (_, w), c in zip(diff, ws)).backward()
    sum((g * tdx.tensor(c, dtype=g.dtype, device=device)).sum() for (g, _), c in zip(diff, ws)).backward()
    for g, w in zip(got_t, want_t):
        if isinstance(w, torch.Tensor) and w.grad is not None:
            assert_close(g.grad, w.grad, msg=f"{name} grad", **GTOL[dtype])


@pytest.mark.float64
def test_named_tuples_and_int_outputs(device):
    a = tdx.tensor(_mat((3, 3), 1), device=device).float()
    ref = torch.tensor(_mat((3, 3), 1)).float()
    out = LA.lu_factor(a)
    assert out._fields == ("LU", "pivots") and out.pivots.dtype == tdx.int32
    assert_close(out.pivots, torch.linalg.lu_factor(ref).pivots)
    r = LA.lstsq(a, a)
    assert r._fields == ("solution", "residuals", "rank", "singular_values")
    assert r.rank.dtype == tdx.int64
    assert LA.slogdet(a)._fields == ("sign", "logabsdet")
    assert LA.svd(a)._fields == ("U", "S", "Vh")
    assert LA.matrix_rank(a).dtype == tdx.int64 and LA.matrix_rank(a).item() == 3


@pytest.mark.parametrize("call, kind", [
    (lambda m, dev: m.linalg.inv(m.tensor([[1.0, 2.0], [2.0, 4.0]], device=dev)), RuntimeError),
    (lambda m, dev: m.linalg.cholesky(m.tensor([[1.0, 2.0], [2.0, 1.0]], device=dev)), RuntimeError),
    (lambda m, dev: m.linalg.inv(m.ones(2, 3, device=dev)), RuntimeError),
    (lambda m, dev: m.linalg.det(m.ones(3, device=dev)), RuntimeError),
    (lambda m, dev: m.linalg.inv(m.ones(2, 2, dtype=m.int64, device=dev)), RuntimeError),
    (lambda m, dev: m.linalg.qr(m.ones(3, 3, device=dev), mode="bad"), RuntimeError),
    (lambda m, dev: m.linalg.cross(m.ones(2, 4, device=dev), m.ones(2, 4, device=dev)), RuntimeError),
])
def test_bad_input_raises_like_torch(device, call, kind):
    with pytest.raises(kind):
        call(torch, "cpu")
    with pytest.raises(kind) as info:
        call(tdx, device)
    assert isinstance(info.value, tdx.TdxError)


def test_singular_is_linalg_error_on_mlx():
    x = tdx.tensor([[1.0, 2.0], [2.0, 4.0]], device="mlx:cpu")
    with pytest.raises(LA.LinAlgError, match="singular"):
        LA.inv(x)


@pytest.mark.float64
def test_mlx_eig_float64_raises():
    x = tdx.tensor(_mat((3, 3), 0), device="mlx:cpu").double()
    with pytest.raises(tdx.DtypeError, match="complex128"):
        LA.eig(x)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape, scale", [((5, 5), 1.0), ((2, 6, 6), 0.01), ((0, 3, 3), 1.0), ((1, 1), 1.0), ((0, 0), 1.0),
                                          ((2, 0, 0), 1.0)])
def test_ldl_factor_and_solve(device, shape, scale, dtype):
    """torch's Bunch-Kaufman pivots and factors, the 2 x 2 blocks included (small diagonals force them);
    the input need not be symmetric (only its lower triangle is read)."""
    rng = np.random.default_rng(sum(shape))
    a = rng.standard_normal(shape)
    a[..., np.arange(shape[-1]), np.arange(shape[-1])] *= scale
    b = rng.standard_normal(shape[:-1] + (2,))
    want = torch.linalg.ldl_factor_ex(torch.tensor(a).to(getattr(torch, dtype)))
    got = LA.ldl_factor_ex(tdx.tensor(a, dtype=getattr(tdx, dtype), device=device))
    assert got._fields == ("LD", "pivots", "info")
    assert_close(got.pivots, want.pivots, rtol=0, atol=0)
    assert_close(got.info, want.info, rtol=0, atol=0)
    assert_close(got.LD, want.LD, **TOL[dtype])
    assert_close(LA.ldl_factor(tdx.tensor(a, dtype=getattr(tdx, dtype), device=device)).LD, want.LD, **TOL[dtype])
    x = LA.ldl_solve(got.LD, got.pivots, tdx.tensor(b, dtype=getattr(tdx, dtype), device=device))
    assert_close(x, torch.linalg.ldl_solve(want.LD, want.pivots, torch.tensor(b).to(getattr(torch, dtype))),
                 **{"float32": dict(rtol=1e-4, atol=1e-4), "float64": TOL["float64"]}[dtype])  # float32: pivots
    # of size 0.01 amplify rounding by their inverse


@pytest.mark.parametrize("name, method", [("lstsq", True), ("solve", True), ("eig", True), ("symeig", True),
                                          ("matrix_rank", False)])
@pytest.mark.float64
def test_removed_torch_functions_raise_like_torch(device, name, method):
    """torch 2 keeps these pre-1.9 names only to raise, pointing at torch.linalg."""
    a = tdx.tensor(_mat((3, 3), 4), device=device)
    ref = torch.tensor(_mat((3, 3), 4))
    calls = [(getattr(torch, name), getattr(tdx, name))] + \
        ([(getattr(ref, name), getattr(a, name))] if method else [])
    assert method == hasattr(torch.Tensor, name) == hasattr(tdx.Tensor, name)
    for want, got in calls:
        with pytest.raises(RuntimeError, match="removed"):
            want(ref, ref) if want is getattr(torch, name) else want(ref)
        with pytest.raises(RuntimeError, match="deprecated since version 1.9 and is now removed") as info:
            got(a, a) if got is getattr(tdx, name) else got(a)
        assert isinstance(info.value, tdx.TdxError)


@pytest.mark.parametrize("fn", [lambda m, x: m.linalg.det(x), lambda m, x: m.linalg.slogdet(x)[1],
                                lambda m, x: m.logdet(x), lambda m, x: x.diagonal(dim1=-2, dim2=-1),
                                lambda m, x: m.linalg.diagonal(x)])
@pytest.mark.parametrize("shape", [(0, 5, 5), (0, 1, 1), (3, 0, 0)])
@pytest.mark.float64
def test_gradients_of_empty_batches(device, fn, shape):
    """MLX's derivative of a diagonal traps (SIGFPE) on empty input: the process must survive, with torch's
    (empty or zero) results and gradients."""
    want_x = torch.zeros(shape, dtype=torch.float64, requires_grad=True)
    got_x = tdx.zeros(shape, dtype=tdx.float64, device=device).requires_grad_()
    want, got = fn(torch, want_x), fn(tdx, got_x)
    assert_close(got, want.detach(), **TOL["float64"])
    (want * 2.0).sum().backward()
    (got * 2.0).sum().backward()
    assert_close(got_x.grad, want_x.grad, **TOL["float64"])


@pytest.mark.float64
def test_lstsq_singular_values_not_differentiable(device):
    a = tdx.tensor(_mat((4, 3), 2), device=device).requires_grad_()
    ref = torch.tensor(_mat((4, 3), 2), device=torch_twin(device)).requires_grad_()
    try:
        want = torch.linalg.lstsq(ref, ref[:, :2], driver="gelsd")
    except RuntimeError as err:  # torch on cuda has the gels driver only: tdx there refuses as torch does
        with pytest.raises(RuntimeError, match="gels") as info:
            LA.lstsq(a, a[:, :2], driver="gelsd")
        assert isinstance(info.value, tdx.TdxError), err
        return
    got = LA.lstsq(a, a[:, :2], driver="gelsd")
    assert [t.requires_grad for t in got] == [t.requires_grad for t in want] == [True, True, False, False]
    assert_close(got.singular_values, want.singular_values, **TOL["float64"])


def test_torch_linalg_coverage():
    names = [n for n in dir(torch.linalg) if not n.startswith("_") and callable(getattr(torch.linalg, n))]
    missing = [n for n in names if not hasattr(LA, n)]
    assert len(missing) <= 0.05 * len(names), missing


def test_cholesky_ex_reports_what_it_cannot_factor_without_raising(device):
    """``cholesky_ex`` returns ``info`` (the order of the first leading minor that is not positive-definite, 0
    where all are) instead of raising, as torch's; ``constraints.positive_definite`` and transformers' embedding
    resize ask it. With ``check_errors=True`` it raises torch's class."""
    a = [[[4.0, 2.0, 0.0], [2.0, 1.0, 0.0], [0.0, 0.0, 1.0]], [[2.0, 0.0, 0.0], [0.0, 3.0, 0.0], [0.0, 0.0, 4.0]],
         [[1.0, 2.0, 0.0], [2.0, 1.0, 0.0], [0.0, 0.0, 1.0]]]
    got = tdx.linalg.cholesky_ex(tdx.tensor(a, device=device))
    want = torch.linalg.cholesky_ex(torch.tensor(a))
    assert got.info.tolist() == want.info.tolist() == [2, 0, 2]
    np.testing.assert_allclose(got.L[1].cpu().numpy(), want.L[1].numpy(), rtol=1e-6)
    assert tdx.distributions.constraints.positive_definite.check(tdx.tensor(a, device=device)).tolist() == \
        [False, True, False]
    with pytest.raises(RuntimeError) as info:
        tdx.linalg.cholesky_ex(tdx.tensor(a[0], device=device), check_errors=True)
    assert isinstance(info.value, tdx.TdxError)
