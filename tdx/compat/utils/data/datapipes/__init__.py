"""``tdx.utils.data.datapipes`` (torch.utils.data.datapipes): the legacy DataPipe base classes.

Only the public core torch still exports from ``torch.utils.data``: the DataPipe bases, DataChunk
and the decorators. The built-in ``iter``/``map`` DataPipe catalogue is not provided. Pure Python:
must never import torch or MLX.
"""

from . import datapipe, decorators
from .datapipe import DataChunk, DFIterDataPipe, IterDataPipe, MapDataPipe
from .decorators import (argument_validation, functional_datapipe, guaranteed_datapipes_determinism,
                         non_deterministic, runtime_validation, runtime_validation_disabled)

__all__ = ["DFIterDataPipe", "DataChunk", "IterDataPipe", "MapDataPipe", "argument_validation", "datapipe",
           "decorators", "functional_datapipe", "guaranteed_datapipes_determinism", "non_deterministic",
           "runtime_validation", "runtime_validation_disabled"]
