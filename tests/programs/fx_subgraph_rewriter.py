"""Rewrite subgraphs with torch.fx.subgraph_rewriter.replace_pattern, in the idiom of
pytorch/examples' fx examples, then check shapes with ShapeProp and run an Interpreter."""
import torch
import torch.fx as fx
from torch.fx import subgraph_rewriter
from torch.fx.passes.shape_prop import ShapeProp

torch.manual_seed(0)


class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(8, 8)

    def forward(self, x, w1, w2):
        m1 = torch.cat([w1, w2]).sum()
        m2 = torch.cat([w1, w2]).sum()
        y = self.linear(x) + m1 + m2
        return torch.relu(y).neg()


def pattern(w1, w2):
    return torch.cat([w1, w2]).sum()


def replacement(w1, w2):
    return torch.stack([w1, w2]).sum()


model = M()
traced = fx.symbolic_trace(model)
x, w1, w2 = torch.randn(4, 8), torch.randn(3), torch.randn(3)
before = traced(x, w1, w2)
matches = subgraph_rewriter.replace_pattern(traced, pattern, replacement)
print("matches:", len(matches))
print(traced.code)
after = traced(x, w1, w2)
print(torch.allclose(before, after), after.sum().item())

# a second rewrite: relu followed by neg becomes -relu written as a min
def relu_neg(y):
    return torch.relu(y).neg()


def clamp_neg(y):
    return torch.clamp(y, min=0.0).neg()


print("matches:", len(subgraph_rewriter.replace_pattern(traced, relu_neg, clamp_neg)))
print(traced.code)
print(torch.equal(traced(x, w1, w2), after))

ShapeProp(traced).propagate(x, w1, w2)
for node in traced.graph.nodes:
    meta = node.meta.get("tensor_meta")
    if meta is not None:
        print(node.name, node.op, tuple(meta.shape), meta.dtype)


class CountCalls(fx.Interpreter):
    def __init__(self, module):
        super().__init__(module)
        self.calls = {}

    def run_node(self, n):
        self.calls[n.op] = self.calls.get(n.op, 0) + 1
        return super().run_node(n)


interp = CountCalls(traced)
out = interp.run(x, w1, w2)
print(sorted(interp.calls.items()), torch.equal(out, after))


class LeafTracer(fx.Tracer):
    def is_leaf_module(self, m, qualname):
        return False


graph = LeafTracer().trace(model)
print([n.op for n in graph.nodes])
