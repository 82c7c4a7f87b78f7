"""Invert a traced program with torch.fx, in the idiom of pytorch/examples' fx "invert" example:
trace, walk the graph backwards replacing each op by its inverse, and build a GraphModule."""
import torch
import torch.fx as fx

invert_mapping = {}


def add_inverse(a, b):
    invert_mapping[a] = b
    invert_mapping[b] = a


inverses = [
    (torch.sin, torch.arcsin),
    (torch.cos, torch.arccos),
    (torch.tan, torch.arctan),
    (torch.exp, torch.log),
]
for a, b in inverses:
    add_inverse(a, b)


def invert(model):
    fx_model = fx.symbolic_trace(model)
    new_graph = fx.Graph()
    env = {}
    for node in reversed(fx_model.graph.nodes):
        if node.op == "call_function":
            new_node = new_graph.call_function(invert_mapping[node.target], (env[node.name],))
            env[node.args[0].name] = new_node
        elif node.op == "output":
            new_node = new_graph.placeholder(node.name)
            env[node.args[0].name] = new_node
        elif node.op == "placeholder":
            new_graph.output(env[node.name])
        else:
            raise RuntimeError("Not implemented")
    new_graph.lint()
    return fx.GraphModule(fx_model, new_graph)


def f(x):
    return torch.exp(torch.tan(x))


res = invert(f)
print(res.code)
x = torch.arange(5) * 0.25 + 0.1
print(f(res(x)))
print(res(f(x)))


class Inverse(fx.Transformer):
    """The same with an fx.Transformer: each call_function node becomes its inverse, in place."""

    def call_function(self, target, args, kwargs):
        return super().call_function(invert_mapping.get(target, target), args, kwargs)


class Net(torch.nn.Module):
    def forward(self, x):
        return torch.cos(torch.sin(x))


net = fx.symbolic_trace(Net())
swapped = Inverse(net).transform()
print(swapped.code)
print(swapped(torch.linspace(0.1, 0.9, 5)))
