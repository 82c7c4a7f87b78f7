"""Memory exchange between torch, MLX and NumPy: the zero-copy matrix, values, edges, errors.

Every pair the matrix calls zero-copy is proven here by a write through one side seen
on the other (pairs whose devices are absent are skipped with the matrix's reason).
Values are checked against torch on CPU, with an independent read of the MLX side.
"""

from __future__ import annotations

import array
import gc
import subprocess
import sys
import threading
import weakref

import numpy as np
import pytest
import torch

import tdx
from tdx import interop

mx = pytest.importorskip("mlx.core")

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
          "float64", "complex64"]
SHAPES = [(), (0,), (3, 0), (7,), (4, 6)]


def oracle(dtype: str, shape, seed: int = 0) -> torch.Tensor:
    """Deterministic torch CPU values of ``dtype``: the reference every test compares against."""
    g = torch.Generator().manual_seed(seed)
    if dtype == "bool":
        return torch.randint(0, 2, shape, generator=g).bool()
    if dtype in ("uint8", "int8", "int16", "int32", "int64"):
        lo = 0 if dtype == "uint8" else -100
        return torch.randint(lo, 100, shape, generator=g).to(getattr(torch, dtype))
    if dtype == "complex64":
        return torch.randn(shape, dtype=torch.complex64, generator=g)
    return (torch.randn(shape, generator=g) * 10).to(getattr(torch, dtype))


def mlx_equals(a, t: torch.Tensor) -> bool:
    """An MLX array equals a torch tensor, read through MLX's own conversion (not tdx's)."""
    mx.eval(a)
    if tuple(a.shape) != tuple(t.shape):
        return False
    if t.dtype == torch.bfloat16:
        return np.array_equal(np.array(mx.view(a, mx.int16)), t.view(torch.int16).numpy())
    return np.array_equal(np.array(a), t.numpy())


def addr(obj) -> int:
    """The data address of a tdx tensor, torch tensor, NumPy array or MLX array."""
    if isinstance(obj, tdx.Tensor):
        obj = obj.native
    if isinstance(obj, torch.Tensor):
        return obj.data_ptr()
    if isinstance(obj, mx.array):
        mx.eval(obj)
        obj = np.array(mx.view(obj, mx.uint16) if obj.dtype == mx.bfloat16 else obj, copy=False)
    return obj.__array_interface__["data"][0]


@pytest.fixture
def fast_fill(monkeypatch):
    """Route every non-empty host -> MLX copy through the fill path, recording the buffers."""
    seen = []
    advise = interop._advise_huge_pages

    def record(buf):
        seen.append(np.frombuffer(buf, np.uint8).ctypes.data)
        advise(buf)

    monkeypatch.setattr(interop, "_FAST_MIN_BYTES", 1)
    monkeypatch.setattr(interop, "_advise_huge_pages", record)
    return seen


# the matrix ------------------------------------------------------------------------------
PAIRS = [(s, t) for s in interop.ENDPOINTS for t in interop.ENDPOINTS if s != t]
DEVICE = {"torch:cpu": "cpu", "torch:cuda": "cuda", "torch:mps": "mps", "mlx:cpu": "mlx:cpu",
          "mlx:gpu": "mlx:gpu"}
MUTABLE = {"torch:cpu", "torch:cuda", "torch:mps", "numpy"}


def test_matrix_has_every_ordered_pair_with_a_reason():
    rows = interop.matrix()
    assert [(r.source, r.target) for r in rows] == PAIRS
    assert all(r.mode in ("zero-copy", "copy", "unavailable") and r.why for r in rows)
    table = interop.format_matrix(rows).splitlines()
    assert table[0].split()[:3] == ["source", "target", "mode"] and len(table) == len(rows) + 1
    assert any(r.mode == "zero-copy" for r in rows)


def _make(ep: str, t: torch.Tensor):
    return t.numpy().copy() if ep == "numpy" else tdx.as_tensor(t.clone()).to(DEVICE[ep])


def _move(x, ep: str):
    return np.from_dlpack(x) if ep == "numpy" else interop.from_dlpack(x, device=DEVICE[ep])


def _host(x) -> torch.Tensor:
    """Current values of a tdx tensor or NumPy array, as a fresh torch CPU tensor."""
    if isinstance(x, np.ndarray):
        return torch.from_numpy(x.copy())
    if x.device.type == "mlx":
        return torch.from_numpy(np.array(x.native))  # MLX's own conversion
    x.executor.synchronize()
    return x.native.detach().cpu().clone()


def _write(x, value: float) -> None:
    if isinstance(x, np.ndarray):
        x[...] = value
    else:
        x.native.fill_(value)
        x.executor.synchronize()


@pytest.mark.parametrize("source,target", PAIRS, ids=[f"{s}->{t}" for s, t in PAIRS])
def test_every_pair_keeps_its_matrix_promise(source, target):
    mode, why = interop.decide(source, target)
    if mode == "unavailable":
        pytest.skip(why)
    t = oracle("float32", (5, 3))
    x = _make(source, t)
    y = _move(x, target)
    assert torch.equal(_host(y), t), f"{source} -> {target} changed the values"
    if source.startswith("mlx") and target.startswith("mlx"):
        assert (y.native is x.native) == (mode == "zero-copy")
        return
    if source.startswith("mlx") and target == "numpy":  # a read-only view: compare addresses
        assert (addr(y) == addr(x)) == (mode == "zero-copy") and not y.flags.writeable
        return
    # a write through the mutable side must show on the other side exactly when memory is shared
    writer, reader = (x, y) if source in MUTABLE else (y, x)
    _write(writer, 7.0)
    seen = torch.equal(_host(reader), torch.full((5, 3), 7.0))
    assert seen == (mode == "zero-copy"), f"{source} -> {target}: matrix says {mode}, write seen={seen}"


def test_zero_copy_pairs_share_one_address():
    t = oracle("float32", (64,))
    m = tdx.as_tensor(t).to("mlx:cpu")
    assert addr(m.to("cpu")) == addr(m) == addr(np.from_dlpack(m)) == addr(torch.from_dlpack(m))
    x = tdx.as_tensor(t)
    assert addr(np.from_dlpack(x)) == addr(x) == t.data_ptr()
    a = t.numpy()
    assert addr(interop.from_dlpack(a)) == addr(a)


def _env(**kw):
    base = dict(platform="darwin", torch=(2, 12, 0), mlx=(0, 32, 4), mlx_gpu="metal", missing=())
    return interop.Env(**{**base, **kw})


def test_metal_pairs_share_on_recent_macos_stacks():
    env = _env()
    for s, t in [("torch:mps", "mlx:gpu"), ("mlx:gpu", "torch:mps"), ("torch:mps", "mlx:cpu"),
                 ("mlx:gpu", "torch:cpu"), ("mlx:gpu", "numpy"), ("mlx:cpu", "mlx:gpu")]:
        assert interop.decide(s, t, env)[0] == "zero-copy", (s, t)
    for s, t in [("torch:cpu", "mlx:gpu"), ("numpy", "mlx:gpu"), ("torch:mps", "torch:cpu"),
                 ("torch:mps", "numpy")]:
        assert interop.decide(s, t, env)[0] == "copy", (s, t)


@pytest.mark.parametrize("kw", [{"torch": (2, 11, 0)}, {"mlx": (0, 31, 1)}, {"platform": "linux"},
                                {"torch": None}])
def test_metal_pairs_copy_on_older_stacks(kw):
    mode, why = interop.decide("torch:mps", "mlx:gpu", _env(**kw))
    assert mode == "copy" and ("2.12" in why or "macOS" in why)


def test_mlx_cuda_has_no_exchange_with_torch_cuda():
    env = _env(platform="linux", mlx_gpu="cuda")
    mode, why = interop.decide("torch:cuda", "mlx:gpu", env)
    assert mode == "copy" and "no DLPack exchange" in why
    assert interop.decide("mlx:gpu", "torch:cuda", env)[0] == "copy"
    # MLX's CUDA build exports its arrays' buffers as host memory: NumPy views them (an H200 run saw the array's own
    # address, read-only); tdx's own move to torch copies
    assert interop.decide("mlx:gpu", "numpy", env)[0] == "zero-copy"
    assert interop.decide("mlx:gpu", "torch:cpu", env)[0] == "copy"
    assert interop.decide("mlx:cpu", "torch:cpu", _env(platform="linux", mlx_gpu=None))[0] == "zero-copy"


def test_unavailable_endpoints_name_the_reason_and_the_rule():
    env = _env(missing=(("torch:mps", "no driver"),))
    mode, why = interop.decide("torch:mps", "mlx:gpu", env)
    assert mode == "unavailable" and "torch:mps" in why and "no driver" in why and "zero-copy" in why
    with pytest.raises(tdx.TdxValueError, match="unknown endpoint"):
        interop.decide("jax", "numpy", env)


# values across the edges -------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
def test_round_trip_every_dtype_and_shape(dtype):
    for shape in SHAPES:
        t = oracle(dtype, shape)
        m = tdx.as_tensor(t).to("mlx:cpu")
        assert m.dtype is getattr(tdx, dtype if dtype != "bool" else "bool") and mlx_equals(m.native, t)
        back = m.to("cpu").native
        assert back.dtype == t.dtype and torch.equal(back, t), (dtype, shape)


@pytest.mark.parametrize("dtype", DTYPES)
def test_fill_path_every_dtype_and_layout(dtype, fast_fill):
    base = oracle(dtype, (6, 8))
    for src in (base, base.t(), base[:, ::3], base[2], base[0, 0], base[:1].expand(5, 8)):
        m = tdx.as_tensor(src).to("mlx:cpu")
        assert mlx_equals(m.native, src), (dtype, src.shape, src.stride())
        assert addr(m) == fast_fill[-1], "the fill path copied again after filling MLX's buffer"
        arr = src.numpy() if dtype != "bfloat16" else None
        if arr is not None:
            assert mlx_equals(interop.from_dlpack(arr, device="mlx:cpu").native, src)


def test_fill_path_at_real_size():
    t = torch.arange(9 << 20, dtype=torch.float32)  # 36 MiB: above the fill threshold
    m = tdx.as_tensor(t).to("mlx:cpu")
    assert mlx_equals(m.native, t)
    a = t.numpy()[::-1]
    assert mlx_equals(interop.from_dlpack(a, device="mlx:cpu").native, t.flip(0))


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "complex64", "bool"])
def test_fill_path_copies_and_later_source_writes_stay_out(dtype, fast_fill):
    """The threaded fill is a copy: writes to the source after ``.to("mlx:cpu")`` are not seen."""
    for transposed in (False, True):  # the byte copy split over threads, and torch's strided copy_
        src = oracle(dtype, (64, 33))
        src = src.t() if transposed else src
        expect = src.clone()
        m = tdx.as_tensor(src).to("mlx:cpu")
        assert addr(m) == fast_fill[-1] != addr(src)
        src.fill_(True if dtype == "bool" else 3)
        assert mlx_equals(m.native, expect) and not mlx_equals(m.native, src), (dtype, src.stride())


NUMPY_CASES = {
    "contiguous": lambda a: a,
    "transposed": lambda a: a.T,
    "strided": lambda a: a[:, ::2],
    "negative": lambda a: a[::-1, ::-2],
    "0-d": lambda a: a[1, 2],
    "0-size": lambda a: a[:0],
    "broadcast": lambda a: np.broadcast_to(a[:1], (3, 6)),
    "byteswapped": lambda a: a.astype(a.dtype.newbyteorder(">")) if a.dtype.itemsize > 1 else a,
}


@pytest.mark.parametrize("dtype", [d for d in DTYPES if d != "bfloat16"])
@pytest.mark.parametrize("case", list(NUMPY_CASES))
def test_numpy_sources(dtype, case):
    arr = NUMPY_CASES[case](oracle(dtype, (4, 6)).numpy())
    expect = torch.tensor(arr.astype(arr.dtype.newbyteorder("=")))  # torch's own copy
    x = interop.from_dlpack(arr)
    assert x.device.type == "cpu" and torch.equal(x.native, expect)
    shares = arr.flags.writeable and arr.dtype.isnative and all(s >= 0 for s in arr.strides)
    if arr.size:
        assert (addr(x) == addr(arr)) == shares, "shared exactly when torch can view it safely"
    assert mlx_equals(interop.from_dlpack(arr, device="mlx:cpu").native, expect)


def test_read_only_sources_are_copied_and_never_written():
    a = np.arange(6.0)
    a.flags.writeable = False
    x = interop.from_dlpack(a)
    assert addr(x) != addr(a) and torch.equal(x.native, torch.arange(6.0, dtype=torch.float64))
    x.native.add_(1)
    assert a[0] == 0.0
    with pytest.raises(interop.CopyRequiredError) as info:
        interop.from_dlpack(a, copy=False)
    assert isinstance(info.value, BufferError) and "read-only" in str(info.value)


def test_buffer_protocol_objects():
    b = bytearray(b"\x01\x02\x03")
    x = interop.from_dlpack(b)
    assert x.dtype is tdx.uint8 and torch.equal(x.native, torch.tensor([1, 2, 3], dtype=torch.uint8))
    b[0] = 9
    assert x.native[0].item() == 9, "a writable buffer is shared"
    y = interop.from_dlpack(b"\x05\x06")
    assert torch.equal(y.native, torch.tensor([5, 6], dtype=torch.uint8))
    f = interop.from_dlpack(array.array("f", [1.5, 2.5]), device="mlx:cpu")
    assert f.dtype is tdx.float32 and mlx_equals(f.native, torch.tensor([1.5, 2.5]))
    s = interop.from_dlpack(np.float32(2.5))
    assert s.shape == () and torch.equal(s.native, torch.tensor(2.5))


def test_adopt_casts_and_copies_on_request():
    a = np.arange(4, dtype=np.int32)
    native, ex = interop.adopt(a, tdx.backends.get("cpu"), tdx.float32)
    assert torch.equal(native, torch.arange(4, dtype=torch.float32))
    x = interop.from_dlpack(a, copy=True)
    assert addr(x) != addr(a) and torch.equal(x.native, torch.from_numpy(a))
    t = torch.arange(3.0)
    assert interop.from_dlpack(t).native.data_ptr() == t.data_ptr()
    assert interop.from_dlpack(t, copy=True).native.data_ptr() != t.data_ptr()
    assert interop.import_native(t, tdx.backends.get("cpu")) is t


def test_requires_grad_and_conjugate_sources():
    t = torch.randn(4, requires_grad=True)
    m = tdx.as_tensor(t).to("mlx:cpu")
    assert mlx_equals(m.native, t.detach())
    c = torch.randn(4, dtype=torch.complex64)
    assert mlx_equals(tdx.as_tensor(c.conj()).to("mlx:cpu").native, c.conj().resolve_conj())


# exports: torch / NumPy / MLX consume tdx tensors ----------------------------------------------
@pytest.mark.parametrize("where", ["cpu", "mlx:cpu"])
def test_foreign_consumers_accept_tdx_tensors(where):
    t = oracle("float32", (3, 4))
    x = tdx.as_tensor(t).to(where) * 2  # on MLX: still a lazy graph
    assert torch.equal(torch.from_dlpack(x), t * 2)
    assert np.array_equal(np.from_dlpack(x), (t * 2).numpy())
    assert mlx_equals(mx.from_dlpack(x), t * 2)
    assert tuple(x.__dlpack_device__()) == (1, 0)
    x2 = tdx.as_tensor(t).to(where) * 3
    assert torch.equal(torch.from_dlpack(interop.export_dlpack(x2, max_version=(1, 0))), t * 3)
    assert tuple(interop.export_device(x2)) == (1, 0)


def test_as_tensor_shares_numpy_memory():
    a = np.arange(6.0)
    x = tdx.as_tensor(a)
    assert addr(x) == addr(a) and torch.equal(x.native, torch.from_numpy(a))
    assert mlx_equals(tdx.asarray(a, device="mlx:cpu").native, torch.from_numpy(a))


# lifetimes -----------------------------------------------------------------------------------
def _churn():
    for _ in range(4):  # reuse freed memory, so a dangling view would see new values
        junk = [mx.full((4096,), 123.0) for _ in range(8)] + [torch.full((4096,), 123.0)]
        mx.eval(*junk[:-1])
    gc.collect()


def test_views_outlive_their_sources():
    t = torch.arange(4096, dtype=torch.float32)
    m = tdx.as_tensor(t).to("mlx:cpu")
    y, a = m.to("cpu"), np.from_dlpack(m)
    del m
    a2 = np.arange(4096, dtype=np.float32)
    z = interop.from_dlpack(a2)
    x = tdx.as_tensor(t.clone())
    v = np.from_dlpack(x)
    del a2, x
    gc.collect()
    _churn()
    for got in (y.native, torch.tensor(a), z.native, torch.tensor(v)):
        assert torch.equal(got, t)


def test_mlx_never_reuses_a_buffer_still_shared():
    src = mx.arange(4096, dtype=mx.float32) + 0  # a buffer MLX could donate to later work
    mx.eval(src)
    view = interop.from_dlpack(src).to("cpu").native
    doubled = src * 2
    del src
    mx.eval(doubled)
    assert addr(doubled) != view.data_ptr()
    assert torch.equal(view, torch.arange(4096, dtype=torch.float32))


HAND_OFFS = {"numpy": np.from_dlpack, "torch": torch.from_dlpack, "to cpu": lambda m: m.to("cpu").native}


@pytest.mark.parametrize("fill", [False, True], ids=["from_dlpack", "fill"])
@pytest.mark.parametrize("consumer", sorted(HAND_OFFS))
def test_a_fresh_move_to_mlx_is_handed_out_without_a_second_copy(device, consumer, fill, monkeypatch):
    """``x.to("mlx:cpu")`` then a hand-off to NumPy or torch is one copy: the consumer gets the buffer the
    move filled (nothing else reads it), with the values, the read-only rule and the writes torch's. tdx's own
    move to torch's cpu shares that buffer where the matrix says so (MLX memory is host memory), else copies."""
    if fill:
        monkeypatch.setattr(interop, "_FAST_MIN_BYTES", 1)
    want = oracle("float32", (64, 33))
    m = tdx.as_tensor(want.clone()).to(device).to("mlx:cpu")
    filled = addr(m)
    to_cpu_shares = interop.decide("mlx:cpu", "torch:cpu", interop._runtime_env())[0] == "zero-copy"  # the move's
    out = HAND_OFFS[consumer](m)
    if consumer == "to cpu" and not to_cpu_shares:
        assert addr(out) != filled and torch.equal(out, want)
        return
    assert addr(out) == filled, "the hand-off copied the fresh buffer a second time"
    if consumer == "numpy":
        assert not out.flags.writeable and torch.equal(torch.from_numpy(out.copy()), want)
        return
    assert torch.equal(out, want)
    out[0, 0] = 7.0  # torch's consumers share the buffer, as the matrix promises
    assert m[0, 0].item() == 7.0 and (m.to("cpu").native.data_ptr() == filled) == to_cpu_shares


READERS = {"lazy result": lambda x: x * 2, "sum": lambda x: x.sum(), "clone": lambda x: x.clone(),
           "copy": lambda x: x.to(x.device, copy=True), "cast": lambda x: x.int()}


@pytest.mark.parametrize("reader", sorted(READERS))
def test_a_hand_off_copies_where_an_earlier_result_still_reads_the_buffer(device, reader, monkeypatch):
    """Results computed from a fresh move before its hand-off keep their values when torch writes (as
    torch's earlier results do): where something still reads the buffer the hand-off copies it."""
    monkeypatch.setattr(interop, "_FAST_MIN_BYTES", 1)
    base = oracle("float32", (8, 5))
    t = base.clone()
    m = tdx.as_tensor(base.clone()).to(device).to("mlx:cpu")
    read = READERS[reader]
    want, got = read(t.to("cpu")), read(m)
    torch.from_dlpack(t).fill_(1.0)
    handed = torch.from_dlpack(m)
    handed.fill_(1.0)
    assert got.tolist() == want.tolist() and m.tolist() == t.tolist()


def _as_mlx_cuda(monkeypatch):
    """The runtime seen as MLX's CUDA build (its arrays in memory tdx does not treat as host memory), on the CPU
    build: tdx's moves to torch copy, while a DLPack consumer of a tensor still views MLX's export."""
    env = interop._runtime_env()
    monkeypatch.setitem(interop._RUNTIME, "env", interop.Env(env.platform, env.torch, env.mlx, "cuda"))


@pytest.mark.parametrize("reader", sorted(READERS))
def test_a_hand_off_on_mlx_cuda_copies_where_an_earlier_result_still_reads_the_buffer(reader, monkeypatch):
    _as_mlx_cuda(monkeypatch)
    test_a_hand_off_copies_where_an_earlier_result_still_reads_the_buffer("mlx:cpu", reader, monkeypatch)


@pytest.mark.parametrize("consumer", sorted(HAND_OFFS))
def test_a_fresh_move_on_mlx_cuda_is_handed_out_as_the_matrix_says(consumer, monkeypatch):
    _as_mlx_cuda(monkeypatch)
    test_a_fresh_move_to_mlx_is_handed_out_without_a_second_copy("mlx:cpu", consumer, False, monkeypatch)


@pytest.fixture
def readers(monkeypatch):
    """Weak references to every fill reader made, to check MLX let go of each."""
    alive = []

    class Tracked(interop._FillReader):
        def __init__(self, *a):
            super().__init__(*a)
            alive.append(weakref.ref(self))

    monkeypatch.setattr(interop, "_FillReader", Tracked)
    return alive


def test_fill_reader_is_released_before_returning(readers, fast_fill):
    for i in range(20):
        t = oracle("float32", (1000,), seed=i)
        assert mlx_equals(tdx.as_tensor(t).to("mlx:cpu").native, t)
        assert readers[-1]() is None, "MLX still holds the reader: a release could race shutdown"


def test_fill_errors_keep_their_type_and_leave_no_usable_view(readers):
    bufs = []

    def fill(buf):
        bufs.append(buf)
        raise KeyError("source vanished")

    with pytest.raises(KeyError, match="source vanished"):
        interop._fill_mlx((16,), mx.float32, 64, fill)
    with pytest.raises(ValueError):  # the memoryview over MLX's buffer was released
        bufs[0][0]
    assert readers[-1]() is None


def test_unexpected_reads_fall_back_to_a_plain_copy(monkeypatch, fast_fill, readers):
    header = interop._npy_header
    monkeypatch.setattr(interop, "_npy_header", lambda n: header(n + 8))  # MLX asks for more
    t = oracle("int32", (50,))
    assert mlx_equals(tdx.as_tensor(t).to("mlx:cpu").native, t)
    assert mlx_equals(interop.from_dlpack(t.numpy(), device="mlx:cpu").native, t)
    assert not fast_fill and readers and readers[-1]() is None


def test_round_trips_do_not_grow_resident_memory():
    if not sys.platform.startswith("linux"):
        pytest.skip("reads /proc/self/statm")

    def rss():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * 4096

    t = torch.randn(1 << 18)  # 1 MiB
    x = tdx.as_tensor(t)
    for _ in range(300):
        x = x.to("mlx:cpu").to("cpu")
    gc.collect()
    before = rss()
    for _ in range(10_000):
        x = x.to("mlx:cpu").to("cpu")
    gc.collect()
    grew = rss() - before
    assert torch.equal(x.native, t)
    assert grew < 10 << 20, f"resident memory grew {grew / 2**20:.1f} MiB over 10,000 round trips"


def test_concurrent_fills_stay_correct(fast_fill):
    out, errors = {}, []

    def work(i):
        try:
            t = oracle("float32", (300,), seed=i)
            out[i] = (t, tdx.as_tensor(t).to("mlx:cpu"))
        except Exception as err:  # noqa: BLE001 - reported by the assertion below
            errors.append(err)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(6)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors and all(mlx_equals(m.native, t) for t, m in out.values())


# bad input -----------------------------------------------------------------------------------
def test_objects_without_dlpack_or_buffer_are_rejected():
    for bad in (object(), "abc", [1, 2]):
        with pytest.raises(TypeError) as info:
            interop.from_dlpack(bad)
        assert isinstance(info.value, tdx.TdxError)
        assert "neither __dlpack__ nor the buffer protocol" in str(info.value)
        assert type(bad).__qualname__ in str(info.value)
    assert not interop.exchangeable([1, 2]) and interop.exchangeable(np.zeros(2))


def test_dtypes_the_target_lacks():
    with pytest.raises(tdx.DtypeError) as info:
        tdx.as_tensor(torch.ones(2, dtype=torch.complex128)).to("mlx:cpu")
    assert "complex128" in str(info.value) and "mlx:cpu" in str(info.value)
    with pytest.raises(TypeError, match="uint16"):
        interop.from_dlpack(np.ones(2, dtype=np.uint16))
    with pytest.raises(TypeError, match="uint16"):
        interop.from_dlpack(torch.ones(2, dtype=torch.uint16))

    class NoFloat64:
        class caps:  # noqa: N801 - stands in for Capabilities
            dtypes = frozenset({"float32"})
        device = tdx.device("mlx:gpu")

    with pytest.raises(tdx.DtypeError, match="mlx:gpu has no float64"):
        interop._check_dtype(tdx.float64, NoFloat64, "a float64 tensor")


def test_devices_no_executor_can_import():
    class Rocm:
        def __dlpack__(self, **kw):
            raise AssertionError("never asked for a capsule")

        def __dlpack_device__(self):
            return (10, 0)

    with pytest.raises(tdx.TdxError) as info:
        interop.from_dlpack(Rocm())
    assert isinstance(info.value, RuntimeError) and "device type 10" in str(info.value)
    assert "Rocm" in str(info.value)
    meta = interop.from_dlpack(torch.empty(2, device="meta"))  # tdx's meta device holds it, without data
    assert meta.device == tdx.device("meta") and tuple(meta.shape) == (2,)
    with pytest.raises(RuntimeError, match="strided"):
        interop.from_dlpack(torch.eye(2).to_sparse())


def test_copy_false_refuses_copies():
    with pytest.raises(BufferError) as info:
        interop.from_dlpack(np.ones(3, dtype=np.float32), device="mlx:cpu", copy=False)
    assert isinstance(info.value, tdx.TdxError) and "mlx:cpu" in str(info.value)
    m = tdx.as_tensor(torch.ones(3)).to("mlx:cpu")
    assert torch.equal(interop.from_dlpack(m, device="cpu", copy=False).native, torch.ones(3))
    with pytest.raises(interop.CopyRequiredError):
        interop.from_dlpack(tdx.as_tensor(torch.ones(3)), device="mlx:cpu", copy=False)


def test_import_stays_lazy_and_fills_survive_exit():
    code = ("import sys, tdx, tdx.interop\n"
            "assert 'torch' not in sys.modules and 'mlx.core' not in sys.modules\n"
            "import numpy as np\n"
            "tdx.interop._FAST_MIN_BYTES = 1\n"
            "x = tdx.interop.from_dlpack(np.arange(5.0), device='mlx:cpu')\n"
            "assert x.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
