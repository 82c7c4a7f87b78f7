"""``namespace_call`` for the MLX executor: torch's ``linalg``, ``fft`` and ``special`` functions by name.

The facade (:mod:`tdx._tensor.dispatch`) asks for ``torch.<ns>.<name>``; this finds the executor
method ``<ns>_<name>`` of the mixins gathered here (:mod:`._matrix_functions`, :mod:`._spectral`,
:mod:`._special`, :mod:`._error_functions`, :mod:`._bessel`, :mod:`._incomplete_gamma`) or raises a
typed error naming the function; half-precision inputs to the special functions torch has no half
kernel for are refused as torch refuses them.

Those mixins are most of the executor's code and most programs call none of them, so they are imported the first
time one of their names is asked of an executor (:func:`_load`): their attributes are then copied onto
:class:`MLXNamespaceOps`, which holds their place in the executor's method order, so every later lookup is a plain
class hit and resolves as it would with the mixins as bases (no other class of the executor defines their names;
``tests/test_lazy_names.py`` checks it). Must never import torch or the facade.
"""

from __future__ import annotations

import importlib
import threading

import mlx.core as mx

from ..._errors import OpDtypeError, UnsupportedOpError

# the mixins, in the method order they had as bases of MLXNamespaceOps: (module, class)
MIXINS = (("._matrix_functions", "MLXMatrixFunctions"), ("._spectral", "MLXSpectralOps"),
          ("._special", "MLXSpecialFunctions"), ("._error_functions", "MLXErrorFunctions"),
          ("._bessel", "MLXBesselFunctions"), ("._incomplete_gamma", "MLXIncompleteGamma"))
# the mixins' names asked from outside them: torch's namespace functions by prefix, and these
_PREFIXES = ("linalg_", "fft_", "special_")
_OUTSIDE = frozenset({"geqrf", "_lgamma"})  # Tensor.geqrf's executor op; the sampler's log-gamma
_LOADED = [False]
_LOCK = threading.Lock()


# torch.special functions torch has no float16/bfloat16 kernel for: refused in half precision, as torch's
_NO_HALF = frozenset({
    "airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "chebyshev_polynomial_t", "chebyshev_polynomial_u",
    "chebyshev_polynomial_v", "chebyshev_polynomial_w", "erfcx", "hermite_polynomial_h", "hermite_polynomial_he",
    "laguerre_polynomial_l", "legendre_polynomial_p", "log_ndtr", "modified_bessel_i0", "modified_bessel_i1",
    "modified_bessel_k0", "modified_bessel_k1", "ndtri", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
    "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
    "shifted_chebyshev_polynomial_w", "spherical_bessel_j0", "zeta"})
_HALF_NAMES = {mx.float16: "Half", mx.bfloat16: "BFloat16"}


def mixins() -> list:
    """The mixin classes, imported (in :data:`MIXINS`' order)."""
    return [getattr(importlib.import_module(module, __package__), name) for module, name in MIXINS]


def _load() -> None:
    """Copy the mixins' attributes onto :class:`MLXNamespaceOps` (once): the first mixin's win, as in a method
    order."""
    with _LOCK:
        if _LOADED[0]:
            return
        for cls in reversed(mixins()):
            for name, value in vars(cls).items():
                if not name.startswith("__"):
                    setattr(MLXNamespaceOps, name, value)
        _LOADED[0] = True


class MLXNamespaceOps:
    """The namespace functions of the MLX executor, reached by ``namespace_call`` (their mixins loaded on first
    use)."""

    __slots__ = ()

    # No __getattr__ here: a class that has one makes every attribute read of the executor slower (the per-op
    # path reads several). The mixins' names are reached through namespace_call, or are the stubs below, which
    # load the mixins (and are then replaced by the real methods).
    def geqrf(self, *args, **kwargs):
        _load()
        return self.geqrf(*args, **kwargs)

    def _lgamma(self, *args, **kwargs):
        _load()
        return self._lgamma(*args, **kwargs)

    def namespace_call(self, ns: str, name: str, args: list, kwargs: dict):
        """``<ns>_<name>(*args, **kwargs)`` on MLX arrays.

        Raises:
            UnsupportedOpError: MLX has no form of torch.<ns>.<name>.
            OpDtypeError: a half-precision input to a special function torch has no half kernel for.
        """
        if ns == "special" and name in _NO_HALF:
            arrays = [a for a in args if isinstance(a, mx.array)]
            result = arrays[0].dtype if arrays else None
            for a in arrays[1:]:
                result = (mx.zeros((), result) + mx.zeros((), a.dtype)).dtype  # MLX's promotion
            if result in _HALF_NAMES:
                raise OpDtypeError(f'"{name}" not implemented for \'{_HALF_NAMES[result]}\' (torch has no '
                                   "half-precision kernel for it); accepted: float32, float64, integer, bool")
        if not _LOADED[0]:
            _load()
        fn = getattr(self, f"{ns}_{name}", None)
        if fn is None:
            raise UnsupportedOpError(f"torch.{ns}.{name} is not supported on {self.device} (MLX executor)")
        return fn(*args, **kwargs)
