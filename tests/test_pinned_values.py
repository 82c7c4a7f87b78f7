"""Host reads of values that known bounds pin down (MLX's ``_value_bounds.pinned``), against torch on CPU.

A decoding loop's stop check (transformers' ``bool(unfinished.max() == 0)`` over flags made by ``full`` from
Python bools, combined by ``~``, ``&`` and ``|``) gives torch's answers on every device; on MLX the answer is
pinned on the result, so reading it waits on nothing. Comparisons, bitwise ops and extremes of arrays with
known bounds (``arange``, constants, ``argmax``) give torch's values whether or not their intervals decide the
answer, in every integer dtype and bool."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import tdx
from conftest import check


def _stop_checks(m, device, batch: int, prompt: int, max_length: int) -> list:
    """transformers' greedy loop's stop checks (``MaxLengthCriteria`` in a ``StoppingCriteriaList``)."""
    kw = {} if device is None else {"device": device}
    unfinished = m.ones(batch, dtype=m.long, **kw)
    stops = []
    for length in range(prompt + 1, max_length + 2):
        is_done = m.full((batch,), False, dtype=m.bool, **kw)
        is_done = is_done | m.full((batch,), length >= max_length, dtype=m.bool, **kw)
        unfinished = unfinished & ~is_done
        stops.append(bool(unfinished.max() == 0))
    return stops


@pytest.mark.parametrize("batch", [1, 3])
def test_stop_checks_of_a_decoding_loop(device, batch):
    assert _stop_checks(tdx, device, batch, 4, 9) == _stop_checks(torch, None, batch, 4, 9)


def _pinned(t):
    """The value MLX's bounds pin on ``t`` (None: not pinned, or not an MLX tensor)."""
    if tdx.backends.get(str(t.device)).name != "mlx":
        return None
    from tdx.backends.mlx import _value_bounds

    return _value_bounds.pinned(t._n)


def test_stop_check_is_pinned_on_mlx(device):
    """On MLX the flag the loop reads is pinned: its read is answered on the host, waiting on nothing."""
    if tdx.backends.get(device).name != "mlx":
        pytest.skip("only MLX builds lazily: elsewhere a read of a computed flag waits on nothing anyway")
    unfinished = tdx.ones(2, dtype=tdx.long, device=device)
    is_done = tdx.full((2,), False, dtype=tdx.bool, device=device) | tdx.full((2,), True, dtype=tdx.bool,
                                                                              device=device)
    flag = (unfinished & ~is_done).max() == 0
    assert _pinned(flag) == 1 and bool(flag) is True and flag.item() is True
    assert _pinned(unfinished.max() == 0) == 0


def _operands(m, device, kind: str, dtype):
    """Two operands of ``dtype``: pinned constants, ``arange`` intervals, or an interval and a constant."""
    kw = {} if device is None else {"device": device}
    if kind == "constants":
        return m.full((3,), 2, dtype=dtype, **kw), m.full((3,), 5, dtype=dtype, **kw)
    if kind == "disjoint":
        return m.arange(0, 3, dtype=dtype, **kw), m.arange(4, 7, dtype=dtype, **kw)
    if kind == "overlapping":
        return m.arange(0, 3, dtype=dtype, **kw), m.arange(2, 5, dtype=dtype, **kw)
    return m.arange(1, 4, dtype=dtype, **kw), m.full((3,), 3, dtype=dtype, **kw)  # touching


@pytest.mark.parametrize("dtype", ["uint8", "int32", "int64"])
@pytest.mark.parametrize("kind", ["constants", "disjoint", "overlapping", "touching"])
@pytest.mark.parametrize("op", ["eq", "ne", "lt", "le", "gt", "ge"])
def test_comparisons_of_known_bounds(device, op, kind, dtype):
    def run(m, dev):
        a, b = _operands(m, dev, kind, getattr(m, dtype))
        return getattr(a, op)(b), getattr(b, op)(a), getattr(a, op)(3), getattr(a, op)(-1.5)

    check(lambda: run(tdx, device), lambda: run(torch, None))

    def reads(m, dev):  # one-element results of the intervals' ends, read on the host (pinned where decided)
        a, b = _operands(m, dev, kind, getattr(m, dtype))
        pairs = ((a.amax(), b.amin()), (a.amin(), b.amax()), (b.amax(), a.amin()), (a.amax(), 3), (a.amin(), 0))
        return [bool(getattr(x, op)(y)) for x, y in pairs]

    assert reads(tdx, device) == reads(torch, None)


@pytest.mark.parametrize("value", [0, 1, 3])
@pytest.mark.parametrize("op", ["eq", "ne", "lt", "le", "gt", "ge"])
def test_a_pinned_comparison_reads_as_torch(device, op, value):
    """One element, pinned or not: ``bool()``, ``item()`` and ``int()`` give torch's Python values and types."""
    def run(m, dev):
        kw = {} if dev is None else {"device": dev}
        x = getattr(m.full((1,), 1, dtype=m.long, **kw).max(), op)(value)
        y = m.arange(0, 3, **kw).amax() + value  # an interval moved by a count
        return bool(x), x.item(), int(x), y.item(), int(y), bool(y == 2 + value)

    got, want = run(tdx, device), run(torch, None)
    assert got == want and [type(v) for v in got] == [type(v) for v in want]


@pytest.mark.parametrize("dtype", ["bool", "uint8", "int32", "int64"])
@pytest.mark.parametrize("op", ["and", "or", "xor"])
def test_bitwise_of_pinned_operands(device, op, dtype):
    def run(m, dev):
        kw = {} if dev is None else {"device": dev}
        d = getattr(m, dtype)
        values = (True, False) if dtype == "bool" else (6, 3)
        a, b = m.full((2,), values[0], dtype=d, **kw), m.full((2,), values[1], dtype=d, **kw)
        fn = getattr(m, f"bitwise_{op}")
        mixed = m.ones(2, dtype=m.long, **kw)
        return fn(a, b), fn(b, a), ~a, ~fn(a, b), getattr(mixed, f"__{op}__")(~m.full((2,), dtype == "bool", **kw))

    check(lambda: run(tdx, device), lambda: run(torch, None))


@pytest.mark.parametrize("dtype", ["int8", "int64"])
def test_invert_of_an_interval(device, dtype):
    def run(m, dev):
        kw = {} if dev is None else {"device": dev}
        x = ~m.arange(-3, 4, dtype=getattr(m, dtype), **kw)
        return x, x.amax(), x.amin(), x.amax() == 2, x.amin() < -4, (x > -5).all()

    check(lambda: run(tdx, device), lambda: run(torch, None))


def test_extremes_keep_their_input_bounds(device):
    def run(m, dev):
        kw = {} if dev is None else {"device": dev}
        logits = m.tensor(np.arange(24, dtype=np.float32).reshape(2, 12) % 7, **kw)
        ids = m.argmax(logits, dim=-1)  # bounds [0, 11], values pending
        return ids.max(), ids.amin(), ids.max() < 12, ids.amax(dim=0, keepdim=True) >= 0, ids.max() == 11

    check(lambda: run(tdx, device), lambda: run(torch, None))


def test_in_place_flags_as_torch(device):
    """The loop written with in-place operators (``unfinished &= ~done``) gives torch's answers."""
    def run(m, dev):
        kw = {} if dev is None else {"device": dev}
        unfinished = m.ones(2, dtype=m.long, **kw)
        answers = []
        for done in (False, False, True, True):
            unfinished &= ~m.full((2,), done, dtype=m.bool, **kw)
            answers.append(bool(unfinished.max() == 0))
        return answers

    assert run(tdx, device) == run(torch, None)


@pytest.mark.parametrize("dtype,value,scalar", [("uint8", 44, 300), ("uint8", 44, -212), ("int8", 5, 261),
                                                ("int32", 1, 2 ** 40), ("bool", True, 2)])
@pytest.mark.parametrize("op", ["eq", "ne", "lt", "ge", "and", "or"])
def test_a_scalar_the_dtype_wraps_reads_as_torch(device, dtype, value, scalar, op):
    """A Python int outside the array's dtype is wrapped into it first (``uint8 == 300`` compares with 44), as
    torch does: the read answers as torch's, never from the raw value's interval."""
    def run(m, dev):
        kw = {} if dev is None else {"device": dev}
        x = m.full((1,), value, dtype=getattr(m, dtype), **kw).amax()
        out = getattr(x, f"__{op}__")(scalar)
        return out.item(), bool(out), str(out.dtype).rsplit(".", 1)[-1]

    assert run(tdx, device) == run(torch, None)
