"""Parity checks of tdx against a torch-on-CPU oracle, with tdx's own per-dtype tolerances.

This is what tdx's suite (and a project testing its code on every device) compares with:
``assert_close(actual, expected)`` accepts a tdx tensor against a torch tensor, a NumPy array, an
MLX array or a scalar, and checks shape, dtype and values with the tolerances of
:data:`TOLERANCE_TABLE`, which are as tight as each kind of computation allows (one float32
operation within 1e-6). It is not ``torch.testing``: that is :mod:`tdx.testing` itself, torch's
``assert_close`` with torch's tolerances and messages. Importing this module imports no framework,
and it must never loosen a tolerance to make a comparison pass.
"""

from __future__ import annotations

import numpy as np

from .. import _dtypes as D

# (rtol, atol) per kind of computation and dtype: the one table every parity test reads. Each kind is
# as tight as its arithmetic allows against torch on CPU:
# - "elementwise": one correctly rounded (or 1-2 ulp) operation: float32 1e-6 relative.
# - "reduction": sums, norms, logsumexp, transcendental chains: summation order differs between
#   frameworks, so a few ulps times log2(n).
# - "matmul": dot products of length k, blocked differently by each BLAS (and attention).
# - "gradient": a backward pass chains several roundings (forward, cotangent, product rule).
# - "module": nn layers: a forward of matmuls, reductions and activations, and its backward.
# - "recurrence": RNN/transformer stacks and iterated schemes (CTC's recursion, spectral norm's
#   power iteration, optimizers over many steps): errors compound over the steps.
# Integers and bools are always exact. float16/bfloat16 carry their own rounding (about 2**-11, 2**-8).
TOLERANCE_TABLE = {
    "elementwise": {"float16": (1e-3, 1e-5), "bfloat16": (8e-3, 1e-5), "float32": (1e-6, 1e-6),
                    "float64": (1e-12, 1e-12), "complex64": (1e-6, 1e-6), "complex128": (1e-12, 1e-12)},
    "reduction": {"float16": (4e-3, 2e-3), "bfloat16": (3e-2, 2e-2), "float32": (2e-5, 2e-5),
                  "float64": (1e-10, 1e-10), "complex64": (2e-5, 2e-5), "complex128": (1e-10, 1e-10)},
    "matmul": {"float16": (1e-2, 1e-2), "bfloat16": (1e-2, 1e-2), "float32": (1e-5, 1e-5),
               "float64": (1e-10, 1e-10)},
    "gradient": {"float16": (2e-2, 2e-2), "bfloat16": (8e-2, 8e-2), "float32": (1e-4, 1e-4),
                 "float64": (1e-9, 1e-9)},
    "module": {"float32": (1e-5, 1e-6), "float64": (1e-10, 1e-12)},
    "recurrence": {"float32": (1e-5, 1e-5), "float64": (1e-10, 1e-10)},
}
# the default of :func:`assert_close`: one operation
TOLERANCES = TOLERANCE_TABLE["elementwise"]


def _as_numpy(x):
    """(float64-or-exact NumPy array, tdx dtype name or None) for any supported value."""
    from .._tensor.tensor import Tensor

    if isinstance(x, Tensor):
        return np.asarray(x._ex.host_numpy(x._n)), x.dtype.name
    mod = type(x).__module__
    if mod.startswith("torch"):
        name = str(x.dtype).rsplit(".", 1)[-1]
        t = x.detach().cpu()
        if t._is_zerotensor():  # torch's gradient of a constant-output op (sign, floor...)
            t = t.new_zeros(t.shape)
        if name == "bfloat16":
            t = t.float()
        return t.resolve_conj().numpy(), name
    if mod.startswith("mlx"):
        name = str(x.dtype).rsplit(".", 1)[-1]
        if name == "bfloat16":
            import mlx.core as mx

            x = x.astype(mx.float32)
        return np.array(x), name
    arr = np.asarray(x)
    return arr, None


def assert_close(actual, expected, *, rtol=None, atol=None, check_dtype=True, equal_nan=True, msg=""):
    """Assert ``actual`` matches ``expected`` in shape, dtype and values.

    Args:
        actual: a tdx tensor (or anything :func:`numpy.asarray` takes).
        expected: the oracle: usually a torch tensor on CPU.
        rtol: overrides the per-dtype default of :data:`TOLERANCES` (exact for ints/bool).
        atol: likewise for the absolute tolerance.
        check_dtype: compare tdx dtype names too.
        equal_nan: NaNs in the same places compare equal.
        msg: prefix for the failure message.

    Raises:
        AssertionError: naming what differs.
    """
    a, adt = _as_numpy(actual)
    e, edt = _as_numpy(expected)
    where = f"{msg}: " if msg else ""
    if check_dtype and adt and edt and adt != edt:
        raise AssertionError(f"{where}dtype differs: got {adt}, expected {edt}")
    if a.shape != e.shape:
        raise AssertionError(f"{where}shape differs: got {a.shape}, expected {e.shape}")
    name = edt or adt or ""
    default = TOLERANCES.get(name, (0.0, 0.0))
    rtol = default[0] if rtol is None else rtol
    atol = default[1] if atol is None else atol
    if a.dtype.kind in "biu" and e.dtype.kind in "biu" and rtol == atol == 0:
        bad = a != e
    else:
        ok = np.isclose(a.astype(np.complex128 if "c" in (a.dtype.kind + e.dtype.kind) else np.float64),
                        e.astype(np.complex128 if "c" in (a.dtype.kind + e.dtype.kind) else np.float64),
                        rtol=rtol, atol=atol, equal_nan=equal_nan)
        bad = ~ok
    if np.any(bad):
        idx = tuple(int(i[0]) for i in np.nonzero(bad)) if a.ndim else ()
        raise AssertionError(f"{where}{int(np.sum(bad))} of {a.size} elements differ (rtol={rtol}, atol={atol}); "
                             f"first at {idx}: got {a[idx]!r}, expected {e[idx]!r}")


def tolerance(dtype, kind: str = "elementwise") -> tuple:
    """(rtol, atol) for ``dtype`` (a tdx dtype or name) in computations of ``kind``.

    Args:
        dtype: the result's dtype (a tdx dtype or its name).
        kind: a key of :data:`TOLERANCE_TABLE` ("elementwise", "reduction", "matmul", "gradient",
            "module", "recurrence").

    Returns:
        ``(rtol, atol)``; ``(0.0, 0.0)`` (exact) for integers and bools.

    Raises:
        KeyError: for an unknown ``kind``, naming the accepted ones.
    """
    if kind not in TOLERANCE_TABLE:
        raise KeyError(f"unknown tolerance kind {kind!r}; accepted: {', '.join(TOLERANCE_TABLE)}")
    name = dtype if isinstance(dtype, str) else D.as_dtype(dtype).name
    return TOLERANCE_TABLE[kind].get(name, (0.0, 0.0))


__all__ = ["assert_close", "tolerance", "TOLERANCES", "TOLERANCE_TABLE"]
