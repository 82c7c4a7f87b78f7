"""torch's functional control flow and futures at top level, with their eager semantics.

``tdx.cond`` and ``tdx.while_loop`` (torch's higher-order ops) run their branches and loop
body directly: tdx does not trace, so what torch.compile would capture runs as Python.
``tdx.vmap`` (``torch.func.vmap``) maps a function over a batch dimension by looping over the
batch and stacking the results: the values are torch's, the speed is that of the loop.
``tdx.fork``/``tdx.wait`` and ``tdx.Future`` are ``torch.jit``'s futures, which in eager mode
run the forked call at once. This module must never import a framework.
"""

from __future__ import annotations

import threading

from .._errors import TdxRuntimeError, TdxTypeError, TdxValueError, UnsupportedOpError

__all__ = ["cond", "while_loop", "vmap", "fork", "wait", "Future", "_assert"]


def _is_tensor(x) -> bool:
    return hasattr(x, "_n") and hasattr(x, "_ex")


def _assert(condition, message) -> None:
    """``torch._assert``: ``assert condition, message`` as a function, which ``torch.fx`` traces as one
    node (a Python ``assert`` on a traced value cannot be).

    Raises:
        AssertionError: ``condition`` (a bool or a one-element tensor) is false, with ``message``.
    """
    assert bool(condition), message  # noqa: S101 - torch's function is an assert


def _truth(pred, op: str) -> bool:
    if _is_tensor(pred):
        if pred.numel() != 1:
            raise TdxRuntimeError(f"{op}: expected pred to be a bool or a tensor with a single element, "
                                  f"but got a tensor of shape {list(pred.shape)}")
        return bool(pred.item())
    if isinstance(pred, (bool, int, float)):
        return bool(pred)
    raise TdxRuntimeError(f"{op}: expected pred to be bool or tensor, but got {type(pred).__name__}")


def cond(pred, true_fn, false_fn, operands=()):
    """``true_fn(*operands)`` if ``pred`` holds, else ``false_fn(*operands)`` (``torch.cond``).

    Raises:
        TdxRuntimeError: ``pred`` is not a bool or a one-element tensor, or ``operands`` is not a
            tuple or list, or a branch is not callable.
    """
    if not isinstance(operands, (tuple, list)):
        raise TdxRuntimeError(f"Expect operands to be a tuple or list, got {type(operands).__name__}")
    if not callable(true_fn) or not callable(false_fn):
        raise TdxRuntimeError("Expect both branches to be callable")
    return (true_fn if _truth(pred, "cond") else false_fn)(*operands)


def while_loop(cond_fn, body_fn, carried_inputs):
    """Run ``carried = body_fn(*carried)`` while ``cond_fn(*carried)`` holds; return the final tuple.

    Raises:
        TdxRuntimeError: ``carried_inputs`` is not a tuple or list, or ``body_fn`` returns a
            different number of values.
    """
    if not isinstance(carried_inputs, (tuple, list)):
        raise TdxRuntimeError(f"carried_inputs must be a tuple or list, got {type(carried_inputs).__name__}")
    carried = tuple(carried_inputs)
    while _truth(cond_fn(*carried), "while_loop"):
        out = body_fn(*carried)
        out = tuple(out) if isinstance(out, (tuple, list)) else (out,)
        if len(out) != len(carried):
            raise TdxRuntimeError(f"while_loop: body_fn returned {len(out)} values for {len(carried)} carried "
                                  "inputs; it must return as many")
        carried = out
    return carried


# --- vmap --------------------------------------------------------------------------------------

def _leaves_with_dims(arg, dim):
    """[(tensor, dim)] for the tensors of the pytree ``arg`` that ``dim`` (an int, None or a matching
    pytree) maps."""
    if _is_tensor(arg):
        return [] if dim is None else [(arg, dim)]
    if isinstance(arg, (tuple, list)):
        dims = dim if isinstance(dim, (tuple, list)) else [dim] * len(arg)
        if len(dims) != len(arg):
            raise TdxValueError(f"vmap: in_dims {dim} does not match the structure of the inputs")
        return [p for a, d in zip(arg, dims) for p in _leaves_with_dims(a, d)]
    if isinstance(arg, dict):
        dims = dim if isinstance(dim, dict) else dict.fromkeys(arg, dim)
        return [p for k in arg for p in _leaves_with_dims(arg[k], dims.get(k))]
    return []


def _slice(arg, dim, i):
    if _is_tensor(arg):
        return arg if dim is None else arg.select(dim, i)
    if isinstance(arg, (tuple, list)):
        dims = dim if isinstance(dim, (tuple, list)) else [dim] * len(arg)
        return type(arg)(_slice(a, d, i) for a, d in zip(arg, dims))
    if isinstance(arg, dict):
        dims = dim if isinstance(dim, dict) else dict.fromkeys(arg, dim)
        return {k: _slice(v, dims.get(k), i) for k, v in arg.items()}
    return arg


def _stack(outs, out_dims):
    from .._tensor.shape import stack

    first = outs[0]
    if _is_tensor(first):
        if out_dims is None:
            return first
        return stack(outs, dim=out_dims if out_dims >= 0 else out_dims + first.dim() + 1)
    if isinstance(first, (tuple, list)):
        dims = out_dims if isinstance(out_dims, (tuple, list)) else [out_dims] * len(first)
        return type(first)(_stack([o[j] for o in outs], dims[j]) for j in range(len(first)))
    if isinstance(first, dict):
        return {k: _stack([o[k] for o in outs], out_dims) for k in first}
    raise TdxValueError(f"vmap: the function must return tensors (or tuples/lists/dicts of them), "
                        f"but returned {type(first).__name__}")


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """``func`` mapped over a batch dimension of its inputs (``torch.vmap`` / ``torch.func.vmap``).

    The result calls ``func`` once per batch element on the inputs with that dimension removed,
    then stacks the outputs along ``out_dims``: torch's values, computed by a loop.

    Args:
        func: the function to map.
        in_dims: an int or None for every input, or a tuple with one entry (int, None or a
            matching pytree) per positional argument.
        out_dims: where the batch dimension goes in each output (an int or a tuple per output).
        randomness: ``"error"`` or ``"different"`` (each element draws its own random numbers);
            ``"same"`` is refused.
        chunk_size: accepted for torch's signature (the loop runs one element at a time).

    Raises:
        TdxValueError: mismatched batch sizes, no mapped tensor, or a non-tensor output.
        UnsupportedOpError: ``randomness="same"``.
    """
    if randomness not in ("error", "different", "same"):
        raise TdxValueError(f"Only allowed values for randomness are 'error', 'different', or 'same'. "
                            f"Got {randomness}")
    if randomness == "same":
        raise UnsupportedOpError("vmap(randomness='same') is not supported by tdx: its loop draws each batch "
                                 "element separately; use randomness='different' or draw before mapping")
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size <= 0):
        raise TdxValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")

    def mapped(*args, **kwargs):
        dims = in_dims if isinstance(in_dims, tuple) else (in_dims,) * len(args)
        if isinstance(in_dims, tuple) and len(in_dims) != len(args):
            raise TdxValueError(f"vmap(in_dims={in_dims}): expected one in_dim per positional input "
                                f"({len(args)}), got {len(in_dims)}")
        pairs = [p for a, d in zip(args, dims) for p in _leaves_with_dims(a, d)]
        if not pairs:
            raise TdxValueError("vmap: at least one input must be a tensor mapped over a dimension "
                                f"(in_dims={in_dims})")
        norm = []
        for t, d in pairs:
            if not isinstance(d, int) or not -t.dim() <= d < max(t.dim(), 1) or t.dim() == 0:
                raise TdxValueError(f"vmap: in_dim {d} is out of range for a tensor of {t.dim()} dimensions")
            norm.append(t.shape[d])
        if len(set(norm)) != 1:
            raise TdxValueError(f"vmap: Expected all tensors to have the same size in the mapped dimension, "
                                f"got sizes {norm} for the mapped dimension")
        outs = [func(*(_slice(a, d, i) for a, d in zip(args, dims)), **kwargs) for i in range(norm[0])]
        return _stack(outs, out_dims)

    return mapped


# --- futures -----------------------------------------------------------------------------------

class Future:
    """The result of an asynchronous call (``torch.futures.Future``, ``torch.jit.fork``'s result)."""

    def __init__(self, *, devices=None):
        self._done = threading.Event()
        self._value = None
        self._error = None
        self._callbacks = []
        self._lock = threading.Lock()

    def done(self) -> bool:
        """Whether a result or an error has been set."""
        return self._done.is_set()

    def wait(self):
        """Block until done; return the result or raise the error that was set."""
        self._done.wait()
        if self._error is not None:
            raise self._error
        return self._value

    def value(self):
        """The result of a completed future (raises its error)."""
        if not self.done():
            raise TdxRuntimeError("Future.value() called before the future completed")
        return self.wait()

    def _finish(self, value=None, error=None) -> None:
        with self._lock:
            if self._done.is_set():
                raise TdxRuntimeError("Future can only be marked completed once")
            self._value, self._error = value, error
            self._done.set()
            callbacks, self._callbacks = self._callbacks, []
        for cb in callbacks:
            cb(self)

    def set_result(self, result) -> None:
        """Complete the future with ``result`` and run its callbacks."""
        self._finish(value=result)

    def set_exception(self, result) -> None:
        """Complete the future with an error that :meth:`wait` raises."""
        if not isinstance(result, BaseException):
            raise TdxTypeError(f"set_exception expects an exception, got {type(result).__name__}")
        self._finish(error=result)

    def add_done_callback(self, callback) -> None:
        """Call ``callback(self)`` once done (at once if already done)."""
        with self._lock:
            if not self._done.is_set():
                self._callbacks.append(callback)
                return
        callback(self)

    def then(self, callback) -> "Future":
        """A new future completed with ``callback(self)``'s result once this one is done."""
        out = Future()

        def run(fut):
            try:
                out.set_result(callback(fut))
            except Exception as err:  # noqa: BLE001 - the callback's error is delivered through the future
                out.set_exception(err)

        self.add_done_callback(run)
        return out


def fork(func, *args, **kwargs) -> Future:
    """Run ``func(*args, **kwargs)`` and return a completed :class:`Future` (eager ``torch.jit.fork``)."""
    fut = Future()
    try:
        fut.set_result(func(*args, **kwargs))
    except Exception as err:  # noqa: BLE001 - raised again by wait(), as torch's future does
        fut.set_exception(err)
    return fut


def wait(future):
    """The value of a :class:`Future` from :func:`fork` (``torch.jit.wait``).

    Raises:
        TdxTypeError: ``future`` is not a Future.
    """
    if not isinstance(future, Future):
        raise TdxTypeError(f"wait(): argument 'future' must be Future, not {type(future).__name__}")
    return future.wait()
