"""Shared helpers: build a tdx tensor on a device and the torch-on-CPU oracle from one array."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import tdx
from tdx.testing import assert_close

BUILTINS = (IndexError, TypeError, ValueError, RuntimeError)


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
