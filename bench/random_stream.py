"""The cost of torch's random stream on MLX: a training step with dropout, stream "torch" against
"native", side by side in one process.

A 3-layer MLP (width ``--width``, batch ``--batch``) with a dropout after each hidden layer trains
on mlx:cpu with AdamW. Each round runs one timed step under each stream, in alternating order, after a
warm step of its own; the figure is the median over rounds of ms/step and of the per-round ratio
torch / native. Under "torch" every dropout mask is drawn by torch's CPU generator and copied into
MLX (the numbers torch draws on cpu); under "native" MLX draws it. Also times the draws alone.

Run: ``.venv/bin/python bench/random_stream.py [--rounds 15] [--width 512] [--batch 64]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--width", type=int, default=512)
    parser.add_argument("--batch", type=int, default=64)
    args = parser.parse_args()

    import tdx
    import tdx.nn as nn

    def use(stream: str) -> None:
        os.environ["TDX_RANDOM_STREAM"] = stream
        tdx.config.reload()

    device = "mlx:cpu"
    tdx.manual_seed(0)
    w = args.width
    model = nn.Sequential(nn.Linear(w, w), nn.ReLU(), nn.Dropout(0.1), nn.Linear(w, w), nn.ReLU(),
                          nn.Dropout(0.1), nn.Linear(w, w), nn.ReLU(), nn.Dropout(0.1), nn.Linear(w, 10)).to(device)
    opt = tdx.optim.AdamW(model.parameters(), lr=1e-3)
    x = tdx.randn(args.batch, w, device=device)
    y = tdx.randint(0, 10, (args.batch,), device=device)

    def step() -> float:
        t = time.perf_counter()
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        loss.item()
        for p in model.parameters():
            p.sum().item()
        return time.perf_counter() - t

    def draws() -> float:
        h = tdx.ones(args.batch, w, device=device)
        t = time.perf_counter()
        for _ in range(3):
            nn.functional.dropout(h, 0.1).sum().item()
        return time.perf_counter() - t

    times = {"torch": [], "native": []}
    draw_times = {"torch": [], "native": []}
    for r in range(args.rounds):
        order = ("torch", "native") if r % 2 == 0 else ("native", "torch")
        for stream in order:
            use(stream)
            step()
            times[stream].append(step())
            draw_times[stream].append(draws())
    ratios = [a / b for a, b in zip(times["torch"], times["native"])]
    print(f"mlx:cpu, MLP {w}x3 with 3 dropouts, batch {args.batch}, {args.rounds} rounds (median, min-max)")
    for stream in ("torch", "native"):
        t = [v * 1e3 for v in times[stream]]
        d = [v * 1e3 for v in draw_times[stream]]
        print(f"  stream {stream:<6}  step {statistics.median(t):8.2f} ms ({min(t):.2f}-{max(t):.2f})   "
              f"3 dropouts alone {statistics.median(d):6.2f} ms")
    print(f"  torch / native per step: {statistics.median(ratios):.3f} ({min(ratios):.3f}-{max(ratios):.3f})")
    use("torch")


if __name__ == "__main__":
    main()
