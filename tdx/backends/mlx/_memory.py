"""Allocation guards for the MLX executor: sizes checked before MLX allocates.

MLX kills the process (SIGSEGV) when an allocation fails, and its shapes are 32-bit: a
huge ``empty``, or a reduction that widens a large ``uint8`` tensor to ``int64``, would take
the interpreter down. Every MLX op that makes a buffer of a size the caller chose goes
through :func:`check_alloc` first, which raises torch's ``RuntimeError: ... can't allocate
memory`` (a :class:`tdx.TdxError`) instead. An op whose result can be far larger than its operands
(a broadcast ``a[:, None] - a[None, :]``, ``outer``, a matrix product) has its lazy result checked
by :func:`check_result` before anything evaluates it: executor methods through :func:`sized`, the
facade's float32 per-op path through ``Executor.check_result`` when the result has more than
:data:`LARGE` elements. This module must never import torch or the facade.
"""

from __future__ import annotations

import functools
import math
import os
import sys

from ..._errors import TdxRuntimeError, TdxTypeError

_INT32_MAX = 2**31 - 1


def available_bytes() -> int:
    """The bytes this process may still allocate: free RAM plus free swap (and the cgroup's
    remaining allowance, where one is set); the machine's physical memory where neither is known."""
    free = None
    if sys.platform.startswith("linux"):
        try:
            with open("/proc/meminfo", encoding="ascii") as fh:
                info = {k: int(v.split()[0]) * 1024 for k, v in (line.split(":", 1) for line in fh)}
            free = info.get("MemAvailable", info.get("MemFree", 0)) + info.get("SwapFree", 0)
        except (OSError, ValueError):
            free = None
        for limit, used in (("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),):
            try:
                with open(limit, encoding="ascii") as a, open(used, encoding="ascii") as b:
                    text = a.read().strip()
                    if text != "max":
                        left = int(text) - int(b.read().strip())
                        free = left if free is None else min(free, left)
            except (OSError, ValueError):
                pass  # no cgroup v2 limit here: RAM and swap bound the allocation
    if free is None:
        try:
            free = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError, AttributeError):
            free = 1 << 62
    return free


def check_shape(shape, op: str = "tensor") -> tuple:
    """``shape`` as a tuple of ints, checked as torch checks it.

    Raises:
        TdxRuntimeError: a negative dimension (torch's message).
        TdxTypeError: a dimension that does not fit in 64 bits (torch's TypeError).
    """
    dims = tuple(shape)
    for i, d in enumerate(dims):
        if not -(1 << 63) <= d < (1 << 63):
            raise TdxTypeError(f"{op}(): argument 'size' failed to unpack the object at pos {i + 1} with error "
                               f"\"Overflow when unpacking long long\": {d} does not fit in 64 bits")
        if d < 0:
            raise TdxRuntimeError(f"Trying to create tensor with negative dimension {d}: {list(dims)}")
    return dims


def check_alloc(shape, itemsize: int, op: str = "tensor") -> None:
    """Refuse a buffer of ``shape`` x ``itemsize`` bytes that cannot be allocated.

    Raises:
        TdxRuntimeError: a negative dimension; more bytes than this process can still get
            (torch's "can't allocate memory"); or a dimension over MLX's 32-bit limit.
    """
    if shape.__class__ is tuple and (not shape or (len(shape) == 1 and shape[0].__class__ is int
                                                   and 0 <= shape[0] * itemsize <= 64 << 20)):
        return  # a scalar or a vector of at most 64 MiB: every check below passes it
    dims = check_shape(shape, op)
    numel = math.prod(dims)
    nbytes = numel * itemsize
    if nbytes >= (1 << 63):
        raise TdxRuntimeError(f"{op}: Storage size calculation overflowed with sizes={list(dims)}")
    if nbytes > (64 << 20) and nbytes > available_bytes():
        big = [d for d in dims if d > _INT32_MAX]
        also = (f"; dimension {big[0]} also exceeds MLX's limit of {_INT32_MAX} elements per dimension"
                if big else "")
        raise TdxRuntimeError(f"{op}: can't allocate memory: you tried to allocate {nbytes} bytes "
                              f"(shape {list(dims)}), more than the {available_bytes()} bytes available{also}")
    check_dims(dims, op)


def check_dims(dims, op: str) -> None:
    """Refuse a shape with a dimension over MLX's 32-bit limit, naming ``op`` and the limit (MLX
    itself raises a bare OverflowError, or ``std::bad_cast``)."""
    big = [d for d in dims if d > _INT32_MAX]
    if big:
        raise TdxRuntimeError(f"{op}: dimension {big[0]} of shape {list(dims)} exceeds MLX's limit of "
                              f"{_INT32_MAX} elements per dimension")


LARGE = 1 << 22  # elements: a result this small (64 MB at 16 bytes an element) is never checked further


def check_result(out, op: str) -> None:
    """Refuse ``out``, a lazy MLX array, when its buffer cannot be allocated (MLX would crash evaluating it).

    Raises:
        TdxRuntimeError: more bytes than this process can still get (torch's "can't allocate memory").
    """
    nbytes = out.nbytes
    if nbytes > (64 << 20) and nbytes > available_bytes():
        raise TdxRuntimeError(f"{op}: can't allocate memory: you tried to allocate {nbytes} bytes (shape "
                              f"{list(out.shape)}), more than the {available_bytes()} bytes available")


def sized(method, op: str):
    """``method`` (an executor method returning an MLX array) with its result checked by :func:`check_result`
    when it has more than :data:`LARGE` elements."""
    @functools.wraps(method)
    def checked(self, *args, **kwargs):
        out = method(self, *args, **kwargs)
        if out.__class__ is _ARRAY and out.size > LARGE:
            check_result(out, op)
        return out

    return checked


def _array_class():
    import mlx.core as mx

    return mx.array


_ARRAY = _array_class()
