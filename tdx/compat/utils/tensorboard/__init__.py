"""``torch.utils.tensorboard``: :class:`SummaryWriter` writing TensorBoard event files from tdx values.

Needs the ``tensorboard`` package (an optional extra), as torch's does: importing this module
without it raises the ImportError torch raises. Values of every executor are accepted (brought to
the host as NumPy). Must never import a framework.
"""

from __future__ import annotations

try:
    import tensorboard  # noqa: F401 - only checks that the optional extra is installed
except ImportError as err:  # pragma: no cover - the suite's venv has it
    raise ImportError("TensorBoard logging requires TensorBoard version 1.15 or above") from err

from .writer import FileWriter, SummaryWriter

__all__ = ["SummaryWriter", "FileWriter"]
