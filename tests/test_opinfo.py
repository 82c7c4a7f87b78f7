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
    'stft': 'Unsupported: tdx has no stft',
    'gradient': 'Unsupported: tdx has no gradient',
    '_softmax_backward_data': "private aten op (torch internals), not part of torch's public API",
    'as_strided_scatter@mlx': "torch's own gradient of self is wrong (as_strided_scatter_backward gives the written slice grad and zeros elsewhere; 'Autograd formula looks wrong', pytorch/pytorch#77128 review); tdx's tape gives the true one (grad, 0 where src is written)",
    'native_batch_norm': "private aten op (torch internals), not part of torch's public API",
    '_native_batch_norm_legit': "private aten op (torch internals), not part of torch's public API",
    '_batch_norm_with_update': "private aten op (torch internals), not part of torch's public API",
    '_upsample_bilinear2d_aa': 'nn.functional.interpolate/upsample not built yet',
    'max_pool2d_with_indices_backward': "private aten op (torch internals), not part of torch's public API",
    'torch.ops.aten._safe_softmax.default': "private aten op (torch internals), not part of torch's public API",
    'slice': "private aten op (torch internals), not part of torch's public API",
    '_unsafe_masked_index': "private aten op (torch internals), not part of torch's public API",
    '_unsafe_masked_index_put_accumulate': "private aten op (torch internals), not part of torch's public API",
    'chalf': 'TdxTypeError: chalf(): complex32 is not supported by tdx',
    'empty_strided': 'UnsupportedOpError: empty_strided(): tdx creates contiguous tensors only; stride (4,) is not the contiguous st',
    '_chunk_cat': "private aten op (torch internals), not part of torch's public API",
    'histogramdd': 'Unsupported: tdx has no histogramdd',
    'to_sparse': "AttributeError: 'Tensor' object has no attribute 'to_sparse'",
    'native_dropout_backward': "private aten op (torch internals), not part of torch's public API",
    'grid_sampler_2d': "private aten op (torch internals), not part of torch's public API",
    'grid_sampler_3d': "private aten op (torch internals), not part of torch's public API",
    'hash_tensor': "private aten op (torch internals), not part of torch's public API",
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
