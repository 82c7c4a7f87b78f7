"""``tdx.testing`` is ``torch.testing``: the same verdicts, messages and error classes as torch's on the same
inputs, on every device, with torch's files (where torch is installed) and with tdx's stand-in without torch;
``make_tensor`` draws torch's values from the same seed."""

from __future__ import annotations

import contextlib
import math
import subprocess
import sys

import numpy as np
import pytest
import torch

import tdx
import tdx.testing
from conftest import torch_twin
from tdx import _dtypes as D
from tdx.testing import standalone
from tdx.testing.parity import assert_close as parity_close

# torch.testing's default (rtol, atol), the documented table
TORCH_TOLERANCES = {"float16": (1e-3, 1e-5), "bfloat16": (1.6e-2, 1e-5), "float32": (1.3e-6, 1e-5),
                    "float64": (1e-7, 1e-7), "complex64": (1.3e-6, 1e-5), "complex128": (1e-7, 1e-7)}
IMPLEMENTATIONS = {"torch_files": lambda: tdx.testing, "standalone": lambda: standalone}


@pytest.fixture(params=sorted(IMPLEMENTATIONS))
def impl(request):
    """tdx.testing as it runs with torch installed, and its stand-in for an installation without torch."""
    return IMPLEMENTATIONS[request.param]()


@pytest.fixture(autouse=True)
def torch_reprs(monkeypatch):
    """dtypes print as under the alias (``torch.float32``), so messages compare as they read there."""
    monkeypatch.setitem(D._state, "prefix", "torch")


def outcome(fn, *args, **kwargs):
    """``("ok", "")`` or (the builtin class raised, its message), tdx's Tensor class named as torch's."""
    try:
        fn(*args, **kwargs)
    except (AssertionError, TypeError, ValueError) as err:
        kind = next(k for k in (AssertionError, TypeError, ValueError) if isinstance(err, k))
        return kind.__name__, str(err).replace(repr(tdx.Tensor), repr(torch.Tensor))
    return "ok", ""


def both(arr, dtype, device):
    """(tdx tensor on ``device``, torch CPU tensor) holding ``arr`` as ``dtype``."""
    return (tdx.tensor(arr, dtype=getattr(tdx, dtype), device=device),  # narrowed on the host
            torch.tensor(arr).to(getattr(torch, dtype)))


FLOATS = ["float16", "bfloat16", "float32", "float64", "complex64", "complex128"]
FACTORS = [0.0, 0.5, 0.95, 1.05, 3.0, 1e3]


@pytest.mark.parametrize("dtype", FLOATS)
def test_default_tolerances_are_torchs(device, impl, dtype):
    """Around torch's default tolerance of each dtype, every verdict and message is torch's."""
    if dtype not in tdx.backends.get(device).caps.dtypes:
        pytest.skip(f"{device} holds no {dtype}")
    rtol, atol = TORCH_TOLERANCES[dtype]
    expected = np.array([1.0, -2.5, 100.0, 1e-3, 0.0, 7.25])
    verdicts = []
    for factor in FACTORS:
        actual = expected + factor * (atol + rtol * np.abs(expected)) * np.array([0, 1, 1, -1, 1, 0])
        if dtype.startswith("complex"):
            actual, expected_c = actual + 1j * expected, expected + 1j * expected
        else:
            expected_c = expected
        (a, ta), (e, te) = both(actual, dtype, device), both(expected_c, dtype, device)
        mine, theirs = outcome(impl.assert_close, a, e), outcome(torch.testing.assert_close, ta, te)
        assert mine == theirs, f"factor {factor}"
        verdicts.append(theirs[0])
    assert "ok" in verdicts and "AssertionError" in verdicts  # the cases straddle torch's tolerance


def test_float32_within_torchs_tolerance_passes(device, impl):
    """1.2e-6 relative in float32: torch passes it (rtol 1.3e-6), where a tighter default would fail."""
    e = tdx.tensor([1.0, 3.0, 1000.0], device=device)
    impl.assert_close(e * (1 + 1.2e-6), e)
    with pytest.raises(AssertionError, match="Greatest relative difference"):
        impl.assert_close(e * (1 + 5e-6), e)


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "bool"])
def test_exact_dtypes(device, impl, dtype):
    """Integers and bools compare exactly, with torch's 'not equal' message."""
    x = np.array([1, 0, 3, 4])
    for delta in (np.array([0, 0, 0, 0]), np.array([0, 1, 0, 1])):
        (a, ta), (e, te) = both(x + delta, dtype, device), both(x, dtype, device)
        assert outcome(impl.assert_close, a, e) == outcome(torch.testing.assert_close, ta, te)


def _cases(lib, device):
    """Named inputs of torch.testing.assert_close built with ``lib`` (tdx on ``device``, or torch)."""
    kw = {"device": device} if lib is tdx else {}
    t = lambda v, **k: lib.tensor(v, **kw, **k)  # noqa: E731
    a, b = t([1.0, 2.0, 3.0]), t([1.0, 2.00001, 4.0])
    nan = t([1.0, math.nan])
    return {
        "close": ((a, a + 1e-6), {}),
        "far": ((a, b), {}),
        "nested": (([a, {"x": a, "y": (a, 2)}], [a, {"x": a, "y": (b, 2)}]), {}),
        "nested_ok": (([a, {"x": a}], [a, {"x": a}]), {}),
        "lengths": (([a, a], [a]), {}),
        "keys": (({"a": a, "b": a}, {"a": a, "c": a}), {}),
        "shape": ((a, a[:2]), {}),
        "dtype": ((a, a.to(lib.float16)), {}),
        "dtype_unchecked": ((a, a.to(lib.float16)), {"check_dtype": False}),
        "scalar_tensor": ((a[0], b[2]), {}),
        "tensor_vs_number": ((a, 1.0), {}),
        "tensor_vs_list": ((a, [1.0, 2.0, 3.0]), {}),
        "numbers": ((1.0, 1.0 + 1e-9), {}),
        "numbers_far": ((1.0, 1.5), {}),
        "int_float": ((1, 1.0), {}),
        "complex_numbers": ((1 + 2j, 1 + 2.1j), {}),
        "none": ((None, 1), {}),
        "bools": ((True, False), {}),
        "nan": ((nan, nan), {}),
        "nan_equal": ((nan, nan), {"equal_nan": True}),
        "inf": ((t([math.inf]), t([math.inf])), {}),
        "inf_sign": ((t([math.inf]), t([-math.inf])), {}),
        "rtol_only": ((a, b), {"rtol": 1.0}),
        "loose": ((a, b), {"rtol": 0.3, "atol": 0.0}),
        "msg": ((a, b), {"msg": "Argh, the tensors are not close!"}),
        "msg_callable": (([a, a], [a, b]), {"msg": lambda m: f"Header\n\n{m}\n\nFooter"}),
        "ints": ((t([1, 2, 3]), t([1, 2, 5])), {}),
        "grad": ((a.clone().requires_grad_(), a), {}),
        "stride": ((t([[1.0, 2.0], [3.0, 4.0]]).t(), t([[1.0, 3.0], [2.0, 4.0]])), {"check_stride": True}),
    }


@pytest.mark.parametrize("case", sorted(_cases(torch, "cpu")))
def test_same_answer_as_torch(device, impl, case):
    """Numbers, tensors, sequences and mappings of them: torch's verdict, error class and message."""
    (args, kwargs), (targs, tkwargs) = _cases(tdx, device)[case], _cases(torch, "cpu")[case]
    mine, theirs = outcome(impl.assert_close, *args, **kwargs), outcome(torch.testing.assert_close, *targs, **tkwargs)
    assert mine == theirs


def test_error_class_is_torchs(device, impl):
    """A mismatch raises the plain AssertionError torch raises (pytest and unittest treat it as a failure)."""
    with pytest.raises(AssertionError) as info:
        impl.assert_close(tdx.tensor([1.0], device=device), tdx.tensor([2.0], device=device))
    with pytest.raises(AssertionError) as theirs:
        torch.testing.assert_close(torch.tensor([1.0]), torch.tensor([2.0]))
    assert type(info.value) is type(theirs.value) is AssertionError


def test_devices_compared(device, impl):
    """Tensors on two devices fail torch's device check naming both, and pass with ``check_device=False``."""
    other = next((r.device for r in tdx.backends.available() if r.available and r.device != device), None)
    if other is None:
        pytest.skip("one device only")
    a = tdx.tensor([1.0, 2.0], device=device)
    with pytest.raises(AssertionError) as info:
        impl.assert_close(a, a.to(other))
    assert str(info.value) == f"The values for attribute 'device' do not match: {device} != {other}."
    impl.assert_close(a, a.to(other), check_device=False)
    with pytest.raises(AssertionError, match="Tensor-likes are not close"):
        impl.assert_close(a, (a + 1).to(other), check_device=False)


def test_assert_allclose(device, impl):
    """torch's deprecated assert_allclose: its own older tolerances, dtypes may differ."""
    a, ta = both([1.0, 2.0], "float32", device)
    for values, dtype in (([1.0, 2.00001], "float32"), ([1.0, 2.001], "float32"), ([1.0, 2.0], "float16"),
                          ([1.0, 2.01], "float16")):
        e, te = both(values, dtype, device)
        with pytest.warns(FutureWarning) if impl is tdx.testing else contextlib.nullcontext():
            mine = outcome(impl.assert_allclose, a, e)
        with pytest.warns(FutureWarning):
            theirs = outcome(torch.testing.assert_allclose, ta, te)
        assert mine == theirs


MAKE = [
    ((2, 3), {"dtype": "float32"}),
    ((4,), {"dtype": "float32", "low": -1, "high": 1}),
    (((3, 2),), {"dtype": "float16"}),
    ((2, 2), {"dtype": "bfloat16", "low": 0.5}),
    ((3, 4), {"dtype": "complex64"}),
    ((5,), {"dtype": "int64"}),
    ((6,), {"dtype": "uint8"}),
    ((2, 3), {"dtype": "int32", "low": -3, "high": 3, "exclude_zero": True}),
    ((7,), {"dtype": "bool"}),
    ((3, 4), {"dtype": "float32", "noncontiguous": True}),
    ((3, 4), {"dtype": "float32", "requires_grad": True}),
    ((8,), {"dtype": "float32", "low": -1e-3, "high": 1e-3, "exclude_zero": True}),
]


@pytest.mark.parametrize("i", range(len(MAKE)))
def test_make_tensor_draws_torchs_values(device, impl, i):
    """From one seed, make_tensor on any device gives torch's values, dtype, layout and requires_grad."""
    shape, kw = MAKE[i]
    tdx.manual_seed(5)  # on cpu tdx's generator is torch's: draw tdx's first, then reseed for torch's
    mine = impl.make_tensor(*shape, **{**kw, "dtype": getattr(tdx, kw["dtype"])}, device=device)
    torch.manual_seed(5)  # torch's draws on the device whose generator tdx's follows there
    theirs = torch.testing.make_tensor(*shape, **{**kw, "dtype": getattr(torch, kw["dtype"])},
                                       device=torch_twin(device))
    assert mine.device == tdx.device(device)
    assert mine.is_contiguous() == theirs.is_contiguous()
    assert mine.requires_grad == theirs.requires_grad
    parity_close(mine.detach().cpu(), theirs.detach().cpu(), rtol=0, atol=0)


@pytest.mark.parametrize("kw", [{"low": 2, "high": 1}, {"low": math.nan}, {"dtype": "int64", "requires_grad": True},
                                {"noncontiguous": True, "memory_format": "channels_last"}])
def test_make_tensor_refusals(device, impl, kw):
    """Bad arguments raise torch's ValueError with torch's message."""
    kw = {"dtype": "float32", **kw}
    mine_kw = {**kw, "dtype": getattr(tdx, kw["dtype"])}
    their_kw = {**kw, "dtype": getattr(torch, kw["dtype"])}
    if "memory_format" in kw:
        mine_kw["memory_format"], their_kw["memory_format"] = tdx.channels_last, torch.channels_last
    mine = outcome(impl.make_tensor, 2, 3, 4, 5, device=device, **mine_kw)
    theirs = outcome(torch.testing.make_tensor, 2, 3, 4, 5, device="cpu", **their_kw)
    assert mine[0] == theirs[0] == "ValueError"
    assert mine[1] == theirs[1]


def test_torch_files_are_used_and_stand_in_without_torch(monkeypatch):
    """With torch installed tdx.testing runs torch's own files; without it, the stand-in."""
    assert tdx.testing.assert_close.__module__ == "tdx.testing._comparison"
    assert tdx.testing.make_tensor.__module__ == "tdx.testing._creation"
    assert tdx.testing._comparison.__file__.endswith("torch/testing/_comparison.py")
    from tdx._errors import NotProvidedError
    from tdx.aliasing import torch_source

    def absent(what):
        raise NotProvidedError(f"{what}: torch is not installed")

    monkeypatch.setattr(torch_source, "torch_package_dir", absent)
    for name in ("assert_close", "make_tensor", "_comparison"):
        monkeypatch.delitem(tdx.testing.__dict__, name, raising=False)
    monkeypatch.delitem(sys.modules, "tdx.testing._comparison")
    monkeypatch.delitem(sys.modules, "tdx.testing._creation")
    assert tdx.testing.__getattr__("assert_close") is standalone.assert_close
    assert tdx.testing.__getattr__("make_tensor") is standalone.make_tensor
    with pytest.raises(AttributeError, match="torch is not installed"):
        tdx.testing.__getattr__("_comparison")
    for name in ("assert_close", "make_tensor"):
        monkeypatch.delitem(tdx.testing.__dict__, name)


def test_under_the_alias(tmp_path):
    """A program's ``torch.testing`` is tdx's, with torch's tolerances and messages."""
    prog = tmp_path / "prog.py"
    prog.write_text(
        "import torch\n"
        "assert torch.testing.__name__ == 'tdx.testing'\n"
        "x = torch.tensor([1.0, 3.0])\n"
        "torch.testing.assert_close(x * (1 + 1.2e-6), x)\n"
        "try:\n"
        "    torch.testing.assert_close(x, x.double())\n"
        "except AssertionError as err:\n"
        "    print(err)\n"
        "print(torch.testing.make_tensor(2, dtype=torch.float32, device='cpu').shape)\n")
    out = subprocess.run([sys.executable, "-m", "tdx", "run", str(prog)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "The values for attribute 'dtype' do not match: torch.float32 != torch.float64.", "torch.Size([2])"]
