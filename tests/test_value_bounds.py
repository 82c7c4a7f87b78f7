"""Index bounds checks that use value bounds known without reading the index (MLX's ``_value_bounds``),
against torch on CPU: a lookup whose index comes from ``argmax``, ``arange`` or host data, moved through views,
``cat`` and copies, gives torch's rows where every value is in range and torch's IndexError where one is not,
whatever the known bounds say; on MLX the check reads nothing where the known bounds fit. A case with a value
out of range is skipped where the kernels check indices on the device (cuda: an assert, not an error)."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest
import torch

import tdx
from conftest import check, skip_value_checked

VOCAB = 12


def out_of_range(device, fits: bool) -> None:
    """Skip a case whose index holds a value out of range on a device that checks it inside its kernels."""
    if not fits:
        skip_value_checked(device, "indices")


class NoRead:
    """NumPy's stand-in in the MLX indexing module: any use of it (reading an index's values) fails the test."""

    def __getattr__(self, name):
        raise AssertionError(f"the index was read (np.{name})")


def _logits(m, device, peak: int, width: int):
    """(1, 3, width) logits whose last row peaks at ``peak``."""
    arr = np.zeros((1, 3, width), np.float32)
    arr[0, :, 1] = 0.5
    arr[0, -1, peak] = 1.0
    return m.tensor(arr) if device is None else m.tensor(arr, device=device)


def _generation_step(m, device, peak: int, width: int, prompt=(5, 1, 7)):
    """transformers' greedy step: argmax of the last logits, appended to the ids, the last id sliced and
    copied, looked up in a (VOCAB, 4) table."""
    kw = {} if device is None else {"device": device}
    ids = m.tensor([list(prompt)], **kw)
    table = m.arange(VOCAB * 4, dtype=m.float32, **kw).reshape(VOCAB, 4)
    logits = _logits(m, device, peak, width)
    nxt = m.argmax(logits[:, -1].to(copy=True, dtype=m.float32), dim=-1)
    ids = m.cat([ids, nxt[:, None]], dim=-1)
    last = ids[:, -1:].clone(memory_format=m.contiguous_format)
    return m.nn.functional.embedding(last, table), m.nn.functional.embedding(ids, table)


@pytest.mark.parametrize("peak,width", [(3, VOCAB), (3, 40), (VOCAB - 1, VOCAB + 1), (VOCAB, VOCAB + 1), (30, 40)],
                         ids=["bounds fit", "bounds wider, value in range", "last row", "one past the end",
                              "value out of range"])
def test_embedding_of_argmax_chain(device, peak, width):
    out_of_range(device, peak < VOCAB)
    check(lambda: _generation_step(tdx, device, peak, width), lambda: _generation_step(torch, None, peak, width))


@pytest.mark.parametrize("host_id", [VOCAB - 1, VOCAB + 4], ids=["in range", "out of range"])
def test_cat_takes_every_input_bounds(device, host_id):
    """A host id beside an argmax in range: the union of the inputs' bounds is what the lookup checks (out of
    range: it does not fit)."""
    out_of_range(device, host_id < VOCAB)
    check(lambda: _generation_step(tdx, device, 3, VOCAB, prompt=(5, host_id, 7)),
          lambda: _generation_step(torch, None, 3, VOCAB, prompt=(5, host_id, 7)))


@pytest.mark.parametrize("op", ["index_select", "gather", "getitem", "scatter_add"])
@pytest.mark.parametrize("n", [5, 6], ids=["in range", "one past the end"])
def test_lookups_of_arange_and_argmax(device, op, n):
    out_of_range(device, n == 5)

    def run(m, dev):
        kw = {} if dev is None else {"device": dev}
        x = m.arange(30, dtype=m.float32, **kw).reshape(6, 5)[:, :5]
        idx = m.arange(n, **kw).flip(0)[:5] if op != "getitem" else m.arange(n, **kw)[-5:]
        hot = m.argmax(m.eye(n, **kw), dim=1)[-5:]  # [n-5 .. n-1]: known as [0, n-1]
        if op == "index_select":
            return x[:5].index_select(0, idx), x.index_select(0, hot)  # along dim 1 torch raises RuntimeError
        if op == "gather":
            return x.gather(1, idx.reshape(1, 5).expand(6, 5)), x.gather(1, hot.unsqueeze(0).expand(6, 5))
        if op == "getitem":
            return x[:, idx], x[hot]
        return (m.zeros(6, 5, **kw).scatter_add(1, idx.reshape(1, 5).expand(6, 5), x),
                m.zeros(6, 5, **kw).scatter_add(1, hot.unsqueeze(0).expand(6, 5), x))

    check(lambda: run(tdx, device), lambda: run(torch, None))


def test_known_bounds_read_nothing(device, monkeypatch):
    """On MLX a lookup whose known bounds fit neither reads the index nor waits on it."""
    if tdx.backends.get(device).name != "mlx":
        pytest.skip("torch checks indices inside its kernels: there is nothing to read")
    from tdx.backends.mlx import _indexing

    out_ref = _generation_step(torch, None, 3, VOCAB)[0]
    monkeypatch.setattr(_indexing, "np", NoRead())
    out = _generation_step(tdx, device, 3, VOCAB)[0]
    monkeypatch.undo()
    torch.testing.assert_close(torch.from_numpy(np.array(out.cpu().numpy())), out_ref)


def test_bounds_die_with_their_array():
    """An entry is dropped when its array is freed, and is never another array's (checked by identity)."""
    mx = pytest.importorskip("mlx.core")
    from tdx.backends.mlx import _value_bounds as vb

    a, b = mx.array([1, 2]), mx.array([3, 4])
    vb.note(a, 0, 9)
    assert vb.bounds(a) == (0, 9, True)
    key = id(a)
    vb.KNOWN[id(b)] = [weakref.ref(a), 0, 1, False]  # a stale entry: an address reused by another array
    assert vb.bounds(b) is None
    del vb.KNOWN[id(b)]
    del a
    gc.collect()
    assert key not in vb.KNOWN


def test_a_freed_array_leaves_a_newer_entry_at_its_address():
    """The entry dropped when an array is freed is that array's own: another array's entry made at the same
    address since (``id`` reused) keeps its facts."""
    mx = pytest.importorskip("mlx.core")
    from tdx.backends.mlx import _value_bounds as vb

    a, b = mx.array([1, 2]), mx.array([3, 4])
    vb.note(a, 0, 9)
    key = id(a)
    own = vb.KNOWN[key][0]  # a's reference, alive (its callback runs when a is freed)
    newer = [weakref.ref(b), 3, 4, False]  # as if the address now held another array's facts
    vb.KNOWN[key] = newer
    del a
    gc.collect()
    assert own() is None and vb.KNOWN.get(key) is newer
    del vb.KNOWN[key]


def test_lookup_of_argmax_under_vmap(device):
    """Under ``vmap`` (MLX's transform: its arrays cannot be evaluated) the known bounds still serve."""
    def run(m, dev):
        kw = {} if dev is None else {"device": dev}
        table = m.arange(15, dtype=m.float32, **kw).reshape(5, 3)
        logits = m.tensor(np.eye(4, 5, k=1, dtype=np.float32), **kw)
        return m.func.vmap(lambda row: m.nn.functional.embedding(m.argmax(row, -1, keepdim=True), table))(logits)

    check(lambda: run(tdx, device), lambda: run(torch, None))


@pytest.mark.parametrize("op", ["gather", "index_select", "embedding"])
@pytest.mark.parametrize("dtype,end", [("int8", 200), ("int16", 40000), ("uint8", 300), ("int8", 100)])
def test_arange_that_wraps_in_its_dtype_knows_no_bounds(device, op, dtype, end):
    """An integer ``arange`` whose values wrap in its dtype (int8 past 127) holds negative indices: the lookup
    raises torch's error, however the index is widened afterwards."""
    out_of_range(device, np.arange(end).astype(dtype).min() >= 0)

    def run(m, dev):
        kw = {} if dev is None else {"device": dev}
        idx = m.arange(0, end, dtype=getattr(m, dtype), **kw).long()
        table = m.arange(float(end), **kw)
        if op == "gather":
            return table.gather(0, idx)
        if op == "index_select":
            return table.index_select(0, idx)
        return m.nn.functional.embedding(idx, table.reshape(end, 1))

    check(lambda: run(tdx, device), lambda: run(torch, None))


def _static_cache(m, dev, start, counter: str, steps=4, size=8):
    """transformers' static KV cache: positions ``arange(n) + offset`` with the offset counted up in place
    (a host 0-d tensor or ``zeros``), each step's keys written by ``index_copy_`` (a prefill of 3, then one
    at a time); ``start`` sets the offset first (past the end: torch's IndexError)."""
    kw = {} if dev is None else {"device": dev}
    keys = m.zeros(1, 2, size, 4, **kw)
    offset = m.tensor(0, **kw) if counter == "host" else m.zeros((), dtype=m.long, **kw)
    offset.add_(start)
    for step, n in enumerate([3] + [1] * steps):
        position = m.arange(n, **kw) + offset
        offset.add_(n)
        new = m.arange(8 * n, dtype=m.float32, **kw).reshape(1, 2, n, 4) + 100 * step
        keys.index_copy_(2, position, new)
    offset.sub_(2)  # a crop: the next write lands two back
    keys.index_copy_(2, m.arange(1, **kw) + offset, m.full((1, 2, 1, 4), -1.0, **kw))
    return keys, offset


@pytest.mark.parametrize("counter", ["host", "zeros"])
@pytest.mark.parametrize("start", [0, 1, 2], ids=["from 0", "to the last slot", "one past the end"])
def test_static_cache_positions(device, counter, start):
    out_of_range(device, start < 2)
    check(lambda: _static_cache(tdx, device, start, counter), lambda: _static_cache(torch, None, start, counter))


@pytest.mark.parametrize("dtype,value,shift", [("int32", 2**31 - 1, 1), ("int8", 127, 1), ("int8", -128, -1),
                                               ("uint8", 0, -1)],
                         ids=["int32 past its max", "int8 past its max", "int8 below its min", "uint8 below zero"])
def test_counted_position_that_wraps_knows_no_bounds(device, dtype, value, shift):
    """A position counted past its dtype's range wraps (torch's arithmetic): the lookup reads it and raises
    torch's error, never trusting the interval sum."""
    wrapped = int((np.array([value], dtype) + np.array([shift]).astype(dtype))[0])  # torch's arithmetic, as NumPy's
    out_of_range(device, 0 <= wrapped < 300)

    def run(m, dev):
        kw = {} if dev is None else {"device": dev}
        pos = m.full((1,), value, dtype=getattr(m, dtype), **kw)
        pos.add_(shift)
        return m.arange(300.0, **kw).index_select(0, pos.long())  # an unwrapped sum would fit the table

    check(lambda: run(tdx, device), lambda: run(torch, None))


def test_counted_positions_read_nothing(device, monkeypatch):
    """On MLX a static cache's writes at counted positions neither read an index nor wait on one."""
    if tdx.backends.get(device).name != "mlx":
        pytest.skip("torch checks indices inside its kernels: there is nothing to read")
    from tdx.backends.mlx import _executor, _indexing

    def no_item(x):
        raise AssertionError("an index was read (item)")

    want = _static_cache(torch, None, 0, "zeros", steps=3)
    monkeypatch.setattr(_indexing, "np", NoRead())
    monkeypatch.setattr(_executor.MLXExecutor, "item", staticmethod(no_item))
    got = _static_cache(tdx, device, 0, "zeros", steps=3)
    monkeypatch.undo()
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g.cpu().numpy(), w.numpy())
