"""``tdx.xpu`` (torch's ``torch.xpu``): Intel GPUs are absent in tdx, answered as torch answers on a build without
XPU (:mod:`tdx.aliasing.absent_device`); torch's other ``torch.xpu`` names refuse at use. Must never import a
framework."""

from __future__ import annotations

from ...aliasing.absent_device import populate

__all__ = populate(globals(), "xpu")
__tdx_partial__ = True  # Stream, Event, XPUGraph... refuse at use (tdx.aliasing.torch_paths)
