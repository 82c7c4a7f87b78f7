"""Ops whose executor kernel takes torch's own signature: one factory for function, method and in-place form.

For an op listed by a family module (:mod:`.statistics`, :mod:`.search`, :mod:`.special_functions`...),
:func:`kernel_op` builds ``torch.<name>(input, ...)``: its tensor arguments (also inside lists) are
unwrapped to the executor's natives, tdx dtypes become native dtypes, and ``ex.<name>(...)`` runs with
torch's signature; results (tensors, tuples of them, named tuples) are wrapped back. Where an executor
has no kernel of that name, the family's composite (written with tdx ops) runs instead, so every
executor gets the op. :func:`inplace_op` builds the ``name_`` method: torch's native in-place
method on mutable executors, the out-of-place result rebound to the tensor elsewhere.

This module must never import a framework and never holds a per-executor special case.
"""

from __future__ import annotations

from .. import _dtypes as D, return_types
from .._errors import NATIVE_ERRORS, UnsupportedOpError
from . import recording as _tape
from ..autograd.tape import ACTIVE as _TAPE, MODE as _MODE
from .tensor import Tensor
from .wrapping import first_tensor, foreign, need_tensor, typed_function, wrap

_PLAIN = (int, float, bool, complex, str, type(None))


def natives(t, x, op: str):
    """``x`` with every Tensor as a native of ``t``'s executor and every tdx dtype as its native dtype."""
    if x.__class__ is Tensor:
        return x._n if x._ex is t._ex else foreign(op, t._ex, x)
    if isinstance(x, (list, tuple)) and not isinstance(x, _PLAIN):
        return type(x)(natives(t, v, op) for v in x)
    if isinstance(x, D.dtype):
        return t._ex.native_dtype(x)
    return x


def wrapped(out, ex, name: str):
    """An executor's result as tdx values: arrays wrapped, tuples (named after ``name`` when torch names them)."""
    if isinstance(out, _PLAIN):
        return out
    if isinstance(out, (tuple, list)):
        items = [wrapped(v, ex, name) for v in out]
        kind = getattr(return_types, name, None)
        if isinstance(out, tuple) and kind is not None and len(kind._fields) == len(items):
            return kind(*items)
        return tuple(items) if isinstance(out, tuple) else items
    return wrap(out, ex)


def kernel_op(name: str, composite=None, doc: str = "", record: bool = True):
    """``torch.<name>``: the executor's kernel ``ex.<name>`` with torch's signature, else ``composite``.

    Args:
        name: torch's function name (and the executor method's).
        composite: ``f(input, *args, **kwargs)`` written with tdx ops, for executors without a kernel.
        doc: the docstring.
        record: make each call one tape node on taped executors.
    """
    def fn(input, *args, **kwargs):  # noqa: A002 - torch's name
        t = input if input.__class__ is Tensor else first_tensor(args)
        if t is None:
            t = first_tensor(list(kwargs.values()))
        if t is None:
            need_tensor(input, name)
        ex = t._ex
        kernel = getattr(ex, name, None)
        if kernel is None:
            if composite is None:
                raise UnsupportedOpError(f"{name}() is not implemented on {ex.device}")
            return composite(input, *args, **kwargs)  # its tdx ops record themselves on a tape
        if record and _TAPE[0] and _MODE.enabled and _tape.wants(input, *args, **kwargs):
            return _tape.call(fn, input, *args, **kwargs)
        a = natives(t, (input, *args), name)
        kw = {k: natives(t, v, name) for k, v in kwargs.items()}
        try:
            return wrapped(kernel(*a, **kw), ex, name)
        except NATIVE_ERRORS as err:
            raise ex.native_error(err) from None

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc or f"``torch.{name}`` on tdx tensors."
    return typed_function(fn)


def method_of(fn, name: str):
    """``fn`` (a ``torch.*`` function taking ``input`` first) as the Tensor method ``name``."""
    def method(self, *args, **kwargs):
        return fn(self, *args, **kwargs)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = fn.__doc__
    return method


def inplace_op(name: str, fn):
    """The in-place method ``name_`` of out-of-place ``fn``: torch's own on mutable executors, else rebound."""
    native = name + "_"

    def method(self, *args, **kwargs):
        ex = self._ex
        if ex.caps.mutable:
            args = natives(self, args, native)
            kwargs = {k: natives(self, v, native) for k, v in kwargs.items()}
            try:
                getattr(self._n, native)(*args, **kwargs)
            except NATIVE_ERRORS as err:
                raise ex.native_error(err) from None
            return self
        return self._rebind(fn(self, *args, **kwargs)._n, native)

    method.__name__ = method.__qualname__ = native
    method.__doc__ = f"In-place ``{name}`` (torch's cast rule: the result must cast to self's dtype)."
    from .wrapping import typed_errors

    return typed_errors(method)


def install(module_globals: dict, all_names: list, table: dict, methods=(), inplace=()) -> None:
    """Build ``torch.<name>`` for each ``name -> (composite, doc)`` of ``table`` into a module, with the
    Tensor methods ``methods`` and in-place methods ``inplace``."""
    for name, (composite, doc) in table.items():
        fn = kernel_op(name, composite, doc)
        module_globals[name] = fn
        all_names.append(name)
        if name in methods:
            setattr(Tensor, name, method_of(fn, name))
        if name in inplace:
            setattr(Tensor, name + "_", inplace_op(name, fn))
