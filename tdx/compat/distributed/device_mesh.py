"""``tdx.distributed.device_mesh``: ``DeviceMesh`` and ``init_device_mesh``, refused at use.

``isinstance(x, DeviceMesh)`` answers False; making a mesh raises :class:`tdx.UnsupportedOpError`
from ``tdx.aliasing.refused``. Never imports a framework.
"""

from ...aliasing.refused import namespace_names

__all__ = ["DeviceMesh", "init_device_mesh"]

globals().update(namespace_names("torch.distributed.device_mesh"))
