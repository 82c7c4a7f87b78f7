"""Value bounds of MLX integer arrays known without reading their values.

A bounds check (``index_select``, ``gather``, ``scatter``, an embedding lookup) must know the smallest and
largest index; reading them evaluates the array, and when the index is the result of pending work (the
``argmax`` of the previous step's logits, as in greedy generation) that evaluation blocks the Python thread
every step. MLX arrays carry no such facts, so this module keeps them beside the arrays:

- producers note what they know: ``argmax``/``argmin`` give ``[0, n - 1]`` over their dim, integer
  ``arange`` its first and last values, an integer constant (``zeros``, ``full``, ``fill_``) its value, host
  data (``from_host``) is marked *read on demand* (its values are on the host already: reading them waits
  for nothing);
- ops that only move or copy values (basic indexing, reshape, squeeze/unsqueeze, transpose, ``cat``,
  ``clone``, widening integer casts) carry their input's bounds to their output: the output's values are a
  sub-multiset of the inputs' (``cat``: the union of its inputs' bounds, known only when every input's is);
- integer ``add``/``sub`` of arrays (or a Python int) whose bounds are known give the interval sum or
  difference (:func:`shifted`), where the result's dtype holds all of it (else it could wrap): a KV cache's
  write position, ``arange(n) + offset`` with the offset counted up in place, is known every step;
- bool arrays are integers here (``False`` 0, ``True`` 1): ``~`` turns the bounds over (:func:`inverted`),
  ``&``/``|``/``^`` of two pinned operands give the pinned result (:func:`combined`), a comparison whose
  answer the intervals decide gives a pinned bool (:func:`compared`), ``amax``/``amin`` keep their input's
  bounds (their values are the input's);
- a checker asks :func:`bounds` and reads the values only where nothing is known; a host read of one
  element (``item()``, ``bool()``) asks :func:`pinned` first: bounds with ``lo == hi`` are the value itself,
  read without waiting on anything. A decoding loop's stop check (``bool(unfinished.max() == 0)``, the flags
  built by ``full`` from Python bools) is answered so, and the next step's graph is built while this one runs.

Bounds are a superset of the values, never narrower: a checker may skip a check only when the known bounds
fit, and where they do not fit it must read the values (an index that could be out of range may still be in
range). Entries are keyed by ``id`` and validated by a weak reference, so an array freed and an address
reused never inherits another array's facts, and an entry dies with its array. Must never import torch or
the facade, and never evaluate an array except where :func:`bounds` reads host data on demand.
"""

from __future__ import annotations

import weakref

import mlx.core as mx
import numpy as np

from ._streams import EVAL_LOCK

_INTEGER = (mx.int8, mx.int16, mx.int32, mx.int64, mx.uint8, mx.uint16, mx.uint32, mx.uint64)
_RANGES = {d: (int(i.min), int(i.max)) for d in _INTEGER
           for i in (np.iinfo(str(d).rsplit(".", 1)[-1]),)}  # MLX's integer dtypes carry NumPy's names
_RANGES[mx.bool_] = (0, 1)
_KNOWABLE = (*_INTEGER, mx.bool_)  # the dtypes whose arrays can have bounds


def holds(dtype, lo: int, hi: int) -> bool:
    """Whether integer MLX ``dtype`` holds every value of ``[lo, hi]`` (else values wrap and bounds lie)."""
    r = _RANGES[dtype]
    return r[0] <= lo and hi <= r[1]


KNOWN: dict = {}  # id(array) -> [weak reference, lo, hi, pending]; lo None: host data, read on first use


class _Ref(weakref.ref):
    """A weak reference to a noted array that knows its entry's key (one callback for all entries)."""

    __slots__ = ("key",)


def _gone(ref) -> None:
    """Drop the entry of a freed array, unless the address already holds a newer array's entry."""
    e = KNOWN.get(ref.key)
    if e is not None and e[0] is ref:
        KNOWN.pop(ref.key, None)  # (another thread may have dropped it meanwhile)


def note(arr, lo, hi, pending: bool = True) -> None:
    """Record that every value of MLX array ``arr`` lies in ``[lo, hi]`` (ints; ``lo is None``: the
    values are host data, read on demand). ``pending``: the values come from work that may not have run."""
    ref = _Ref(arr, _gone)
    ref.key = key = id(arr)
    KNOWN[key] = [ref, lo, hi, pending]


def constant(arr, value):
    """``arr`` (every element ``value``: ``zeros``, ``full``, ``fill_``) with its bounds ``[value, value]`` where it
    is an integer array and ``value`` a Python int (a position counter starts so); returns ``arr``."""
    if (value.__class__ is int or value.__class__ is bool) and arr.dtype in _KNOWABLE \
            and holds(arr.dtype, value, value):  # (a value that wrapped on its way in is not the one stored)
        note(arr, int(value), int(value), False)
    return arr


def note_host(arr) -> None:
    """Record that integer array ``arr`` holds host data: its bounds cost a read, but no wait."""
    note(arr, None, None, False)


def _entry(arr):
    e = KNOWN.get(id(arr))
    if e is None or e[0]() is not arr:
        return None
    if e[1] is None:  # host data: read once, published whole so another thread never sees half of it
        with EVAL_LOCK:
            values = np.array(arr, copy=False)
        lo, hi = (int(values.min()), int(values.max())) if values.size else (0, -1)
        e = KNOWN[id(arr)] = [e[0], lo, hi, e[3]]
    return e


def bounds(arr):
    """``(lo, hi, pending)`` known for ``arr`` without waiting on pending work, or None."""
    if not KNOWN:
        return None
    e = _entry(arr)
    return None if e is None else (e[1], e[2], e[3])


def carry(src, out):
    """``out`` (values all taken from ``src``) inherits ``src``'s bounds; returns ``out``. The per-op path
    of views: callers skip the call where ``id(src) not in KNOWN``."""
    if id(src) in KNOWN:
        e = _entry(src)
        if e is not None:
            note(out, e[1], e[2], e[3])
    return out


def carry_all(srcs, out):
    """``out`` (values all taken from ``srcs``) gets the union of their bounds where every one is known."""
    if KNOWN:
        lo = hi = None
        pending = False
        for s in srcs:
            e = _entry(s)
            if e is None:
                return out
            if e[1] <= e[2]:  # an empty input adds nothing
                lo = e[1] if lo is None else min(lo, e[1])
                hi = e[2] if hi is None else max(hi, e[2])
            pending = pending or e[3]
        if lo is not None:
            note(out, lo, hi, pending)
    return out


def shifted(a, b, out, negate: bool = False):
    """``out`` (``a + b``, or ``a - b`` with ``negate``: integer arrays, ``b`` an array or a Python int) with
    the interval sum (difference) of ``a``'s and ``b``'s bounds, where both are known and ``out``'s dtype holds
    every value of it; returns ``out``. Callers skip the call where ``KNOWN`` is empty."""
    ea = _entry(a) if out.dtype in _INTEGER else None
    if ea is None:
        return out
    if b.__class__ is int:
        lo, hi, pending = b, b, False
    else:
        eb = _entry(b)
        if eb is None:
            return out
        lo, hi, pending = eb[1], eb[2], eb[3]
    if ea[1] > ea[2] or lo > hi:  # an empty operand: its result is empty too, nothing to bound
        return out
    lo, hi = (ea[1] - hi, ea[2] - lo) if negate else (ea[1] + lo, ea[2] + hi)
    if holds(out.dtype, lo, hi):  # never a wrapped value's bounds
        note(out, lo, hi, ea[3] or pending)
    return out


def start_pending(arr) -> None:
    """Start evaluating ``arr``, whose values are pending, without waiting for it (``mx.async_eval``): an op
    reading it as an index waits on it anyway, and the caller keeps building the graph meanwhile. Under
    ``mx.compile``/``mx.vmap`` (a traced array cannot be evaluated) nothing starts."""
    e = KNOWN.get(id(arr))
    if e is not None:
        e[3] = False  # started once is enough
    try:
        with EVAL_LOCK:
            mx.async_eval(arr)
    except (ValueError, RuntimeError) as err:  # "Not allowed inside a graph transformation", and kin
        if "transformation" not in str(err) and "without a primitive" not in str(err):
            raise


def pinned(arr):
    """The one value every element of ``arr`` holds, where its bounds pin it down (``lo == hi``), as an int;
    else None. The value of a pinned array is known on the host: reading it waits on nothing."""
    if not KNOWN:
        return None
    e = _entry(arr)
    return e[1] if e is not None and e[1] == e[2] else None


def _interval(x):
    """``(lo, hi, pending)`` of an operand: an array with known bounds, or a Python int, bool or float."""
    c = x.__class__
    if c is int or c is bool or c is float:
        return x, x, False
    e = _entry(x) if c is mx.array else None
    return None if e is None else (e[1], e[2], e[3])


def _intervals(a, b):
    """The intervals of operands ``a`` and ``b`` (:func:`_interval`), or None where either is unknown or is a
    Python int that the other operand's dtype does not hold: torch wraps such a value into that dtype first
    (``uint8 == 300`` compares with 44), which no interval of the raw value describes."""
    ea, eb = _interval(a), _interval(b)
    if ea is None or eb is None:
        return None
    for x, other in ((a, b), (b, a)):
        if (x.__class__ is int or x.__class__ is bool) and other.__class__ is mx.array and not (
                other.dtype in _KNOWABLE and holds(other.dtype, int(x), int(x))):
            return None
    return ea, eb


def inverted(x, out):
    """``out = ~x``: bool bounds turn over, an integer's become ``[-hi - 1, -lo - 1]``; returns ``out``."""
    e = _entry(x)
    if e is not None:
        lo, hi = (1 - e[2], 1 - e[1]) if out.dtype == mx.bool_ else (-e[2] - 1, -e[1] - 1)
        if holds(out.dtype, lo, hi):
            note(out, lo, hi, e[3])
    return out


_BITWISE = {"bitwise_and": int.__and__, "bitwise_or": int.__or__, "bitwise_xor": int.__xor__}


def combined(name: str, a, b, out):
    """``out = a op b`` (``name`` one of ``bitwise_and``/``or``/``xor``; ``a``, ``b`` arrays or Python ints
    and bools): pinned where both operands are; returns ``out``."""
    known = _intervals(a, b)
    if known is None:
        return out
    ea, eb = known
    if ea[0] != ea[1] or eb[0] != eb[1] or ea[0].__class__ is float or eb[0].__class__ is float:
        return out
    v = _BITWISE[name](int(ea[0]), int(eb[0]))
    if out.dtype in _KNOWABLE and holds(out.dtype, v, v):
        note(out, v, v, ea[2] or eb[2])
    return out


def compared(name: str, a, b, out):
    """``out = a op b`` (``name`` one of ``eq``/``ne``/``lt``/``le``/``gt``/``ge``), pinned to True or False
    where ``a``'s and ``b``'s intervals decide it for every element; returns ``out``."""
    known = _intervals(a, b)
    if known is None or known[0][0] > known[0][1] or known[1][0] > known[1][1]:  # unknown, or an empty operand
        return out
    (alo, ahi, ap), (blo, bhi, bp) = known
    if name == "eq" or name == "ne":
        same = True if alo == ahi == blo == bhi else (False if ahi < blo or bhi < alo else None)
        answer = same if same is None or name == "eq" else not same
    elif name == "lt" or name == "ge":
        answer = True if ahi < blo else (False if alo >= bhi else None)
        answer = answer if answer is None or name == "lt" else not answer
    else:  # le, gt
        answer = True if ahi <= blo else (False if alo > bhi else None)
        answer = answer if answer is None or name == "le" else not answer
    if answer is not None:
        note(out, int(answer), int(answer), ap or bp)
    return out
