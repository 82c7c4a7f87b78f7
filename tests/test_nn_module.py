"""``tdx.nn.Module``, ``Parameter``, ``Buffer`` and the containers against ``torch.nn`` on CPU.

The same small module tree is written once on torch.nn and once on tdx.nn (``build``); names,
order, state dict keys and metadata, reprs, hook behaviour, error kinds and messages, and
training numerics must match torch's on every device.
"""

from __future__ import annotations

import copy
import pickle
from collections import OrderedDict

import numpy as np
import pytest
import torch

import tdx
import tdx.nn as nn
from tdx.testing.parity import assert_close

def arr(shape, seed=0):
    return np.random.default_rng(seed).uniform(-1, 1, size=shape).astype(np.float32)


def tens(m, a, device):
    """``a`` as a torch CPU tensor (m is torch.nn) or a tdx tensor on ``device``."""
    return torch.tensor(a) if m is torch.nn else tdx.tensor(a, device=device)


def build(m, device="cpu"):
    """The same module tree on torch.nn or tdx.nn: params, buffers (persistent and not),
    a shared submodule, a None parameter, a nested container and an extra_repr."""

    class Block(m.Module):
        def __init__(self, seed):
            super().__init__()
            self.w = m.Parameter(tens(m, arr((3, 3), seed), device))
            self.register_buffer("running", tens(m, np.zeros(3, np.float32), device))
            self.register_buffer("scratch", tens(m, np.ones(1, np.float32), device), persistent=False)
            self.register_parameter("unused", None)

        def forward(self, x):
            return (x @ self.w).tanh() + self.running

        def extra_repr(self):
            return "features=3"

    class Net(m.Module):
        def __init__(self):
            super().__init__()
            self.first = Block(1)
            self.body = m.Sequential(Block(2), m.Identity())
            self.tied = self.first
            self.heads = m.ModuleDict({"b": Block(3), "a": m.Flatten(0)})
            self.bias = m.Parameter(tens(m, arr((3,), 4), device))

        def forward(self, x):
            return self.heads["b"](self.body(self.first(x))) + self.bias

    return Net()


def names(pairs):
    return [n for n, _ in pairs]


# registration and iteration -----------------------------------------------------------------------
def test_names_and_order_match_torch(device):
    ours, ref = build(nn, device), build(torch.nn)
    assert names(ours.named_parameters()) == names(ref.named_parameters())
    assert names(ours.named_parameters(remove_duplicate=False)) == names(ref.named_parameters(remove_duplicate=False))
    assert names(ours.named_parameters(prefix="m", recurse=False)) == names(ref.named_parameters(prefix="m",
                                                                                                 recurse=False))
    assert names(ours.named_buffers()) == names(ref.named_buffers())
    assert names(ours.named_modules()) == names(ref.named_modules())
    assert names(ours.named_modules(remove_duplicate=False)) == names(ref.named_modules(remove_duplicate=False))
    assert names(ours.named_children()) == names(ref.named_children())
    assert len(list(ours.parameters())) == len(list(ref.parameters())) == 4
    assert len(list(ours.modules())) == len(list(ref.modules()))
    sd, tsd = ours.state_dict(), ref.state_dict()
    assert list(sd) == list(tsd)
    assert sd._metadata == tsd._metadata
    for k in tsd:
        assert_close(sd[k], tsd[k])
        assert sd[k].requires_grad is False and type(sd[k]) is tdx.Tensor
    assert isinstance(ours.state_dict(keep_vars=True)["bias"], nn.Parameter)


def test_attribute_assignment_rules(device):
    ours, ref = build(nn, device), build(torch.nn)
    for m, net, dev in ((nn, ours, device), (torch.nn, ref, "cpu")):
        net.extra = m.Parameter(tens(m, arr((2,)), dev))      # a parameter
        net.plain = tens(m, arr((2,)), dev)                    # a plain attribute, not a buffer
        net.buf = m.Buffer(tens(m, arr((2,)), dev), persistent=False)
        net.first.running = tens(m, arr((3,), 9), dev)         # replacing a buffer keeps it a buffer
        net.sub = m.Linear(2, 2) if m is torch.nn else nn.Identity()
        del net.sub
        net.bias = None                                        # a registered parameter can become None
    assert names(ours.named_parameters()) == names(ref.named_parameters())
    assert names(ours.named_buffers()) == names(ref.named_buffers())
    assert list(ours.state_dict()) == list(ref.state_dict())
    assert "plain" not in ours._buffers and isinstance(ours.plain, tdx.Tensor)
    assert ours.bias is None
    assert_close(ours.first.running, ref.first.running)


def _raises_like(tdx_fn, torch_fn, same_message=True, replace=()):
    with pytest.raises(Exception) as ref:
        torch_fn()
    kind = type(ref.value)
    with pytest.raises(kind) as got:
        tdx_fn()
    assert isinstance(got.value, tdx.TdxError)
    if same_message:
        want = str(ref.value)
        for a, b in replace:
            want = want.replace(a, b)
        assert str(got.value) == want


def test_registration_errors_match_torch(device):
    ours, ref = build(nn, device), build(torch.nn)
    t, r = tdx.ones(2, device=device), torch.ones(2)
    _raises_like(lambda: ours.register_parameter("a.b", None), lambda: ref.register_parameter("a.b", None))
    _raises_like(lambda: ours.register_parameter("", None), lambda: ref.register_parameter("", None))
    _raises_like(lambda: ours.register_parameter("forward", None), lambda: ref.register_parameter("forward", None))
    _raises_like(lambda: ours.register_parameter(1, None), lambda: ref.register_parameter(1, None))
    _raises_like(lambda: ours.register_parameter("x", t), lambda: ref.register_parameter("x", r),
                 replace=[("torch.FloatTensor", "tdx.Tensor")])
    _raises_like(lambda: ours.register_buffer("a.b", t), lambda: ref.register_buffer("a.b", r))
    _raises_like(lambda: ours.register_buffer("x", 3), lambda: ref.register_buffer("x", 3))
    _raises_like(lambda: ours.add_module("x", 3), lambda: ref.add_module("x", 3))
    _raises_like(lambda: ours.add_module("a.b", None), lambda: ref.add_module("a.b", None))
    _raises_like(lambda: setattr(ours, "bias", t), lambda: setattr(ref, "bias", r),
                 replace=[("torch.FloatTensor", "tdx.Tensor")])
    _raises_like(lambda: setattr(ours, "first", 3), lambda: setattr(ref, "first", 3))
    _raises_like(lambda: ours.missing, lambda: ref.missing)
    w = tdx.ones(2, device=device, dtype=tdx.float32).requires_grad_()
    tw = torch.ones(2).requires_grad_()
    _raises_like(lambda: ours.register_parameter("y", nn.Parameter(w) * 2),
                 lambda: ref.register_parameter("y", torch.nn.Parameter(tw) * 2), same_message=False)

    class Early(nn.Module):
        def __init__(self):
            self.p = nn.Parameter(tdx.ones(1))

    class TEarly(torch.nn.Module):
        def __init__(self):
            self.p = torch.nn.Parameter(torch.ones(1))

    _raises_like(Early, TEarly)


def test_get_submodule_parameter_buffer(device):
    ours, ref = build(nn, device), build(torch.nn)
    assert ours.get_submodule("body.0") is ours.body[0]
    assert ours.get_submodule("") is ours
    assert ours.get_parameter("heads.b.w") is ours.heads["b"].w
    assert ours.get_buffer("first.running") is ours.first.running
    for target in ("body.7", "first.w", "nope"):
        _raises_like(lambda: ours.get_submodule(target), lambda: ref.get_submodule(target))
    _raises_like(lambda: ours.get_parameter("first.running"), lambda: ref.get_parameter("first.running"))
    _raises_like(lambda: ours.get_buffer("first.w"), lambda: ref.get_buffer("first.w"))
    ours.set_submodule("body.1", nn.Flatten())
    assert isinstance(ours.body[1], nn.Flatten)


# state dict ---------------------------------------------------------------------------------------
def converted(sd):
    out = OrderedDict((k, tdx.tensor(v.numpy())) for k, v in sd.items())
    out._metadata = sd._metadata
    return out


def test_load_state_dict_from_torch(device):
    ours, ref = build(nn, device), build(torch.nn)
    with torch.no_grad():
        for p in ref.parameters():
            p.mul_(3)
        ref.first.running.add_(2)
    w = ours.first.w
    result = ours.load_state_dict(converted(ref.state_dict()))
    assert repr(result) == repr(ref.load_state_dict(ref.state_dict())) == "<All keys matched successfully>"
    assert result.missing_keys == [] and result.unexpected_keys == []
    assert ours.first.w is w and w.requires_grad and w.device == tdx.device(device)
    for (k, v), (tk, tv) in zip(ours.state_dict().items(), ref.state_dict().items()):
        assert k == tk
        assert_close(v, tv)


def test_load_state_dict_errors_match_torch(device):
    ours, ref = build(nn, device), build(torch.nn)
    sd = ref.state_dict()
    del sd["bias"]
    sd["stray"] = torch.zeros(1)
    sd["first.extra"] = torch.zeros(1)
    _raises_like(lambda: ours.load_state_dict(converted(sd)), lambda: ref.load_state_dict(sd))
    got, want = ours.load_state_dict(converted(sd), strict=False), ref.load_state_dict(sd, strict=False)
    assert got.missing_keys == want.missing_keys and got.unexpected_keys == want.unexpected_keys
    assert repr(got) == repr(want)
    bad = ref.state_dict()
    bad["first.w"] = torch.zeros(2, 3)
    _raises_like(lambda: ours.load_state_dict(converted(bad)), lambda: ref.load_state_dict(bad),
                 replace=[("torch.Size", "tdx.Size")])
    _raises_like(lambda: ours.load_state_dict([1]), lambda: ref.load_state_dict([1]))


def test_load_state_dict_assign(device):
    ours, ref = build(nn, device), build(torch.nn)
    sd = converted(ref.state_dict())
    sd = OrderedDict((k, v.to(device)) for k, v in sd.items())
    ours.load_state_dict(sd, assign=True)
    assert isinstance(ours.first.w, nn.Parameter) and ours.first.w.requires_grad
    assert isinstance(ours.tied.w, nn.Parameter)
    assert ours.first.running is sd["tied.running"]  # loaded twice through the tied name, as torch
    assert_close(ours.bias, ref.bias.detach())


def test_state_dict_hooks(device):
    ours = build(nn, device)
    calls = []
    h1 = ours.register_state_dict_pre_hook(lambda mod, prefix, keep: calls.append(("pre", prefix)))
    h2 = ours.first.register_state_dict_post_hook(lambda mod, sd, prefix, meta: calls.append(("post", prefix)))
    ours.state_dict()
    assert calls == [("pre", ""), ("post", "first."), ("post", "tied.")]  # tied: saved under both names
    h1.remove()
    h2.remove()
    calls.clear()
    ours.state_dict()
    assert calls == []
    ours._register_state_dict_hook(lambda mod, sd, prefix, meta: OrderedDict(only=tdx.ones(1)))
    assert list(ours.state_dict()) == ["only"]

    def returns(mod, sd, prefix, meta):
        return {}

    fresh = build(nn, device)
    fresh.register_state_dict_post_hook(returns)
    with pytest.raises(RuntimeError, match="must return None"):
        fresh.state_dict()
    with pytest.raises(RuntimeError):
        fresh._register_state_dict_hook(returns)
    seen = []
    fresh2 = build(nn, device)
    fresh2.register_load_state_dict_post_hook(lambda mod, keys: keys.missing_keys.clear())
    fresh2.first.register_load_state_dict_pre_hook(lambda mod, sd, prefix, *rest: seen.append((mod, prefix)))
    sd = fresh2.state_dict()
    del sd["bias"]
    fresh2.load_state_dict(sd)  # the post hook clears the missing key, so strict loading passes
    assert seen == [(fresh2.first, "first."), (fresh2.first, "tied.")]


# hooks --------------------------------------------------------------------------------------------
def test_forward_hooks_match_torch(device):
    logs = {}
    for m, dev in ((torch.nn, "cpu"), (nn, device)):
        net = build(m, dev)
        log = logs[m] = []
        x = tens(m, arr((2, 3), 5), dev)
        net.register_forward_pre_hook(lambda mod, args: log.append("pre1"))
        net.register_forward_pre_hook(lambda mod, args: log.append("pre0"), prepend=True)
        net.register_forward_pre_hook(lambda mod, args, kw: (log.append(("kw", sorted(kw))), (args, kw))[1],
                                      with_kwargs=True)
        net.first.register_forward_pre_hook(lambda mod, args: (args[0] * 2,))
        h = net.register_forward_hook(lambda mod, args, out: out + 1)
        net.register_forward_hook(lambda mod, args, kw, out: log.append(("post", len(args))), with_kwargs=True)
        y = net(x)
        h.remove()
        y2 = net(x)
        logs[m].append((y.detach().cpu().numpy().round(5).tolist(), y2.detach().cpu().numpy().round(5).tolist()))
    assert logs[nn] == logs[torch.nn]


def test_blocks_hand_their_output_to_a_lazy_executor(device, monkeypatch):
    """A module with submodules hands its output to a lazy executor's ``settle`` as it returns (the block then
    computes while Python builds the next one); leaf modules and eager executors are not asked, with or without
    hooks, and a tuple led by a tensor settles that tensor."""

    class Pair(nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = nn.Linear(3, 3)

        def forward(self, x):
            return self.inner(x), None

    net = build(nn, device)
    x = tdx.tensor(arr((2, 3), 5), device=device)
    ex = x._ex
    settled = []
    monkeypatch.setattr(type(ex), "settle", lambda self, native: settled.append(native))
    y = net(x)
    assert [id(n) for n in settled[-1:]] == ([id(y._n)] if ex.caps.lazy else [])
    assert len(settled) == (2 if ex.caps.lazy else 0)  # body (a Sequential) and net; Block has no submodules
    settled.clear()
    net.register_forward_hook(lambda mod, args, out: out * 2)
    y = net(x)
    assert [id(n) for n in settled] == ([id(settled[0]), id(y._n)] if ex.caps.lazy else [])
    settled.clear()
    pair = Pair().to(device)
    out, none = pair(x)
    assert none is None and [id(n) for n in settled] == ([id(out._n)] if ex.caps.lazy else [])
    settled.clear()
    record = nn.ModuleDict({"pair": pair})
    record.forward = lambda x: {"logits": record["pair"](x)[0] + 1, "cache": None}
    out = record(x)["logits"]
    assert [id(n) for n in settled[-1:]] == ([id(out._n)] if ex.caps.lazy else [])
    assert_close(y, build(torch.nn)(torch.tensor(arr((2, 3), 5))) * 2)


def test_a_block_whose_output_cannot_be_computed_raises_at_the_read(device):
    """A compiled step that writes parameters it was not told of (the optimizer not passed as state) leaves them
    unreadable on MLX; a block over them then returns as it did before blocks settled their output, and the
    read raises tdx's typed error, not MLX's own from inside the module call."""
    tdx.manual_seed(0)
    m = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)).to(device)
    opt = tdx.optim.SGD(m.parameters(), lr=0.1)
    x, y = tdx.randn(5, 4, device=device), tdx.randn(5, 2, device=device)

    @tdx.compile
    def step(x, y):
        opt.zero_grad()
        loss = ((m(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        return loss

    step(x, y)
    out = m(x)
    try:
        out.sum().item()
    except RuntimeError as err:
        assert isinstance(err, tdx.TdxError), repr(err)


def test_always_call_hook_runs_on_error(device):
    for m in (torch.nn, nn):
        net = m.Identity() if m is nn else torch.nn.Identity()
        seen = []
        net.register_forward_pre_hook(lambda mod, args: 1 / 0)
        net.register_forward_hook(lambda mod, args, out: seen.append("always"), always_call=True)
        net.register_forward_hook(lambda mod, args, out: seen.append("normal"))
        with pytest.raises(ZeroDivisionError):
            net(1)
        assert seen == ["always"]
    with nn.Identity().register_forward_hook(lambda *a: None) as handle:
        assert handle.id >= 0


def test_backward_hooks_are_reported_unsupported(device):
    with pytest.raises(tdx.UnsupportedOpError, match="backward hooks"):
        nn.Identity().register_full_backward_hook(lambda *a: None)


# repr ---------------------------------------------------------------------------------------------
def test_repr_matches_torch(device):
    assert repr(build(nn, device)) == repr(build(torch.nn))

    def tree(m):
        return m.Sequential(OrderedDict(
            lst=m.ModuleList([m.Identity(), m.Identity(), m.Identity(), m.Flatten(1, 2), m.Flatten(1, 2)]),
            dic=m.ModuleDict({"u": m.Unflatten(1, (2, 3)), "e": m.ModuleList()}),
            seq=m.Sequential()))

    assert repr(tree(nn)) == repr(tree(torch.nn))
    plist = nn.ParameterList([tdx.ones(2, 3, device=device), tdx.zeros(4, dtype=tdx.float64, device="cpu"), "x"])
    tlist = torch.nn.ParameterList([torch.ones(2, 3), torch.zeros(4, dtype=torch.float64), "x"])
    dev = f" ({device})" if tdx.device(device).type != "cpu" else ""
    assert repr(plist) == repr(tlist).replace("torch.", "tdx.").replace("of size 2x3]", f"of size 2x3{dev}]")
    pdict = nn.ParameterDict({"b": tdx.ones(2, device="cpu"), "a": tdx.zeros(3, 2, dtype=tdx.float64, device="cpu")})
    tdict = torch.nn.ParameterDict({"b": torch.ones(2), "a": torch.zeros(3, 2, dtype=torch.float64)})
    assert repr(pdict) == repr(tdict).replace("torch.", "tdx.")


@pytest.mark.float64
def test_parameter_repr_and_type(device):
    p = nn.Parameter(tdx.tensor([1.0, 2.5], device=device))
    want = repr(torch.nn.Parameter(torch.tensor([1.0, 2.5])))
    if tdx.device(device).type != "cpu":
        want = want.replace("], requires_grad", f"], device='{device}', requires_grad")
    assert repr(p) == want
    assert isinstance(p, tdx.Tensor) and isinstance(p, nn.Parameter) and type(p) is nn.Parameter
    assert p.requires_grad and p.is_leaf and p.grad_fn is None
    assert not nn.Parameter(tdx.ones(1, device=device), requires_grad=False).requires_grad
    with tdx.no_grad():
        assert nn.Parameter(tdx.ones(1, device=device)).requires_grad  # no_grad does not change the default
    assert nn.Parameter().shape == (0,)
    out = p * 2 + tdx.ones(2, device=device)
    assert type(out) is tdx.Tensor and not isinstance(out, nn.Parameter)
    assert type(p.data) is tdx.Tensor and type(p.detach()) is tdx.Tensor
    assert nn.parameter.Parameter is nn.Parameter
    w = nn.Parameter(tdx.ones(2, dtype=tdx.float64, device=device))
    moved = tdx.zeros(2).to(w)  # the x.to(self.weight) idiom
    assert moved.dtype is tdx.float64 and moved.device == w.device and type(moved) is tdx.Tensor
    b = nn.Buffer(tdx.ones(2, device=device), persistent=False)
    assert isinstance(b, nn.Buffer) and isinstance(b, tdx.Tensor) and b.persistent is False
    assert not isinstance(tdx.ones(1), (nn.Parameter, nn.Buffer))


@pytest.mark.float64
def test_uninitialized_parameter(device):
    u = nn.UninitializedParameter(device=device)
    assert nn.parameter.is_lazy(u) and repr(u) == "<UninitializedParameter>"
    with pytest.raises(RuntimeError):
        u.shape
    u.materialize((2, 3))
    assert type(u) is nn.Parameter and u.shape == (2, 3) and u.requires_grad and u.device == tdx.device(device)
    b = nn.UninitializedBuffer(device=device)
    b.materialize((4,), dtype=tdx.float64)
    assert type(b) is tdx.Tensor and b.dtype is tdx.float64


# parameters and autograd --------------------------------------------------------------------------
def test_parameter_ops_and_autograd_match_torch(device):
    a = arr((3, 3), 7)
    p, tp = nn.Parameter(tdx.tensor(a, device=device)), torch.nn.Parameter(torch.tensor(a))
    x, tx = tdx.tensor(arr((2, 3), 8), device=device), torch.tensor(arr((2, 3), 8))
    for f in (lambda q, y: (y @ q).relu().sum(), lambda q, y: (q * q).mean() + (y - q[0]).exp().sum()):
        f(p, x).backward()
        f(tp, tx).backward()
        assert_close(p.grad, tp.grad)
        p.grad = None
        tp.grad = None
    with tdx.no_grad():
        p.add_(1)
        p.data.mul_(2)
        p[0, 0] = 5.0
    with torch.no_grad():
        tp.add_(1)
        tp.data.mul_(2)
        tp[0, 0] = 5.0
    assert_close(p.detach(), tp.detach())
    assert type(p) is nn.Parameter and p.requires_grad


def test_parameter_aliases_data_on_torch_executors():
    d = tdx.zeros(3)
    p = nn.Parameter(d)
    d.add_(1)
    assert p.tolist() == [1.0, 1.0, 1.0]  # as torch: the parameter shares the tensor's storage
    p.data = tdx.ones(2, dtype=tdx.float64)
    assert p.dtype is tdx.float64 and p.shape == (2,) and p.requires_grad and type(p) is nn.Parameter


def _noop_hook(module, args, out):
    return None


class PickleNet(nn.Module):
    def __init__(self, device="cpu"):
        super().__init__()
        self.lin = nn.Parameter(tdx.tensor(arr((2, 2)), device=device))
        self.seq = nn.Sequential(nn.Flatten(), nn.Identity())
        self.register_buffer("count", tdx.zeros(1, dtype=tdx.int64, device=device))
        self.tied = self.seq


def test_deepcopy_and_pickle(device):
    net = PickleNet(device)
    net.lin.tag = "kept"
    net.register_forward_hook(_noop_hook)
    # torch's Parameter.__deepcopy__ drops attributes set on the parameter; pickling keeps them
    for clone, tagged in ((copy.deepcopy(net), False), (pickle.loads(pickle.dumps(net)), True)):
        assert type(clone.lin) is nn.Parameter and clone.lin.requires_grad and clone.lin is not net.lin
        assert clone.lin.device == tdx.device(device) and hasattr(clone.lin, "tag") == tagged
        assert clone.tied is clone.seq
        assert list(clone.state_dict()) == list(net.state_dict())
        for v, w in zip(clone.state_dict().values(), net.state_dict().values()):
            assert np.array_equal(v.cpu().numpy(), w.cpu().numpy()) and v.dtype is w.dtype
        assert len(clone._forward_hooks) == 1
    p = nn.Parameter(tdx.ones(2, device=device), requires_grad=False)
    q = pickle.loads(pickle.dumps(p))
    assert type(q) is nn.Parameter and not q.requires_grad and q.device == tdx.device(device)


# conversion ---------------------------------------------------------------------------------------
@pytest.mark.float64
def test_to_device_keeps_parameter_identity(device):
    net = build(nn, "cpu")
    params = list(net.parameters())
    x = tdx.tensor(arr((2, 3), 5), device="cpu")
    net(x).sum().backward()
    grads = [p.grad.cpu().numpy().copy() for p in params]
    out = net.to(device)
    assert out is net
    assert list(net.parameters()) == params or all(a is b for a, b in zip(net.parameters(), params))
    for p, g in zip(params, grads):
        assert p.device == tdx.device(device) and p.requires_grad and type(p) is nn.Parameter
        assert p.grad is not None and p.grad.device == tdx.device(device)
        assert np.array_equal(p.grad.cpu().numpy(), g)
    assert all(b.device == tdx.device(device) for b in net.buffers())
    ref = build(torch.nn)
    assert_close(net(x.to(device)), ref(torch.tensor(arr((2, 3), 5))))
    net.double()
    assert all(p.dtype is tdx.float64 for p in params) and all(a is b for a, b in zip(net.parameters(), params))
    net.to(tdx.float32).to(device=device, dtype=tdx.float32, non_blocking=True)
    assert all(p.dtype is tdx.float32 for p in params)
    net.to(tdx.zeros(1, dtype=tdx.float64, device=device))
    assert all(p.dtype is tdx.float64 for p in params)
    net.first.register_buffer("steps", tdx.zeros(1, dtype=tdx.int64))
    net.float()
    assert net.first.steps.dtype is tdx.int64  # integer buffers are not cast
    with pytest.raises(TypeError, match="floating point or complex"):
        net.to(tdx.int32)
    assert net.cpu().bias.device == tdx.device("cpu")


# modes and gradients ------------------------------------------------------------------------------
def test_train_eval_requires_grad_apply(device):
    ours = build(nn, device)
    assert ours.training and ours.eval() is ours
    assert not any(m.training for m in ours.modules())
    ours.train()
    assert all(m.training for m in ours.modules())
    with pytest.raises(ValueError, match="boolean"):
        ours.train("yes")
    ours.requires_grad_(False)
    assert not any(p.requires_grad for p in ours.parameters())
    seen = []
    ours.apply(lambda m: seen.append(type(m).__name__))
    ref_seen = []
    build(torch.nn).apply(lambda m: ref_seen.append(type(m).__name__))
    assert seen == ref_seen
    assert "first" in dir(ours) and "w" in dir(ours.first) and "running" in dir(ours.first)


def _backward(net, m, device):
    x = tens(m, arr((2, 3), 5), device)
    net(x).pow(2).sum().backward()


@pytest.mark.parametrize("set_to_none", [True, False])
def test_zero_grad(device, set_to_none):
    ours = build(nn, device)
    _backward(ours, nn, device)
    assert all(p.grad is not None for p in ours.parameters())
    ours.zero_grad(set_to_none=set_to_none)
    for p in ours.parameters():
        if set_to_none:
            assert p.grad is None
        else:
            assert p.grad is not None and not p.grad.cpu().numpy().any()
    _backward(ours, nn, device)
    ref = build(torch.nn)
    _backward(ref, torch.nn, "cpu")
    for p, tp in zip(ours.parameters(), ref.parameters()):
        assert_close(p.grad, tp.grad)  # the zeroed gradients do not leak into the next backward


def test_grad_zero_idiom(device):
    ours = build(nn, device)
    _backward(ours, nn, device)
    for p in ours.parameters():
        p.grad.zero_()
    assert all(not p.grad.cpu().numpy().any() for p in ours.parameters())


def test_sgd_training_matches_torch(device):
    """The usual manual training loop (``p.data.add_``, ``zero_grad``) follows torch for 5 steps."""
    ours, ref = build(nn, device), build(torch.nn)
    x, tx = tdx.tensor(arr((4, 3), 11), device=device), torch.tensor(arr((4, 3), 11))
    for _ in range(5):
        for net, inp in ((ours, x), (ref, tx)):
            net.zero_grad()
            loss = net(inp).pow(2).mean()
            loss.backward()
            for p in net.parameters():
                p.data.add_(-0.1 * p.grad)
    for p, tp in zip(ours.parameters(), ref.parameters()):
        assert_close(p.detach(), tp.detach(), rtol=1e-5, atol=1e-6)  # 5 steps of float32 round-off


def test_module_without_forward_raises():
    with pytest.raises(NotImplementedError, match="forward"):
        nn.Module()(1)
    with pytest.raises(TypeError):
        nn.Module(3)


# containers ---------------------------------------------------------------------------------------
def seq_ops(m):
    """The same list operations on a torch or tdx Sequential; returns the key list after each."""
    s = m.Sequential(m.Identity(), m.Flatten(), m.Identity(), m.Flatten(0))
    out = [list(s._modules)]
    out.append(type(s[-1]).__name__)
    out.append(repr(s[1:3]))
    del s[1]
    out.append(repr(s))
    s.append(m.Flatten(2))
    s.insert(-1, m.Identity())
    s.extend(m.Sequential(m.Flatten(3)))
    out.append(repr(s))
    out.append(type(s.pop(0)).__name__)
    out.append(repr(s + m.Sequential(m.Identity())))
    out.append(repr(s * 2))
    s[0] = m.Flatten(5)
    del s[::2]
    out.append(repr(s))
    out.append(len(s))
    return out


def test_sequential_operations_match_torch():
    assert seq_ops(nn) == seq_ops(torch.nn)
    _raises_like(lambda: nn.Sequential()[0], lambda: torch.nn.Sequential()[0])
    _raises_like(lambda: nn.Sequential() + 1, lambda: torch.nn.Sequential() + 1,
                 replace=[("torch.nn", "tdx.nn")])
    _raises_like(lambda: nn.Sequential(nn.Identity()).insert(5, nn.Identity()),
                 lambda: torch.nn.Sequential(torch.nn.Identity()).insert(5, torch.nn.Identity()))


def test_sequential_forward(device):
    s = nn.Sequential(nn.Flatten(), nn.Unflatten(1, (3, 2)), nn.Identity())
    t = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Unflatten(1, (3, 2)), torch.nn.Identity())
    a = arr((2, 3, 2), 3)
    assert_close(s(tdx.tensor(a, device=device)), t(torch.tensor(a)))
    _raises_like(lambda: nn.Unflatten(1, [2, 1.5]), lambda: torch.nn.Unflatten(1, [2, 1.5]))


def modlist_ops(m):
    lst = m.ModuleList([m.Identity(), m.Flatten()])
    lst.append(m.Identity())
    lst.extend([m.Flatten(0), m.Flatten(0)])
    lst.insert(1, m.Unflatten(0, (1, 1)))
    lst += [m.Identity()]
    out = [repr(lst), repr(lst[1:4]), type(lst[-2]).__name__]
    del lst[0]
    lst[0] = m.Flatten(3)
    out += [repr(lst), type(lst.pop(1)).__name__, repr(lst + m.ModuleList([m.Identity()]))]
    d = m.ModuleDict([("z", m.Identity()), ("a", m.Flatten())])
    d.update({"m": m.Identity()})
    d["b"] = m.Flatten(0)
    out += [list(d.keys()), "a" in d, type(d.pop("z")).__name__, repr(d), len(d)]
    d.clear()
    out.append(len(d))
    return out


def test_modulelist_and_moduledict_match_torch():
    assert modlist_ops(nn) == modlist_ops(torch.nn)
    _raises_like(lambda: nn.ModuleList([])[3], lambda: torch.nn.ModuleList([])[3])
    _raises_like(lambda: nn.ModuleList(3), lambda: torch.nn.ModuleList(3))
    _raises_like(lambda: nn.ModuleDict([("a",)]), lambda: torch.nn.ModuleDict([("a",)]))


def test_parameter_containers(device):
    plist = nn.ParameterList([tdx.ones(2, device=device)])
    plist.append(nn.Parameter(tdx.zeros(3, device=device)))
    plist.extend([tdx.ones(1, device=device)])
    assert all(isinstance(p, nn.Parameter) for p in plist) and len(plist) == 3
    assert names(plist.named_parameters()) == ["0", "1", "2"]
    assert len(plist[1:]) == 2 and plist[-1].shape == (1,)
    with pytest.raises(TypeError):
        plist.extend(tdx.ones(2))
    with pytest.raises(RuntimeError):
        plist()
    pdict = nn.ParameterDict({"w": tdx.ones(2, device=device)})
    pdict["v"] = tdx.zeros(1, device=device)
    pdict.update([("u", nn.Parameter(tdx.ones(1, device=device)))])
    assert list(pdict.keys()) == ["w", "v", "u"] and isinstance(pdict["v"], nn.Parameter)
    assert names(pdict.named_parameters()) == ["w", "v", "u"]
    assert pdict.get("x") is None and "w" in pdict and len(pdict | nn.ParameterDict({"x": tdx.ones(1)})) == 4
    k, v = pdict.popitem()
    assert k == "u" and len(pdict) == 2
    with pytest.raises(TypeError, match="not a string"):
        pdict[1] = tdx.ones(1)

    class Holder(nn.Module):
        def __init__(self):
            super().__init__()
            self.ps = nn.ParameterList([tdx.ones(2, device=device)])

    h = Holder()
    assert names(h.named_parameters()) == ["ps.0"] and list(h.state_dict()) == ["ps.0"]


def _net(nn):
    net = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    net[0].weight.requires_grad_(False)  # a frozen layer, as fine-tuning freezes a backbone
    net[0].bias.requires_grad = False
    return net


@pytest.mark.parametrize("as_parameters", [False, True], ids=["tensors", "parameters"])
def test_frozen_parameters_stay_frozen_through_assign(device, as_parameters):
    """``load_state_dict(assign=True)`` gives each new Parameter the requires_grad of the one it replaces."""
    ref = _net(torch.nn)
    ours = _net(tdx.nn).to(device)
    state = ref.state_dict()
    if as_parameters:
        state = OrderedDict((k, torch.nn.Parameter(v.clone())) for k, v in state.items())
    ref.load_state_dict(state, assign=True)
    loaded = OrderedDict((k, (tdx.nn.Parameter if as_parameters else lambda x: x)(
        tdx.tensor(v.detach().numpy(), device=device))) for k, v in state.items())
    ours.load_state_dict(loaded, assign=True)
    for (name, p), (_, q) in zip(ours.named_parameters(), ref.named_parameters()):
        assert isinstance(p, tdx.nn.Parameter), name
        assert p.requires_grad == q.requires_grad, name
    assert [n for n, p in ours.named_parameters() if p.requires_grad] == ["2.weight", "2.bias"]
    x = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    ours(tdx.tensor(x, device=device)).sum().backward()
    ref(torch.tensor(x)).sum().backward()
    assert ours[0].weight.grad is None and ours[2].weight.grad is not None
    assert_close(ours[2].weight.grad, ref[2].weight.grad)
