"""``tdx.distributed.tensor._utils``: torch's private DTensor helpers that libraries import, refused at call.

Never imports a framework.
"""

from ....aliasing.refused import namespace_names

globals().update(namespace_names("torch.distributed.tensor._utils"))
