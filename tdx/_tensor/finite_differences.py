"""Derivatives estimated from samples: ``tdx.gradient`` (torch's ``torch.gradient``).

Second-order central differences inside each dim and one-sided differences of order ``edge_order`` at its
ends, over uniform spacing (a number per dim) or given sample coordinates (a 1-d tensor per dim), each
result composed of the facade's slicing and arithmetic, in the order torch's kernel computes them, so it
runs and differentiates on every executor. This module must never import a framework.
"""

from __future__ import annotations

from .._errors import TdxRuntimeError, TdxTypeError
from ..backends.base import norm_dim
from .shape import cat
from .wrapping import Tensor, exporter, need_tensor

__all__: list = []
_export = exporter(__all__)


def _dims(input, dim) -> list:
    if dim is None:
        return list(range(input.dim()))
    dims = [dim] if isinstance(dim, int) else list(dim)
    return [norm_dim(d, input.dim()) for d in dims]


def _spacings(spacing, dims: list, dim, ndim: int) -> list:
    if spacing is None:
        spacing = 1
    if not isinstance(spacing, (list, tuple)):
        return [spacing] * len(dims)
    if len(spacing) != len(dims):
        said = (f"'self.dim() = {ndim}', since dim argument was not given" if dim is None
                else f"'len(dim) = {len(dims)}', since dim argument was given")
        raise TdxRuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar, or a list of length "
                              f"equal to {said}, but got a list of length {len(spacing)}")
    return list(spacing)


def _uniform(f, d: int, n: int, h, edge_order: int):
    center = (f.narrow(d, 2, n - 2) - f.narrow(d, 0, n - 2)) / h
    if edge_order == 1:
        first = (f.narrow(d, 1, 1) - f.narrow(d, 0, 1)) / h
        last = (f.narrow(d, n - 1, 1) - f.narrow(d, n - 2, 1)) / h
    else:
        first = (-1.5 * f.narrow(d, 0, 1) + 2 * f.narrow(d, 1, 1) - 0.5 * f.narrow(d, 2, 1)) / h
        last = (0.5 * f.narrow(d, n - 3, 1) - 2 * f.narrow(d, n - 2, 1) + 1.5 * f.narrow(d, n - 1, 1)) / h
    return first, center / 2, last


def _coordinates(f, d: int, n: int, x, edge_order: int):
    if x.dim() != 1 or x.shape[0] != n:
        raise TdxRuntimeError(f"torch.gradient expected each tensor to be on the same device and the coordinates "
                              f"of dim {d} to be a 1-d tensor of {n} values, got shape {tuple(x.shape)}")
    dx = x.diff(1, 0)
    dx1, dx2 = dx[:-1], dx[1:]
    shape = [1] * f.dim()
    shape[d] = n - 2
    a = (-dx2 / (dx1 * (dx1 + dx2))).reshape(shape)
    b = ((dx2 - dx1) / (dx1 * dx2)).reshape(shape)
    c = (dx1 / (dx2 * (dx1 + dx2))).reshape(shape)
    center = a * f.narrow(d, 0, n - 2) + b * f.narrow(d, 1, n - 2) + c * f.narrow(d, 2, n - 2)
    if edge_order == 1:
        first = (f.narrow(d, 1, 1) - f.narrow(d, 0, 1)) / dx[0]
        last = (f.narrow(d, n - 1, 1) - f.narrow(d, n - 2, 1)) / dx[-1]
        return first, center, last
    h0, h1, hl, hm = dx[0], dx[1], dx[-1], dx[-2]
    first = (-(2.0 * h0 + h1) / (h0 * (h0 + h1)) * f.narrow(d, 0, 1) + (h0 + h1) / (h0 * h1) * f.narrow(d, 1, 1)
             + (-h0) / (h1 * (h0 + h1)) * f.narrow(d, 2, 1))
    last = (hl / (hm * (hl + hm)) * f.narrow(d, n - 3, 1) - (hl + hm) / (hl * hm) * f.narrow(d, n - 2, 1)
            + (2 * hl + hm) / (hl * (hl + hm)) * f.narrow(d, n - 1, 1))
    return first, center, last


@_export
def gradient(input, *, spacing=1, dim=None, edge_order=1):
    """The derivative of ``input`` along each of ``dim`` (all dims when None), estimated from its samples.

    Args:
        input (Tensor): the samples.
        spacing (number, list of numbers or list of 1-d tensors, optional): the distance between samples of every
            dim, one distance per dim, or each dim's sample coordinates. Default: 1.
        dim (int or list of int, optional): the dims to differentiate along.
        edge_order (int): 1 or 2, the order of the one-sided differences at the ends.

    Returns:
        A tuple with one tensor per dim, each of ``input``'s shape.

    Raises:
        TdxRuntimeError: ``edge_order`` is not 1 or 2, a dim has fewer than ``edge_order + 1`` samples, or
            ``spacing`` has not one entry per dim (torch's errors).
        TdxTypeError: ``input`` is not a tensor.
    """
    need_tensor(input, "gradient")
    if edge_order not in (1, 2):
        raise TdxRuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    dims = _dims(input, dim)
    spacings = _spacings(spacing, dims, dim, input.dim())
    out = []
    for d, h in zip(dims, spacings):
        n = input.shape[d]
        if n < edge_order + 1:
            raise TdxRuntimeError("torch.gradient expected each dimension size to be at least edge_order+1")
        if isinstance(h, Tensor) and h.dim() == 1:
            first, center, last = _coordinates(input, d, n, h, edge_order)
        elif isinstance(h, (Tensor, int, float)) and not isinstance(h, bool):
            first, center, last = _uniform(input, d, n, h.item() if isinstance(h, Tensor) else h, edge_order)
        else:
            raise TdxTypeError(f"gradient(): spacing must be a number, a list of numbers or a list of 1-d "
                               f"tensors, got {type(h).__name__}")
        out.append(cat([first, center, last], d))
    return tuple(out)
