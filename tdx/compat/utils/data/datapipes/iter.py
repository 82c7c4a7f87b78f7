"""``tdx.utils.data.datapipes.iter`` (torch.utils.data.datapipes.iter): the basic iterable DataPipes.

``IterableWrapper`` (an iterable as a DataPipe), ``Mapper`` (``.map``), ``Filter`` (``.filter``) and ``Batcher``
(``.batch``), with torch's arguments and lengths; libraries subclass ``Batcher`` (torch_geometric's graph
batching). torch's other DataPipes here refuse at use by name. Pure Python: must never import torch or MLX.
"""

from __future__ import annotations

import copy

from ....._errors import TdxTypeError
from .datapipe import DataChunk, IterDataPipe
from .decorators import functional_datapipe

__tdx_partial__ = True  # torch's DataPipes here that tdx has not built refuse at use (tdx.aliasing.torch_paths)
__all__ = ["Batcher", "Filter", "IterableWrapper", "Mapper"]


class IterableWrapper(IterDataPipe):
    """An iterable as a DataPipe; ``deepcopy=True`` iterates a deep copy, so each pass sees the original items."""

    def __init__(self, iterable, deepcopy: bool = True) -> None:
        self.iterable, self.deepcopy = iterable, deepcopy

    def __iter__(self):
        source = self.iterable
        if self.deepcopy:
            try:
                source = copy.deepcopy(self.iterable)
            except TypeError:  # torch iterates the original when it cannot be copied
                pass
        yield from source

    def __len__(self) -> int:
        if hasattr(self.iterable, "__len__"):
            return len(self.iterable)
        raise TdxTypeError(f"{type(self).__name__} instance doesn't have valid length")


@functional_datapipe("map")
class Mapper(IterDataPipe):
    """Each item of ``datapipe`` passed through ``fn``."""

    def __init__(self, datapipe, fn, input_col=None, output_col=None) -> None:
        if input_col is not None or output_col is not None:
            raise TdxTypeError("Mapper(): input_col/output_col are not provided by tdx; map the whole item")
        self.datapipe, self.fn = datapipe, fn

    def __iter__(self):
        for item in self.datapipe:
            yield self.fn(item)

    def __len__(self) -> int:
        return len(self.datapipe)


@functional_datapipe("filter")
class Filter(IterDataPipe):
    """The items of ``datapipe`` for which ``filter_fn`` is true."""

    def __init__(self, datapipe, filter_fn, input_col=None) -> None:
        if input_col is not None:
            raise TdxTypeError("Filter(): input_col is not provided by tdx; filter on the whole item")
        self.datapipe, self.filter_fn = datapipe, filter_fn

    def __iter__(self):
        for item in self.datapipe:
            if self.filter_fn(item):
                yield item


@functional_datapipe("batch")
class Batcher(IterDataPipe):
    """The items of ``datapipe`` in batches of ``batch_size`` (each a ``wrapper_class``; the last one shorter
    unless ``drop_last``).

    Raises:
        TdxTypeError: ``batch_size`` is not a positive int (torch asserts it).
    """

    def __init__(self, datapipe, batch_size: int, drop_last: bool = False, wrapper_class=DataChunk) -> None:
        if not isinstance(batch_size, int) or batch_size <= 0:
            raise TdxTypeError(f"Batcher(): batch_size should be a positive integer, got {batch_size!r}")
        self.datapipe, self.batch_size, self.drop_last, self.wrapper_class = datapipe, batch_size, drop_last, \
            wrapper_class

    def __iter__(self):
        batch = []
        for item in self.datapipe:
            batch.append(item)
            if len(batch) == self.batch_size:
                yield self.wrapper_class(batch)
                batch = []
        if batch and not self.drop_last:
            yield self.wrapper_class(batch)

    def __len__(self) -> int:
        n = len(self.datapipe)
        return n // self.batch_size if self.drop_last else (n + self.batch_size - 1) // self.batch_size
