"""Peak memory of one training step of a deep MLP stack on ``mlx:cpu``, with and without
``torch.utils.checkpoint`` (each block checkpointed), and that both give the same gradients.

Each variant runs in a fresh subprocess (so one's peak cannot hide the other's), resets MLX's
peak counter after building the model and input, runs forward + backward once, and prints
``mx.get_peak_memory()`` and the process's peak RSS growth. The gradients' sums are printed too:
they must agree between the two variants.

Run: ``.venv/bin/python bench/checkpoint_memory.py [--depth 48] [--width 256] [--batch 4096]
[--device mlx:cpu]``
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys


def _peak_rss_mb() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**10  # Linux: kB


def run_one(depth: int, width: int, batch: int, device: str, use_checkpoint: bool) -> dict:
    """One forward + backward; returns peak memory figures and a gradient checksum."""
    import mlx.core as mx

    import tdx
    import tdx.nn as nn
    from tdx.utils.checkpoint import checkpoint

    tdx.manual_seed(0)
    blocks = nn.ModuleList([nn.Sequential(nn.Linear(width, width), nn.GELU(), nn.Linear(width, width), nn.Tanh())
                            for _ in range(depth)]).to(device)
    x = tdx.randn(batch, width, device=device)
    mx.eval([p._n for p in blocks.parameters()] + [x._n])
    rss0 = _peak_rss_mb()
    mx.reset_peak_memory()
    h = x
    for b in blocks:
        h = checkpoint(b, h, use_reentrant=False) if use_checkpoint else b(h)
    loss = h.pow(2).mean()
    loss.backward()
    grads = [p.grad for p in blocks.parameters()]
    mx.eval([g._n for g in grads])
    return {"checkpoint": use_checkpoint, "peak_mb": mx.get_peak_memory() / 2**20,
            "rss_growth_mb": _peak_rss_mb() - rss0, "loss": loss.item(),
            "grad_sum": sum(float(g.double().abs().sum().item()) for g in grads)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--depth", type=int, default=48)
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("--batch", type=int, default=4096)
    parser.add_argument("--device", default="mlx:cpu")
    parser.add_argument("--one", choices=("plain", "checkpoint"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(run_one(args.depth, args.width, args.batch, args.device, args.one == "checkpoint")))
        return
    rows = []
    for one in ("plain", "checkpoint"):
        cmd = [sys.executable, __file__, "--depth", str(args.depth), "--width", str(args.width), "--batch",
               str(args.batch), "--device", args.device, "--one", one]
        rows.append(json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout))
    print(f"{args.depth} blocks of Linear({args.width})-GELU-Linear-Tanh, batch {args.batch}, {args.device}")
    for r in rows:
        print(f"  {'checkpoint' if r['checkpoint'] else 'plain':>10}: MLX peak {r['peak_mb']:8.1f} MB, peak RSS "
              f"growth {r['rss_growth_mb']:8.1f} MB, loss {r['loss']:.6f}, sum|grad| {r['grad_sum']:.6f}")
    plain, ck = rows
    print(f"  drop: MLX peak {100 * (1 - ck['peak_mb'] / plain['peak_mb']):.1f}%, "
          f"peak RSS growth {100 * (1 - ck['rss_growth_mb'] / max(plain['rss_growth_mb'], 1e-9)):.1f}%")


if __name__ == "__main__":
    main()
