"""``tdx.distributed.checkpoint.state_dict``: torch's names, refused at use (see ``tdx.distributed.checkpoint``)."""

from ....aliasing.refused import namespace_names

globals().update(namespace_names("torch.distributed.checkpoint.state_dict"))
