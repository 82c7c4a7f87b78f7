"""The torch executor: tdx ops on torch tensors on cpu, cuda:N or mps.

tdx's API is torch's, so most ops bind torch's own functions directly (no Python
layer in between); only ops whose tdx signature differs get a small adapter.
Imported the first time a torch device is used; it must never import MLX.
"""

from __future__ import annotations

import operator

import numpy as np
import torch

from ... import _dtypes as D
from ..base import Capabilities, Executor
from .adapters import TorchAdaptedOps
from .namespaces import TorchNamespaceOps
from .nn import TorchNNOps
from .kernels import TorchKernelOps
from .optim import TorchOptimOps

_TABLE = {
    D.bool_: torch.bool, D.uint8: torch.uint8, D.int8: torch.int8, D.int16: torch.int16,
    D.int32: torch.int32, D.int64: torch.int64, D.float16: torch.float16,
    D.bfloat16: torch.bfloat16, D.float32: torch.float32, D.float64: torch.float64,
    D.complex64: torch.complex64, D.complex128: torch.complex128,
}
_ALL = frozenset(d.name for d in _TABLE)
_MPS = frozenset(_ALL - {"float64", "complex128"})
_LIKE = {"zeros": torch.zeros_like, "ones": torch.ones_like, "empty": torch.empty_like}

# ops whose tdx signature is torch's: bound as they are
UNARY = ("neg", "abs", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt",
         "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "sigmoid", "relu",
         "erf", "floor", "ceil", "round", "trunc", "frac", "sign", "sgn", "reciprocal", "square",
         "logical_not", "bitwise_not", "isnan", "isinf", "isfinite", "positive", "conj")
BINARY = {"add": operator.add, "sub": operator.sub, "mul": operator.mul, "truediv": operator.truediv,
          "floordiv": torch.floor_divide, "remainder": operator.mod, "pow": torch.pow,
          "matmul": operator.matmul, "eq": operator.eq, "ne": operator.ne, "lt": operator.lt,
          "le": operator.le, "gt": operator.gt, "ge": operator.ge, "and_": operator.and_,
          "or_": operator.or_, "xor": operator.xor, "lshift": operator.lshift, "rshift": operator.rshift}
SAME = ("maximum", "minimum", "where", "reshape", "permute", "transpose", "unsqueeze", "flatten",
        "cat", "stack", "amax", "amin", "argmax", "argmin", "clamp", "atan2", "logical_and",
        "logical_or", "logical_xor", "isclose", "allclose", "equal", "tril", "triu", "outer")


def sync_default_dtype() -> None:
    """Make torch's default dtype follow tdx's (torch computes int / int with it)."""
    torch.set_default_dtype(_TABLE[D.get_default_dtype()])


D.DEFAULT_FOLLOWERS.append(sync_default_dtype)  # tdx.set_default_dtype keeps torch's in step


class TorchExecutor(TorchNNOps, TorchAdaptedOps, TorchKernelOps, TorchNamespaceOps, TorchOptimOps, Executor):
    """Runs tdx ops with torch on one torch device."""

    name = "torch"
    mutable = True
    taped = False
    addmm_kernel = staticmethod(torch.addmm)
    native_autocast = True  # torch's autocast state is mirrored from tdx's (compat/amp/autocast_state.py)

    def __init__(self, device):
        self.caps = Capabilities(
            dtypes=_MPS if device.type == "mps" else _ALL,
            float64=device.type != "mps",
            native_autograd=True,
            mutable=True,
            dlpack_zero_copy_import=device.type == "cpu",
            dlpack_zero_copy_export=True,
            asynchronous=device.type not in ("cpu", "meta"),
            sdpa_kernels=(("flash", "efficient", "cudnn", "math") if device.type == "cuda"
                          else ("flash", "math") if device.type == "cpu" else ("math",)),
            device_side_checks=device.type == "cuda",
        )
        super().__init__(device)
        self.tdev = torch.device(str(device))
        self._bind_dtypes(_TABLE)

    # creation -------------------------------------------------------------------------
    def from_data(self, data, dtype, requires_grad=False):
        nd = None if dtype is None else self.native_dtype(dtype)
        return torch.tensor(data, dtype=nd, device=self.tdev, requires_grad=requires_grad)

    def zeros(self, shape, dtype, requires_grad=False):
        return torch.zeros(shape, dtype=self.native_dtype(dtype), device=self.tdev, requires_grad=requires_grad)

    def ones(self, shape, dtype, requires_grad=False):
        return torch.ones(shape, dtype=self.native_dtype(dtype), device=self.tdev, requires_grad=requires_grad)

    def empty(self, shape, dtype, requires_grad=False):
        return torch.empty(shape, dtype=self.native_dtype(dtype), device=self.tdev, requires_grad=requires_grad)

    def filled_like(self, x, kind: str):
        # torch's own *_like: one call, and the input's strides kept (torch's preserve_format)
        return _LIKE[kind](x)

    def full(self, shape, value, dtype, requires_grad=False):
        return torch.full(shape, value, dtype=self.native_dtype(dtype), device=self.tdev,
                          requires_grad=requires_grad)

    def arange(self, start, end, step, dtype, requires_grad=False):
        return torch.arange(start, end, step, dtype=self.native_dtype(dtype), device=self.tdev,
                            requires_grad=requires_grad)

    def linspace(self, start, end, steps, dtype, requires_grad=False):
        return torch.linspace(start, end, steps, dtype=self.native_dtype(dtype), device=self.tdev,
                              requires_grad=requires_grad)

    def eye(self, n, m, dtype, requires_grad=False):
        return torch.eye(n, m, dtype=self.native_dtype(dtype), device=self.tdev, requires_grad=requires_grad)

    def rand(self, shape, dtype, generator=None):
        return torch.rand(shape, dtype=self.native_dtype(dtype), device=self.tdev, generator=generator)

    def randn(self, shape, dtype, generator=None):
        return torch.randn(shape, dtype=self.native_dtype(dtype), device=self.tdev, generator=generator)

    def randint(self, low, high, shape, dtype, generator=None):
        return torch.randint(low, high, shape, dtype=self.native_dtype(dtype), device=self.tdev,
                             generator=generator)

    def manual_seed(self, seed: int) -> None:
        torch.manual_seed(seed)

    def default_rng_state(self):
        kind = self.device.type
        state = (torch.cuda.get_rng_state(self.tdev) if kind == "cuda" else torch.mps.get_rng_state() if kind == "mps"
                 else torch.get_rng_state())
        return bytes(state.numpy())  # bytes compare by value: a snapshot tells whether a draw happened since

    def set_default_rng_state(self, state) -> None:
        t = torch.frombuffer(bytearray(state), dtype=torch.uint8)
        if self.device.type == "cuda":
            torch.cuda.set_rng_state(t, self.tdev)
        elif self.device.type == "mps":
            torch.mps.set_rng_state(t)
        else:
            torch.set_rng_state(t)

    # conversion -----------------------------------------------------------------------
    @staticmethod
    def shape(x):
        return tuple(x.shape)

    def astype(self, x, dtype):
        return x.to(self.native_dtype(dtype))

    @staticmethod
    def numpy(x):
        return x.numpy()

    @staticmethod
    def host_numpy(x):
        """A NumPy copy or view of ``x`` wherever it lives (bfloat16 widened to float32)."""
        x = x.detach()
        if x._is_zerotensor():  # the gradient torch gives ops with constant outputs (sign, floor...)
            x = torch.zeros(x.shape, dtype=x.dtype)
        if x.dtype == torch.bfloat16:
            x = x.float()
        return x.cpu().resolve_conj().resolve_neg().numpy()

    @staticmethod
    def item(x):
        return x.item()

    @staticmethod
    def tolist(x):
        return x.tolist()

    def from_host(self, arr: np.ndarray, dtype):
        """Import a NumPy array (copying it to the device), then cast to ``dtype``."""
        t = torch.from_numpy(arr if arr.flags.c_contiguous and arr.flags.writeable else arr.copy(order="C")).to(self.tdev)
        return t if dtype is None else t.to(self.native_dtype(dtype))

    def synchronize(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.tdev)
        elif self.device.type == "mps":
            torch.mps.synchronize()

    # ops whose tdx signature differs a little from torch's -------------------------------
    def sum(self, x, dim=None, keepdim=False, dtype=None):
        nd = None if dtype is None else self.native_dtype(dtype)
        if dim is None and not keepdim:  # torch's overload of x.sum(): its node is SumBackward0
            return torch.sum(x, dtype=nd)
        return torch.sum(x, dim, keepdim, dtype=nd)

    def nansum_kernel(self, x, dim=None, keepdim=False, dtype=None):
        return torch.nansum(x, dim, keepdim, dtype=None if dtype is None else self.native_dtype(dtype))

    def mean(self, x, dim=None, keepdim=False, dtype=None):
        nd = None if dtype is None else self.native_dtype(dtype)
        if dim is None and not keepdim:  # torch's overload of x.mean(): its node is MeanBackward0
            return torch.mean(x, dtype=nd)
        return torch.mean(x, dim, keepdim, dtype=nd)

    def prod(self, x, dim=None, keepdim=False, dtype=None):
        nd = None if dtype is None else self.native_dtype(dtype)
        if dim is None:
            r = torch.prod(x, dtype=nd)
            return r.reshape((1,) * x.ndim) if keepdim else r
        return torch.prod(x, dim, keepdim, dtype=nd)

    @staticmethod
    def var(x, dim=None, correction=1, keepdim=False):
        return torch.var(x, dim, correction=correction, keepdim=keepdim)

    @staticmethod
    def std(x, dim=None, correction=1, keepdim=False):
        return torch.std(x, dim, correction=correction, keepdim=keepdim)

    @staticmethod
    def max_dim(x, dim, keepdim=False):
        r = torch.max(x, dim, keepdim)
        return r.values, r.indices

    @staticmethod
    def min_dim(x, dim, keepdim=False):
        r = torch.min(x, dim, keepdim)
        return r.values, r.indices

    @staticmethod
    def all(x, dim=None, keepdim=False):
        return torch.all(x) if dim is None else torch.all(x, dim, keepdim)

    @staticmethod
    def any(x, dim=None, keepdim=False):
        return torch.any(x) if dim is None else torch.any(x, dim, keepdim)

    @staticmethod
    def view(x, shape):
        return x.view(*shape) if shape else x.view(shape)  # torch parses view(4, 16) faster than view((4, 16))

    @staticmethod
    def expand(x, shape):
        return x.expand(shape)

    @staticmethod
    def squeeze(x, dim=None):
        return torch.squeeze(x) if dim is None else torch.squeeze(x, dim)

    @staticmethod
    def split(x, sizes, dim=0):
        return torch.split(x, sizes, dim)

    # torch's own methods, bound as they are (no frame of tdx's per call)
    contiguous = staticmethod(torch.Tensor.contiguous)
    clone = staticmethod(torch.Tensor.clone)
    getitem = staticmethod(operator.getitem)
    getitem_slices = getitem

    @staticmethod
    def setitem(x, index, value):
        x[index] = value
        return x


for _name in UNARY + SAME:
    setattr(TorchExecutor, _name, staticmethod(getattr(torch, _name)))
for _name, _fn in BINARY.items():
    setattr(TorchExecutor, _name, staticmethod(_fn))
# div(rounding_mode="floor"): torch's derivative is zero, where floor_divide (``//``) has none
TorchExecutor.div_floor = staticmethod(lambda a, b: torch.div(a, b, rounding_mode="floor"))
TorchExecutor.div_trunc = staticmethod(lambda a, b: torch.div(a, b, rounding_mode="trunc"))


def make_executor(name: str) -> TorchExecutor:
    from ..._device import device

    sync_default_dtype()
    _flags_loaded()
    _apply_config()
    return TorchExecutor(device(name))


def _apply_config() -> None:
    """Apply ``[backends.torch]`` from the config (values left unset keep torch's own)."""
    from ... import config

    cfg = config.current()
    threads, tf32 = cfg["backends.torch.num_threads"], cfg["backends.torch.allow_tf32"]
    if threads is not None:
        torch.set_num_threads(threads)
    if tf32 is not None:
        torch.backends.cuda.matmul.allow_tf32 = tf32
        torch.backends.cudnn.allow_tf32 = tf32


def _flags_loaded() -> None:
    """Apply ``tdx.backends`` settings made before torch was imported."""
    import importlib.util

    if importlib.util.find_spec("tdx.backends._flags") is not None:
        from .. import _flags

        _flags.on_torch_loaded()
