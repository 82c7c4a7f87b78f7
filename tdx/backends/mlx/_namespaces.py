"""``namespace_call`` for the MLX executor: torch's ``linalg``, ``fft`` and ``special`` functions by name.

The facade (:mod:`tdx.compat.dispatch`) asks for ``torch.<ns>.<name>``; this finds the executor
method ``<ns>_<name>`` of the mixins gathered here (:mod:`._matrix_functions`, :mod:`._spectral`,
:mod:`._special`) or raises a typed error naming the function. Must never import torch or the facade.
"""

from __future__ import annotations

from ..._errors import UnsupportedOpError
from ._bessel import MLXBesselFunctions
from ._error_functions import MLXErrorFunctions
from ._incomplete_gamma import MLXIncompleteGamma
from ._matrix_functions import MLXMatrixFunctions
from ._special import MLXSpecialFunctions
from ._spectral import MLXSpectralOps


class MLXNamespaceOps(MLXMatrixFunctions, MLXSpectralOps, MLXSpecialFunctions, MLXErrorFunctions,
                      MLXBesselFunctions, MLXIncompleteGamma):
    """The namespace functions of the MLX executor, reached by ``namespace_call``."""

    __slots__ = ()

    def namespace_call(self, ns: str, name: str, args: list, kwargs: dict):
        """``<ns>_<name>(*args, **kwargs)`` on MLX arrays.

        Raises:
            UnsupportedOpError: MLX has no form of torch.<ns>.<name>.
        """
        fn = getattr(self, f"{ns}_{name}", None)
        if fn is None:
            raise UnsupportedOpError(f"torch.{ns}.{name} is not supported on {self.device} (MLX executor)")
        return fn(*args, **kwargs)
