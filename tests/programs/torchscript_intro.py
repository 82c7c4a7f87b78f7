"""Introduction to TorchScript, in the idioms of torch's tutorial: a cell traced and scripted, control flow
in a scripted gate, a scripted function, ignore/unused/export, fork and wait. Prints outputs and the
modules' printed forms."""

from typing import List

import torch


class MyDecisionGate(torch.nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x
        else:
            return -x


class MyCell(torch.nn.Module):
    def __init__(self, dg):
        super().__init__()
        self.dg = dg
        self.linear = torch.nn.Linear(4, 4)

    def forward(self, x, h):
        new_h = torch.tanh(self.dg(self.linear(x)) + h)
        return new_h, new_h


class MyRNNLoop(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.cell = torch.jit.trace(MyCell(scripted_gate), (x, h))

    def forward(self, xs):
        h, y = torch.zeros(3, 4), torch.zeros(3, 4)
        for i in range(xs.size(0)):
            y, h = self.cell(xs[i], h)
        return y, h


class WrapRNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.loop = torch.jit.script(MyRNNLoop())

    def forward(self, xs):
        y, h = self.loop(xs)
        return torch.relu(y)

    @torch.jit.ignore
    def debug(self, y):
        return float(y.abs().sum())

    @torch.jit.unused
    def legacy(self, y):
        raise RuntimeError("not called")

    @torch.jit.export
    def summary(self, xs) -> List[float]:
        return [float(v) for v in self(xs).sum(dim=1)]


@torch.jit.script
def scaled_sum(x, scale: float = 2.0):
    if torch.jit.is_scripting():
        return x.sum()
    return x.sum() * scale


def square(x):
    return x * x


torch.manual_seed(0)
torch.set_grad_enabled(False)
x, h = torch.rand(3, 4), torch.rand(3, 4)

my_cell = MyCell(MyDecisionGate())
traced_cell = torch.jit.trace(my_cell, (x, h))
print(traced_cell)
print(traced_cell(x, h))
print(isinstance(traced_cell, torch.jit.ScriptModule), isinstance(traced_cell, torch.nn.Module))

scripted_gate = torch.jit.script(MyDecisionGate())
scripted_cell = torch.jit.script(MyCell(scripted_gate))
print(scripted_cell)
print(scripted_cell(x, h))
print(scripted_gate(-x).sum().item() > 0)

rnn_loop = torch.jit.script(MyRNNLoop())
wrapped = torch.jit.script(WrapRNN())
xs = torch.rand(10, 3, 4)
print(wrapped)
out = wrapped(xs)
print(out)
print(round(wrapped.debug(out), 4), [round(v, 4) for v in wrapped.summary(xs)])

print(scaled_sum(torch.ones(3)), torch.jit.is_scripting(), torch.jit.is_tracing())
traced_square = torch.jit.trace(square, torch.ones(2))
print(traced_square(torch.arange(3.0)))
fut = torch.jit.fork(square, torch.tensor([3.0]))
print(torch.jit.wait(fut))
print(torch.jit.annotate(List[int], []), torch.jit.isinstance([1, 2], List[int]))
state = scripted_cell.state_dict()
print(sorted(state), torch.equal(state["linear.weight"], scripted_cell.linear.weight))
