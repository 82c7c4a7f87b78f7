"""``tdx.fft`` against torch.fft on CPU: every transform, ``n``/``s``/``dim``/``norm``, real and complex
input, and gradients (through ``|X|^2``, as tdx has no ``.real`` yet), on every device.

float32 transforms of length <= 16 agree to ~1e-6 of the result's scale; the tolerance is 1e-5
relative/absolute as values reach ~20 (sums of 16 inputs in [-2, 2]).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import tdx
import tdx.fft as F
from tdx.testing.parity import assert_close

TOL = dict(rtol=1e-5, atol=1e-5)


def _inputs(shape, kind, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.uniform(-2, 2, size=shape)
    if kind == "complex64":
        a = (a + 1j * rng.uniform(-2, 2, size=shape)).astype(np.complex64)
        return torch.tensor(a), a
    return torch.tensor(a).float(), a.astype(np.float32)


CASES = [
    ("fft", {}, (8,), ("float32", "complex64")),
    ("fft", {"n": 5, "norm": "ortho"}, (3, 6), ("float32", "complex64")),
    ("fft", {"n": 10, "dim": 0, "norm": "forward"}, (6, 3), ("complex64",)),
    ("ifft", {}, (2, 7), ("complex64", "float32")),
    ("ifft", {"norm": "ortho", "dim": 0}, (4, 3), ("complex64",)),
    ("rfft", {}, (2, 8), ("float32",)),
    ("rfft", {"n": 7, "norm": "forward"}, (9,), ("float32",)),
    ("irfft", {}, (2, 5), ("complex64",)),
    ("irfft", {"n": 9, "norm": "ortho"}, (5,), ("complex64",)),
    ("hfft", {}, (6,), ("complex64",)),
    ("hfft", {"n": 7, "norm": "forward"}, (2, 4), ("complex64",)),
    ("ihfft", {}, (8,), ("float32",)),
    ("ihfft", {"norm": "ortho"}, (3, 5), ("float32",)),
    ("fft2", {}, (3, 4), ("complex64", "float32")),
    ("fft2", {"s": (2, 6), "norm": "ortho"}, (2, 3, 4), ("complex64",)),
    ("ifft2", {}, (4, 4), ("complex64",)),
    ("rfft2", {}, (4, 6), ("float32",)),
    ("irfft2", {"s": (4, 6)}, (4, 4), ("complex64",)),
    ("hfft2", {"s": (3, 6)}, (3, 4), ("complex64",)),
    ("ihfft2", {}, (4, 6), ("float32",)),
    ("fftn", {}, (2, 3, 4), ("complex64",)),
    ("fftn", {"s": (4, 2), "dim": (0, 2)}, (3, 2, 3), ("complex64",)),
    ("fftn", {"s": (5,)}, (2, 4), ("float32",)),
    ("ifftn", {"norm": "forward"}, (3, 4), ("complex64",)),
    ("rfftn", {}, (2, 4, 6), ("float32",)),
    ("irfftn", {"s": (2, 4, 6)}, (2, 4, 4), ("complex64",)),
    ("hfftn", {}, (3, 4), ("complex64",)),
    ("ihfftn", {"dim": (0, 1)}, (4, 6), ("float32",)),
]


@pytest.mark.parametrize("case", range(len(CASES)), ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_transform(device, case):
    name, kw, shape, kinds = CASES[case]
    for kind in kinds:
        ref, arr = _inputs(shape, kind, seed=case)
        x = tdx.tensor(arr, device=device)
        want = getattr(torch.fft, name)(ref, **kw)
        got = getattr(F, name)(x, **kw)
        assert_close(got, want, msg=f"{name} {kind}", **TOL)
        # gradients through a real loss of the result
        r = ref.clone().requires_grad_()
        g = tdx.tensor(arr, device=device).requires_grad_()
        w = np.random.default_rng(1).uniform(-1, 1, size=tuple(want.shape)).astype(np.float32)
        (getattr(torch.fft, name)(r, **kw).abs() ** 2 * torch.tensor(w)).sum().backward()
        (getattr(F, name)(g, **kw).abs() ** 2 * tdx.tensor(w, device=device)).sum().backward()
        assert_close(g.grad, r.grad, msg=f"{name} {kind} grad", rtol=1e-4, atol=1e-4)


def test_integer_input_computes_in_float32(device):
    got = F.fft(tdx.arange(6, device=device))
    want = torch.fft.fft(torch.arange(6))
    assert_close(got, want, **TOL)


@pytest.mark.parametrize("n, d, dtype", [(5, 1.0, None), (8, 0.5, "float64"), (1, 2.0, "float32")])
def test_frequencies(device, n, d, dtype):
    kw = {} if dtype is None else {"dtype": getattr(tdx, dtype)}
    if device.startswith("mlx") and dtype == "float64" and "gpu" in device:
        pytest.skip("no float64 on MLX GPUs")
    tkw = {} if dtype is None else {"dtype": getattr(torch, dtype)}
    assert_close(F.fftfreq(n, d, device=device, **kw), torch.fft.fftfreq(n, d, **tkw), rtol=0, atol=0)
    assert_close(F.rfftfreq(n, d, device=device, **kw), torch.fft.rfftfreq(n, d, **tkw), rtol=0, atol=0)


@pytest.mark.parametrize("dim", [None, 0, (0, 1), -1])
def test_shifts(device, dim):
    arr = np.arange(30).reshape(5, 6)
    x, t = tdx.tensor(arr, device=device), torch.tensor(arr)
    assert_close(F.fftshift(x, dim), torch.fft.fftshift(t, dim), rtol=0, atol=0)
    assert_close(F.ifftshift(x, dim), torch.fft.ifftshift(t, dim), rtol=0, atol=0)


def test_float64_on_cpu_is_torch_and_refused_on_mlx():
    arr = np.linspace(-1, 1, 8)
    assert_close(F.rfft(tdx.tensor(arr)), torch.fft.rfft(torch.tensor(arr)), rtol=1e-12, atol=1e-12)
    with pytest.raises(tdx.DtypeError, match="complex128"):
        F.rfft(tdx.tensor(arr, device="mlx:cpu"))


@pytest.mark.parametrize("call", [
    lambda m, dev: m.fft.rfft(m.ones(4, dtype=m.complex64, device=dev)),
    lambda m, dev: m.fft.fft(m.ones(4, device=dev), norm="bad"),
    lambda m, dev: m.fft.fft(m.ones(4, device=dev), n=0),
    lambda m, dev: m.fft.fftn(m.ones(4, 4, device=dev), s=(2, 2), dim=(0,)),
])
def test_bad_input_raises_like_torch(device, call):
    with pytest.raises(RuntimeError):
        call(torch, "cpu")
    with pytest.raises(RuntimeError) as info:
        call(tdx, device)
    assert isinstance(info.value, tdx.TdxError)


def test_torch_fft_coverage():
    names = [n for n in dir(torch.fft) if not n.startswith("_") and callable(getattr(torch.fft, n))]
    missing = [n for n in names if not hasattr(F, n)]
    assert not missing, missing
