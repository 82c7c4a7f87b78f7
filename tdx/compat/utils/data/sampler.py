"""Samplers: which dataset indices a DataLoader reads, and in which order (torch.utils.data's).

Random samplers draw from tdx's cpu generators with the same calls torch makes (a seed from
the global generator, then ``randperm``/``randint``/``multinomial`` on a fresh Generator),
so the same ``tdx.manual_seed`` gives torch's order. Must never import torch or MLX.
"""

from __future__ import annotations

import math

import tdx
from tdx import backends as _backends

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler", "WeightedRandomSampler",
           "BatchSampler", "DistributedSampler", "draw_seed"]

_HOST = _backends.HOST  # where samplers draw, as torch's samplers draw on its cpu generators


def draw_seed(generator=None) -> int:
    """A 63-bit seed, the value torch's ``torch.empty((), dtype=torch.int64).random_(generator=g)``
    gives from the same generator state.

    torch's ``random_()`` on int64 is ``random64() % 2**63``; ``randint`` over a range of exactly
    2**63 is ``random64() % 2**63 + low``: one 64-bit draw either way, so shifting ``low`` back
    gives the same number.
    """
    half = 1 << 62
    return int(tdx.randint(-half, half, (), dtype=tdx.int64, device=_HOST, generator=generator).item()) + half


def _host_generator(seed: int):
    g = tdx.Generator(device=_HOST)
    g.manual_seed(seed)
    return g


def _check_bool(value, name):
    if not isinstance(value, bool):
        raise tdx.TdxTypeError(f"{name} should be a boolean value, but got {name}={value}")


def _check_num_samples(value):
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise tdx.TdxValueError(f"num_samples should be a positive integer value, but got num_samples={value}")


class Sampler:
    """Base class: subclasses define ``__iter__`` over indices (and ``__len__`` when known)."""

    def __init__(self, data_source=None):
        pass

    def __iter__(self):
        raise NotImplementedError


class SequentialSampler(Sampler):
    """Indices 0..len-1 in order."""

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


class RandomSampler(Sampler):
    """Random indices: a permutation per pass, or draws with replacement.

    Args:
        data_source: the dataset (only its length is used).
        replacement: draw with replacement (``num_samples`` draws, 32 at a time as torch).
        num_samples: how many indices; default ``len(data_source)``. Without replacement,
            more than the length gives several permutations in a row.
        generator: a cpu ``tdx.Generator``; None seeds a fresh one from the global generator
            on each pass, as torch does.

    Raises:
        TdxTypeError: ``replacement`` is not a bool. TdxValueError: ``num_samples`` is not a
        positive int.
    """

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        _check_bool(replacement, "replacement")
        _check_num_samples(self.num_samples)

    @property
    def num_samples(self) -> int:
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        n = len(self.data_source)
        generator = self.generator if self.generator is not None else _host_generator(draw_seed())
        if self.replacement:
            for _ in range(self.num_samples // 32):
                yield from tdx.randint(0, n, (32,), dtype=tdx.int64, device=_HOST, generator=generator).tolist()
            yield from tdx.randint(0, n, (self.num_samples % 32,), dtype=tdx.int64, device=_HOST,
                                   generator=generator).tolist()
        else:
            for _ in range(self.num_samples // n):
                yield from tdx.randperm(n, generator=generator, device=_HOST).tolist()
            yield from tdx.randperm(n, generator=generator, device=_HOST).tolist()[:self.num_samples % n]

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices in a random order (a fresh permutation per pass)."""

    def __init__(self, indices, generator=None):
        self.indices = indices
        self.generator = generator

    def __iter__(self):
        for i in tdx.randperm(len(self.indices), generator=self.generator, device=_HOST).tolist():
            yield self.indices[i]

    def __len__(self):
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """Indices 0..len(weights)-1 drawn with probabilities proportional to ``weights``.

    Raises:
        TdxTypeError: ``replacement`` is not a bool. TdxValueError: ``num_samples`` is not a
        positive int, or ``weights`` is not one-dimensional.
    """

    def __init__(self, weights, num_samples, replacement=True, generator=None):
        _check_num_samples(num_samples)
        _check_bool(replacement, "replacement")
        w = weights if isinstance(weights, tdx.Tensor) else tdx.as_tensor(weights, dtype=tdx.float64, device=_HOST)
        w = w.to(device=_HOST, dtype=tdx.float64)
        if w.ndim != 1:
            raise tdx.TdxValueError(f"weights should be a 1d sequence but given weights have shape {tuple(w.shape)}")
        self.weights = w
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self):
        yield from tdx.multinomial(self.weights, self.num_samples, self.replacement,
                                   generator=self.generator).tolist()

    def __len__(self):
        return self.num_samples


class BatchSampler(Sampler):
    """Groups another sampler's indices into lists of ``batch_size``.

    Raises:
        TdxValueError: ``batch_size`` is not a positive int or ``drop_last`` not a bool.
    """

    def __init__(self, sampler, batch_size, drop_last):
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise tdx.TdxValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise tdx.TdxValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self):
        batch = []
        for idx in self.sampler:
            batch.append(idx)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self):
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size


class DistributedSampler(Sampler):
    """The share of the dataset one of ``num_replicas`` processes reads (torch's layout).

    tdx has no process group: ``num_replicas`` and ``rank`` must be given.

    Raises:
        TdxValueError: ``num_replicas``/``rank`` missing, or ``rank`` outside [0, num_replicas).
    """

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0, drop_last=False):
        if num_replicas is None or rank is None:
            raise tdx.TdxValueError("DistributedSampler needs num_replicas and rank given explicitly: "
                                    "tdx has no distributed process group to ask")
        if rank >= num_replicas or rank < 0:
            raise tdx.TdxValueError(f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        if drop_last and len(dataset) % num_replicas != 0:
            self.num_samples = math.ceil((len(dataset) - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(len(dataset) / num_replicas)
        self.total_size = self.num_samples * num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self):
        if self.shuffle:
            indices = tdx.randperm(len(self.dataset), generator=_host_generator(self.seed + self.epoch),
                                   device=_HOST).tolist()
        else:
            indices = list(range(len(self.dataset)))
        if not self.drop_last:
            pad = self.total_size - len(indices)
            if pad <= len(indices):
                indices += indices[:pad]
            else:
                indices += (indices * math.ceil(pad / len(indices)))[:pad]
        else:
            indices = indices[:self.total_size]
        return iter(indices[self.rank:self.total_size:self.num_replicas])

    def __len__(self):
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Make the next pass's shuffle differ (seed + epoch), the same on every replica."""
        self.epoch = epoch
