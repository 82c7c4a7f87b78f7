"""``tdx.utils._pytree`` (torch's ``torch.utils._pytree``): torch's own pure-Python module, reused at run time.

``tree_flatten``, ``tree_unflatten``, ``tree_map``, ``register_pytree_node``, ``TreeSpec``... are the installed
torch's objects (one registry, torch's exact semantics); tdx tensors are leaves, as torch's are. The module
is looked up on first use, so importing this one never imports torch; without torch installed its names
are absent (``NotProvidedAttributeError``). Must never import a framework at import time.
"""

from __future__ import annotations

import importlib

from ..._errors import NotProvidedAttributeError


def _torch_pytree():
    try:
        return importlib.import_module("torch.utils._pytree")
    except ImportError as err:
        raise NotProvidedAttributeError("torch.utils._pytree needs the installed torch package, whose pure-Python "
                                        "module tdx reuses (pip install 'tdx[torch]')") from err


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    value = getattr(_torch_pytree(), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(dir(_torch_pytree())))
