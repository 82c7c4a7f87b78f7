"""Tape overhead on MLX: backward through a chain of small ops, tdx against MLX's own value_and_grad.

The same function (``n_ops`` elementwise ops on a small array, then a sum) is differentiated
by tdx's tape on ``mlx:cpu`` and by ``mx.value_and_grad`` on plain MLX arrays, interleaved,
median over repeats; both results are evaluated. Prints total time, per-op cost, and the
torch-cpu native autograd time for reference.

Run: ``.venv/bin/python bench/tape.py [--ops 100] [--repeats 15]``
"""

from __future__ import annotations

import argparse
import statistics
import time


def chain(x, n_ops: int, tanh):
    y = x
    for i in range(n_ops):
        y = y * 1.001 + 0.001 if i % 2 else tanh(y)
    return y.sum()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=100)
    parser.add_argument("--size", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()

    import mlx.core as mx
    import torch

    import tdx

    torch.set_num_threads(1)

    def run_tdx():
        x = tdx.ones(args.size, device="mlx:cpu", requires_grad=True)
        chain(x, args.ops, tdx.tanh).backward()
        mx.eval(x.grad.native)

    grad_fn = mx.value_and_grad(lambda a: chain(a, args.ops, mx.tanh))

    def run_mlx():
        v, g = grad_fn(mx.ones(args.size))
        mx.eval(v, g)

    def run_torch():
        x = torch.ones(args.size, requires_grad=True)
        chain(x, args.ops, torch.tanh).backward()

    check_tdx = tdx.ones(args.size, device="mlx:cpu", requires_grad=True)
    chain(check_tdx, args.ops, tdx.tanh).backward()
    _, g = grad_fn(mx.ones(args.size))
    diff = float(mx.max(mx.abs(check_tdx.grad.native - g)))

    samples = {"tdx tape (mlx:cpu)": [], "mx.value_and_grad": [], "torch autograd (cpu)": []}
    fns = dict(zip(samples, (run_tdx, run_mlx, run_torch)))
    for fn in fns.values():
        fn()
    for _ in range(args.repeats):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            samples[name].append(time.perf_counter() - start)
    print(f"forward + backward through {args.ops} ops on a {args.size}-element float32 tensor, "
          f"median of {args.repeats}; max |grad tdx - grad mlx| = {diff:.2e}\n")
    base = statistics.median(samples["mx.value_and_grad"])
    print(f"{'method':<24} {'total ms':>9} {'us/op':>8} {'vs mlx':>7}")
    for name, vals in samples.items():
        med = statistics.median(vals)
        print(f"{name:<24} {med * 1e3:>9.2f} {med / args.ops * 1e6:>8.1f} {med / base:>7.2f}")


if __name__ == "__main__":
    main()
