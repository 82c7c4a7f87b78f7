"""Routing of ``tdx.nn.functional``'s hot functions to an executor's fused kernels.

Where the input's executor sets ``fused_nn`` (torch's, see ``tdx/backends/_torch/nn.py``)
and every tensor argument lives on that executor, :func:`run` calls the executor's
``nn_<name>`` kernel on the natives: one kernel, torch's autograd memory and bits. It
returns None when the kernel does not apply (another executor, a non-tensor argument) or
when the kernel refuses the arguments; the caller then runs its portable composite, which
raises tdx's typed error for bad input. This module must never import a framework, and
never changes a result: a kernel that runs has the composite's (torch's) semantics.
"""

from __future__ import annotations

from ..._errors import NATIVE_ERRORS
from ..._tensor.wrapping import wrap


def run(name: str, x, tensors=(), *rest):
    """``wrap(ex.nn_<name>(x, *tensors, *rest))`` on ``x``'s executor, or None where it does not apply.

    Args:
        name: the kernel's name without the ``nn_`` prefix.
        x: the input; anything that is not a tdx Tensor makes the call not apply.
        tensors: further tensor arguments (None allowed), passed as natives.
        rest: further plain arguments, passed as they are.
    """
    ex = getattr(x, "_ex", None)
    if ex is None or not ex.fused_nn:
        return None
    natives = [x._n]
    for t in tensors:
        if t is None:
            natives.append(None)
        elif getattr(t, "_ex", None) is ex:
            natives.append(t._n)
        else:
            return None
    try:
        out = getattr(ex, "nn_" + name)(*natives, *rest)
    except NATIVE_ERRORS:  # the composite raises tdx's typed error for the same input
        return None
    return wrap(out, ex)
