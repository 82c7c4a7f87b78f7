"""``torch._C`` (minimal): the two private queries torch's Python code (``torch.distributions``)
calls. ``_get_tracing_state()`` is None (tdx never runs a TorchScript trace) and
``_infer_size(a, b)`` is the broadcast shape of two shapes. This module must never import a
framework.
"""

from __future__ import annotations

__all__: list = []


def _get_tracing_state():
    """None: no TorchScript trace is ever in progress under tdx."""
    return None


def _infer_size(a, b):
    """The shape ``a`` and ``b`` broadcast to, as a ``tdx.Size`` (torch's error when they do not)."""
    from .._tensor.shape import broadcast_shapes

    return broadcast_shapes(a, b)
