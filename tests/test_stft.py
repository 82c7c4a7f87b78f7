"""``tdx.stft``/``tdx.istft`` and their Tensor methods against torch's on CPU, on every device: window forms
(none, shorter than ``n_fft``), ``center`` and ``pad_mode``, ``normalized``, one- and two-sided spectra,
the real view, batched and single signals, the round trip back to the signal, gradients through both, and
torch's errors.

On a torch executor the spectrum and the signal back are torch's bit for bit (the same frames, window
products, FFT kernels and overlap-add order); MLX's FFT agrees to ~2e-6 on these sizes.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import tdx

SIGNAL = np.random.default_rng(0).standard_normal((2, 300)).astype(np.float32)
CASES = [
    dict(n_fft=64, hop_length=16, window="hann"),
    dict(n_fft=64, window=None),
    dict(n_fft=50, hop_length=10, win_length=40, window="hann", normalized=True),
    dict(n_fft=64, hop_length=16, window="hann", center=False),
    dict(n_fft=32, hop_length=8, window="hamming", pad_mode="constant"),
    dict(n_fft=32, hop_length=8, window="hann", onesided=False),
    dict(n_fft=32, hop_length=8, window="hann", single=True),
    dict(n_fft=32, hop_length=8, window="hann", real_view=True),
]


def _run(lib, device, case):
    kw = dict(case)
    window = kw.pop("window")
    single, real_view = kw.pop("single", False), kw.pop("real_view", False)
    if window is not None:
        window = getattr(lib, f"{window}_window")(kw.get("win_length", kw["n_fft"]), device=device)
    x = lib.tensor(SIGNAL[0] if single else SIGNAL, device=device, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        spec = lib.stft(x, window=window, return_complex=not real_view, **kw)
        if real_view:
            return {"spec": spec.detach().cpu().numpy()}
        kw.pop("pad_mode", None)
        back = spec.istft(window=window, length=SIGNAL.shape[-1], **kw) if kw.get("center", True) else None
        method = x.stft(window=window, return_complex=True, **{k: v for k, v in case.items()
                                                               if k not in ("window", "single", "real_view")})
    loss = (spec.abs() ** 2).sum() + (back.sum() if back is not None else 0)
    loss.backward()
    out = {"spec": spec.detach().cpu().numpy(), "method": method.detach().cpu().numpy(),
           "grad": x.grad.cpu().numpy()}
    if back is not None:
        out["back"] = back.detach().cpu().numpy()
    return out


@pytest.mark.parametrize("case", range(len(CASES)), ids=lambda i: "-".join(f"{k}={v}" for k, v in CASES[i].items()))
def test_stft_istft_as_torchs(device, case):
    mine, theirs = _run(tdx, device, CASES[case]), _run(torch, "cpu", CASES[case])
    assert mine.keys() == theirs.keys()
    exact = device == "cpu"
    for key, want in theirs.items():
        got = mine[key]
        assert got.shape == want.shape and got.dtype == want.dtype, key
        if exact and key in ("spec", "method", "back"):
            np.testing.assert_array_equal(got, want, err_msg=key)
        else:
            scale = max(1.0, float(np.abs(want).max()))
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * scale, err_msg=key)
    if "back" in theirs:  # the round trip gives the signal back
        np.testing.assert_allclose(mine["back"], SIGNAL[0] if CASES[case].get("single") else SIGNAL,
                                   rtol=1e-5, atol=1e-5)


def test_stft_istft_errors_as_torchs(device):
    for lib, dev in ((tdx, device), (torch, "cpu")):
        x = lib.ones(2, 100, device=dev)
        hann = lib.hann_window(16, device=dev)
        with pytest.raises(RuntimeError, match="return_complex parameter be given"):
            lib.stft(x, 16, window=hann)
        with pytest.raises(RuntimeError, match="1D or 2D"):
            lib.stft(lib.ones(2, 2, 100, device=dev), 16, window=hann, return_complex=True)
        with pytest.raises(RuntimeError, match="complex-valued input"):
            lib.istft(x, 16, window=hann)
        spec = lib.stft(x, 16, hop_length=4, window=hann, center=False, return_complex=True)
        with pytest.raises(RuntimeError, match="window overlap add min"):
            lib.istft(spec, 16, hop_length=4, window=hann, center=False)
