"""The main job behind ``python -m tdx demo``: an MLP and an attention block, forward, on every device.

The same weights run through tdx on each available device and through real torch on CPU
(the oracle) or, where torch is not installed, through NumPy in float64; the table gives each
device's max error against the oracle and its median time. Frameworks load only when this runs.
"""

from __future__ import annotations

import math
import sys
import statistics
import time

import numpy as np

BATCH, SEQ, DIM, HIDDEN, HEADS = 4, 64, 128, 512, 4


def _weights(seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)

    def w(*shape):
        return (rng.standard_normal(shape) / math.sqrt(shape[0])).astype(np.float32)

    return {"x": rng.standard_normal((BATCH, SEQ, DIM)).astype(np.float32),
            "w1": w(DIM, HIDDEN), "b1": np.zeros(HIDDEN, np.float32) + 0.01, "w2": w(HIDDEN, DIM),
            "wq": w(DIM, DIM), "wk": w(DIM, DIM), "wv": w(DIM, DIM), "wo": w(DIM, DIM)}


def _softmax(s, lib):
    e = (s - s.amax(-1, keepdim=True)).exp()
    return e / e.sum(-1, keepdim=True)


def block(p: dict, lib):
    """One pre-activation transformer-style block written against the torch API (``lib``: tdx or torch)."""
    x = p["x"]
    b, t, d = x.shape
    h = d // HEADS

    def heads(m):
        return (x @ m).reshape(b, t, HEADS, h).transpose(1, 2)

    q, k, v = heads(p["wq"]), heads(p["wk"]), heads(p["wv"])
    scores = (q @ k.transpose(-2, -1)) / math.sqrt(h)
    mask = lib.ones(t, t, dtype=lib.bool, device=x.device).tril()
    scores = lib.where(mask, scores, float("-inf"))
    att = (_softmax(scores, lib) @ v).transpose(1, 2).reshape(b, t, d) @ p["wo"]
    y = x + att
    mlp = (y @ p["w1"] + p["b1"]).relu() @ p["w2"]
    return (y + mlp).tanh()


def block_numpy(p: dict) -> np.ndarray:
    """:func:`block` in NumPy float64: the oracle where torch is not installed."""
    p = {k: v.astype(np.float64) for k, v in p.items()}
    x = p["x"]
    b, t, d = x.shape
    h = d // HEADS

    def heads(m):
        return (x @ m).reshape(b, t, HEADS, h).transpose(0, 2, 1, 3)

    q, k, v = heads(p["wq"]), heads(p["wk"]), heads(p["wv"])
    scores = np.where(np.tril(np.ones((t, t), bool)), (q @ k.transpose(0, 1, 3, 2)) / math.sqrt(h), -np.inf)
    e = np.exp(scores - scores.max(-1, keepdims=True))
    att = ((e / e.sum(-1, keepdims=True)) @ v).transpose(0, 2, 1, 3).reshape(b, t, d) @ p["wo"]
    y = x + att
    return np.tanh(y + np.maximum(y @ p["w1"] + p["b1"], 0) @ p["w2"])


def oracle() -> str:
    """``"torch"`` when torch can be imported, else ``"numpy"``."""
    try:
        import torch  # noqa: F401
    except ImportError:
        return "numpy"
    return "torch"


def run(repeats: int = 5) -> list:
    """Rows of (device, status, max abs error, median ms) for every known device."""
    import tdx

    weights = _weights()
    if oracle() == "torch":
        import torch

        expected = block({k: torch.from_numpy(v) for k, v in weights.items()}, torch).numpy()
    else:
        expected = block_numpy(weights)
    rows = []
    for status in tdx.backends.available():
        if not status.available:
            rows.append((status.device, f"skipped: {status.reason}", None, None))
            continue
        p = {k: tdx.tensor(v, device=status.device) for k, v in weights.items()}
        out = block(p, tdx)
        err = float(np.max(np.abs(out.numpy(force=True) - expected)))
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            _force(block(p, tdx))
            times.append((time.perf_counter() - start) * 1e3)
        rows.append((status.device, "ok" if err < 1e-3 else "MISMATCH", err, statistics.median(times)))
    return rows


def _force(t) -> None:
    """Wait for ``t`` to be computed (MLX is lazy; CUDA/MPS are asynchronous)."""
    t._ex.host_numpy(t._n)


def main() -> int:
    print(f"tdx demo: attention + MLP block, batch={BATCH} seq={SEQ} dim={DIM} hidden={HIDDEN} heads={HEADS}")
    print("oracle: torch on cpu, float32\n" if oracle() == "torch" else "oracle: NumPy, float64 (torch is not installed)\n")
    rows = run()
    print(f"{'device':<10} {'status':<8} {'max abs err':>12} {'median ms':>10}")
    bad = 0
    for device, status, err, ms in rows:
        if err is None:
            print(f"{device:<10} {status}")
            continue
        bad += status != "ok"
        print(f"{device:<10} {status:<8} {err:>12.2e} {ms:>10.2f}")
    if all(err is None for _, _, err, _ in rows):
        print("\nnothing ran: no device is available. Install a framework: pip install 'tdx-runtime[torch]' "
              "(torch CPU/CUDA/MPS) or 'tdx-runtime[mlx]' (MLX), or both with 'tdx-runtime[all]'", file=sys.stderr)
        return 1
    return 1 if bad else 0
