"""``torch.testing``'s comparisons and ``make_tensor`` for an installation without torch.

Where torch is installed, :mod:`tdx.testing` runs torch's own ``testing/_comparison.py`` and
``testing/_creation.py`` on tdx tensors, and this module is not used. Without torch it stands in: the same
arguments, torch's default tolerances per dtype (float32: rtol 1.3e-6, atol 1e-5), the same order of checks
(lengths and keys of containers, then per pair: type, shape, device, dtype, values) and messages in torch's
words, so a test written against ``torch.testing`` passes or fails here as it does there. The values are
compared with tdx ops on the tensors' own device.

This module must never import torch, and never loosen torch's tolerances.
"""

from __future__ import annotations

import cmath
import collections.abc
import math

import numpy as np

from .._errors import TdxTypeError, TdxValueError

__all__ = ["assert_close", "assert_allclose", "make_tensor", "DTYPE_PRECISIONS"]

# torch.testing's default (rtol, atol) per dtype name; every other dtype compares exactly
DTYPE_PRECISIONS = {"float16": (0.001, 1e-5), "bfloat16": (0.016, 1e-5), "float32": (1.3e-6, 1e-5),
                    "float64": (1e-7, 1e-7), "complex32": (0.001, 1e-5), "complex64": (1.3e-6, 1e-5),
                    "complex128": (1e-7, 1e-7)}
# the dtype torch.testing gives a Python number
_NUMBER_DTYPES = {int: "int64", float: "float64", complex: "complex128"}


class _Mismatch(Exception):
    """One failed comparison: the builtin exception type to raise and torch's message, at item ``where``."""

    def __init__(self, kind: type, text: str, where: tuple = ()):
        super().__init__(text)
        self.kind, self.text, self.where = kind, text, where

    def error(self, msg=None) -> Exception:
        if isinstance(msg, str):
            return self.kind(msg)
        text = self.text + ("\n\nThe failure occurred for item " + "".join(f"[{k!r}]" for k in self.where)
                            if self.where else "")
        return self.kind(msg(text) if callable(msg) else text)


def _tolerances(names, rtol, atol, where):
    if (rtol is None) != (atol is None):
        missing = "rtol" if rtol is None else "atol"
        raise _Mismatch(TdxValueError, "Both 'rtol' and 'atol' must be either specified or omitted, "
                                       f"but got no {missing}.", where)
    if rtol is not None:
        return rtol, atol
    pairs = [DTYPE_PRECISIONS.get(n, (0.0, 0.0)) for n in names]
    return max(p[0] for p in pairs), max(p[1] for p in pairs)


def _difference_text(identifier, extra, abs_diff, abs_idx, atol, rel_diff, rel_idx, rtol) -> str:
    exact = rtol == 0 and atol == 0
    lines = [f"{identifier} are not {'equal' if exact else 'close'}!", ""]
    if extra:
        lines.append(extra.strip())
    for kind, diff, idx, tol in (("absolute", abs_diff, abs_idx, atol), ("relative", rel_diff, rel_idx, rtol)):
        line = (f"{kind.title()} difference: {diff}" if idx is None
                else f"Greatest {kind} difference: {diff} at index {idx}")
        lines.append(line if exact else f"{line} (up to {tol} allowed)")
    return "\n".join(lines).strip()


def _scalar_text(actual, expected, rtol, atol, identifier="Scalars") -> str:
    diff = abs(actual - expected)
    rel = float("inf") if expected == 0 else diff / abs(expected)
    return _difference_text(identifier, f"Expected {expected} but got {actual}.", diff, None, atol, rel, None, rtol)


def _numbers(actual, expected, where, rtol, atol, equal_nan, check_dtype, **_):
    a, e = (x.item() if isinstance(x, np.number) else x for x in (actual, expected))
    rtol, atol = _tolerances([_NUMBER_DTYPES[type(x)] for x in (a, e)], rtol, atol, where)
    if check_dtype and type(a) is not type(e):
        raise _Mismatch(AssertionError, f"The (d)types do not match: {type(a)} != {type(e)}.", where)
    if a == e or (equal_nan and cmath.isnan(a) and cmath.isnan(e)):
        return
    diff = abs(a - e)
    if cmath.isfinite(diff) and diff <= atol + rtol * abs(e):
        return
    raise _Mismatch(AssertionError, _scalar_text(a, e, rtol, atol), where)


def _tensors(actual, expected, where, rtol, atol, equal_nan, check_device, check_dtype, check_layout,
             check_stride, **_):
    import tdx

    rtol, atol = _tolerances([actual.dtype.name, expected.dtype.name], rtol, atol, where)

    def differ(attribute, a, e):
        raise _Mismatch(AssertionError, f"The values for attribute '{attribute}' do not match: {a} != {e}.", where)

    if actual.shape != expected.shape:
        differ("shape", actual.shape, expected.shape)
    if actual.layout != expected.layout and check_layout:
        differ("layout", actual.layout, expected.layout)
    if check_stride and actual.stride() != expected.stride():
        differ("stride()", actual.stride(), expected.stride())
    if check_device and actual.device != expected.device:
        differ("device", actual.device, expected.device)
    if check_dtype and actual.dtype != expected.dtype:
        differ("dtype", actual.dtype, expected.dtype)
    if actual.device != expected.device:
        actual, expected = actual.cpu(), expected.cpu()
    if actual.dtype != expected.dtype:
        wide = [tdx.int64 if d in (tdx.uint16, tdx.uint32, tdx.uint64) else d for d in (actual.dtype, expected.dtype)]
        common = tdx.promote_types(*wide)
        actual, expected = actual.to(common), expected.to(common)
    actual, expected = actual.detach(), expected.detach()
    matches = tdx.isclose(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan)
    if bool(tdx.all(matches)):
        return
    if actual.dim() == 0:
        raise _Mismatch(AssertionError, _scalar_text(actual.item(), expected.item(), rtol, atol), where)
    raise _Mismatch(AssertionError, _tensor_text(actual, expected, matches, rtol, atol), where)


def _tensor_text(actual, expected, matches, rtol, atol) -> str:
    import tdx

    count = matches.numel()
    bad = count - int(matches.sum().item())
    extra = f"Mismatched elements: {bad} / {count} ({bad / count:.1%})"
    shape = tuple(matches.shape)
    if actual.dtype.is_floating_point and actual.dtype.itemsize == 1:
        first = tuple(int(i) for i in np.unravel_index(int(tdx.nonzero(~matches.flatten())[0, 0]), shape))
        return f"Tensor-likes are not 'equal'!\n\n{extra}\nThe first mismatched element is at index {first}."
    a, e, ok = actual.flatten(), expected.flatten(), matches.flatten()
    if not (actual.dtype.is_floating_point or actual.dtype.is_complex):
        a, e = a.to(tdx.int64), e.to(tdx.int64)
    abs_diff = (a - e).abs()
    abs_diff = tdx.where(ok, tdx.zeros_like(abs_diff), abs_diff)
    rel_diff = abs_diff / e.abs()
    rel_diff = tdx.where(ok, tdx.zeros_like(rel_diff), rel_diff)
    max_abs, at_abs = tdx.max(abs_diff, 0)
    max_rel, at_rel = tdx.max(rel_diff, 0)

    def unravel(i):
        return tuple(int(k) for k in np.unravel_index(int(i), shape))

    return _difference_text("Tensor-likes", extra, max_abs.item(), unravel(at_abs), atol, max_rel.item(),
                            unravel(at_rel), rtol)


def _pairs(actual, expected, where=()):
    """Yield ``(compare, actual, expected, where)`` for every leaf pair, checking containers on the way."""
    seq = collections.abc.Sequence
    if isinstance(actual, seq) and isinstance(expected, seq) and not isinstance(actual, str) \
            and not isinstance(expected, str):
        if len(actual) != len(expected):
            raise _Mismatch(AssertionError, f"The length of the sequences mismatch: {len(actual)} != {len(expected)}",
                            where)
        for i in range(len(actual)):
            yield from _pairs(actual[i], expected[i], (*where, i))
        return
    mapping = collections.abc.Mapping
    if isinstance(actual, mapping) and isinstance(expected, mapping):
        mine, theirs = set(actual.keys()), set(expected.keys())
        if mine != theirs:
            raise _Mismatch(AssertionError, "The keys of the mappings do not match:\n"
                                            f"Missing keys in the actual mapping: {sorted(theirs - mine)}\n"
                                            f"Additional keys in the actual mapping: {sorted(mine - theirs)}", where)
        try:
            keys = sorted(mine)
        except TypeError:  # keys of mixed types: their own order
            keys = list(mine)
        for key in keys:
            yield from _pairs(actual[key], expected[key], (*where, key))
        return
    yield _leaf(actual, expected, where), actual, expected, where


def _leaf(actual, expected, where):
    from .._tensor.tensor import Tensor

    if actual is None or expected is None:
        def nones(a, e, w, **_):
            if not (a is None and e is None):
                raise _Mismatch(AssertionError, f"None mismatch: {a} is not {e}", w)
        return nones
    if all(isinstance(x, (bool, np.bool_)) for x in (actual, expected)):
        def booleans(a, e, w, **_):
            a, e = bool(a), bool(e)
            if a is not e:
                raise _Mismatch(AssertionError, f"Booleans mismatch: {a} is not {e}", w)
        return booleans
    if all(isinstance(x, (int, float, complex, np.number)) and not isinstance(x, bool) for x in (actual, expected)):
        return _numbers
    if isinstance(actual, type(expected)) or isinstance(expected, type(actual)):
        if isinstance(actual, Tensor):
            return _tensors
    raise _Mismatch(TdxTypeError, f"No comparison pair was able to handle inputs of type {type(actual)} "
                                  f"and {type(expected)}.", where)


def assert_close(actual, expected, *, allow_subclasses=True, rtol=None, atol=None, equal_nan=False, check_device=True,
                 check_dtype=True, check_layout=True, check_stride=False, msg=None):
    """``torch.testing.assert_close``: ``actual`` and ``expected`` (tensors, numbers, or sequences and mappings
    of them) are close within ``atol + rtol * |expected|``, with torch's default tolerances per dtype.

    Raises:
        AssertionError: torch's message, or ``msg`` (a string replaces it, a callable receives it).
        TypeError: no comparison applies to the inputs' types.
        ValueError: only one of ``rtol``/``atol`` given.
    """
    __tracebackhide__ = True
    options = dict(rtol=rtol, atol=atol, equal_nan=equal_nan, check_device=check_device, check_dtype=check_dtype,
                   check_layout=check_layout, check_stride=check_stride)
    try:
        pairs = list(_pairs(actual, expected))
    except _Mismatch as err:
        raise err.error() from None
    for compare, a, e, where in pairs:
        if not allow_subclasses and type(a) is not type(e):
            raise _Mismatch(TdxTypeError, f"No comparison pair was able to handle inputs of type {type(a)} "
                                          f"and {type(e)}.", where).error() from None
        try:
            compare(a, e, where, **options)
        except _Mismatch as err:
            raise err.error(msg) from None


def assert_allclose(actual, expected, rtol=None, atol=None, equal_nan=True, msg=""):
    """torch's deprecated ``assert_allclose``: dtypes may differ, tolerances of its own older table."""
    import tdx

    actual = actual if isinstance(actual, tdx.Tensor) else tdx.tensor(actual)
    expected = expected if isinstance(expected, tdx.Tensor) else tdx.tensor(expected, dtype=actual.dtype)
    if rtol is None and atol is None:
        old = {"float16": (1e-3, 1e-3), "float32": (1e-4, 1e-5), "float64": (1e-5, 1e-8)}
        pairs = [old.get(t.dtype.name, (0.0, 0.0)) for t in (actual, expected)]
        rtol, atol = max(p[0] for p in pairs), max(p[1] for p in pairs)
    assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan, check_dtype=False, msg=msg or None)


def make_tensor(*shape, dtype, device, low=None, high=None, requires_grad=False, noncontiguous=False,
                exclude_zero=False, memory_format=None):
    """``torch.testing.make_tensor``: values drawn uniformly from ``[low, high)``, defaults -9 and 9 for
    floating and complex dtypes, -9 (clamped to 0 for unsigned) and 10 for integers, 0 and 2 for bool,
    clamped to the dtype's range; drawn as torch draws them (``uniform_`` of an empty tensor, ``randint``), so
    the same generator state gives torch's values.

    Raises:
        ValueError: ``low`` is not below ``high``, either is NaN, ``noncontiguous`` with ``memory_format``, or
            ``requires_grad`` for an integral dtype.
        TypeError: a dtype make_tensor does not make.
    """
    import tdx

    if len(shape) == 1 and isinstance(shape[0], collections.abc.Sequence):
        shape = shape[0]
    shape = tuple(shape)
    if noncontiguous and memory_format is not None:
        raise TdxValueError(f"The parameters `noncontiguous` and `memory_format` are mutually exclusive, but got "
                            f"noncontiguous={noncontiguous!r} and memory_format={memory_format!r}")
    exact = dtype == tdx.bool or not (dtype.is_floating_point or dtype.is_complex)
    if requires_grad and exact:
        raise TdxValueError(f"`requires_grad=True` is not supported for boolean and integral dtypes, but got "
                            f"dtype={dtype}")
    noncontiguous = noncontiguous and math.prod(shape) > 1
    if noncontiguous:
        shape = (*shape[:-1], 2 * shape[-1])
    if dtype == tdx.bool:
        lo, hi = _bounds(low, high, dtype, 0, 2, 0, 2)
        out = tdx.randint(lo, hi, shape, device=device, dtype=dtype)
    elif exact:
        info = tdx.iinfo(dtype)
        lo, hi = _bounds(low, high, dtype, -9, 10, info.min, info.max + (dtype != tdx.int64))
        out = tdx.randint(lo, hi, shape, device=device, dtype=dtype)
    else:
        info = tdx.finfo(dtype)
        lo, hi = _bounds(low, high, dtype, -9, 9, info.min, info.max)
        draws = tdx.float32 if dtype.itemsize == 1 and dtype.is_floating_point else dtype
        out = tdx.empty(shape, device=device, dtype=draws)
        real = tdx.view_as_real(out) if dtype.is_complex else out
        if hi - lo >= tdx.finfo(real.dtype).max:  # uniform_'s range must stay finite: draw half, double
            real.uniform_(lo / 2, hi / 2).mul_(2)
        else:
            real.uniform_(lo, hi)
        out = out.to(dtype)
    if noncontiguous:
        out = out[..., 1::2]
    elif memory_format is not None:
        out = out.clone(memory_format=memory_format)
    if exclude_zero:
        out = tdx.where(out == 0, tdx.full_like(out, 1 if exact else tdx.finfo(dtype).tiny), out)
    if requires_grad:
        out.requires_grad_(True)
    return out


def _bounds(low, high, dtype, default_low, default_high, lowest, highest):
    """``(low, high)`` checked and clamped to ``[lowest, highest)``; integral bounds rounded up."""
    low = default_low if low is None else low
    high = default_high if high is None else high
    if any(isinstance(value, float) and math.isnan(value) for value in (low, high)):
        raise TdxValueError(f"`low` and `high` cannot be NaN, but got low={low!r} and high={high!r}")
    if low >= high and not (low == high and (dtype.is_floating_point or dtype.is_complex)):
        raise TdxValueError(f"`low` must be less than `high`, but got {low} >= {high}")
    if high < lowest or low >= highest:
        raise TdxValueError(f"The value interval specified by `low` and `high` is [{low}, {high}), but {dtype} "
                            f"only supports [{lowest}, {highest})")
    low, high = min(max(low, lowest), highest), min(max(high, lowest), highest)
    if not (dtype.is_floating_point or dtype.is_complex):
        return math.ceil(low), math.ceil(high)
    return low, high
