"""``tdx.utils.data`` (torch.utils.data): datasets, samplers, collation and the DataLoader.

Everything here works through tdx tensors only and must never import torch or MLX at
module level: a worker process imports this package before it knows its device.
"""

from .collate import default_collate, default_convert
from .dataloader import DataLoader
from .dataset import (ChainDataset, ConcatDataset, Dataset, IterableDataset, StackDataset, Subset,
                      TensorDataset, random_split)
from .sampler import (BatchSampler, DistributedSampler, RandomSampler, Sampler, SequentialSampler,
                      SubsetRandomSampler, WeightedRandomSampler)
from .worker import WorkerInfo, get_worker_info
from . import datapipes, distributed, graph, graph_settings  # noqa: E402  (torch's submodules)
from .datapipes import (DataChunk, DFIterDataPipe, IterDataPipe, MapDataPipe, argument_validation,
                        functional_datapipe, guaranteed_datapipes_determinism, non_deterministic, runtime_validation,
                        runtime_validation_disabled)

__all__ = ["BatchSampler", "ChainDataset", "ConcatDataset", "DataLoader", "Dataset", "DistributedSampler",
           "IterableDataset", "RandomSampler", "Sampler", "SequentialSampler", "StackDataset", "Subset",
           "SubsetRandomSampler", "TensorDataset", "WeightedRandomSampler", "WorkerInfo", "default_collate",
           "default_convert", "get_worker_info", "random_split", "DFIterDataPipe", "DataChunk", "IterDataPipe",
           "MapDataPipe", "argument_validation", "functional_datapipe", "guaranteed_datapipes_determinism",
           "non_deterministic", "runtime_validation", "runtime_validation_disabled"]
