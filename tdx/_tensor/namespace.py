"""The ``torch.*`` namespace functions of tdx (``tdx.add``, ``tdx.sum``, ``tdx.cat``...), gathered.

Most torch functions are a Tensor method called as a function (``torch.sum(x)`` is ``x.sum()``):
those are generated here from tables, with torch's signatures and typed errors. Functions with a
logic of their own live with their op family (``cat`` in :mod:`.shape`, ``einsum`` in :mod:`.linalg`,
``randperm`` in :mod:`.random`...) and are re-exported from here, so ``tdx/__init__`` imports one
module. This module must never import a framework.
"""

from __future__ import annotations

import inspect

from .. import _dtypes as D
from .._errors import NATIVE_ERRORS, TdxValueError
from . import recording as _tape
from ..autograd.tape import ACTIVE as _TAPE, MODE as _MODE, STATE as _TAPE_STATE
from . import creation, decompositions, elementwise, indexing, inplace, linalg, random, reduction, shape  # noqa: F401 - attach methods
from . import complex_views, convolution, copies, index_updates, products, search, special_functions, statistics  # noqa: F401 - attach methods
from . import float_bits, inplace_views, native_norms  # noqa: F401 - attach methods
from . import fake_quant, fills, finite_differences, identity, legacy, sequences, spectral, storage, view_copies  # noqa: F401 - attach methods
from . import subclassing  # noqa: F401 - attach methods (__torch_function__, as_subclass)
from .elementwise import ALIASES, BINARY, UNARY
from .tensor import Tensor
from .wrapping import (LARGE_RESULT, NO_KERNEL, exporter, float32_entry, mixed_operands, need_tensor, operand, wrap,
                       write_out)

__all__: list = []
_new = object.__new__
_F32 = D.float32
_export = exporter(__all__)


def _unary_fn(name):
    seen = [NO_KERNEL]  # the last executor's float32 kernel for this op (wrapping.float32_entry)

    def fn(input, *, out=None):  # noqa: A002 - torch's name
        if out is not None:
            return write_out(out, fn(input), name)
        if _TAPE[0] and _MODE.enabled and _tape.wants(input):
            return _tape.call(fn, input)
        if input.__class__ is not Tensor:
            need_tensor(input, name)
        ex = input._ex
        k = seen[0]
        if k[0] is not ex:
            k = seen[0] = float32_entry(ex, name)
        if k[1] is not None:  # float32_unary, inlined: the per-op path on MLX
            d = input._dt
            if d is None:
                d = input._dt = ex._from_native[input._n.dtype]
            if d is _F32 and not (_TAPE[0] and _TAPE_STATE.differentiating):
                try:
                    n = k[1](input._n, stream=k[5])
                except NATIVE_ERRORS:
                    n = None
                if n is not None:
                    t = _new(Tensor)
                    t._n = n
                    t._ex = ex
                    t._ag = t._view = None
                    t._dt = k[2]
                    return t
        try:
            n = getattr(ex, name)(input._n)
        except NATIVE_ERRORS as err:
            raise ex.native_error(err) from None
        t = _new(Tensor)  # wrap's, inlined: the per-op path
        t._n = n
        t._ex = ex
        t._ag = t._view = t._dt = None
        return t

    fn.__name__ = fn.__qualname__ = name
    fn.__module__ = "tdx"  # a generated torch function, public as tdx.<name>
    fn.__doc__ = f"Elementwise ``{name}`` of ``input``, as ``torch.{name}``."
    return fn


def _binary_fn(name):
    op = _METHOD_TO_OP[name]
    seen = [NO_KERNEL]  # the last executor's float32 kernel for this op (wrapping.float32_entry)

    def fn(input, other, *, out=None):  # noqa: A002 - torch's name
        if out is not None:
            return write_out(out, fn(input, other), name)
        if _TAPE[0] and _MODE.enabled and _tape.wants(input, other):
            return _tape.call(fn, input, other)
        if input.__class__ is Tensor and other.__class__ is Tensor:
            ex = input._ex
            k = seen[0]
            if k[0] is not ex:
                k = seen[0] = float32_entry(ex, op)
            if k[1] is not None and other._ex is ex:  # float32_binary's common case, inlined: the per-op path
                a, b = input._dt, other._dt
                if a is None:
                    a = input._dt = ex._from_native[input._n.dtype]
                if b is None:
                    b = other._dt = ex._from_native[other._n.dtype]
                if a is _F32 and b is _F32 and (k[4] or input._n.ndim > 1 or other._n.ndim > 1) and not (
                        _TAPE[0] and _TAPE_STATE.differentiating):
                    try:
                        n = k[1](input._n, other._n, stream=k[5])
                    except NATIVE_ERRORS:
                        n = None
                    if n is not None:
                        if n.size > LARGE_RESULT:
                            ex.check_result(n, op)
                        t = _new(Tensor)
                        t._n = n
                        t._ex = ex
                        t._ag = t._view = None
                        t._dt = k[2]
                        return t
        if input.__class__ is not Tensor:  # torch.pow(2, t), torch.mul(3, t)
            need_tensor(other, name, "other")
            ex = other._ex
            a, b = input, other._n
        elif other.__class__ is Tensor and other._ex is not input._ex:  # a 0-d CPU operand, or refused
            ex, a, b = mixed_operands(name, input, other)
        else:
            ex = input._ex
            a, b = input._n, operand(input, other, name)
        try:
            n = getattr(ex, op)(a, b)
        except NATIVE_ERRORS as err:
            raise ex.native_error(err) from None
        t = _new(Tensor)  # wrap's, inlined: the per-op path
        t._n = n
        t._ex = ex
        t._ag = t._view = t._dt = None
        return t

    fn.__name__ = fn.__qualname__ = name
    fn.__module__ = "tdx"  # a generated torch function, public as tdx.<name>
    fn.__doc__ = f"``{name}`` of ``input`` and ``other`` with broadcasting and torch's promotion."
    return fn


_METHOD_TO_OP = {v: k for k, v in BINARY.items()}

for _name in UNARY:
    globals()[_name] = _unary_fn(_name)
    __all__.append(_name)

for _name in BINARY.values():
    globals()[_name] = _binary_fn(_name)
    __all__.append(_name)


@_export(record=True)
def add(input, other, *, alpha=1):  # noqa: A002
    if not isinstance(input, Tensor):
        return need_tensor(other, "add", "other").mul(alpha).add(input) if alpha != 1 else other.add(input)
    return input.add(other, alpha=alpha)


@_export(record=True)
def sub(input, other, *, alpha=1):  # noqa: A002
    return need_tensor(input, "sub").sub(other, alpha=alpha)


@_export(record=True)
def div(input, other, *, rounding_mode=None):  # noqa: A002
    return need_tensor(input, "div").div(other, rounding_mode=rounding_mode)


@_export(record=True)
def where(condition, input=None, other=None):  # noqa: A002
    """``input`` where ``condition`` holds, else ``other``; either may be a Python scalar. With ``condition`` alone,
    the indices where it holds, one tensor per dimension (``condition.nonzero(as_tuple=True)``), as torch's."""
    need_tensor(condition, "where", "condition")
    if input is None and other is None:
        return condition.nonzero(as_tuple=True)
    ex = condition._ex
    a, b = operand(condition, input, "where"), operand(condition, other, "where")
    return wrap(ex.where(condition._n, a, b), ex)


@_export(record=True)
def clamp(input, min=None, max=None):  # noqa: A002
    return need_tensor(input, "clamp").clamp(min, max)


def _method_fn(name, doc):
    def fn(input, *args, **kwargs):  # noqa: A002
        return getattr(need_tensor(input, name), name)(*args, **kwargs)

    fn.__name__ = fn.__qualname__ = name
    fn.__module__ = "tdx"  # a generated torch function, public as tdx.<name>
    fn.__doc__ = doc
    return fn


_FORWARDED_RECORDED = {
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

for _name, _doc in _FORWARDED_RECORDED.items():
    globals()[_name] = _export(_method_fn(_name, _doc), record=True)

def _named_twin(fn, name: str):
    """``fn`` under torch's name ``name``: the same code as a function object of its own, so an alias
    reports its name (``torch.arctan.__name__ == "arctan"``, and fx names its nodes so)."""
    import types

    twin = types.FunctionType(fn.__code__, fn.__globals__, name, fn.__defaults__, fn.__closure__)
    twin.__dict__.update(fn.__dict__)
    twin.__kwdefaults__ = fn.__kwdefaults__
    twin.__doc__, twin.__module__ = fn.__doc__, fn.__module__
    twin.__qualname__ = fn.__qualname__.rsplit(".", 1)[0] + "." + name if "." in fn.__qualname__ else name
    return twin


for _alias, _target in ALIASES.items():
    if _target in globals():
        globals()[_alias] = _named_twin(globals()[_target], _alias)
        __all__.append(_alias)


@_export(record=True)
def is_tensor(obj) -> bool:
    return isinstance(obj, Tensor)


@_export(record=True)
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


@_export(record=True)
def can_cast(from_, to) -> bool:
    return D.can_cast(D.as_dtype(from_), D.as_dtype(to))


def _documented(name: str, doc: str):
    def fn(input, *args, **kwargs):  # noqa: A002 - torch's name
        return getattr(need_tensor(input, name), name)(*args, **kwargs)

    fn.__name__ = fn.__qualname__ = name
    fn.__module__ = "tdx"  # a generated torch function, public as tdx.<name>
    fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


_FORWARDED_DOCUMENTED = {
    "fmod": "C-style remainder of ``input`` by ``other`` (the sign of ``input``).",
    "logsumexp": "``log(sum(exp(input)))`` over ``dim``, computed stably.",
    "cumsum": "Running sum along ``dim``.", "cumprod": "Running product along ``dim``.",
    "norm": "The vector p-norm over ``dim`` (all elements when None).",
    "softmax": "Softmax along ``dim``, computed in ``dtype`` if given.",
    "log_softmax": "Log-softmax along ``dim``, computed in ``dtype`` if given.",
    "bmm": "Batched matrix product of two 3-D tensors.", "mm": "Matrix product of two 2-D tensors.",
    "diag": "Diagonal matrix, or a diagonal.",
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

for _name, _doc in _FORWARDED_DOCUMENTED.items():
    globals()[_name] = _export(_documented(_name, _doc))


def _forward(name: str):
    """``tdx.name(input, ...)``: ``input.name(...)``, with the method's signature and docstring."""
    method = getattr(Tensor, name)

    def fn(input, *args, **kwargs):  # noqa: A002 - torch's name
        return getattr(need_tensor(input, name), name)(*args, **kwargs)

    sig = inspect.signature(method)
    params = list(sig.parameters.values())
    fn.__signature__ = sig.replace(parameters=[params[0].replace(name="input")] + params[1:])
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = method.__doc__.replace("``self``", "``input``")
    return fn


_FORWARDED = ("addmm", "addmv", "addr", "baddbmm", "addbmm", "addcmul", "addcdiv", "lerp", "logaddexp",
              "logaddexp2", "hypot", "fmax", "fmin", "copysign", "signbit", "heaviside", "isposinf", "isneginf",
              "deg2rad", "rad2deg", "logit", "nan_to_num", "nansum", "nanmean", "count_nonzero", "aminmax",
              "cummax", "cummin", "logcumsumexp", "dot", "mv", "inner", "kron", "isclose", "allclose", "equal",
              "diff", "broadcast_to", "clamp_min", "clamp_max", "fliplr", "flipud", "rot90", "msort", "argwhere",
              "take", "is_neg", "is_nonzero", "is_same_size", "is_signed", "is_inference", "is_distributed",
              "get_device")

for _name in _FORWARDED:
    globals()[_name] = _export(_forward(_name))

# torch's in-place functions (``torch.abs_(x)`` is ``x.abs_()``) and the other methods torch also exports
_FORWARDED_METHODS = (
    "abs_", "acos_", "acosh_", "addmv_", "adjoint", "arccos_", "arccosh_", "arcsin_", "arcsinh_", "arctan_",
    "arctanh_", "asin_", "asinh_", "atan_", "atanh_", "ceil_", "clamp_", "clamp_max_", "clamp_min_", "clip_",
    "conj_physical_", "cos_", "cosh_", "deg2rad_", "detach_", "erf_", "erfc_", "exp2_", "exp_", "expm1_", "fill_",
    "fix_", "floor_", "frac_", "gcd_", "i0_", "index_put_", "lcm_", "ldexp_", "log10_", "log1p_", "log2_", "log_",
    "logit_", "nan_to_num_", "neg_", "negative_", "put", "rad2deg_", "reciprocal_", "relu_", "round_", "rsqrt_",
    "sigmoid_", "sin_", "sinc_", "sinh_", "sqrt_", "square_", "tan_", "tanh_", "trunc_", "xlogy_")

for _name in _FORWARDED_METHODS:
    globals()[_name] = _export(_method_fn(_name, f"``input.{_name}(...)``, as ``torch.{_name}``."))

# the functions with a logic of their own, from their op families
for _family in (elementwise, shape, indexing, linalg, random, creation, statistics, search, index_updates, products, special_functions, complex_views, copies,
                convolution, decompositions, float_bits, native_norms, view_copies, sequences, fake_quant, reduction,
                finite_differences, spectral):
    for _name in _family.__all__:
        globals()[_name] = getattr(_family, _name)
        if _name not in __all__:
            __all__.append(_name)
