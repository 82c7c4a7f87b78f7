"""A rank of the distributed tests: runs one scenario and prints a JSON line of results.

Started by tests/test_distributed.py (``python dist_worker.py SCENARIO BACKEND DEVICE``) with torch's
env:// variables set. Not a test module itself.
"""

import json
import os
import sys
import time

import numpy as np

import tdx
import tdx.distributed as dist
import tdx.nn as nn

scenario, backend, device = sys.argv[1], sys.argv[2], sys.argv[3]
timeout = float(os.environ.get("TDX_TEST_TIMEOUT", "20"))


def data(rank, shape=(3,), dtype="float32"):
    rng = np.random.default_rng(100 + rank)
    return rng.integers(-5, 6, size=shape).astype(dtype)


def collectives():
    r, w = dist.get_rank(), dist.get_world_size()
    out = {}
    for op in ("SUM", "AVG", "MAX", "MIN", "PRODUCT"):
        x = tdx.tensor(data(r), device=device)
        dist.all_reduce(x, op=getattr(dist.ReduceOp, op))
        out[f"all_reduce_{op}"] = x.tolist()
    x = tdx.tensor(data(r, dtype="int64"), device=device)
    dist.all_reduce(x, op=dist.ReduceOp.BXOR)
    out["all_reduce_BXOR"] = x.tolist()
    x = tdx.tensor(data(r), device=device)
    work = dist.all_reduce(x, async_op=True)
    work.wait()
    out["all_reduce_async"] = x.tolist()
    b = tdx.tensor(data(r), device=device)
    dist.broadcast(b, src=w - 1)
    out["broadcast"] = b.tolist()
    outs = [tdx.zeros(3, device=device) for _ in range(w)]
    dist.all_gather(outs, tdx.tensor(data(r), device=device))
    out["all_gather"] = [o.tolist() for o in outs]
    flat = tdx.zeros(3 * w, device=device)
    dist.all_gather_into_tensor(flat, tdx.tensor(data(r), device=device))
    out["all_gather_into_tensor"] = flat.tolist()
    rs = tdx.zeros(2, device=device)
    dist.reduce_scatter_tensor(rs, tdx.tensor(data(r, (2 * w,)), device=device))
    out["reduce_scatter_tensor"] = rs.tolist()
    g = [tdx.zeros(3, device=device) for _ in range(w)] if r == 0 else None
    dist.gather(tdx.tensor(data(r), device=device), g, dst=0)
    out["gather"] = [t.tolist() for t in g] if r == 0 else None
    s = tdx.zeros(3, device=device)
    dist.scatter(s, [tdx.tensor(data(k), device=device) for k in range(w)] if r == 0 else None, src=0)
    out["scatter"] = s.tolist()
    if r == 0:
        dist.send(tdx.tensor(data(0), device=device), dst=1)
    elif r == 1:
        t = tdx.zeros(3, device=device)
        dist.recv(t, src=0)
        out["recv"] = t.tolist()
    objs = [None] * w
    dist.all_gather_object(objs, {"rank": r})
    out["all_gather_object"] = objs
    dist.barrier()
    return out


def ddp():
    r, w = dist.get_rank(), dist.get_world_size()
    tdx.manual_seed(r)  # every rank starts different: DDP broadcasts rank 0's parameters
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1)).to(device)
    model = nn.parallel.DistributedDataParallel(model, bucket_cap_mb=0.0001)
    opt = tdx.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    rng = np.random.default_rng(0)
    X = rng.standard_normal((4 * w, 4)).astype(np.float32)
    Y = rng.standard_normal((4 * w, 1)).astype(np.float32)
    x, y = tdx.tensor(X[4 * r:4 * (r + 1)], device=device), tdx.tensor(Y[4 * r:4 * (r + 1)], device=device)
    for step in range(4):
        opt.zero_grad()
        if step == 1:  # gradient accumulation: a local backward inside no_sync, then a synced one
            with model.no_sync():
                ((model(x) - y) ** 2).mean().backward()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
    return {"params": [p.detach().reshape(-1).tolist() for p in model.module.parameters()]}


def killed():
    r = dist.get_rank()
    if r == 1:
        os._exit(3)
    time.sleep(0.5)
    started = time.monotonic()
    try:
        for _ in range(50):
            dist.all_reduce(tdx.ones(4, device=device))
    except dist.DistError as err:
        return {"error": type(err).__name__, "builtin": isinstance(err, RuntimeError),
                "seconds": time.monotonic() - started, "message": str(err)[:200]}
    return {"error": None}


def mismatch():
    r = dist.get_rank()
    try:
        dist.all_reduce(tdx.ones(3 + r, device=device))
    except dist.DistError as err:
        return {"error": type(err).__name__, "builtin": isinstance(err, RuntimeError), "message": str(err)[:300]}
    return {"error": None}


if __name__ == "__main__":
    started = time.monotonic()  # after the imports: what a loaded machine slows down is not timed
    try:
        dist.init_process_group(backend, timeout=timeout)
    except dist.DistError as err:
        print(json.dumps({"init_error": type(err).__name__, "builtin": isinstance(err, RuntimeError),
                          "init_seconds": time.monotonic() - started, "timeout": timeout}), flush=True)
        sys.exit(0)
    hostfile_left = os.environ.get("MLX_HOSTFILE")  # the test starts ranks without one: tdx's rendezvous wrote it
    result = {"collectives": collectives, "ddp": ddp, "killed": killed, "mismatch": mismatch}[scenario]()
    print(json.dumps({"rank": dist.get_rank(), **result, "hostfile_left": hostfile_left}), flush=True)
    if scenario != "killed":
        dist.destroy_process_group()
    os._exit(0)
