"""A training loop profiled with torch.profiler, in the idioms of torch's profiler recipe: a schedule,
record_function labels, on_trace_ready, prof.step(), key_averages().table(). Prints the losses and the
labelled events' counts per recorded cycle (not timings, so that the output compares across runs)."""

import torch
import torch.nn as nn
from torch.profiler import ProfilerActivity, profile, record_function, schedule

LABELS = ("forward", "backward", "optimizer_step")
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
X = torch.randn(64, 10)
Y = X.sum(1, keepdim=True) * 0.5
cycles = []


def trace_handler(p):
    averages = p.key_averages()
    counts = {e.key: e.count for e in averages if e.key in LABELS or e.key.startswith("ProfilerStep")}
    cycles.append(sorted(counts.items()))
    table = averages.table(sort_by="self_cpu_time_total", row_limit=10)
    assert "Self CPU time total" in table


with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=1, warmup=1, active=2, repeat=2),
             on_trace_ready=trace_handler, record_shapes=True) as prof:
    for step in range(10):
        with record_function("forward"):
            loss = ((model(X) - Y) ** 2).mean()
        with record_function("backward"):
            optimizer.zero_grad()
            loss.backward()
        with record_function("optimizer_step"):
            optimizer.step()
        prof.step()
        print(f"step {step} loss {loss.item():.6f}")

for i, cycle in enumerate(cycles):
    print(f"cycle {i}: {cycle}")
print("steps profiled", prof.step_num)
print(f"final loss {loss.item():.6f}")
