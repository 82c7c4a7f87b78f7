"""``tdx.distributed._functional_collectives``: torch's functional collectives over DTensor, refused at call.

Use ``tdx.distributed``'s in-place collectives instead. Never imports a framework.
"""

from ...aliasing.refused import namespace_names

globals().update(namespace_names("torch.distributed._functional_collectives"))
