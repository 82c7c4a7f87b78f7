"""``tdx.utils.data.distributed`` (torch.utils.data.distributed): home of DistributedSampler.

A re-export of the sampler defined with the others in ``sampler.py``; must never define
sampling logic of its own nor import torch or MLX.
"""

from .sampler import DistributedSampler

__all__ = ["DistributedSampler"]
