"""Property tests against torch on CPU, on every device: elementwise division-like binary ops (floor_divide,
remainder, fmod, pow, div in each rounding mode), reductions and scans with every ``dtype=``, and scalar writes
(every write form, every dtype, values in and out of range), over all dtypes with NaN, infinities and signed zeros.

Bounded for CI: a fixed example budget, derandomized, no deadline. Values are kept where torch's own kernels
agree with themselves (torch's vectorized float32 ``fmod`` gives NaN where the quotient overflows float32 and
the exact remainder elsewhere, depending on the tensor's length), so quotients stay far from overflow.
"""

from __future__ import annotations

import math
import os
import warnings

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tdx
from tdx.testing.parity import assert_close, tolerance

from conftest import BUILTINS, torch_twin

_EXAMPLES = int(os.environ.get("TDX_HYPOTHESIS_EXAMPLES", "0"))
# the same examples every run (a green suite stays green); TDX_HYPOTHESIS_EXAMPLES=N explores N fresh ones
_SETTINGS = settings(max_examples=_EXAMPLES or 25, deadline=None, derandomize=not _EXAMPLES,
                     suppress_health_check=list(HealthCheck))

FLOATS = ("float16", "bfloat16", "float32", "float64")
INTS = ("uint8", "int8", "int16", "int32", "int64")
SPECIAL = (0.0, -0.0, math.inf, -math.inf, math.nan)
_FLOAT_VALUES = st.one_of(st.sampled_from(SPECIAL), st.sampled_from((0.1, -0.1, 1.5, -1.5, 2.5, 7.0, -7.0)),
                          st.floats(-1e4, 1e4, allow_nan=False, width=32).map(lambda v: round(v, 3)))


def _values(dtype):
    if dtype in FLOATS:
        return _FLOAT_VALUES
    if dtype == "uint8":
        return st.integers(0, 255)
    return st.integers(-120, 120)


@st.composite
def operands(draw, dtypes=FLOATS + INTS):
    """(dtype, a, b): two equal-length lists of values of one dtype."""
    dtype = draw(st.sampled_from(dtypes))
    n = draw(st.integers(1, 12))
    vals = st.lists(_values(dtype), min_size=n, max_size=n)
    return dtype, draw(vals), draw(vals)


def _pair(values, dtype, device, oracle="cpu"):
    """(tdx tensor on ``device``, torch tensor on ``oracle``) holding ``values`` as ``dtype``."""
    t = torch.tensor(values, dtype=torch.float64 if dtype in FLOATS else torch.int64).to(getattr(torch, dtype))
    t = t.to(oracle)
    wide = tdx.float64 if dtype in FLOATS else tdx.int64
    x = tdx.tensor(t.to(torch.float64 if dtype in FLOATS else torch.int64).tolist(), dtype=wide, device=device)
    return x.to(getattr(tdx, dtype)), t


def _outcome(fn):
    try:
        return fn(), None
    except BUILTINS as err:
        return None, err


def _compare(got_fn, expected_fn, exact: bool, kind: str = "elementwise"):
    """Both raise the same builtin (tdx's typed), or agree: bit for bit (with the sign of zero) when ``exact``.
    ``expected_fn`` may be a tuple of acceptable oracles (see :func:`_opmath`)."""
    if isinstance(expected_fn, tuple):
        failures = []
        for candidate in expected_fn:
            try:
                return _compare(got_fn, candidate, exact, kind)
            except AssertionError as err:
                failures.append(err)
        raise failures[0]
    expected, err = _outcome(expected_fn)
    if err is not None:
        kind_ = next(b for b in BUILTINS if isinstance(err, b))
        with pytest.raises(kind_) as info:
            got_fn()
        assert isinstance(info.value, tdx.TdxError), info.value
        return
    got = got_fn()
    assert str(got.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1], (got.dtype, expected.dtype)
    if not exact:
        rtol, atol = tolerance(expected.dtype.__str__().split(".")[-1], kind)
        assert_close(got, expected, rtol=rtol, atol=atol)
        return
    g = torch.tensor(np.asarray(got.to(tdx.float64 if got.dtype.is_floating_point else tdx.int64).cpu().numpy()))
    e = expected.cpu().to(torch.float64 if expected.dtype.is_floating_point else torch.int64)
    assert g.shape == e.shape
    if e.dtype.is_floating_point:
        assert torch.equal(g.isnan(), e.isnan()), (g, e)
        keep = ~e.isnan()
        g, e = g[keep], e[keep]
        assert torch.equal(torch.signbit(g), torch.signbit(e)), (g, e)
    assert torch.equal(g, e), (g, e)


_DIVISIONS = {
    "floor_divide": lambda m, a, b: m.floor_divide(a, b),
    "//": lambda m, a, b: a // b,
    "remainder": lambda m, a, b: m.remainder(a, b),
    "fmod": lambda m, a, b: m.fmod(a, b),
    "div_floor": lambda m, a, b: m.div(a, b, rounding_mode="floor"),
    "div_trunc": lambda m, a, b: m.div(a, b, rounding_mode="trunc"),
}


@_SETTINGS
@given(ops=operands(), op=st.sampled_from(sorted(_DIVISIONS)), scalar=st.booleans())
@pytest.mark.float64
def test_division_family_matches_torch(device, ops, op, scalar):
    dtype, a, b = ops
    # the oracle runs where tdx's kernels do: an integer divided by 0 raises on torch's CPU, not on CUDA
    twin = torch_twin(device)
    (x, t), (y, u) = _pair(a, dtype, device, twin), _pair(b, dtype, device, twin)
    fn = _DIVISIONS[op]
    if scalar:  # a Python scalar divisor: torch computes float16/bfloat16 with it in float32
        s = b[0] if dtype in FLOATS else int(b[0])
        _compare(lambda: fn(tdx, x, s), _opmath(lambda a, b: fn(torch, a, b), t, s), exact=True)
    else:
        _compare(lambda: fn(tdx, x, y), _opmath(lambda a, b: fn(torch, a, b), t, u), exact=True)


def _opmath(fn, t, u):
    """torch's result of ``fn(t, u)``; for float16/bfloat16, computed in float32 and rounded once.

    torch's CPU kernels are not consistent there: the vectorized body and the scalar tail of one loop
    round differently (``fmod`` takes a Python scalar in float32 in the body and in half precision in the
    tail; ``div(rounding_mode="trunc")`` rounds the quotient to half precision in the body only), so an
    element's result depends on its position. tdx computes in float32 and rounds once, torch's opmath rule;
    either result is accepted."""
    if t.dtype not in (torch.float16, torch.bfloat16):
        return lambda: fn(t, u)
    return (lambda: fn(t, u),
            lambda: fn(t.float(), u.float() if isinstance(u, torch.Tensor) else u).to(t.dtype))


@_SETTINGS
@given(ops=operands(), rounding=st.sampled_from([None, "trunc", "floor"]))
@pytest.mark.float64
def test_div_matches_torch(device, ops, rounding):
    dtype, a, b = ops
    twin = torch_twin(device)  # an integer divided by 0 raises on torch's CPU, not on CUDA
    (x, t), (y, u) = _pair(a, dtype, device, twin), _pair(b, dtype, device, twin)
    _compare(lambda: tdx.div(x, y, rounding_mode=rounding),
             _opmath(lambda a, b: torch.div(a, b, rounding_mode=rounding), t, u), exact=rounding is not None)


@_SETTINGS
@given(ops=operands(FLOATS), exponent=st.one_of(st.sampled_from((0, 1, 2, 3, -1, 0.5, -0.5, 0.0, -0.0, 2.5)),
                                                  st.none()))
@pytest.mark.float64
def test_pow_matches_torch(device, ops, exponent):
    dtype, a, b = ops
    (x, t), (y, u) = _pair(a, dtype, device), _pair([v if math.isnan(v) or abs(v) < 8 else 2.0 for v in b],
                                                    dtype, device)
    if exponent is None:
        _compare(lambda: x ** y, lambda: t ** u, exact=False)
    else:
        _compare(lambda: x ** exponent, lambda: t ** exponent, exact=False)


@_SETTINGS
@given(dtype=st.sampled_from(INTS), a=st.lists(st.integers(-6, 6), min_size=1, max_size=8),
       e=st.integers(-2, 4))
def test_integer_pow_matches_torch(device, dtype, a, e):
    x, t = _pair([v % 256 if dtype == "uint8" else v for v in a], dtype, device)
    _compare(lambda: x ** e, lambda: t ** e, exact=True)


_REDUCTIONS = {
    "sum": lambda m, x, d, dt: x.sum(**_kw(d, dt)),
    "nansum": lambda m, x, d, dt: x.nansum(**_kw(d, dt)),
    "mean": lambda m, x, d, dt: x.mean(**_kw(d, dt)),
    "prod": lambda m, x, d, dt: x.prod(**_kw(d, dt)),
    "cumsum": lambda m, x, d, dt: x.cumsum(0 if d is None else d, **_kw(None, dt)),
    "cumprod": lambda m, x, d, dt: x.cumprod(0 if d is None else d, **_kw(None, dt)),
    "std": lambda m, x, d, dt: x.std(**_kw(d, None)),
    "var": lambda m, x, d, dt: x.var(**_kw(d, None)),
}


def _kw(dim, dtype):
    kw = {} if dim is None else {"dim": dim}
    if dtype is not None:
        kw["dtype"] = dtype
    return kw


@_SETTINGS
@given(ops=operands(), op=st.sampled_from(sorted(_REDUCTIONS)), dim=st.sampled_from([None, 0, 1]),
       out=st.sampled_from((None,) + FLOATS + INTS))
@pytest.mark.float64
def test_reductions_match_torch(device, ops, op, dim, out):
    dtype, a, b = ops
    if op in ("prod", "cumprod"):  # products of small factors: in range of every dtype's accumulator
        a = [v if isinstance(v, int) or math.isnan(v) or math.isinf(v) else max(-3.0, min(3.0, v)) for v in a]
        a = [max(-3, min(3, v)) if isinstance(v, int) else v for v in a]
    if out in INTS and dtype in FLOATS:  # a float out of an integer type's range converts undefined (torch: garbage)
        low = 0 if out == "uint8" else -100
        a = [min(100.0, max(low, v)) if math.isfinite(v) else 0.0 for v in a]
    rows = [a, a[::-1]]
    t = torch.tensor(rows, dtype=torch.float64 if dtype in FLOATS else torch.int64).to(getattr(torch, dtype))
    wide = tdx.float64 if dtype in FLOATS else tdx.int64
    x = tdx.tensor(t.to(torch.float64 if dtype in FLOATS else torch.int64).tolist(), dtype=wide, device=device)
    x = x.to(getattr(tdx, dtype))
    fn = _REDUCTIONS[op]
    t_out = None if out is None else getattr(torch, out)
    x_out = None if out is None else getattr(tdx, out)
    exact = (out or dtype) in INTS and dtype in INTS
    _compare(lambda: fn(tdx, x, dim, x_out), lambda: fn(torch, t, dim, t_out), exact=exact, kind="reduction")


_WRITES = {
    "index": lambda m, x, v, kw: x.__setitem__(0, v),
    "slice": lambda m, x, v, kw: x.__setitem__(slice(1, None), v),
    "mask": lambda m, x, v, kw: x.__setitem__(m.tensor([True, False, True], **kw), v),
    "advanced": lambda m, x, v, kw: x.__setitem__(m.tensor([2, 0], **kw), v),
    "fill_": lambda m, x, v, kw: x.fill_(v),
    "masked_fill_": lambda m, x, v, kw: x.masked_fill_(m.tensor([False, True, True], **kw), v),
    "full": lambda m, x, v, kw: x.copy_(m.full((3,), v, dtype=x.dtype, **kw)),
    "tensor": lambda m, x, v, kw: x.copy_(m.tensor([v, v, v], dtype=x.dtype, **kw)),
}
_SCALARS = st.one_of(st.sampled_from((2 ** 40, 2 ** 31, -2 ** 31 - 1, 300, 256, 255, -1, -128, -129, -255, -256,
                                      1e10, 1e39, 70000.0, 65504.0, 255.5, -0.5, 1.5, math.nan, math.inf, -math.inf,
                                      -0.0, True, False, 1 + 2j, 3 + 0j)),
                     st.integers(-2 ** 63, 2 ** 63 - 1), st.floats(-1e40, 1e40))


@_SETTINGS
@given(dtype=st.sampled_from(("bool",) + FLOATS + INTS), write=st.sampled_from(sorted(_WRITES)), value=_SCALARS)
@pytest.mark.float64
def test_scalar_writes_match_torch(device, dtype, write, value):
    def run(mod, **kw):
        x = mod.zeros(3, dtype=getattr(mod, dtype), **kw)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _WRITES[write](mod, x, value, kw)
        return x

    expected, err = _outcome(lambda: run(torch))
    if err is not None:
        kind = next(b for b in BUILTINS if isinstance(err, b))
        with pytest.raises(kind) as info:
            run(tdx, device=device)
        assert isinstance(info.value, tdx.TdxError), info.value
        if "without overflow" in str(err):
            assert str(info.value) == str(err)
        return
    got = run(tdx, device=device)
    assert_close(got, expected, rtol=0, atol=0)
