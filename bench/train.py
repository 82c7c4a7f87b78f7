"""GPT training step (forward + backward + AdamW): tdx against native torch (cpu) and native MLX.

Contenders (the model is in ``bench/gpt.py``; every one starts from the same weights and
sees the same batches):

- cpu: ``torch F`` and ``tdx F`` (the same functional code with ``T=torch`` / ``T=tdx``, and a
  hand-written AdamW), ``torch nn`` and ``tdx nn`` (``T.nn`` modules + ``T.optim.AdamW``);
- mlx:cpu: ``mlx`` (plain ``mlx.core``, ``mx.value_and_grad``), ``mlx compiled`` (the whole step
  under ``mx.compile``), ``tdx F mlx``, ``tdx nn mlx`` and ``tdx compiled mlx``
  (``tdx.compile`` of the functional step).

Contenders run interleaved in one process (one step each, round robin, so machine load
hits all alike); the table gives medians over the timed steps and the ratio tdx / native, in
wall time and in this process's CPU time (all its threads; steadier than wall time on a
machine other processes load).
Peak RSS is measured for each contender in its own subprocess, above the interpreter's RSS
at start (imports included). Losses of every contender are checked against ``torch F``'s.
The table is printed and written to ``bench/out/train.md``, the plot to
``bench/out/train.png`` (when matplotlib is installed; else the run says it skipped it).

Run: ``.venv/bin/python bench/train.py [--configs S M] [--steps 20] [--quick]``
(``--quick``: config S only, 4 timed steps, no RSS subprocesses.)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

PAIRS = [  # (tdx contender, native contender it is compared with)
    ("tdx F", "torch F"), ("tdx nn", "torch nn"), ("tdx F mlx", "mlx"), ("tdx nn mlx", "mlx"),
    ("tdx compiled mlx", "mlx compiled"),
]


def _rss_kb(field: str = "VmRSS") -> int:
    """This process's resident set (``VmRSS``) or its peak (``VmHWM``), in KB."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def make(name: str, cfg: dict, init: dict):
    """The step function of contender ``name`` (imports only what it needs)."""
    import gpt

    if name in ("mlx", "mlx compiled"):
        import mlx.core as mx

        return gpt.mlx_step(mx, cfg, init, compiled=name == "mlx compiled")
    if name.startswith("torch"):
        import torch

        torch.set_num_threads(1)
        maker = gpt.functional_step if name == "torch F" else gpt.module_step
        return maker(torch, None, cfg, init, lambda ts: None)
    import tdx

    on_mlx = name.endswith("mlx")
    device = "mlx:cpu" if on_mlx else "cpu"
    if not on_mlx:
        import torch

        torch.set_num_threads(1)
    sync = _mlx_sync if on_mlx else (lambda ts: None)
    if name == "tdx compiled mlx":
        return gpt.compiled_step(tdx, device, cfg, init, sync)
    maker = gpt.module_step if " nn" in name else gpt.functional_step
    return maker(tdx, device, cfg, init, sync)


def _mlx_sync(tensors) -> None:
    import mlx.core as mx

    mx.eval([t.native for t in tensors])


def run_interleaved(names, cfg, steps: int, warmup: int):
    """Median seconds per step and the loss trajectory of each contender."""
    import gpt

    init, data = gpt.init_params(cfg), gpt.batches(cfg, warmup + steps)
    fns = {n: make(n, cfg, init) for n in names}
    times = {n: [] for n in names}
    cpu = {n: [] for n in names}
    losses = {n: [] for n in names}
    for s, (idx, tgt) in enumerate(data):
        for n, fn in fns.items():
            t0, c0 = time.perf_counter(), time.process_time()
            loss = fn(idx, tgt)
            dt, dc = time.perf_counter() - t0, time.process_time() - c0
            losses[n].append(loss)
            if s >= warmup:
                times[n].append(dt)
                cpu[n].append(dc)
    return ({n: statistics.median(t) for n, t in times.items()}, {n: statistics.median(t) for n, t in cpu.items()},
            losses)


def child_rss(name: str, cfg_name: str, steps: int) -> None:
    """Subprocess entry: run one contender, print its peak RSS above interpreter start (MB)."""
    import gpt

    start = _rss_kb()
    cfg = gpt.CONFIGS[cfg_name]
    init, data = gpt.init_params(cfg), gpt.batches(cfg, steps)
    fn = make(name, cfg, init)
    for idx, tgt in data:
        fn(idx, tgt)
    peak = _rss_kb("VmHWM")  # not ru_maxrss: that keeps the forking parent's peak across exec
    print(json.dumps({"peak_mb": (peak - start) / 1024}))


def measure_rss(name: str, cfg_name: str, steps: int) -> float:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [os.path.dirname(HERE), env.get("PYTHONPATH")]))
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", name, "--configs", cfg_name,
                          "--steps", str(steps)], capture_output=True, text=True, env=env, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])["peak_mb"]


def available(names):
    import importlib.util

    have_mlx = importlib.util.find_spec("mlx") is not None
    return [n for n in names if have_mlx or not (n.startswith("mlx") or n.endswith("mlx"))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--configs", nargs="+", default=["S", "M"])
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--rss-steps", type=int, default=12)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", nargs="+", help="run only these contenders")
    ap.add_argument("--no-rss", action="store_true")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child_rss(args.child, args.configs[0], args.steps)
    if args.quick:
        args.configs, args.steps, args.warmup, args.no_rss = ["S"], 4, 2, True

    import gpt

    names = available(args.only or ["torch F", "tdx F", "torch nn", "tdx nn", "mlx", "mlx compiled", "tdx F mlx",
                                    "tdx nn mlx", "tdx compiled mlx"])
    lines = [f"GPT training step, medians of {args.steps} interleaved steps after {args.warmup} warm-up "
             f"(torch threads = 1); RSS: peak above interpreter start, own subprocess, {args.rss_steps} steps", ""]
    plot = {}
    ok = True
    for cfg_name in args.configs:
        cfg = gpt.CONFIGS[cfg_name]
        med, cpu, losses = run_interleaved(names, cfg, args.steps, args.warmup)
        rss = {} if args.no_rss else {n: measure_rss(n, cfg_name, args.rss_steps) for n in names}
        ref = losses[names[0]]
        lines.append(f"config {cfg_name}: {cfg}")
        lines.append("| contender | ms/step | vs native | CPU ms/step | CPU vs native | peak RSS MB | RSS vs native "
                     "| max loss rel diff |")
        lines.append("|---|---|---|---|---|---|---|---|")
        natives = dict(PAIRS)
        for n in names:
            nat = natives.get(n)
            ratio = f"{med[n] / med[nat]:.2f}" if nat in med else ""
            cpu_ratio = f"{cpu[n] / cpu[nat]:.2f}" if nat in cpu else ""
            r = f"{rss[n]:.0f}" if n in rss else ""
            rr = f"{rss[n] / rss[nat]:.2f}" if n in rss and nat in rss and rss[nat] > 0 else ""
            diff = max(abs(a - b) / abs(b) for a, b in zip(losses[n], ref))
            ok &= diff < 1e-4
            lines.append(f"| {n} | {med[n] * 1e3:.1f} | {ratio} | {cpu[n] * 1e3:.1f} | {cpu_ratio} | {r} | {rr} "
                         f"| {diff:.1e} |")
            plot[(cfg_name, n)] = med[n] * 1e3
        lines.append("")
    lines.append("losses agree (rel diff < 1e-4): " + ("yes" if ok else "NO"))
    text = "\n".join(lines)
    print(text)
    out_dir = os.path.join(HERE, "out")
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "train.md"), "w") as fh:
        fh.write(text + "\n")
    write_plot(plot, args.configs, names, os.path.join(out_dir, "train.png"))
    if not ok:
        sys.exit(1)


def write_plot(plot: dict, configs, names, path: str) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        _bars_png(plot, configs, names, path)
        print(f"matplotlib is not installed: a plain bar chart (no text; rows as in the table, one block per "
              f"config, tdx orange, native blue, bar length = ms/step relative to the block's longest) is in {path}")
        return
    fig, axes = plt.subplots(1, len(configs), figsize=(6 * len(configs), 4), squeeze=False)
    for ax, cfg_name in zip(axes[0], configs):
        vals = [plot[(cfg_name, n)] for n in names]
        ax.barh(names, vals, color=["tab:orange" if n.startswith("tdx") else "tab:blue" for n in names])
        ax.invert_yaxis()
        ax.set_xlabel("ms per step (median)")
        ax.set_title(f"GPT train step, config {cfg_name}")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    print(f"plot written to {path}")


def _bars_png(plot: dict, configs, names, path: str) -> None:
    """A bar chart as a PNG written with zlib alone: one block of bars per config."""
    import struct
    import zlib

    width, bar, gap = 640, 14, 4
    rows = []  # (length fraction, colour) or None for a separator
    for cfg_name in configs:
        longest = max(plot[(cfg_name, n)] for n in names)
        rows += [(plot[(cfg_name, n)] / longest, (230, 120, 20) if n.startswith("tdx") else (40, 100, 190))
                 for n in names] + [None]
    lines = []
    for row in rows:
        if row is None:
            lines += [bytes([0]) + bytes([200]) * (3 * width)] * (2 * gap)
            continue
        frac, colour = row
        filled = max(1, int(frac * (width - 20)))
        line = bytes([0]) + (bytes(colour) * filled + bytes([255, 255, 255]) * (width - filled))
        lines += [line] * bar + [bytes([0]) + bytes([255]) * (3 * width)] * gap

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, len(lines), 8, 2, 0, 0, 0)
    with open(path, "wb") as fh:
        fh.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"".join(lines)))
                 + chunk(b"IEND", b""))


if __name__ == "__main__":
    main()
