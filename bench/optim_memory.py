"""Resident memory growth of many optimizer steps of a small MLP, and the time to read ``state["step"]``.

Runs ``--warmup`` steps, reads the RSS, runs ``--steps`` more, reads it again and prints the growth
(the goal: at most 5 MB after warm-up for 20,000 Adam steps on ``mlx:cpu``) and how long reading
``opt.state[p]["step"]`` takes (the goal: under 1 ms; a counter kept as a chain of lazy adds takes
seconds). Each step reads its loss (``loss.item()``), as training loops do: on a lazy executor a
loop that never reads anything keeps its whole unevaluated graph. ``--optimizer`` picks Adam, AdamW, NAdam, RMSprop or Adagrad; ``--device`` cpu or mlx:cpu.

Run: ``.venv/bin/python bench/optim_memory.py [--steps 20000] [--warmup 2000] [--optimizer Adam]
[--device mlx:cpu]``
"""

from __future__ import annotations

import argparse
import time

from backward_rss import rss_mb


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20000)
    parser.add_argument("--warmup", type=int, default=2000)
    parser.add_argument("--optimizer", default="Adam", choices=("Adam", "AdamW", "NAdam", "RMSprop", "Adagrad"))
    parser.add_argument("--device", default="mlx:cpu")
    args = parser.parse_args()
    import tdx

    tdx.manual_seed(0)
    model = tdx.nn.Sequential(tdx.nn.Linear(16, 32), tdx.nn.ReLU(), tdx.nn.Linear(32, 1)).to(args.device)
    opt = getattr(tdx.optim, args.optimizer)(model.parameters(), lr=1e-3)
    x, y = tdx.randn(64, 16, device=args.device), tdx.randn(64, 1, device=args.device)

    def step() -> float:  # a training step as programs write it: the loss is read every step
        opt.zero_grad()
        loss = tdx.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        return loss.item()

    for _ in range(args.warmup):
        step()
    float(next(model.parameters()).sum())
    before = rss_mb()
    start = time.perf_counter()
    for _ in range(args.steps):
        step()
    float(next(model.parameters()).sum())
    elapsed = time.perf_counter() - start
    after = rss_mb()
    param = next(model.parameters())
    read = time.perf_counter()
    step_count = float(opt.state[param]["step"])
    read = time.perf_counter() - read
    print(f"{args.optimizer} on {args.device}: {args.steps} steps after {args.warmup} warm-up, "
          f"{1e3 * elapsed / args.steps:.3f} ms/step")
    print(f"RSS {before:.1f} MB -> {after:.1f} MB: growth {after - before:.2f} MB "
          f"({1024 * (after - before) / args.steps:.3f} KB/step)")
    print(f"state['step'] = {step_count:.0f}, read in {1e3 * read:.3f} ms")


if __name__ == "__main__":
    main()
