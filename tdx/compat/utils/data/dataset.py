"""Datasets: torch.utils.data's Dataset family and :func:`random_split`.

Map-style datasets answer ``dataset[i]``; iterable ones are iterated. Randomness
(:func:`random_split`) draws from tdx's cpu generator exactly as torch draws from its own,
so the same seed gives torch's split. Must never import torch or MLX.
"""

from __future__ import annotations

import bisect
import itertools
import math
import warnings

import tdx

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "StackDataset", "ConcatDataset", "ChainDataset",
           "Subset", "random_split"]


class Dataset:
    """A map-style dataset: subclasses define ``__getitem__`` (and usually ``__len__``)."""

    def __getitem__(self, index):
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other):
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """A dataset that is a stream: subclasses define ``__iter__``.

    With ``num_workers > 0`` each worker iterates its own copy; use
    :func:`tdx.utils.data.get_worker_info` in ``__iter__`` to split the work.
    """

    def __iter__(self):
        raise NotImplementedError("Subclasses of IterableDataset should implement __iter__.")

    def __add__(self, other):
        return ChainDataset([self, other])


class TensorDataset(Dataset):
    """Samples are the ``index``-th rows of each tensor.

    Args:
        *tensors: tensors with the same size of their first dimension.

    Raises:
        ShapeError: the first dimensions differ (torch raises an AssertionError here; tdx
            raises its RuntimeError-class error naming the sizes).
    """

    def __init__(self, *tensors):
        sizes = [t.size(0) for t in tensors]
        if any(s != sizes[0] for s in sizes):
            raise tdx.ShapeError(f"Size mismatch between tensors: first dimensions are {sizes}")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self):
        return self.tensors[0].size(0)


class StackDataset(Dataset):
    """Samples are tuples (from positional datasets) or dicts (from keyword ones) of the
    datasets' samples at the same index.

    Raises:
        TdxValueError: both or neither of args/kwargs given, or the lengths differ.
    """

    def __init__(self, *args, **kwargs):
        if args:
            if kwargs:
                raise tdx.TdxValueError("Supported either ``tuple``- (via ``args``) or``dict``- (via ``kwargs``) "
                                        "like input/output, but both types are given.")
            self._length = len(args[0])
            if any(self._length != len(d) for d in args):
                raise tdx.TdxValueError(f"Size mismatch between datasets: {[len(d) for d in args]}")
            self.datasets = args
        elif kwargs:
            values = list(kwargs.values())
            self._length = len(values[0])
            if any(self._length != len(d) for d in values):
                raise tdx.TdxValueError(f"Size mismatch between datasets: { {k: len(d) for k, d in kwargs.items()} }")
            self.datasets = kwargs
        else:
            raise tdx.TdxValueError("At least one dataset should be passed")

    def __getitem__(self, index):
        if isinstance(self.datasets, dict):
            return {k: d[index] for k, d in self.datasets.items()}
        return tuple(d[index] for d in self.datasets)

    def __getitems__(self, indices):
        return [self[i] for i in indices]

    def __len__(self):
        return self._length


class ConcatDataset(Dataset):
    """The concatenation of map-style datasets.

    Raises:
        TdxValueError: no dataset given. TdxTypeError: one of them is an IterableDataset.
    """

    @staticmethod
    def cumsum(sequence):
        out, total = [], 0
        for d in sequence:
            total += len(d)
            out.append(total)
        return out

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise tdx.TdxValueError("datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise tdx.TdxTypeError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = self.cumsum(self.datasets)

    def __len__(self):
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        if idx < 0:
            if -idx > len(self):
                raise tdx.TdxValueError("absolute value of index should not exceed dataset length")
            idx = len(self) + idx
        which = bisect.bisect_right(self.cumulative_sizes, idx)
        start = self.cumulative_sizes[which - 1] if which else 0
        return self.datasets[which][idx - start]


class ChainDataset(IterableDataset):
    """Iterable datasets chained one after the other.

    Raises:
        TdxTypeError: (when iterated or measured) a member is not an IterableDataset.
    """

    def __init__(self, datasets):
        self.datasets = datasets

    def __iter__(self):
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise tdx.TdxTypeError("ChainDataset only supports IterableDataset")
            yield from d

    def __len__(self):
        total = 0
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise tdx.TdxTypeError("ChainDataset only supports IterableDataset")
            total += len(d)
        return total


class Subset(Dataset):
    """The samples of ``dataset`` at ``indices``, in that order."""

    def __init__(self, dataset, indices):
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices):
        if callable(getattr(self.dataset, "__getitems__", None)):
            return self.dataset.__getitems__([self.indices[i] for i in indices])
        return [self.dataset[self.indices[i]] for i in indices]

    def __len__(self):
        return len(self.indices)


def random_split(dataset, lengths, generator=None):
    """Split ``dataset`` at random into non-overlapping :class:`Subset` s, as torch's.

    Args:
        dataset: a map-style dataset.
        lengths: the lengths of the splits, or fractions summing to 1 (each split gets
            ``floor(frac * len)``, and the remainder is dealt round-robin, as torch).
        generator: a cpu ``tdx.Generator``; None draws from the global cpu generator
            (the same numbers as torch's for the same ``tdx.manual_seed``).

    Raises:
        TdxValueError: a fraction outside [0, 1], or lengths not summing to ``len(dataset)``.
    """
    lengths = list(lengths)
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        sizes = []
        for i, frac in enumerate(lengths):
            if frac < 0 or frac > 1:
                raise tdx.TdxValueError(f"Fraction at index {i} is not between 0 and 1")
            sizes.append(math.floor(len(dataset) * frac))
        for i in range(len(dataset) - sum(sizes)):
            sizes[i % len(sizes)] += 1
        for i, n in enumerate(sizes):
            if n == 0:
                warnings.warn(f"Length of split at index {i} is 0. This might result in an empty dataset.",
                              stacklevel=2)
        lengths = sizes
    if sum(lengths) != len(dataset):
        raise tdx.TdxValueError("Sum of input lengths does not equal the length of the input dataset!")
    order = tdx.randperm(sum(lengths), generator=generator, device=tdx.backends.HOST).tolist()
    return [Subset(dataset, order[end - n:end]) for end, n in zip(itertools.accumulate(lengths), lengths)]
