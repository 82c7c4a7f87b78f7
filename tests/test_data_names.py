"""The last public names of torch.optim and torch.utils.data: present in tdx, and behaving as torch's
(swap_in_optimizer_params_and_state on Adam, DataPipe functional registration, DataChunk, graph
traversal, determinism guard, seeds) with real torch on CPU as the oracle."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.utils.data as tdata

import tdx
import tdx.optim as toptim
import tdx.utils.data as xdata
from conftest import torch_twin
from tdx.testing.parity import assert_close


@pytest.mark.parametrize("pair", [(torch.optim, toptim), (tdata, xdata)], ids=lambda p: p[0].__name__)
def test_every_public_name_present(pair):
    theirs, ours = pair
    names = {n for n in dir(theirs) if not n.startswith("_")}
    missing = sorted(n for n in names if not hasattr(ours, n))
    assert not missing, missing
    assert set(ours.__all__) >= set(theirs.__all__) - {"_DatasetKind"}  # torch's private DataLoader enum


@pytest.mark.parametrize("name", ["graph", "graph_settings", "distributed"])
def test_submodule_all(name):
    theirs, ours = getattr(tdata, name), getattr(xdata, name)
    assert set(ours.__all__) >= set(theirs.__all__)
    assert all(hasattr(ours, n) for n in theirs.__all__)


def test_submodules_are_modules():
    import types
    for name in ("datapipes", "distributed", "graph", "graph_settings"):
        assert isinstance(getattr(xdata, name), types.ModuleType), name
    assert xdata.distributed.DistributedSampler is xdata.DistributedSampler
    assert issubclass(xdata.IterDataPipe, xdata.IterableDataset)
    assert issubclass(xdata.MapDataPipe, xdata.Dataset)
    assert issubclass(xdata.DFIterDataPipe, xdata.IterDataPipe)
    assert issubclass(xdata.DataChunk, list)


def _params(device):
    rng = np.random.default_rng(0)
    arrs = [rng.standard_normal((3, 2)).astype(np.float32), rng.standard_normal(2).astype(np.float32)]
    grads = [rng.standard_normal(a.shape).astype(np.float32) for a in arrs]
    tp = [torch.tensor(a, requires_grad=True, device=torch_twin(device)) for a in arrs]
    xp = [tdx.tensor(a, device=device, requires_grad=True) for a in arrs]
    return tp, xp, grads


def _run(lib, params, grads, device=None):
    kw = {} if device is None else {"device": device}
    opt = lib.optim.Adam(params, lr=0.1, weight_decay=0.01)
    for p, g in zip(params, grads):
        p.grad = lib.tensor(g, **kw)
    opt.step()
    # the swap-in copies: fresh parameter tensors and a cloned state dict
    swap_params = {f"p{i}": p.detach().clone() for i, p in enumerate(params)}
    sd = opt.state_dict()
    swap_sd = {"state": {k: {n: v.clone() for n, v in s.items()} for k, s in sd["state"].items()},
               "param_groups": [dict(g, lr=0.5) for g in sd["param_groups"]]}
    before = [p.detach().clone() for p in params]
    live_state = opt.state
    with lib.optim.swap_in_optimizer_params_and_state(opt, swap_params, swap_sd):
        inside_lr = opt.param_groups[0]["lr"]
        inside_params = list(opt.param_groups[0]["params"])
        for p, g in zip(swap_params.values(), grads):
            p.grad = lib.tensor(g, **kw) * 2
        opt.step()
    return dict(before=before, after=[p.detach() for p in params], swapped=list(swap_params.values()),
                exp_avg=[swap_sd["state"][i]["exp_avg"] for i in range(2)], lr_in=inside_lr,
                lr_out=opt.param_groups[0]["lr"], same_state=opt.state is live_state,
                inside_is_swap=[a is b for a, b in zip(inside_params, swap_params.values())],
                restored=all(a is b for a, b in zip(opt.param_groups[0]["params"], params)),
                step=[swap_sd["state"][i]["step"] for i in range(2)])


def test_swap_in_optimizer_params_and_state(device):
    if not hasattr(torch.optim, "swap_in_optimizer_params_and_state"):
        pytest.skip(f"the installed torch {torch.__version__} has no optim.swap_in_optimizer_params_and_state")
    tp, xp, grads = _params(device)
    # the oracle: torch on the device whose kernels tdx runs (cuda's multi-tensor Adam rounds apart from the CPU's)
    twin = torch_twin(device)
    want, got = _run(torch, tp, grads, twin), _run(tdx, xp, grads, device)
    for w, g in zip(want["before"] + want["swapped"] + want["exp_avg"], got["before"] + got["swapped"] + got["exp_avg"]):
        assert_close(g, w, rtol=1e-6, atol=1e-7)
    exact = 0 if twin == device else 1e-6  # MLX's Adam kernel rounds one ulp apart from torch's
    for w, g in zip(want["after"], got["after"]):  # the live params were not touched inside the block
        assert_close(g, w, rtol=exact, atol=exact * 1e-1)
    for w, g in zip(want["step"], got["step"]):  # in-place state edits reach the caller's state dict
        assert float(g) == float(w) == 2.0
    for key in ("lr_in", "lr_out", "same_state", "inside_is_swap", "restored"):
        assert got[key] == want[key], key


def test_swap_in_errors_match_torch():
    for lib in (torch, tdx):
        p = lib.zeros(2, requires_grad=True)
        opt = lib.optim.SGD([p], lr=0.1, momentum=0.9)
        with pytest.raises(RuntimeError, match="initialized optimizer state"):
            with lib.optim.swap_in_optimizer_params_and_state(opt, {"p": p}, opt.state_dict()):
                pass
        p.grad = lib.ones(2)
        opt.step()
        bad = opt.state_dict()
        bad = {"state": bad["state"], "param_groups": [{k: v for k, v in bad["param_groups"][0].items() if k != "lr"}]}
        with pytest.raises(RuntimeError, match="Keys only in live: \\['lr'\\]") as info:
            with lib.optim.swap_in_optimizer_params_and_state(opt, {"p": p}, bad):
                pass
        if lib is tdx:
            assert isinstance(info.value, tdx.TdxError)
        with pytest.raises(RuntimeError, match="extra keys \\[7\\]"):
            sd = opt.state_dict()
            with lib.optim.swap_in_optimizer_params_and_state(opt, {"p": p}, {"state": {**sd["state"], 7: {}},
                                                                              "param_groups": sd["param_groups"]}):
                pass


def _module_level(cls, tag):
    """Name ``cls`` at module level: torch's graph traversal pickles DataPipes."""
    cls.__name__ = cls.__qualname__ = f"{cls.__name__}_{tag}"
    globals()[cls.__name__] = cls
    return cls


def _classes(data, tag):
    """A source, a functional ``tdx_scale_<tag>``, a shuffler and a map source, as users write them."""

    class Source(data.IterDataPipe):
        def __init__(self, n):
            self.n, self.resets = n, 0

        def reset(self):
            self.resets += 1

        def __iter__(self):
            yield from range(self.n)

    class Scale(data.IterDataPipe):
        def __init__(self, source, k=2):
            self.source, self.k = source, k

        def __iter__(self):
            for x in self.source:
                yield x * self.k

    class Shuffler(data.IterDataPipe):
        def __init__(self, source):
            self.source, self.seed, self.shuffle = source, None, None

        def set_seed(self, seed):
            self.seed = seed

        def set_shuffle(self, shuffle):
            self.shuffle = shuffle

        def __iter__(self):
            yield from self.source

    class MapSource(data.MapDataPipe):
        def __getitem__(self, i):
            return i

        def __len__(self):
            return 3

    out = {c.__name__: _module_level(c, tag) for c in (Source, Scale, Shuffler, MapSource)}
    out["name"] = f"tdx_scale_{tag}"
    data.functional_datapipe(out["name"])(Scale)
    return out


CLASSES = {tdata: _classes(tdata, "torch"), xdata: _classes(xdata, "tdx")}


def test_functional_datapipe_and_graph():
    results = []
    for data in (tdata, xdata):
        c = CLASSES[data]
        cls, name = c["Scale"], c["name"]
        src = c["Source"](5)
        dp = getattr(src, name)(k=3)
        assert type(dp) is cls
        out = list(dp), list(dp)
        graph = data.graph.traverse_dps(dp)
        assert list(graph) == [id(dp)] and list(graph[id(dp)][1]) == [id(src)]
        pipes = data.graph_settings.get_all_graph_pipes(graph)
        tag = name.rsplit("_", 1)[1]
        results.append((out, src.resets, [type(p).__name__.replace(tag, "") for p in pipes],
                        repr(dp).replace(tag, ""), name in dir(dp)))
        with pytest.raises(Exception, match="already taken"):
            data.functional_datapipe(name)(cls)
        with pytest.raises(AttributeError):
            src.no_such_functional_form
    assert results[0] == results[1]


def test_data_chunk():
    for_torch, for_tdx = tdata.DataChunk([1, 2, 3]), xdata.DataChunk(iter([1, 2, 3]))
    for c in (for_torch, for_tdx):
        c.append(4)
    assert list(for_tdx) == list(for_torch) == [1, 2, 3, 4]
    assert list(for_tdx.raw_iterator()) == list(for_torch.raw_iterator()) == [1, 2, 3]  # the items given
    assert for_tdx.as_str("  ") == for_torch.as_str("  ")
    assert for_tdx == for_torch


def test_determinism_and_validation_decorators():
    for data in (tdata, xdata):
        @data.non_deterministic
        class Noisy(data.IterDataPipe):
            def __iter__(self):
                yield 1

        assert list(Noisy()) == [1]
        with data.guaranteed_datapipes_determinism():
            with pytest.raises(TypeError, match="non-deterministic"):
                Noisy()
        assert list(Noisy()) == [1]
        with pytest.raises(TypeError, match="non_deterministic"):
            data.non_deterministic(int)
        with pytest.raises(TypeError, match="runtime_validation"):
            data.runtime_validation(lambda self: None)

        class Plain(data.IterDataPipe):
            @data.runtime_validation
            def __iter__(self):
                yield from (1, 2)

        with data.runtime_validation_disabled():
            assert list(Plain()) == [1, 2]
        assert data.argument_validation(lambda a, b=1: a + b)(1, b=2) == 3


def test_apply_random_seed_and_shuffle_settings():
    seen = []
    for data, lib in ((tdata, torch), (xdata, tdx)):
        Shuffler, Source = CLASSES[data]["Shuffler"], CLASSES[data]["MapSource"]
        a = Shuffler([Source()])
        b = Shuffler({"x": a})
        g = lib.Generator()
        g.manual_seed(123)
        assert data.graph_settings.apply_random_seed(b, g) is b
        assert data.graph_settings.apply_shuffle_settings(b, shuffle=False) is b
        assert data.graph_settings.apply_shuffle_settings(b) is b
        seen.append((b.seed, a.seed, a.shuffle, b.shuffle, len(data.graph_settings.get_all_graph_pipes(
            data.graph.traverse_dps(b)))))
    assert seen[0] == seen[1]
    with pytest.raises(RuntimeError, match="Expected `IterDataPipe` or `MapDataPipe`") as info:
        xdata.graph.traverse_dps([1])
    assert isinstance(info.value, tdx.TdxError)
