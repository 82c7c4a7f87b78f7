"""Mirror of ``torch.backends.quantized``: the quantized engine torch uses and the ones it supports.

``engine`` reads and writes torch's engine; without torch it is ``"none"`` and a value set is
validated and applied when torch loads. ``supported_engines`` is read-only. Never imports
torch on module import.
"""

import types as _types

from . import _flags

_TDX_EXTENSIONS = ()  # names tdx adds to torch.backends.quantized: none

_ENGINES = ("none", "fbgemm", "qnnpack", "onednn", "x86")


def _check_engine(value):
    name = "none" if value in ("", None) else value
    if name not in _ENGINES:
        raise _flags.FlagValueError(f"{value} is not a valid value for quantized engine; "
                                    f"expected one of {', '.join(_ENGINES)}")
    return name


_ENGINE = _flags.Flag("quantized.engine", "none", lambda t: t.backends.quantized.engine,
                      lambda t, v: setattr(t.backends.quantized, "engine", v), _check_engine)


def _supported() -> list:
    torch = _flags.torch_module()
    return [] if torch is None else list(torch.backends.quantized.supported_engines)


class QuantizedEngine(_types.ModuleType):
    """The class of this module: it makes ``engine`` and ``supported_engines`` live attributes."""

    engine = _flags.flag_property(_ENGINE, "The quantized engine: 'none', 'fbgemm', 'qnnpack', 'onednn' or 'x86'.")
    supported_engines = _flags.read_only_property(_supported, "The quantized engines torch supports here.")


_flags.install(__name__, QuantizedEngine)
