"""tdx: one PyTorch-compatible tensor type over peer executors (torch CPU/CUDA/MPS, MLX).

``import tdx as torch`` runs ordinary PyTorch code; which device it runs on comes from
the config file. Importing this package imports no framework: torch and MLX load the
first time a tensor lives on one of their devices.
"""

from __future__ import annotations

import importlib as _importlib
import math as _math
import sys as _sys

from . import _dtypes, backends, config, return_types
from .aliasing import alias as _alias
from .compat import integrations as _integrations
from ._tensor.creation import (arange, as_tensor, asarray, empty, empty_like, eye, from_numpy, full, full_like, linspace,
                               ones, ones_like, rand, rand_like, randint, randint_like, randn, randn_like,
                               tensor, zeros, zeros_like)
from ._device import device
from ._dtypes import (bfloat16, complex32, complex64, complex128, dtype, float16, float32, float64,
                      get_default_dtype, int8, int16, int32, int64, promote_types, set_default_dtype,
                      uint8, uint16, uint32, uint64, float8_e4m3fn, float8_e4m3fnuz, float8_e5m2, float8_e5m2fnuz,
                      float8_e8m0fnu, float4_e2m1fn_x2)
from ._errors import (BackendNotFoundError, CastError, ConfigError, DeviceMismatchError,
                      DeviceUnavailableError, DtypeError, DtypeMismatchError, InvalidDeviceError, NotProvidedError,
                      NotProvidedAttributeError, OpDtypeError, PrecisionWarning, ShapeError, TdxError, TdxIndexError, TdxTypeError, TdxValueError,
                      UnsupportedOpError)
from ._tensor.namespace import *  # noqa: F401,F403 - the torch namespace functions
from ._tensor.namespace import __all__ as _namespace_all
from ._tensor.generator import Generator
from ._tensor.formats import (channels_last, channels_last_3d, contiguous_format, finfo, iinfo, layout,
                              memory_format, preserve_format, set_printoptions, strided)
from ._tensor.formats import _mkldnn, jagged, sparse_bsc, sparse_bsr, sparse_coo, sparse_csc, sparse_csr
from .compat import __config__
from ._tensor.streams import Event, Stream
from .backends._seeding import initial_seed
from .interop import CopyRequiredError, InteropError, from_dlpack
from ._tensor.tensor import Tensor
from ._tensor.wrapping import Size
from .autograd import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled
from .autograd.grad_mode import is_inference_mode_enabled
from .backends import get_default_device, set_default_device
from ._errors import AcceleratorError, FatalError, JITException, OutOfMemoryError
from ._tensor import control_flow as _control_flow, nn_forms as _nn_forms, runtime as _runtime, symbolic as _symbolic
from ._tensor import checks as _checks
from .aliasing import refused as _refused, torch_paths as _torch_paths
from .compat.amp import autocast_state as _autocast_state

# torch's top-level settings, control flow, symbolic helpers and ATen-signature nn forms; the names tdx refuses
# (tdx.aliasing.refused: each raises UnsupportedOpError saying why) are made on first use (__getattr__ below)
for _m in (_autocast_state, _checks, _control_flow, _nn_forms, _runtime, _symbolic):
    globals().update({_n: getattr(_m, _n) for _n in _m.__all__})
for _n, _f in _refused.tensor_methods().items():
    if not hasattr(Tensor, _n):  # a built method always wins over a refusal
        setattr(Tensor, _n, _f)
_autocast_state.install(_sys.modules[__name__], Tensor)  # autocast's per-op policy (one check while it is off)
from ._tensor.legacy import LEGACY_TENSORS as _LEGACY_TENSORS, set_default_tensor_type
from ._tensor.storage import LEGACY_STORAGES as _LEGACY_STORAGES, Storage, StorageBase, TypedStorage, UntypedStorage
from ._tensor.storage import is_storage
globals().update(_LEGACY_TENSORS)
globals().update(_LEGACY_STORAGES)

__version__ = "0.1.0"

half, float, double = float16, float32, float64  # noqa: A001 - torch's names
short, int, long = int16, int32, int64  # noqa: A001 - torch's names
cfloat, cdouble, chalf = complex64, complex128, complex32
bool = _dtypes.bool_  # noqa: A001 - torch's name
pi, e, inf, nan = _math.pi, _math.e, _math.inf, _math.nan  # torch's constants (math's)
newaxis = None  # torch's alias of None for indexing
torch = _sys.modules[__name__]  # torch.torch is torch

# torch's namespaces live in tdx.compat; ``import tdx.nn`` gives the very module tdx.compat.nn
_NAMESPACES = ("cuda", "cpu", "mps", "mlx", "nn", "optim", "utils", "linalg", "fft", "special", "masked", "signal",
               "distributed", "distributions", "amp", "accelerator", "serialization", "compiler", "fx", "jit", "futures",
               "xpu", "mtia", "hub", "library", "onnx", "overrides", "types", "storage", "_C", "version", "_dynamo",
               "_logging", "_jit_internal", "_tensor_str", "func", "random", "multiprocessing", "profiler")
_aliases = _alias.install(_alias.AliasFinder({f"tdx.{n}": f"tdx.compat.{n}" for n in _NAMESPACES}))
# every torch module path imports under tdx (a generated module where tdx has no real one), and a name a tdx
# module lacks is a NotProvidedAttributeError naming its torch path
_torch_paths.install()
_integrations.install()  # einops, safetensors: attached when (and if) the library is imported
_WINDOWS = ("bartlett_window", "blackman_window", "hamming_window", "hann_window", "kaiser_window")
_LAZY = {"interop": "tdx.interop", "testing": "tdx.testing", "attention": "tdx.attention"}


# torch.* functions that are tdx.nn.functional's with the same signature (loaded on first use)
_FUNCTIONAL = frozenset(("pixel_shuffle", "pixel_unshuffle", "pdist", "cosine_similarity", "pairwise_distance",
                         "max_pool1d", "max_pool2d", "max_pool3d", "max_pool1d_with_indices", "avg_pool1d",
                         "adaptive_avg_pool1d", "celu", "celu_", "hardshrink", "prelu", "alpha_dropout",
                         "feature_alpha_dropout", "bilinear", "channel_shuffle", "native_channel_shuffle",
                         "layer_norm", "group_norm"))


# torch.* functions whose home is a tdx.compat module, loaded on first use: name -> module
_FUNCTIONS_ELSEWHERE = {"save": "tdx.compat.serialization", "load": "tdx.compat.serialization",
                        "GradScaler": "tdx.compat.amp",
                        "compile": "tdx.compat.compiler", "ops": "tdx.compat.library", "vmap": "tdx.compat.func",
                        **dict.fromkeys(_WINDOWS, "tdx.compat.signal.windows.periodic"),
                        **dict.fromkeys(_FUNCTIONAL, "tdx.compat.nn.functional")}


def __getattr__(name: str):
    home = _FUNCTIONS_ELSEWHERE.get(name)
    if home is not None:
        return getattr(_importlib.import_module(home), name)
    if name == "default_generator":  # torch's CPU generator, which torch owns: made when first asked for
        generator = _importlib.import_module("tdx._tensor.generator").default_generator()
        if generator is None:
            raise AttributeError("tdx.default_generator is torch's CPU generator, and torch is not installed")
        return generator
    if name in _refused.TORCH:  # setdefault: two threads asking at once get the same object
        return globals().setdefault(name, _refused.torch_name(name))
    target = _LAZY.get(name) or (f"tdx.{name}" if name in _NAMESPACES else None)
    if target is None:
        raise AttributeError(f"module 'tdx' has no attribute {name!r}")
    try:
        module = _importlib.import_module(target)
    except ModuleNotFoundError as err:
        if err.name != target:
            raise
        raise AttributeError(f"module 'tdx' has no attribute {name!r}") from None
    globals()[name] = module
    return module


def __dir__():
    return sorted(set(globals()) | set(_refused.TORCH) | set(_FUNCTIONS_ELSEWHERE) | {"default_generator"})


__all__ = ["Tensor", "Size", "Generator", "device", "dtype", "tensor", "as_tensor", "asarray", "zeros", "ones",
           "empty", "full", "arange", "linspace", "eye", "rand", "randn", "randint", "zeros_like",
           "ones_like", "empty_like", "full_like", "rand_like", "randn_like", "randint_like",
           "manual_seed", "initial_seed", "set_default_device", "get_default_device",
           "get_default_dtype", "set_default_dtype", "promote_types", "no_grad", "enable_grad",
           "set_grad_enabled", "inference_mode", "is_grad_enabled", "TdxError", "backends", "config",
           "from_dlpack", "from_numpy", "finfo", "iinfo", "set_printoptions", "memory_format", "layout",
           "contiguous_format", "preserve_format", "channels_last", "channels_last_3d", "strided",
           *_namespace_all]
