"""``tdx.distributed._composable.fsdp``: ``fully_shard`` and its policies, refused at use (see ``tdx.distributed.fsdp``)."""

from .....aliasing.refused import namespace_names

globals().update(namespace_names("torch.distributed._composable.fsdp"))
