"""torch's layout vocabulary and numeric limits: ``memory_format``, ``layout``, ``finfo``, ``iinfo``,
``set_printoptions``.

tdx tensors are strided and row-major: ``contiguous_format`` and ``preserve_format`` are accepted
wherever torch takes ``memory_format=``; ``channels_last`` layouts are refused with a typed error
rather than silently ignored. This module must never import a framework.
"""

from __future__ import annotations

import numpy as np

from .. import _dtypes as D
from .._errors import TdxRuntimeError, TdxTypeError, TdxValueError, UnsupportedOpError


class memory_format:  # noqa: N801 - torch's name
    """A memory layout request (``torch.contiguous_format``...)."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"{D._state['prefix']}.{self.name}"

    def __reduce__(self):
        return self.name


class layout:  # noqa: N801 - torch's name
    """A tensor layout; tdx has ``strided`` only."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"{D._state['prefix']}.{self.name}"

    def __reduce__(self):
        return self.name


contiguous_format = memory_format("contiguous_format")
preserve_format = memory_format("preserve_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
strided = layout("strided")
# the layouts torch has besides strided: named so code can compare with them; no tdx tensor has one
sparse_coo, sparse_csr, sparse_csc = layout("sparse_coo"), layout("sparse_csr"), layout("sparse_csc")
sparse_bsr, sparse_bsc, jagged, _mkldnn = layout("sparse_bsr"), layout("sparse_bsc"), layout("jagged"), layout("_mkldnn")
_ROW_MAJOR = (contiguous_format, preserve_format)


def check_memory_format(fmt, op: str) -> None:
    """Accept None, ``contiguous_format`` and ``preserve_format`` for ``op``.

    Raises:
        TdxTypeError: ``fmt`` is not a memory format.
        UnsupportedOpError: ``channels_last``/``channels_last_3d``, which tdx's row-major tensors lack.
    """
    if fmt is None or fmt in _ROW_MAJOR:
        return
    if not isinstance(fmt, memory_format):
        raise TdxTypeError(f"{op}(): memory_format must be a memory format such as torch.contiguous_format, "
                           f"got {fmt!r}")
    raise UnsupportedOpError(f"{op}(): memory_format={fmt!r} is not supported: tdx tensors are row-major; "
                             "accepted: contiguous_format, preserve_format")


def check_layout(lay, op: str) -> None:
    """Accept None and ``strided`` (the one layout tdx creates) as ``op``'s ``layout=``.

    Raises:
        TdxTypeError: ``lay`` is not a layout.
        UnsupportedOpError: another layout (``sparse_coo``...), which tdx tensors cannot have.
    """
    if lay is None or lay is strided:
        return
    if not isinstance(lay, layout):
        raise TdxTypeError(f"{op}(): layout must be a layout such as torch.strided, got {lay!r}")
    raise UnsupportedOpError(f"{op}(): layout={lay!r} is not supported: tdx tensors are strided; accepted: strided")


_CHANNELS_RANK = {"channels_last": 4, "channels_last_3d": 5}


def check_conversion_format(fmt, op: str, ndim: int) -> None:
    """Accept ``memory_format=`` of a conversion (``to``, ``float``, ``cfloat``...) as torch does.

    A conversion's result is a new tensor whose values are the input's: tdx holds them row-major
    whatever the format asked, so every format torch accepts is honoured by value (``stride()`` of the
    result stays the row-major one). As torch, ``channels_last`` needs a 4-D tensor and
    ``channels_last_3d`` a 5-D one.

    Raises:
        TdxTypeError: ``fmt`` is not a memory format.
        TdxRuntimeError: a channels-last format for a tensor of another rank.
    """
    if fmt is None or fmt in _ROW_MAJOR:
        return
    if not isinstance(fmt, memory_format) or fmt.name not in _CHANNELS_RANK:
        raise TdxTypeError(f"{op}(): memory_format must be a memory format such as torch.contiguous_format, "
                           f"got {fmt!r}")
    rank = _CHANNELS_RANK[fmt.name]
    if ndim != rank:
        raise TdxRuntimeError(f"required rank {rank} tensor to use {fmt.name} format (got a {ndim}-D tensor)")


# torch's limits of the 8-bit floats numpy lacks: name -> (eps, max, min, smallest normal)
_FLOAT8 = {"float8_e4m3fn": (0.125, 448.0, -448.0, 0.015625),
           "float8_e4m3fnuz": (0.125, 240.0, -240.0, 0.0078125),
           "float8_e5m2": (0.25, 57344.0, -57344.0, 6.103515625e-05),
           "float8_e5m2fnuz": (0.125, 57344.0, -57344.0, 3.0517578125e-05),
           "float8_e8m0fnu": (1.0, 1.7014118346046923e+38, 5.877471754111438e-39, 5.877471754111438e-39)}


class finfo:  # noqa: N801 - torch's name
    """Machine limits of a floating dtype, as ``torch.finfo`` (default: the default dtype)."""

    def __init__(self, type=None):  # noqa: A002 - torch's parameter name
        d = D.get_default_dtype() if type is None else D.as_dtype(type)
        if not (d.is_floating_point or d.is_complex):
            raise TdxTypeError(f"finfo(): expected a floating point or complex dtype, got {d!r}")
        d = d.to_real()
        if d.name in _FLOAT8:
            self.bits, self.resolution = 8, 1.0
            self.eps, self.max, self.min, self.tiny = _FLOAT8[d.name]
            self.smallest_normal = self.tiny
            self.dtype = d.name
            return
        if d.name == "float4_e2m1fn_x2":
            raise TdxTypeError("finfo(): float4_e2m1fn_x2 packs two 4-bit values per byte and has no limits "
                               "(torch raises too); accepted: a floating point or complex dtype of one value")
        if d.name == "bfloat16":
            self.bits, self.eps, self.max, self.tiny, self.resolution = 16, 0.0078125, 3.3895313892515355e38, \
                1.1754943508222875e-38, 0.01
            self.smallest_normal = self.tiny
        else:
            info = np.finfo(getattr(np, d.name))
            self.bits, self.eps, self.max = info.bits, float(info.eps), float(info.max)
            self.tiny = self.smallest_normal = float(info.tiny)
            self.resolution = 10.0 ** -info.precision
        self.min = -self.max
        self.dtype = d.name

    def __repr__(self) -> str:
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, eps={self.eps:g}, "
                f"smallest_normal={self.smallest_normal:g}, tiny={self.tiny:g}, dtype={self.dtype})")


class iinfo:  # noqa: N801 - torch's name
    """Limits of an integer dtype, as ``torch.iinfo``."""

    def __init__(self, type):  # noqa: A002 - torch's parameter name
        d = D.as_dtype(type)
        if d.is_floating_point or d.is_complex or d is D.bool_:
            raise TdxTypeError(f"iinfo(): expected an integer dtype, got {d!r}")
        info = np.iinfo(getattr(np, d.name))
        self.bits, self.min, self.max, self.dtype = info.bits, int(info.min), int(info.max), d.name

    def __repr__(self) -> str:
        big = self.bits >= 32 and not D.by_name(self.dtype).is_signed  # torch prints these with %g
        return f"iinfo(min={self.min}, max={self.max:g}, dtype={self.dtype})" if big else \
            f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype})"


PRINT_OPTIONS = {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80, "sci_mode": None}
_PROFILES = {"default": dict(PRINT_OPTIONS), "short": {"precision": 2, "threshold": 1000, "edgeitems": 2,
                                                       "linewidth": 80},
             "full": {"precision": 4, "threshold": float("inf"), "edgeitems": 3, "linewidth": 80}}


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None,
                     sci_mode=None) -> None:
    """Printing options of tensors, as ``torch.set_printoptions`` (``profile``: default, short, full).

    Raises:
        TdxValueError: an unknown profile.
    """
    if profile is not None:
        if profile not in _PROFILES:
            raise TdxValueError(f"set_printoptions(): unknown profile {profile!r}; accepted: default, short, full")
        PRINT_OPTIONS.update(_PROFILES[profile])
    for key, value in (("precision", precision), ("threshold", threshold), ("edgeitems", edgeitems),
                       ("linewidth", linewidth)):
        if value is not None:
            PRINT_OPTIONS[key] = value
    PRINT_OPTIONS["sci_mode"] = sci_mode
