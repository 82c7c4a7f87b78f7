"""``tdx.utils._pytree``: torch's pytree utilities (``tree_map``, ``tree_flatten``, node registration).

torch's ``torch.utils._pytree`` is pure Python over arbitrary containers and knows nothing of
tensors, so this module hands out its very functions (the one registry of node types that torch's
own code and tdx's users share), loading torch's module on the first attribute read. Importing this
module imports no framework; reading a name imports torch.
"""

from __future__ import annotations

import importlib


def _real():
    return importlib.import_module("torch.utils._pytree")


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    try:
        value = getattr(_real(), name)
    except AttributeError:
        raise AttributeError(f"module 'tdx.utils._pytree' has no attribute {name!r} "
                             f"(torch.utils._pytree has none either)") from None
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(dir(_real())))
