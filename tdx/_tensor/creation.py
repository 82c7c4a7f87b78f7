"""Factory functions: ``tensor``, ``zeros``, ``arange``, ``rand``... and their ``*_like``; the
``Tensor.new_*`` methods; ``tril_indices``/``triu_indices``.

They resolve the device (through ``tdx.backends.get``, so config translation applies),
infer dtypes as torch does, and hand the executor plain Python values. Must never
import a framework.
"""

from __future__ import annotations

import functools
import math
import sys

from .. import _dtypes as D
from .. import backends
from .._errors import (NATIVE_ERRORS, OpDtypeError, TdxNotImplementedError, TdxOverflowError, TdxRuntimeError,
                       TdxTypeError, TdxValueError)
from .formats import check_layout as _check_layout
from .generator import native as native_generator
from .tensor import Tensor
from .wrapping import (attach, exporter, shape_args, typed_function, wrap, wrap_grad)
from .._errors import translate

__all__: list = []
_export = exporter(__all__)


def _ex_dtype(device, dtype):
    return backends.get(device), (dtype if dtype is None or dtype.__class__ is D.dtype else D.as_dtype(dtype))


def _check_strides(data) -> None:
    """torch's refusal of a NumPy array whose strides are not whole elements (a field of a record array).

    Raises:
        TdxValueError: such an array.
    """
    np = sys.modules.get("numpy")
    if np is not None and isinstance(data, np.ndarray) and data.base is not None and \
            any(s % data.itemsize for s in data.strides):  # an array owning its memory has whole strides
        raise TdxValueError("given numpy array strides not a multiple of the element byte size. Copy the numpy "
                            "array to reallocate the memory.")


def tensor(data, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A new tensor copying ``data`` (nested lists, scalars, NumPy arrays, tensors)."""
    _check_strides(data)
    ex, dtype = _ex_dtype(device, dtype)
    if isinstance(data, Tensor):  # torch's: a copy without history, on data's device unless one is given
        out = data.detach()
        out = (out if device is None else out.to(ex.device)).clone()
        out = out if dtype is None else out.to(dtype)
        return out.requires_grad_() if requires_grad else out
    native = _foreign(data)
    if native is not None:
        return wrap(_import(native, ex, dtype, copy=True), ex)
    return wrap_grad(ex.from_data(_plain(data), dtype, requires_grad=requires_grad), ex, requires_grad)


def as_tensor(data, dtype=None, device=None) -> Tensor:
    """``data`` as a tensor, sharing memory where possible (tensors of the right kind pass through)."""
    if isinstance(data, Tensor):
        out = data if device is None else data.to(device)
        return out if dtype is None else out.to(D.as_dtype(dtype))
    _check_strides(data)
    ex, dtype = _ex_dtype(device, dtype)
    from ..interop import adopt, exchangeable

    if exchangeable(data):
        return wrap(adopt(data, ex, dtype)[0], ex)
    return wrap(ex.from_data(_plain(data), dtype), ex)


asarray = as_tensor  # rebound to the typed as_tensor below


def _plain(data):
    """Nested lists that may hold 0-d tensors, as plain Python values."""
    if isinstance(data, (list, tuple)) and any(isinstance(x, (Tensor, list, tuple)) for x in data):
        return [x.tolist() if isinstance(x, Tensor) else _plain(x) for x in data]
    return data


def _foreign(data):
    """``data`` if it is a torch tensor or an MLX array (recognized without importing either)."""
    mod = type(data).__module__
    if mod.startswith("torch") and "torch" in sys.modules and isinstance(data, sys.modules["torch"].Tensor):
        return data
    if mod.startswith("mlx") and "mlx.core" in sys.modules and isinstance(data, sys.modules["mlx.core"].array):
        return data
    return None


def _import(native, ex, dtype, copy):
    from ..interop import adopt

    return adopt(native, ex, dtype, True if copy else None)[0]


def _shape(sizes, size, op):
    """The shape from ``f(2, 3)``, ``f((2, 3))`` or ``f(size=(2, 3))``; torch's TypeError for none or both."""
    if size is not None:
        if sizes:
            raise TdxTypeError(f"{op}() got multiple values for argument 'size'")
        sizes = (size,)
    elif not sizes:
        raise TdxTypeError(f"{op}() missing 1 required positional arguments: \"size\"")
    return shape_args(sizes, op)


def zeros(*sizes, size=None, dtype=None, layout=None, device=None, requires_grad=False) -> Tensor:
    if layout is not None:
        _check_layout(layout, "zeros")
    ex, dtype = _ex_dtype(device, dtype)
    shape = _shape(sizes, size, "zeros")
    return wrap_grad(ex.zeros(shape, dtype or D.get_default_dtype(), requires_grad), ex, requires_grad)


def ones(*sizes, size=None, dtype=None, layout=None, device=None, requires_grad=False) -> Tensor:
    if layout is not None:
        _check_layout(layout, "ones")
    ex, dtype = _ex_dtype(device, dtype)
    shape = _shape(sizes, size, "ones")
    return wrap_grad(ex.ones(shape, dtype or D.get_default_dtype(), requires_grad), ex, requires_grad)


def empty(*sizes, size=None, dtype=None, layout=None, device=None, requires_grad=False) -> Tensor:
    if layout is not None:
        _check_layout(layout, "empty")
    ex, dtype = _ex_dtype(device, dtype)
    shape = _shape(sizes, size, "empty")
    return wrap_grad(ex.empty(shape, dtype or D.get_default_dtype(), requires_grad), ex, requires_grad)


def full(size, fill_value, *, dtype=None, layout=None, device=None, requires_grad=False) -> Tensor:
    if layout is not None:
        _check_layout(layout, "full")
    ex, dtype = _ex_dtype(device, dtype)
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    if isinstance(fill_value, int) and not -(1 << 63) <= fill_value < (1 << 63):
        raise TdxOverflowError("int too big to convert")
    dtype = dtype or D.scalar_dtype(fill_value)
    return wrap_grad(ex.full(shape_args((size,), "full"), fill_value, dtype, requires_grad), ex, requires_grad)


def arange(start=0, end=None, step=1, *, dtype=None, layout=None, device=None, requires_grad=False) -> Tensor:
    """Values from ``start`` to ``end`` (exclusive) by ``step``; ints give int64, floats the default dtype."""
    if end is None and start.__class__ is int:  # arange(n)
        start, end = 0, start
    if end.__class__ is int and start.__class__ is int and step.__class__ is int and step > 0 and end >= start and \
            (dtype is None or dtype is D.int64) and layout is None and not requires_grad:  # int64, no check left
        ex = backends.get(device)
        return wrap(ex.arange(start, end, step, D.int64, False), ex)
    if layout is not None:
        _check_layout(layout, "arange")
    if end is None:
        start, end = 0, start
    vals = [v.item() if isinstance(v, Tensor) else v for v in (start, end, step)]
    ex, dtype = _ex_dtype(device, dtype)
    if dtype is None:
        dtype = D.get_default_dtype() if any(isinstance(v, float) for v in vals) else D.int64
    if any(isinstance(v, float) and not math.isfinite(v) for v in vals):
        raise TdxRuntimeError(f"unsupported range: {vals[0]} -> {vals[1]}")
    if dtype is D.bool_ or dtype.is_complex:  # torch's arange kernel has no bool or complex version
        raise TdxNotImplementedError(f'"arange_cpu" not implemented for \'{D.scalar_name(dtype)}\'')
    if vals[2] == 0:
        raise TdxRuntimeError("arange(): step must be nonzero")
    if (vals[1] - vals[0]) * vals[2] < 0:
        raise TdxRuntimeError(f"arange(): upper bound and lower bound inconsistent with step sign "
                            f"(start={vals[0]}, end={vals[1]}, step={vals[2]})")
    return wrap_grad(ex.arange(*vals, dtype, requires_grad), ex, requires_grad)


def _endpoint(v, op: str, arg: str):
    """A Python number for ``v`` (a number or a 0-d tensor)."""
    if isinstance(v, Tensor):
        if v.ndim:
            raise TdxRuntimeError(f"{op}() expects the {arg} tensor to be 0-dimensional, but got a tensor with "
                                  f"{v.ndim} dimensions")
        return v.item()
    return v


def linspace(start, end, steps, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    """``steps`` evenly spaced values from ``start`` to ``end`` (numbers or 0-d tensors)."""
    start, end = _endpoint(start, "linspace", "start"), _endpoint(end, "linspace", "end")
    if isinstance(steps, Tensor):
        steps = int(steps.item())
    if not isinstance(steps, int) or steps < 0:
        raise (TdxTypeError if not isinstance(steps, int) else TdxRuntimeError)(
            f"linspace(): number of steps must be a non-negative int, got {steps!r}")
    ex, dtype = _ex_dtype(device, dtype)
    return wrap_grad(ex.linspace(start, end, steps, dtype or D.get_default_dtype(), requires_grad), ex, requires_grad)


@_export
def logspace(start, end, steps, base=10.0, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    """``base ** linspace(start, end, steps)`` (endpoints may be 0-d tensors)."""
    start, end = _endpoint(start, "logspace", "start"), _endpoint(end, "logspace", "end")
    ex, dtype = _ex_dtype(device, dtype)
    dtype = dtype or D.get_default_dtype()
    wide = D.float64 if ex.caps.float64 else D.float32
    exps = wrap(ex.linspace(start, end, steps, wide, False), ex)
    out = (exps * math.log(base)).exp() if base > 0 else float(base) ** exps
    out = out._cast(dtype) if dtype.is_floating_point or dtype.is_complex else out.trunc()._cast(dtype)
    return out.requires_grad_() if requires_grad else out


@_export
def scalar_tensor(s, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A 0-d tensor holding ``s`` (the default float dtype unless ``dtype`` says otherwise)."""
    return tensor(s, dtype=dtype or D.get_default_dtype(), device=device, requires_grad=requires_grad)


@_export
def empty_strided(size, stride, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    """An uninitialized tensor of ``size`` laid out with ``stride``: contiguous where that is the stride, else
    a strided view over a storage just large enough (gaps and overlaps included), as torch's.

    Raises:
        TdxRuntimeError: ``stride`` has another length than ``size``, or a negative entry (torch's storage
            size overflow).
    """
    size, stride = tuple(size), tuple(stride)
    if len(size) != len(stride):
        raise TdxRuntimeError(f"dimensionality of sizes ({len(size)}) must match dimensionality of strides "
                              f"({len(stride)})")
    if _is_contiguous_stride(size, stride):
        return empty(size, dtype=dtype, device=device, requires_grad=requires_grad)
    if any(s < 0 for s in stride):
        raise TdxRuntimeError(f"Storage size calculation overflowed with sizes={list(size)} and strides={list(stride)}")
    storage = 0 if 0 in size else 1 + sum((n - 1) * s for n, s in zip(size, stride))
    out = empty(storage, dtype=dtype, device=device).as_strided(size, stride)
    return out.requires_grad_() if requires_grad else out


@_export
def empty_permuted(size, physical_layout, *, dtype=None, layout=None, device=None, requires_grad=False,
                   pin_memory=False) -> Tensor:
    """An uninitialized tensor of ``size`` whose dims lie in memory in the order ``physical_layout``
    (outermost first): the contiguous tensor of the permuted sizes, permuted back, as torch's (its
    ``stride()`` is torch's).

    Raises:
        TdxRuntimeError: ``physical_layout`` is not a permutation of ``size``'s dims.
        UnsupportedOpError: a non-strided ``layout`` or ``pin_memory=True``.
    """
    from .._errors import UnsupportedOpError
    from .formats import check_layout

    check_layout(layout, "empty_permuted")
    if pin_memory:
        raise UnsupportedOpError("empty_permuted(): pin_memory=True is not supported by tdx; accepted: False")
    size, order = _shape((size,), None, "empty_permuted"), tuple(int(p) for p in physical_layout)
    if len(order) != len(size):
        raise TdxRuntimeError(f"Number of dimensions in size does not match the length of the physical_layout; "
                              f"size={list(size)}, physical_layout={list(order)}")
    if sorted(order) != list(range(len(size))):
        raise TdxRuntimeError(f"physical_layout must be a permutation of the dims 0..{len(size) - 1}, "
                              f"got {list(order)}")
    inverse = [0] * len(order)
    for i, p in enumerate(order):
        inverse[p] = i
    base = empty([size[p] for p in order], dtype=dtype, device=device)
    out = base.permute(*inverse).detach() if order else base
    return out.requires_grad_() if requires_grad else out


def _is_contiguous_stride(size, stride) -> bool:
    """Whether ``stride`` is exactly the stride torch gives a fresh tensor of ``size`` (any other, on a dim of
    size 1 or an empty tensor included, is kept as given: torch's ``stride()`` reports it)."""
    want, acc = [], 1
    for n in reversed(tuple(size)):
        want.append(acc)
        acc *= max(n, 1)
    return tuple(stride) == tuple(reversed(want))


def eye(n, m=None, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    ex, dtype = _ex_dtype(device, dtype)
    if n < 0 or (m is not None and m < 0):
        raise TdxRuntimeError(f"eye(): n and m must be greater or equal to 0, got n={n}, m={m}")
    return wrap_grad(ex.eye(n, n if m is None else m, dtype or D.get_default_dtype(), requires_grad), ex, requires_grad)


def _random(kind, sizes, size, dtype, device, generator, requires_grad):
    shape = _shape(sizes, size, kind)
    ex, dtype = _ex_dtype(device, dtype)
    dtype = dtype or D.get_default_dtype()
    if not (dtype.is_floating_point or dtype.is_complex):  # torch: its kernel's NotImplementedError
        kernel = "check_uniform_bounds" if kind == "rand" else "normal_kernel_cpu"
        raise OpDtypeError(f'"{kernel}" not implemented for \'{D.scalar_name(dtype)}\' ({kind}() makes floating point '
                           f"or complex tensors, got {dtype!r})")
    out = wrap(getattr(ex, kind)(shape, dtype, native_generator(generator, ex)), ex)
    return out.requires_grad_() if requires_grad else out


def rand(*sizes, size=None, dtype=None, layout=None, device=None, generator=None, requires_grad=False) -> Tensor:
    """Uniform samples from [0, 1)."""
    if layout is not None:
        _check_layout(layout, "rand")
    return _random("rand", sizes, size, dtype, device, generator, requires_grad)


def randn(*sizes, size=None, dtype=None, layout=None, device=None, generator=None, requires_grad=False) -> Tensor:
    """Standard normal samples."""
    if layout is not None:
        _check_layout(layout, "randn")
    return _random("randn", sizes, size, dtype, device, generator, requires_grad)


def randint(low=0, high=None, size=None, *, dtype=None, layout=None, device=None, generator=None) -> Tensor:
    """Integers uniform in [low, high); ``randint(high, size)`` as torch."""
    if layout is not None:
        _check_layout(layout, "randint")
    if size is None:
        low, high, size = 0, low, high
    if high is None or size is None:
        raise TdxTypeError("randint() needs high and size: randint(high, size) or randint(low, high, size)")
    if low >= high:
        raise TdxRuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    ex, dtype = _ex_dtype(device, dtype)
    return wrap(ex.randint(low, high, shape_args((size,), "randint"), dtype or D.int64, native_generator(generator, ex)),
                ex)


def _like(t, dtype, device, memory_format=None):
    if memory_format is not None:
        from .formats import check_memory_format

        check_memory_format(memory_format, "*_like")
    return (t.device if device is None else device), (t.dtype if dtype is None else dtype)


def _filled_like(t, kind: str, requires_grad: bool) -> Tensor:
    """``zeros_like(t)`` and its kin with nothing but ``requires_grad`` given: ``t``'s own executor makes it."""
    out = wrap_grad(t._ex.filled_like(t._n, kind), t._ex, False)
    return out.requires_grad_() if requires_grad else out


def zeros_like(input, *, dtype=None,
               layout=None, device=None, requires_grad=False, memory_format=None) -> Tensor:  # noqa: A002
    if layout is not None:
        _check_layout(layout, "zeros_like")
    if dtype is None and device is None and memory_format is None and input.__class__ is Tensor:
        return _filled_like(input, "zeros", requires_grad)
    device, dtype = _like(input, dtype, device, memory_format)
    return zeros(input.shape, dtype=dtype, device=device, requires_grad=requires_grad)


def ones_like(input, *, dtype=None,
              layout=None, device=None, requires_grad=False, memory_format=None) -> Tensor:  # noqa: A002
    if layout is not None:
        _check_layout(layout, "ones_like")
    if dtype is None and device is None and memory_format is None and input.__class__ is Tensor:
        return _filled_like(input, "ones", requires_grad)
    device, dtype = _like(input, dtype, device, memory_format)
    return ones(input.shape, dtype=dtype, device=device, requires_grad=requires_grad)


def empty_like(input, *, dtype=None,
               layout=None, device=None, requires_grad=False, memory_format=None) -> Tensor:  # noqa: A002
    if layout is not None:
        _check_layout(layout, "empty_like")
    if dtype is None and device is None and memory_format is None and input.__class__ is Tensor:
        return _filled_like(input, "empty", requires_grad)
    device, dtype = _like(input, dtype, device, memory_format)
    return empty(input.shape, dtype=dtype, device=device, requires_grad=requires_grad)


def full_like(input, fill_value, *, dtype=None, layout=None, device=None, requires_grad=False,  # noqa: A002
              memory_format=None) -> Tensor:
    if layout is not None:
        _check_layout(layout, "full_like")
    device, dtype = _like(input, dtype, device, memory_format)
    return full(input.shape, fill_value, dtype=dtype, device=device, requires_grad=requires_grad)


def preserved_order(t):
    """The order (outermost first) in which torch's ``*_like`` lays out a tensor like ``t`` (memory
    format ``preserve``: ``t``'s strides where it is dense, else dense strides following its stride
    order, stride-0 dims left where they are), or None where that is the contiguous order. A draw
    like ``t`` fills memory in this order, so its values follow ``t``'s layout, not its indices."""
    shape, strides = tuple(t.shape), tuple(t.stride())
    inner = list(range(len(shape) - 1, -1, -1))  # innermost first, sorted by stride (stable, as torch's)

    def compare(a, b):
        if strides[a] == 0 or strides[b] == 0:
            return 0
        if strides[a] != strides[b]:
            return -1 if strides[a] < strides[b] else 1
        return 1 if shape[a] > shape[b] else 0

    for i in range(1, len(inner)):
        j = i
        for k in range(i - 1, -1, -1):
            c = compare(inner[k], inner[j])
            if c > 0:
                inner[k], inner[j] = inner[j], inner[k]
                j = k
            elif c < 0:
                break
    order = tuple(reversed(inner))
    return None if order == tuple(range(len(shape))) else order


def _like_order(input, memory_format):  # noqa: A002 - torch's name
    """:func:`preserved_order` of ``input`` unless ``memory_format`` asks for the contiguous order."""
    if input.ndim < 2 or getattr(memory_format, "name", "preserve_format") != "preserve_format":
        return None
    return preserved_order(input)


def _drawn_like(input, order, dtype, device, draw: str, args: tuple, requires_grad=False):  # noqa: A002
    """torch's ``empty_like(input).<draw>(*args)`` where its layout is not contiguous: an empty tensor whose dims
    lie in memory in ``order``, filled in place by ``draw`` (``uniform_``, ``normal_``, ``random_``), which
    fills memory in order as torch's does (the values follow ``input``'s layout, not its indices)."""
    out = empty_permuted(tuple(input.shape), order, dtype=dtype, device=device)
    getattr(out, draw)(*args)
    return out.requires_grad_() if requires_grad else out


def rand_like(input, *, dtype=None,
              layout=None, device=None, requires_grad=False, memory_format=None) -> Tensor:  # noqa: A002
    if layout is not None:
        _check_layout(layout, "rand_like")
    device, dtype = _like(input, dtype, device, memory_format)
    order = _like_order(input, memory_format)
    if order is None:
        return rand(input.shape, dtype=dtype, device=device, requires_grad=requires_grad)
    return _drawn_like(input, order, dtype, device, "uniform_", (), requires_grad)


def randn_like(input, *, dtype=None,
               layout=None, device=None, requires_grad=False, memory_format=None) -> Tensor:  # noqa: A002
    if layout is not None:
        _check_layout(layout, "randn_like")
    device, dtype = _like(input, dtype, device, memory_format)
    order = _like_order(input, memory_format)
    if order is None:
        return randn(input.shape, dtype=dtype, device=device, requires_grad=requires_grad)
    return _drawn_like(input, order, dtype, device, "normal_", (), requires_grad)


def randint_like(input, low=0, high=None, *, dtype=None,
                 layout=None, device=None, memory_format=None) -> Tensor:  # noqa: A002
    if layout is not None:
        _check_layout(layout, "randint_like")
    device, dtype = _like(input, dtype, device, memory_format)
    if high is None:
        low, high = 0, low
    order = _like_order(input, memory_format)
    if order is None:
        return randint(low, high, input.shape, dtype=dtype, device=device)
    if low >= high:
        raise TdxRuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    return _drawn_like(input, order, dtype, device, "random_", (low, high))


def from_numpy(ndarray) -> Tensor:
    """A CPU tensor sharing memory with a NumPy array, as ``torch.from_numpy``.

    Raises:
        TdxTypeError: ``ndarray`` is not a NumPy array.
    """
    import numpy as np

    if not isinstance(ndarray, np.ndarray):
        raise TdxTypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    return as_tensor(ndarray, device="cpu")


def _rebuild(array, dtype_name, device_name, requires_grad=False, cls=None):
    """Unpickle a tensor (NumPy payload) onto its device, translated if absent, with its requires_grad and,
    for a subclass, its class."""
    out = tensor(array, device=device_name).to(D.by_name(dtype_name))
    out = out.requires_grad_() if requires_grad else out
    return out if cls is None else out.as_subclass(cls)


class CreationMethods:
    """The ``new_*`` methods of ``tdx.Tensor``: tensors like this one (device, dtype) from sizes or data."""

    __slots__ = ()

    def __reduce_ex__(self, protocol):
        """Pickling: the array, its dtype, device and requires_grad (module-level ``_rebuild``), and the
        attributes set on the tensor as the pickle's state, as torch's ``__reduce_ex__`` carries its ``__dict__``."""
        args = (self._ex.host_numpy(self._n), self.dtype.name, str(self._ex.device), self.requires_grad)
        if type(self) is not Tensor:  # a subclass comes back as itself, as torch's _rebuild_from_type_v2 does
            args += (type(self),)
        state = self.__dict__
        return (_rebuild, args, dict(state)) if state else (_rebuild, args)

    # new tensors like this one --------------------------------------------------------------
    def _like(self, dtype, device):
        return {"dtype": self.dtype if dtype is None else dtype, "device": self._ex.device if device is None
                else device}

    def new_zeros(self, *size, dtype=None, device=None, requires_grad=False):
        """Zeros of ``size`` with this tensor's dtype and device unless given."""

        return zeros(*size, requires_grad=requires_grad, **self._like(dtype, device))

    def new_ones(self, *size, dtype=None, device=None, requires_grad=False):
        """Ones of ``size`` with this tensor's dtype and device unless given."""

        return ones(*size, requires_grad=requires_grad, **self._like(dtype, device))

    def new_empty(self, *size, dtype=None, device=None, requires_grad=False):
        """An uninitialized tensor of ``size`` with this tensor's dtype and device unless given."""

        return empty(*size, requires_grad=requires_grad, **self._like(dtype, device))

    def new_empty_strided(self, size, stride, *, dtype=None, device=None, requires_grad=False):
        """``empty_strided(size, stride)`` with this tensor's dtype and device unless given."""
        return empty_strided(size, stride, requires_grad=requires_grad, **self._like(dtype, device))

    def new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False):
        """``fill_value`` everywhere in ``size``, with this tensor's dtype and device unless given."""

        return full(size, fill_value, requires_grad=requires_grad, **self._like(dtype, device))

    def new_tensor(self, data, *, dtype=None, device=None, requires_grad=False):
        """A copy of ``data`` with this tensor's dtype and device unless given."""
        if isinstance(data, Tensor):
            data = data.detach().clone()
        return tensor(data, requires_grad=requires_grad, **self._like(dtype, device))


for _name, _fn in list(vars(CreationMethods).items()):  # typed errors, never a tape node: a new tensor has
    if callable(_fn) and not _name.startswith("_") and not getattr(_fn, "_typed", False):  # no history (torch's)
        setattr(CreationMethods, _name, typed_function(_fn))
attach(CreationMethods)


def _triangle_indices(op: str, row, col, offset, dtype, device, keep):
    for name, v in (("row", row), ("col", col), ("offset", offset)):
        if isinstance(v, bool) or not isinstance(v, int):
            raise TdxTypeError(f"{op}(): argument '{name}' must be int, not {type(v).__name__}")
    for name, v in (("row", row), ("col", col)):
        if v < 0:
            raise TdxRuntimeError(f"{op}(): {name} must be non-negative, got {v}")
    dtype = D.int64 if dtype is None else D.as_dtype(dtype)
    if dtype not in (D.int32, D.int64):
        raise TdxNotImplementedError(f"\"{op}\" not implemented for {dtype.name} (it gives int32 or int64)")
    ex = backends.get(device)
    # row i's columns are [lo_i, hi_i): counted in closed form, so the (2, N) result's size is checked before
    # any work (torch's overflow refusal, or the allocation's) and the indices are made in O(N), not O(row * col)
    lower = op == "tril_indices"
    # the rows with a column in the triangle
    first, last = (max(0, -offset), row) if lower else (0, min(row, max(0, col - offset)))
    n = _triangle_count(row, col, offset, lower)
    if 2 * n * dtype.itemsize >= 1 << 63:
        raise TdxRuntimeError(f"Storage size calculation overflowed with sizes=[2, {n}]")
    out = wrap(ex.zeros((2, n), dtype), ex)  # the executor refuses what cannot be allocated
    if not n:
        return out
    del out
    rows = wrap(ex.arange(first, last, 1, D.int64), ex)
    lo = (rows * 0) if lower else (rows + offset).clamp(0, col)
    hi = (rows + offset + 1).clamp(0, col) if lower else rows * 0 + col
    counts = hi - lo
    r = rows.repeat_interleave(counts, output_size=n)
    starts = counts.cumsum(0) - counts  # each row's first position in the result
    c = wrap(ex.arange(0, n, 1, D.int64), ex) - starts.repeat_interleave(counts, output_size=n) + \
        lo.repeat_interleave(counts, output_size=n)
    second = wrap(ex.arange(0, 2, 1, D.int64), ex).reshape(2, 1)  # [[0], [1]]: rows on top, columns below
    return (r * (1 - second) + c * second)._cast(dtype)


def _triangle_count(row: int, col: int, offset: int, lower: bool) -> int:
    """The elements of a ``row`` x ``col`` matrix's lower (or upper) triangle at diagonal ``offset``."""
    total = 0
    if not row or not col:
        return 0
    if lower:  # row i has min(col, max(0, i + offset + 1)) columns
        def width(i):
            return min(col, max(0, i + offset + 1))
    else:  # row i has col - min(col, max(0, i + offset)) columns
        def width(i):
            return col - min(col, max(0, i + offset))
    # the width is linear in i between the rows where it saturates: sum it piecewise, in closed form
    breaks = sorted({0, row, *(b for b in (-offset - 1, -offset, col - offset - 1, col - offset) if 0 < b < row)})
    for a, b in zip(breaks, breaks[1:]):
        wa, wb = width(a), width(b - 1)
        total += (wa + wb) * (b - a) // 2
    return total


@_export
def tril_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    """The (2, N) row and column indices of the lower triangle of a ``row`` x ``col`` matrix."""
    return _triangle_indices("tril_indices", row, col, offset, dtype, device, lambda d, k: d <= k)


@_export
def triu_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    """The (2, N) row and column indices of the upper triangle of a ``row`` x ``col`` matrix."""
    return _triangle_indices("triu_indices", row, col, offset, dtype, device, lambda d, k: d >= k)


def _typed_factory(fn):
    """``fn`` raising TdxErrors of torch's classes only (a framework's own error is translated)."""
    @functools.wraps(fn)
    def factory(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except OverflowError as err:
            if isinstance(err, TdxOverflowError):
                raise
            raise TdxOverflowError(str(err)) from None
        except NATIVE_ERRORS as err:
            raise translate(err) from None

    return factory


for _name in ("tensor", "as_tensor", "zeros", "ones", "empty", "full", "arange", "linspace", "eye", "rand",
              "randn", "randint", "zeros_like", "ones_like", "empty_like", "full_like", "rand_like", "randn_like"):
    globals()[_name] = _typed_factory(globals()[_name])
asarray = as_tensor
