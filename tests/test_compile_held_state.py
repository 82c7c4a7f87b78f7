"""``tdx.compile`` on steps whose arguments carry state: a cache object holding buffers the step writes in place
(transformers' static KV cache), an argument returned as it came, plain values that change between calls, and a
cache that replaces its buffers (grown by ``cat``). Every step runs on every device and is compared with the same
step run by real torch on CPU, eagerly. transformers' own case (a static cache and ``model.forward =
torch.compile(model.forward)``) is the program ``tests/programs/hf_compiled_generate.py`` (tests/test_run.py)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import tdx
from tdx.compat import compiler

RNG = np.random.default_rng(3)
W = RNG.standard_normal((4, 4)).astype(np.float32)
XS = [RNG.standard_normal((1, 4)).astype(np.float32) for _ in range(6)]


class Cache:
    """A static cache as transformers writes one: a position counter made at once (on the default device), a
    buffer allocated on the first update, when the counter moves to the rows' device, both written in place
    afterwards (``move=False`` leaves the counter where it was made)."""

    def __init__(self, lib, length: int, move: bool = True):
        self.lib, self.length, self.move = lib, length, move
        self.count = lib.tensor(0)
        self.buffer = None

    def update(self, row):
        if self.buffer is None:
            self.buffer = self.lib.zeros((self.length, row.shape[-1]), dtype=row.dtype, device=row.device)
            if self.move:
                self.count = self.count.to(row.device)
        pos = self.lib.arange(row.shape[0], device=row.device) + self.count
        self.count.add_(row.shape[0])
        self.buffer.index_copy_(0, pos, row)
        return self.buffer


class Step:
    """One decode step: a projection written into the cache, then a read of the whole cache."""

    def __init__(self, lib, device=None):
        self.lib = lib
        self.w = lib.tensor(W, device=device) if device else lib.tensor(W)

    def __call__(self, x, cache, scale=1):
        buf = cache.update(x @ self.w)
        return {"out": buf.sum(0) * scale, "cache": cache}


def _host(t):
    return np.asarray(t.detach().cpu().numpy())


def _run(lib, step, caches, device=None, scale=lambda i: 1):
    outs = []
    for cache in caches:
        for i, x in enumerate(XS[:3]):
            xt = lib.tensor(x, device=device) if device else lib.tensor(x)
            res = step(xt, cache, scale=scale(i))
            assert res["cache"] is cache  # the call's own argument comes back, not the one a trace saw
            outs.append(_host(res["out"]))
        outs.append(_host(cache.buffer))
        outs.append(int(cache.count))
    return outs


def _counting_traces(monkeypatch) -> list:
    traces = []
    real = compiler._Compiled._trace

    def counted(self, *args):
        traces.append(1)
        return real(self, *args)

    monkeypatch.setattr(compiler._Compiled, "_trace", counted)
    return traces


def test_a_cache_written_in_place_is_state_of_the_compiled_step(device, monkeypatch):
    """The buffers a cache argument holds are read and written by the compiled step as torch runs it; a new cache
    of the same structure (transformers makes one per ``generate``) runs on the same trace."""
    traces = _counting_traces(monkeypatch)
    want = _run(torch, Step(torch), [Cache(torch, 6), Cache(torch, 6)])
    step = Step(tdx, device)
    got = _run(tdx, tdx.compile(step), [Cache(tdx, 6), Cache(tdx, 6)], device)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    if not tdx.device(device).type == "mlx":  # torch executors: torch.compile's business
        return
    assert len(traces) == 1, "a second cache of the same structure traced again"


def test_a_cache_with_a_tensor_on_another_executor_runs_eagerly(device):
    """A counter left on the CPU beside an MLX buffer cannot be written by an MLX trace: the step runs eagerly, with
    torch's values, and says why once."""
    want = _run(torch, Step(torch), [Cache(torch, 6, move=False)])
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        got = _run(tdx, tdx.compile(Step(tdx, device)), [Cache(tdx, 6, move=False)], device)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    if tdx.device(device).type == "mlx":
        assert [str(w.message).split("(")[1] for w in seen if "runs eagerly" in str(w.message)] == [
            "its arguments hold tensors on several executors; tdx compiles steps on one)"]


def test_plain_arguments_trace_again_when_they_change(device):
    """A plain value the step takes (here ``scale``) is a constant of a trace: another value gives its own trace,
    never the first value's result (TorchDynamo guards the same way)."""
    want = _run(torch, Step(torch), [Cache(torch, 6), Cache(torch, 6)], scale=lambda i: i + 1)
    got = _run(tdx, tdx.compile(Step(tdx, device)), [Cache(tdx, 6), Cache(tdx, 6)], device, scale=lambda i: i + 1)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


class GrowingCache:
    """A cache grown by ``cat``: every update replaces the buffer (transformers' dynamic cache)."""

    def __init__(self, lib):
        self.lib, self.buffer = lib, None

    def update(self, row):
        self.buffer = row if self.buffer is None else self.lib.cat([self.buffer, row])
        return self.buffer


def test_a_cache_that_replaces_its_buffers_runs_eagerly_with_one_warning(device):
    """A trace cannot follow a buffer replaced at every call: the step runs eagerly, with torch's values, and says
    so once (on MLX; torch executors hand the step to torch.compile)."""
    def step(lib):
        w = lib.tensor(W, device=device) if lib is tdx else lib.tensor(W)
        return lambda x, cache: cache.update(x @ w).sum(0)

    ref_cache, cache = GrowingCache(torch), GrowingCache(tdx)
    ref_step, fn = step(torch), tdx.compile(step(tdx))
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        for x in XS:
            np.testing.assert_allclose(_host(fn(tdx.tensor(x, device=device), cache)),
                                       ref_step(torch.tensor(x), ref_cache).numpy(), rtol=1e-5, atol=1e-6)
    said = [w for w in seen if "runs eagerly" in str(w.message)]
    if tdx.device(device).type == "mlx":
        assert len(said) == 1 and "replaced at every call" in str(said[0].message)


def test_a_parameter_replaced_between_calls_is_read(device):
    """A compiled module reads its parameters as they are at each call: one replaced (``net.weight =
    Parameter(...)``), or a submodule swapped, after the trace is read by the next call, as torch's module is."""
    def build(lib):
        net = lib.nn.Sequential(lib.nn.Linear(4, 4), lib.nn.Linear(4, 2))
        with lib.no_grad():
            for i, p in enumerate(net.parameters()):
                p.copy_(lib.tensor(np.full(tuple(p.shape), 0.1 * (i + 1), np.float32)))
        return net

    ref, net = build(torch), build(tdx).to(device)
    fn = tdx.compile(net)
    x = XS[0]
    outs = []
    for change in range(3):
        if change == 1:  # a parameter replaced
            new = np.arange(16, dtype=np.float32).reshape(4, 4) / 10
            ref[0].weight = torch.nn.Parameter(torch.tensor(new))
            net[0].weight = tdx.nn.Parameter(tdx.tensor(new, device=device))
        if change == 2:  # a submodule swapped
            ref[1], net[1] = torch.nn.Identity(), tdx.nn.Identity()
        for _ in range(2):  # the second call runs the trace the first made
            outs.append((_host(fn(tdx.tensor(x, device=device))), ref(torch.tensor(x)).detach().numpy()))
    for got, want in outs:
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
