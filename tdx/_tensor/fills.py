"""In-place fills that torch offers as Tensor methods: ``random_``, ``fill_diagonal_``, the
Python-callable maps ``apply_``/``map_``/``map2_``; and ``hardshrink``/``prelu`` as methods.

``apply_``, ``map_`` and ``map2_`` call a Python function per element, so, as in torch, they
run only on cpu tensors. This module must never import a framework.
"""

from __future__ import annotations

import importlib

import numpy as np

from .. import _dtypes as D
from .._errors import TdxRuntimeError, TdxTypeError
from . import views as _views
from .generator import native as native_generator
from .tensor import Tensor
from .wrapping import attach, need_tensor


def _random_bounds(dtype, frm, to):
    if to is None:
        if dtype.is_floating_point:
            to = (1 << {"float16": 11, "bfloat16": 8, "float32": 24, "float64": 53}[dtype.name]) + 1
        elif dtype.name == "bool":
            to = 2
        else:
            to = (1 << (8 * dtype.itemsize - (1 if dtype.is_signed else 0)))
    if frm >= to:
        raise TdxRuntimeError(f"random_ expects 'from' to be less than 'to', but got from={frm} >= to={to}")
    return frm, to


def _functional():
    """tdx.nn.functional, loaded on first use (it imports the whole nn package)."""
    return importlib.import_module("tdx.compat.nn.functional")


def _host_only(t, op: str) -> None:
    if t.device.type != "cpu":
        raise TdxTypeError(f"{op} is only implemented on CPU tensors, not on {t.device}")


def _write_values(t, values) -> None:
    from .creation import tensor

    t.copy_(tensor(values, dtype=t.dtype, device=t.device).reshape(t.shape))


class _FillMethods:
    def random_(self, *args, generator=None, **kwargs):
        """Fill with integers drawn uniformly from ``[from, to - 1]``: ``random_()``, ``random_(to)`` or
        ``random_(from, to)`` (``to`` defaults to 2**mantissa + 1 for floats, the dtype's range for ints)."""
        names = ("from", "to")
        vals = dict(zip(names, args))
        vals.update(kwargs)
        if len(args) == 1 and not kwargs:
            frm, to = 0, args[0]
        else:
            frm, to = vals.get("from", 0), vals.get("to")
        _random_bounds(self.dtype, frm, to)
        ex = self._ex
        _views.assign(self, ex.random_(self._n, frm, to, native_generator(generator, ex)))
        return self

    def fill_diagonal_(self, fill_value, wrap=False):
        """Write ``fill_value`` on the main diagonal (every dim equal when more than 2-d); with ``wrap``,
        a tall matrix's diagonal restarts every ``columns + 1`` rows, as torch's.

        Raises:
            TdxRuntimeError: fewer than 2 dims, or unequal dims beyond 2-d.
        """
        from .creation import tensor

        shape = tuple(self.shape)
        if len(shape) < 2:
            raise TdxRuntimeError("dimensions must larger than 1")
        if len(shape) > 2 and len(set(shape)) != 1:
            raise TdxRuntimeError("all dimensions of input must be of equal length")
        mask = np.zeros(int(np.prod(shape)), dtype=bool)
        if len(shape) == 2:
            rows, cols = shape
            step = cols + 1
            stop = rows * cols if wrap and rows > cols + 1 else min(rows, cols) * cols
            mask[0:stop:step] = True
        else:
            step = sum(int(np.prod(shape[d + 1:])) for d in range(len(shape)))
            mask[0::step] = True
        return self.masked_fill_(tensor(mask.reshape(shape), device=self.device), fill_value)

    def apply_(self, callable):  # noqa: A002 - torch's name
        """Replace each element ``x`` with ``callable(x)`` (cpu tensors only, as torch's); returns self."""
        _host_only(self, "apply_")
        _write_values(self, [callable(v) for v in self.reshape(-1).tolist()])
        return self

    def map_(self, tensor, callable):  # noqa: A002 - torch's name
        """Replace each element ``x`` with ``callable(x, y)``, ``y`` from ``tensor`` broadcast to this shape
        (cpu tensors only); returns self."""
        _host_only(self, "map_")
        other = need_tensor(tensor, "map_", "tensor").expand(tuple(self.shape))
        _write_values(self, [callable(a, b) for a, b in zip(self.reshape(-1).tolist(), other.reshape(-1).tolist())])
        return self

    def map2_(self, x, y, callable):  # noqa: A002 - torch's name
        """Replace each element ``a`` with ``callable(a, b, c)`` for ``b``, ``c`` from ``x``, ``y`` broadcast
        to this shape (cpu tensors only); returns self."""
        _host_only(self, "map2_")
        shape = tuple(self.shape)
        bx = need_tensor(x, "map2_", "x").expand(shape).reshape(-1).tolist()
        by = need_tensor(y, "map2_", "y").expand(shape).reshape(-1).tolist()
        _write_values(self, [callable(a, b, c) for a, b, c in zip(self.reshape(-1).tolist(), bx, by)])
        return self

    def hardshrink(self, lambd=0.5):
        """``tdx.nn.functional.hardshrink(self, lambd)``."""
        return _functional().hardshrink(self, lambd)

    def prelu(self, weight):
        """``tdx.nn.functional.prelu(self, weight)``."""
        return _functional().prelu(self, weight)


attach(_FillMethods)
_ = Tensor
