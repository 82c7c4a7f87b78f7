"""``torch.nn.LinearCrossEntropyOptions``: the chunking options of ``linear_cross_entropy``.

torch uses them to bound the memory of the logits (computing the loss a batch chunk at a time, accumulating
in a chosen dtype); tdx's ``linear_cross_entropy`` takes them and computes the same values whole. The fields
and their checks are torch's. This module must never import torch or mlx.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...._errors import TdxValueError

__all__ = ["LinearCrossEntropyOptions"]

_POLICIES = ("auto", "accurate", "balanced", "compact")


@dataclass
class LinearCrossEntropyOptions:
    """How ``linear_cross_entropy`` may chunk its work.

    Args:
        allow_retain_graph (bool): whether the graph may be kept for a second backward. Default: False.
        batch_chunk_size (int, optional): rows per chunk; None lets the method choose.
        chunking_method (str, optional): ``"auto"`` (default), ``"aspect_ratio[:k]"`` or None (no chunking).
        acc_policy (str): ``"accurate"``, ``"balanced"``, ``"compact"`` or ``"auto"`` (default).
        acc_dtype (dtype, optional): the accumulation dtype.

    Raises:
        TdxValueError: ``chunking_method``, ``acc_policy`` or ``batch_chunk_size`` is none of those.
    """

    allow_retain_graph: bool = False
    batch_chunk_size: int | None = None
    chunking_method: str | None = "auto"
    acc_policy: str = "auto"
    acc_dtype: object = None  # a tdx float dtype, or None

    def __post_init__(self) -> None:
        from .... import _dtypes as D

        if self.acc_policy not in _POLICIES:
            raise TdxValueError(f"invalid acc_policy: {self.acc_policy!r}")
        if self.chunking_method is not None and self.chunking_method != "auto":
            name, sep, factor = self.chunking_method.partition(":")
            factor = factor if sep else "1"
            if not (name == "aspect_ratio" and factor.isdigit() and int(factor) > 0):
                raise TdxValueError(f"invalid chunking_method: {self.chunking_method!r}")
        size = self.batch_chunk_size
        if not (size is None or (isinstance(size, int) and size > 0)):
            raise TdxValueError(f"batch_chunk_size must be positive int or None, got {size!r}")
        if self.acc_dtype is not None and self.acc_dtype not in (D.float16, D.bfloat16, D.float32, D.float64):
            raise TdxValueError(f"acc_dtype must be one of {{None, float16, bfloat16, float32, float64}}, got "
                                f"{self.acc_dtype!r}. Pass acc_dtype=None to let the op pick automatically.")
