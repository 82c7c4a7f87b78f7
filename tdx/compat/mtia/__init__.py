"""``tdx.mtia`` (torch's ``torch.mtia``): MTIA devices are absent in tdx, answered as torch answers on a build
without MTIA (:mod:`tdx.aliasing.absent_device`); torch's other ``torch.mtia`` names refuse at use. Must never
import a framework."""

from __future__ import annotations

from ...aliasing.absent_device import populate

__all__ = populate(globals(), "mtia")
__tdx_partial__ = True  # Stream, Event, MTIAGraph... refuse at use (tdx.aliasing.torch_paths)
