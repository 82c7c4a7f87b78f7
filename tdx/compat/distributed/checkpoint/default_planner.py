"""``tdx.distributed.checkpoint.default_planner``: torch's names, refused at use (see ``tdx.distributed.checkpoint``)."""

from ....aliasing.refused import namespace_names

globals().update(namespace_names("torch.distributed.checkpoint.default_planner"))
