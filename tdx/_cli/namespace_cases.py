"""The catalog's cases for torch's namespaces: ``linalg``, ``fft``, ``special``, ``masked``, ``signal.windows``.

Each case is ``fn(kit)`` as in :mod:`.catalog` (``kit.m`` is ``tdx`` or ``torch``); the namespace is
reached through :func:`ns` so both modules resolve it the same way. Factorizations whose result
is defined only up to signs (QR, SVD, eigh) are compared through what they determine (the
reconstructed matrix, the spectrum). Linear algebra and transforms take float32 inputs whatever
the kit's dtype (they are defined on floating point only); the special functions and the masked
reductions take the kit's dtype, so integer and bool inputs are checked against torch too.
Must never import a framework at module level.
"""

from __future__ import annotations

import importlib

__all__ = ["NAMESPACE_CASES", "MLX_CPU_STREAM_NOTE", "ns"]

MLX_CPU_STREAM_NOTE = ("On `mlx:gpu`, MLX's linalg factorizations (inv, solve, cholesky, qr, svd, eigh, eig, lu, "
                       "lstsq, pinv, det/slogdet, matrix_rank, cond and the functions built on them) run on MLX's CPU "
                       "stream: MLX has no GPU kernels for them, and its unified memory means nothing is copied. "
                       "ldl_factor/ldl_solve (no MLX kernel at all) run LAPACK's algorithm on the host, forward only.")

_SPD = [[4.0, 1.0, 0.5], [1.0, 3.0, 0.25], [0.5, 0.25, 2.0]]
_V3 = [[1.0, -2.0, 0.5], [0.25, 1.5, -1.0]]
_P = [[0.05, 0.3, 0.5, 0.7], [0.9, 0.15, 0.45, 0.99], [0.6, 0.2, 0.8, 0.35]]
_POS = [[0.5, 1.25, 2.0, 3.5], [0.75, 1.5, 0.25, 2.0], [1.0, 4.0, 3.0, 2.5]]


def ns(m, path: str):
    """``m.<path>`` (``"linalg"``, ``"signal.windows"``...) for ``m`` the tdx or torch module."""
    return importlib.import_module(f"{m.__name__}.{path}")


def _f(k, data):
    return k.t(data, "float32")


def _la(name, *args, **kw):
    return lambda k: getattr(ns(k.m, "linalg"), name)(*[a(k) if callable(a) else a for a in args], **kw)


def _spd(k):
    return _f(k, _SPD)


def _a(k):
    return _f(k, [[0.5, -1.25, 2.0, 3.5], [-0.75, 1.5, 0.25, -2.0], [1.0, 0.0, -3.0, 2.5]])


def _qr(k):
    q, r = ns(k.m, "linalg").qr(_a(k).T)
    return q @ r


def _svd(k):
    u, s, vh = ns(k.m, "linalg").svd(_a(k), full_matrices=False)
    return (u * s.unsqueeze(0)) @ vh


def _eigh(k):
    w, v = ns(k.m, "linalg").eigh(_spd(k))
    return w, (v * w.unsqueeze(0)) @ v.T


def _fft(name, *args, real=True, **kw):
    return lambda k: getattr(ns(k.m, "fft"), name)(_a(k) if real else ns(k.m, "fft").fft(_a(k)), *args, **kw)


_LINALG = {
    "torch.linalg.norm": _la("norm", _a), "torch.linalg.vector_norm": _la("vector_norm", _a, 3.0, 1),
    "torch.linalg.matrix_norm": _la("matrix_norm", _a, "nuc"), "torch.linalg.det": _la("det", _spd),
    "torch.linalg.slogdet": lambda k: tuple(ns(k.m, "linalg").slogdet(_spd(k))), "torch.linalg.inv": _la("inv", _spd),
    "torch.linalg.solve": lambda k: ns(k.m, "linalg").solve(_spd(k), _a(k)[:, :3].T),
    "torch.linalg.cholesky": _la("cholesky", _spd), "torch.linalg.qr": _qr, "torch.linalg.svd": _svd,
    "torch.linalg.svdvals": _la("svdvals", _a), "torch.linalg.eigh": _eigh,
    "torch.linalg.eigvalsh": _la("eigvalsh", _spd),
    "torch.linalg.pinv": _la("pinv", _a), "torch.linalg.matrix_power": _la("matrix_power", _spd, 3),
    "torch.linalg.matrix_exp": lambda k: ns(k.m, "linalg").matrix_exp(_spd(k) / 4),
    "torch.linalg.matrix_rank": _la("matrix_rank", _a), "torch.linalg.cond": _la("cond", _spd),
    "torch.linalg.lstsq": lambda k: ns(k.m, "linalg").lstsq(_a(k).T, _f(k, [[1.0], [2.0], [0.5], [-1.0]])).solution,
    "torch.linalg.cross": lambda k: ns(k.m, "linalg").cross(_f(k, _V3), _f(k, _V3[::-1])),
    "torch.linalg.vecdot": lambda k: ns(k.m, "linalg").vecdot(_a(k), _a(k).flip(0), dim=1),
    "torch.linalg.multi_dot": lambda k: ns(k.m, "linalg").multi_dot([_a(k), _a(k).T, _spd(k)]),
}

_FFT = {
    **{f"torch.fft.{n}": _fft(n) for n in ("fft", "ifft", "rfft", "fft2", "ifft2", "rfft2", "fftn", "ihfft")},
    "torch.fft.irfft": _fft("irfft", real=False), "torch.fft.hfft": _fft("hfft", 6, real=False),
    "torch.fft.irfftn": _fft("irfftn", real=False),
    "torch.fft.fftfreq": lambda k: ns(k.m, "fft").fftfreq(8, 0.5, device=k.device),
    "torch.fft.rfftfreq": lambda k: ns(k.m, "fft").rfftfreq(7, device=k.device),
    "torch.fft.fftshift": lambda k: ns(k.m, "fft").fftshift(k.a),
    "torch.fft.ifftshift": lambda k: ns(k.m, "fft").ifftshift(k.a, 1),
}

_UNARY_ANY = ("erf", "erfc", "erfcx", "ndtr", "log_ndtr", "expit", "exp2", "expm1", "sinc", "i0", "i0e", "i1", "i1e",
              "bessel_j0", "bessel_j1", "spherical_bessel_j0", "airy_ai")
_UNARY_POS = ("gammaln", "digamma", "entr", "bessel_y0", "bessel_y1", "modified_bessel_k0", "modified_bessel_k1",
              "scaled_modified_bessel_k0", "scaled_modified_bessel_k1", "modified_bessel_i0", "log1p")


def _pos(k):
    return k.t(_POS) if k.dtype != "bool" else k.a


_SPECIAL = {
    **{f"torch.special.{n}": (lambda n: lambda k: getattr(ns(k.m, "special"), n)(k.a))(n) for n in _UNARY_ANY},
    **{f"torch.special.{n}": (lambda n: lambda k: getattr(ns(k.m, "special"), n)(_pos(k)))(n) for n in _UNARY_POS},
    "torch.special.ndtri": lambda k: ns(k.m, "special").ndtri(_f(k, _P)),
    "torch.special.logit": lambda k: ns(k.m, "special").logit(_f(k, _P)),
    "torch.special.erfinv": lambda k: ns(k.m, "special").erfinv(_f(k, _P)),
    "torch.special.xlogy": lambda k: ns(k.m, "special").xlogy(k.a, _pos(k)),
    "torch.special.zeta": lambda k: ns(k.m, "special").zeta(_f(k, _POS) + 1.5, _pos(k)),
    "torch.special.gammainc": lambda k: ns(k.m, "special").gammainc(_pos(k), _f(k, _POS).flip(1)),
    "torch.special.gammaincc": lambda k: ns(k.m, "special").gammaincc(_pos(k), _f(k, _POS).flip(0)),
    "torch.special.polygamma": lambda k: ns(k.m, "special").polygamma(2, _pos(k)),
    "torch.special.multigammaln": lambda k: ns(k.m, "special").multigammaln(_f(k, _POS) + 1, 2),
    "torch.special.chebyshev_polynomial_t": lambda k: ns(k.m, "special").chebyshev_polynomial_t(k.a, 3),
    "torch.special.hermite_polynomial_h": lambda k: ns(k.m, "special").hermite_polynomial_h(k.a, 4),
    "torch.special.log_softmax": lambda k: ns(k.m, "special").log_softmax(_f(k, _POS), 1),
}


def _mk(name, *args, **kw):
    return lambda k: getattr(ns(k.m, "masked"), name)(k.a, *args, mask=k.mask, **kw)


_MASKED = {
    **{f"torch.masked.{n}": _mk(n, 1) for n in ("sum", "prod", "amax", "amin", "argmax", "argmin", "mean", "logsumexp",
                                                "var", "std", "softmax", "log_softmax", "softmin", "cumsum", "cumprod",
                                                "median")},
    "torch.masked.sum(keepdim)": _mk("sum", (0, 1), keepdim=True), "torch.masked.norm": _mk("norm", 2.0, 1),
    "torch.masked.normalize": _mk("normalize", 2.0, 1),
    "torch.masked.logaddexp": lambda k: ns(k.m, "masked").logaddexp(k.a, k.b, input_mask=k.mask, other_mask=~k.mask),
}


def _win(name, **kw):
    return lambda k: getattr(ns(k.m, "signal.windows"), name)(9, device=k.device, **kw)


_WINDOWS = {
    **{f"torch.signal.windows.{n}": _win(n) for n in ("bartlett", "blackman", "cosine", "exponential", "gaussian",
                                                      "general_hamming", "hamming", "hann", "kaiser", "nuttall")},
    "torch.signal.windows.general_cosine": _win("general_cosine", a=[0.5, 0.3, 0.2]),
    "torch.signal.windows.hann(sym=False)": _win("hann", sym=False),
    **{f"torch.{n}": (lambda n: lambda k: getattr(k.m, n)(10, device=k.device))(n)
       for n in ("hann_window", "hamming_window", "blackman_window", "bartlett_window", "kaiser_window")},
}

NAMESPACE_CASES = {**_LINALG, **_FFT, **_SPECIAL, **_MASKED, **_WINDOWS}
