"""``tdx.utils`` (torch.utils): the data-loading namespace ``tdx.utils.data``.

Importing this package must never import torch or MLX.
"""

from . import data

__all__ = ["data"]
