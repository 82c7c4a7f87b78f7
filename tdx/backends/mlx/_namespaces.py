"""``namespace_call`` for the MLX executor: torch's ``linalg``, ``fft`` and ``special`` functions by name.

The facade (:mod:`tdx.compat.dispatch`) asks for ``torch.<ns>.<name>``; this finds the executor
method ``<ns>_<name>`` of the mixins gathered here (:mod:`._matrix_functions`, :mod:`._spectral`,
:mod:`._special`, :mod:`._error_functions`, :mod:`._bessel`, :mod:`._incomplete_gamma`) or raises a
typed error naming the function; half-precision inputs to the special functions torch has no half
kernel for are refused as torch refuses them. Must never import torch or the facade.
"""

from __future__ import annotations

import mlx.core as mx

from ..._errors import OpDtypeError, UnsupportedOpError
from ._bessel import MLXBesselFunctions
from ._error_functions import MLXErrorFunctions
from ._incomplete_gamma import MLXIncompleteGamma
from ._matrix_functions import MLXMatrixFunctions
from ._special import MLXSpecialFunctions
from ._spectral import MLXSpectralOps


# torch.special functions torch has no float16/bfloat16 kernel for: refused in half precision, as torch's
_NO_HALF = frozenset({
    "airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "chebyshev_polynomial_t", "chebyshev_polynomial_u",
    "chebyshev_polynomial_v", "chebyshev_polynomial_w", "erfcx", "hermite_polynomial_h", "hermite_polynomial_he",
    "laguerre_polynomial_l", "legendre_polynomial_p", "log_ndtr", "modified_bessel_i0", "modified_bessel_i1",
    "modified_bessel_k0", "modified_bessel_k1", "ndtri", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
    "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
    "shifted_chebyshev_polynomial_w", "spherical_bessel_j0", "zeta"})
_HALF_NAMES = {mx.float16: "Half", mx.bfloat16: "BFloat16"}


class MLXNamespaceOps(MLXMatrixFunctions, MLXSpectralOps, MLXSpecialFunctions, MLXErrorFunctions,
                      MLXBesselFunctions, MLXIncompleteGamma):
    """The namespace functions of the MLX executor, reached by ``namespace_call``."""

    __slots__ = ()

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
        fn = getattr(self, f"{ns}_{name}", None)
        if fn is None:
            raise UnsupportedOpError(f"torch.{ns}.{name} is not supported on {self.device} (MLX executor)")
        return fn(*args, **kwargs)
