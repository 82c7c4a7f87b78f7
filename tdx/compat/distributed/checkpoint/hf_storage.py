"""``tdx.distributed.checkpoint.hf_storage``: torch's names, refused at use (see ``tdx.distributed.checkpoint``)."""

from ....aliasing.refused import namespace_names

globals().update(namespace_names("torch.distributed.checkpoint.hf_storage"))
