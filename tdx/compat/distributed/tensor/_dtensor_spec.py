"""``tdx.distributed.tensor._dtensor_spec`` (torch's private ``torch.distributed.tensor._dtensor_spec``): where torch
keeps ``DTensorSpec`` and ``TensorMeta``, the layout records of a distributed tensor. tdx has no distributed tensor,
so both are refused at use from ``tdx.aliasing.refused``; importing them works, as libraries import them. This
module must never import a framework.
"""

from __future__ import annotations

from ....aliasing.refused import namespace_names

globals().update(namespace_names("torch.distributed.tensor._dtensor_spec"))
