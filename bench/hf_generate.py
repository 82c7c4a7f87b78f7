"""Tokens per second of a transformers Llama-style model generating with its KV cache: tdx against
mlx-lm on MLX and tdx against torch on cpu, measured side by side in one run.

One model (4 layers, hidden 256, 8 heads over 4 key/value heads, vocab 1024; random weights from a
fixed seed) is saved once with ``save_pretrained``; every contender loads those same weights:
- ``torch cpu``: transformers on real torch (``model.generate``, greedy, KV cache);
- ``tdx cpu``: the same transformers code under ``python -m tdx run --device cpu``;
- ``tdx mlx:cpu``: under ``python -m tdx run --device mlx:cpu``;
- ``mlx-lm``: mlx-lm's own Llama loading the folder transformers wrote (``mlx_lm.utils.load_model``),
  generating with ``generate_step`` and an argmax sampler.
Each contender is its own process, started in turns (``--rounds``); each times ``--repeats``
generations of ``--tokens`` new tokens after a warm-up, and the table gives the median tokens/s and
the ratios. The greedy tokens of every contender are checked against torch's (MLX's float32 CPU
kernels may round differently, so a mismatch is reported, not raised). Usage:
``python bench/hf_generate.py [--tokens 128] [--repeats 3] [--rounds 2] [--profile]``;
``--profile`` also prints cProfile's top functions of one tdx mlx:cpu generation.
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
CONFIG = dict(hidden_size=256, intermediate_size=512, num_hidden_layers=4, num_attention_heads=8,
              num_key_value_heads=4, vocab_size=1024, max_position_embeddings=512, bos_token_id=0,
              eos_token_id=None, pad_token_id=0, tie_word_embeddings=False)
PROMPT = [5, 17, 300, 42, 7, 99, 512, 3]


def make_model(path: str) -> None:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    LlamaForCausalLM(LlamaConfig(**CONFIG)).save_pretrained(path)


def transformers_worker(path: str, tokens: int, repeats: int, profile: bool) -> dict:
    """Run under real torch or under ``python -m tdx run`` (the same code)."""
    import torch
    from transformers import LlamaForCausalLM
    from transformers.utils import logging

    logging.set_verbosity_error()
    model = LlamaForCausalLM.from_pretrained(path)
    model.eval()
    prompt = torch.tensor([PROMPT])

    def once(n):
        return model.generate(prompt, max_new_tokens=n, min_new_tokens=n, do_sample=False)

    out = once(tokens)  # warm-up (and the tokens)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        once(tokens)
        times.append(time.perf_counter() - start)
    if profile:
        import cProfile
        import pstats

        prof = cProfile.Profile()
        prof.enable()
        once(tokens)
        prof.disable()
        pstats.Stats(prof, stream=sys.stderr).sort_stats("tottime").print_stats(25)
    return {"tps": [tokens / t for t in times], "tokens": out[0, len(PROMPT):].tolist()}


def mlx_lm_worker(path: str, tokens: int, repeats: int) -> dict:
    import mlx.core as mx
    from mlx_lm.generate import generate_step
    from mlx_lm.utils import load_model

    mx.set_default_device(mx.cpu)
    model, _ = load_model(pathlib.Path(path))
    prompt = mx.array(PROMPT)

    def once(n):
        return [int(t) for t, _ in zip((tok for tok, _ in generate_step(prompt, model, max_tokens=n,
                                                                          sampler=lambda x: mx.argmax(x, -1))),
                                       range(n))]

    out = once(tokens)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        once(tokens)
        times.append(time.perf_counter() - start)
    return {"tps": [tokens / t for t in times], "tokens": out}


CONTENDERS = {"torch cpu": None, "tdx cpu": "cpu", "tdx mlx:cpu": "mlx:cpu", "mlx-lm": None}


def run_contender(name: str, path: str, args) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONWARNINGS="ignore")
    me = [str(pathlib.Path(__file__).resolve()), "--worker", name, "--path", path, "--tokens", str(args.tokens),
          "--repeats", str(args.repeats)]
    if args.profile and name == "tdx mlx:cpu":
        me.append("--profile")
    device = CONTENDERS[name]
    cmd = [sys.executable, "-m", "tdx", "run", "--device", device, *me] if device else [sys.executable, *me]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        raise SystemExit(f"{name} failed:\n{done.stderr[-3000:]}")
    if args.profile and name == "tdx mlx:cpu":
        sys.stderr.write(done.stderr)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--worker")
    parser.add_argument("--path")
    args = parser.parse_args()
    if args.worker:
        if args.worker == "mlx-lm":
            result = mlx_lm_worker(args.path, args.tokens, args.repeats)
        else:
            result = transformers_worker(args.path, args.tokens, args.repeats, args.profile)
        print(json.dumps(result))
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "llama")
        make_model(path)
        results = {name: {"tps": [], "tokens": None} for name in CONTENDERS}
        for r in range(args.rounds):
            for name in CONTENDERS:
                res = run_contender(name, path, args if r == 0 else argparse.Namespace(**{**vars(args),
                                                                                       "profile": False}))
                results[name]["tps"] += res["tps"]
                results[name]["tokens"] = res["tokens"]
    want = results["torch cpu"]["tokens"]
    med = {name: statistics.median(r["tps"]) for name, r in results.items()}
    print(f"Llama-style model {CONFIG['num_hidden_layers']} layers, hidden {CONFIG['hidden_size']}, "
          f"{args.tokens} new tokens greedy with the KV cache; median of {args.rounds * args.repeats} runs")
    print(f"{'contender':<14}{'tokens/s':>10}  same tokens as torch")
    for name in CONTENDERS:
        print(f"{name:<14}{med[name]:>10.1f}  {results[name]['tokens'] == want}")
    print(f"tdx cpu / torch cpu      = {med['tdx cpu'] / med['torch cpu']:.2f}x")
    print(f"tdx mlx:cpu / mlx-lm     = {med['tdx mlx:cpu'] / med['mlx-lm']:.2f}x")


if __name__ == "__main__":
    main()
