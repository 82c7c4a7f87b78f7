"""``tdx.distributed.checkpoint``: torch's distributed (sharded) checkpoint names, refused at use.

A tdx checkpoint is ``tdx.save``/``tdx.load`` (torch's format) or safetensors. The submodules
``hf_storage``, ``state_dict`` and ``default_planner`` hold the names libraries import from them.
Never imports a framework.
"""

from ....aliasing.refused import namespace_names

globals().update(namespace_names("torch.distributed.checkpoint"))
