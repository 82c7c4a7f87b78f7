"""Mirror of ``torch.backends.xeon``, which holds no public names in torch (only the
``run_cpu`` launcher script, run as ``python -m torch.backends.xeon.run_cpu``).

Present so that ``tdx.backends.xeon`` resolves like ``torch.backends.xeon``; it must never
import torch.
"""

_TDX_EXTENSIONS = ()  # names tdx adds to torch.backends.xeon: none
