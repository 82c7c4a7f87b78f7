"""The suite's device parametrization and shared helpers: build a tdx tensor on a device and the torch-on-CPU oracle from one array."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import strategies as st

import tdx
from tdx.testing import assert_close
from tdx.testing.plugin import parametrize_devices

BUILTINS = (IndexError, TypeError, ValueError, RuntimeError)


def pytest_generate_tests(metafunc):
    """tdx's own suite: every test taking ``device`` runs on every tdx device (the plugin is opt-in)."""
    parametrize_devices(metafunc, "device")


def skip_value_checked(device, what: str) -> None:
    """Skip a bad-input case on a device whose kernels check such values (``caps.device_side_checks``:
    torch on CUDA), where the call raises nothing and the device-side assert ends the process's use of
    the device, as with torch itself."""
    if tdx.backends.get(device).caps.device_side_checks:
        pytest.skip(f"{device} checks {what} inside the kernel, as torch does there: a device-side assert, "
                    "not an error at the call")


def pair(arr, device, dtype):
    """(tdx tensor on ``device``, torch CPU tensor) holding ``arr`` as ``dtype`` (a name)."""
    arr = np.asarray(arr)
    t = torch.tensor(arr).to(getattr(torch, dtype))
    x = tdx.tensor(arr, device=device).to(getattr(tdx, dtype if dtype != "bool" else "bool"))
    return x, t


def sample(shape, dtype, seed=0, low=-4, high=4):
    """Deterministic values for ``shape``: ints in [low, high), floats with fractions, bools."""
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.integers(0, 2, size=shape).astype(bool)
    if dtype.startswith(("int", "uint")):
        lo = 0 if dtype == "uint8" else low
        return rng.integers(lo, high, size=shape)
    return rng.uniform(low, high, size=shape).round(3)


def check(tdx_fn, torch_fn, msg="", **tol):
    """Run both; if torch raises, tdx must raise a TdxError that is also the same builtin."""
    try:
        expected = torch_fn()
    except BUILTINS as err:
        kind = next(b for b in BUILTINS if isinstance(err, b))
        with pytest.raises(kind) as info:
            tdx_fn()
        assert isinstance(info.value, tdx.TdxError), f"{msg}: raised untyped {info.value!r}"
        return None
    got = tdx_fn()
    if isinstance(expected, (tuple, list)):
        assert len(got) == len(expected), msg
        for g, e in zip(got, expected):
            assert_close(g, e, msg=msg, **tol)
    else:
        assert_close(got, expected, msg=msg, **tol)
    return got


# hypothesis strategies shared by the property tests
shapes = st.lists(st.integers(0, 4), min_size=0, max_size=3).map(tuple)  # 0-d and 0-size included
nonempty = st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple)
seeds = st.integers(0, 2 ** 16)


@st.composite
def broadcast_pair(draw):
    """Two shapes that broadcast: dims of one drawn as 1 or the other's size, some dropped."""
    a = draw(shapes)
    b = [draw(st.sampled_from([s, 1])) for s in a]
    b = tuple(b[draw(st.integers(0, len(b))):])
    return (a, b) if draw(st.booleans()) else (b, a)


def dim_of(draw, shape):
    """A valid dim of ``shape`` (0-d tensors take -1 and 0), negative ones included."""
    n = max(len(shape), 1)
    return draw(st.integers(-n, n - 1))
