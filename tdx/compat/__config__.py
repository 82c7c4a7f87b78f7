"""``torch.__config__``: how the runtime was built and runs in parallel, as text.

``show()`` names tdx's version, the torch version whose API it follows and each executor's framework that is
installed (torch's own ``show()`` text follows when torch is installed); ``parallel_info()`` gives the thread
counts tdx runs its executors with. Reading them never imports a framework that is not installed; importing this
module imports none.
"""

from __future__ import annotations

import importlib.util
import sys

__all__ = ["show", "parallel_info"]


def show() -> str:
    """tdx's build and its frameworks' (torch's ``torch.__config__.show()`` included when installed)."""
    from ..aliasing.torch_paths import torch_version

    lines = [f"tdx {sys.modules['tdx'].__dict__['__version__']} (torch {torch_version()} API) built with:"]
    for name in ("torch", "mlx"):
        lines.append(f"  - {name}: {'installed' if importlib.util.find_spec(name) else 'not installed'}")
    text = "\n".join(lines) + "\n"
    if importlib.util.find_spec("torch"):
        import torch

        text += torch.__config__.show()
    return text


def parallel_info() -> str:
    """The thread counts of tdx's executors (``tdx.get_num_threads()``, interop threads)."""
    from .._tensor.runtime import get_num_interop_threads, get_num_threads

    return (f"tdx:\n\tget_num_threads() : {get_num_threads()}\n"
            f"\tget_num_interop_threads() : {get_num_interop_threads()}\n")
