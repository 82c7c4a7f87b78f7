"""Mirror of ``torch.backends.cudnn``: cuDNN availability, version and switches.

``enabled``, ``benchmark``, ``benchmark_limit``, ``deterministic``, ``allow_tf32``,
``fp32_precision``, ``depthwise_kernel`` and ``conv.fp32_precision`` are live module attributes
that read and write torch's state. Without torch, ``is_available()`` is False, ``version()`` is
None, and each switch keeps a tdx-side value (torch's default until set) that is applied when
torch loads. ``flags()`` sets every switch for a block and restores them on exit, exceptions
included. Never imports torch on module import.
"""

import types as _types
import warnings as _warnings
from contextlib import contextmanager as _contextmanager

from .. import _dtypes
from . import _flags

_TDX_EXTENSIONS = ()  # names tdx adds to torch.backends.cudnn: none

# tdx dtypes cuDNN accepts (torch's CUDNN_TENSOR_DTYPES holds the same three as torch dtypes).
CUDNN_TENSOR_DTYPES = {_dtypes.float16, _dtypes.float32, _dtypes.float64}
_DTYPE_NAMES = ("float16", "float32", "float64")
_DEPTHWISE = ("auto", "cudnn", "native")


def _mod(t):
    return _flags.torch_backend(t, "cudnn")


def _flag(name, default, check, guarded=True):
    return _flags.Flag(f"cudnn.{name}", default, lambda t: getattr(_mod(t), name),
                       lambda t, v: setattr(_mod(t), name, v), check, guarded=guarded)


def _check_depthwise(value):
    if value not in _DEPTHWISE:
        raise _flags.FlagValueError(f"Unknown cuDNN depthwise kernel mode: {value}. "
                                    f"Expected one of: {', '.join(_DEPTHWISE)}")
    return value


_ENABLED = _flag("enabled", True, _flags.check_bool("set_enabled_cudnn"))
_BENCHMARK = _flag("benchmark", False, _flags.check_bool("set_benchmark_cudnn"))
_BENCHMARK_LIMIT = _flag("benchmark_limit", None, None, guarded=False)  # a plain attribute without cuDNN
_DETERMINISTIC = _flag("deterministic", False, _flags.check_bool("set_deterministic_cudnn"))
_ALLOW_TF32 = _flag("allow_tf32", True, _flags.check_bool("set_allow_tf32_cudnn"))
_FP32_PRECISION = _flag("fp32_precision", "none", _flags.check_precision)
_DEPTHWISE_KERNEL = _flag("depthwise_kernel", "auto", _check_depthwise)


def version():
    """The cuDNN version as an int (e.g. 91002), or None when torch has no cuDNN."""
    torch = _flags.torch_module()
    return None if torch is None else _mod(torch).version()


def is_available() -> bool:
    """Whether torch is built with cuDNN (False without torch)."""
    torch = _flags.torch_module()
    return False if torch is None else _mod(torch).is_available()


def is_acceptable(tensor) -> bool:
    """Whether cuDNN may run on ``tensor``: cuDNN enabled and available, a CUDA tensor of
    float16/32/64.

    Warns, as torch does, when the tensor qualifies but cuDNN is missing.
    """
    torch = _flags.torch_module()
    if torch is not None and isinstance(tensor, torch.Tensor):
        return _mod(torch).is_acceptable(tensor)
    if not _ENABLED.read():
        return False
    device = getattr(tensor, "device", None)
    if getattr(device, "type", None) != "cuda" or str(getattr(tensor, "dtype", "")).rpartition(".")[2] not in _DTYPE_NAMES:
        return False
    if not is_available():
        _warnings.warn("cuDNN is not available: torch cannot be imported or was built without "
                       "cuDNN/MIOpen support.", stacklevel=2)
        return False
    return version() is not None


def set_flags(_enabled=None, _benchmark=None, _benchmark_limit=None, _deterministic=None,
              _allow_tf32=None, _fp32_precision="none", _depthwise_kernel=None):
    """Set the cuDNN flags that are not None and return the previous ones as a 7-tuple.

    As torch's, ``_fp32_precision`` defaults to ``"none"`` and so is reset by a bare call, and
    ``_benchmark_limit`` only applies where cuDNN is available.
    """
    torch = _flags.torch_module()
    if torch is not None:
        return _mod(torch).set_flags(_enabled, _benchmark, _benchmark_limit, _deterministic,
                                     _allow_tf32, _fp32_precision, _depthwise_kernel)
    orig = (_ENABLED.read(), _BENCHMARK.read(), None, _DETERMINISTIC.read(), _ALLOW_TF32.read(),
            _FP32_PRECISION.read(), _DEPTHWISE_KERNEL.read())
    with _flags.mutable():
        for flag, value in ((_ENABLED, _enabled), (_BENCHMARK, _benchmark), (_DETERMINISTIC, _deterministic),
                            (_ALLOW_TF32, _allow_tf32), (_FP32_PRECISION, _fp32_precision),
                            (_DEPTHWISE_KERNEL, _depthwise_kernel)):
            if value is not None:
                flag.write(value)
    return orig


@_contextmanager
def flags(enabled=False, benchmark=False, benchmark_limit=10, deterministic=False, allow_tf32=True,
          fp32_precision="none", depthwise_kernel="auto"):
    """Set every cuDNN flag for the ``with`` block and restore them after it, even on error.

    The defaults are torch's: a bare ``flags()`` disables cuDNN inside the block.
    """
    orig = set_flags(enabled, benchmark, benchmark_limit, deterministic, allow_tf32, fp32_precision,
                     depthwise_kernel)
    try:
        yield
    finally:
        set_flags(*orig)


class CudnnModule(_types.ModuleType):
    """The class of this module: it makes the cuDNN switches live attributes."""

    enabled = _flags.flag_property(_ENABLED, "Whether cuDNN may be used.")
    deterministic = _flags.flag_property(_DETERMINISTIC, "Whether cuDNN must pick deterministic algorithms.")
    benchmark = _flags.flag_property(_BENCHMARK, "Whether cuDNN benchmarks algorithms and keeps the fastest.")
    benchmark_limit = _flags.flag_property(
        _BENCHMARK_LIMIT, "How many cuDNN algorithms to try when benchmarking (None without cuDNN).")
    allow_tf32 = _flags.flag_property(_ALLOW_TF32, "Whether cuDNN convolutions may use TF32.")
    fp32_precision = _flags.flag_property(_FP32_PRECISION, "cuDNN's float32 precision for all ops.")
    depthwise_kernel = _flags.flag_property(_DEPTHWISE_KERNEL, "Depthwise convolution kernel: 'auto', 'cudnn' or 'native'.")
    conv = _flags.FP32Precision("cuda", "conv", lambda t: _mod(t).conv, default="tf32")


_flags.install(__name__, CudnnModule)
