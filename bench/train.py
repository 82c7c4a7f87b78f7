"""GPT training step (forward + backward + AdamW): tdx against native torch (cpu) and native MLX.

Contenders (the model is in ``bench/gpt.py``; every one starts from the same weights and
sees the same batches):

- cpu: ``torch F`` and ``tdx F`` (the same functional code with ``T=torch`` / ``T=tdx``, and a
  hand-written AdamW), ``torch nn`` and ``tdx nn`` (``T.nn`` modules + ``T.optim.AdamW``);
- mlx:cpu: ``mlx`` (plain ``mlx.core``, ``mx.value_and_grad``), ``mlx compiled`` (the whole step
  under ``mx.compile``), ``tdx F mlx``, ``tdx nn mlx`` and ``tdx compiled mlx``
  (``tdx.compile`` of the functional step), and ``tdx nn mlx native-rng``: ``tdx nn mlx`` built with
  ``TDX_RANDOM_STREAM=native``. Under the default ``[random] stream = "torch"`` the nn modules draw their
  initial weights from torch's CPU generator, which imports torch (~190 MB of RSS); the native stream
  draws them with MLX and never imports torch. Both rows are reported: the weights are then overwritten
  by the shared initial ones, so the two differ only in what building the model imports.

The LSTM row (``--models lstm``; run by default after the GPT configs): the LSTM language model of
``bench/lstm.py`` (Embedding, LSTM, Linear, cross entropy, SGD) as ``tdx nn lstm mlx`` against the same
model in ``mlx.nn`` (``mlx.nn lstm``), and ``tdx nn lstm`` against ``torch nn lstm`` on cpu; its table
splits each MLX step into MLX's evaluation and the rest (building the graph: tdx's facade and tape, or
mlx.nn's Python), so the gap to ``mlx.nn`` shows how much of a step is tdx's.

Contenders run interleaved in one process (turns in blocks of compared contenders, in alternating
order, so machine load hits all alike; the cpu contenders take several turns a round); the table
gives medians over the timed steps and the ratio tdx / native as the median of the ratios of
paired turns (adjacent: a slow spell of the machine slows both sides of a ratio), in wall time and in this process's CPU time (all its
threads; steadier than wall time on a machine other processes load).
Peak RSS is measured for each contender in its own subprocess, above the interpreter's RSS
at start (imports included). Losses of every contender are checked against ``torch F``'s.
The table is printed and written to ``bench/out/train.md``, the plot to
``bench/out/train.png`` (when matplotlib is installed; else the run says it skipped it).

Run: ``.venv/bin/python bench/train.py [--configs S M] [--models gpt lstm] [--steps 20] [--quick]``
(``--quick``: config S only, 4 timed steps, no RSS subprocesses). On a GPU machine,
``--torch-device cuda:0 --mlx-device mlx:gpu`` moves the torch contenders (native and tdx alike) and
the MLX ones there; the contenders keep their names, the table's title names the devices, and
``--no-rss`` is then the sensible choice (RSS does not see GPU memory).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

BLOCKS = [["torch F", "tdx F"], ["torch nn", "tdx nn"],
          ["mlx", "tdx F mlx", "tdx nn mlx", "tdx nn mlx native-rng"],
          ["mlx compiled", "tdx compiled mlx"],
          ["torch nn lstm", "tdx nn lstm"], ["mlx.nn lstm", "tdx nn lstm mlx"]]  # run together in each round
PAIRS = [  # (tdx contender, native contender it is compared with)
    ("tdx F", "torch F"), ("tdx nn", "torch nn"), ("tdx F mlx", "mlx"), ("tdx nn mlx", "mlx"),
    ("tdx nn mlx native-rng", "mlx"), ("tdx compiled mlx", "mlx compiled"),
    ("tdx nn lstm", "torch nn lstm"), ("tdx nn lstm mlx", "mlx.nn lstm"),
]
LSTM_NAMES = ["mlx.nn lstm", "tdx nn lstm mlx", "torch nn lstm", "tdx nn lstm"]
EVAL_TIMES: dict = {}  # contender -> seconds its MLX evaluation took, step by step (the LSTM table's split)
TIMED_EVALS: dict = {}  # contender -> those of its timed steps
NATIVE_RNG = " native-rng"  # a contender named with this suffix is built with TDX_RANDOM_STREAM=native


def _rss_kb(field: str = "VmRSS") -> int:
    """This process's resident set (``VmRSS``) or its peak (``VmHWM``), in KB."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


DEVICES = {"torch": "cpu", "mlx": "mlx:cpu"}  # where the torch and the MLX contenders run (set by main)


def make(name: str, cfg: dict, init: dict):
    """The step function of contender ``name`` (imports only what it needs)."""
    import gpt

    if name in LSTM_NAMES:
        return _lstm_contender(name, cfg, init)
    if name.endswith(NATIVE_RNG):
        return _native_stream(lambda: make(name[:-len(NATIVE_RNG)], cfg, init))

    if name in ("mlx", "mlx compiled"):
        import mlx.core as mx

        mx.set_default_device(mx.gpu if DEVICES["mlx"] == "mlx:gpu" else mx.cpu)
        return gpt.mlx_step(mx, cfg, init, compiled=name == "mlx compiled")
    if name.startswith("torch"):
        import torch

        torch.set_num_threads(1)
        maker = gpt.functional_step if name == "torch F" else gpt.module_step
        native_device = None if DEVICES["torch"] == "cpu" else DEVICES["torch"]
        return maker(torch, native_device, cfg, init, lambda ts: None)
    import tdx

    on_mlx = name.endswith("mlx")
    device = DEVICES["mlx"] if on_mlx else DEVICES["torch"]
    if not on_mlx:
        import torch

        torch.set_num_threads(1)
    sync = _mlx_sync if on_mlx else (lambda ts: None)
    if name == "tdx compiled mlx":
        return gpt.compiled_step(tdx, device, cfg, init, sync)
    maker = gpt.module_step if " nn" in name else gpt.functional_step
    return maker(tdx, device, cfg, init, sync)


def _lstm_contender(name: str, cfg: dict, init: dict):
    """The LSTM language model's step (``bench/lstm.py``) of contender ``name``; the MLX ones record how
    long each step's MLX evaluation takes in :data:`EVAL_TIMES`."""
    import lstm

    on_mlx = "mlx" in name
    if not on_mlx:
        import torch

        torch.set_num_threads(1)
    if name == "mlx.nn lstm":
        import mlx.core as mx

        mx.set_default_device(mx.gpu if DEVICES["mlx"] == "mlx:gpu" else mx.cpu)
        return lstm.mlx_step(cfg, init, _timed_sync(name, lambda arrays: mx.eval(arrays)))
    if name == "torch nn lstm":
        import torch

        return lstm.module_step(torch, DEVICES["torch"], cfg, init, lambda ts: None)
    import tdx

    if on_mlx:
        return lstm.module_step(tdx, DEVICES["mlx"], cfg, init, _timed_sync(name, _mlx_sync))
    return lstm.module_step(tdx, DEVICES["torch"], cfg, init, lambda ts: None)


def _timed_sync(name: str, sync):
    times = EVAL_TIMES.setdefault(name, [])

    def timed(arrays):
        t0 = time.perf_counter()
        sync(arrays)
        times.append(time.perf_counter() - t0)

    return timed


def _native_stream(build):
    """``build()`` with tdx's random stream native (``TDX_RANDOM_STREAM=native``, re-read by a tdx already
    imported), then the environment as it was."""
    old = os.environ.get("TDX_RANDOM_STREAM")
    os.environ["TDX_RANDOM_STREAM"] = "native"
    _reload_tdx_config()
    try:
        return build()
    finally:
        if old is None:
            os.environ.pop("TDX_RANDOM_STREAM", None)
        else:
            os.environ["TDX_RANDOM_STREAM"] = old
        _reload_tdx_config()


def _reload_tdx_config() -> None:
    if "tdx" in sys.modules:
        sys.modules["tdx"].config.reload()


def _mlx_sync(tensors) -> None:
    import mlx.core as mx

    mx.eval([t.native for t in tensors])


def run_interleaved(names, cfg, steps: int, warmup: int, per_turn: int = 2, cpu_turns: int = 1, model=None):
    """Seconds (wall, CPU) of every timed step of each contender, and each one's loss trajectory.

    One round gives every contender a turn, in blocks of the contenders compared with each other
    (:data:`BLOCKS`); the cpu blocks, whose steps are ~12x shorter than MLX's here, take
    ``cpu_turns`` turns a round (more pairs for their noisier ratios, at little cost). Each block
    runs its turns in alternating order (the reverse on odd rounds and repeats), so that a tdx
    contender runs as often first in its block as its native one. A turn is ``per_turn``
    consecutive steps on consecutive batches, of which only the last is timed: the first ones bring
    the contender's code and data back into the caches after the other contenders' work, as in a
    training loop that runs alone (a step timed cold right after another framework's step measures
    the cache misses, which hit the contender with more Python code harder). Every contender sees
    the same batches in the same order (a contender with more turns goes further along them), so
    the loss trajectories agree over their common length. ``model`` is the module of the model
    (``bench/gpt.py`` by default, ``bench/lstm.py`` for the LSTM contenders).
    """
    import gpt

    model = model or gpt
    turns = {n: _turns(n, cpu_turns) for n in names}
    init, data = model.init_params(cfg), model.batches(cfg, (warmup + steps) * per_turn * max(turns.values()))
    fns = {n: make(n, cfg, init) for n in names}
    gc.collect()
    gc.freeze()  # the contenders' models and states: not rescanned by the collections each step triggers
    times = {n: [] for n in names}
    cpu = {n: [] for n in names}
    losses = {n: [] for n in names}
    done = {n: 0 for n in names}  # turns taken: the index of a contender's next batches
    for s in range(warmup + steps):
        for n in _round(names, s, cpu_turns):
            turn = data[done[n] * per_turn:(done[n] + 1) * per_turn]
            done[n] += 1
            for idx, tgt in turn[:-1]:
                losses[n].append(fns[n](idx, tgt))
            idx, tgt = turn[-1]
            t0, c0 = time.perf_counter(), time.process_time()
            loss = fns[n](idx, tgt)
            dt, dc = time.perf_counter() - t0, time.process_time() - c0
            losses[n].append(loss)
            if s >= warmup:
                times[n].append(dt)
                cpu[n].append(dc)
                if n in EVAL_TIMES:  # the MLX evaluation inside this timed step
                    TIMED_EVALS.setdefault(n, []).append(EVAL_TIMES[n][-1])
    return times, cpu, losses


def _turns(name: str, cpu_turns: int) -> int:
    """Turns a round for contender ``name``: ``cpu_turns`` on cpu, one on MLX."""
    return 1 if "mlx" in name else cpu_turns


def _round(names: list, s: int, cpu_turns: int = 1) -> list:
    """Round ``s``'s turns: block by block, each block's turns in its order on even (round + repeat),
    reversed on odd; contenders of no block last."""
    out = []
    for block in BLOCKS:
        present = [n for n in block if n in names]
        for r in range(max((_turns(n, cpu_turns) for n in present), default=0)):
            out += present if (s + r) % 2 == 0 else present[::-1]
    return out + [n for n in names if not any(n in block for block in BLOCKS)]


def paired_ratio(mine: list, theirs: list) -> float:
    """The median of ``mine[i] / theirs[i]`` over paired turns: each ratio compares two steps run next
    to each other, so a slow spell of the machine (here, phases of ~1.7x lasting several seconds)
    slows both sides of most ratios alike, where a ratio of two medians would take it at face value."""
    return statistics.median(a / b for a, b in zip(mine, theirs))


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
                          "--steps", str(steps), "--torch-device", DEVICES["torch"], "--mlx-device", DEVICES["mlx"]],
                         capture_output=True, text=True, env=env, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])["peak_mb"]


def available(names):
    import importlib.util

    have_mlx = importlib.util.find_spec("mlx") is not None
    return [n for n in names if have_mlx or "mlx" not in n]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--configs", nargs="+", default=["S", "M"])
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--rss-steps", type=int, default=12)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", nargs="+", help="run only these contenders")
    ap.add_argument("--no-rss", action="store_true")
    ap.add_argument("--per-turn", type=int, default=2, help="steps per turn, the last one timed")
    ap.add_argument("--cpu-turns", type=int, default=4, help="turns a round for the cpu contenders")
    ap.add_argument("--torch-device", default="cpu", help="device of the torch contenders (cpu, cuda:0...)")
    ap.add_argument("--mlx-device", default="mlx:cpu", choices=("mlx:cpu", "mlx:gpu"),
                    help="device of the MLX contenders")
    ap.add_argument("--models", nargs="+", default=["gpt", "lstm"], choices=("gpt", "lstm"),
                    help="the GPT configs' tables, the LSTM language model's table, or both")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    DEVICES.update(torch=args.torch_device, mlx=args.mlx_device)
    if args.child:
        return child_rss(args.child, args.configs[0], args.steps)
    if args.quick:
        args.configs, args.steps, args.warmup, args.no_rss = ["S"], 4, 2, True

    import gpt

    names = available([n for n in args.only or ["torch F", "tdx F", "torch nn", "tdx nn", "mlx", "tdx F mlx", "tdx nn mlx",
                                    "tdx nn mlx native-rng", "mlx compiled", "tdx compiled mlx"]
                         if n not in LSTM_NAMES])
    lines = [f"GPT training step on {args.torch_device} (torch contenders) and {args.mlx_device} (MLX ones), "
             f"{args.steps} interleaved rounds after {args.warmup} warm-up (a round: one turn "
             f"of each mlx contender, {args.cpu_turns} of each cpu one; a turn: {args.per_turn} steps, the last "
             f"timed; torch threads = 1); ms/step: median of the timed steps; 'vs native': median of the paired "
             f"turns' ratios; RSS: peak above interpreter start, own subprocess, {args.rss_steps} steps", ""]
    plot = {}
    ok = True
    for cfg_name in (args.configs if "gpt" in args.models else []):
        cfg = gpt.CONFIGS[cfg_name]
        times, cpus, losses = run_interleaved(names, cfg, args.steps, args.warmup, args.per_turn, args.cpu_turns)
        med = {n: statistics.median(t) for n, t in times.items()}
        cpu = {n: statistics.median(t) for n, t in cpus.items()}
        rss = {} if args.no_rss else {n: measure_rss(n, cfg_name, args.rss_steps) for n in names}
        ref = losses[names[0]]
        lines.append(f"config {cfg_name}: {cfg}")
        lines.append("| contender | ms/step | vs native | CPU ms/step | CPU vs native | peak RSS MB | RSS vs native "
                     "| max loss rel diff |")
        lines.append("|---|---|---|---|---|---|---|---|")
        natives = dict(PAIRS)
        for n in names:
            nat = natives.get(n)
            ratio = f"{paired_ratio(times[n], times[nat]):.2f}" if nat in med else ""
            cpu_ratio = f"{paired_ratio(cpus[n], cpus[nat]):.2f}" if nat in cpu else ""
            r = f"{rss[n]:.0f}" if n in rss else ""
            rr = f"{rss[n] / rss[nat]:.2f}" if n in rss and nat in rss and rss[nat] > 0 else ""
            diff = max(abs(a - b) / abs(b) for a, b in zip(losses[n], ref))
            ok &= diff < 1e-4
            lines.append(f"| {n} | {med[n] * 1e3:.1f} | {ratio} | {cpu[n] * 1e3:.1f} | {cpu_ratio} | {r} | {rr} "
                         f"| {diff:.1e} |")
            plot[(cfg_name, n)] = med[n] * 1e3
        lines.append("")
    if "lstm" in args.models:
        ok &= lstm_table(args, lines)
    lines.append("losses agree (rel diff < 1e-4): " + ("yes" if ok else "NO"))
    text = "\n".join(lines)
    print(text)
    out_dir = os.path.join(HERE, "out")
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "train.md"), "w") as fh:
        fh.write(text + "\n")
    if plot:
        write_plot(plot, args.configs, names, os.path.join(out_dir, "train.png"))
    if not ok:
        sys.exit(1)


def lstm_table(args, lines: list) -> bool:
    """Run the LSTM language model's contenders in turns and append their table to ``lines``; whether the
    losses agree. The MLX rows split a step into MLX's evaluation and the rest (building the graph: tdx's
    facade and tape, or mlx.nn's Python), so the table says how much of the gap to ``mlx.nn`` is tdx's."""
    import lstm

    cfg = lstm.CONFIGS["S"]
    names = available([n for n in (args.only or LSTM_NAMES) if n in LSTM_NAMES])
    if not names:
        return True
    times, _, losses = run_interleaved(names, cfg, args.steps, args.warmup, args.per_turn, args.cpu_turns, lstm)
    natives, ref, ok = dict(PAIRS), losses[names[0]], True
    lines.append(f"LSTM language model (Embedding, LSTM, Linear, cross entropy, SGD), {cfg}; same weights and "
                 "batches; 'MLX eval': median time of the step's MLX evaluation, 'graph': the rest of the step")
    lines.append("| contender | ms/step | vs native | MLX eval ms | graph ms | max loss rel diff |")
    lines.append("|---|---|---|---|---|---|")
    for n in names:
        nat = natives.get(n)
        ratio = f"{paired_ratio(times[n], times[nat]):.2f}" if nat in times else ""
        ev = TIMED_EVALS.get(n)
        split = (f"{statistics.median(ev) * 1e3:.1f} | {statistics.median(t - e for t, e in zip(times[n], ev)) * 1e3:.1f}"
                 if ev else " | ")
        diff = max(abs(a - b) / abs(b) for a, b in zip(losses[n], ref))
        ok &= diff < 1e-4
        lines.append(f"| {n} | {statistics.median(times[n]) * 1e3:.1f} | {ratio} | {split} | {diff:.1e} |")
    lines.append("")
    return ok


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
