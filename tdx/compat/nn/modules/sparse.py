"""Embedding modules of ``tdx.nn``: ``Embedding`` (a lookup table of rows) and ``EmbeddingBag``
(sums, means or maxima of bags of rows), with ``from_pretrained`` constructors.

Weights are drawn from ``N(0, 1)`` as torch's (the ``padding_idx`` row zeroed), so on a torch
device the same seed gives torch's exact values. Gradients are dense: ``sparse=True`` raises.
This module must never import torch or mlx.
"""

from __future__ import annotations

import tdx
from .. import functional as F
from ..parameter import Parameter
from . import _default_init as init
from .module import Module

__all__ = ["Embedding", "EmbeddingBag"]


def _padding_index(padding_idx, num_embeddings: int):
    """``padding_idx`` as a row index in ``[0, num_embeddings)`` (negative values count from the end)."""
    if padding_idx is None:
        return None
    if not -num_embeddings <= padding_idx < num_embeddings:
        raise tdx.TdxValueError(f"Padding_idx must be within num_embeddings (got padding_idx={padding_idx} for "
                                f"num_embeddings={num_embeddings})")
    return padding_idx % num_embeddings


def _no_sparse(sparse: bool, cls: str) -> None:
    if sparse:
        raise tdx.UnsupportedOpError(f"{cls}(sparse=True): tdx has no sparse gradients; pass sparse=False (the "
                                     "gradient is then a dense tensor of the weight's shape)")


def _table(weight, num_embeddings: int, embedding_dim: int, freeze: bool, device, dtype):
    """The weight Parameter: fresh (``None``) or taking ``weight``, which must be ``(num, dim)``."""
    if weight is None:
        return Parameter(tdx.empty((num_embeddings, embedding_dim), device=device, dtype=dtype),
                         requires_grad=not freeze), True
    if not isinstance(weight, tdx.Tensor) or list(weight.shape) != [num_embeddings, embedding_dim]:
        raise tdx.TdxValueError(f"Shape of weight does not match num_embeddings and embedding_dim (got "
                                f"{list(getattr(weight, 'shape', []))}, expected {[num_embeddings, embedding_dim]})")
    return Parameter(weight, requires_grad=not freeze), False


class Embedding(Module):
    """A lookup table: ``forward(indices)`` returns the rows of ``weight`` at ``indices``.

    Args:
        num_embeddings: the number of rows.
        embedding_dim: the size of each row.
        padding_idx: a row that gets no gradient (initialised to zeros).
        max_norm: rows looked up with a larger ``norm_type``-norm are renormalised in place.
        norm_type: the norm's exponent for ``max_norm``. Default: 2.
        scale_grad_by_freq: scale gradients by the inverse frequency of each index in the mini-batch.
        sparse: must be False (tdx gradients are dense).
        device: device of the weight.
        dtype: dtype of the weight.

    Raises:
        TdxValueError: ``padding_idx`` out of range, or a given ``_weight`` of the wrong shape.
        UnsupportedOpError: ``sparse=True``.
    """

    __constants__ = ["num_embeddings", "embedding_dim", "padding_idx", "max_norm", "norm_type",
                     "scale_grad_by_freq", "sparse"]

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx=None, max_norm=None, norm_type=2.0,
                 scale_grad_by_freq=False, sparse=False, _weight=None, _freeze=False, device=None, dtype=None) -> None:
        super().__init__()
        _no_sparse(sparse, "Embedding")
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.padding_idx = _padding_index(padding_idx, num_embeddings)
        self.max_norm = max_norm
        self.norm_type = norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        self.weight, fresh = _table(_weight, num_embeddings, embedding_dim, _freeze, device, dtype)
        self.sparse = sparse
        if fresh:
            self.reset_parameters()

    def reset_parameters(self) -> None:
        """Draw ``weight`` from ``N(0, 1)`` and zero the ``padding_idx`` row."""
        init.normal_(self.weight)
        self._fill_padding_idx_with_zero()

    def _fill_padding_idx_with_zero(self) -> None:
        if self.padding_idx is not None:
            with tdx.no_grad():
                self.weight[self.padding_idx].fill_(0)

    def forward(self, input):  # noqa: A002 - torch's name
        """``F.embedding`` of ``input`` with this module's options."""
        return F.embedding(input, self.weight, self.padding_idx, self.max_norm, self.norm_type,
                           self.scale_grad_by_freq, self.sparse)

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq is not False:
            s += f", scale_grad_by_freq={self.scale_grad_by_freq}"
        if self.sparse is not False:
            s += ", sparse=True"
        return s

    @classmethod
    def from_pretrained(cls, embeddings, freeze=True, padding_idx=None, max_norm=None, norm_type=2.0,
                        scale_grad_by_freq=False, sparse=False):
        """An Embedding holding ``embeddings`` (2-D) as its weight, frozen unless ``freeze=False``.

        Raises:
            TdxValueError: ``embeddings`` is not 2-D.
        """
        if not isinstance(embeddings, tdx.Tensor) or embeddings.ndim != 2:
            raise tdx.TdxValueError("Embeddings parameter is expected to be 2-dimensional (got "
                                    f"{getattr(embeddings, 'ndim', type(embeddings).__name__)})")
        rows, cols = embeddings.shape
        return cls(num_embeddings=rows, embedding_dim=cols, _weight=embeddings, _freeze=freeze,
                   padding_idx=padding_idx, max_norm=max_norm, norm_type=norm_type,
                   scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


class EmbeddingBag(Module):
    """Sums, means or maxima of bags of embedding rows, without the intermediate embeddings.

    Args:
        num_embeddings: the number of rows.
        embedding_dim: the size of each row.
        max_norm: rows looked up with a larger ``norm_type``-norm are renormalised in place.
        norm_type: the norm's exponent for ``max_norm``. Default: 2.
        scale_grad_by_freq: scale gradients by the inverse frequency of each index in the mini-batch.
        mode: ``"sum"``, ``"mean"`` or ``"max"``.
        sparse: must be False (tdx gradients are dense).
        include_last_offset: ``offsets`` ends with the end of the last bag.
        padding_idx: indices of this row are left out of the bags (the row is initialised to zeros).
        device: device of the weight.
        dtype: dtype of the weight.
    """

    __constants__ = ["num_embeddings", "embedding_dim", "max_norm", "norm_type", "scale_grad_by_freq", "mode",
                     "sparse", "include_last_offset", "padding_idx"]

    def __init__(self, num_embeddings: int, embedding_dim: int, max_norm=None, norm_type=2.0,
                 scale_grad_by_freq=False, mode="mean", sparse=False, _weight=None, include_last_offset=False,
                 padding_idx=None, device=None, dtype=None) -> None:
        super().__init__()
        _no_sparse(sparse, "EmbeddingBag")
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.max_norm = max_norm
        self.norm_type = norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        self.padding_idx = _padding_index(padding_idx, num_embeddings)
        self.weight, fresh = _table(_weight, num_embeddings, embedding_dim, False, device, dtype)
        if fresh:
            self.reset_parameters()
        self.mode = mode
        self.sparse = sparse
        self.include_last_offset = include_last_offset

    def reset_parameters(self) -> None:
        """Draw ``weight`` from ``N(0, 1)`` and zero the ``padding_idx`` row."""
        init.normal_(self.weight)
        if self.padding_idx is not None:
            with tdx.no_grad():
                self.weight[self.padding_idx].fill_(0)

    def forward(self, input, offsets=None, per_sample_weights=None):  # noqa: A002 - torch's name
        """``F.embedding_bag`` of ``input`` (and ``offsets``) with this module's options."""
        return F.embedding_bag(input, self.weight, offsets, self.max_norm, self.norm_type, self.scale_grad_by_freq,
                               self.mode, self.sparse, per_sample_weights, self.include_last_offset,
                               self.padding_idx)

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm!r}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type!r}"
        if self.scale_grad_by_freq is not False:
            s += f", scale_grad_by_freq={self.scale_grad_by_freq!r}"
        s += f", mode={self.mode!r}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx!r}"
        return s

    @classmethod
    def from_pretrained(cls, embeddings, freeze=True, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
                        mode="mean", sparse=False, include_last_offset=False, padding_idx=None):
        """An EmbeddingBag holding ``embeddings`` (2-D) as its weight, frozen unless ``freeze=False``.

        Raises:
            TdxValueError: ``embeddings`` is not 2-D.
        """
        if not isinstance(embeddings, tdx.Tensor) or embeddings.ndim != 2:
            raise tdx.TdxValueError("Embeddings parameter is expected to be 2-dimensional (got "
                                    f"{getattr(embeddings, 'ndim', type(embeddings).__name__)})")
        rows, cols = embeddings.shape
        bag = cls(num_embeddings=rows, embedding_dim=cols, _weight=embeddings, max_norm=max_norm,
                  norm_type=norm_type, scale_grad_by_freq=scale_grad_by_freq, mode=mode, sparse=sparse,
                  include_last_offset=include_last_offset, padding_idx=padding_idx)
        bag.weight.requires_grad = not freeze
        return bag
