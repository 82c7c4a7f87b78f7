"""The DDP tutorial's shape: torch.multiprocessing.spawn starts two processes that each join a gloo
process group (MASTER_ADDR/MASTER_PORT), wrap a model in DistributedDataParallel and train on their
shard; gradients are averaged across the ranks, so both end with the same parameters."""

import os
import socket
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def setup(rank, world_size, port):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world_size)


def cleanup():
    dist.destroy_process_group()


def demo_basic(rank, world_size, port):
    setup(rank, world_size, port)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
    ddp_model = DDP(model)
    loss_fn = nn.MSELoss()
    optimizer = torch.optim.SGD(ddp_model.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(1)
    X, Y = torch.randn(8, 4, generator=g), torch.randn(8, 1, generator=g)
    x, y = X[4 * rank:4 * rank + 4], Y[4 * rank:4 * rank + 4]
    for _ in range(5):
        optimizer.zero_grad()
        loss = loss_fn(ddp_model(x), y)
        loss.backward()
        optimizer.step()
    line = f"rank {rank} loss {loss.item():.6f} weight0 {model[2].weight.flatten()[0].item():.6f}\n"
    sys.stdout.write(line)  # one write per rank: the two processes' lines never interleave
    sys.stdout.flush()
    cleanup()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


if __name__ == "__main__":
    world_size = 2
    mp.spawn(demo_basic, args=(world_size, free_port()), nprocs=world_size, join=True)
    print("all ranks done", file=sys.stderr)
