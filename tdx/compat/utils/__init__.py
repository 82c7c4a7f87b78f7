"""``tdx.utils`` (torch.utils): the data-loading namespace ``tdx.utils.data``, and
``tdx.utils.checkpoint`` (loaded on first use).

Importing this package must never import torch or MLX.
"""

from . import data

__all__ = ["data", "checkpoint"]


def __getattr__(name):
    if name == "checkpoint":
        import importlib

        return importlib.import_module(f"{__name__}.checkpoint")
    raise AttributeError(f"module 'tdx.utils' has no attribute {name!r}")
