"""``tdx.func.vmap`` on ``mlx:cpu``: MLX's own ``mx.vmap`` (taken when the function fits MLX's
tracing) against the slice-by-slice fallback, for a small MLP mapped over a batch of rows.

Run: ``.venv/bin/python bench/vmap.py [--rows 256] [--repeat 5]``
"""

from __future__ import annotations

import argparse
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=256)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    import tdx
    from tdx.compat.func import _tape

    dev = "mlx:cpu"
    w1, w2 = tdx.randn(64, 64, device=dev), tdx.randn(64, 10, device=dev)
    x = tdx.randn(args.rows, 64, device=dev)

    def f(a):
        return ((a @ w1).tanh() @ w2).softmax(-1)

    def timed():
        tdx.func.vmap(f)(x).sum().item()  # warm-up
        start = time.perf_counter()
        for _ in range(args.repeat):
            tdx.func.vmap(f)(x).sum().item()
        return (time.perf_counter() - start) / args.repeat

    fast = timed()
    own = _tape._mlx_vmap
    _tape._mlx_vmap = lambda *a, **k: None  # force the fallback
    try:
        slow = timed()
    finally:
        _tape._mlx_vmap = own
    print(f"vmap of a 2-layer MLP over {args.rows} rows on {dev}: mx.vmap {fast * 1e3:.1f} ms, "
          f"slice by slice {slow * 1e3:.1f} ms ({slow / fast:.1f}x)")


if __name__ == "__main__":
    main()
