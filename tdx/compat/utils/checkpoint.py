"""``tdx.utils.checkpoint`` (torch.utils.checkpoint): activation checkpointing on every executor.

``checkpoint(fn, *args, use_reentrant=..., preserve_rng_state=..., context_fn=...,
determinism_check=..., **kwargs)`` runs ``fn`` without keeping its intermediates and recomputes
them in backward, with the random state of the first run (dropout draws the same mask), so the
gradients are those of ``fn`` run plainly. On torch executors it is torch's own checkpoint over
the natives (torch's exact semantics and warnings); on tape executors (MLX) it is
:func:`tdx.autograd.recompute.checkpoint`, which records the block as one node that recomputes
itself. ``checkpoint_sequential`` splits a sequence of modules into checkpointed segments. Must
never import a framework at module level.
"""

from __future__ import annotations

import contextlib
import warnings

from ..._errors import TdxValueError
from ...autograd.recompute import CheckpointError

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointError", "noop_context_fn", "detach_variable",
           "check_backward_validity", "set_checkpoint_early_stop", "set_checkpoint_debug_enabled", "get_device_states",
           "set_device_states"]

_UNPASSED = ("torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. Starting in PyTorch "
             "2.9, calling checkpoint without use_reentrant will raise an exception. use_reentrant=False is "
             "recommended, but if you need to preserve the current default behavior, you can pass use_reentrant=True. "
             "Refer to docs for more details on the differences between the two variants.")
_UNPASSED_SEQ = ("torch.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should be passed "
                 "explicitly. In version 2.9 we will raise an exception if use_reentrant is not passed. "
                 "use_reentrant=False is recommended, but if you need to preserve the current default behavior, you "
                 "can pass use_reentrant=True. Refer to docs for more details on the differences between the two "
                 "variants.")


def noop_context_fn():
    """The default ``context_fn``: two context managers that do nothing."""
    return contextlib.nullcontext(), contextlib.nullcontext()


@contextlib.contextmanager
def _torch_switch(name: str, value):
    """Torch's own switch ``torch.utils.checkpoint.<name>(value)`` around the block where torch is
    installed (it governs torch executors' checkpoints); tape executors need no switch."""
    try:
        import torch.utils.checkpoint as tc
    except ImportError:
        yield
        return
    with getattr(tc, name)(value):
        yield


def set_checkpoint_early_stop(enable: bool):
    """Context manager: whether a non-reentrant recomputation stops once it has what backward needs
    (torch's switch; on tape executors the whole block is recomputed either way, same gradients)."""
    return _torch_switch("set_checkpoint_early_stop", enable)


def set_checkpoint_debug_enabled(enabled):
    """Context manager: torch's checkpoint debug switch, overriding ``debug=`` (torch executors)."""
    return _torch_switch("set_checkpoint_debug_enabled", enabled)


def detach_variable(inputs):
    """``inputs`` (a tuple) with each tensor detached, requiring grad as before.

    Raises:
        TdxRuntimeError: ``inputs`` is not a tuple.
    """
    from ..._errors import TdxRuntimeError
    from ..._tensor.wrapping import Tensor

    if not isinstance(inputs, tuple):
        raise TdxRuntimeError(f"Only tuple of tensors is supported. Got Unsupported input type: "
                              f"{type(inputs).__name__}")
    out = []
    for x in inputs:
        if isinstance(x, Tensor):
            d = x.detach()
            d.requires_grad = x.requires_grad
            out.append(d)
        else:
            out.append(x)
    return tuple(out)


def get_device_states(*args) -> tuple:
    """``(device indices, their random states)`` of the CUDA devices the tensors among ARGS live on, in the
    order first met, as torch's (which saves only accelerators' states: CPU and MLX tensors add nothing)."""
    import tdx

    ids = []
    for arg in args:
        if isinstance(arg, tdx.Tensor) and arg.device.type == "cuda":
            index = arg.device.index or 0
            if index not in ids:
                ids.append(index)
    return ids, [tdx.cuda.get_rng_state(i) for i in ids]


def set_device_states(devices, states, *, device_type=None) -> None:
    """Restore the random states :func:`get_device_states` saved, device by device."""
    import tdx

    for device, state in zip(devices, states):
        tdx.cuda.set_rng_state(state, device)


def check_backward_validity(inputs) -> None:
    """Warn when no tensor of ``inputs`` requires grad (its gradients would be None)."""
    from ..._tensor.wrapping import Tensor

    if not any(x.requires_grad for x in inputs if isinstance(x, Tensor)):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None", stacklevel=2)


def _executor(args, kwargs):
    from ..._tensor.wrapping import Tensor
    from ..func._trees import flatten

    return next((x._ex for x in flatten((args, kwargs))[0] if isinstance(x, Tensor)), None)


def checkpoint(function, *args, use_reentrant=None, context_fn=noop_context_fn, determinism_check="default",
               debug=False, early_stop=True, **kwargs):
    """``function(*args, **kwargs)``, its intermediates recomputed in backward instead of kept.

    Args:
        function: the block to run.
        use_reentrant: torch's two variants; pass it explicitly (a warning otherwise, and True).
            The reentrant one refuses keyword arguments and ``autograd.grad``, and gives no gradients
            when no input requires grad.
        context_fn: (non-reentrant) returns two context managers, entered around the forward run
            and around the recomputation.
        determinism_check: ``"default"`` checks the recomputed outputs' metadata, ``"none"`` skips it.
        debug, early_stop: torch's switches (torch executors; accepted elsewhere).
        preserve_rng_state: (keyword) restore the random state for the recomputation. Default True.

    Raises:
        TdxValueError: keyword arguments or ``context_fn``/``debug`` with the reentrant variant, or an
            unknown ``determinism_check``.
    """
    if use_reentrant is None:
        warnings.warn(_UNPASSED, stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs and use_reentrant:
        raise TdxValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
    if use_reentrant and (context_fn is not noop_context_fn or debug is not False):
        raise TdxValueError("Passing `context_fn` or `debug` is only supported when use_reentrant=False.")
    if not use_reentrant and determinism_check not in ("default", "none"):
        raise TdxValueError(f"determinism_check should be one of ['default', 'none'], but got {determinism_check!r}")
    ex = _executor(args, kwargs)
    if ex is not None and ex.caps.native_autograd:
        return _torch_checkpoint(ex, function, args, kwargs, use_reentrant, preserve, context_fn, determinism_check,
                                 debug, early_stop)
    from ...autograd import recompute

    return recompute.checkpoint(function, args, kwargs, reentrant=use_reentrant, preserve_rng_state=preserve,
                                context_fn=context_fn, determinism_check=determinism_check)


def _torch_checkpoint(ex, function, args, kwargs, use_reentrant, preserve, context_fn, determinism_check, debug,
                      early_stop):
    import torch.utils.checkpoint as tc

    from ..._errors import NATIVE_ERRORS, translate
    from ..func._native import to_natives, to_tensors

    def native_function(*nargs, **nkwargs):
        return to_natives(function(*to_tensors(nargs, ex), **to_tensors(nkwargs, ex)))

    options = {} if use_reentrant else {"context_fn": context_fn, "determinism_check": determinism_check,
                                        "debug": debug, "early_stop": early_stop}
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="None of the inputs have requires_grad", module="torch")
            if use_reentrant:
                from ..._tensor.wrapping import Tensor

                if not any(x.requires_grad for x in args if isinstance(x, Tensor)):
                    warnings.warn("None of the inputs have requires_grad=True. Gradients will be None", stacklevel=4)
            out = tc.checkpoint(native_function, *to_natives(args), use_reentrant=use_reentrant,
                                preserve_rng_state=preserve, **options, **to_natives(kwargs))
    except tc.CheckpointError as err:
        raise CheckpointError(str(err)) from None
    except NATIVE_ERRORS as err:
        raise translate(err) from None
    return to_tensors(out, ex)


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """Run ``functions`` (a Sequential or a list of modules/functions) in ``segments`` chunks, every
    chunk but the last checkpointed.

    Raises:
        TdxValueError: keyword arguments other than ``preserve_rng_state``.
    """
    if use_reentrant is None:
        warnings.warn(_UNPASSED_SEQ, stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise TdxValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
    from ..nn import Sequential

    if isinstance(functions, Sequential):
        functions = list(functions.children())

    def run(start, end):
        def forward(x):
            for j in range(start, end + 1):
                x = functions[j](x)
            return x

        return forward

    size = len(functions) // segments
    end = -1
    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        input = checkpoint(run(start, end), input, use_reentrant=use_reentrant, preserve_rng_state=preserve)
    return run(end + 1, len(functions) - 1)(input)
