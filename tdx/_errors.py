"""Typed errors for tdx.

Every error tdx raises on purpose subclasses :class:`TdxError` *and* the builtin
exception torch would raise in the same situation, so ``except RuntimeError``
written for torch keeps working. This module must never import a framework.
"""

from __future__ import annotations


class TdxError(Exception):
    """Base class of every error tdx raises on purpose."""


class PrecisionWarning(UserWarning):
    """A value is held in a narrower dtype than asked for, because the config opted in
    (``backends.mlx.downcast_float64`` on an MLX GPU, which has no float64)."""


class DeviceMismatchError(TdxError, RuntimeError):
    """Tensors on different executors met in one op."""


class DeviceUnavailableError(TdxError, RuntimeError):
    """A device was asked for that is not available and may not be translated."""


class InvalidDeviceError(TdxError, RuntimeError):
    """A device string or object that tdx cannot parse."""


class ConfigError(TdxError, ValueError):
    """A config file or environment variable holds a bad key, type or value."""


class DtypeError(TdxError, TypeError):
    """A dtype an executor or op does not support, or a bad dtype argument."""


class UnsupportedOpError(TdxError, NotImplementedError):
    """An op an executor cannot run with the given arguments."""


class ShapeError(TdxError, RuntimeError):
    """Shapes that do not broadcast or do not fit an op (torch raises RuntimeError)."""


class TdxIndexError(TdxError, IndexError):
    """An index out of range or of an unsupported kind."""


class TdxValueError(TdxError, ValueError):
    """An argument with a bad value."""


class TdxTypeError(TdxError, TypeError):
    """An argument of a bad type."""


class TdxOverflowError(TdxError, OverflowError):
    """A Python int too large for any tensor dtype (torch: "int too big to convert")."""


class BackendNotFoundError(TdxError, KeyError):
    """No executor is registered under the requested name."""

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable
        return str(self.args[0]) if self.args else ""


def mismatch(op: str, a, b) -> DeviceMismatchError:
    """Build torch's style of mixed-device error for ``op`` between devices ``a`` and ``b``."""
    return DeviceMismatchError(
        f"Expected all tensors to be on the same device, but found at least two devices, "
        f"{a} and {b}! (when checking arguments for {op}; move one with .to() first)"
    )


class DtypeMismatchError(TdxError, RuntimeError):
    """Operands whose dtypes an op requires to match (torch raises RuntimeError)."""


class CastError(TdxError, RuntimeError):
    """A result that may not be cast to the output's dtype (in-place ops, ``out=``)."""


class OpDtypeError(TdxError, NotImplementedError):
    """An op that is not implemented for a dtype (torch: NotImplementedError "... not implemented for 'Float'",
    a RuntimeError)."""


class TdxRuntimeError(TdxError, RuntimeError):
    """A framework's RuntimeError, carried as a TdxError."""


class TdxNotImplementedError(TdxError, NotImplementedError):
    """A framework's NotImplementedError (torch: op not implemented for a dtype)."""


NATIVE_ERRORS = (RuntimeError, TypeError, ValueError, IndexError)
_KINDS = ((IndexError, TdxIndexError), (NotImplementedError, TdxNotImplementedError),
          (TypeError, TdxTypeError), (ValueError, TdxValueError), (RuntimeError, TdxRuntimeError))


def translate(err: BaseException, kind=None) -> TdxError:
    """``err`` as a TdxError of the same builtin kind (or of ``kind``), keeping its message."""
    if isinstance(err, TdxError):
        return err
    cls = next(t for b, t in _KINDS if isinstance(err, b)) if kind is None else dict(_KINDS)[kind]
    out = cls(str(err))
    out.__cause__ = err
    return out


class LinAlgError(TdxError, RuntimeError):
    """A matrix a linear-algebra function cannot factor or invert (torch.linalg.LinAlgError)."""


class NotProvidedError(TdxError, ModuleNotFoundError):
    """A ``torch.*`` module a program imports under the torch alias that tdx does not provide."""


class OutOfMemoryError(TdxError, RuntimeError):
    """A device ran out of memory (``torch.OutOfMemoryError``; torch raises it as a RuntimeError)."""


class AcceleratorError(TdxError, RuntimeError):
    """An accelerator reported an error of its own (``torch.AcceleratorError``)."""


class FatalError(TdxError):
    """An unrecoverable internal error (``torch.FatalError``)."""


class JITException(TdxError):
    """An exception raised from TorchScript code (``torch.jit.JITException``); tdx never raises it."""


class NotProvidedAttributeError(TdxError, AttributeError):
    """A name looked up on a tdx module that tdx does not provide at that torch path (``torch.nn.foo``):
    ``hasattr`` answers False and ``getattr(module, name, default)`` returns the default, as for any
    missing attribute."""


class UnsupportedAttributeError(UnsupportedOpError, AttributeError):
    """An attribute tdx refuses by name (a scripted module's ``.graph``): ``hasattr`` answers False."""
