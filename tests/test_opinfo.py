"""torch's OpInfo database (``op_db``) as the oracle of the whole op surface, on every device.

Each ``op_db`` entry (702 in torch 2.13) is one test per device: torch's sample inputs go through
tdx and through torch on CPU (see :mod:`opinfo_oracle`), comparing values, dtype and shape, the
gradients of the inputs for entries that support autograd, and the method and in-place variants.

Sampling, so the module stays fast (well under 90 s with ``-n 2``): per entry, the dtypes float32,
int64 and bool (plus float64 for the gradient check), the first ``SAMPLES`` sample inputs per dtype,
and the gradient of the first ``GRAD_SAMPLES`` float64 samples. ``TDX_OPINFO_SAMPLES`` raises the
sample count for a deeper run.

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

SAMPLES = int(os.environ.get("TDX_OPINFO_SAMPLES", "2"))
GRAD_SAMPLES = 1
DTYPES = ("float32", "int64", "bool")

# entry -> why it fails; "entry@mlx" (or "@cpu") applies to that kind of device only
EXPECTED_FAILURES: dict = {
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
