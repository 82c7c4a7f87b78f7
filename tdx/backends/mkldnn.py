"""Mirror of ``torch.backends.mkldnn``: oneDNN availability, switches and verbose output.

``enabled``, ``deterministic``, ``allow_tf32``, ``fp32_precision`` and the per-op
``matmul``/``conv``/``rnn`` precision objects are live module attributes that read and write
torch's state; without torch they keep tdx-side values that are applied when torch loads.
``flags()`` restores the previous values on exit, exceptions included. Never imports torch
on module import.
"""

import types as _types
from contextlib import contextmanager as _contextmanager

from . import _flags

_TDX_EXTENSIONS = ()  # names tdx adds to torch.backends.mkldnn: none

VERBOSE_OFF = 0
VERBOSE_ON = 1
VERBOSE_ON_CREATION = 2


def _mod(t):
    return _flags.torch_backend(t, "mkldnn")


def _flag(name, default, check):
    return _flags.Flag(f"mkldnn.{name}", default, lambda t: getattr(_mod(t), name),
                       lambda t, v: setattr(_mod(t), name, v), check, guarded=True)


_ENABLED = _flag("enabled", True, _flags.check_bool("set_enabled_mkldnn"))
_DETERMINISTIC = _flag("deterministic", False, _flags.check_bool("set_deterministic_mkldnn"))
_ALLOW_TF32 = _flag("allow_tf32", None, _flags.check_bool("set_allow_tf32_onednn"))
_FP32_PRECISION = _flag("fp32_precision", "none", _flags.check_precision)


def is_available() -> bool:
    """Whether torch is built with MKL-DNN (oneDNN) support (False without torch)."""
    torch = _flags.torch_module()
    return False if torch is None else torch.backends.mkldnn.is_available()


def is_acl_available() -> bool:
    """Whether torch is built with MKL-DNN + ACL support (False without torch)."""
    torch = _flags.torch_module()
    return False if torch is None else torch.backends.mkldnn.is_acl_available()


class verbose:  # noqa: N801 - torch's name
    """Context manager that turns oneDNN's verbose messages on for its block.

    Args:
        level: ``VERBOSE_OFF``, ``VERBOSE_ON`` or ``VERBOSE_ON_CREATION``.

    Raises:
        AssertionError: (on enter) oneDNN could not be put in verbose mode, torch being absent included.
    """

    def __init__(self, level):
        self.level = level

    def __enter__(self):
        if self.level == VERBOSE_OFF:
            return None
        torch = _flags.torch_module()
        if torch is None or not torch._C._verbose.mkldnn_set_verbose(self.level):
            raise _flags.BackendUnavailableError(
                "Failed to set MKLDNN into verbose mode. Please consider to disable this verbose scope.")
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        torch = _flags.torch_loaded()
        if torch is not None:
            torch._C._verbose.mkldnn_set_verbose(VERBOSE_OFF)
        return False


def set_flags(_enabled=None, _deterministic=None, _allow_tf32=None, _fp32_precision="none"):
    """Set the oneDNN flags that are not None and return the previous ones as a tuple.

    As torch's, ``_fp32_precision`` defaults to ``"none"`` and so is reset by a bare call.
    """
    torch = _flags.torch_module()
    if torch is not None:
        return torch.backends.mkldnn.set_flags(_enabled, _deterministic, _allow_tf32, _fp32_precision)
    orig = (_ENABLED.read(), _DETERMINISTIC.read(), _ALLOW_TF32.read(), _FP32_PRECISION.read())
    with _flags.mutable():
        for flag, value in ((_ENABLED, _enabled), (_DETERMINISTIC, _deterministic),
                            (_ALLOW_TF32, _allow_tf32), (_FP32_PRECISION, _fp32_precision)):
            if value is not None:
                flag.write(value)
    return orig


@_contextmanager
def flags(enabled=False, deterministic=False, allow_tf32=True, fp32_precision="none"):
    """Set the oneDNN flags for the ``with`` block and restore them after it, even on error."""
    orig = set_flags(enabled, deterministic, allow_tf32, fp32_precision)
    try:
        yield
    finally:
        set_flags(*orig)


class MkldnnModule(_types.ModuleType):
    """The class of this module: it makes the oneDNN switches live attributes."""

    def is_available(self) -> bool:
        """Whether torch is built with MKL-DNN support."""
        return is_available()

    enabled = _flags.flag_property(_ENABLED, "Whether oneDNN kernels may be used.")
    deterministic = _flags.flag_property(_DETERMINISTIC, "Whether oneDNN must be deterministic.")
    allow_tf32 = _flags.flag_property(_ALLOW_TF32, "Whether oneDNN may use TF32 (Intel GPUs).")
    fp32_precision = _flags.flag_property(_FP32_PRECISION, "oneDNN's float32 precision for all ops.")
    matmul = _flags.FP32Precision("mkldnn", "matmul", lambda t: _mod(t).matmul)
    conv = _flags.FP32Precision("mkldnn", "conv", lambda t: _mod(t).conv)
    rnn = _flags.FP32Precision("mkldnn", "rnn", lambda t: _mod(t).rnn)


_flags.install(__name__, MkldnnModule)
