"""Module-level functions of the torch namespace (``tdx.add``, ``tdx.cat``, ``tdx.where``...).

Each one has torch's signature and forwards to a Tensor method or, for functions over
several tensors, checks they share an executor and calls it. Must never import a
framework.
"""

from __future__ import annotations

from . import _dtypes as D
import functools

from ._errors import NATIVE_ERRORS, TdxTypeError, TdxValueError, translate
from .autograd import tape as _tape
from .autograd.tape import ACTIVE as _TAPE
from ._tensor import Tensor
from ._tensor_methods import ALIASES, BINARY, UNARY, foreign, operand, wrap

__all__ = []


def _export(fn):
    __all__.append(fn.__name__)
    return _typed(fn)


def _typed(fn):
    """Framework exceptions from ``fn`` surface as TdxErrors, translated by the first tensor's executor."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if _TAPE[0] and _tape.wants(*args, **kwargs):
            return _tape.call(wrapper, *args, **kwargs)
        try:
            return fn(*args, **kwargs)
        except NATIVE_ERRORS as err:
            first = args[0] if args else None
            if isinstance(first, (list, tuple)) and first:
                first = first[0]
            ex = getattr(first, "_ex", None)
            raise (ex.native_error(err) if ex is not None else translate(err)) from None

    return wrapper


def _need_tensor(x, op: str, arg: str = "input"):
    if not isinstance(x, Tensor):
        raise TdxTypeError(f"{op}(): argument '{arg}' must be Tensor, not {type(x).__name__}")
    return x


def _unary_fn(name):
    def fn(input):  # noqa: A002 - torch's name
        if _TAPE[0] and _tape.wants(input):
            return _tape.call(fn, input)
        if input.__class__ is not Tensor:
            _need_tensor(input, name)
        ex = input._ex
        try:
            return wrap(getattr(ex, name)(input._n), ex)
        except NATIVE_ERRORS as err:
            raise ex.native_error(err) from None

    fn.__name__ = name
    fn.__doc__ = f"Elementwise ``{name}`` of ``input``, as ``torch.{name}``."
    return fn


def _binary_fn(name):
    op = _METHOD_TO_OP[name]

    def fn(input, other):  # noqa: A002 - torch's name
        if _TAPE[0] and _tape.wants(input, other):
            return _tape.call(fn, input, other)
        if input.__class__ is not Tensor:  # torch.pow(2, t), torch.mul(3, t)
            _need_tensor(other, name, "other")
            ex = other._ex
            a, b = input, other._n
        else:
            ex = input._ex
            a, b = input._n, operand(input, other, name)
        try:
            return wrap(getattr(ex, op)(a, b), ex)
        except NATIVE_ERRORS as err:
            raise ex.native_error(err) from None

    fn.__name__ = name
    fn.__doc__ = f"``{name}`` of ``input`` and ``other`` with broadcasting and torch's promotion."
    return fn


_METHOD_TO_OP = {v: k for k, v in BINARY.items()}

for _name in UNARY:
    globals()[_name] = _unary_fn(_name)
    __all__.append(_name)
for _name in BINARY.values():
    globals()[_name] = _binary_fn(_name)
    __all__.append(_name)


@_export
def add(input, other, *, alpha=1):  # noqa: A002
    if not isinstance(input, Tensor):
        return _need_tensor(other, "add", "other").mul(alpha).add(input) if alpha != 1 else other.add(input)
    return input.add(other, alpha=alpha)


@_export
def sub(input, other, *, alpha=1):  # noqa: A002
    return _need_tensor(input, "sub").sub(other, alpha=alpha)


@_export
def div(input, other, *, rounding_mode=None):  # noqa: A002
    return _need_tensor(input, "div").div(other, rounding_mode=rounding_mode)


@_export
def where(condition, input=None, other=None):  # noqa: A002
    """``input`` where ``condition`` holds, else ``other``; either may be a Python scalar."""
    _need_tensor(condition, "where", "condition")
    if input is None and other is None:
        raise TdxValueError("where(condition) with one argument is not supported yet; "
                            "use condition.nonzero(as_tuple=True)")
    ex = condition._ex
    a, b = operand(condition, input, "where"), operand(condition, other, "where")
    return wrap(ex.where(condition._n, a, b), ex)


@_export
def clamp(input, min=None, max=None):  # noqa: A002
    return _need_tensor(input, "clamp").clamp(min, max)


def _natives(tensors, op: str):
    if isinstance(tensors, Tensor) or not tensors:
        raise TdxTypeError(f"{op}(): expected a non-empty list or tuple of Tensors, got {tensors!r}")
    first = _need_tensor(tensors[0], op, "tensors")
    ex = first._ex
    out = []
    for t in tensors:
        _need_tensor(t, op, "tensors")
        out.append(t._n if t._ex is ex else foreign(op, ex, t))
    return ex, out


@_export
def cat(tensors, dim=0):
    """Concatenate tensors along an existing dim (dtypes promote as torch's)."""
    ex, natives = _natives(tensors, "cat")
    return wrap(ex.cat(natives, dim), ex)


@_export
def stack(tensors, dim=0):
    """Join equal-shaped tensors along a new dim."""
    ex, natives = _natives(tensors, "stack")
    return wrap(ex.stack(natives, dim), ex)


concat = concatenate = cat
__all__ += ["concat", "concatenate"]


def _method_fn(name, doc):
    def fn(input, *args, **kwargs):  # noqa: A002
        return getattr(_need_tensor(input, name), name)(*args, **kwargs)

    fn.__name__ = name
    fn.__doc__ = doc
    return fn


_FORWARDED = {
    "sum": "Sum over ``dim`` (all if None).", "mean": "Mean over ``dim``.", "prod": "Product over ``dim``.",
    "std": "Standard deviation with ``correction``.", "var": "Variance with ``correction``.",
    "max": "Max, (values, indices) over ``dim``, or elementwise with a tensor.",
    "min": "Min, (values, indices) over ``dim``, or elementwise with a tensor.",
    "amax": "Max over ``dim``.", "amin": "Min over ``dim``.", "argmax": "Index of the max.",
    "argmin": "Index of the min.", "all": "All true.", "any": "Any true.",
    "reshape": "Reshape.", "transpose": "Swap two dims.", "permute": "Reorder dims.",
    "squeeze": "Drop size-1 dims.", "unsqueeze": "Insert a size-1 dim.", "flatten": "Flatten a dim range.",
    "split": "Split into pieces.", "chunk": "Split into chunks.", "t": "Transpose a 2-D tensor.",
    "tril": "Lower triangle.", "triu": "Upper triangle.", "clone": "Copy.", "numel": "Element count.",
    "is_floating_point": "Floating dtype?", "is_complex": "Complex dtype?", "swapaxes": "Swap two dims.",
    "swapdims": "Swap two dims.", "ravel": "Flatten to 1-D.", "detach": "Detach from autograd.",
}
for _name, _doc in _FORWARDED.items():
    globals()[_name] = _export(_method_fn(_name, _doc))
for _alias, _target in ALIASES.items():
    if _target in globals() and _alias not in ("mm",):
        globals()[_alias] = globals()[_target]
        __all__.append(_alias)
mm = matmul  # noqa: F821 - generated above
__all__.append("mm")


@_export
def is_tensor(obj) -> bool:
    return isinstance(obj, Tensor)


@_export
def result_type(tensor1, tensor2):
    """torch.result_type for two tensors or scalars."""
    def tier(x):
        if isinstance(x, Tensor):
            return ([x.dtype], []) if x.ndim else ([], [x.dtype])
        return [], []
    dims, zeros, scalars = [], [], []
    for x in (tensor1, tensor2):
        d, z = tier(x)
        dims += d
        zeros += z
        if not isinstance(x, Tensor):
            scalars.append(x)
    return D.result_type(dims, zeros, scalars)


@_export
def can_cast(from_, to) -> bool:
    from ._tensor import _can_cast

    return _can_cast(D.as_dtype(from_), D.as_dtype(to))
