"""Mirror of ``torch.backends.cuda``: cuBLAS/cuFFT settings, preferred libraries and the
scaled-dot-product-attention (SDP) kernel switches.

Every name reads and writes torch's own state when torch is present. Without torch, queries
answer False / None / torch's defaults, and settings are kept and applied when torch loads.
The SDP switches (``*_sdp_enabled`` / ``enable_*_sdp`` and the math fp16/bf16 reduction) also
govern tdx's own attention kernels on every executor, MLX included: they are kept on the tdx
side and reading them never imports torch. ``sdp_kernel`` is deprecated and warns as torch's.

This module must never import torch on import, nor to answer an SDP switch.
"""

import enum as _enum
import os as _os
import warnings as _warnings
from contextlib import contextmanager as _contextmanager

from .._device import device as _device
from ..compat import cuda as _cuda
from . import _flags

_TDX_EXTENSIONS = ()  # names tdx adds to torch.backends.cuda: none

__all__ = [
    "is_built", "cuFFTPlanCacheAttrContextProp", "cuFFTPlanCache", "cuFFTPlanCacheManager",
    "cuBLASModule", "preferred_linalg_library", "preferred_blas_library", "cublas_workspace_size",
    "cublaslt_workspace_size", "blas_workspace_size", "preferred_rocm_fa_library", "is_ck_sdpa_available",
    "cufft_plan_cache", "matmul", "SDPAParams", "enable_cudnn_sdp", "cudnn_sdp_enabled", "enable_flash_sdp",
    "flash_sdp_enabled", "enable_mem_efficient_sdp", "mem_efficient_sdp_enabled", "math_sdp_enabled",
    "enable_math_sdp", "allow_fp16_bf16_reduction_math_sdp", "fp16_bf16_reduction_math_sdp_allowed",
    "is_flash_attention_available", "can_use_flash_attention", "can_use_efficient_attention",
    "can_use_cudnn_attention", "sdp_kernel",
]


def _mod(t):
    return _flags.torch_backend(t, "cuda")


def is_built() -> bool:
    """Whether torch is built with CUDA support (False without torch); not whether CUDA is usable."""
    torch = _flags.torch_module()
    return False if torch is None else _mod(torch).is_built()


# --- cuFFT plan caches -----------------------------------------------------------------------

def _torch_plan_cache(index: int):
    return _mod(_flags.require_torch("the cuFFT plan cache")).cufft_plan_cache[index]


class cuFFTPlanCacheAttrContextProp:  # noqa: N801 - torch's name
    """A descriptor passing the owner's ``device_index`` to its getter and setter.

    Args:
        getter: ``getter(device_index)``.
        setter: ``setter(device_index, value)``, or a message string making the attribute read-only.
    """

    def __init__(self, getter, setter):
        self.getter = getter
        self.setter = setter

    def __get__(self, obj, objtype):
        if obj is None:
            return self
        return self.getter(obj.device_index)

    def __set__(self, obj, val):
        if isinstance(self.setter, str):
            raise _flags.FlagValueError(self.setter)
        self.setter(obj.device_index, val)


class cuFFTPlanCache:  # noqa: N801 - torch's name
    """The cuFFT plan cache of one CUDA device: ``size`` (read-only), ``max_size`` and ``clear()``.

    Args:
        device_index: the CUDA device ordinal.
    """

    def __init__(self, device_index):
        self.device_index = device_index

    size = cuFFTPlanCacheAttrContextProp(
        lambda i: _torch_plan_cache(i).size,
        ".size is a read-only property showing the number of plans currently in the cache. "
        "To change the cache capacity, set cufft_plan_cache.max_size.")
    max_size = cuFFTPlanCacheAttrContextProp(
        lambda i: _torch_plan_cache(i).max_size,
        lambda i, v: setattr(_torch_plan_cache(i), "max_size", v))

    def clear(self):
        """Drop every plan in this device's cache."""
        return _torch_plan_cache(self.device_index).clear()


def _device_index(dev) -> int:
    if isinstance(dev, int) and not isinstance(dev, bool):
        return dev
    index = getattr(dev, "index", None) if not isinstance(dev, str) else _device(dev).index
    dev_type = getattr(dev, "type", None) if not isinstance(dev, str) else _device(dev).type
    if dev_type not in ("cuda", None):
        raise _flags.FlagValueError(f"Expected a cuda device, but got: {dev}")
    return _cuda.current_device() if index is None else index


class cuFFTPlanCacheManager:  # noqa: N801 - torch's name
    """All cuFFT plan caches: ``cufft_plan_cache[device]`` is one device's cache, and attributes
    used directly (``cufft_plan_cache.max_size``) are the current device's.
    """

    __initialized = False

    def __init__(self):
        self.caches = []
        self.__initialized = True

    def __getitem__(self, device):
        index = _device_index(device)
        count = _cuda.device_count()
        if index < 0 or index >= count:
            raise _flags.FlagValueError(f"cufft_plan_cache: expected 0 <= device index < {count}, but got "
                                        f"device with index {index}")
        if not self.caches:
            self.caches.extend(cuFFTPlanCache(i) for i in range(count))
        return self.caches[index]

    def __getattr__(self, name):
        return getattr(self[_cuda.current_device()], name)

    def __setattr__(self, name, value):
        if self.__initialized:
            return setattr(self[_cuda.current_device()], name, value)
        return super().__setattr__(name, value)


# --- cuBLAS ----------------------------------------------------------------------------------

def _parse_reduction(value, attr_name: str) -> tuple:
    def ensure_bool(obj, which):
        if isinstance(obj, bool):
            return obj
        raise TypeError(f"{attr_name} expects a bool for {which}, but got {type(obj)!r}")

    if isinstance(value, bool):
        return value, True
    if isinstance(value, (list, tuple)):
        if not value:
            raise TypeError(f"{attr_name} expects at least one boolean argument")
        if len(value) > 2:
            raise TypeError(f"{attr_name} expects at most two boolean arguments")
        reduced = ensure_bool(value[0], "allow_reduced_precision")
        return (reduced, True) if len(value) == 1 else (reduced, ensure_bool(value[1], "allow_splitk"))
    raise TypeError(f"{attr_name} expects a bool or a tuple/list of bools, but got {type(value)!r}")


def _matmul_flag(name, default, check, pair=False):
    def get(t):
        m = _mod(t).matmul
        return (getattr(m, name), getattr(m, name + "_split_k")) if pair else getattr(m, name)
    return _flags.Flag(f"cuda.matmul.{name}", default, get,
                       lambda t, v: setattr(_mod(t).matmul, name, v), check)


_MATMUL = {
    "allow_tf32": _matmul_flag("allow_tf32", False, _flags.check_bool("set_allow_tf32_cublas")),
    "allow_fp16_reduced_precision_reduction": _matmul_flag(
        "allow_fp16_reduced_precision_reduction", (True, True),
        lambda v: _parse_reduction(v, "allow_fp16_reduced_precision_reduction"), pair=True),
    "allow_bf16_reduced_precision_reduction": _matmul_flag(
        "allow_bf16_reduced_precision_reduction", (True, True),
        lambda v: _parse_reduction(v, "allow_bf16_reduced_precision_reduction"), pair=True),
    "allow_fp16_accumulation": _matmul_flag(
        "allow_fp16_accumulation", False, _flags.check_bool("set_allow_fp16_accumulation_cublas")),
    "fp32_precision": _matmul_flag("fp32_precision", "none", _flags.check_precision),
}


class cuBLASModule:  # noqa: N801 - torch's name
    """``matmul``: cuBLAS settings as attributes.

    ``allow_tf32``, ``allow_fp16_accumulation``, ``fp32_precision`` and the fp16/bf16 reduced-
    precision reductions (a bool, or a tuple ``(allow_reduced_precision, allow_splitk)``; their
    ``*_split_k`` halves are read-only attributes).
    """

    def __getattr__(self, name):
        if name in _MATMUL:
            value = _MATMUL[name].read()
            return value[0] if isinstance(value, tuple) else value
        if name.endswith("_split_k") and name[:-8] in _MATMUL:
            return _MATMUL[name[:-8]].read()[1]
        raise AttributeError("Unknown attribute " + name)

    def __setattr__(self, name, value):
        if name not in _MATMUL:
            raise AttributeError("Unknown attribute " + name)
        _MATMUL[name].write(value)


# --- preferred libraries -----------------------------------------------------------------------

class _LinalgBackend(_enum.IntEnum):
    Default = 0
    Cusolver = 1
    Magma = 2


class _BlasBackend(_enum.IntEnum):
    Default = 0
    Cublas = 1
    Cublaslt = 2
    Ck = 3


class _ROCmFABackend(_enum.IntEnum):
    Default = 0
    AOTriton = 1
    Ck = 2


def _env(*names) -> bool:
    return any(_os.environ.get(n, "").lower() in ("1", "true", "on", "yes") for n in names)


_LINALG_NAMES = {"default": _LinalgBackend.Default, "cusolver": _LinalgBackend.Cusolver,
                 "magma": _LinalgBackend.Magma}
_BLAS_NAMES = {"default": _BlasBackend.Default, "cublas": _BlasBackend.Cublas, "hipblas": _BlasBackend.Cublas,
               "cublaslt": _BlasBackend.Cublaslt, "hipblaslt": _BlasBackend.Cublaslt, "ck": _BlasBackend.Ck}
_ROCM_FA_NAMES = {"default": _ROCmFABackend.Default, "aotriton": _ROCmFABackend.AOTriton,
                  "ck": _ROCmFABackend.Ck}


def _library_flag(key, fn_name, default):
    return _flags.Flag(key, default, lambda t: getattr(_mod(t), fn_name)(),
                       lambda t, v: getattr(_mod(t), fn_name)(v.name.lower()))


_LINALG = _library_flag("cuda.preferred_linalg_library", "preferred_linalg_library",
                        _LinalgBackend.Cusolver if _env("TORCH_LINALG_PREFER_CUSOLVER") else _LinalgBackend.Default)
_BLAS = _library_flag("cuda.preferred_blas_library", "preferred_blas_library",
                      _BlasBackend.Cublaslt if _env("TORCH_BLAS_PREFER_CUBLASLT", "TORCH_BLAS_PREFER_HIPBLASLT")
                      else _BlasBackend.Cublas)
_ROCM_FA = _library_flag("cuda.preferred_rocm_fa_library", "preferred_rocm_fa_library",
                         _ROCmFABackend.Ck if _env("TORCH_ROCM_FA_PREFER_CK") else _ROCmFABackend.Default)


def _preferred(flag, fn_name, names, enum_type, backend, bad_type_error):
    torch = _flags.torch_module()
    if torch is not None:
        if isinstance(backend, enum_type):
            backend = backend.name.lower()
        return getattr(_mod(torch), fn_name)(backend)
    if backend is None:
        return flag.read()
    if isinstance(backend, str):
        if backend not in names:
            raise _flags.FlagValueError(f"Unknown input value. Choose from: {', '.join(names)}.")
        backend = names[backend]
    elif not isinstance(backend, enum_type):
        raise bad_type_error
    flag.write(backend)
    return flag.read()


def preferred_linalg_library(backend=None):
    """Choose between cuSOLVER and MAGMA for CUDA linear algebra, or read the choice.

    Args:
        backend: ``"default"``, ``"cusolver"``, ``"magma"``, a backend enum, or None to only read.

    Returns:
        The preferred library (torch's ``_LinalgBackend`` with torch, tdx's mirror enum without).

    Raises:
        RuntimeError: an unknown value, or a library torch was not built with.
    """
    return _preferred(_LINALG, "preferred_linalg_library", _LINALG_NAMES, _LinalgBackend, backend,
                      _flags.FlagValueError("Unknown input value type."))


def preferred_blas_library(backend=None):
    """Choose the BLAS library for CUDA matmuls (cuBLAS, cuBLASLt, CK on ROCm), or read the choice.

    Args:
        backend: ``"default"``, ``"cublas"``, ``"hipblas"``, ``"cublaslt"``, ``"hipblaslt"``, ``"ck"``,
            a backend enum, or None to only read.

    Returns:
        The preferred library (torch's ``_BlasBackend`` with torch, tdx's mirror enum without).

    Raises:
        RuntimeError: an unknown value, or a library torch was not built with.
    """
    return _preferred(_BLAS, "preferred_blas_library", _BLAS_NAMES, _BlasBackend, backend,
                      _flags.FlagValueError("Unknown input value type."))


def preferred_rocm_fa_library(backend=None):
    """[ROCm] Choose the flash-attention backend (AOTriton or CK), or read the choice.

    Args:
        backend: ``"default"``, ``"aotriton"``, ``"ck"``, a backend enum, or None to only read.

    Raises:
        RuntimeError: an unknown string. ValueError: a value of another type (as torch).
    """
    return _preferred(_ROCM_FA, "preferred_rocm_fa_library", _ROCM_FA_NAMES, _ROCmFABackend, backend,
                      ValueError(f"Unknown input value. Choose from: {', '.join(_ROCM_FA_NAMES)}."))


def _workspace(fn_name: str, *args) -> int:
    torch = _flags.require_torch(f"{fn_name}() (a CUDA build of torch)")
    return getattr(_mod(torch), fn_name)(*args)


def cublas_workspace_size(size=None) -> int:
    """Read, or set and read, the cuBLAS workspace size in bytes.

    Raises:
        RuntimeError: torch cannot be imported (torch itself fails on builds without CUDA).
    """
    return _workspace("cublas_workspace_size", size)


def cublaslt_workspace_size(size=None) -> int:
    """Read, or set and read, the cuBLASLt workspace size in bytes.

    Raises:
        RuntimeError: torch cannot be imported (torch itself fails on builds without CUDA).
    """
    return _workspace("cublaslt_workspace_size", size)


def blas_workspace_size(size=None, backend=None) -> int:
    """Read, or set and read, the workspace size of ``backend`` (default: the preferred BLAS library).

    Raises:
        RuntimeError: torch cannot be imported, or the backend (CK) has no workspace.
    """
    if isinstance(backend, _BlasBackend):
        backend = backend.name.lower()
    return _workspace("blas_workspace_size", size, backend)


# --- scaled dot product attention ------------------------------------------------------------

class SDPBackend(_enum.IntEnum):
    """The SDP kernels, with torch's names and values."""

    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4


class SDPAParams:
    """The inputs of one ``scaled_dot_product_attention`` call, for the ``can_use_*`` checks.

    Args:
        query, key, value: the attention inputs.
        attn_mask: the mask, or None.
        dropout: the dropout probability.
        is_causal: whether the attention is causal.
        enable_gqa: whether grouped-query attention is allowed.
    """

    __slots__ = ("query", "key", "value", "attn_mask", "dropout", "is_causal", "enable_gqa")

    def __init__(self, query, key, value, attn_mask, dropout, is_causal, enable_gqa):
        self.query, self.key, self.value, self.attn_mask = query, key, value, attn_mask
        self.dropout, self.is_causal, self.enable_gqa = float(dropout), bool(is_causal), bool(enable_gqa)

    def __repr__(self) -> str:
        return (f"SDPAParams(dropout={self.dropout}, is_causal={self.is_causal}, "
                f"enable_gqa={self.enable_gqa}, attn_mask={'None' if self.attn_mask is None else 'given'})")


def _sdp_flag(key, default, getter, setter, api):
    return _flags.Flag(f"cuda.{key}", default, _bound_getter(getter),
                       lambda t, v: getattr(_mod(t), setter)(v), _flags.check_bool(api), load=False)


def _bound_getter(name: str):
    """``t -> torch.backends.cuda.<name>()``, the function looked up once per torch module (attention reads
    these switches at every call)."""
    seen = [None, None]

    def get(t):
        if seen[0] is not t:
            seen[1], seen[0] = getattr(_mod(t), name), t
        return seen[1]()

    return get


_FLASH = _sdp_flag("flash_sdp", True, "flash_sdp_enabled", "enable_flash_sdp", "set_sdp_use_flash")
_MEM_EFFICIENT = _sdp_flag("mem_efficient_sdp", True, "mem_efficient_sdp_enabled",
                           "enable_mem_efficient_sdp", "set_sdp_use_mem_efficient")
_MATH = _sdp_flag("math_sdp", True, "math_sdp_enabled", "enable_math_sdp", "set_sdp_use_math")
_CUDNN = _sdp_flag("cudnn_sdp", True, "cudnn_sdp_enabled", "enable_cudnn_sdp", "set_sdp_use_cudnn")
_MATH_REDUCTION = _sdp_flag("math_sdp_fp16_bf16_reduction", False, "fp16_bf16_reduction_math_sdp_allowed",
                            "allow_fp16_bf16_reduction_math_sdp", "set_math_sdp_allow_fp16_bf16_reduction")


def flash_sdp_enabled() -> bool:
    """Whether the flash SDP kernel is enabled (for torch and for tdx's attention)."""
    return _FLASH.read()


def enable_flash_sdp(enabled: bool) -> None:
    """Enable or disable the flash SDP kernel (for torch and for tdx's attention)."""
    _FLASH.write(enabled)


def mem_efficient_sdp_enabled() -> bool:
    """Whether the memory-efficient SDP kernel is enabled."""
    return _MEM_EFFICIENT.read()


def enable_mem_efficient_sdp(enabled: bool) -> None:
    """Enable or disable the memory-efficient SDP kernel."""
    _MEM_EFFICIENT.write(enabled)


def math_sdp_enabled() -> bool:
    """Whether the math (reference) SDP kernel is enabled."""
    return _MATH.read()


def enable_math_sdp(enabled: bool) -> None:
    """Enable or disable the math (reference) SDP kernel."""
    _MATH.write(enabled)


def cudnn_sdp_enabled() -> bool:
    """Whether the cuDNN SDP kernel is enabled."""
    return _CUDNN.read()


def enable_cudnn_sdp(enabled: bool) -> None:
    """Enable or disable the cuDNN SDP kernel."""
    _CUDNN.write(enabled)


def fp16_bf16_reduction_math_sdp_allowed() -> bool:
    """Whether the math SDP kernel may reduce in fp16/bf16 (instead of upcasting to float32)."""
    return _MATH_REDUCTION.read()


def allow_fp16_bf16_reduction_math_sdp(enabled: bool) -> None:
    """Allow or forbid fp16/bf16 reductions in the math SDP kernel."""
    _MATH_REDUCTION.write(enabled)


def is_ck_sdpa_available() -> bool:
    """Whether composable_kernel may back SDPA (ROCm; False without torch)."""
    torch = _flags.torch_module()
    return False if torch is None else _mod(torch).is_ck_sdpa_available()


def is_flash_attention_available() -> bool:
    """Whether torch is built with FlashAttention for SDPA (False without torch or CUDA)."""
    torch = _flags.torch_module()
    return False if torch is None else _mod(torch).is_flash_attention_available()


def _torch_params(torch, params):
    native = _mod(torch).SDPAParams
    if isinstance(params, native):
        return params
    if not isinstance(params, SDPAParams):
        raise TypeError(f"expected SDPAParams, got {type(params).__name__}")
    tensors = (params.query, params.key, params.value)
    if not all(isinstance(x, torch.Tensor) for x in tensors):
        return None
    if params.attn_mask is not None and not isinstance(params.attn_mask, torch.Tensor):
        return None
    return native(*tensors, params.attn_mask, params.dropout, params.is_causal, params.enable_gqa)


def _can_use(fn_name: str, params, debug: bool) -> bool:
    torch = _flags.torch_module()
    if torch is None:
        if not isinstance(params, SDPAParams):
            raise TypeError(f"expected SDPAParams, got {type(params).__name__}")
        return False
    native = _torch_params(torch, params)
    if native is None:
        if debug:
            _warnings.warn(f"{fn_name}: the inputs are not torch tensors; this kernel runs only on "
                           "torch CUDA tensors", stacklevel=3)
        return False
    return getattr(_mod(torch), fn_name)(native, debug)


def can_use_flash_attention(params, debug: bool = False) -> bool:
    """Whether FlashAttention can run these inputs (False without a CUDA build of torch).

    Args:
        params: an :class:`SDPAParams` (or torch's).
        debug: warn with the reason when it cannot.
    """
    return _can_use("can_use_flash_attention", params, debug)


def can_use_efficient_attention(params, debug: bool = False) -> bool:
    """Whether memory-efficient attention can run these inputs (False without a CUDA build of torch).

    Args:
        params: an :class:`SDPAParams` (or torch's).
        debug: warn with the reason when it cannot.
    """
    return _can_use("can_use_efficient_attention", params, debug)


def can_use_cudnn_attention(params, debug: bool = False) -> bool:
    """Whether cuDNN attention can run these inputs (False without a CUDA build of torch).

    Args:
        params: an :class:`SDPAParams` (or torch's).
        debug: warn with the reason when it cannot.
    """
    return _can_use("can_use_cudnn_attention", params, debug)


def sdp_kernel(enable_flash: bool = True, enable_math: bool = True, enable_mem_efficient: bool = True,
               enable_cudnn: bool = True):
    """Deprecated: enable only the given SDP kernels for a ``with`` block, restoring them after it.

    Use ``nn.attention.sdpa_kernel()`` instead. Warns ``FutureWarning``, as torch's does.
    """
    _warnings.warn("`sdp_kernel()` is deprecated. In the future, this context manager will be removed. "
                   "Please see `nn.attention.sdpa_kernel()` for the new context manager, with updated "
                   "signature.", FutureWarning, stacklevel=2)
    return _sdp_kernel(enable_flash, enable_math, enable_mem_efficient, enable_cudnn)


@_contextmanager
def _sdp_kernel(enable_flash, enable_math, enable_mem_efficient, enable_cudnn):
    chosen = ((_FLASH, enable_flash), (_MEM_EFFICIENT, enable_mem_efficient), (_MATH, enable_math),
              (_CUDNN, enable_cudnn))
    orig = [(flag, flag.read()) for flag, _ in chosen]
    try:
        for flag, on in chosen:
            flag.write(bool(on))
        yield {}
    finally:
        for flag, value in orig:
            flag.write(value)


cufft_plan_cache = cuFFTPlanCacheManager()
matmul = cuBLASModule()
