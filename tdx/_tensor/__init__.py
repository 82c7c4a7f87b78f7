"""The ``tdx.Tensor`` facade and the torch-namespace functions, one module per op family.

:mod:`.tensor` holds the class (two slots: the native array and its executor) and the Python
protocol; :mod:`.wrapping` how a call becomes a result (wrapping, typed errors, operands); each
op family (:mod:`.elementwise`, :mod:`.reduction`, :mod:`.shape`, :mod:`.indexing`,
:mod:`.linalg`, :mod:`.random`, :mod:`.creation`, :mod:`.inplace`) holds its ``Tensor`` methods
and its ``torch.*`` functions together, and attaches the methods to the class; :mod:`.namespace`
gathers the functions for ``tdx/__init__``. :mod:`.views` keeps the view bookkeeping of
executors whose arrays are immutable, :mod:`.operands` the checks the composite ops share,
:mod:`.generator` ``tdx.Generator``, :mod:`.repr` printing. torch's top-level names that are no op family
sit beside the namespace they fill: :mod:`.runtime` (process settings), :mod:`.control_flow`, :mod:`.symbolic`,
:mod:`.nn_forms` (ATen-signature nn ops); :mod:`.dispatch` is the call path of ``tdx.linalg``/``fft``/``special``.

Nothing here imports a framework, and no executor imports anything here: the dependency runs
from the facade to the executors, never back.
"""

from __future__ import annotations

from . import namespace  # noqa: F401 - attaches every family's methods to Tensor
from .tensor import Tensor
from .wrapping import Size, wrap

__all__ = ["Tensor", "Size", "wrap"]
