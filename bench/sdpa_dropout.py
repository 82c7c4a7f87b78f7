"""The cost of torch-exact attention dropout on MLX: ``scaled_dot_product_attention`` with dropout,
random stream "torch" against "native", side by side in one process.

Under "torch" (the default) the dropout mask is the one torch's math kernel draws: torch's CPU
generator fills the ``(B, H, L, L)`` noise on the host and it is copied into MLX; under "native"
MLX draws a keep-mask from its own key. For each length L it times a forward pass and a forward and
backward pass (tdx's tape) under each stream, alternating the order per round, and prints the
median ms per call and the median per-round ratio torch / native; also the same call with
``dropout_p=0`` (no draw) for scale, and the mask draw alone (torch's noise against MLX's keep-mask).

Run: ``.venv/bin/python bench/sdpa_dropout.py [--rounds 9] [--batch 2] [--heads 8] [--dim 64] [--lengths 128 256 512]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--lengths", type=int, nargs="+", default=[128, 256, 512])
    parser.add_argument("--p", type=float, default=0.1)
    args = parser.parse_args()

    import tdx

    F = tdx.nn.functional
    device = "mlx:cpu"

    def use(stream: str) -> None:
        os.environ["TDX_RANDOM_STREAM"] = stream
        tdx.config.reload()

    print(f"{device}, B={args.batch} H={args.heads} D={args.dim}, dropout_p={args.p}, {args.rounds} rounds "
          "(median ms per call; ratio: median of per-round torch / native)")
    print(f"{'L':>6} {'pass':>9} {'no dropout':>11} {'native':>9} {'torch':>9} {'torch/native':>13}")
    for L in args.lengths:
        tdx.manual_seed(0)
        q, k, v = (tdx.randn(args.batch, args.heads, L, args.dim, device=device) for _ in range(3))
        qg, kg, vg = (t.clone().requires_grad_(True) for t in (q, k, v))

        def forward(p):
            t = time.perf_counter()
            F.scaled_dot_product_attention(q, k, v, dropout_p=p).sum().item()
            return time.perf_counter() - t

        def backward(p):
            t = time.perf_counter()
            F.scaled_dot_product_attention(qg, kg, vg, dropout_p=p).sum().backward()
            qg.grad.sum().item()
            qg.grad = kg.grad = vg.grad = None
            return time.perf_counter() - t

        for name, run in (("forward", forward), ("fwd+bwd", backward)):
            times = {"none": [], "torch": [], "native": []}
            for r in range(args.rounds):
                order = ("torch", "native") if r % 2 == 0 else ("native", "torch")
                for stream in order:
                    use(stream)
                    run(args.p)
                    times[stream].append(run(args.p))
                times["none"].append(run(0.0))
            ratios = [a / b for a, b in zip(times["torch"], times["native"])]
            med = {k: statistics.median(t) * 1e3 for k, t in times.items()}
            print(f"{L:>6} {name:>9} {med['none']:>11.2f} {med['native']:>9.2f} {med['torch']:>9.2f} "
                  f"{statistics.median(ratios):>13.2f}")
        draws = _mask_draws(tdx, device, (args.batch, args.heads, L, L), args.p, args.rounds)
        print(f"{L:>6} {'mask only':>9} {'':>11} {draws['native']:>9.2f} {draws['torch']:>9.2f} "
              f"{draws['torch'] / draws['native']:>13.2f}")
    use("torch")


def _mask_draws(tdx, device, shape, p, rounds) -> dict:
    """Median ms to draw one call's mask alone: torch's noise (host draw and copy) and MLX's keep-mask."""
    import mlx.core as mx

    from tdx.attention._ops import ops_for

    ops = ops_for(tdx.backends.get(device))
    times = {"torch": [], "native": []}
    for _ in range(rounds):
        t = time.perf_counter()
        mx.eval(ops.noise(shape, p, mx.float32))
        times["torch"].append(time.perf_counter() - t)
        t = time.perf_counter()
        mx.eval(ops.keep_mask(shape, p, ops.draw_seed()))
        times["native"].append(time.perf_counter() - t)
    return {k: statistics.median(v) * 1e3 for k, v in times.items()}


if __name__ == "__main__":
    main()
