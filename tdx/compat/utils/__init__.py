"""``tdx.utils`` (torch.utils): the data-loading namespace ``tdx.utils.data``; ``checkpoint`` and ``_pytree`` on import.

Importing this package must never import torch or MLX.
"""

from . import data

__all__ = ["data"]
