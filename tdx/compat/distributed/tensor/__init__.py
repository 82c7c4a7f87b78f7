"""``tdx.distributed.tensor``: the import surface of torch's distributed tensors (DTensor), refused at use.

Libraries (transformers, accelerate) import ``DTensor``, the placements and ``distribute_tensor`` at
module level and then ask ``isinstance(x, DTensor)``: that answers False for every tdx tensor, and
the placements are plain values (:mod:`.placement_types`). Making a ``DTensor`` or distributing a
tensor raises :class:`tdx.UnsupportedOpError` from ``tdx.aliasing.refused``. Never imports a framework.
"""

from __future__ import annotations

from ....aliasing.refused import namespace_names
from .placement_types import Partial, Placement, Replicate, Shard

__all__ = ["DTensor", "DeviceMesh", "Placement", "Shard", "Replicate", "Partial", "distribute_tensor",
           "distribute_module", "init_device_mesh"]

globals().update(namespace_names("torch.distributed.tensor"))
