"""A library built as torchvision is: a compiled extension registers its operators with torch, then its Python
code, written against torch's API, registers their fakes and autocast kernels with torch.library and torch._C's
dispatcher at import, and wraps the operators for its users."""

import torch

from . import _ext  # noqa: F401 - the operators, registered with torch

NAME = "visionext"


@torch.library.register_fake("visionext::scale")
def _scale_fake(x, s):
    return torch.empty_like(x)


_AUTOCAST = torch._C.DispatchKeySet(torch._C.DispatchKey.AutocastCPU) | torch._C.DispatchKeySet(
    torch._C.DispatchKey.AutocastCUDA)
_lib = torch.library.Library("visionext", "IMPL")


def _scale_autocast(x, s):
    with torch._C._ExcludeDispatchKeyGuard(_AUTOCAST):
        return torch.ops.visionext.scale(x, s)


_lib.impl("scale", _scale_autocast, "AutocastCPU")


def scale(x, s):
    """``x * s`` by the compiled operator."""
    return torch.ops.visionext.scale(x, s)
