"""Regression tests for issue 14: exports never corrupt data, nothing kills the process, every
thread can use every tensor, and the quieter faults (integer ranges, shifts, typed errors).

Each test runs on every device against real torch on CPU (on the device itself where tdx runs torch's
kernels there and those differ: cuda's); cases that crashed the process
before run in a subprocess, so a crash fails one test instead of the run.
"""

from __future__ import annotations

import gc
import math
import os
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import torch

import tdx
from conftest import torch_twin

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _outcome(fn):
    """("ok", values) or ("raise", builtin class name) for ``fn()``; tdx errors must be TdxErrors."""
    try:
        out = fn()
    except (RuntimeError, TypeError, ValueError, IndexError, OverflowError) as err:
        return "raise", type(err)
    if hasattr(out, "numel") and out.numel() == 0:  # tolist() of a (2**62, 0) tensor would be 2**62 lists
        return "ok", ("empty", tuple(out.shape))
    return "ok", out.tolist() if hasattr(out, "tolist") else out


def _same(tdx_fn, torch_fn):
    """tdx's outcome is torch's: the same values, or an error of torch's builtin class that is a TdxError."""
    want_kind, want = _outcome(torch_fn)
    got_kind, got = _outcome(tdx_fn)
    assert got_kind == want_kind, (got_kind, got, want_kind, want)
    if want_kind == "raise":
        builtin = next(c for c in want.__mro__ if c.__module__ == "builtins")
        assert issubclass(got, tdx.TdxError) and issubclass(got, builtin), (got, want)
    else:
        assert got == want


# 1. no data corruption through zero-copy exports -------------------------------------------------
def test_writes_through_a_torch_hand_off_reach_neither_clones_nor_earlier_results(device):
    x = tdx.arange(3., device=device)
    c, s, copied = x.clone(), x.sum(), x.to(device, copy=True)
    x.to("cpu").add_(100)
    assert c.tolist() == [0.0, 1.0, 2.0] and s.item() == 3.0 and copied.tolist() == [0.0, 1.0, 2.0]
    kind = tdx.device(device).type
    endpoint = f"{tdx.backends.get(device).name}:{kind}" if kind != "mlx" else device
    shared = tdx.interop.decide(endpoint, "torch:cpu")[0] == "zero-copy"  # cuda memory is copied to the host
    # the hand-off itself shares x's memory where the matrix says so
    assert x.tolist() == ([100.0, 101.0, 102.0] if shared else [0.0, 1.0, 2.0])


def test_dlpack_hand_off_to_torch_keeps_earlier_results(device):
    x = tdx.arange(4., device=device) * 2
    s = x.sum()
    t = torch.from_dlpack(x)
    t.fill_(1)
    assert s.item() == 12.0 and x.tolist() == [1.0] * 4


def test_numpy_views_of_mlx_are_read_only():
    x = tdx.arange(3., device="mlx:cpu")
    c, s = x.clone(), x.sum()
    for view in (x.numpy(), np.asarray(x), np.from_dlpack(x)):
        assert not view.flags.writeable
        with pytest.raises(ValueError):
            view[:] = 0
    copy = np.array(x)  # NumPy's copy is the caller's
    copy[:] = 5
    assert c.tolist() == [0.0, 1.0, 2.0] and s.item() == 3.0 and x.tolist() == [0.0, 1.0, 2.0]


def test_clone_after_a_hand_off_is_independent():
    x = tdx.arange(3., device="mlx:cpu")
    view = x.to("cpu")
    c = x.clone()
    view.add_(1)
    assert c.tolist() == [0.0, 1.0, 2.0] and x.tolist() == [1.0, 2.0, 3.0]


# 2. nothing kills the process ---------------------------------------------------------------------
# (tdx code on device D, torch's on D's torch twin T, or None: an allocation no device holds, 4 TB)
_CRASHERS = [
    ("tdx.tensor([-2**63, 7], device=D) // -1", "torch.tensor([-2**63, 7], device=T) // -1"),
    ("tdx.tensor([-2**31], dtype=tdx.int32, device=D) % -1",
     "torch.tensor([-2**31], dtype=torch.int32, device=T) % -1"),
    ("tdx.tensor([-2**63], device=D).remainder(-1)", "torch.tensor([-2**63], device=T).remainder(-1)"),
    ("tdx.tensor([-2**63], device=D).fmod(-1)", "torch.tensor([-2**63], device=T).fmod(-1)"),
    ("tdx.tensor([-128], dtype=tdx.int8, device=D).floor_divide(-1)",
     "torch.tensor([-128], dtype=torch.int8, device=T).floor_divide(-1)"),
    ("tdx.empty(10**6, 10**6, device=D).sum()", None),
    ("tdx.ones(2**40, device=D)", None),
    # results far larger than their operands (issue 39), sized to fail on any machine
    ("(tdx.arange(2**20, device=D)[:, None] - tdx.arange(2**20, device=D)[None, :]).sum()", None),
    ("(tdx.arange(2.**20, device=D)[:, None] * tdx.arange(2.**20, device=D)[None, :]).sum()", None),
    ("tdx.sub(tdx.zeros(2**20, 1, device=D), tdx.zeros(1, 2**20, device=D)).sum()", None),
    ("tdx.zeros(2**20, 1, device=D) @ tdx.zeros(1, 2**20, device=D)", None),
    ("tdx.outer(tdx.zeros(2**20, device=D), tdx.zeros(2**20, device=D))", None),
    ("tdx.where(tdx.ones(2**20, 1, device=D) > 0, tdx.zeros(1, 2**20, device=D), 1.0).sum()", None),
    ("tdx.tril_indices(2**20, 2**20, device=D)", None),
    ("tdx.nn.functional.interpolate(tdx.ones(1, 1, 4, device=D), scale_factor=1e12)", None),
    ("tdx.nn.functional.interpolate(tdx.ones(1, 1, 4, 4, device=D), scale_factor=1e6, mode='bilinear')", None),
    ("tdx.nn.functional.unfold(tdx.ones(1, 1, 4, 4, device=D), 1, padding=2**20)", None),
]
# what torch says when an allocation fails, by the device whose words tdx gives: the host's (cpu and MLX, whose
# allocation check words it as torch's CPU does), an accelerator's (torch.OutOfMemoryError)
_NO_MEMORY = {"cpu": "can't allocate memory"}


def run_isolated(device: str, cases) -> list:
    """Run each ``(code, oracle)`` case in one child interpreter: ``[(got, want)]`` per case.

    ``got`` is the value list or ``("raise", is RuntimeError, message)`` for a TdxError; a
    case that kills the child fails the test, naming the case.
    """
    script = f"""
import sys, tdx, torch
D = {device!r}
T = {torch_twin(device)!r}
for code, oracle in {list(cases)!r}:
    print("START", code, flush=True)
    try:
        got = eval(code).tolist()
    except tdx.TdxError as err:
        got = ('raise', isinstance(err, RuntimeError), str(err))
    want = None if oracle is None else eval(oracle).tolist()
    print("RESULT", repr((got, want)), flush=True)
"""
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, env=env)
    lines = proc.stdout.splitlines()
    started = [ln[6:] for ln in lines if ln.startswith("START ")]
    assert proc.returncode == 0, f"process died ({proc.returncode}) in {started[-1:]}: {proc.stderr[-2000:]}"
    return [eval(ln[7:]) for ln in lines if ln.startswith("RESULT ")]


def test_crashers_end_in_torchs_result_or_error(device):
    for (code, _), (got, want) in zip(_CRASHERS, run_isolated(device, _CRASHERS)):
        if want is None:
            words = _NO_MEMORY.get(torch_twin(device), "out of memory")
            assert got[0] == "raise" and got[1] and words in got[2], (code, got)
        else:
            assert got == want, code


# sizes a caller asks for outright (issue 39): padding, folding, convolution padding, repeats. Each is written
# once for both libraries (L: tdx or torch, D: the device); torch refuses each at once with a RuntimeError (its
# allocator's "can't allocate memory", a size-calculation overflow, or a padding check). F.fold with padding=2**40
# is not here: torch's own kernel runs for minutes before its error
_TOO_LARGE = [
    "F.pad(L.ones(1, 1, 4, device=D), (2**40, 0))",
    "F.pad(L.ones(1, 1, 4, device=D), (0, 2**42))",
    "F.pad(L.ones(1, 1, 4, 4, device=D), (0, 2**31, 0, 2**31))",
    "F.pad(L.ones(4, device=D), (2**62, 2**62))",
    *[f"F.pad(L.ones(1, 1, 4, device=D), {amounts}, mode={mode!r})"
      for mode in ("reflect", "replicate", "circular") for amounts in ("(2**40, 0)", "(0, 2**42)")],
    *[f"F.pad(L.ones(1, 1, 4, 4, device=D), (0, 2**31, 0, 2**31), mode={mode!r})"
      for mode in ("reflect", "replicate", "circular")],
    "F.pad(L.ones(1, 1, 2, 2, 2, device=D), (2**30, 2**30, 2**30, 2**30, 0, 0), mode='replicate')",
    "F.fold(L.ones(1, 1, 1, device=D), (2**40, 2**40), 1)",
    "F.conv1d(L.ones(1, 1, 4, device=D), L.ones(1, 1, 1, device=D), padding=2**40)",
    "F.conv2d(L.ones(1, 1, 4, 4, device=D), L.ones(1, 1, 1, 1, device=D), padding=2**20)",
    "F.conv2d(L.ones(1, 1, 4, 4, dtype=L.float64, device=D), L.ones(1, 1, 1, 1, dtype=L.float64, device=D), "
    "padding=2**20)",
    "L.ones(4, device=D).repeat(2**40)",
    "L.ones(4, device=D).repeat(2**31, 2**31)",
    "L.ones(4, device=D).tile(2**40)",
    "L.ones(2, 2, device=D).tile(2**20, 2**20)",
    "L.ones(4, device=D).repeat_interleave(2**40)",
    "L.ones(2, device=D).repeat_interleave(L.tensor([2**40, 1], device=D))",
    "L.ones(2, 3, device=D).repeat_interleave(2**40, dim=1)",
    "L.ones(1, device=D).expand(2**40, 2**40).contiguous()",
]


def test_absurd_sizes_are_refused_at_once_as_torch_refuses_them(device):
    """Each case raises torch's class (RuntimeError, as a TdxError) in a child process that neither dies, hangs
    nor grows by gigabytes: before the size checks a replicate pad of 2**40 built its index list for minutes, a
    convolution padded by 2**20 returned a 17 TB lazy result on MLX and repeat_interleave ran out of memory in
    NumPy."""
    script = f"""
import resource, signal, sys, time, torch, tdx
import tdx.nn.functional

def hung(*_):
    raise SystemExit("hung")

signal.signal(signal.SIGALRM, hung)
for code in {_TOO_LARGE!r}:
    print("START", code, flush=True)
    outcome = []
    for L, D in ((torch, {torch_twin(device)!r}), (tdx, {device!r})):
        F = L.nn.functional
        before, start = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, time.perf_counter()
        signal.alarm(30)
        try:
            eval(code)
            kind = None
        except Exception as err:
            kind = [c.__name__ for c in type(err).__mro__ if c.__module__ == "builtins"][0], isinstance(err, tdx.TdxError)
        signal.alarm(0)
        grew = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) >> 10
        outcome.append((kind, round(time.perf_counter() - start, 1), grew))
    print("RESULT", repr((code, outcome)), flush=True)
"""
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600, env=env)
    lines = proc.stdout.splitlines()
    started = [ln[6:] for ln in lines if ln.startswith("START ")]
    assert proc.returncode == 0, f"process died ({proc.returncode}) in {started[-1:]}: {proc.stderr[-2000:]}"
    results = [eval(ln[7:]) for ln in lines if ln.startswith("RESULT ")]
    assert [r[0] for r in results] == _TOO_LARGE
    for code, ((want, _, _), (got, seconds, grew_mb)) in results:
        assert want is not None and want[0] == "RuntimeError", (code, want)
        assert got == ("RuntimeError", True), (code, got)  # torch's class, as a TdxError
        assert seconds < 10 and grew_mb < 500, (code, seconds, grew_mb)  # refused before any work


@pytest.mark.parametrize("a,b", [([5, -5], 0), ([5], [0]), ([0, 3], [1, 0])])
@pytest.mark.parametrize("op", ["floor_divide", "remainder", "fmod"])
def test_integer_division_by_zero_raises_as_torch(device, op, a, b):
    """torch on the host raises ZeroDivisionError; torch's cuda kernels check nothing and give their
    hardware's quotient, which tdx there, running those kernels, gives too."""
    twin = torch_twin(device)
    _same(lambda: getattr(tdx.tensor(a, device=device), op)(tdx.tensor(b, device=device) if isinstance(b, list)
                                                               else b),
          lambda: getattr(torch.tensor(a, device=twin), op)(torch.tensor(b, device=twin) if isinstance(b, list)
                                                             else b))


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64", "uint8"])
def test_integer_division_matches_torch_everywhere_else(device, dtype):
    info = np.iinfo(dtype)
    vals = [info.min, info.min + 1, -7, -1, 0, 1, 7, info.max]
    divs = [d for d in (-3, -1, 1, 2, 5, info.max) if info.min <= d]
    a = torch.tensor(vals, dtype=getattr(torch, dtype))
    for d in divs:
        b = torch.full_like(a, d)
        x, y = tdx.tensor(a.tolist(), dtype=getattr(tdx, dtype), device=device), tdx.tensor(
            b.tolist(), dtype=getattr(tdx, dtype), device=device)
        assert (x // y).tolist() == (a // b).tolist()
        assert (x % y).tolist() == (a % b).tolist()
        assert x.fmod(y).tolist() == a.fmod(b).tolist()


# 3. threads -----------------------------------------------------------------------------------------
def test_tensor_made_in_a_thread_reads_in_another(device):
    out = {}
    t = threading.Thread(target=lambda: out.update(x=tdx.ones(3, device=device) + 1))
    t.start()
    t.join()
    assert out["x"].tolist() == [2.0] * 3 and "2." in repr(out["x"])
    lazy = tdx.arange(4., device=device) * 3  # made here, read there
    t = threading.Thread(target=lambda: out.update(y=(lazy + 1).sum().item()))
    t.start()
    t.join()
    assert out["y"] == 22.0


def test_thread_pool_results_and_gradients(device):
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda i: tdx.full((2,), float(i), device=device) * 2, range(16)))
    assert [g.tolist() for g in got] == [[2.0 * i] * 2 for i in range(16)]
    w = tdx.ones(3, device=device, requires_grad=True)
    ref = torch.ones(3, requires_grad=True)

    def step():
        (w * tdx.arange(3., device=device)).sum().backward()

    with ThreadPoolExecutor(2) as pool:
        pool.submit(step).result()
    (ref * torch.arange(3.)).sum().backward()
    assert w.grad.tolist() == ref.grad.tolist()
    assert (w.grad * 2).tolist() == (ref.grad * 2).tolist()  # usable again, not only once


def test_concurrent_threads_compute_correctly(device):
    def work(i):
        a = tdx.full((64, 64), float(i), device=device)
        return float((a @ a).sum().item())

    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(work, range(1, 25)))
    assert got == [64.0 ** 3 * i * i for i in range(1, 25)]


def test_set_default_device_is_per_thread(device):
    out = {}
    tdx.set_default_device(device)
    try:
        t = threading.Thread(target=lambda: out.update(d=tdx.get_default_device(), x=tdx.ones(1).device))
        t.start()
        t.join()
        assert tdx.ones(1).device == tdx.device(device)
    finally:
        tdx.set_default_device(None)
    assert out["d"] == tdx.get_default_device() and out["x"] == tdx.get_default_device()


# 4. quieter faults ------------------------------------------------------------------------------------
_QUIET = [
    (lambda D: tdx.tensor([2**40], dtype=tdx.int32, device=D), lambda: torch.tensor([2**40], dtype=torch.int32)),
    (lambda D: tdx.tensor([300, 1], dtype=tdx.uint8, device=D), lambda: torch.tensor([300, 1], dtype=torch.uint8)),
    (lambda D: tdx.full((2,), math.nan, dtype=tdx.int64, device=D),
     lambda: torch.full((2,), math.nan, dtype=torch.int64)),
    (lambda D: tdx.full((2,), 300, dtype=tdx.uint8, device=D), lambda: torch.full((2,), 300, dtype=torch.uint8)),
    (lambda D: tdx.full((2,), 2.7, dtype=tdx.int32, device=D), lambda: torch.full((2,), 2.7, dtype=torch.int32)),
    (lambda D: tdx.full((2,), 2**70, device=D), lambda: torch.full((2,), 2**70)),
    (lambda D: tdx.tensor([1, 2], device=D) << 70, lambda: torch.tensor([1, 2]) << 70),
    (lambda D: tdx.tensor([-1, 1], device=D) << -1, lambda: torch.tensor([-1, 1]) << -1),
    (lambda D: tdx.tensor([-8, 8], dtype=tdx.int8, device=D) >> 9, lambda: torch.tensor([-8, 8], dtype=torch.int8) >> 9),
    (lambda D: tdx.tensor([3], dtype=tdx.int8, device=D) << 7, lambda: torch.tensor([3], dtype=torch.int8) << 7),
    (lambda D: tdx.tensor([-8, 8], device=D) >> 64, lambda: torch.tensor([-8, 8]) >> 64),
    (lambda D: tdx.ones(2**63, device=D), lambda: torch.ones(2**63)),
    (lambda D: tdx.zeros(-1, device=D), lambda: torch.zeros(-1)),
    (lambda D: tdx.tensor([1], device=D).repeat(2**40, 2**40), lambda: torch.tensor([1]).repeat(2**40, 2**40)),
    (lambda D: tdx.arange(0, math.inf, device=D), lambda: torch.arange(0, math.inf)),
    (lambda D: tdx.tensor([2**63], device=D), lambda: torch.tensor([2**63])),
    # a NumPy array whose strides are not whole elements (a record field): torch's ValueError, never bad_cast
    (lambda D: tdx.tensor(_record()["a"], device=D), lambda: torch.tensor(_record()["a"])),
    (lambda D: tdx.as_tensor(_record()["a"], device=D), lambda: torch.as_tensor(_record()["a"])),
    (lambda D: tdx.asarray(_record()["a"], device=D), lambda: torch.asarray(_record()["a"])),
    (lambda D: tdx.from_numpy(_record()["a"]), lambda: torch.from_numpy(_record()["a"])),
    (lambda D: tdx.tensor(_record()["a"].copy(), device=D), lambda: torch.tensor(_record()["a"].copy())),
    (lambda D: tdx.tensor(_record()["b"], device=D), lambda: torch.tensor(_record()["b"])),
]


def _record():
    rec = np.zeros(3, dtype=[("a", "<i4"), ("b", "u1")])
    rec["a"], rec["b"] = [1, -2, 3], [4, 5, 6]
    return rec


@pytest.mark.parametrize("case", range(len(_QUIET)))
def test_quieter_faults_match_torch(device, case):
    mine, theirs = _QUIET[case]
    _same(lambda: mine(device), theirs)


@pytest.mark.float64
def test_numpy_float64_scalar_keeps_its_dtype(device):
    for value in (np.float64(3.0), np.float32(2.0), np.int16(4)):
        assert tdx.tensor(value, device=device).dtype.name == str(torch.tensor(value).dtype).split(".")[1]


# 5. Ctrl-C during a write through views: all or nothing -------------------------------------------------
# A SIGINT handler raises KeyboardInterrupt only between two bytecodes of Python code. Tracing opcodes
# puts the interrupt at such points deterministically: the state of the family observed at every
# opcode of the write (one traced run) is the state an interrupt there would leave, and real
# interrupts raised at a fixed grid of opcodes (every one on cpu) check the unwinding paths too.
def _family(lib, device=None, grad=False):
    """A leaf and a root with five views; with ``grad`` the root is a non-leaf of a leaf that requires grad."""
    leaf = lib.arange(12., **({} if device is None else {"device": device}), requires_grad=grad)
    x = leaf * 1 if grad else leaf
    return leaf, [x, x[2:9], x.view(3, 4), x.view(3, 4).t(), x[::3], x.view(3, 4)[1]]


_WRITES = [
    ("add_ through a slice", lambda vs: vs[1].add_(100)),
    ("setitem through a transpose", lambda vs: vs[3].__setitem__((slice(1, 3), 0), -7.)),
    ("copy_ into a strided view", lambda vs: vs[4].copy_(vs[5][:4] * 10)),
]


def _traced(fn, on_opcode) -> int:
    """Run ``fn()`` calling ``on_opcode(n, frame)`` before its ``n``-th bytecode; the count of bytecodes it ran."""
    count = [0]

    def tracer(frame, event, arg):
        frame.f_trace_opcodes = True
        if event == "opcode":
            count[0] += 1
            on_opcode(count[0], frame)
        return tracer

    old = sys.gettrace()
    sys.settrace(tracer)
    try:
        fn()
    finally:
        sys.settrace(old)
    return count[0]


def _state(views):
    """What a write may change: each tensor's array and autograd record (by identity)."""
    return tuple(getattr(v, a, None) for v in views for a in ("_n", "_ag"))


def _interrupt(write, views, when) -> None:
    """Run ``write(views)``, raising KeyboardInterrupt before the first bytecode where ``when(n, frame)``."""
    def hit(n, frame):
        if when(n, frame):
            raise KeyboardInterrupt

    try:
        _traced(lambda: write(views), hit)
    except KeyboardInterrupt:
        pass
    # CPython delivers a signal only where the interpreter checks for one (a call, a backward jump), never
    # between a ``with`` body's last bytecode and the call of its ``__exit__``; the tracer reaches those points
    # too, where the write lock's ``__exit__`` never runs. A real Ctrl-C cannot leave it held: release it here
    # (it is reentrant, so this thread would not notice, but the next thread that writes would wait forever)
    from tdx._tensor import views as tdx_views

    while tdx_views.WRITE_LOCK._is_owned():
        tdx_views.WRITE_LOCK.release()


def _around_commit():
    """Two interrupt points: the first bytecode of the commit step (views.publish), and the first after it."""
    from tdx._tensor import views as tdx_views

    code = tdx_views.publish.__code__
    inside = {"entered": False}

    def at_start(n, frame):
        return frame.f_code is code

    def just_after(n, frame):
        f = frame
        while f is not None and f.f_code is not code:
            f = f.f_back
        if f is not None:  # publish (or a comprehension inside it) is running
            inside["entered"] = True
            return False
        return inside["entered"]

    return at_start, just_after


@pytest.mark.parametrize("grad", [False, True])
@pytest.mark.parametrize("case", range(len(_WRITES)))
def test_interrupted_write_through_views_is_all_or_nothing(device, case, grad):
    with tdx.enable_grad(), torch.enable_grad():  # whatever grad mode an earlier test left behind
        _interrupted_write_check(device, _WRITES[case][1], grad)


def _interrupted_write_check(device, write, grad):
    gc.collect()
    _, ref = _family(torch, grad=grad)
    before = [v.tolist() for v in ref]
    with torch.enable_grad() if grad else torch.no_grad():
        write(ref)
    after = [v.tolist() for v in ref]
    assert before != after
    # every opcode: the family's state is the old one or the new one, never a mix
    _traced(lambda: write(_family(tdx, device, grad)[1]), lambda n, frame: None)  # lazy imports and caches
    _, views = _family(tdx, device, grad)
    first = _state(views)
    seen = []
    total = _traced(lambda: write(views), lambda n, frame: seen.append(_state(views)))
    last = _state(views)
    mixed = [n for n, st in enumerate(seen, 1)
             if not all(a is b for a, b in zip(st, first)) and not all(a is b for a, b in zip(st, last))]
    assert not mixed, f"a mixed state after opcodes {mixed[:5]} of {total}"
    assert [v.tolist() for v in views] == after
    # real interrupts: at every opcode on cpu; on MLX at 40 spread over the write and around the commit
    immutable = not views[0]._ex.mutable  # MLX: the write commits in views.publish
    whens = [lambda n, frame, k=k: n == k for k in
             (range(1, total + 2) if total <= 1000 else sorted({1 + (total * i) // 40 for i in range(41)}))]
    if immutable:
        whens += list(_around_commit())
    outcomes = []
    for k, when in enumerate(whens):
        leaf, views = _family(tdx, device, grad)
        _interrupt(write, views, when)
        probe = tdx.ones(1, device=device, requires_grad=True) * 2  # recording resumes after any interrupt
        assert probe.grad_fn is not None, (k, total, "an interrupt left the tape's recording off")
        state = [v.tolist() for v in views]
        assert state in (before, after), (k, total, state)
        outcomes.append(state == after)
        if grad and k in (0, len(whens) - 1, len(whens) - 2, len(whens) // 2):  # the history matches the values
            tleaf, tviews = _family(torch, grad=True)
            if state == after:
                write(tviews)
            sum((v * (i + 1)).sum() for i, v in enumerate(tviews)).backward()
            sum((v * (i + 1)).sum() for i, v in enumerate(views)).backward()
            assert leaf.grad.tolist() == tleaf.grad.tolist(), k
    assert outcomes[0] is False and True in outcomes  # interrupts landed both before and after the commit
    if immutable:
        assert outcomes[-2:] == [False, True]


# 6. self-overlapping writes: torch refuses a partial overlap (assert_no_partial_overlap) -----------------
_OVERLAPS = {
    "x[1:].copy_(x[:-1])": lambda x: x[1:].copy_(x[:-1]),
    "x[:-1].copy_(x[1:])": lambda x: x[:-1].copy_(x[1:]),
    "x[1:4].copy_(x[2:5])": lambda x: x[1:4].copy_(x[2:5]),
    "x[1:] = x[:-1]": lambda x: x.__setitem__(slice(1, None), x[:-1]),
    "x[1:].add_(x[:-1])": lambda x: x[1:].add_(x[:-1]),
    "x[1:] += x[:-1]": lambda x: x[1:].__iadd__(x[:-1]),
    "x[1:].mul_(x[:-1])": lambda x: x[1:].mul_(x[:-1]),
    "transpose onto itself": lambda x: x.view(3, 2).copy_(x.view(2, 3).t()),
    "x.copy_(x) (full overlap)": lambda x: x.copy_(x),
    "x[:] = x": lambda x: x.__setitem__(slice(None), x),
    "x[:3].copy_(x[3:]) (disjoint)": lambda x: x[:3].copy_(x[3:]),
    "strided, not dense": lambda x: x[::2].copy_(x[1::2]),
    "x[2:4] = x[0:2]": lambda x: x.__setitem__(slice(2, 4), x[0:2]),
    "x[1:].copy_(x[:-1].clone())": lambda x: x[1:].copy_(x[:-1].clone()),
    "out of place: x[1:] + x[:-1]": lambda x: x[:-1].add(x[1:] + x[:-1]),
    "out of place: m @ m.T": lambda x: x.view(2, 3) @ x.view(2, 3).T,
    "out of place: m * m.T.T": lambda x: x.view(2, 3) * x.view(3, 2).T,
}


@pytest.mark.parametrize("grad", [False, True])
@pytest.mark.parametrize("case", list(_OVERLAPS))
def test_self_overlapping_writes_as_torch(device, case, grad):
    def run(lib, **kw):
        leaf = lib.arange(6., requires_grad=grad, **kw)
        x = leaf * 1 if grad else leaf
        _OVERLAPS[case](x)
        return x

    _same(lambda: run(tdx, device=device), lambda: run(torch))


# 7. the fuzz suite's former skips: bool shifts, bitwise ops on floats (empty too), factories with no size
_DTYPE_REFUSALS = {
    "bool << bool": lambda L, kw: L.tensor([True, False], **kw) << L.tensor([True, True], **kw),
    "bool >> bool": lambda L, kw: L.tensor([True, False], **kw).__rshift__(True),
    "bitwise_left_shift(bool, bool)": lambda L, kw: L.bitwise_left_shift(L.tensor([True], **kw), L.tensor([True], **kw)),
    "empty bool << empty bool": lambda L, kw: L.tensor([], dtype=L.bool, **kw) << L.tensor([], dtype=L.bool, **kw),
    "bool << int": lambda L, kw: L.tensor([True, False], **kw) << L.tensor([1, 1], **kw),
    "bool << 1": lambda L, kw: L.tensor([True, False], **kw) << 1,
    "int >> bool": lambda L, kw: L.tensor([4, 2], **kw) >> L.tensor([True, False], **kw),
    "empty float & float": lambda L, kw: L.tensor([], **kw).bitwise_and(L.tensor([], **kw)),
    "empty float & int": lambda L, kw: L.tensor([], **kw) & L.tensor([1], **kw),
    "empty (2, 0) float >> int": lambda L, kw: L.zeros(2, 0, **kw) >> L.tensor([[1]], **kw),
    "empty int << empty float": lambda L, kw: L.tensor([], dtype=L.int64, **kw) << L.tensor([], **kw),
    "empty float64 | float32": lambda L, kw: L.tensor([], dtype=L.float64, **kw) | L.tensor([1.], **kw),
    "bitwise_not of empty float": lambda L, kw: L.tensor([], **kw).bitwise_not(),
    "zeros()": lambda L, kw: L.zeros(**kw),
    "ones()": lambda L, kw: L.ones(**kw),
    "empty()": lambda L, kw: L.empty(**kw).shape,
    "rand()": lambda L, kw: L.rand(**kw).shape,
    "randn()": lambda L, kw: L.randn(**kw).shape,
    "zeros(size=(2, 3))": lambda L, kw: L.zeros(size=(2, 3), **kw),
    "ones(size=[2])": lambda L, kw: L.ones(size=[2], dtype=L.int32, **kw),
    "rand(size=(2,)).shape": lambda L, kw: L.rand(size=(2,), **kw).shape,
    "zeros(2, size=(2,))": lambda L, kw: L.zeros(2, size=(2,), **kw),
    "zeros(())": lambda L, kw: L.zeros((), **kw),
}


@pytest.mark.parametrize("case", list(_DTYPE_REFUSALS))
@pytest.mark.float64
def test_dtype_refusals_and_missing_sizes_as_torch(device, case):
    fn = _DTYPE_REFUSALS[case]
    twin = {"device": torch_twin(device)}  # torch's cuda kernels refuse other dtypes, by their own names
    _same(lambda: fn(tdx, {"device": device}), lambda: fn(torch, twin))
    try:
        fn(torch, twin)
    except NotImplementedError as want:  # the message names torch's kernel and dtype
        with pytest.raises(NotImplementedError) as got:
            fn(tdx, {"device": device})
        assert str(got.value) == str(want)
    except TypeError:  # checked by _same above
        pass


# 8. tensors adopted from torch's negative-bit and conjugate views print, convert and export ------------
_NEG_VIEWS = {
    "conj().imag": lambda: torch.tensor([1. + 2j, 3 - 4j]).conj().imag,
    "_neg_view": lambda: torch._neg_view(torch.tensor([1., 2.5])),
    "conj()": lambda: torch.tensor([1. + 2j]).conj(),
    "conj().imag of a 2-d view": lambda: torch.tensor([[1. + 2j, 3 - 4j], [5j, -1]]).conj().imag.t(),
}


@pytest.mark.parametrize("how", ["asarray", "as_tensor", "from_dlpack", "tensor"])
@pytest.mark.parametrize("case", list(_NEG_VIEWS))
def test_adopted_negative_bit_views_print(device, case, how):
    src = _NEG_VIEWS[case]()
    if how == "from_dlpack":
        x = tdx.from_dlpack(src).to(device)
    else:
        x = getattr(tdx, how)(src, device=device)
    want = src.resolve_conj().resolve_neg()
    assert x.tolist() == want.tolist()
    assert repr(x).replace(f", device='{device}'", "").replace("tdx.", "torch.") == repr(src)
    assert np.asarray(x).tolist() == want.tolist()
    assert x.numpy(force=True).tolist() == want.tolist()
    assert (-x).tolist() == (-src).tolist()


# 5. a clean exit after MLX used from several threads (issue 39) ---------------------------------------------------
_THREADED_PROGRAM = """
import sys, threading
from concurrent.futures import ThreadPoolExecutor
import tdx

def step(i):
    x = tdx.linspace(-1, 1, 1024, device="mlx:cpu").reshape(32, 32).requires_grad_()
    y = (x @ x.T).tanh().pow(2).sum()
    y.backward()
    return float(y) + float(x.grad.sum())

def forever():  # a daemon thread still evaluating MLX work when the program ends
    while True:
        step(0)

for _ in range(2):
    threading.Thread(target=forever, daemon=True).start()
threads = [threading.Thread(target=step, args=(i,)) for i in range(3)]
[t.start() for t in threads]
[t.join() for t in threads]
with ThreadPoolExecutor(3) as pool:
    total = sum(pool.map(step, range(6)))
print("done", total == total)
"""


def test_exit_after_mlx_in_threads_is_clean_every_time(tmp_path):
    """A program whose threads used MLX (joined ones, a pool, daemon threads still evaluating at exit) exits 0
    in each of 50 runs: a daemon thread inside an MLX evaluation when Python finalized ended the process with
    "terminate called without an active exception" (exit 134)."""
    pytest.importorskip("mlx.core")
    script = tmp_path / "threads.py"
    script.write_text(_THREADED_PROGRAM)
    # MLX's own summation order: the program then never imports torch, which keeps 50 runs short
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
           "TDX_MLX_SUMMATION": "native"}

    def run(_):
        proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, env=env)
        return proc.returncode, proc.stdout.strip(), proc.stderr[-500:]

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(run, range(50)))
    bad = [r for r in results if r[0] != 0 or r[1] != "done True" or "terminate" in r[2]]
    assert not bad, f"{len(bad)} of 50 runs did not exit cleanly, e.g. {bad[0]}"


@pytest.mark.parametrize("op", ["tril_indices", "triu_indices"])
@pytest.mark.parametrize("size", [2**31])
def test_triangle_indices_overflow_is_refused_as_torch(device, op, size):
    """A triangle whose (2, N) result's byte size overflows is refused at once with torch's words (tdx counts N
    in closed form: the row x col mask it built before took 20 GB for 2**31)."""
    with pytest.raises(RuntimeError) as want:
        getattr(torch, op)(size, size)
    with pytest.raises(RuntimeError) as got:
        getattr(tdx, op)(size, size, device=device)
    assert isinstance(got.value, tdx.TdxError) and str(got.value) == str(want.value)


@pytest.mark.parametrize("op", ["tril_indices", "triu_indices"])
@pytest.mark.parametrize("dtype", ["int64", "int32"])
def test_triangle_indices_as_torch(device, op, dtype):
    """Every row, column and offset combination (empty, tall, wide, offsets past either corner) as torch's."""
    for row in (0, 1, 3, 7):
        for col in (0, 1, 4, 6):
            for offset in (-9, -3, -1, 0, 1, 2, 5, 9):
                want = getattr(torch, op)(row, col, offset, dtype=getattr(torch, dtype))
                got = getattr(tdx, op)(row, col, offset, dtype=getattr(tdx, dtype), device=device)
                assert got.dtype == getattr(tdx, dtype) and got.tolist() == want.tolist(), (row, col, offset)
