"""``tdx.version`` (torch.version): the versions of the toolkits behind tdx's torch executor.

``cuda``, ``hip``, ``rocm``, ``xpu``, ``git_version`` and ``debug`` answer for the torch that runs
tdx's ``cpu``/``cuda``/``mps`` devices (``None`` for a toolkit it was not built with, as torch
answers); ``__version__`` is the version of torch whose API tdx follows (``tdx.__version__`` is tdx's own). Importing this module imports no framework: the first
read of a toolkit name imports torch, and where torch is not installed they read ``None``
(``debug``: False, ``git_version``: "").
"""

from __future__ import annotations

import importlib

__all__ = ["cuda", "hip", "rocm", "xpu", "git_version", "debug"]

_ABSENT = {"cuda": None, "hip": None, "rocm": None, "xpu": None, "git_version": "", "debug": False}


def __getattr__(name: str):
    if name == "__version__":
        from ..aliasing.torch_paths import torch_version

        return torch_version()
    if name not in _ABSENT:
        raise AttributeError(f"module 'tdx.version' has no attribute {name!r}; torch.version has "
                             f"{', '.join(__all__)}")
    try:
        real = importlib.import_module("torch.version")
    except ImportError:
        value = _ABSENT[name]
    else:
        value = getattr(real, name, _ABSENT[name])
    globals()[name] = value
    return value
