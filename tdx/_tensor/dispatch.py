"""How the ``tdx.linalg``, ``tdx.fft`` and ``tdx.special`` functions reach an executor.

:func:`call` unwraps the tdx tensors among an op's arguments (in lists and tuples too), checks
they share one executor (torch's mixed-device error otherwise), asks that executor's
``namespace_call`` for the function of torch's name (torch's own on a torch executor; MLX's
kernels or a composition on MLX) and wraps the results, naming tuples as torch's
``torch.return_types``. A call on tensors that require grad on an executor without native
autograd is one node of tdx's tape, differentiated by the executor's own vector-Jacobian
product of a re-run. This module must never import a framework and holds no per-op logic.
"""

from __future__ import annotations

from .._errors import NATIVE_ERRORS, TdxTypeError, translate
from .._tensor import wrapping as _w
from . import recording as _tape
from ..autograd.tape import ACTIVE as _TAPE, MODE as _MODE

__all__ = ["call", "executor_of", "accept_out"]


def executor_of(args, kwargs=None):
    """The executor of the first tdx tensor among ``args`` and ``kwargs``' values, or None."""
    t = _w.first_tensor(list(args) + list((kwargs or {}).values()))
    return None if t is None else t._ex


def _unwrap(x, ex, op):
    if x.__class__ is _w.Tensor:
        return x._n if x._ex is ex else _w.foreign(op, ex, x)
    if isinstance(x, (list, tuple)) and not hasattr(x, "_fields"):
        return type(x)(_unwrap(v, ex, op) for v in x)
    return x


def _rewrap(out, ex, names):
    if isinstance(out, (tuple, list)):
        parts = tuple(_rewrap(o, ex, None) for o in out)
        return names(*parts) if names is not None else parts
    if out is None or isinstance(out, (bool, int, float, complex)):
        return out
    return _w.wrap(out, ex)


def _run(ns, name, names, *args, **kwargs):
    ex = executor_of(args, kwargs)
    op = f"{ns}.{name}"
    nargs = [_unwrap(a, ex, op) for a in args]
    nkw = {k: _unwrap(v, ex, op) for k, v in kwargs.items()}
    try:
        out = ex.namespace_call(ns, name, nargs, nkw)
    except NATIVE_ERRORS as err:
        raise ex.native_error(err) from None
    return _rewrap(out, ex, names)


def call(ns: str, name: str, *args, names=None, **kwargs):
    """``torch.<ns>.<name>(*args, **kwargs)`` on the executor of the tensor arguments.

    Args:
        ns: ``"linalg"``, ``"fft"`` or ``"special"``.
        name: the function's name in torch's namespace.
        names: a ``tdx.return_types`` named tuple class for a tuple result, or None.

    Raises:
        TdxTypeError: no argument is a tdx Tensor.
    """
    if executor_of(args, kwargs) is None:
        raise TdxTypeError(f"torch.{ns}.{name}(): expected a Tensor argument, got "
                           f"({', '.join(type(a).__name__ for a in args)})")
    if _TAPE[0] and _MODE.enabled and _tape.wants(*args, **kwargs):
        return _tape.call(_run, ns, name, names, *args, **kwargs)
    try:
        return _run(ns, name, names, *args, **kwargs)
    except NATIVE_ERRORS as err:  # raised before an executor was reached
        raise translate(err) from None


def accept_out(namespace: dict, names) -> None:
    """Give each function ``names`` lists in module ``namespace`` torch's keyword ``out=`` (None: the result as
    it is; a tensor or tuple of tensors: the result written into it and returned), as torch's linalg, fft and
    special functions all take it."""
    import functools
    import inspect

    for name in names:
        fn = namespace.get(name)
        if not inspect.isfunction(fn) or "out" in inspect.signature(fn).parameters:
            continue

        def with_out(*args, out=None, _fn=fn, _op=f"{namespace['__name__']}.{name}", **kwargs):
            result = _fn(*args, **kwargs)
            return result if out is None else _w.write_out(out, result, _op)

        namespace[name] = functools.wraps(fn)(with_out)
