"""A plain torch DDP training script (gloo, env:// from torchrun): run unchanged through ``python -m tdx run``."""

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
device = "cuda" if torch.cuda.is_available() else "cpu"
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1)).to(device)
ddp = DDP(model)
opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
g = torch.Generator().manual_seed(1)
X, Y = torch.randn(8, 4, generator=g), torch.randn(8, 1, generator=g)
x, y = X[4 * rank:4 * rank + 4].to(device), Y[4 * rank:4 * rank + 4].to(device)
for _ in range(5):
    opt.zero_grad()
    loss = ((ddp(x) - y) ** 2).mean()
    loss.backward()
    opt.step()
print(f"rank {rank} device {next(model.parameters()).device} weight0 {model[2].weight.flatten()[0].item():.6f}", flush=True)
dist.destroy_process_group()
