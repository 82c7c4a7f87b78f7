"""The MLX executor: tdx ops on MLX arrays, with torch's semantics.

MLX promotes, reduces and indexes a little differently from torch; this executor
makes every result match torch's (dtype promotion from ``tdx._dtypes``, int64 indices,
bounds checks, torch's reductions). Every op names its stream, so an ``mlx:cpu`` tensor
stays on the CPU even where MLX's default device is the GPU. Imported the first time an
MLX device is used; it must never import torch.
"""

from __future__ import annotations

import warnings
import weakref

import numpy as np
import mlx.core as mx

from ... import _dtypes as D
from ... import config
from ..._errors import (DtypeError, PrecisionWarning, TdxError, TdxNotImplementedError, TdxRuntimeError,
                        TdxTypeError, TdxValueError,
                        translate)
from ..base import Capabilities, Executor
from . import downcast_float64_enabled as _downcast_float64
from ._elementwise import _NOT_FOR_COMPLEX, MLXElementwiseOps, _real_only, float32_kernels
from ._gather import MLXGatherOps
from ._indexing import MLXIndexOps, fit_scalar
from ._linalg import MLXLinalgOps
from ._namespaces import MLXNamespaceOps
from ._nn import MLXNNOps, column_major
from ._optim import MLXOptimOps
from ._memory import check_alloc, check_result, sized
from ._random import MLXRandomOps, seed_default
from ._sampling import MLXSamplingOps
from ._torch_stream import torch_stream
from ._reduction import MLXReductionOps
from ._scatter import MLXScatterOps
from ._inverse_functions import MLXInverseFunctionOps
from ._complex import MLXComplexOps
from ._convolution import MLXConvolutionOps
from ._shape import MLXShapeOps
from ._value_bounds import (KNOWN, bounds as value_bounds, carry as carry_bounds, constant as constant_bounds,
                            holds, note as note_bounds, note_host as note_host_bounds, pinned as pinned_value)
from ._streams import (EVAL_LOCK as _EVAL_LOCK, THREAD as _THREAD, enter_thread as _enter_thread,
                       shared_stream as _shared_stream)

_SMALL_RANGE = 1 << 16  # arange's fast path: at most this many elements, bounds within +-2**56

_TABLE = {
    D.bool_: mx.bool_, D.uint8: mx.uint8, D.int8: mx.int8, D.int16: mx.int16, D.int32: mx.int32,
    D.int64: mx.int64, D.float16: mx.float16, D.bfloat16: mx.bfloat16, D.float32: mx.float32,
    D.float64: mx.float64, D.complex64: mx.complex64,
}
_INDEX_TYPES = frozenset((mx.uint8, mx.int8, mx.int16, mx.int32, mx.int64))
_NP_NAME = {d: d.name if d is not D.bool_ else "bool" for d in _TABLE}


@torch_stream
class MLXExecutor(MLXElementwiseOps, MLXReductionOps, MLXShapeOps, MLXGatherOps, MLXLinalgOps, MLXIndexOps,
                  MLXRandomOps, MLXSamplingOps, MLXNamespaceOps, MLXNNOps, MLXScatterOps, MLXInverseFunctionOps,
                  MLXComplexOps, MLXConvolutionOps, MLXOptimOps, Executor):
    """Runs tdx ops with MLX on its GPU or its CPU."""

    name = "mlx"
    mutable = False
    taped = True

    def __init__(self, device):
        gpu = device.kind == "gpu"
        names = frozenset(d.name for d in _TABLE)
        self.caps = Capabilities(
            dtypes=names - {"float64"} if gpu else names,
            float64=not gpu,
            native_autograd=False,
            mutable=False,
            dlpack_zero_copy_import=False,
            dlpack_zero_copy_export=not gpu,
            asynchronous=True,
            lazy=True,
            sdpa_kernels=("mlx_fused",),
        )
        super().__init__(device)
        self._mx_device = mx.gpu if gpu else mx.cpu
        self._stream = None  # made on first use: a GPU stream needs the GPU
        self._sum_plans = {}  # (shape, dim, keepdim) -> how a float32 sum adds (_reduction._sum_plan)
        config.on_reload(self._sum_plans.clear)  # [backends.mlx] summation may have changed
        self._bind_dtypes(_TABLE)
        self.float32_kernels = {name: (kernel, D.bool_ if result == "bool" else D.float32, scalars, vectors)
                                for name, (kernel, result, scalars, vectors) in float32_kernels(type(self)).items()}

    @property
    def s(self):
        """The stream every op of this executor runs on: one per device, valid in every thread.

        MLX binds unevaluated work to a stream, and its default streams exist only in the thread
        that made them; reading a tensor built in another thread would raise. The first time a
        thread reaches this executor, its default streams become the shared ones, so even MLX
        calls that name no stream (operators, ``mx.vjp``'s cotangents) run on them.

        The per-op paths whose only MLX call names the stream read ``self._stream or self.s`` (the
        property's call is a tenth of a microsecond): a thread is entered by the first op that needs it.
        """
        stream = self._stream
        if stream is not None and _THREAD.ready:  # the per-op path: one attribute read each
            return stream
        if stream is None:
            self._stream = _shared_stream(self._mx_device)
            _THREAD.ready = False
        if not _THREAD.ready:
            _enter_thread()
        return self._stream

    @s.setter
    def s(self, stream) -> None:
        """Run this executor on ``stream``: only before its first op (per-op call sites keep the stream
        they first saw with the executor's float32 kernels: ``tdx._tensor.wrapping.float32_entry``)."""
        self._stream = stream

    # creation -------------------------------------------------------------------------
    def _nd(self, dtype):
        return self.native_dtype(dtype)

    def native_dtype(self, d):
        """The MLX dtype for ``d``; float64 on a GPU raises, or is float32 with a warning where
        ``backends.mlx.downcast_float64`` opts in (never silently).

        Raises:
            DtypeError: the executor cannot hold ``d``.
        """
        try:
            return self._to_native[d]
        except KeyError:
            if not self.caps.float64 and D.as_dtype(d) is D.float64 and _downcast_float64():
                warnings.warn(f"float64 is held as float32 on {self.device} (MLX GPUs have no float64): "
                              "the config opts in with backends.mlx.downcast_float64", PrecisionWarning,
                              stacklevel=3)
                return mx.float32
            return super().native_dtype(d)

    def from_data(self, data, dtype, requires_grad=False):
        self._no_grad(requires_grad)
        if isinstance(data, (np.ndarray, np.generic)):
            arr = np.asarray(data)
            dtype = dtype or D.by_name(arr.dtype.name)
        else:
            arr = np.asarray(data)
            if arr.dtype == np.uint64 or arr.dtype == object and any(isinstance(v, int) for v in arr.ravel()):
                raise TdxValueError("Overflow when unpacking long long: an int does not fit in 64 bits")
            dtype = dtype or infer_dtype(arr)
            if arr.dtype.kind == "c" and not (dtype.is_complex or dtype is D.bool_):  # torch's Python conversion
                raise TdxTypeError("must be real number, not complex" if dtype.is_floating_point
                                   else "'complex' object cannot be interpreted as an integer")
            if arr.dtype.kind in "iuf" and D.is_integral(dtype, include_bool=False):
                _check_int_range(arr, dtype, dtype.name)
        return self.from_host(arr, dtype)

    def from_host(self, arr: np.ndarray, dtype):
        """Copy a NumPy array into MLX as tdx dtype ``dtype`` (or its own dtype if None)."""
        if dtype is None:
            dtype = D.by_name(arr.dtype.name)
        nd = self._nd(dtype)
        if arr.dtype.kind == "c" and not dtype.is_complex:
            arr = arr.real
        src = arr if arr.dtype.name in ("bool", "uint8", "int8", "int16", "int32", "int64", "float16",
                                         "float32", "float64", "complex64", "complex128") else arr.astype(np.float64)
        if src.dtype == np.float64 and nd != mx.float64:  # narrowed on the host (ints exactly; overflow is inf)
            with np.errstate(over="ignore"):
                src = src.astype(np.complex64 if dtype is D.complex64 else np.float32 if dtype.is_floating_point
                                 else _NP_NAME[dtype])
        if src.dtype == np.complex128:
            src = src.astype(np.complex64)
        src = src if src.flags.c_contiguous else src.copy(order="C")
        out = mx.array(src, dtype=mx.float64) if src.dtype == np.float64 else mx.array(src)
        out = out if out.dtype == nd else out.astype(nd, stream=self.s)
        if src.dtype.kind in "iu" and nd in _INDEX_TYPES:
            note_host_bounds(out)  # an index checker reads it without waiting on anything
        return out

    def _no_grad(self, requires_grad):
        """Creation ignores ``requires_grad``: the facade marks the new tensor on tdx's tape."""

    def zeros(self, shape, dtype, requires_grad=False):
        self._no_grad(requires_grad)
        check_alloc(shape, dtype.itemsize, "zeros")
        return constant_bounds(mx.zeros(shape, self._nd(dtype), stream=self.s), 0)

    def ones(self, shape, dtype, requires_grad=False):
        self._no_grad(requires_grad)
        check_alloc(shape, dtype.itemsize, "ones")
        return constant_bounds(mx.ones(shape, self._nd(dtype), stream=self.s), 1)

    empty = zeros

    def full(self, shape, value, dtype, requires_grad=False):
        self._no_grad(requires_grad)
        check_alloc(shape, dtype.itemsize, "full")
        if not isinstance(value, mx.array):
            value = fit_scalar(value, dtype)
        return constant_bounds(mx.full(shape, mx.array(value, self._nd(dtype)), self._nd(dtype), stream=self.s), value)

    def arange(self, start, end, step, dtype, requires_grad=False):
        if start.__class__ is int and end.__class__ is int and step.__class__ is int and dtype is D.int64 \
                and 0 < step <= _SMALL_RANGE and -_SMALL_RANGE << 40 <= start <= end <= start + _SMALL_RANGE * step \
                and end <= _SMALL_RANGE << 40:
            # the per-token position counter (int64 by ints, a few elements, far from the dtype's ends): its length by
            # integer arithmetic, no allocation check (a small buffer), the bounds the general path below notes
            n = (end - start + step - 1) // step
            out = mx.arange(start, end, step, dtype=mx.int64, stream=self._stream or self.s)
            if n:
                note_bounds(out, start, start + (n - 1) * step, False)
            return out
        self._no_grad(requires_grad)
        if step == 0:
            raise DtypeError("arange: step must be nonzero")
        if not D.is_floating(dtype) and not dtype.is_complex:  # torch casts the bounds to the integer type first
            start, end, step = int(start), int(end), int(step)
            if step == 0:
                raise DtypeError("arange: step must be nonzero")
        n = max(0, int(np.ceil((end - start) / step)))
        check_alloc((n,), dtype.itemsize, "arange")
        if D.is_floating(dtype) or any(isinstance(v, float) for v in (start, end, step)):
            if not self.caps.float64 and not D.is_floating(dtype):  # torch's double arithmetic, on the host
                return mx.array((np.arange(n, dtype=np.float64) * step + start).astype(np.int64)).astype(
                    self._nd(dtype), stream=self.s)
            out = mx.arange(n, dtype=mx.float64 if self.caps.float64 else mx.float32, stream=self.s)
            out = out * step + start
            return out.astype(self._nd(dtype), stream=self.s)
        out = mx.arange(start, end, step, dtype=self._nd(dtype), stream=self.s)
        if n and dtype is not D.bool_:
            last = start + (n - 1) * step
            lo, hi = min(start, last), max(start, last)
            if holds(out.dtype, lo, hi):  # values that wrap in the dtype have no such bounds
                note_bounds(out, lo, hi, False)
        return out

    def linspace(self, start, end, steps, dtype, requires_grad=False):
        self._no_grad(requires_grad)
        check_alloc((steps,), dtype.itemsize, "linspace")
        wide = mx.float32 if dtype in (D.float16, D.bfloat16) or not self.caps.float64 else mx.float64
        if not D.is_floating(dtype) and not dtype.is_complex and steps > 1:
            # torch: integer endpoints, steps in double from both ends, truncated
            start, end = int(start), int(end)
            step = (end - start) / (steps - 1)
            if not self.caps.float64:  # no double on this device: torch's double arithmetic, on the host
                i = np.arange(steps, dtype=np.float64)
                host = np.where(i < steps // 2, start + step * i, end - step * (steps - 1 - i))
                return mx.array(host.astype(np.int64)).astype(self._nd(dtype), stream=self.s)
            i = mx.arange(steps, dtype=wide, stream=self.s)
            half = steps // 2
            out = mx.where(i < half, start + step * i, end - step * (steps - 1 - i), stream=self.s)
            return out.astype(self._nd(dtype), stream=self.s)
        out = mx.linspace(start, end, steps, dtype=wide, stream=self.s)
        return out.astype(self._nd(dtype), stream=self.s)

    def eye(self, n, m, dtype, requires_grad=False):
        self._no_grad(requires_grad)
        check_alloc((n, n if m is None else m), dtype.itemsize, "eye")
        return mx.eye(n, m, dtype=self._nd(dtype), stream=self.s)

    def rand(self, shape, dtype, generator=None):
        check_alloc(shape, dtype.itemsize, "rand")
        if self._nd(dtype) == mx.float64:
            return self.uniform64(tuple(shape), generator)
        return mx.random.uniform(shape=shape, dtype=self._nd(dtype), key=self._key(generator), stream=self.s)

    def randn(self, shape, dtype, generator=None):
        check_alloc(shape, dtype.itemsize, "randn")
        return mx.random.normal(shape, dtype=self._nd(dtype), key=self._key(generator), stream=self.s)

    def randint(self, low, high, shape, dtype, generator=None):
        check_alloc(shape, dtype.itemsize, "randint")
        nd = self._nd(dtype)
        if not (mx.issubdtype(nd, mx.integer) or nd == mx.bool_):  # MLX draws integers only; torch casts them
            out = mx.random.randint(low, high, shape, dtype=mx.int64, key=self._key(generator), stream=self.s)
            return out.astype(nd, stream=self.s)
        return mx.random.randint(low, high, shape, dtype=nd, key=self._key(generator), stream=self.s)

    def manual_seed(self, seed: int) -> None:
        mx.random.seed(seed)
        seed_default(seed)

    def default_rng_state(self):
        hi, lo = mx.random.state[0].tolist()  # MLX's global key's two words
        return (hi << 32) | lo

    def set_default_rng_state(self, state) -> None:
        mx.random.seed(state)  # MLX's seed(s) sets the global key to the words of s

    # conversion -----------------------------------------------------------------------
    @staticmethod
    def shape(x):
        return tuple(x.shape)

    def astype(self, x, dtype):
        nd = self._nd(dtype)
        if x.dtype == nd:
            return x
        check_alloc(x.shape, nd.size, "to")
        out = x.astype(nd, stream=self.s)
        return carry_bounds(x, out) if nd == mx.int64 else out  # every integer value fits int64

    def numpy(self, x):
        if x.dtype == mx.bfloat16:
            raise DtypeError("Got unsupported ScalarType BFloat16: NumPy has no bfloat16; "
                             "call .float() first")
        x = self.row_major(x)
        with _EVAL_LOCK:
            return _read_only(np.array(x, copy=False))

    def host_numpy(self, x):
        """A read-only NumPy view of ``x`` (bfloat16 widened to float32, a copy)."""
        if x.dtype == mx.bfloat16:
            x = x.astype(mx.float32, stream=self.s)
        x = self.row_major(x)
        with _EVAL_LOCK:
            return _read_only(np.array(x, copy=False))

    def row_major(self, x):
        """``x``, or a row-major copy of it where ``x`` is a weight ``linear_last`` stored column by column:
        what leaves for NumPy, DLPack or torch is laid out as torch's contiguous tensor is."""
        return mx.contiguous(x, stream=self.s) if column_major(x) else x

    @staticmethod
    def shares_memory(x) -> bool:
        """Whether torch may hold a writable view of ``x``'s buffer (:meth:`share`)."""
        ref = _SHARED.get(id(x))
        return ref is not None and ref() is x

    @staticmethod
    def item(x):
        if x.size != 1:
            raise TdxRuntimeError(f"a Tensor with {x.size} elements cannot be converted to Scalar")
        if KNOWN:  # a value its bounds pin down is known here: read without waiting on the work before it
            v = pinned_value(x)
            if v is not None:
                return bool(v) if x.dtype == mx.bool_ else v
        with _EVAL_LOCK:
            return x.item()

    @staticmethod
    def tolist(x):
        with _EVAL_LOCK:
            return x.tolist()

    def synchronize(self) -> None:
        with _EVAL_LOCK:
            mx.synchronize(self.s)

    @staticmethod
    def evaluate(natives) -> None:
        """Compute ``natives`` now (MLX builds lazily; the profiler times the work itself)."""
        with _EVAL_LOCK:
            mx.eval(*natives)

    @staticmethod
    def check_result(native, op: str) -> None:
        """Refuse a lazy result whose buffer cannot be allocated (``_memory.check_result``)."""
        check_result(native, op)

    @staticmethod
    def known_bounds(native):
        """The bounds :mod:`._value_bounds` knows for ``native`` (an ``arange``, an ``argmax``, a position
        counted up from host data), or None: a check that fits them reads nothing, so waits on nothing."""
        known = value_bounds(native)
        return None if known is None else known[:2]

    @staticmethod
    def settle(native) -> None:
        """Schedule ``native``'s evaluation without waiting for it: MLX cuts an array's graph when it
        schedules it, so the chain of a tensor's lazy in-place writes (running statistics, optimizer
        state, ``.grad`` accumulation) that nothing reads stops growing. Inside a transform (``mx.compile``,
        ``mx.vmap``), where an array is a placeholder that cannot be evaluated, the transform decides."""
        try:
            with _EVAL_LOCK:
                mx.async_eval(native)
        except ValueError:
            return  # a placeholder of a transform: evaluated with the transform's own output
        except RuntimeError:
            return  # an array that cannot be computed (left by a trace): the read that needs it raises, translated

    def native_error(self, err: BaseException):
        """MLX raises ValueError for shape and broadcast problems where torch raises RuntimeError."""
        if isinstance(err, ValueError) and not isinstance(err, TdxError):
            return translate(err, RuntimeError)
        return translate(err)

    def clone(self, x):
        """A copy of ``x`` with a buffer of its own, evaluated at once where ``x``'s buffer is
        shared with torch (a later write through torch must not reach it)."""
        out = mx.array(x)  # a new array object; MLX arrays are values
        if _SHARED and id(x) in _SHARED:
            with _EVAL_LOCK:
                mx.eval(out)
        return carry_bounds(x, out)

    def share(self, x):
        """The array to bind in ``x``'s place before torch gets a writable view of its buffer: ``x``
        itself when it already owns a buffer registered as shared with torch, else a lazy copy of ``x``
        that :meth:`share_commit` evaluates and registers. The caller rebinds its tensor to the copy and
        drops every reference to ``x`` first: MLX then gives the copy ``x``'s own buffer when nothing
        else reads it (a fresh ``Tensor.to("mlx:cpu")`` result: no second copy), and copies where a
        lazy result, a view or a clone still reads it. Either way the buffer torch may write is one
        nothing else reads: clones and results computed earlier never see the write.
        """
        ref = _SHARED.get(id(x))
        if ref is not None and ref() is x:
            return x
        if column_major(x):  # a relaid weight: torch gets a row-major buffer
            return mx.contiguous(x, stream=self.s)
        return carry_bounds(x, mx.array(x))  # a new array object; MLX arrays are values

    def share_commit(self, out) -> None:
        """Evaluate and register the array :meth:`share` returned, once its caller let go of the old one."""
        ref = _SHARED.get(id(out))
        if ref is not None and ref() is out:
            return
        with _EVAL_LOCK:
            mx.eval(out)
        if len(_SHARED) >= _SHARED_SWEEP[0]:
            for key in [k for k, r in _SHARED.items() if r() is None]:
                del _SHARED[key]
            _SHARED_SWEEP[0] = max(256, 2 * len(_SHARED))
        _SHARED[id(out)] = weakref.ref(out)


_SHARED: dict = {}  # id(MLX array) -> weakref: arrays whose buffer torch may write (see share())
_SHARED_SWEEP = [256]


def _read_only(arr: np.ndarray) -> np.ndarray:
    """``arr`` made read-only: a view of an MLX buffer must never be written (MLX evaluates lazily,
    so results computed earlier would see the write)."""
    arr.flags.writeable = False
    return arr


def _check_int_range(arr: np.ndarray, dtype, name: str) -> None:
    """Refuse values an integer ``dtype`` cannot hold (NaN, infinities, out of range), as torch.

    Raises:
        TdxRuntimeError: "value cannot be converted to type ... without overflow".
    """
    if not arr.size:
        return
    info = np.iinfo(dtype.name)
    if arr.dtype == object:
        bad = any(not (-info.max if info.min == 0 else info.min) <= int(v) <= info.max for v in arr.ravel())
    elif arr.dtype.kind == "f":
        bad = not (np.isfinite(arr).all() and arr.min() >= info.min and arr.max() <= info.max)
    else:  # ints down to -255 wrap into uint8, as torch's
        bad = int(arr.min()) < (-info.max if info.min == 0 else info.min) or int(arr.max()) > info.max
    if bad:
        raise TdxRuntimeError(f"value cannot be converted to type {name} without overflow")


def infer_dtype(arr: np.ndarray):
    """The tdx dtype torch.tensor() would give data that NumPy parsed as ``arr``."""
    kind = arr.dtype.kind
    if kind == "b":
        return D.bool_
    if kind in "iu":
        return D.int64
    if kind == "f":
        return D.get_default_dtype()
    if kind == "c":
        return D.default_complex()
    raise DtypeError(f"could not infer a dtype from data of NumPy kind {arr.dtype!r}; "
                     "accepted: bool, int, float, complex")


def make_executor(name: str) -> MLXExecutor:
    from ..._device import device

    return MLXExecutor(device(name))


# ops torch refuses for complex operands, refused before MLX sees them (see elementwise._NOT_FOR_COMPLEX)
for _name, _kind in _NOT_FOR_COMPLEX.items():
    setattr(MLXExecutor, _name, _real_only(_name, _kind, getattr(MLXExecutor, _name)))
MLXExecutor.sign = _real_only("sign", TdxNotImplementedError, MLXExecutor.sign)  # torch.sgn is the complex one

# ops whose result can be far larger than any operand (broadcasting, products): the result's size is checked
# before anything evaluates it (_memory.check_result), as MLX crashes where an allocation fails
for _name in ("add", "sub", "mul", "div", "true_divide", "floor_divide", "remainder", "fmod", "pow", "atan2",
              "maximum", "minimum", "fmax", "fmin", "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or",
              "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor", "hypot", "copysign", "xlogy", "where",
              "matmul", "outer", "bmm", "einsum", "kron", "tensordot"):
    if callable(getattr(MLXExecutor, _name, None)):
        setattr(MLXExecutor, _name, sized(getattr(MLXExecutor, _name), _name))
