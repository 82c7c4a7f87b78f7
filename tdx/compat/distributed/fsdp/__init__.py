"""``tdx.distributed.fsdp``: the import surface of torch's FSDP, refused at use.

``isinstance(m, FSDPModule)`` / ``FullyShardedDataParallel`` answer False; wrapping or sharding a
module raises :class:`tdx.UnsupportedOpError` from ``tdx.compat.refused``. Never imports a framework.
"""

from ...refused import namespace_names

globals().update(namespace_names("torch.distributed.fsdp"))
