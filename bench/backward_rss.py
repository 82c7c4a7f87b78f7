"""Resident memory growth of many small backward steps on ``mlx:cpu`` (tdx's tape over ``mx.vjp``).

Runs ``--warmup`` steps, reads the RSS, runs ``--steps`` more, reads it again and prints the
growth (the goal: under 10 MB for 40,000 steps). ``--plain`` runs the same step with plain
``mx.vjp`` instead, to tell tdx's share from MLX's.

Run: ``.venv/bin/python bench/backward_rss.py [--steps 40000] [--warmup 2000] [--plain]``
"""

from __future__ import annotations

import argparse
import gc
import time


def rss_mb() -> float:
    """This process's resident set size in MB (Linux /proc; ru_maxrss elsewhere)."""
    try:
        with open("/proc/self/statm", encoding="ascii") as fh:
            import os

            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except OSError:
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=40000)
    parser.add_argument("--warmup", type=int, default=2000)
    parser.add_argument("--plain", action="store_true", help="plain mx.vjp, no tdx")
    args = parser.parse_args()
    if args.plain:
        import mlx.core as mx

        w = mx.ones((4, 4))
        x = mx.ones((4,))

        def step():
            _, (g,) = mx.vjp(lambda w: [mx.sum(mx.tanh(w @ x))], [w], [mx.array(1.0)])
            mx.eval(g)
    else:
        import tdx

        w = tdx.full((4, 4), 0.1, device="mlx:cpu", requires_grad=True)
        x = tdx.ones(8, 4, device="mlx:cpu")

        def step():  # one small training step: forward, backward, SGD update, zero_grad
            loss = ((x @ w).tanh() - 0.5).pow(2).mean()
            loss.backward()
            with tdx.no_grad():
                w.sub_(w.grad * 0.01)
            w.grad = None
            return loss.item()

    for _ in range(args.warmup):
        step()
    gc.collect()
    before, t0 = rss_mb(), time.perf_counter()
    for _ in range(args.steps):
        step()
    gc.collect()
    after, dt = rss_mb(), time.perf_counter() - t0
    kind = "plain mx.vjp" if args.plain else "tdx mlx:cpu backward"
    print(f"{kind}: {args.steps} steps after {args.warmup} warm-up: RSS {before:.1f} -> {after:.1f} MB "
          f"(+{after - before:.1f} MB, {(after - before) * 2**20 / args.steps:.0f} B/step), {dt:.1f} s")


if __name__ == "__main__":
    main()
