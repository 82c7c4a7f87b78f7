"""Mirror of ``torch.backends.cpu``: what vector instruction set torch's CPU kernels use.

Answers from torch when it can be imported, ``"DEFAULT"`` otherwise. It must never import
torch when it is imported itself.
"""

from . import _flags

_TDX_EXTENSIONS = ()  # names tdx adds to torch.backends.cpu: none

__all__ = ["get_cpu_capability"]


def get_cpu_capability() -> str:
    """The CPU capability torch's kernels were dispatched for.

    Returns:
        One of ``"DEFAULT"``, ``"VSX"``, ``"Z VECTOR"``, ``"NO AVX"``, ``"AVX2"``, ``"AVX512"``,
        ``"SVE256"``; ``"DEFAULT"`` when torch cannot be imported.
    """
    torch = _flags.torch_module()
    return "DEFAULT" if torch is None else torch.backends.cpu.get_cpu_capability()
