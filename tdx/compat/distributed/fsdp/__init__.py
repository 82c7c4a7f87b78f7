"""``tdx.distributed.fsdp``: the import surface of torch's FSDP, refused at use.

``isinstance(m, FSDPModule)`` / ``FullyShardedDataParallel`` answer False; wrapping or sharding a
module raises :class:`tdx.UnsupportedOpError` from ``tdx.aliasing.refused``. Never imports a framework.
"""

from ....aliasing.refused import namespace_names

globals().update(namespace_names("torch.distributed.fsdp"))
