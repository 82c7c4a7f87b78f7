"""One AdamW step over a GPT-sized parameter list: tdx.optim.AdamW against torch's AdamW
(cpu) and against ``mlx.optimizers.AdamW`` (mlx:cpu).

The parameter list is a 4-layer, width-256 GPT (token and position embeddings, per layer
two layer norms, qkv/proj attention and a 4x MLP, final norm): ~3.4M parameters in 52
tensors. Each side steps the same parameters with the same gradients; the time is the
median over interleaved repeats of one ``step()`` (MLX: the update plus ``mx.eval`` of the new
parameters and state, tdx on MLX: the step plus evaluating every parameter and state).
Prints microseconds and the ratio tdx / native.

Run: ``.venv/bin/python bench/optim_step.py [--repeats 30] [--layers 4] [--width 256]``
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np


def gpt_shapes(layers: int, width: int, vocab: int = 1024, ctx: int = 256):
    """Parameter shapes of a small GPT (weights stored as torch's nn.Linear: out x in)."""
    shapes = [(vocab, width), (ctx, width)]
    for _ in range(layers):
        shapes += [(width,), (width,), (3 * width, width), (3 * width,), (width, width), (width,),
                   (width,), (width,), (4 * width, width), (4 * width,), (width, 4 * width), (width,)]
    shapes += [(width,), (width,)]
    return shapes


def timed(fns, repeats: int, warmup: int = 3) -> list[float]:
    """Median microseconds of each callable, run interleaved so that machine load hits all alike."""
    for _ in range(warmup):
        for fn in fns:
            fn()
    samples = [[] for _ in fns]
    for _ in range(repeats):
        for fn, out in zip(fns, samples):
            t0 = time.perf_counter()
            fn()
            out.append(time.perf_counter() - t0)
    return [statistics.median(s) * 1e6 for s in samples]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--width", type=int, default=256)
    args = ap.parse_args()

    import torch

    import tdx
    import tdx.optim

    rng = np.random.default_rng(0)
    shapes = gpt_shapes(args.layers, args.width)
    values = [rng.standard_normal(s).astype(np.float32) * 0.02 for s in shapes]
    grads = [rng.standard_normal(s).astype(np.float32) * 0.01 for s in shapes]
    n = sum(v.size for v in values)
    print(f"AdamW step, {len(shapes)} tensors, {n / 1e6:.2f}M parameters, median of {args.repeats}")
    rows = []

    # cpu: tdx (torch executor) against torch.optim.AdamW (single-tensor and foreach)
    tparams = [torch.tensor(v, requires_grad=True) for v in values]
    for p, g in zip(tparams, grads):
        p.grad = torch.tensor(g)
    topt = torch.optim.AdamW(tparams, lr=1e-3)
    topt_fe = torch.optim.AdamW([torch.tensor(v, requires_grad=True) for v in values], lr=1e-3, foreach=True)
    for p, g in zip(topt_fe.param_groups[0]["params"], grads):
        p.grad = torch.tensor(g)
    xparams = [tdx.tensor(v, device="cpu", requires_grad=True) for v in values]
    for p, g in zip(xparams, grads):
        p.grad = tdx.tensor(g, device="cpu")
    xopt = tdx.optim.AdamW(xparams, lr=1e-3)
    t_native, t_fe, t_tdx = timed([topt.step, topt_fe.step, xopt.step], args.repeats)
    rows.append(("cpu", "torch AdamW (single-tensor)", t_native, t_tdx))
    rows.append(("cpu", "torch AdamW (foreach=True)", t_fe, t_tdx))

    # mlx:cpu: tdx (MLX executor) against mlx.optimizers.AdamW
    try:
        import mlx.core as mx
        import mlx.optimizers as mopt
    except ImportError as exc:  # mlx not installed: report and skip the row
        print(f"mlx:cpu skipped: {exc}")
    else:
        mx.set_default_device(mx.cpu)
        mparams = {f"p{i}": mx.array(v) for i, v in enumerate(values)}
        mgrads = {f"p{i}": mx.array(g) for i, g in enumerate(grads)}
        mo = mopt.AdamW(learning_rate=1e-3, weight_decay=1e-2, bias_correction=True)
        mo.init(mparams)
        mx.eval(mparams, mo.state)

        def mlx_step():
            new = mo.apply_gradients(mgrads, mparams)
            mparams.update(new)
            mx.eval(mparams, mo.state)

        xm = [tdx.tensor(v, device="mlx:cpu", requires_grad=True) for v in values]
        for p, g in zip(xm, grads):
            p.grad = tdx.tensor(g, device="mlx:cpu")
        xmo = tdx.optim.AdamW(xm, lr=1e-3)

        def tdx_mlx_step():
            xmo.step()
            arrays = [p.native for p in xm]
            for st in xmo.state.values():
                arrays += [t.native for t in st.values()]
            mx.eval(*arrays)

        rows.append(("mlx:cpu", "mlx.optimizers.AdamW", *timed([mlx_step, tdx_mlx_step], args.repeats)))

    print(f"{'device':<8} {'native':<30} {'native us':>11} {'tdx us':>11} {'tdx/native':>11}")
    for dev, name, t_n, t_x in rows:
        print(f"{dev:<8} {name:<30} {t_n:>11.0f} {t_x:>11.0f} {t_x / t_n:>11.2f}")


if __name__ == "__main__":
    main()
