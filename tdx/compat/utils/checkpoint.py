"""``tdx.utils.checkpoint`` (minimal): ``checkpoint`` and ``checkpoint_sequential`` with torch's results.

Activation checkpointing trades memory for a second forward in backward; the values and gradients
are the same as running the function once. This minimal version runs the function once and keeps
its activations (so results, gradients and random draws are exactly those of the plain call) and
checks torch's arguments; it saves no memory. Never imports a framework.
"""

from __future__ import annotations

from ..._errors import TdxValueError

__all__ = ["checkpoint", "checkpoint_sequential"]


def checkpoint(function, *args, use_reentrant=None, context_fn=None, determinism_check="default",
               debug=False, preserve_rng_state=True, **kwargs):
    """``function(*args, **kwargs)`` with torch's ``checkpoint`` signature (see the module docstring).

    Raises:
        TdxValueError: keyword arguments together with ``use_reentrant=True`` (torch refuses them too).
    """
    if use_reentrant and kwargs:
        raise TdxValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    if context_fn is not None:
        forward_ctx, _ = context_fn()
        with forward_ctx:
            return function(*args, **kwargs)
    return function(*args, **kwargs)


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):  # noqa: A002 - torch's name
    """Run the modules of ``functions`` (a Sequential or a list) in order on ``input``."""
    if hasattr(functions, "children") and not isinstance(functions, (list, tuple)):
        functions = list(functions.children())
    for fn in functions:
        input = fn(input)  # noqa: A001
    return input
