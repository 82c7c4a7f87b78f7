"""torch's own ``torch.linalg``, ``torch.fft`` and ``torch.special`` functions for the torch executor (and
``torch.*``, ``torch.Tensor``'s methods and ``torch.nn.functional`` for the ops autocast's policy lists).

The facade's namespace functions (:mod:`tdx.compat.linalg`, :mod:`tdx.compat.fft`,
:mod:`tdx.compat.special`) hand this executor the native tensors and torch's arguments; it
calls the function of that name in torch's namespace, so values, errors and autograd are
torch's own. tdx dtypes among the keyword arguments become torch dtypes; named tuples come
back as plain tuples (the facade names them). Must never import MLX or the facade.
"""

from __future__ import annotations

import torch

from ... import _dtypes as D
from ..._errors import UnsupportedOpError

_NAMESPACES = {"linalg": torch.linalg, "fft": torch.fft, "special": torch.special,
               # the homes of the ops autocast's policy lists (tdx.compat.amp.autocast_state runs torch's own there)
               "torch": torch, "Tensor": torch.Tensor, "nn.functional": torch.nn.functional}


class TorchNamespaceOps:
    """``namespace_call``: one torch namespace function on native tensors."""

    __slots__ = ()

    def namespace_call(self, ns: str, name: str, args: list, kwargs: dict):
        """``torch.<ns>.<name>(*args, **kwargs)`` with tdx dtypes made native.

        Raises:
            UnsupportedOpError: torch has no such function (the facade only asks for torch's names).
        """
        fn = getattr(_NAMESPACES[ns], name, None)
        if fn is None:
            raise UnsupportedOpError(f"torch.{ns}.{name} does not exist in torch {torch.__version__}")
        kwargs = {k: self.native_dtype(v) if isinstance(v, D.dtype) else v for k, v in kwargs.items()}
        out = fn(*args, **kwargs)
        return tuple(out) if isinstance(out, tuple) else out
