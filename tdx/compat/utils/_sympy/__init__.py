"""``torch.utils._sympy``: torch's own sympy helpers for symbolic sizes (``numbers.IntInfinity``,
``value_ranges``, ``functions``...), executed from the installed torch's source with tdx as ``torch``
(see :mod:`tdx.aliasing.torch_source`); libraries import its number classes (transformers' exporters
read ``numbers.IntInfinity`` at import). Its submodules are torch's files too.

torch's number classes register themselves in sympy's one process-wide singleton registry (``sympy.S``):
two copies in one process would replace each other's. So in a process where real torch's own
``torch.utils._sympy`` is loaded (real torch and tdx side by side, without the alias), importing this
package raises :class:`tdx.NotProvidedError` and leaves torch's untouched; under ``python -m tdx run``
there is only this one.

This package holds no code of its own beyond that check and the call below; it must never import real
torch modules into the executed files. Without torch installed, importing it raises
:class:`tdx.NotProvidedError` naming what to install.
"""

import sys as _sys

from ...._errors import NotProvidedError as _NotProvidedError
from ....aliasing import torch_source as _torch_source

_theirs = _sys.modules.get("torch.utils._sympy")
if _theirs is not None and getattr(_theirs, "__name__", None) == "torch.utils._sympy":
    raise _NotProvidedError(
        "torch.utils._sympy (tdx.utils._sympy) runs torch's own sympy helpers, whose classes register in sympy's "
        "process-wide registry; real torch's copy is already loaded in this process, and a second would replace "
        "its classes. Use torch.utils._sympy itself here, or run the program under `python -m tdx run`.")

_torch_source.run_package(globals(), "utils._sympy")
