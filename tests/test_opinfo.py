"""torch's OpInfo database (``op_db``) as the oracle of the whole op surface, on every device.

Each ``op_db`` entry (702 in torch 2.13) is one test per device: torch's sample inputs go through
tdx and through torch on the device's torch twin (CPU for MLX; cuda itself, whose kernels round, draw,
break ties and refuse dtypes otherwise than CPU's; see :mod:`opinfo_oracle`), comparing values, dtype and
shape, the gradients of the inputs for entries that support autograd, and the method and in-place variants.
Sampling and the dtypes sampled stay CPU's: a dtype torch's cuda kernel refuses must be refused by tdx there.

Sampling, so the module stays fast (about 70 s of CPU per device): per entry, the first 2 float32
sample inputs and the first int64 and bool one, the method and in-place variants on the first
sample of each dtype, and the gradient of the first float64 sample (float32 where the executor has
no float64). ``TDX_OPINFO_SAMPLES=8`` takes 8 float32 and 4 int64/bool samples for a deeper run.

:data:`EXPECTED_FAILURES` is the one list of what does not pass yet (entry -> the exception class,
a fragment of its message and the reason; an ``@mlx`` suffix limits an entry to MLX devices); it
shrinks as ops land. An entry listed there that passes fails the test (strict), and so does one that
fails another way (a new regression in a listed op), so the list cannot go stale. Entries of namespaces not
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
import tdx

if __name__ != "__main__":
    pytest.importorskip("expecttest", reason="torch's OpInfo database needs expecttest (the dev extra)")

_N = int(os.environ.get("TDX_OPINFO_SAMPLES", "2"))
SAMPLES = {"float32": _N, "int64": max(1, _N // 2), "bool": max(1, _N // 2)}
GRAD_SAMPLES = 1
DTYPES = ("float32", "int64", "bool")

PRIVATE = "private aten op (torch internals), not part of torch's public API"
FFT64 = "float64 input needs complex128, which MLX cannot hold (its FFT computes in complex64 only)"


def _missing(name: str, why: str) -> tuple:
    """An entry tdx has no callable for: the oracle's Unsupported naming it."""
    return O.Unsupported, f"tdx has no {name}", why


# entry -> (the exception it fails with, a fragment of its message, why); "entry@mlx" (or "@cpu")
# applies to that kind of device only. A failure of another class or message fails the test.
EXPECTED_FAILURES: dict = {
    '_softmax_backward_data': _missing("_softmax_backward_data", PRIVATE),
    'as_strided_scatter@mlx': (AssertionError, "grad of input 0", "torch's own gradient of self is wrong (as_strided_scatter_backward gives the written slice grad and zeros elsewhere; 'Autograd formula looks wrong', pytorch/pytorch#77128 review); tdx's tape gives the true one (grad, 0 where src is written)"),
    'native_batch_norm': _missing("native_batch_norm", PRIVATE),
    '_native_batch_norm_legit': _missing("_native_batch_norm_legit", PRIVATE),
    '_batch_norm_with_update': _missing("_batch_norm_with_update", PRIVATE),
    '_upsample_bilinear2d_aa': _missing("_upsample_bilinear2d_aa", "antialiased bilinear upsampling not built yet"),
    'max_pool2d_with_indices_backward': (AttributeError, "ops", PRIVATE),
    'torch.ops.aten._safe_softmax.default': _missing("torch.ops.aten._safe_softmax.default", PRIVATE),
    'slice': _missing("slice", PRIVATE),
    '_unsafe_masked_index': _missing("_unsafe_masked_index", PRIVATE),
    '_unsafe_masked_index_put_accumulate': _missing("_unsafe_masked_index_put_accumulate", PRIVATE),
    'chalf': (tdx.TdxTypeError, "complex32 is not supported by tdx", "tdx has no complex32"),
    '_chunk_cat': _missing("_chunk_cat", PRIVATE),
    'histogramdd': _missing("histogramdd", "tdx has no histogramdd"),
    'to_sparse': (tdx.UnsupportedOpError, "Tensor.to_sparse is not supported by tdx", "tdx has no sparse layouts"),
    'native_dropout_backward': _missing("native_dropout_backward", PRIVATE),
    'grid_sampler_2d': _missing("grid_sampler_2d", PRIVATE),
    'grid_sampler_3d': _missing("grid_sampler_3d", PRIVATE),
    'hash_tensor': _missing("hash_tensor", PRIVATE),
    '_segment_reduce.lengths': _missing("_segment_reduce", PRIVATE),
    '_segment_reduce.offsets': _missing("_segment_reduce", PRIVATE),
    'nn.functional.fractional_max_pool2d@mlx': (tdx.UnsupportedOpError, "fractional_max_pool2d is not supported on mlx",
                                                "fractional max pooling runs on torch executors only"),
    'nn.functional.fractional_max_pool3d@mlx': (tdx.UnsupportedOpError, "fractional_max_pool3d is not supported on mlx",
                                                "fractional max pooling runs on torch executors only"),
    'fft.hfft@mlx': (tdx.DtypeError, "fft.hfft: " + FFT64, FFT64),
    'fft.hfft2@mlx': (tdx.DtypeError, "fft.hfftn: " + FFT64, FFT64),
    'fft.hfftn@mlx': (tdx.DtypeError, "fft.hfftn: " + FFT64, FFT64),
    'fft.irfft@mlx': (tdx.DtypeError, "fft.irfft: " + FFT64, FFT64),
    'fft.irfft2@mlx': (tdx.DtypeError, "fft.irfftn: " + FFT64, FFT64),
    'fft.irfftn@mlx': (tdx.DtypeError, "fft.irfftn: " + FFT64, FFT64),
}

_DB = O.load_db()


def expected_failure(op, device: str):
    """``(exception class, message fragment, why)`` entry ``op`` is expected to fail with on ``device``,
    or None."""
    eid = O.entry_id(op)
    if O.namespace_missing(op):
        return _missing(op.name.split(".")[0] + ".", "namespace not built")
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
    expected = expected_failure(op, device)
    if expected is None:
        _run(op, device)
        return
    kind, fragment, why = expected
    try:
        _run(op, device)
    except Exception as err:  # noqa: BLE001 - checked: only the pinned failure is the expected one
        if isinstance(err, kind) and fragment in str(err):
            pytest.xfail(why)
        raise AssertionError(f"{O.entry_id(op)} on {device} was expected to fail with {kind.__name__} "
                             f"({fragment!r}: {why}) but failed with {type(err).__name__}: {err}") from err
    if why == "namespace not built":
        return
    pytest.fail(f"{O.entry_id(op)} passes on {device}: remove it from EXPECTED_FAILURES ({why})")


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
