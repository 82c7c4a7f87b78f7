"""``tdx.fx`` against real ``torch.fx`` on CPU: tracing tdx modules and functions gives torch's
graph (the same ops, targets and names, the same ``.code``), the GraphModule computes what the
module computes on every device, and ``Interpreter``, ``Transformer``, ``replace_pattern``,
``wrap``, ``ShapeProp``, ``Tracer.is_leaf_module`` and graph edits behave as torch's."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import tdx
import tdx.fx as fx
from tdx.testing.parity import assert_close, tolerance


def _net(lib):
    nn, F = lib.nn, lib.nn.functional

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(2, 3, 3, padding=1)
            self.bn = nn.BatchNorm2d(3)
            self.block = nn.Sequential(nn.Linear(12, 8), nn.Tanh(), nn.Linear(8, 4))
            self.scale = nn.Parameter(lib.ones(4) * 0.5)
            self.register_buffer("shift", lib.arange(4.0))

        def forward(self, x):
            y = F.relu(self.bn(self.conv(x)))
            y = lib.flatten(F.max_pool2d(y, 2), 1)
            y = self.block(y) * self.scale + self.shift
            return lib.softmax(y, dim=-1), y.sum(dim=1, keepdim=True).neg()

    return Net


def _inputs(device):
    x = np.random.default_rng(0).normal(size=(2, 2, 4, 4)).astype(np.float32)
    return tdx.tensor(x, device=device), torch.tensor(x)


def _same_weights(tm, xm):
    xm.load_state_dict({k: tdx.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})


def test_symbolic_trace_matches_torch_graph_and_code(device):
    """The traced graph has torch's nodes (op, target name, args) and the same ``.code``; the
    GraphModule computes the module's outputs on every device."""
    torch.manual_seed(0)
    tm, xm = _net(torch)(), _net(tdx)()
    _same_weights(tm, xm)
    tg, xg = torch.fx.symbolic_trace(tm), fx.symbolic_trace(xm)
    t_nodes = [(n.op, n.name) for n in tg.graph.nodes]
    x_nodes = [(n.op, n.name) for n in xg.graph.nodes]
    assert x_nodes == t_nodes
    for tn, xn in zip(tg.graph.nodes, xg.graph.nodes):
        if tn.op in ("call_module", "get_attr", "call_method"):
            assert xn.target == tn.target
    assert xg.code == tg.code
    xg = xg.to(device)
    xm = xm.to(device)
    x, t = _inputs(device)
    tm.train()
    expected = tg(t)
    got = xg(x)
    rtol, atol = tolerance("float32", "module")
    for g, e in zip(got, expected):
        assert_close(g, e, rtol=rtol, atol=atol)
    assert isinstance(xg, tdx.nn.Module) and not isinstance(xg, torch.nn.Module)
    assert {k for k, _ in xg.named_parameters()} == {k for k, _ in tg.named_parameters()}


def test_graph_module_trains_and_gradients_match(device):
    """Gradients through a GraphModule equal torch's through its own."""
    torch.manual_seed(1)
    tm, xm = _net(torch)(), _net(tdx)()
    _same_weights(tm, xm)
    tg, xg = torch.fx.symbolic_trace(tm), fx.symbolic_trace(xm).to(device)
    x, t = _inputs(device)
    tg(t)[0][:, 1].sum().backward()
    xg(x)[0][:, 1].sum().backward()
    grads = dict(xg.named_parameters())
    for name, p in tg.named_parameters():
        assert_close(grads[name].grad, p.grad, rtol=1e-4, atol=1e-5, msg=name)


def test_trace_function_print_readable_and_recompile(device):
    """A function traces; editing the graph and recompiling changes ``forward`` and ``.code``."""
    def f(x, y):
        return tdx.exp(tdx.tan(x)) + y.relu() * 2

    def tf(x, y):
        return torch.exp(torch.tan(x)) + y.relu() * 2

    gm, tgm = fx.symbolic_trace(f), torch.fx.symbolic_trace(tf)
    assert gm.code == tgm.code
    a = tdx.tensor([0.1, 0.2, -0.3], device=device)
    assert_close(gm(a, a), f(a, a))
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target is tdx.exp:
            node.target = tdx.sin
    gm.recompile()
    assert "torch.sin(" in gm.code and "torch.exp(" not in gm.code
    assert_close(gm(a, a), tdx.sin(tdx.tan(a)) + a.relu() * 2)
    text = gm.print_readable(print_output=False)
    assert text.startswith("class f(torch.nn.Module):") and "def forward" in text


def test_interpreter_and_transformer(device):
    """An Interpreter subclass sees every node; a Transformer rewrites ops into a new tdx GraphModule."""
    class M(tdx.nn.Module):
        def forward(self, x):
            return tdx.sigmoid(x) + tdx.neg(x)

    gm = fx.symbolic_trace(M())
    seen = []

    class Spy(fx.Interpreter):
        def call_function(self, target, args, kwargs):
            seen.append(target.__name__ if hasattr(target, "__name__") else str(target))
            return super().call_function(target, args, kwargs)

    x = tdx.tensor([0.5, -1.0], device=device)
    assert_close(Spy(gm).run(x), tdx.sigmoid(x) - x)
    assert seen == ["sigmoid", "neg", "add"]

    class NegToRelu(fx.Transformer):
        def call_function(self, target, args, kwargs):
            return super().call_function(tdx.relu if target is tdx.neg else target, args, kwargs)

    new = NegToRelu(gm).transform()
    assert isinstance(new, fx.GraphModule) and "torch.relu(" in new.code
    assert_close(new(x), tdx.sigmoid(x) + x.relu())


def test_replace_pattern_and_wrap(device):
    """replace_pattern rewrites every match as torch's does; a wrapped function stays one node."""
    def pattern(a, b):
        return tdx.cat([a, b]).sum()

    def replacement(a, b):
        return tdx.stack([a, b]).sum()

    def f(a, b):
        return pattern(a, b) + pattern(b, a) * 2

    gm = fx.symbolic_trace(f)
    matches = fx.replace_pattern(gm, pattern, replacement)
    assert len(matches) == 2
    assert "torch.stack(" in gm.code and "torch.cat(" not in gm.code
    a, b = tdx.tensor([1.0, 2.0], device=device), tdx.tensor([3.0, 4.0], device=device)
    assert_close(gm(a, b), f(a, b))

    gm2 = fx.symbolic_trace(_uses_wrapped)
    ops = [(n.op, getattr(n.target, "__name__", n.target)) for n in gm2.graph.nodes]
    assert ("call_function", "_leaf_len") in ops
    assert_close(gm2(a), a * 2)


def _leaf_len(x):
    return len(x)


fx.wrap("_leaf_len")


def _uses_wrapped(x):
    return x * _leaf_len(x)


def test_shape_prop_and_custom_leaf_tracer(device):
    """ShapeProp records torch's TensorMetadata per node; a Tracer subclass's is_leaf_module decides
    which user modules stay one call_module node (tdx's own nn modules are leaves, as torch's)."""
    from tdx.fx.passes.shape_prop import ShapeProp

    model = tdx.nn.Sequential(tdx.nn.Linear(3, 5), tdx.nn.ReLU(), tdx.nn.Linear(5, 2)).to(device)
    gm = fx.symbolic_trace(model)
    ShapeProp(gm).propagate(tdx.zeros(4, 3, device=device))
    shapes = {n.name: tuple(n.meta["tensor_meta"].shape) for n in gm.graph.nodes if "tensor_meta" in n.meta}
    assert shapes == {"input_1": (4, 3), "_0": (4, 5), "_1": (4, 5), "_2": (4, 2), "output": (4, 2)}
    assert all(n.meta["tensor_meta"].dtype == tdx.float32 for n in gm.graph.nodes if "tensor_meta" in n.meta)

    class Block(tdx.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = tdx.nn.Linear(3, 3)

        def forward(self, x):
            return tdx.tanh(self.lin(x)) + x

    class Outer(tdx.nn.Module):
        def __init__(self):
            super().__init__()
            self.block = Block()
            self.head = tdx.nn.Linear(3, 1)

        def forward(self, x):
            return self.head(self.block(x))

    class BlockLeaf(fx.Tracer):
        def is_leaf_module(self, m, qualname):
            return isinstance(m, Block) or super().is_leaf_module(m, qualname)

    outer = Outer().to(device)
    default = [(n.op, n.target if isinstance(n.target, str) else n.target.__name__)
               for n in fx.Tracer().trace(outer).nodes]
    assert default == [("placeholder", "x"), ("call_module", "block.lin"), ("call_function", "tanh"),
                       ("call_function", "add"), ("call_module", "head"), ("output", "output")]
    graph = BlockLeaf().trace(outer)
    assert [(n.op, n.target) for n in graph.nodes if n.op == "call_module"] == [("call_module", "block"),
                                                                                ("call_module", "head")]
    leafy = fx.GraphModule(outer, graph)
    x = tdx.randn(4, 3, device=device)
    assert_close(leafy(x), outer(x))


def test_bad_inputs_are_typed(device):
    """Tracing something that is neither a module nor a function, or building a GraphModule from a
    wrong root, raises a typed error naming it; control flow on a Proxy raises torch's TraceError."""
    with pytest.raises(TypeError) as info:
        fx.symbolic_trace(42)
    assert isinstance(info.value, tdx.TdxError) and "int" in str(info.value)
    with pytest.raises(TypeError) as info:
        fx.GraphModule(42, fx.Graph())
    assert isinstance(info.value, tdx.TdxError)

    def branchy(x):
        if x.sum() > 0:
            return x
        return -x

    with pytest.raises(torch.fx.proxy.TraceError):
        fx.symbolic_trace(branchy)


def test_torch_fx_import_forms_under_the_alias():
    """The import lines fx programs write resolve under the torch alias to tdx's fx (torch's graph classes)."""
    from tdx.aliasing.torch_alias import torch_alias

    with torch_alias():
        import torch as alias_torch
        import torch.fx as alias_fx
        from torch.fx import GraphModule, Interpreter, Transformer, symbolic_trace  # noqa: F401
        from torch.fx.graph import Graph
        from torch.fx.node import Argument, Node, map_arg  # noqa: F401
        from torch.fx.passes.shape_prop import ShapeProp  # noqa: F401
        from torch.fx.proxy import Proxy, TraceError  # noqa: F401
        from torch.fx.subgraph_rewriter import replace_pattern  # noqa: F401

    assert alias_torch is tdx and alias_fx is fx and GraphModule is fx.GraphModule
    assert Graph is torch.fx.Graph and Node is torch.fx.Node and Proxy is torch.fx.Proxy
    assert not hasattr(tdx.fx.node, "torch")


def test_concrete_args_assert_and_deepcopy(device):
    """concrete_args specializes a flag as torch's does (a torch._assert node guards it), a traced
    torch._assert stays one node that raises AssertionError, and a deep copy computes the same."""
    import copy

    def build(lib):
        class M(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = lib.nn.Linear(3, 2)

            def forward(self, x, flag=True):
                lib._assert(x.dim() == 2, "need 2-d")
                if flag:
                    return self.lin(x).relu()
                return self.lin(x)

        return M()

    xm, tm = build(tdx), build(torch)
    gm = fx.symbolic_trace(xm.to(device), concrete_args={"flag": False})
    assert gm.code == torch.fx.symbolic_trace(tm, concrete_args={"flag": False}).code
    x = tdx.randn(2, 3, device=device)
    assert_close(gm(x, False), xm(x, False))
    with pytest.raises(AssertionError, match="need 2-d"):
        gm(tdx.randn(3, device=device), False)
    twin = copy.deepcopy(gm)
    assert twin.lin.weight is not gm.lin.weight
    assert_close(twin(x, False), gm(x, False))
