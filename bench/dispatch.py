"""Per-op dispatch cost: tdx against native torch (cpu) and native MLX (mlx:cpu), side by side.

For ~12 common ops on small tensors, times the tdx call and the same call on the native
framework in one run, interleaved, as the median over repeats of a timed loop, and
prints a table of microseconds per op and the difference (tdx - native), with the medians of
the view ops (reshape, transpose, ``a[0]``) and of the other ops apart. MLX is lazy: its rows
time building the op (no evaluation) for both sides, which is what dispatch costs. Times are
this process's CPU time by default (``--timer cpu``: stable on a loaded machine, where wall
time counts the time other processes hold the cores); ``--timer wall`` measures wall time.

Run: ``.venv/bin/python bench/dispatch.py [--repeats 15] [--number 20000] [--timer cpu|wall]``
"""

from __future__ import annotations

import argparse
import statistics
import time
import timeit

import numpy as np


def cases(lib, dev, native: bool):
    """(name, zero-arg callable) pairs for ``lib`` (tdx, torch or mlx.core)."""
    rng = np.random.default_rng(0)
    a_np = rng.standard_normal((8, 8)).astype(np.float32)
    b_np = rng.standard_normal((8, 8)).astype(np.float32)
    if lib.__name__ == "mlx.core":
        a, b = lib.array(a_np), lib.array(b_np)
        lib.eval(a, b)
        return [
            ("a + b", lambda: a + b), ("a * 2.0", lambda: a * 2.0), ("a - b", lambda: a - b),
            ("a @ b", lambda: a @ b), ("a > b", lambda: a > b), ("exp(a)", lambda: lib.exp(a)),
            ("a.sum()", lambda: a.sum()), ("a.mean(1)", lambda: a.mean(1)),
            ("a.reshape(4, 16)", lambda: a.reshape(4, 16)), ("a.transpose(0, 1)", lambda: a.transpose(1, 0)),
            ("a[0]", lambda: a[0]), ("maximum(a, b)", lambda: lib.maximum(a, b)),
        ]
    kw = {} if native else {"device": dev}
    a, b = lib.tensor(a_np, **kw), lib.tensor(b_np, **kw)
    return [
        ("a + b", lambda: a + b), ("a * 2.0", lambda: a * 2.0), ("a - b", lambda: a - b),
        ("a @ b", lambda: a @ b), ("a > b", lambda: a > b), ("exp(a)", lambda: lib.exp(a)),
        ("a.sum()", lambda: a.sum()), ("a.mean(1)", lambda: a.mean(1)),
        ("a.reshape(4, 16)", lambda: a.reshape(4, 16)), ("a.transpose(0, 1)", lambda: a.transpose(0, 1)),
        ("a[0]", lambda: a[0]), ("maximum(a, b)", lambda: lib.maximum(a, b)),
    ]


VIEW_OPS = ("a.reshape(4, 16)", "a.transpose(0, 1)", "a[0]")
TIMER = [time.process_time]


def per_op_us(fn, number: int, repeats: int) -> float:
    times = timeit.repeat(fn, number=number, repeat=repeats, timer=TIMER[0])
    return statistics.median(times) / number * 1e6


def measure(ours, theirs, number, repeats):
    rows = []
    for (name, f_ours), (_, f_theirs) in zip(ours, theirs):
        f_ours(), f_theirs()  # warm up
        samples_o, samples_t = [], []
        for _ in range(repeats):  # interleave so drift hits both sides alike
            samples_o.append(per_op_us(f_ours, number, 1))
            samples_t.append(per_op_us(f_theirs, number, 1))
        o, t = statistics.median(samples_o), statistics.median(samples_t)
        rows.append((name, o, t))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--number", type=int, default=20000)
    parser.add_argument("--timer", choices=("cpu", "wall"), default="cpu")
    args = parser.parse_args()
    TIMER[0] = time.process_time if args.timer == "cpu" else time.perf_counter

    import mlx.core as mx
    import torch

    import tdx

    torch.set_num_threads(1)
    print("tdx dispatch overhead, 8x8 float32, median of "
          f"{args.repeats} x {args.number} calls ({args.timer} microseconds per op)\n")
    sections = [("cpu (torch)", measure(cases(tdx, "cpu", False), cases(torch, None, True), args.number,
                                        args.repeats)),
                ("mlx:cpu (MLX, op construction)", measure(cases(tdx, "mlx:cpu", False), cases(mx, None, True),
                                                           args.number // 4, args.repeats))]
    for title, rows in sections:
        print(f"== {title}")
        print(f"{'op':<20} {'tdx':>8} {'native':>8} {'tdx-native':>11} {'ratio':>6}")
        for name, o, t in rows:
            print(f"{name:<20} {o:>8.2f} {t:>8.2f} {o - t:>+11.2f} {o / t:>6.2f}")
        diffs = [o - t for _, o, t in rows]
        views = [o - t for name, o, t in rows if name in VIEW_OPS]
        others = [o - t for name, o, t in rows if name not in VIEW_OPS]
        print(f"{'median':<20} {'':>8} {'':>8} {statistics.median(diffs):>+11.2f}")
        print(f"{'median, view ops':<20} {'':>8} {'':>8} {statistics.median(views):>+11.2f}")
        print(f"{'median, other ops':<20} {'':>8} {'':>8} {statistics.median(others):>+11.2f}\n")


if __name__ == "__main__":
    main()
