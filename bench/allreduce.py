"""All-reduce bandwidth of tdx.distributed against each engine used directly, 1-256 MiB.

Starts 2 ranks on loopback per engine (gloo through torch.distributed, MLX's ring through
mx.distributed) and times, interleaved in one run, ``tdx.distributed.all_reduce`` of a float32
tdx tensor against the engine's own call on a native array of the same size. Prints, per size,
the median bus bandwidth (2 (n-1)/n x bytes / time, as nccl-tests report it) of each and the ratio
tdx/engine time. Usage: ``python bench/allreduce.py [--repeats 9] [--sizes 1,4,16,64,256]``.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time


def rank_main(engine: str, sizes, repeats: int) -> None:

    import tdx
    import tdx.distributed as dist

    backend, device = ("gloo", "cpu") if engine == "gloo" else ("ring", "mlx:cpu")
    dist.init_process_group(backend)
    eng = dist._state["engine"]
    rows = []
    for mib in sizes:
        n = mib * 2 ** 20 // 4
        t = tdx.ones(n, device=device)
        if engine == "gloo":
            import torch
            import torch.distributed as td

            native = torch.ones(n)

            def direct():
                td.all_reduce(native)
        else:
            import mlx.core as mx

            native = mx.ones(n)

            def direct():
                mx.eval(mx.distributed.all_sum(native, stream=mx.cpu))

        def ours():
            dist.all_reduce(t)
            if device.startswith("mlx"):
                t.native.item() if n == 1 else mx.eval(t.native)

        times = {"tdx": [], "engine": []}
        for _ in range(2):
            ours(), direct()
        for _ in range(repeats):
            for name, fn in (("tdx", ours), ("engine", direct)):
                dist.barrier()
                start = time.perf_counter()
                fn()
                times[name].append(time.perf_counter() - start)
        med = {k: statistics.median(v) for k, v in times.items()}
        rows.append({"MiB": mib, **med})
    if eng.rank == 0:
        print(json.dumps(rows), flush=True)
    dist.destroy_process_group()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--sizes", default="1,4,16,64,256")
    parser.add_argument("--rank-of", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.rank_of:
        rank_main(args.rank_of, sizes, args.repeats)
        return
    for engine in ("gloo", "ring"):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        env = {**os.environ, "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}
        procs = [subprocess.Popen([sys.executable, __file__, "--rank-of", engine, "--sizes", args.sizes,
                                   "--repeats", str(args.repeats)], env={**env, "RANK": str(r)},
                                  stdout=subprocess.PIPE, text=True) for r in range(2)]
        out = procs[0].communicate()[0]
        procs[1].wait()
        rows = json.loads(out.strip().splitlines()[-1])
        print(f"\n{engine} (2 ranks, loopback), medians of {args.repeats}")
        print(f"{'MiB':>5} {'tdx GB/s':>9} {'engine GB/s':>12} {'tdx/engine time':>16}")
        for r in rows:
            bus = r["MiB"] * 2 ** 20 * 2 * (2 - 1) / 2 / 1e9
            print(f"{r['MiB']:>5} {bus / r['tdx']:>9.2f} {bus / r['engine']:>12.2f} {r['tdx'] / r['engine']:>16.3f}")


if __name__ == "__main__":
    main()
