"""``torch.distributions``: torch's own distributions, constraints, transforms and KL registry,
executed from the installed torch's source with tdx as ``torch`` (see
:mod:`tdx.aliasing.torch_source`). Every class is torch's code running on tdx tensors, so
``log_prob``, ``rsample``, argument validation and ``kl_divergence`` have torch's semantics on
every executor. The submodules (``tdx.distributions.normal``, ``.constraints``, ``.transforms``,
``.kl``...) are torch's files too.

This package holds no code of its own beyond the call below; it must never import real torch
modules into the executed files. Without torch installed, importing it raises
:class:`tdx.NotProvidedError` naming what to install.
"""

from ...aliasing import torch_source as _torch_source

_torch_source.run_package(globals(), "distributions")
