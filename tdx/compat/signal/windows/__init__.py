"""``tdx.signal.windows``: torch.signal.windows' window functions, composed from tdx ops on every executor.

The functions live in :mod:`.windows` (as torch's do); :mod:`.periodic` holds torch's top-level
``hann_window``/``hamming_window``/``blackman_window``/``bartlett_window``/``kaiser_window``, which
``tdx`` exposes under those names. Must never import a framework.
"""

from __future__ import annotations

from . import windows
from .windows import (bartlett, blackman, cosine, exponential, gaussian, general_cosine, general_hamming, hamming,
                      hann, kaiser, nuttall)

__all__ = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine", "general_hamming", "hamming",
           "hann", "kaiser", "nuttall", "windows"]
