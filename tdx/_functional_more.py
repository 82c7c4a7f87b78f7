"""Module-level torch functions for the wider surface (``tdx.gather``, ``tdx.topk``, ``tdx.einsum``,
``tdx.randperm``...), plus :func:`dropout`, the sampling helper other modules build on.

Each function has torch's signature and forwards to a Tensor method, or, for functions of
several tensors or none, checks the executor and calls it. Framework errors surface as
TdxErrors of the same builtin kind. Must never import a framework.
"""

from __future__ import annotations

import functools

from . import _dtypes as D
from . import backends
from ._errors import NATIVE_ERRORS, TdxTypeError, TdxValueError, mismatch, translate
from ._generator import native as _native_generator
from ._tensor import Tensor
from ._tensor_methods import foreign, wrap
from .autograd import tape as _tape
from .autograd.tape import ACTIVE as _TAPE

__all__: list = []


def _first_tensor(args):
    """The first Tensor among ``args`` (looking into lists and tuples), or None."""
    for a in args:
        if isinstance(a, Tensor):
            return a
        if isinstance(a, (list, tuple)):
            found = _first_tensor(a)
            if found is not None:
                return found
    return None


def _typed(fn, record=False):
    """Framework exceptions from ``fn`` surface as TdxErrors (translated by the first tensor's executor).

    With ``record``, a call on tensors that require grad on a taped executor is one tape node
    (for functions whose result is a deterministic function of their tensor arguments).
    """
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if record and _TAPE[0] and _tape.wants(*args, **kwargs):
            return _tape.call(wrapper, *args, **kwargs)
        try:
            return fn(*args, **kwargs)
        except NATIVE_ERRORS as err:
            ex = getattr(_first_tensor(args), "_ex", None)
            raise (ex.native_error(err) if ex is not None else translate(err)) from None

    return wrapper


def exporter(names: list):
    """A decorator that adds a function's name to ``names`` (a module's ``__all__``) and gives it
    typed errors; ``@export(record=True)`` also makes each call one tape node."""
    def export(fn=None, *, record=False):
        if fn is None:
            return functools.partial(export, record=record)
        names.append(fn.__name__)
        return _typed(fn, record)

    return export


_export = exporter(__all__)


def _need_tensor(x, op: str, arg: str = "input") -> Tensor:
    if not isinstance(x, Tensor):
        raise TdxTypeError(f"{op}(): argument '{arg}' must be Tensor, not {type(x).__name__}")
    return x


def _forward(name: str, doc: str):
    def fn(input, *args, **kwargs):  # noqa: A002 - torch's name
        return getattr(_need_tensor(input, name), name)(*args, **kwargs)

    fn.__name__ = name
    fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


_FORWARDED = {
    "fmod": "C-style remainder of ``input`` by ``other`` (the sign of ``input``).",
    "logsumexp": "``log(sum(exp(input)))`` over ``dim``, computed stably.",
    "cumsum": "Running sum along ``dim``.", "cumprod": "Running product along ``dim``.",
    "norm": "The vector p-norm over ``dim`` (all elements when None).",
    "softmax": "Softmax along ``dim``, computed in ``dtype`` if given.",
    "log_softmax": "Log-softmax along ``dim``, computed in ``dtype`` if given.",
    "bmm": "Batched matrix product of two 3-D tensors.", "diag": "Diagonal matrix, or a diagonal.",
    "trace": "Sum of the main diagonal of a 2-D tensor.", "gather": "Values along ``dim`` at ``index``.",
    "scatter": "``input`` with ``src`` written at ``index`` along ``dim``.",
    "scatter_add": "``input`` with ``src`` added at ``index`` along ``dim``.",
    "index_select": "Slices at ``index`` along ``dim``.", "masked_fill": "``value`` where ``mask`` holds.",
    "masked_select": "Elements where ``mask`` holds, as 1-D.", "nonzero": "Indices of non-zero elements.",
    "topk": "(values, indices) of the ``k`` largest along ``dim``.",
    "sort": "(values, indices) sorted along ``dim``.", "argsort": "Indices that sort along ``dim``.",
    "unique": "Sorted distinct values (with inverse and counts when asked).",
    "roll": "Rotate elements along ``dims``.", "tile": "Tile ``input`` by ``dims``.",
    "narrow": "``length`` elements from ``start`` along ``dim``.", "unbind": "Slices along ``dim``.",
    "movedim": "Move dims to new positions.", "moveaxis": "Move dims to new positions.",
    "select": "The slice at ``index`` along ``dim`` (a view).", "unflatten": "``dim`` split into ``sizes``.",
    "diagonal": "A diagonal of the ``(dim1, dim2)`` planes (a view).",
    "tensor_split": "Near-equal sections, or pieces cut at indices, along ``dim`` (views).",
    "hsplit": "``tensor_split`` along dim 1 (0 for 1-D).", "vsplit": "``tensor_split`` along dim 0.",
    "dsplit": "``tensor_split`` along dim 2.", "conj": "The complex conjugate (real tensors as they are).",
    "resolve_conj": "The tensor with a lazy conjugation materialized.",
    "is_conj": "Whether the tensor is a lazily conjugated view.",
    "multinomial": "Indices drawn from rows of unnormalized probabilities.",
    "bernoulli": "0/1 draws with probability ``input`` (or ``p``).",
}
for _name, _doc in _FORWARDED.items():
    globals()[_name] = _export(_forward(_name, _doc))


@_export
def flip(input, dims):  # noqa: A002 - torch's name
    """Reverse the order of elements along ``dims``."""
    return _need_tensor(input, "flip").flip(dims)


@_export
def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):  # noqa: A002
    """Repeat each element ``repeats`` times; ``repeat_interleave(counts)`` repeats each index."""
    _need_tensor(input, "repeat_interleave")
    if repeats is None:  # torch.repeat_interleave(repeats): indices 0..n-1, each repeated
        ex = input._ex
        n = input.shape[0] if input.ndim else 1
        return wrap(ex.arange(0, n, 1, D.int64), ex).repeat_interleave(input, 0, output_size=output_size)
    return input.repeat_interleave(repeats, dim, output_size=output_size)


@_export(record=True)
def einsum(equation, *operands):
    """Einstein summation of ``operands`` (tensors of one dtype) as ``equation`` says."""
    if not isinstance(equation, str):
        raise TdxTypeError(f"einsum(): argument 'equation' must be str, not {type(equation).__name__}")
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not operands:
        raise TdxValueError("einsum(): must provide at least one operand")
    ex = _need_tensor(operands[0], "einsum", "operands")._ex
    natives = []
    for t in operands:
        natives.append(t._n if _need_tensor(t, "einsum", "operands")._ex is ex else foreign("einsum", ex, t))
    return wrap(ex.einsum(equation, natives), ex)


@_export
def randperm(n, *, generator=None, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """A random permutation of ``0..n-1`` (int64 unless ``dtype`` says otherwise)."""
    if isinstance(n, bool) or not isinstance(n, int):
        raise TdxTypeError(f"randperm(): argument 'n' must be int, not {type(n).__name__}")
    ex = backends.get(device)
    out = wrap(ex.randperm(n, D.int64 if dtype is None else D.as_dtype(dtype), _native_generator(generator, ex)),
               ex)
    return out.requires_grad_() if requires_grad else out


@_export
def normal(mean, std=1.0, size=None, *, generator=None, dtype=None, device=None, requires_grad=False):
    """Normal draws: of ``size`` for number ``mean``/``std``, else of their broadcast shape."""
    from ._creation import empty

    tensors = [t for t in (mean, std) if isinstance(t, Tensor)]
    if not tensors:
        if size is None:
            raise TdxTypeError("normal(): with number mean and std, 'size' is required")
        out = empty(size, dtype=dtype, device=device).normal_(mean, std, generator=generator)
        return out.requires_grad_() if requires_grad else out
    ref = tensors[0]
    if any(t._ex is not ref._ex for t in tensors):
        raise mismatch("normal", tensors[0]._ex.device, tensors[1]._ex.device)
    if isinstance(std, Tensor) and bool((std < 0).any().item()):
        raise TdxValueError("normal expects all elements of std >= 0.0")
    shape = _broadcast(mean, std)
    z = empty(shape, dtype=ref.dtype if ref.dtype.is_floating_point else None, device=ref.device)
    z = z.normal_(0.0, 1.0, generator=generator)
    return z * std + mean


def _broadcast(*values) -> tuple:
    shapes = [tuple(v.shape) for v in values if isinstance(v, Tensor)]
    ndim = max(len(s) for s in shapes)
    out = []
    for i in range(ndim):
        sizes = {s[len(s) - ndim + i] for s in shapes if len(s) - ndim + i >= 0} - {1}
        if len(sizes) > 1:
            raise TdxValueError(f"normal(): shapes {[list(s) for s in shapes]} do not broadcast")
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


def dropout(input, p=0.5, training=True, *, generator=None):  # noqa: A002 - torch's name
    """Zero each element with probability ``p`` and scale the rest by ``1/(1-p)`` (when training).

    The helper behind ``tdx.nn.functional.dropout``; not exported in the ``tdx`` namespace
    (torch's ``torch.dropout`` takes ``train``, not ``training``).

    Raises:
        TdxValueError: ``p`` is outside ``[0, 1]``.
        TdxTypeError: ``input`` is not a Tensor.
    """
    _need_tensor(input, "dropout")
    if not 0.0 <= p <= 1.0:
        raise TdxValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    ex = input._ex
    if p == 1.0:
        return input * wrap(ex.zeros(tuple(input.shape), input.dtype), ex)
    # the mask is drawn from a detached input: it is a constant to autograd (torch's bernoulli has no derivative)
    keep = wrap(ex.bernoulli(input.detach()._n, 1.0 - p, _native_generator(generator, ex)), ex)
    return input * keep * (1.0 / (1.0 - p))


dropout = _typed(dropout)
