"""``torch.utils._sympy``: torch's own sympy helpers for symbolic sizes (``numbers.IntInfinity``,
``value_ranges``, ``functions``...), executed from the installed torch's source with tdx as ``torch``
(see :mod:`tdx.aliasing.torch_source`); libraries import its number classes (transformers' exporters
read ``numbers.IntInfinity`` at import). Its submodules are torch's files too.

This package holds no code of its own beyond the call below; it must never import real torch
modules into the executed files. Without torch installed, importing it raises
:class:`tdx.NotProvidedError` naming what to install.
"""

from ....aliasing import torch_source as _torch_source

_torch_source.run_package(globals(), "utils._sympy")
