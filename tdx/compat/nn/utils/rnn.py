"""``tdx.nn.utils.rnn``: packed and padded variable-length sequences, as torch's ``torch.nn.utils.rnn``.

A :class:`PackedSequence` holds the time steps of a batch of sequences sorted by decreasing
length, flattened so that step ``t`` holds ``batch_sizes[t]`` rows. Everything here is composed
from tdx tensor ops (``cat``, ``stack``, ``index_select``, ``narrow``), so it runs and
differentiates on every executor.

Deviation from torch: ``batch_sizes`` (and the ``lengths`` returned by
:func:`pad_packed_sequence`) live on the data's device rather than always on the CPU, so that MLX
code never loads torch. This module must never import torch or mlx.
"""

from __future__ import annotations

from collections import namedtuple

import tdx

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence", "pad_packed_sequence",
           "pad_sequence", "unpad_sequence", "pack_sequence", "unpack_sequence"]



class SequenceError(tdx.TdxError, RuntimeError):
    """A packing request torch refuses with a RuntimeError (unsorted or non-positive lengths...)."""


def _runtime_error(message: str) -> SequenceError:
    return SequenceError(message)


_PackedSequenceBase = namedtuple("PackedSequence", ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])


def invert_permutation(permutation):
    """The inverse of a permutation given as a 1-D int64 tensor (None stays None)."""
    if permutation is None:
        return None
    order = permutation.tolist()
    inverse = [0] * len(order)
    for i, p in enumerate(order):
        inverse[p] = i
    return tdx.tensor(inverse, dtype=tdx.int64, device=permutation.device)


class PackedSequence(_PackedSequenceBase):
    """The data and step sizes of a packed batch of variable-length sequences.

    Attributes:
        data: ``(sum(lengths), *)`` the steps of every sequence, step by step.
        batch_sizes: int64 ``(max_length,)``: how many sequences are still running at each step.
        sorted_indices: int64 permutation that sorted the batch by length (None when it was sorted).
        unsorted_indices: its inverse (None when it was sorted).

    Build one with :func:`pack_padded_sequence` or :func:`pack_sequence`, not by hand.
    """

    __slots__ = ()

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:
            if isinstance(data, (list, tuple)) and len(data) == 2:  # PackedSequence((data, batch_sizes))
                data, batch_sizes = data
            else:
                raise tdx.TdxValueError("PackedSequence needs batch_sizes (build it with pack_padded_sequence or "
                                        "pack_sequence)")
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def _map(self, fn):
        """A PackedSequence whose data is ``fn(data)``; the index tensors follow the data's device."""
        data = fn(self.data)
        if data.device == self.data.device:
            return type(self)(data, self.batch_sizes, self.sorted_indices, self.unsorted_indices)
        move = (lambda t: None if t is None else t.to(data.device))
        return type(self)(data, move(self.batch_sizes), move(self.sorted_indices), move(self.unsorted_indices))

    def to(self, *args, **kwargs):
        """``data.to(*args, **kwargs)``; returns ``self`` when nothing changes, as torch."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        return self._map(lambda _: data)

    def cpu(self):
        return self.to("cpu")

    def cuda(self, *args, **kwargs):
        return self._map(lambda d: d.cuda(*args, **kwargs))

    def double(self):
        return self.to(dtype=tdx.float64)

    def float(self):
        return self.to(dtype=tdx.float32)

    def half(self):
        return self.to(dtype=tdx.float16)

    def bfloat16(self):
        return self.to(dtype=tdx.bfloat16)

    def long(self):
        return self.to(dtype=tdx.int64)

    def int(self):
        return self.to(dtype=tdx.int32)

    def short(self):
        return self.to(dtype=tdx.int16)

    def char(self):
        return self.to(dtype=tdx.int8)

    def byte(self):
        return self.to(dtype=tdx.uint8)

    @property
    def is_cuda(self) -> bool:
        return self.data.is_cuda

    def is_pinned(self) -> bool:
        return False


def _length_list(lengths) -> list:
    if isinstance(lengths, tdx.Tensor):
        if lengths.ndim != 1:
            raise tdx.ShapeError(f"lengths must be a 1-D tensor or list of ints, got a {lengths.ndim}-D tensor")
        return [int(v) for v in lengths.tolist()]
    return [int(v) for v in lengths]


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):  # noqa: A002 - torch's name
    """Pack a padded batch of variable-length sequences.

    Args:
        input: ``(T, B, *)`` padded sequences (``(B, T, *)`` with ``batch_first``).
        lengths: the length of each sequence, a list of ints or a 1-D tensor.
        batch_first: whether ``input`` is ``(B, T, *)``.
        enforce_sorted: when True the sequences must already be sorted by decreasing length;
            otherwise they are sorted here and the permutation is kept in the result.

    Returns:
        A :class:`PackedSequence`.

    Raises:
        ShapeError: the number of lengths differs from the batch size.
        SequenceError: unsorted lengths under ``enforce_sorted``, a length <= 0 or longer than the input.
    """
    lengths = _length_list(lengths)
    batch_dim = 0 if batch_first else 1
    if input.ndim < 2:
        raise tdx.ShapeError(f"pack_padded_sequence expects an input of at least 2 dims (T, B, *), got "
                             f"{input.ndim}-D")
    if len(lengths) != input.shape[batch_dim]:
        raise tdx.ShapeError(f"Expected `len(lengths)` to be equal to batch_size, but got {len(lengths)} "
                             f"(batch_size={input.shape[batch_dim]})")
    if enforce_sorted:
        if any(lengths[i] < lengths[i + 1] for i in range(len(lengths) - 1)):
            raise _runtime_error("`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. "
                                 "You can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence "
                                 f"to sidestep this requirement if you do not need ONNX exportability (got {lengths})")
        sorted_indices = None
    else:
        order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
        sorted_indices = tdx.tensor(order, dtype=tdx.int64, device=input.device)
        input = input.index_select(batch_dim, sorted_indices)
        lengths = [lengths[i] for i in order]
    if lengths and lengths[-1] <= 0:
        raise _runtime_error("Length of all samples has to be greater than 0, but found an element in 'lengths' "
                             f"that is <= 0 (lengths {lengths})")
    steps = input.shape[1 - batch_dim]
    if lengths and lengths[0] > steps:
        raise _runtime_error(f"Expected sequence length to be at most the padded length {steps}, but got a "
                             f"sequence of length {lengths[0]}")
    if batch_first:
        input = input.transpose(0, 1)
    max_len = lengths[0] if lengths else 0
    batch_sizes = [sum(1 for n in lengths if n > t) for t in range(max_len)]
    data = tdx.cat([input[t].narrow(0, 0, bs) for t, bs in enumerate(batch_sizes)], 0)
    return PackedSequence(data, tdx.tensor(batch_sizes, dtype=tdx.int64, device=input.device), sorted_indices, None)


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """Undo :func:`pack_padded_sequence`: the padded batch and each sequence's length.

    Args:
        sequence: a :class:`PackedSequence`.
        batch_first: return ``(B, T, *)`` instead of ``(T, B, *)``.
        padding_value: the value of padded elements.
        total_length: pad to this many steps (at least the longest sequence's length).

    Returns:
        ``(padded, lengths)``; ``lengths`` is int64, in the batch's original order.

    Raises:
        TdxValueError: ``total_length`` is shorter than the longest sequence.
    """
    data, batch_sizes = sequence.data, [int(v) for v in sequence.batch_sizes.tolist()]
    max_len = len(batch_sizes)
    if total_length is not None:
        if total_length < max_len:
            raise tdx.TdxValueError("Expected total_length to be at least the length of the longest sequence in "
                                    f"input, but got total_length={total_length} and max sequence length being "
                                    f"{max_len}")
    else:
        total_length = max_len
    batch = batch_sizes[0] if batch_sizes else 0
    rest = tuple(data.shape[1:])
    steps, offset = [], 0
    for bs in batch_sizes:
        step = data.narrow(0, offset, bs)
        offset += bs
        if bs < batch:
            step = tdx.cat([step, tdx.full((batch - bs, *rest), padding_value, dtype=data.dtype,
                                           device=data.device)], 0)
        steps.append(step)
    if total_length > max_len:
        steps.append(tdx.full((total_length - max_len, batch, *rest), padding_value, dtype=data.dtype,
                              device=data.device))
        padded = tdx.cat([s.unsqueeze(0) if s.ndim == len(rest) + 1 else s for s in steps], 0)
    else:
        padded = tdx.stack(steps, 0)
    lengths = [sum(1 for bs in batch_sizes if bs > b) for b in range(batch)]
    lengths_t = tdx.tensor(lengths, dtype=tdx.int64, device=data.device)
    if sequence.unsorted_indices is not None:
        padded = padded.index_select(1, sequence.unsorted_indices)
        lengths_t = lengths_t.index_select(0, sequence.unsorted_indices.to(lengths_t.device))
    if batch_first:
        padded = padded.transpose(0, 1)
    return padded, lengths_t


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stack variable-length sequences ``(L_i, *)`` into one padded tensor.

    Args:
        sequences: a list (or tuple) of tensors with equal trailing dims, or one tensor (its first dim is the batch).
        batch_first: return ``(B, T, *)`` instead of ``(T, B, *)``.
        padding_value: the value of padded elements.
        padding_side: ``"right"`` (default) or ``"left"``.

    Raises:
        TdxValueError: an unknown ``padding_side``.
        ShapeError: trailing dims differ.
    """
    if padding_side not in ("left", "right"):
        raise tdx.TdxValueError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    if isinstance(sequences, tdx.Tensor):
        sequences = list(sequences.unbind(0))
    sequences = list(sequences)
    if not sequences:
        raise _runtime_error("received an empty list of sequences")
    rest = tuple(sequences[0].shape[1:])
    for s in sequences:
        if tuple(s.shape[1:]) != rest:
            raise tdx.ShapeError(f"pad_sequence: trailing dims of every sequence must match, got {tuple(s.shape)} "
                                 f"and {(sequences[0].shape[0], *rest)}")
    max_len = max(s.shape[0] for s in sequences)
    padded = []
    for s in sequences:
        missing = max_len - s.shape[0]
        if missing:
            fill = tdx.full((missing, *rest), padding_value, dtype=s.dtype, device=s.device)
            s = tdx.cat([s, fill] if padding_side == "right" else [fill, s], 0)
        padded.append(s)
    return tdx.stack(padded, 0 if batch_first else 1)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """Split a padded batch back into a list of sequences of the given lengths.

    Args:
        padded_sequences: ``(T, B, *)`` (``(B, T, *)`` with ``batch_first``).
        lengths: a list of ints or a 1-D tensor, one per sequence.
        batch_first: whether the batch dim comes first.
    """
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    return [seq.narrow(0, 0, n) for seq, n in zip(padded_sequences.unbind(0), _length_list(lengths))]


def pack_sequence(sequences, enforce_sorted=True):
    """Pack a list of variable-length sequences ``(L_i, *)`` (see :func:`pack_padded_sequence`)."""
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences):
    """The list of sequences a :class:`PackedSequence` holds, in their original order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
