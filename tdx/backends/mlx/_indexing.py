"""torch-semantics MLX ops that index, order and rearrange: gather/scatter, masks, sorting,
unique, roll/flip/repeat/tile, narrow/unbind/movedim.

A mixin of the MLX executor (listed in :class:`tdx.backends.mlx._executor.MLXExecutor`): methods
take and return MLX arrays, pass ``self.s`` to every MLX call, check arguments as torch
checks them and raise tdx's typed errors. Index outputs are int64 and sorts are stable,
with NaN ordered above every number, as torch on CPU. Ops whose output size depends on
the data (``nonzero``, ``masked_select``, ``unique``) read the data on the host. Must
never import torch.
"""

from __future__ import annotations

import functools

import numpy as np
import mlx.core as mx

from ..._errors import OpDtypeError, ShapeError, TdxIndexError, TdxRuntimeError, TdxTypeError
from ...autograd.tape import differentiating
from ..base import norm_dim
from ._memory import check_alloc
from ._rules import gathered
from ._streams import EVAL_LOCK
from ._value_bounds import bounds as value_bounds, start_pending

_INTS = frozenset((mx.bool_, mx.uint8, mx.int8, mx.int16, mx.int32, mx.int64))
_INDEX = frozenset((mx.int32, mx.int64))
_TORCH_NAMES = {"bool": "Bool", "uint8": "Byte", "int8": "Char", "int16": "Short", "int32": "Int",
                "int64": "Long", "float16": "Half", "bfloat16": "BFloat16", "float32": "Float",
                "float64": "Double", "complex64": "ComplexFloat", "complex128": "ComplexDouble"}


def scalar_name(d) -> str:
    """torch's scalar-type name for tdx dtype ``d`` ("Long", "Float"...), as its errors print it."""
    return _TORCH_NAMES[d.name]


_INT_RANGE = {"uint8": (0, 255), "int8": (-128, 127), "int16": (-2 ** 15, 2 ** 15 - 1),
              "int32": (-2 ** 31, 2 ** 31 - 1),
              "int64": (-2 ** 63, 2 ** 63 - 1)}  # mutate: equivalent (past int64, the conversion raises the same)
_FLOAT_MAX = {"float16": 65504.0, "bfloat16": 3.3895313892515355e38, "float32": 3.4028234663852886e38,
              "complex64": 3.4028234663852886e38}
_F32_MAX, _INF = _FLOAT_MAX["float32"], float("inf")
# the C++ type torch's checked scalar conversion names in its error, per tdx dtype
_C_TYPE = {"uint8": "uint8_t", "int8": "int8_t", "int16": "int16_t", "int32": "int", "int64": "int64_t",
           "float16": "c10::Half", "bfloat16": "c10::BFloat16", "float32": "float", "float64": "double",
           "complex64": "c10::complex<float>", "complex128": "c10::complex<double>"}


def fit_scalar(value, d, fill: bool = True):
    """``value`` ready to cast to tdx dtype ``d``: the one checked conversion of a Python scalar
    written into a tensor, refusing what torch's refuses.

    Negative ints down to ``-255`` wrap into uint8 (two's complement) as in torch; floats truncate
    into ints when in range; infinities and NaN fit only floating types; a complex value with an
    imaginary part fits only complex types; anything fits bool (nonzero is True).

    Args:
        value: the scalar (anything else is returned as it is).
        d: the tdx dtype written into.
        fill: True for ``fill_``/``masked_fill_``/``full``/``scatter`` (torch checks the range of
            every dtype and names its C++ type); False for an assignment ``x[index] = value``,
            where torch goes through a double (float32: float) and lets float16/bfloat16 overflow
            to inf.

    Returns:
        ``value``, with a complex scalar reduced to what a real ``d`` keeps.

    Raises:
        TdxRuntimeError: "value cannot be converted to type ... without overflow".
    """
    if value.__class__ is float and d.name == "float32" and (-_F32_MAX <= value <= _F32_MAX or value != value
                                                             or abs(value) == _INF):
        return value  # the common case, decided here
    if value.__class__ is bool or d.name == "bool":
        return bool(value) if isinstance(value, complex) else value
    if not isinstance(value, (int, float, complex)):
        return value
    if isinstance(value, complex):
        if d.is_complex:
            return value
        bad, real = value.imag != 0, value.real
    else:
        bad, real = False, value
    lo_hi = _INT_RANGE.get(d.name)
    if not bad and lo_hi is not None:
        lo, hi = lo_hi
        if isinstance(real, int):
            bad = real > hi or (real < -hi if lo == 0 else real < lo)
        else:
            bad = real != real or real < lo or real > hi
    elif not bad and d.name in _FLOAT_MAX and (fill or d.name == "float32") and real == real \
            and abs(real) != float("inf"):
        bad = abs(real) > _FLOAT_MAX[d.name]
    if bad:
        name = _C_TYPE.get(d.name, d.name)
        if not fill and d.is_floating_point:
            name = "float" if d.name == "float32" else "double"
        raise TdxRuntimeError(f"value cannot be converted to type {name} without overflow")
    return real


def on_stream(cls):
    """Run every public method of mixin ``cls`` with ``self.s`` as MLX's default stream.

    Operators, indexing and ``.at[]`` updates take no ``stream=``; inside the context they
    run on the executor's device too (an ``mlx:cpu`` array never reaches the GPU).
    """
    def bind(fn):
        if isinstance(fn, staticmethod):  # called without ``self``
            inner = fn.__func__

            @functools.wraps(inner)
            def op(self, *args, **kwargs):
                with mx.stream(self.s):
                    return inner(*args, **kwargs)
        else:
            @functools.wraps(fn)
            def op(self, *args, **kwargs):
                with mx.stream(self.s):
                    return fn(self, *args, **kwargs)

        return op

    for name, fn in list(vars(cls).items()):
        if not name.startswith("_") and callable(fn):
            setattr(cls, name, bind(fn))
    return cls


def dim_list(dims, ndim: int) -> list:
    """``dims`` (an int or a sequence) normalized, refusing repeats as torch does.

    Raises:
        TdxIndexError: a dim is out of range.
        ShapeError: a dim appears twice.
    """
    out = [norm_dim(d, ndim) for d in ((dims,) if isinstance(dims, int) else dims)]
    for d in out:
        if out.count(d) > 1:
            raise ShapeError(f"dim {d} appears multiple times in the list of dims")
    return out


@on_stream
class MLXIndexOps:
    """Indexing, ordering and rearranging ops with torch's semantics."""

    # gather / scatter -------------------------------------------------------------------
    def _check_index(self, index, op: str, allowed=_INDEX):
        if not isinstance(index, mx.array):
            raise TdxTypeError(f"{op}(): argument 'index' must be Tensor, not {type(index).__name__}")
        if index.dtype not in allowed:
            names = "int32/int64" if mx.int32 in allowed else "int64"
            raise TdxRuntimeError(f"{op}(): Expected dtype {names} for index")

    def _in_bounds(self, index, size: int, d: int):
        bounds = self._bounds(index, size) if index.size else None
        if bounds is None:
            return
        lo, hi = bounds
        if lo < 0 or hi >= size:
            bad = hi if hi >= size else lo
            raise TdxRuntimeError(f"index {bad} is out of bounds for dimension {d} with size {size}")

    def _fit_dims(self, x, index, d: int, what: str = "self"):
        xs = x.shape if x.ndim else (1,)
        ix = index.shape if index.ndim else (1,)
        if len(ix) != len(xs):
            raise TdxRuntimeError(f"Index tensor must have the same number of dimensions as {what} tensor")
        for k, (a, b) in enumerate(zip(ix, xs)):
            if k != d and a > b:
                raise TdxRuntimeError(f"Size does not match at dimension {k} expected index {list(ix)} to be "
                                      f"no larger than {what} {list(xs)} apart from dimension {d}")

    def gather(self, x, dim, index):
        if isinstance(index, mx.array) and index.size == 0:  # torch takes an empty index of any integer dtype
            return mx.zeros(index.shape, x.dtype, stream=self.s)
        self._check_index(index, "gather")
        d = norm_dim(dim, x.ndim)
        self._fit_dims(x, index, d)
        self._in_bounds(index, x.shape[d] if x.ndim else 1, d)
        if index.size == 0:
            return mx.zeros(index.shape, x.dtype, stream=self.s)
        xs, ix = (x, index) if x.ndim else (mx.reshape(x, (1,), stream=self.s), index)
        ix = ix if ix.ndim else mx.reshape(ix, (1,), stream=self.s)
        xs = xs[tuple(slice(None) if k == d else slice(0, n) for k, n in enumerate(ix.shape))]
        out = mx.take_along_axis(xs, mx.stop_gradient(ix), axis=d, stream=self.s)  # indices carry no gradient
        return mx.reshape(out, index.shape, stream=self.s)

    def _flat_targets(self, x, d: int, index):
        """Flat positions in ``x`` that each element of ``index`` addresses along dim ``d``."""
        shape = index.shape
        flat = mx.zeros(shape, mx.int64, stream=self.s)
        stride = 1
        for k in range(len(shape) - 1, -1, -1):
            if k == d:
                coord = index.astype(mx.int64, stream=self.s)
            else:
                coord = mx.arange(shape[k], dtype=mx.int64, stream=self.s)
                coord = mx.reshape(coord, [-1 if j == k else 1 for j in range(len(shape))], stream=self.s)
            flat = flat + coord * stride
            stride *= x.shape[k]
        return mx.reshape(flat, (-1,), stream=self.s)

    def _scatter_prep(self, x, dim, index, src, op):
        if not (isinstance(index, mx.array) and index.size == 0):  # torch takes an empty index of any dtype
            self._check_index(index, op)
        d = norm_dim(dim, x.ndim)
        if isinstance(src, mx.array):
            if src.dtype != x.dtype:
                raise TdxRuntimeError(f"{op}(): Expected self.dtype to be equal to src.dtype")
            self._fit_dims(src, index, -1, "src")
        self._fit_dims(x, index, d)
        self._in_bounds(index, x.shape[d] if x.ndim else 1, d)
        if index.size == 0:
            return None, None, None
        xs = x if x.ndim else mx.reshape(x, (1,), stream=self.s)
        ix = index if index.ndim else mx.reshape(index, (1,), stream=self.s)
        flat = self._flat_targets(xs, d, ix)
        if isinstance(src, mx.array):
            sv = src if src.ndim else mx.reshape(src, (1,), stream=self.s)
            sv = sv[tuple(slice(0, n) for n in ix.shape)]
            vals = mx.reshape(sv, (-1,), stream=self.s)
        else:
            src = fit_scalar(src, self._tdx(x))
            vals = mx.full((flat.size,), self._cast(src, self._tdx(x)), stream=self.s)
        return mx.reshape(x, (-1,), stream=self.s), flat, vals

    def scatter(self, x, dim, index, src, reduce=None):
        if reduce not in (None, "add", "multiply"):
            raise TdxRuntimeError(f"reduce argument must be either add or multiply, got {reduce!r}")
        out, flat, vals = self._scatter_prep(x, dim, index, src, "scatter")
        if out is None:
            return x
        if reduce == "add":
            out = out.at[flat].add(vals)
        elif reduce == "multiply":
            out = out.at[flat].multiply(vals)
        else:
            out[flat] = vals
        return mx.reshape(out, x.shape, stream=self.s)

    def scatter_add(self, x, dim, index, src):
        if not isinstance(src, mx.array):
            raise TdxTypeError(f"scatter_add(): argument 'src' must be Tensor, not {type(src).__name__}")
        return self.scatter(x, dim, index, src, "add")

    def _bounds(self, index, size: int, low: int = 0):
        """``(min, max)`` of ``index``, or bounds of its values known to lie in ``[low, size)``
        (``_value_bounds``: then nothing is read), or None under ``mx.compile``/``mx.vmap``, which cannot
        read values (the bounds check is then skipped, as in torch's compiled kernels without device
        asserts), and in a backward pass's replay of an op (the forward pass checked the same indices).

        Where the known bounds fit but the values are still pending (an ``argmax`` not yet run), their
        evaluation is started (``mx.async_eval``: the op that reads the index waits on it anyway) and the
        caller goes on building the graph meanwhile. Where nothing is known, or the known bounds do not
        fit (the values may still), the values are read: on the CPU in place (NumPy, no op queued on the
        stream); elsewhere both bounds come from one evaluation.
        """
        if differentiating():
            return None
        known = value_bounds(index)
        if known is not None and low <= known[0] and known[1] < size:
            if known[2]:
                start_pending(index)
            return known[0], known[1]
        try:
            with EVAL_LOCK:  # one thread evaluates the shared stream at a time
                if self._mx_device == mx.cpu:
                    values = np.array(index, copy=False)
                    return int(values.min()), int(values.max())
                lo, hi = mx.min(index, stream=self.s), mx.max(index, stream=self.s)
                mx.eval(lo, hi)
                return int(lo.item()), int(hi.item())
        except (ValueError, RuntimeError) as err:  # MLX refusing to evaluate a traced array
            if "function transformations" in str(err) or "without a primitive" in str(err):
                return None
            raise

    def index_select(self, x, dim, index):
        self._check_index(index, "index_select")
        if index.ndim > 1:
            raise TdxIndexError("index_select(): Index is supposed to be a vector")
        d = norm_dim(dim, x.ndim)
        size = x.shape[d] if x.ndim else 1
        if x.ndim == 0 and index.size != 1:
            raise TdxRuntimeError(f"index_select(): Index to scalar can have only 1 value, got {index.size} value(s)")
        bounds = self._bounds(index, size) if index.size else None
        if bounds is not None:
            lo, hi = bounds
            if lo < 0 or hi >= size:
                raise TdxIndexError(f"index_select(): index {hi if hi >= size else lo} is out of range "
                                    f"for dimension {d} with size {size}")
        if x.ndim == 0:
            return x
        idx = mx.reshape(index, (-1,), stream=self.s)
        return gathered(x, mx.take(x, idx, axis=d, stream=self.s))

    # masks --------------------------------------------------------------------------------
    def masked_fill(self, x, mask, value):
        if not isinstance(mask, mx.array) or mask.dtype != mx.bool_:
            name = self._tdx(mask).name if isinstance(mask, mx.array) else type(mask).__name__
            raise TdxRuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype {name}")
        if isinstance(value, mx.array) and value.ndim:
            raise TdxRuntimeError(f"masked_fill_ only supports a 0-dimensional value tensor, but got tensor "
                                  f"with {value.ndim} dimension(s).")
        value = fit_scalar(value, self._tdx(x))
        return mx.where(mask, self._cast(value, self._tdx(x)), x, stream=self.s)

    def masked_select(self, x, mask):
        if not isinstance(mask, mx.array) or mask.dtype != mx.bool_:
            raise TdxRuntimeError("masked_select: expected BoolTensor for mask")
        shape = broadcast_shape(tuple(x.shape), tuple(mask.shape))
        xb = mx.reshape(mx.broadcast_to(x, shape, stream=self.s), (-1,), stream=self.s)
        where = np.flatnonzero(np.broadcast_to(np.array(mask), shape))
        return gathered(xb, mx.take(xb, mx.array(where.astype(np.int64)), axis=0, stream=self.s))

    def nonzero(self, x):
        arr = self.host_numpy(x)
        if arr.ndim == 0:
            return mx.zeros((int(arr != 0), 0), mx.int64, stream=self.s)
        return mx.array(np.stack(np.nonzero(arr), axis=1).astype(np.int64))

    # ordering -------------------------------------------------------------------------------
    def _stable_argsort(self, x, d: int, descending: bool):
        """Stable argsort along ``d`` with NaN above every number (ties keep index order).

        The indices are constants to autodiff: gradients flow through the values they gather.
        """
        x = mx.stop_gradient(x, stream=self.s)
        if not descending:
            return mx.argsort(x, axis=d, stream=self.s).astype(mx.int64, stream=self.s)
        n = x.shape[d]
        flip = tuple(slice(None, None, -1) if k == d else slice(None) for k in range(x.ndim))
        idx = mx.argsort(x[flip], axis=d, stream=self.s).astype(mx.int64, stream=self.s)
        return (n - 1) - idx[flip]

    def _orderable(self, x, op: str):
        if x.dtype == mx.complex64:
            raise TdxRuntimeError(f"{op}(): Sort does not support complex dtypes on CPU")

    def sort(self, x, dim=-1, descending=False, stable=False):
        self._orderable(x, "sort")
        d = norm_dim(dim, x.ndim)
        if x.ndim == 0:
            return x, mx.zeros((), mx.int64, stream=self.s)
        if x.size == 0:
            return x, mx.zeros(x.shape, mx.int64, stream=self.s)
        idx = self._stable_argsort(x, d, descending)
        return mx.take_along_axis(x, idx, axis=d, stream=self.s), idx

    def argsort(self, x, dim=-1, descending=False, stable=False):
        return self.sort(x, dim, descending, stable)[1]

    def topk(self, x, k, dim, largest, sorted):  # noqa: A002 - torch's name; the facade passes every one
        if x.dtype == mx.bool_:
            raise TdxRuntimeError("topk does not support bool dtypes on CPU")
        self._orderable(x, "topk")
        d = norm_dim(dim, x.ndim)
        size = x.shape[d] if x.ndim else 1
        if not 0 <= k <= size:
            raise TdxRuntimeError(f"selected index k out of range (k={k}, size {size} at dimension {d})")
        values, idx = self.sort(x, d, largest)
        if x.ndim == 0:
            return values, idx
        cut = tuple(slice(0, k) if j == d else slice(None) for j in range(x.ndim))
        return values[cut], idx[cut]

    def unique(self, x, sorted, return_inverse, return_counts, dim):  # noqa: A002 - the facade passes every one
        if x.dtype == mx.complex64:
            raise OpDtypeError("\"unique\" not implemented for 'ComplexFloat'")
        arr = self.host_numpy(x)
        if dim is None:
            vals, inv, counts = np.unique(arr.ravel(), return_inverse=True, return_counts=True,
                                          equal_nan=False)
            inv = inv.reshape(arr.shape)
        else:
            if x.ndim == 0:
                raise TdxIndexError(f"Dimension specified as {dim} but tensor has no dimensions")
            d = norm_dim(dim, x.ndim)
            zero = [k for k, n in enumerate(arr.shape) if n == 0]
            if len(zero) > 1:
                raise TdxRuntimeError("Number of zero sized dimensions is more than one, so unique cannot be "
                                      "applied")
            if zero and zero[0] != d:
                raise TdxRuntimeError("There are 0 sized dimensions, and they aren't selected, so unique cannot "
                                      "be applied")
            if zero:
                vals, inv, counts = arr, np.zeros((0,), np.int64), np.zeros((0,), np.int64)
            else:
                vals, inv, counts = np.unique(arr, return_inverse=True, return_counts=True, axis=d,
                                              equal_nan=False)
                inv = inv.ravel()
        values = self._cast(mx.array(vals), self._tdx(x))
        inverse = mx.array(inv.astype(np.int64)) if return_inverse else None
        return values, inverse, mx.array(counts.astype(np.int64)) if return_counts else None

    # rearranging ----------------------------------------------------------------------------
    def roll(self, x, shifts, dims=None):
        shifts = (shifts,) if isinstance(shifts, int) else tuple(shifts)
        if not shifts:
            raise TdxRuntimeError("`shifts` required")
        if dims is None:
            if len(shifts) != 1:
                raise TdxRuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:0")
            if x.size == 0:
                return x
            flat = mx.roll(mx.reshape(x, (-1,), stream=self.s), shifts[0], axis=0, stream=self.s)
            return mx.reshape(flat, x.shape, stream=self.s)
        dims = (dims,) if isinstance(dims, int) else tuple(dims)
        if len(shifts) != len(dims):
            raise TdxRuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:{len(dims)}")
        if x.ndim == 0 and dims:
            raise TdxIndexError(f"Dimension specified as {dims[0]} but tensor has no dimensions")
        axes = [norm_dim(d, x.ndim) for d in dims]
        if x.size == 0 or x.ndim == 0:
            return x
        for s, a in zip(shifts, axes):
            x = mx.roll(x, s, axis=a, stream=self.s)
        return x

    def flip(self, x, dims):
        axes = dim_list(dims, x.ndim)
        if x.ndim == 0 or not axes:
            return mx.array(x)
        return x[tuple(slice(None, None, -1) if k in axes else slice(None) for k in range(x.ndim))]

    def repeat(self, x, sizes):
        sizes = tuple(sizes)
        if len(sizes) < x.ndim:
            raise TdxRuntimeError("Number of dimensions of repeat dims can not be smaller than number of "
                                  "dimensions of tensor")
        if any(s < 0 for s in sizes):
            raise TdxRuntimeError(f"Trying to create tensor with negative dimension {min(sizes)}: {list(sizes)}")
        lead = (1,) * (len(sizes) - x.ndim) + tuple(x.shape)
        check_alloc(tuple(n * r for n, r in zip(lead, sizes)), x.itemsize, "repeat")
        if not sizes:
            return mx.array(x)
        shape = (1,) * (len(sizes) - x.ndim) + tuple(x.shape)
        out_shape = tuple(a * b for a, b in zip(shape, sizes))
        if 0 in out_shape:
            return mx.zeros(out_shape, x.dtype, stream=self.s)
        return mx.tile(mx.reshape(x, shape, stream=self.s), sizes, stream=self.s)

    def tile(self, x, dims):
        dims = tuple(dims)
        return self.repeat(x, (1,) * (x.ndim - len(dims)) + dims)

    def repeat_interleave(self, x, repeats, dim=None, output_size=None):
        if dim is None:
            x, d = mx.reshape(x, (-1,), stream=self.s), 0
        elif x.ndim == 0:  # torch refuses a dim on a 0-d input
            raise TdxIndexError(f"Dimension specified as {dim} but tensor has no dimensions")
        else:
            d = norm_dim(dim, x.ndim)
        n = x.shape[d]
        if isinstance(repeats, mx.array):
            if repeats.ndim > 1 or repeats.dtype not in _INDEX:
                raise TdxRuntimeError("repeat_interleave: repeats must be 0-dim or 1-dim tensor of int32/int64")
            reps = np.array(repeats).astype(np.int64).ravel()
            if reps.size == 1:
                reps = np.repeat(reps, n)
            if reps.size != n:
                raise TdxRuntimeError(f"repeats must have the same size as input along dim, but got "
                                      f"repeats.size(0) = {reps.size} and input.size({d}) = {n}")
        else:
            reps = np.full((n,), int(repeats), np.int64)
        if (reps < 0).any():
            raise TdxRuntimeError("repeats can not be negative")
        if output_size is not None and int(reps.sum()) != output_size:
            raise TdxRuntimeError(f"allocated size does not match required size: {output_size} vs {int(reps.sum())}")
        total = int(reps.sum(dtype=np.float64))  # exact below 2**53, and no int64 wrap-around above
        check_alloc((*x.shape[:d], total, *x.shape[d + 1:]), x.itemsize, "repeat_interleave")
        check_alloc((total,), 8, "repeat_interleave")  # and the int64 index
        idx = np.repeat(np.arange(n, dtype=np.int64), reps)
        if idx.size == 0:
            shape = list(x.shape)
            shape[d] = 0
            return mx.zeros(shape, x.dtype, stream=self.s)
        return gathered(x, mx.take(x, mx.array(idx), axis=d, stream=self.s))

    def diagonal(self, x, offset, dim1, dim2):
        if x.size == 0:  # MLX's vjp of diagonal traps (SIGFPE) on empty input; the gradient is empty anyway
            x = mx.stop_gradient(x)
        return mx.diagonal(x, offset, dim1, dim2, stream=self.s)

    def narrow(self, x, dim, start, length):
        if x.ndim == 0:
            raise TdxRuntimeError("narrow() cannot be applied to a 0-dim tensor.")
        d = norm_dim(dim, x.ndim)
        size = x.shape[d]
        if not -size <= start <= size:
            raise TdxIndexError(f"start out of range (expected to be in range of [{-size}, {size}], "
                                f"but got {start})")
        start = start + size if start < 0 else start
        if length < 0:
            raise TdxRuntimeError("narrow(): length must be non-negative.")
        if start + length > size:
            raise TdxRuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({size}).")
        return x[tuple(slice(start, start + length) if k == d else slice(None) for k in range(x.ndim))]

    def unbind(self, x, dim=0):
        if x.ndim == 0:
            raise TdxIndexError("Dimension specified as 0 but tensor has no dimensions")
        d = norm_dim(dim, x.ndim)
        n = x.shape[d]
        return tuple(x[tuple(i if k == d else slice(None) for k in range(x.ndim))] for i in range(n))

    def movedim(self, x, source, destination):
        src = [source] if isinstance(source, int) else list(source)
        dst = [destination] if isinstance(destination, int) else list(destination)
        if len(src) != len(dst):
            raise TdxRuntimeError(f"movedim: Invalid source or destination dims: source ({src} dims) should "
                                  f"contain the same number of dims as destination ({dst} dims)")
        nd = x.ndim
        src = [norm_dim(s, nd) for s in src]
        dst = [norm_dim(s, nd) for s in dst]
        for name, dims in (("source", src), ("destination", dst)):
            if len(set(dims)) != len(dims):
                raise TdxRuntimeError(f"movedim: repeated dim in `{name}` ({dims})")
        if nd <= 1:  # 0-d and 1-d: moving dims is the identity
            return x
        order = [-1] * nd
        for s, t in zip(src, dst):
            order[t] = s
        rest = iter(i for i in range(nd) if i not in src)
        order = [o if o != -1 else next(rest) for o in order]
        return mx.transpose(x, order, stream=self.s)


def broadcast_shape(*shapes) -> tuple:
    """The broadcast of ``shapes``, or a ShapeError worded as torch's."""
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise ShapeError(f"shapes {[list(s) for s in shapes]} cannot be broadcast together") from None
