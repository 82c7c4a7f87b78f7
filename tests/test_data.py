"""tdx.utils.data against torch.utils.data: same batches for the same seed, collate of every
kind, worker processes, and torch's errors."""

from __future__ import annotations

import collections
import sys
import time

import numpy as np
import pytest
import torch
import torch.utils.data as T

import tdx
import tdx.utils.data as D
from tdx.testing.parity import assert_close

Point = collections.namedtuple("Point", "x y")


def _to_torch(obj):
    """A tdx batch structure with torch CPU tensors in place of tdx tensors."""
    if isinstance(obj, tdx.Tensor):
        return torch.from_numpy(np.array(obj.cpu().numpy(force=True)))
    if isinstance(obj, dict):
        return type(obj)((k, _to_torch(v)) for k, v in obj.items())
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*(_to_torch(v) for v in obj))
    if isinstance(obj, (list, tuple)):
        return type(obj)(_to_torch(v) for v in obj)
    return obj


def _same(got, expected, device=None):
    """Structure, types, dtypes, devices and values equal (tdx batch vs torch batch)."""
    if isinstance(expected, torch.Tensor):
        assert isinstance(got, tdx.Tensor), (got, expected)
        assert str(got.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1]
        if device is not None:
            assert got.device == tdx.device(device)
        assert_close(got, expected, rtol=0, atol=0)
        return
    assert type(got) is type(expected), (got, expected)
    if isinstance(expected, dict):
        assert list(got) == list(expected)
        for k in expected:
            _same(got[k], expected[k], device)
    elif isinstance(expected, (list, tuple)):
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            _same(g, e, device)
    else:
        assert got == expected


def _datasets(device, n=23):
    x = np.arange(n * 3, dtype=np.float32).reshape(n, 3)
    y = np.arange(n, dtype=np.int64) % 4
    return (D.TensorDataset(tdx.tensor(x, device=device), tdx.tensor(y, device=device)),
            T.TensorDataset(torch.tensor(x), torch.tensor(y)))


@pytest.mark.parametrize("kwargs", [dict(batch_size=4, shuffle=True), dict(batch_size=5, shuffle=True, drop_last=True),
                                    dict(batch_size=3), dict(batch_size=None, shuffle=True)])
def test_loader_batches_match_torch(device, kwargs):
    mine, theirs = _datasets(device)
    # on cpu tdx's global generator is torch's own: seed before each side, never interleave
    for seed in (0, 7):
        tdx.manual_seed(seed)
        got = [[list(b) if isinstance(b, tuple) else b for b in D.DataLoader(mine, **kwargs)] for _ in range(2)]
        torch.manual_seed(seed)
        expected = [[list(b) if isinstance(b, tuple) else b for b in T.DataLoader(theirs, **kwargs)]
                    for _ in range(2)]
        assert len(got[0]) == len(expected[0]) == len(D.DataLoader(mine, **kwargs))
        _same(got, expected, device)  # the second epoch reshuffles from the advanced generator, as torch


def test_loader_generator_matches_torch(device):
    mine, theirs = _datasets(device)
    g, tg = tdx.Generator(device="cpu").manual_seed(11), torch.Generator().manual_seed(11)
    got = [b[1] for b in D.DataLoader(mine, batch_size=6, shuffle=True, generator=g)]
    expected = [b[1] for b in T.DataLoader(theirs, batch_size=6, shuffle=True, generator=tg)]
    for a, b in zip(got, expected, strict=True):
        assert_close(a, b, rtol=0, atol=0)


@pytest.mark.parametrize("lengths", [[7, 16], [0.3, 0.3, 0.4], [0.5, 0.5]])
def test_random_split_matches_torch(device, lengths):
    mine, theirs = _datasets(device)
    tdx.manual_seed(3)
    got = D.random_split(mine, lengths)
    torch.manual_seed(3)
    expected = T.random_split(theirs, lengths)
    assert [s.indices for s in got] == [s.indices for s in expected]
    got = D.random_split(range(23), lengths, generator=tdx.Generator(device="cpu").manual_seed(5))
    expected = T.random_split(range(23), lengths, generator=torch.Generator().manual_seed(5))
    assert [list(s) for s in got] == [list(s) for s in expected]


def test_random_split_errors(device):
    mine, theirs = _datasets(device)
    for bad in ([5, 5], [1.2, -0.2]):
        with pytest.raises(ValueError) as err:
            T.random_split(theirs, bad)
        with pytest.raises(ValueError, match=str(err.value)[:20]) as info:
            D.random_split(mine, bad)
        assert isinstance(info.value, tdx.TdxError)


def _sampler_pairs(mine, theirs):
    g = lambda: tdx.Generator(device="cpu").manual_seed(4)  # noqa: E731
    tg = lambda: torch.Generator().manual_seed(4)  # noqa: E731
    w = [0.1, 2.0, 0.5, 3.0, 1.0]
    return [
        (D.SequentialSampler(mine), T.SequentialSampler(theirs)),
        (D.RandomSampler(mine), T.RandomSampler(theirs)),
        (D.RandomSampler(mine, generator=g()), T.RandomSampler(theirs, generator=tg())),
        (D.RandomSampler(mine, replacement=True, num_samples=70), T.RandomSampler(theirs, replacement=True,
                                                                                num_samples=70)),
        (D.RandomSampler(mine, num_samples=50), T.RandomSampler(theirs, num_samples=50)),
        (D.SubsetRandomSampler([3, 9, 1, 4, 20]), T.SubsetRandomSampler([3, 9, 1, 4, 20])),
        (D.SubsetRandomSampler([3, 9, 1], generator=g()), T.SubsetRandomSampler([3, 9, 1], generator=tg())),
        (D.WeightedRandomSampler(w, 12), T.WeightedRandomSampler(w, 12)),
        (D.WeightedRandomSampler(w, 4, replacement=False, generator=g()),
         T.WeightedRandomSampler(w, 4, replacement=False, generator=tg())),
        (D.BatchSampler(D.RandomSampler(mine), 4, False), T.BatchSampler(T.RandomSampler(theirs), 4, False)),
        (D.BatchSampler(range(10), 3, True), T.BatchSampler(range(10), 3, True)),
        (D.DistributedSampler(mine, num_replicas=3, rank=1), T.DistributedSampler(theirs, num_replicas=3, rank=1)),
        (D.DistributedSampler(mine, num_replicas=4, rank=3, shuffle=False, drop_last=True),
         T.DistributedSampler(theirs, num_replicas=4, rank=3, shuffle=False, drop_last=True)),
        (D.DistributedSampler(range(2), num_replicas=5, rank=4), T.DistributedSampler(range(2), num_replicas=5,
                                                                                    rank=4)),
    ]


def test_samplers_match_torch(device):
    mine, theirs = _datasets(device)
    for a, b in _sampler_pairs(mine, theirs):
        assert len(a) == len(b), type(a).__name__
        tdx.manual_seed(9)
        got = [list(a), list(a)]  # the second pass: a fresh permutation, as torch
        torch.manual_seed(9)
        assert got == [list(b), list(b)], type(a).__name__
    a, b = D.DistributedSampler(mine, num_replicas=2, rank=0), T.DistributedSampler(theirs, num_replicas=2, rank=0)
    a.set_epoch(3)
    b.set_epoch(3)
    assert list(a) == list(b)


def test_sampler_errors(device):
    mine, theirs = _datasets(device)
    cases = [(lambda m: D.RandomSampler(m, replacement=1), lambda t: T.RandomSampler(t, replacement=1)),
             (lambda m: D.RandomSampler(m, num_samples=0), lambda t: T.RandomSampler(t, num_samples=0)),
             (lambda m: D.BatchSampler(range(3), 0, False), lambda t: T.BatchSampler(range(3), 0, False)),
             (lambda m: D.WeightedRandomSampler([[1.0]], 2), lambda t: T.WeightedRandomSampler([[1.0]], 2)),
             (lambda m: D.DistributedSampler(m, num_replicas=2, rank=2),
              lambda t: T.DistributedSampler(t, num_replicas=2, rank=2))]
    for mk, tk in cases:
        with pytest.raises(Exception) as expected:
            tk(theirs)
        with pytest.raises(type(expected.value)) as got:
            mk(mine)
        assert isinstance(got.value, tdx.TdxError)


def _collate_samples(device):
    def t(v, **kw):
        return tdx.tensor(v, device=device, **kw), torch.tensor(v, **kw)

    a0, b0 = t([1.0, 2.0])
    a1, b1 = t([3.0, 4.0])
    i0, j0 = t([[1, 2]], dtype=None)
    i1, j1 = t([[3, 4]], dtype=None)
    return [
        ([a0, a1], [b0, b1]),
        ([np.arange(3, dtype=np.int32), np.ones(3, dtype=np.int32)],) * 2,
        ([np.float64(1.5), np.float64(2.5)],) * 2,
        ([np.float32(1.5), np.float32(2.5)],) * 2,
        ([1.5, 2.5],) * 2, ([1, 2, 3],) * 2, ([True, False],) * 2,
        (["a", "b"],) * 2, ([b"a", b"b"],) * 2,
        ([{"x": a0, "n": 1, "s": "p"}, {"x": a1, "n": 2, "s": "q"}],
         [{"x": b0, "n": 1, "s": "p"}, {"x": b1, "n": 2, "s": "q"}]),
        ([collections.OrderedDict(k=i0), collections.OrderedDict(k=i1)],
         [collections.OrderedDict(k=j0), collections.OrderedDict(k=j1)]),
        ([Point(a0, 1.0), Point(a1, 2.0)], [Point(b0, 1.0), Point(b1, 2.0)]),
        ([(a0, 1), (a1, 2)], [(b0, 1), (b1, 2)]),
        ([[a0, [1, 2]], [a1, [3, 4]]], [[b0, [1, 2]], [b1, [3, 4]]]),
    ]


def test_default_collate_matches_torch(device):
    for mine, theirs in _collate_samples(device):
        _same(D.default_collate(mine), T.default_collate(theirs))


def test_default_convert_matches_torch(device):
    for mine, theirs in _collate_samples(device):
        _same(D.default_convert(mine), T.default_convert(theirs))
        _same(D.default_convert(mine[0]), T.default_convert(theirs[0]))


def test_default_collate_errors(device):
    bad = [([tdx.ones(2, device=device), tdx.ones(3, device=device)], [torch.ones(2), torch.ones(3)]),
           ([[1, 2], [1]],) * 2,
           ([np.array(["a"]), np.array(["b"])],) * 2,
           ([object(), object()],) * 2]
    for mine, theirs in bad:
        with pytest.raises(Exception) as expected:
            T.default_collate(theirs)
        with pytest.raises(type(expected.value)) as got:
            D.default_collate(mine)
        assert isinstance(got.value, tdx.TdxError), got.value
        words = [w for w in str(expected.value).split() if w.isalpha()][:3]
        assert all(w in str(got.value) for w in words), (got.value, expected.value)


def test_loader_argument_errors(device):
    mine, theirs = _datasets(device)
    cases = [dict(num_workers=-1), dict(timeout=-1), dict(prefetch_factor=2), dict(persistent_workers=True),
             dict(sampler=[0, 1], shuffle=True), dict(batch_sampler=[[0]], batch_size=2),
             dict(batch_size=None, drop_last=True), dict(multiprocessing_context="spawn")]
    for kw in cases:
        with pytest.raises(ValueError) as expected:
            T.DataLoader(theirs, **kw)
        with pytest.raises(ValueError) as got:
            D.DataLoader(mine, **kw)
        assert isinstance(got.value, tdx.TdxError)
        assert str(got.value) == str(expected.value), kw


class Stream(D.IterableDataset):
    """0..n-1, each worker taking every num_workers-th item."""

    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = D.get_worker_info()
        start, step = (0, 1) if info is None else (info.id, info.num_workers)
        return iter(range(start, self.n, step))

    def __len__(self):
        return self.n


class Faulty(D.Dataset):
    def __getitem__(self, i):
        if i == 5:
            raise ValueError(f"bad sample {i}")
        return tdx.tensor([i])

    def __len__(self):
        return 8


class Slow(D.Dataset):
    def __getitem__(self, i):
        time.sleep(2.0)
        return i

    def __len__(self):
        return 4


class Seeds(D.Dataset):
    def __getitem__(self, i):
        info = D.get_worker_info()
        return tdx.tensor([info.id, info.num_workers, info.seed - info.id, i])

    def __len__(self):
        return 6


def _record_init(worker_id):
    info = D.get_worker_info()
    assert info is not None and info.id == worker_id


def test_workers_give_the_same_batches(device):
    mine, _ = _datasets(device)
    tdx.manual_seed(5)
    single = list(D.DataLoader(mine, batch_size=4, shuffle=True))
    tdx.manual_seed(5)
    loader = D.DataLoader(mine, batch_size=4, shuffle=True, num_workers=2, worker_init_fn=_record_init,
                          prefetch_factor=3)
    it = iter(loader)
    if device.startswith("mlx"):  # this test used MLX: its workers are never forked (test_worker_start_method)
        assert it._workers[0]._start_method == "spawn"
    multi = list(it)
    assert len(multi) == len(single) == len(loader)
    for (a, b), (c, d) in zip(multi, single):
        assert a.device == tdx.device(device)
        assert_close(a, c.numpy(force=True), rtol=0, atol=0)
        assert_close(b, d.numpy(force=True), rtol=0, atol=0)
    # persistent workers over two epochs, out-of-order delivery: the same batches as a set
    tdx.manual_seed(5)
    loader = D.DataLoader(mine, batch_size=4, num_workers=2, persistent_workers=True, in_order=False)
    for _ in range(2):
        got = sorted(tuple(b[1].tolist()) for b in loader)
        assert got == sorted(tuple(b[1].tolist()) for b in D.DataLoader(mine, batch_size=4))


_START_METHODS = """
import multiprocessing, sys
import tdx, tdx.utils.data as D

def method():
    it = iter(D.DataLoader([1, 2, 3, 4], batch_size=2, num_workers=1))
    started = it._workers[0]._start_method
    assert [b.tolist() for b in it] == [[1, 2], [3, 4]]
    return started

if __name__ == "__main__":
    default = multiprocessing.get_context().get_start_method()
    print("fresh", method() == default)
    import torch
    if torch.cuda.is_available():
        torch.cuda.init()
    else:  # no GPU here: CUDA's own flag says initialised, as after a first CUDA tensor
        torch.cuda.is_initialized = lambda: True
    print("cuda", method())
    if not torch.cuda.is_available():
        torch.cuda.is_initialized = lambda: False
    print("before mlx", method() == default)
    if "mlx:cpu" in [r.device for r in tdx.backends.available() if r.available]:
        tdx.ones(1, device="mlx:cpu").sum().item()
        print("mlx", method())
    else:
        print("mlx", "spawn")
"""


def test_worker_start_method(tmp_path):
    """torch's documented rules, stated apart from the loader's code: workers start with the platform's default
    method (fork on Linux), except that CUDA cannot be used in a forked child ("CUDA in multiprocessing": spawn or
    forkserver are required once CUDA is initialised) and neither can MLX's initialised state, so then spawn."""
    import subprocess

    script = tmp_path / "starts.py"
    script.write_text(_START_METHODS)
    import os
    import pathlib

    env = dict(os.environ, PYTHONPATH=str(pathlib.Path(__file__).resolve().parents[1]), PYTHONWARNINGS="ignore")
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["fresh True", "cuda spawn", "before mlx True", "mlx spawn"]


def test_worker_info_and_iterable_dataset(device):
    got = sorted(int(v) for b in D.DataLoader(Stream(11), batch_size=2, num_workers=2) for v in b)
    assert got == list(range(11))
    tdx.manual_seed(0)
    rows = [r.tolist() for b in D.DataLoader(Seeds(), batch_size=3, num_workers=2) for r in b]
    assert [r[0] for r in rows] == [0, 0, 0, 1, 1, 1] and {r[1] for r in rows} == {2}
    assert len({r[2] for r in rows}) == 1  # seed = base_seed + worker id
    assert D.get_worker_info() is None


def test_worker_exception_shows_worker_traceback(device):
    with pytest.raises(ValueError) as info:
        list(D.DataLoader(Faulty(), batch_size=2, num_workers=2))
    text = str(info.value)
    assert "Caught ValueError in DataLoader worker process" in text
    assert "Original Traceback (most recent call last)" in text and "bad sample 5" in text
    assert "in __getitem__" in text


def test_worker_timeout(device):
    with pytest.raises(RuntimeError, match="timed out after 0.3 seconds") as info:
        list(D.DataLoader(Slow(), batch_size=1, num_workers=1, timeout=0.3))
    assert isinstance(info.value, tdx.TdxError)


def test_datasets_match_torch(device):
    mine, theirs = _datasets(device, n=6)
    cat, tcat = D.ConcatDataset([mine, mine]), T.ConcatDataset([theirs, theirs])
    assert len(cat) == len(tcat) == 12
    for i in (0, 5, 6, 11, -1, -12):
        _same(list(cat[i]), list(tcat[i]), device)
    stack, tstack = D.StackDataset(mine, range(6)), T.StackDataset(theirs, range(6))
    _same(list(stack[2][0]) + [stack[2][1]], list(tstack[2][0]) + [tstack[2][1]])
    kw, tkw = D.StackDataset(a=mine, b=range(6)), T.StackDataset(a=theirs, b=range(6))
    assert kw[1]["b"] == tkw[1]["b"] and len(kw) == len(tkw)
    sub, tsub = D.Subset(mine, [4, 0]), T.Subset(theirs, [4, 0])
    _same(list(sub[0]), list(tsub[0]))
    assert list(D.ChainDataset([Stream(3), Stream(2)])) == [0, 1, 2, 0, 1]
    assert len(D.ChainDataset([Stream(3), Stream(2)])) == 5
    with pytest.raises(ValueError):
        D.StackDataset(mine, range(5))
    with pytest.raises(ValueError):
        D.ConcatDataset([])

