"""A transformers training step (forward, backward, AdamW) on real torch and on tdx's torch cpu executor.

Each model (``llama``: ``LlamaForCausalLM``, ``gpt2``: ``GPT2LMHeadModel``, both from a tiny config) is
built once by real torch from a fixed seed and saved with ``save_pretrained``; every contender loads
those same weights and trains on the same batches:
- ``torch cpu``: transformers on real torch;
- ``tdx cpu``: the same code under ``python -m tdx run --device cpu``.
A step is ``model(input_ids, labels=input_ids).loss``, ``loss.backward()``, ``AdamW.step()``,
``zero_grad()``, with torch's intra-op threads at 1. Each contender is its own process (transformers binds
one ``torch`` per process), started in turns over ``rounds``; each process times ``steps`` steps after
``warmup`` and reports the median wall and CPU seconds of a step and every loss. The ratio tdx / torch is
the median over rounds of the ratio of the two processes' medians in that round (adjacent processes: a
slow spell of the machine slows both), and the losses of every step are compared with torch's.

Run alone: ``python bench/hf_train.py [--models llama gpt2] [--rounds 3] [--steps 8]``; ``bench/train.py``
adds its rows to its table (``--hf-models``, ``--hf-rounds``).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
CONFIGS = {
    "llama": ("LlamaConfig", "LlamaForCausalLM",
              dict(hidden_size=128, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4,
                   num_key_value_heads=2, vocab_size=512, max_position_embeddings=256, tie_word_embeddings=False)),
    "gpt2": ("GPT2Config", "GPT2LMHeadModel",
             dict(n_embd=128, n_layer=2, n_head=4, vocab_size=512, n_positions=256, resid_pdrop=0.0,
                  embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=0, eos_token_id=0)),
}
BATCH, SEQ = 4, 64
CONTENDERS = {"torch cpu": None, "tdx cpu": "cpu"}
# ``--gpu``: the same pair on cuda; real torch moves the model and batches there, tdx is told by --device
GPU_CONTENDERS = {"torch cuda": None, "tdx cuda": "cuda:0"}
PLACES = {"torch cuda": "cuda"}


def make_model(kind: str, path: str) -> None:
    import torch
    import transformers

    config_cls, model_cls, cfg = CONFIGS[kind]
    torch.manual_seed(0)
    getattr(transformers, model_cls)(getattr(transformers, config_cls)(**cfg)).save_pretrained(path)


def worker(kind: str, path: str, steps: int, warmup: int, place: str | None = None) -> dict:
    """One contender's run (under real torch or under ``python -m tdx run``: the same code); ``place``: the
    device real torch moves the model and batches to."""
    import torch
    import transformers
    from transformers.utils import logging

    logging.set_verbosity_error()
    torch.set_num_threads(1)
    model = getattr(transformers, CONFIGS[kind][1]).from_pretrained(path, attn_implementation="sdpa")
    model.train()
    if place:
        model.to(place)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    vocab = CONFIGS[kind][2]["vocab_size"]
    batches = [torch.tensor([[(b * 131 + t * 31 + s * 17) % vocab for t in range(SEQ)] for b in range(BATCH)])
               for s in range(warmup + steps)]
    if place:
        batches = [ids.to(place) for ids in batches]
    times, cpu, losses = [], [], []
    for i, ids in enumerate(batches):
        t0, c0 = time.perf_counter(), time.process_time()
        loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        opt.step()
        opt.zero_grad()
        value = loss.item()
        dt, dc = time.perf_counter() - t0, time.process_time() - c0
        losses.append(value)
        if i >= warmup:
            times.append(dt)
            cpu.append(dc)
    return {"wall": statistics.median(times), "cpu": statistics.median(cpu), "losses": losses}


def run_contender(name: str, kind: str, path: str, steps: int, warmup: int) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONWARNINGS="ignore")
    me = [str(pathlib.Path(__file__).resolve()), "--worker", kind, "--path", path, "--steps", str(steps),
          "--warmup", str(warmup)] + (["--place", PLACES[name]] if name in PLACES else [])
    device = {**CONTENDERS, **GPU_CONTENDERS}[name]
    cmd = [sys.executable, "-m", "tdx", "run", "--device", device, *me] if device else [sys.executable, *me]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        raise SystemExit(f"{name} ({kind}) failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure(kinds, rounds: int = 3, steps: int = 8, warmup: int = 3, gpu: bool = False) -> list[dict]:
    """One row per model kind and contender: median ms/step (wall, CPU), the paired ratios, the losses' diff
    (``gpu``: the cuda pair instead of the cpu pair)."""
    contenders = GPU_CONTENDERS if gpu else CONTENDERS
    native = next(iter(contenders))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for kind in kinds:
            path = os.path.join(tmp, kind)
            make_model(kind, path)
            runs = {name: [] for name in contenders}
            for r in range(rounds):
                order = list(contenders) if r % 2 == 0 else list(contenders)[::-1]
                for name in order:
                    runs[name].append(run_contender(name, kind, path, steps, warmup))
            ref = runs[native][0]["losses"]
            for name, res in runs.items():
                diff = max(abs(a - b) / abs(b) for run in res for a, b in zip(run["losses"], ref))
                row = {"model": kind, "contender": name, "ms": statistics.median(x["wall"] for x in res) * 1e3,
                       "cpu_ms": statistics.median(x["cpu"] for x in res) * 1e3, "diff": diff}
                if name != native:
                    base = runs[native]
                    row["ratio"] = statistics.median(a["wall"] / b["wall"] for a, b in zip(res, base))
                    row["cpu_ratio"] = statistics.median(a["cpu"] / b["cpu"] for a, b in zip(res, base))
                rows.append(row)
    return rows


def table(rows: list[dict], rounds: int, steps: int) -> list[str]:
    pair = " vs ".join(reversed(list(dict.fromkeys(r["contender"] for r in rows))))
    lines = [f"transformers training step (batch {BATCH} x {SEQ} tokens, AdamW, torch threads = 1), {pair}: each "
             f"contender its own process, {rounds} rounds in turns, median of {steps} timed steps "
             "a process; 'vs native': median over rounds of the paired processes' ratio",
             "| model | contender | ms/step | vs native | CPU ms/step | CPU vs native | max loss rel diff |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        ratio = f"{r['ratio']:.2f}" if "ratio" in r else ""
        cpu_ratio = f"{r['cpu_ratio']:.2f}" if "cpu_ratio" in r else ""
        lines.append(f"| {r['model']} | {r['contender']} | {r['ms']:.1f} | {ratio} | {r['cpu_ms']:.1f} | {cpu_ratio} "
                     f"| {r['diff']:.1e} |")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="+", default=list(CONFIGS), choices=list(CONFIGS))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--worker")
    ap.add_argument("--path")
    ap.add_argument("--place")
    ap.add_argument("--gpu", action="store_true", help="torch cuda against tdx cuda instead of the cpu pair")
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.path, args.steps, args.warmup, args.place)))
        return
    rows = measure(args.models, args.rounds, args.steps, args.warmup, args.gpu)
    print("\n".join(table(rows, args.rounds, args.steps)))
    ok = all(r["diff"] < 1e-4 for r in rows)
    print("losses agree (rel diff < 1e-4): " + ("yes" if ok else "NO"))
    if not ok:
        sys.exit(1)


if __name__ == "__main__":
    main()
