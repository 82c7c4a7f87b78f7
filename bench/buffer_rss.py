"""Resident memory over many training steps of every ``nn`` module with state it updates itself, and of
optimizers stepping parameters nobody reads, on ``mlx:cpu`` by default.

Each case is a training step that reads nothing back (no ``loss.item()``), the case where a lazy executor
keeps every unevaluated update: BatchNorm1d/2d/3d, LazyBatchNorm2d, SyncBatchNorm (running statistics and
``num_batches_tracked``), InstanceNorm1d/2d/3d with ``track_running_stats``, ``spectral_norm`` (its power
iteration's ``_u``/``_v``), ``AveragedModel`` (the averaged copy and ``n_averaged``), and Adam and SGD with
momentum over a parameter the model uses, one it never reads and a frozen one (gradients accumulate into
``.grad``, weight decay and momentum update what nobody reads). For each case it runs ``--warmup`` steps,
then ``--steps`` more, sampling the RSS ``--samples`` times, and prints the RSS growth per 10,000 steps as
the least-squares slope of the samples and as the first-to-last difference (the goal: at most 1 MB per
10,000 steps over 100,000 steps).

Run: ``.venv/bin/python bench/buffer_rss.py [--steps 100000] [--warmup 1000] [--samples 20]
[--device mlx:cpu] [--cases BatchNorm2d,Adam]``
"""

from __future__ import annotations

import argparse
import gc
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from backward_rss import rss_mb  # noqa: E402


def _norm(cls, shape, **kw):
    def build(tdx, device):
        m = cls(4, **kw).to(device).train()
        x = tdx.randn(*shape, device=device)

        def step():
            m(x).sum().backward()

        return step

    return build


def _spectral_norm(tdx, device):
    m = tdx.nn.utils.parametrizations.spectral_norm(tdx.nn.Linear(4, 4)).to(device).train()
    x = tdx.randn(8, 4, device=device)

    def step():
        m(x).sum().backward()

    return step


def _averaged_model(tdx, device):
    model = tdx.nn.Linear(4, 4).to(device)
    avg = tdx.optim.swa_utils.AveragedModel(model)
    opt = tdx.optim.SGD(model.parameters(), lr=1e-3)
    x = tdx.randn(8, 4, device=device)

    def step():
        model(x).sum().backward()
        opt.step()
        avg.update_parameters(model)

    return step


def _optimizer(name, **kw):
    def build(tdx, device):
        model = tdx.nn.Linear(4, 4).to(device)
        unread = tdx.nn.Parameter(tdx.randn(16, device=device))  # stepped by the optimizer, read by nobody
        frozen = tdx.nn.Parameter(tdx.randn(16, device=device))
        unread.grad, frozen.grad = tdx.zeros(16, device=device), tdx.zeros(16, device=device)
        frozen.requires_grad_(False)
        opt = getattr(tdx.optim, name)([*model.parameters(), unread, frozen], lr=1e-3, weight_decay=1e-2, **kw)
        x = tdx.randn(8, 4, device=device)

        def step():
            model(x).sum().backward()
            opt.step()
            opt.zero_grad(set_to_none=False)

        return step

    return build


def cases(tdx) -> dict:
    """Case name -> ``build(tdx, device)`` returning a zero-argument training step."""
    nn = tdx.nn
    return {
        "BatchNorm1d": _norm(nn.BatchNorm1d, (8, 4)),
        "BatchNorm2d": _norm(nn.BatchNorm2d, (2, 4, 3, 3)),
        "BatchNorm3d": _norm(nn.BatchNorm3d, (2, 4, 2, 2, 2)),
        "BatchNorm2d(momentum=None)": _norm(nn.BatchNorm2d, (2, 4, 3, 3), momentum=None),
        "LazyBatchNorm2d": lambda tdx, device: _norm(lambda c: nn.LazyBatchNorm2d(), (2, 4, 3, 3))(tdx, device),
        "SyncBatchNorm": _norm(nn.SyncBatchNorm, (2, 4, 3, 3)),
        "InstanceNorm1d": _norm(nn.InstanceNorm1d, (2, 4, 5), affine=True, track_running_stats=True),
        "InstanceNorm2d": _norm(nn.InstanceNorm2d, (2, 4, 3, 3), affine=True, track_running_stats=True),
        "InstanceNorm3d": _norm(nn.InstanceNorm3d, (2, 4, 2, 2, 2), affine=True, track_running_stats=True),
        "spectral_norm": _spectral_norm,
        "AveragedModel": _averaged_model,
        "Adam": _optimizer("Adam"),
        "AdamW": _optimizer("AdamW"),
        "SGD(momentum)": _optimizer("SGD", momentum=0.9),
    }


def slope_per_10k(points) -> float:
    """The least-squares slope of ``(step, MB)`` points, in MB per 10,000 steps."""
    n = len(points)
    mx = sum(p[0] for p in points) / n
    my = sum(p[1] for p in points) / n
    var = sum((p[0] - mx) ** 2 for p in points)
    return 0.0 if not var else 1e4 * sum((p[0] - mx) * (p[1] - my) for p in points) / var


def run(build, tdx, device, steps: int, warmup: int, samples: int, kept: list) -> tuple:
    """(slope MB/10k steps, first-to-last MB/10k steps, ms per step) of one case; its step goes into ``kept``."""
    step = build(tdx, device)
    kept.append(step)
    for _ in range(warmup):
        step()
    gc.collect()
    every = max(1, steps // samples)
    points = [(0, rss_mb())]
    start = time.perf_counter()
    for i in range(1, steps + 1):
        step()
        if i % every == 0 or i == steps:
            points.append((i, rss_mb()))
    elapsed = time.perf_counter() - start
    return slope_per_10k(points), 1e4 * (points[-1][1] - points[0][1]) / steps, 1e3 * elapsed / steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100000)
    parser.add_argument("--warmup", type=int, default=1000)
    parser.add_argument("--samples", type=int, default=20)
    parser.add_argument("--device", default="mlx:cpu")
    parser.add_argument("--cases", default=None, help="comma-separated case names (default: all)")
    parser.add_argument("--inline", action="store_true",
                        help="run the cases in this process (default: each in its own, so that memory one case "
                             "frees cannot hide another's growth)")
    args = parser.parse_args()
    import tdx

    table = cases(tdx)
    names = args.cases.split(",") if args.cases else list(table)
    if not args.inline:
        print(f"{args.device}: {args.steps} steps per case after {args.warmup} warm-up, nothing read back")
        print(f"{'case':28s} {'MB/10k (slope)':>15s} {'MB/10k (last-first)':>20s} {'ms/step':>8s}", flush=True)
        for name in names:
            cmd = [sys.executable, os.path.abspath(__file__), "--inline", "--cases", name, "--steps", str(args.steps),
                   "--warmup", str(args.warmup), "--samples", str(args.samples), "--device", args.device]
            subprocess.run(cmd, check=True)
        return
    kept = []  # every case's objects stay alive: no case reuses memory another freed
    for name in names:
        tdx.manual_seed(0)
        slope, delta, ms = run(table[name], tdx, args.device, args.steps, args.warmup, args.samples, kept)
        print(f"{name:28s} {slope:15.3f} {delta:20.3f} {ms:8.3f}", flush=True)


if __name__ == "__main__":
    main()
