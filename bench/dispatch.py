"""Per-op dispatch cost: tdx against native torch and native MLX on each device asked for, side by side.

For ~16 common ops on small tensors, times the tdx call and the same call on the native
framework on the same device in one run, interleaved, as the median over repeats of a timed loop, and
prints a table of microseconds per op and the difference (tdx - native), with the medians of
the view ops (reshape, view, transpose, permute, unsqueeze, basic indexing) and of the other ops
apart. MLX is lazy: its rows time building the op (no evaluation) for both sides, which is what
dispatch costs; on cuda both sides queue kernels asynchronously, so the rows time the launch. Times are
this process's CPU time by default (``--timer cpu``: stable on a loaded machine, where wall
time counts the time other processes hold the cores); ``--timer wall`` measures wall time.
``--out DIR`` also writes ``DIR/dispatch.md`` (the table, stamped with the machine, date and command,
with each difference's min..max over the repeats) and ``DIR/dispatch.png`` (with matplotlib).

Run: ``.venv/bin/python bench/dispatch.py [--repeats 15] [--number 20000] [--timer cpu|wall] [--out DIR]
[--devices cpu,mlx:cpu]`` (``--devices cuda:0,mlx:gpu`` on a GPU machine; a device that is not there is
skipped with the reason).
"""

from __future__ import annotations

import argparse
import datetime
import os
import statistics
import sys
import time
import timeit

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


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
            ("a.view(4, 16)", lambda: a.reshape(4, 16)), ("a.permute(1, 0)", lambda: a.transpose(1, 0)),
            ("a[:, 1:]", lambda: a[:, 1:]), ("a.unsqueeze(0)", lambda: lib.expand_dims(a, 0)),
        ]
    kw = {} if dev is None or (native and dev == "cpu") else {"device": dev}
    a, b = lib.tensor(a_np, **kw), lib.tensor(b_np, **kw)
    return [
        ("a + b", lambda: a + b), ("a * 2.0", lambda: a * 2.0), ("a - b", lambda: a - b),
        ("a @ b", lambda: a @ b), ("a > b", lambda: a > b), ("exp(a)", lambda: lib.exp(a)),
        ("a.sum()", lambda: a.sum()), ("a.mean(1)", lambda: a.mean(1)),
        ("a.reshape(4, 16)", lambda: a.reshape(4, 16)), ("a.transpose(0, 1)", lambda: a.transpose(0, 1)),
        ("a[0]", lambda: a[0]), ("maximum(a, b)", lambda: lib.maximum(a, b)),
        ("a.view(4, 16)", lambda: a.view(4, 16)), ("a.permute(1, 0)", lambda: a.permute(1, 0)),
        ("a[:, 1:]", lambda: a[:, 1:]), ("a.unsqueeze(0)", lambda: a.unsqueeze(0)),
    ]


VIEW_OPS = ("a.reshape(4, 16)", "a.transpose(0, 1)", "a[0]", "a.view(4, 16)", "a.permute(1, 0)", "a[:, 1:]",
            "a.unsqueeze(0)")
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
        rows.append((name, o, t, [x - y for x, y in zip(samples_o, samples_t)]))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--number", type=int, default=20000)
    parser.add_argument("--timer", choices=("cpu", "wall"), default="cpu")
    parser.add_argument("--out", default=None, help="also write dispatch.md and dispatch.png into this folder")
    parser.add_argument("--devices", default="cpu,mlx:cpu", help="comma-separated tdx devices (cpu, cuda:0, "
                        "mlx:cpu, mlx:gpu...), each timed against its native framework")
    args = parser.parse_args()
    TIMER[0] = time.process_time if args.timer == "cpu" else time.perf_counter
    started = datetime.datetime.now(datetime.timezone.utc)

    import torch

    import tdx

    torch.set_num_threads(1)
    status = {r.device: r for r in tdx.backends.available()}
    print("tdx dispatch overhead, 8x8 float32, median of "
          f"{args.repeats} x {args.number} calls ({args.timer} microseconds per op)\n")
    sections = []
    for dev in [d.strip() for d in args.devices.split(",") if d.strip()]:
        row = status.get(dev)
        if row is None or not row.available:
            print(f"# {dev}: skipped ({row.reason if row else 'not a device tdx lists'})")
            continue
        if dev.startswith("mlx"):
            import mlx.core as mx

            mx.set_default_device(mx.gpu if dev == "mlx:gpu" else mx.cpu)  # the native side's arrays and ops
            sections.append((f"{dev} (MLX, op construction)",
                             measure(cases(tdx, dev, False), cases(mx, None, True), args.number // 4, args.repeats)))
        else:
            sections.append((f"{dev} (torch)", measure(cases(tdx, dev, False), cases(torch, dev, True), args.number,
                                                       args.repeats)))
    for title, rows in sections:
        print(f"== {title}")
        print(f"{'op':<20} {'tdx':>8} {'native':>8} {'tdx-native':>11} {'ratio':>6}")
        for name, o, t, _ in rows:
            print(f"{name:<20} {o:>8.2f} {t:>8.2f} {o - t:>+11.2f} {o / t:>6.2f}")
        for label, value in summary(rows):
            print(f"{label:<20} {'':>8} {'':>8} {value:>+11.2f}")
        print()
    if args.out:
        write_results(sections, args, started)


def summary(rows) -> list:
    """(label, median tdx - native) over all ops, the view ops and the others."""
    diffs = [o - t for _, o, t, _ in rows]
    views = [o - t for name, o, t, _ in rows if name in VIEW_OPS]
    others = [o - t for name, o, t, _ in rows if name not in VIEW_OPS]
    return [("median", statistics.median(diffs)), ("median, view ops", statistics.median(views)),
            ("median, other ops", statistics.median(others))]


def side_by_side(sections) -> list:
    """One Markdown table: a row per op, a column per executor (tdx - native, median and min..max)."""
    from bench import report

    names = [n for n, *_ in sections[0][1]] if sections else []
    cells = {title: {n: d for n, _, _, d in rows} for title, rows in sections}
    heads = ["op"] + [f"{title.split(' (')[0]} (vs {'MLX' if 'MLX' in title else 'torch'})" for title, _ in sections]
    body = [[f"`{n}`"] + [report.fmt_spread(cells[t][n], "{:+.2f}") if n in cells[t] else "" for t, _ in sections]
            for n in names]
    for label, index in (("median, all ops", 0), ("median, view ops", 1), ("median, other ops", 2)):
        body.append([label] + [f"{summary(rows)[index][1]:+.2f}" for _, rows in sections])
    return report.md_table(heads, body)


def write_results(sections, args, started) -> None:
    """``dispatch.md`` (one table per executor, with each difference's spread) and ``dispatch.png``."""
    from bench import report

    lines = [f"8x8 float32; {args.timer} time per op; each repeat times {args.number} calls on torch and "
             f"{args.number // 4} on MLX, tdx and native interleaved; tdx - native in microseconds, median "
             f"(min..max) of the per-repeat differences over {args.repeats} repeats.", ""]
    lines += ["Side by side (tdx - native, us):", ""] + side_by_side(sections) + [""]
    for title, rows in sections:
        lines += [f"## {title}", ""]
        lines += report.md_table(["op", "tdx us", "native us", "tdx - native us", "ratio"],
                                 [(f"`{n}`", f"{o:.2f}", f"{t:.2f}", report.fmt_spread(d, "{:+.2f}"), f"{o / t:.2f}")
                                  for n, o, t, d in rows])
        lines += [""] + [f"{label}: {value:+.2f} us" for label, value in summary(rows)] + [""]
    report.write("dispatch", "Per-op dispatch overhead (tdx - native)", lines, args.out, started)
    plt = report.pyplot()
    if plt is None:
        return
    fig, axes = plt.subplots(1, len(sections), figsize=(6 * len(sections), 4.5), squeeze=False)
    for ax, (title, rows) in zip(axes[0], sections):
        names = [r[0] for r in rows]
        meds = [statistics.median(r[3]) for r in rows]
        lo = [m - min(r[3]) for m, r in zip(meds, rows)]
        hi = [max(r[3]) - m for m, r in zip(meds, rows)]
        ax.barh(range(len(rows)), meds, xerr=[lo, hi], color="tab:blue", capsize=3)
        ax.set_yticks(range(len(rows)), names, fontsize=8)
        ax.invert_yaxis()
        ax.axvline(0, color="black", linewidth=0.8)
        ax.set_xlabel("tdx - native, us per op (median, min..max)")
        ax.set_title(title, fontsize=10)
    report.save(fig, "dispatch", args.out)


if __name__ == "__main__":
    main()
