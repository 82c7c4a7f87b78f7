"""Benchmark of ``F.interpolate`` at real sizes: tdx on each device beside torch on the same machine.

For every mode (nearest, nearest-exact, linear, bilinear, bicubic, trilinear, area; upsampling and
downsampling, ``align_corners`` both ways where it applies) it times the forward (the result evaluated)
and the forward plus backward of tdx on each device and of torch on CPU, in one run, round-robin, and
prints the medians over ``--repeats`` and the tdx/torch ratios of the medians (the goal: at most 3x on every device).
Each output holds about 400k elements.

    python bench/interpolate.py [--repeats 15] [--devices cpu,mlx:cpu] [--modes bilinear,bicubic] [--no-backward]
                                [--torch-threads 1]

This script must never be imported by tdx.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import torch  # noqa: E402

import tdx  # noqa: E402

# (name, input shape, interpolate kwargs): outputs of about 400k elements
CASES = [
    ("nearest x2", (4, 16, 50, 50), dict(scale_factor=2, mode="nearest")),
    ("nearest-exact size", (4, 16, 50, 50), dict(size=(100, 100), mode="nearest-exact")),
    ("linear x4", (8, 16, 800), dict(scale_factor=4, mode="linear")),
    ("linear x4 ac", (8, 16, 800), dict(scale_factor=4, mode="linear", align_corners=True)),
    ("bilinear x2", (4, 16, 50, 50), dict(scale_factor=2, mode="bilinear")),
    ("bilinear size ac", (4, 16, 50, 50), dict(size=(100, 100), mode="bilinear", align_corners=True)),
    ("bilinear down", (4, 16, 200, 200), dict(size=(100, 100), mode="bilinear")),
    ("bicubic x2", (4, 16, 50, 50), dict(scale_factor=2, mode="bicubic")),
    ("bicubic x2 ac", (4, 16, 50, 50), dict(scale_factor=2, mode="bicubic", align_corners=True)),
    ("trilinear x2", (2, 8, 15, 15, 15), dict(scale_factor=2, mode="trilinear")),
    ("area down", (4, 16, 200, 200), dict(size=(100, 100), mode="area")),
    ("area odd", (4, 16, 150, 150), dict(size=(100, 100), mode="area")),
]


def _time(fn, sync) -> float:
    start = time.perf_counter()
    sync(fn())
    return time.perf_counter() - start


def _runner(lib, device, shape, kw, backward):
    """A zero-argument call of one case and the function that waits for its result."""
    x = lib.randn(*shape, device=device, requires_grad=backward)
    f = lib.nn.functional.interpolate
    if backward:
        def call():
            x.grad = None
            f(x, **kw).sum().backward()
            return x.grad
    else:
        def call():
            return f(x, **kw)
    return call, (lambda out: out.sum().item())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--devices", default="cpu,mlx:cpu")
    parser.add_argument("--modes", default=None, help="comma-separated modes to run (default: all)")
    parser.add_argument("--no-backward", action="store_true")
    parser.add_argument("--torch-threads", type=int, default=None,
                        help="torch's intra-op threads (default: torch's own choice; MLX's CPU kernels use one)")
    args = parser.parse_args()
    devices = args.devices.split(",")
    if args.torch_threads:
        torch.set_num_threads(args.torch_threads)
    print(f"torch {torch.__version__} on {torch.get_num_threads()} threads; medians of {args.repeats} "
          "round-robin repeats, result evaluated", flush=True)
    kinds = [False] if args.no_backward else [False, True]
    head = "".join(f"{d + ' ms':>12s}{'/torch':>8s}" for d in devices)
    print(f"{'case':22s}{'pass':>5s}{'torch ms':>10s}{head}", flush=True)
    for name, shape, kw in CASES:
        if args.modes and kw["mode"] not in args.modes.split(","):
            continue
        for backward in kinds:
            runners = {"torch": _runner(torch, "cpu", shape, kw, backward)}
            runners.update({d: _runner(tdx, d, shape, kw, backward) for d in devices})
            times = {k: [] for k in runners}
            for k, (call, sync) in runners.items():  # warm-up
                _time(call, sync)
            for _ in range(args.repeats):
                for k, (call, sync) in runners.items():
                    times[k].append(_time(call, sync))
            med = {k: 1e3 * statistics.median(v) for k, v in times.items()}
            row = "".join(f"{med[d]:12.2f}{med[d] / med['torch']:8.2f}" for d in devices)
            print(f"{name:22s}{'bwd' if backward else 'fwd':>5s}{med['torch']:10.2f}{row}", flush=True)


if __name__ == "__main__":
    main()
