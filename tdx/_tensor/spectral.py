"""The short-time Fourier transform and its inverse: ``tdx.stft`` / ``tdx.istft`` and their Tensor methods.

Composed of the facade's own ops as torch's kernel forms them: the signal padded (``center``), cut into
frames of ``n_fft`` samples ``hop_length`` apart, each multiplied by the window (zero-padded to ``n_fft``,
centred) and transformed (``rfft``/``fft``, ``ortho`` when ``normalized``); the inverse transforms each
frame back, windows it, adds the frames where they overlap and divides by the overlapped squared window.
So both run and differentiate on every executor with the executor's own FFT. This module must never
import a framework.
"""

from __future__ import annotations

import warnings

from .. import _dtypes as D
from .._errors import TdxRuntimeError
from .creation import arange, ones
from .dispatch import call
from .shape import cat
from .wrapping import attach, exporter, need_tensor

__all__: list = []
_export = exporter(__all__)


def _window(window, n_fft: int, win_length: int, op: str):
    """The window zero-padded to ``n_fft`` samples, centred, or None for the rectangular one."""
    if window is None:
        return None
    need_tensor(window, op, "window")
    if window.dim() != 1 or window.shape[0] != win_length:
        raise TdxRuntimeError(f"{op}: expected a 1D window tensor of size equal to win_length={win_length}, but "
                              f"got window with size {list(window.shape)}")
    if win_length == n_fft:
        return window
    left = (n_fft - win_length) // 2
    zeros = window.new_zeros
    return cat([zeros(left), window, zeros(n_fft - win_length - left)])


def _pad(x, p: int, mode: str):
    """``x`` (batch, length) with ``p`` samples added at both ends, as ``F.pad``'s ``mode`` makes them."""
    length = x.shape[-1]
    if mode == "constant":
        left = right = x.new_zeros(x.shape[0], p)
    elif mode == "reflect":
        if p >= length:
            raise TdxRuntimeError(f"stft: padding size should be less than the corresponding input dimension, but "
                                  f"got: padding ({p}, {p}) at dimension 1 of input {list(x.shape)}")
        left, right = x[:, 1:p + 1].flip(-1), x[:, length - p - 1:length - 1].flip(-1)
    elif mode == "replicate":
        left, right = x[:, :1].expand(x.shape[0], p), x[:, length - 1:].expand(x.shape[0], p)
    elif mode == "circular":
        left, right = x[:, length - p:], x[:, :p]
    else:
        raise TdxRuntimeError(f"stft: pad_mode must be 'constant', 'reflect', 'replicate' or 'circular', got "
                              f"{mode!r}")
    return cat([left, x, right], -1)


def _lengths(n_fft: int, hop_length, win_length, op: str) -> tuple:
    hop = n_fft // 4 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length
    if n_fft <= 0:
        raise TdxRuntimeError(f"{op}: expected 0 < n_fft, but got n_fft={n_fft}")
    if hop <= 0:
        raise TdxRuntimeError(f"{op}: expected hop_length > 0, but got hop_length={hop}")
    if not 0 < win <= n_fft:
        raise TdxRuntimeError(f"{op}: expected 0 < win_length <= n_fft, but got win_length={win}")
    return hop, win


@_export
def stft(input, n_fft, hop_length=None, win_length=None, window=None, center=True, pad_mode="reflect",
         normalized=False, onesided=None, return_complex=None, align_to_window=None):
    """The short-time Fourier transform of a 1-d signal or a batch of them (torch's ``stft``).

    Returns:
        A complex tensor ``(batch?, n_fft // 2 + 1 or n_fft, n_frames)`` (its real view, last dim 2, when
        ``return_complex=False``).

    Raises:
        TdxRuntimeError: ``return_complex`` is not given for a real signal, the signal is not 1-d or 2-d, or
            the lengths do not fit (torch's errors).
    """
    need_tensor(input, "stft")
    if align_to_window is not None and align_to_window:
        raise TdxRuntimeError("stft: align_to_window=True is only valid with center=False")  # torch's rule
    complex_in = input.dtype.is_complex or (window is not None and window.dtype.is_complex)
    if return_complex is None:
        if not complex_in:
            raise TdxRuntimeError("stft requires the return_complex parameter be given for real inputs, and will "
                                  "further require that return_complex=True in a future PyTorch release.")
        return_complex = True
    if input.dim() not in (1, 2):
        raise TdxRuntimeError(f"stft: expected a 1D or 2D tensor, but got {input.dim()}D tensor")
    hop, win = _lengths(n_fft, hop_length, win_length, "stft")
    if window is None:
        warnings.warn("A window was not provided. A rectangular window will be applied,which is known to cause "
                      "spectral leakage. Other windows such as torch.hann_window or torch.hamming_window are "
                      "recommended to reduce spectral leakage.To suppress this warning and use a rectangular "
                      "window, explicitly set `window=torch.ones(n_fft, device=<device>)`.", UserWarning,
                      stacklevel=2)
    x = input if input.dim() == 2 else input.unsqueeze(0)
    if center:
        x = _pad(x, n_fft // 2, pad_mode)
    length = x.shape[-1]
    if n_fft > length:
        raise TdxRuntimeError(f"stft: expected 0 < n_fft <= {length}, but got n_fft={n_fft}")
    frames = x.unfold(-1, n_fft, hop)  # (batch, n_frames, n_fft)
    w = _window(window, n_fft, win, "stft")
    if w is not None:
        frames = frames * w
    if onesided is None:
        onesided = not complex_in
    norm = "ortho" if normalized else "backward"
    out = call("fft", "rfft" if onesided else "fft", frames, None, -1, norm).transpose(1, 2)
    if input.dim() == 1:
        out = out.squeeze(0)
    if not return_complex:
        from .complex_views import view_as_real

        return view_as_real(out)
    return out


@_export
def istft(input, n_fft, hop_length=None, win_length=None, window=None, center=True, normalized=False,
          onesided=None, length=None, return_complex=False):
    """The signal whose ``stft`` is ``input`` (torch's ``istft``): each frame transformed back, windowed,
    overlapped and added, and divided by the overlapped squared window.

    Raises:
        TdxRuntimeError: ``input`` is not complex, the lengths do not fit, or the overlapped window is zero
            somewhere (torch's errors).
    """
    need_tensor(input, "istft")
    if not input.dtype.is_complex:
        raise TdxRuntimeError("istft requires a complex-valued input tensor matching the output from stft with "
                              "return_complex=True.")
    if input.dim() not in (2, 3):
        raise TdxRuntimeError(f"istft: expected a tensor with 2 or 3 dimensions of complex, but got {input.dim()}D")
    hop, win = _lengths(n_fft, hop_length, win_length, "istft")
    spec = input if input.dim() == 3 else input.unsqueeze(0)
    n_freq, n_frames = spec.shape[-2], spec.shape[-1]
    if onesided is None:
        onesided = n_freq != n_fft
    want = n_fft // 2 + 1 if onesided else n_fft
    if n_freq != want:
        raise TdxRuntimeError(f"istft: expected the frequency dimension (3rd to the last) of the input tensor to "
                              f"match n_fft / 2 + 1 when onesided=True, but got {n_freq}" if onesided else
                              f"istft: expected the frequency dimension of the input tensor to match n_fft when "
                              f"onesided=False, but got {n_freq}")
    norm = "ortho" if normalized else "backward"
    spec = spec.transpose(1, 2)  # (batch, n_frames, n_freq)
    if return_complex:
        if onesided:
            raise TdxRuntimeError("istft: cannot have onesided output if window or input is complex")
        frames = call("fft", "ifft", spec, None, -1, norm)
    else:
        frames = call("fft", "irfft", spec if onesided else spec.narrow(-1, 0, n_fft // 2 + 1), n_fft, -1, norm)
    if window is None:  # the rectangular window, which the overlap-add divides by as well
        window = ones(win, dtype=D.float32 if frames.dtype.is_complex else frames.dtype, device=frames.device)
    w = _window(window, n_fft, win, "istft")
    frames = frames * w
    total = n_fft + hop * (n_frames - 1)
    at = (arange(n_frames, device=frames.device) * hop).unsqueeze(1) + arange(n_fft, device=frames.device)
    at = at.reshape(-1)

    def overlap_add(t):  # (batch, n_frames, n_fft) -> (batch, total): each frame added where it lies
        return t.new_zeros(t.shape[0], total).index_add(1, at, t.reshape(t.shape[0], -1))

    y = overlap_add(frames)
    envelope = overlap_add((w * w).expand(1, n_frames, n_fft))
    start = n_fft // 2 if center else 0
    if length is not None:
        end = min(start + length, total)
    else:
        end = total - n_fft // 2 if center else total
    y, envelope = y[:, start:end], envelope[:, start:end]
    if bool((envelope.abs() < 1e-11).any()):
        raise TdxRuntimeError(f"istft(...) window overlap add min: {envelope.abs().min().item():.0f}")
    y = y / envelope
    if length is not None and y.shape[-1] < length:
        y = cat([y, y.new_zeros(y.shape[0], length - y.shape[-1])], -1)
    return y.squeeze(0) if input.dim() == 2 else y


class _SpectralMethods:
    def stft(self, n_fft, hop_length=None, win_length=None, window=None, center=True, pad_mode="reflect",
             normalized=False, onesided=None, return_complex=None, align_to_window=None):
        """``tdx.stft(self, ...)``."""
        return stft(self, n_fft, hop_length, win_length, window, center, pad_mode, normalized, onesided,
                    return_complex, align_to_window)

    def istft(self, n_fft, hop_length=None, win_length=None, window=None, center=True, normalized=False,
              onesided=None, length=None, return_complex=False):
        """``tdx.istft(self, ...)``."""
        return istft(self, n_fft, hop_length, win_length, window, center, normalized, onesided, length,
                     return_complex)


attach(_SpectralMethods)
