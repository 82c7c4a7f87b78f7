"""torch's OpInfo database (``op_db``) as the oracle of the whole op surface, on every device.

Each ``op_db`` entry (702 in torch 2.13) is one test per device: torch's sample inputs go through
tdx and through torch on CPU (see :mod:`opinfo_oracle`), comparing values, dtype and shape, the
gradients of the inputs for entries that support autograd, and the method and in-place variants.

Sampling, so the module stays fast (about 70 s of CPU per device): per entry, the first 2 float32
sample inputs and the first int64 and bool one, the method and in-place variants on the first
sample of each dtype, and the gradient of the first float64 sample (float32 where the executor has
no float64). ``TDX_OPINFO_SAMPLES=8`` takes 8 float32 and 4 int64/bool samples for a deeper run.

:data:`EXPECTED_FAILURES` is the one list of what does not pass yet (entry -> reason; an
``@mlx`` suffix limits an entry to MLX devices); it shrinks as ops land. An entry listed there
that passes fails the test (strict), so the list cannot go stale. Entries of namespaces not
built yet (``tdx.linalg``, ``tdx.fft``...) are expected failures while the namespace is missing.

Run as a script (``python tests/test_opinfo.py [devices]``) it prints the independent figures:
the share of entries whose function variant passes (first 8 samples per dtype; float32, int64,
bool) per device, and the share of gradient-supporting entries whose gradients pass.
"""

from __future__ import annotations

import collections
import os
import sys

import pytest

import opinfo_oracle as O

if __name__ != "__main__":
    pytest.importorskip("expecttest", reason="torch's OpInfo database needs expecttest (the dev extra)")

_N = int(os.environ.get("TDX_OPINFO_SAMPLES", "2"))
SAMPLES = {"float32": _N, "int64": max(1, _N // 2), "bool": max(1, _N // 2)}
GRAD_SAMPLES = 1
DTYPES = ("float32", "int64", "bool")

# entry -> why it fails; "entry@mlx" (or "@cpu") applies to that kind of device only
EXPECTED_FAILURES: dict = {
    'cholesky': 'a torch.* linear-algebra function: forwards to tdx.linalg, which the linalg branch builds',
    'cholesky_inverse': 'a torch.* linear-algebra function: forwards to tdx.linalg, which the linalg branch builds',
    'cholesky_solve': 'a torch.* linear-algebra function: forwards to tdx.linalg, which the linalg branch builds',
    'stft': 'Unsupported: tdx has no stft',
    'geqrf': 'a torch.* linear-algebra function: forwards to tdx.linalg, which the linalg branch builds',
    'gradient': 'Unsupported: tdx has no gradient',
    'lu_unpack': 'a torch.* linear-algebra function: forwards to tdx.linalg, which the linalg branch builds',
    'lu': 'a torch.* linear-algebra function: forwards to tdx.linalg, which the linalg branch builds',
    'lu_solve': 'a torch.* linear-algebra function: forwards to tdx.linalg, which the linalg branch builds',
    'matrix_exp': 'a torch.* linear-algebra function: forwards to tdx.linalg, which the linalg branch builds',
    '_softmax_backward_data': "private aten op (torch internals), not part of torch's public API",
    'as_strided_scatter@mlx': 'AssertionError: as_strided_scatter:function:float64: grad of input 0: 1 of 1 elements differ (rtol=1e-09, atol',
    'native_batch_norm': "private aten op (torch internals), not part of torch's public API",
    '_native_batch_norm_legit': "private aten op (torch internals), not part of torch's public API",
    '_batch_norm_with_update': "private aten op (torch internals), not part of torch's public API",
    '_upsample_bilinear2d_aa': 'nn.functional.interpolate/upsample not built yet',
    'max_pool2d_with_indices_backward': "private aten op (torch internals), not part of torch's public API",
    'torch.ops.aten._safe_softmax.default': "private aten op (torch internals), not part of torch's public API",
    'ormqr': 'a torch.* linear-algebra function: forwards to tdx.linalg, which the linalg branch builds',
    'qr': 'a torch.* linear-algebra function: forwards to tdx.linalg, which the linalg branch builds',
    'slice': "private aten op (torch internals), not part of torch's public API",
    'triangular_solve': 'a torch.* linear-algebra function: forwards to tdx.linalg, which the linalg branch builds',
    'svd': 'a torch.* linear-algebra function: forwards to tdx.linalg, which the linalg branch builds',
    'svd_lowrank': 'a torch.* linear-algebra function: forwards to tdx.linalg, which the linalg branch builds',
    'pca_lowrank': 'a torch.* linear-algebra function: forwards to tdx.linalg, which the linalg branch builds',
    'pinverse': 'a torch.* linear-algebra function: forwards to tdx.linalg, which the linalg branch builds',
    'index_reduce.prod@mlx': 'MLX has no derivative for a multiplying scatter (scatter_prod)',
    '_unsafe_masked_index': "private aten op (torch internals), not part of torch's public API",
    '_unsafe_masked_index_put_accumulate': "private aten op (torch internals), not part of torch's public API",
    'chalf': 'TdxTypeError: chalf(): complex32 is not supported by tdx',
    'empty_strided': 'UnsupportedOpError: empty_strided(): tdx creates contiguous tensors only; stride (4,) is not the contiguous st',
    '_chunk_cat': "private aten op (torch internals), not part of torch's public API",
    'histogramdd': 'Unsupported: tdx has no histogramdd',
    'to_sparse': "AttributeError: 'Tensor' object has no attribute 'to_sparse'",
    'logdet': 'a torch.* linear-algebra function: forwards to tdx.linalg, which the linalg branch builds',
    'norm.nuc@mlx': 'MLX has no derivative for its SVD (nuclear norm gradient)',
    'native_dropout_backward': "private aten op (torch internals), not part of torch's public API",
    'grid_sampler_2d': "private aten op (torch internals), not part of torch's public API",
    'grid_sampler_3d': "private aten op (torch internals), not part of torch's public API",
    'hash_tensor': "private aten op (torch internals), not part of torch's public API",
    'nn.functional.ctc_loss': 'AssertionError: nn.functional.ctc_loss:function:float64: grad of input 0: 16000 of 16000 elements differ (rtol',
    'scatter_reduce.prod@mlx': 'MLX has no derivative for a multiplying scatter (scatter_prod)',
    '_segment_reduce.lengths': "private aten op (torch internals), not part of torch's public API",
    '_segment_reduce.offsets': "private aten op (torch internals), not part of torch's public API",
    'nn.functional.fractional_max_pool2d@mlx': 'max_unpool / fractional_max_pool not built yet',
    'nn.functional.fractional_max_pool3d@mlx': 'max_unpool / fractional_max_pool not built yet',
    'fft.hfft@mlx': 'tdx._errors.DtypeError: fft.hfft: float64 input needs complex128, which MLX cannot hold (its FFT computes in complex64 only); accepted on MLX: float32',
    'fft.hfft2@mlx': 'tdx._errors.DtypeError: fft.hfftn: float64 input needs complex128, which MLX cannot hold (its FFT computes in complex64 only); accepted on MLX: float3',
    'fft.hfftn@mlx': 'tdx._errors.DtypeError: fft.hfftn: float64 input needs complex128, which MLX cannot hold (its FFT computes in complex64 only); accepted on MLX: float3',
    'fft.irfft@mlx': 'tdx._errors.DtypeError: fft.irfft: float64 input needs complex128, which MLX cannot hold (its FFT computes in complex64 only); accepted on MLX: float3',
    'fft.irfft2@mlx': 'tdx._errors.DtypeError: fft.irfftn: float64 input needs complex128, which MLX cannot hold (its FFT computes in complex64 only); accepted on MLX: float',
    'fft.irfftn@mlx': 'tdx._errors.DtypeError: fft.irfftn: float64 input needs complex128, which MLX cannot hold (its FFT computes in complex64 only); accepted on MLX: float',
    'linalg.eig@mlx': 'AssertionError: linalg.eig:function:float32[0]: 4 of 5 elements differ (rtol=1e-05, atol=1e-05); first at (1,): got np.complex64(-1.0008476+0.4490519j',
    'linalg.eigvals@mlx': 'AssertionError: linalg.eigvals:function:float32: 4 of 5 elements differ (rtol=1e-05, atol=1e-05); first at (1,): got np.complex64(-1.0008476+0.4490519',
    'linalg.eigh@mlx': 'AssertionError: linalg.eigh:function:float32[1]: 5 of 25 elements differ (rtol=1e-05, atol=1e-05); first at (0, 3): got np.float32(-0.2112501), expect',
    'linalg.ldl_factor@mlx': 'tdx._errors.UnsupportedOpError: linalg.ldl_factor is not supported on MLX (MLX has no LDL^T kernel); it runs on torch devices',
    'linalg.ldl_factor_ex@mlx': "tdx._errors.TdxTypeError: MLXMatrixFunctions.linalg_ldl_factor() got an unexpected keyword argument 'check_errors'",
    'linalg.ldl_solve@mlx': 'tdx._errors.TdxTypeError: MLXMatrixFunctions.linalg_ldl_factor() takes 2 positional arguments but 4 positional arguments (and 1 keyword-only argument)',
    'linalg.lstsq@mlx': 'AssertionError: linalg.lstsq:function:float64: 3 differentiable outputs and 2 leaves, torch has 2 and 2',
    'linalg.norm.subgradients_at_zero@mlx': 'AssertionError: linalg.norm.subgradients_at_zero:function:float64: grad of input 0: 5 of 5 elements differ (rtol=1e-09, atol=1e-10); first at (0,): go',
    'linalg.vander@mlx': 'AssertionError: linalg.vander:function:float32: shape differs: got (2,), expected (1, 2)',
    'linalg.lu_factor@mlx': 'tdx._errors.TdxRuntimeError: [Primitive::vjp] Not implemented for LUF.',
    'linalg.lu_factor_ex@mlx': 'tdx._errors.TdxRuntimeError: [Primitive::vjp] Not implemented for LUF.',
    'linalg.lu@mlx': 'AssertionError: linalg.lu:function:float32[0]: 6 of 9 elements differ (rtol=1e-05, atol=1e-05); first at (0, 1): got np.float32(0.0), expected np.floa',
    'linalg.pinv.hermitian@mlx': 'AssertionError: linalg.pinv.hermitian:function:float32: 25 of 25 elements differ (rtol=1e-05, atol=1e-05); first at (0, 0): got np.float32(0.1657182),',
    'linalg.tensorsolve@mlx': 'tdx._errors.TdxTypeError: moveaxis(): incompatible function arguments. The following argument types are supported:',
    'linalg.det@mlx': "tdx._errors.UnsupportedOpError: torch.linalg.det of a matrix with a zero-size dimension is not supported on mlx:cpu (MLX's kernels cannot take it); go",
    'linalg.eigvalsh@mlx': "tdx._errors.UnsupportedOpError: torch.linalg.eigvalsh of a matrix with a zero-size dimension is not supported on mlx:cpu (MLX's kernels cannot take it",
    'linalg.slogdet@mlx': "tdx._errors.UnsupportedOpError: torch.linalg.slogdet of a matrix with a zero-size dimension is not supported on mlx:cpu (MLX's kernels cannot take it)",
    'linalg.inv@mlx': "tdx._errors.UnsupportedOpError: torch.linalg.inv of a matrix with a zero-size dimension is not supported on mlx:cpu (MLX's kernels cannot take it); go",
    'linalg.inv_ex@mlx': "tdx._errors.UnsupportedOpError: torch.linalg.inv_ex of a matrix with a zero-size dimension is not supported on mlx:cpu (MLX's kernels cannot take it);",
    'linalg.matrix_rank@mlx': "tdx._errors.UnsupportedOpError: torch.linalg.matrix_rank of a matrix with a zero-size dimension is not supported on mlx:cpu (MLX's kernels cannot take",
    'linalg.matrix_rank.hermitian@mlx': "tdx._errors.UnsupportedOpError: torch.linalg.matrix_rank of a matrix with a zero-size dimension is not supported on mlx:cpu (MLX's kernels cannot take",
    'linalg.svd@mlx': "tdx._errors.UnsupportedOpError: torch.linalg.svd of a matrix with a zero-size dimension is not supported on mlx:cpu (MLX's kernels cannot take it); go",
}

_DB = O.load_db()


def expected_failure(op, device: str):
    """The reason entry ``op`` is expected to fail on ``device``, or None."""
    eid = O.entry_id(op)
    if O.namespace_missing(op):
        return "namespace not built"
    kind = device.split(":")[0]
    for key in (eid, f"{eid}@{kind}"):
        if key in EXPECTED_FAILURES:
            return EXPECTED_FAILURES[key]
    return None


def _run(op, device):
    try:
        O.run_entry(op, device, DTYPES, SAMPLES, variants=True)
    except O.NotApplicable as err:
        pytest.skip(str(err))
    if op.supports_autograd and op.name not in O.RANDOM:
        for s in O.samples(op, "float64" if O.supported(op, "float64", device) else "float32", GRAD_SAMPLES,
                           requires_grad=True):
            dt = str(s.input.dtype).rsplit(".", 1)[-1] if hasattr(s.input, "dtype") else "float32"
            O.check_sample(op, O.resolve(op), s, device, dt, "function", grad=True)


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("op", _DB, ids=[O.entry_id(op) for op in _DB])
def test_opinfo(op, device):
    reason = expected_failure(op, device)
    if reason is None:
        _run(op, device)
        return
    try:
        _run(op, device)
    except Exception:  # noqa: BLE001 - any failure is the expected one
        pytest.xfail(reason)
    if reason == "namespace not built":
        return
    pytest.fail(f"{O.entry_id(op)} passes on {device}: remove it from EXPECTED_FAILURES ({reason})")


def _share(devices, grad: bool, verbose: bool):
    for device in devices:
        passed, total, n_a, fails = collections.Counter(), collections.Counter(), 0, []
        for op in _DB:
            if grad and (not op.supports_autograd or op.name in O.RANDOM):
                continue
            scope = "other" if op.name.split(".")[0] in O.OTHER_NAMESPACES else "mine"
            try:
                if grad:
                    O.run_entry(op, device, ("float32",), 8, grad=True)
                else:
                    O.run_entry(op, device, DTYPES, 8)
                passed[scope] += 1
            except O.NotApplicable:
                n_a += 1
                continue
            except Exception as err:  # noqa: BLE001 - a figure, every failure counts
                fails.append((O.entry_id(op), f"{type(err).__name__}: {err}"[:160]))
            total[scope] += 1
        kind = "gradients" if grad else "function variants"
        p, t = sum(passed.values()), sum(total.values())
        print(f"{device:8} {kind:18} all {p}/{t} = {100 * p / t:.1f}%;  outside {'/'.join(O.OTHER_NAMESPACES)}: "
              f"{passed['mine']}/{total['mine']} = {100 * passed['mine'] / total['mine']:.1f}%  "
              f"({n_a} entries not applicable on CPU)", flush=True)
        if verbose:
            for eid, why in fails:
                print(f"    {eid}: {why}")


if __name__ == "__main__":
    import warnings

    warnings.simplefilter("ignore")
    args = [a for a in sys.argv[1:] if not a.startswith("-")]
    devs = args or ["cpu", "mlx:cpu"]
    _share(devs, grad=False, verbose="-v" in sys.argv)
    _share(devs, grad=True, verbose="-v" in sys.argv)
