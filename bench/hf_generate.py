"""Tokens per second of a transformers Llama-style model generating with its KV cache: tdx against
mlx-lm on MLX and tdx against torch on cpu, measured side by side in one run.

One model (4 layers, hidden 256, 8 heads over 4 key/value heads, vocab 1024; random weights from a
fixed seed) is saved once with ``save_pretrained``; every contender loads those same weights:
- ``torch cpu``: transformers on real torch (``model.generate``, greedy, KV cache);
- ``tdx cpu``: the same transformers code under ``python -m tdx run --device cpu``;
- ``tdx mlx:cpu``: under ``python -m tdx run --device mlx:cpu``;
- ``mlx-lm``: mlx-lm's own Llama loading the folder transformers wrote (``mlx_lm.utils.load_model``),
  generating with ``generate_step`` and an argmax sampler.
Each contender is its own process, loaded once and warmed up; then the contenders take turns, one
generation of ``--tokens`` new tokens a turn and never two at once, ``--rounds`` x ``--repeats`` generations
each, the order turning by one each pass, so a slow or fast phase of the machine falls on every contender
alike. The table gives the median tokens/s; each ratio is the ratio of the medians, with the median and range
of the ratios of the runs of one pass (seconds apart) beside it. The greedy tokens of every contender are
checked against torch's (MLX's float32 CPU kernels may round differently, so a mismatch is reported, not
raised). Usage:
``python bench/hf_generate.py [--tokens 128] [--repeats 3] [--rounds 2] [--profile]``;
``--profile`` also prints cProfile's top functions of one generation of every tdx contender; ``--cache static``
runs the transformers contenders with transformers' preallocated cache (written in place by ``index_copy_``);
``--compile`` adds transformers' recipe for fast generation, ``model.forward = torch.compile(model.forward)`` (with
the static cache, which it needs): torch's inductor on torch cpu, ``tdx.compile`` (an MLX trace) on MLX.
``main ms/tok`` is the CPU time of the thread that runs the program (``time.thread_time``) per new token:
Python's share (graph building, dispatch), without the framework's worker threads that ``tok/cpu-s`` counts.
After its timed runs each contender counts, over one more generation, the Python calls per new token
(``sys.setprofile``'s call events, builtins included), the waits per new token (calls of ``mx.eval`` and
of an MLX array's ``item``/``tolist``: the program stops until the graph is computed) and the evaluations
started without waiting per new token (``mx.async_eval``).
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


SYNC_FUNCTIONS = ("eval",)
START_FUNCTIONS = ("async_eval",)
SYNC_METHODS = ("item", "tolist", "__dlpack__")


def count_calls(fn, tokens: int) -> tuple[float, float, float, float]:
    """Python calls, builtin calls, MLX synchronizations and evaluations started per new token over one ``fn()``.

    Python 3.11's profiler sees Python frames and CPython builtins (torch's functions are builtins) but
    not nanobind's functions (MLX's), so MLX's own calls count in neither column; a synchronization is a
    call of ``mx.eval``, of an MLX array's ``item``/``tolist``/``__dlpack__``, or of ``np.array``/``np.asarray``
    on an MLX array, and a start is a call of ``mx.async_eval``, counted by wrapping them for this one run.
    """
    calls = builtins = own = own_builtins = 0  # own: the wrappers' frames and builtin calls
    events = {"sync": 0, "start": 0}

    def hook(frame, event, arg):
        nonlocal calls, builtins
        if event == "call":
            calls += 1
        elif event == "c_call":
            builtins += 1

    def counted(kind):
        def wrapper(real):
            def call(*args, **kwargs):
                nonlocal own
                events[kind] += 1
                own += 1
                return real(*args, **kwargs)
            return call
        return wrapper

    def counted_numpy(real):
        def call(obj, *args, **kwargs):
            nonlocal own, own_builtins
            own += 1
            own_builtins += 1
            if isinstance(obj, mx.array):  # NumPy reads an MLX array through the buffer protocol: an evaluation
                events["sync"] += 1
            return real(obj, *args, **kwargs)
        return call

    mx = sys.modules.get("mlx.core")
    saved = []
    if mx is not None:
        import numpy as np

        saved = [(mx, name, getattr(mx, name), counted("sync")) for name in SYNC_FUNCTIONS]
        saved += [(mx, name, getattr(mx, name), counted("start")) for name in START_FUNCTIONS]
        saved += [(mx.array, name, getattr(mx.array, name), counted("sync")) for name in SYNC_METHODS]
        saved += [(np, name, getattr(np, name), counted_numpy) for name in ("array", "asarray")]
        for owner, name, real, wrapper in saved:
            setattr(owner, name, wrapper(real))
    sys.setprofile(hook)
    try:
        fn()
    finally:
        sys.setprofile(None)
        for owner, name, real, _ in saved:
            setattr(owner, name, real)
    # the wrappers' own frames and calls are not the program's
    return (calls - own) / tokens, (builtins - own_builtins) / tokens, events["sync"] / tokens, events["start"] / tokens


def transformers_worker(path: str, cache: str = "dynamic", place: str | None = None,
                        compiled: bool = False):
    """Load the model under real torch or under ``python -m tdx run`` (the same code); return ``once(n)``, which
    generates ``n`` new tokens and returns them as a list. ``cache`` is transformers' ``cache_implementation``
    (``dynamic``: its default, the cache grown by ``cat``; ``static``: preallocated, written in place by
    ``index_copy_``); ``place``: the device real torch moves the model to (tdx's contenders take theirs from
    ``--device``)."""
    import torch
    from transformers import LlamaForCausalLM
    from transformers.utils import logging

    logging.set_verbosity_error()
    model = LlamaForCausalLM.from_pretrained(path)
    model.eval()
    prompt = torch.tensor([PROMPT])
    if place:
        model.to(place)
        prompt = prompt.to(place)
    if compiled:
        model.forward = torch.compile(model.forward)

    kw = {} if cache == "dynamic" else {"cache_implementation": cache}

    def once(n):
        return model.generate(prompt, max_new_tokens=n, min_new_tokens=n, do_sample=False, **kw)[0, len(PROMPT):]

    return once


def mlx_lm_worker(path: str):
    """mlx-lm's own Llama on the same folder; ``once(n)`` generates ``n`` greedy tokens with ``generate_step``."""
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

    return once


def serve(once, tokens: int) -> None:
    """The worker's loop: warm up, say so, then answer the parent's commands on stdin, one JSON line each.

    ``run``: time one generation (tokens/s by the wall clock, by the process's CPU time, and the main thread's
    CPU ms a token); ``count``: the calls, waits and starts per token of one generation; ``profile``: cProfile's
    top functions of one generation, on stderr; ``quit``."""
    out = [int(t) for t in once(tokens)]  # warm-up (and the tokens)
    print(json.dumps({"tokens": out}), flush=True)
    for line in sys.stdin:
        command = line.strip()
        if command == "run":
            start, start_cpu, start_main = time.perf_counter(), time.process_time(), time.thread_time()
            once(tokens)
            wall, cpu = time.perf_counter() - start, time.process_time() - start_cpu
            main = time.thread_time() - start_main
            reply = {"tps": tokens / wall, "cpu_tps": tokens / cpu, "main_ms": 1e3 * main / tokens}
        elif command == "count":
            calls, builtins, syncs, starts = count_calls(lambda: once(tokens), tokens)
            reply = {"calls": calls, "builtins": builtins, "syncs": syncs, "starts": starts}
        elif command == "profile":
            import cProfile
            import pstats

            prof = cProfile.Profile()
            prof.enable()
            once(tokens)
            prof.disable()
            pstats.Stats(prof, stream=sys.stderr).sort_stats("tottime").print_stats(40)
            sys.stderr.flush()
            reply = {}
        else:
            return
        print(json.dumps(reply), flush=True)


CONTENDERS = {"torch cpu": None, "tdx cpu": "cpu", "tdx mlx:cpu": "mlx:cpu", "mlx-lm": None}
# on request only (``--only "torch cuda,tdx cuda"``): real torch moves the model to the GPU, tdx is told by --device
ON_REQUEST = {"torch cuda": None, "tdx cuda": "cuda:0"}
PLACES = {"torch cuda": "cuda"}
PAIRS = (("tdx cpu", "torch cpu"), ("tdx mlx:cpu", "mlx-lm"), ("tdx cuda", "torch cuda"))


class Contender:
    """One contender's worker process, loaded once and kept waiting on its stdin between turns."""

    def __init__(self, name: str, path: str, args, log) -> None:
        env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONWARNINGS="ignore")
        me = [str(pathlib.Path(__file__).resolve()), "--worker", name, "--path", path, "--tokens", str(args.tokens),
              "--cache", args.cache] + (["--compile"] if args.compile else []) \
            + (["--threads", str(args.threads)] if args.threads else [])
        if name in PLACES:
            me += ["--place", PLACES[name]]
        device = {**CONTENDERS, **ON_REQUEST}[name]
        cmd = [sys.executable, "-m", "tdx", "run", "--device", device, *me] if device else [sys.executable, *me]
        self.name, self.log = name, log
        self.tokens = None  # the greedy tokens of its warm-up generation
        # run from the bench's own tree: ``python -m tdx`` looks in the working directory first
        self.proc = subprocess.Popen(cmd, env=env, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=log, text=True)

    def ask(self, command: str | None = None) -> dict:
        """Send ``command`` (none: just read the next reply) and return the worker's JSON reply."""
        if command:
            self.proc.stdin.write(command + "\n")
            self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            self.proc.wait(timeout=60)
            self.log.seek(0)
            raise SystemExit(f"{self.name} failed:\n{self.log.read()[-3000:]}")
        return json.loads(line)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.write("quit\n")
            self.proc.stdin.close()
            self.proc.wait(timeout=60)


def measure(names: list[str], path: str, args) -> dict:
    """Load every contender, then time ``rounds * repeats`` generations of each, one generation a turn: in every
    pass each contender runs once, the order turning by one each pass, so every contender's runs are spread over
    the same minutes and the runs of one pass are seconds apart."""
    logs = {name: tempfile.TemporaryFile("w+") for name in names}
    procs = {}
    try:
        for name in names:  # loaded one after another: the loads' CPU time is no contender's
            procs[name] = Contender(name, path, args, logs[name])
            procs[name].tokens = procs[name].ask()["tokens"]
        runs = {name: [] for name in names}
        for turn in range(args.rounds * args.repeats):
            for i in range(len(names)):
                name = names[(turn + i) % len(names)]
                runs[name].append(procs[name].ask("run"))
        results = {}
        for name in names:
            results[name] = {key: [r[key] for r in runs[name]] for key in ("tps", "cpu_tps", "main_ms")}
            results[name].update(procs[name].ask("count"), tokens=procs[name].tokens)
            if args.profile and name.startswith("tdx"):
                procs[name].ask("profile")
                logs[name].seek(0)
                sys.stderr.write(f"==== {name}\n{logs[name].read()}")
        return results
    finally:
        for proc in procs.values():
            proc.close()
        for log in logs.values():
            log.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, help="torch's intra-op threads in every contender "
                        "(default: torch's own default)")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--cache", choices=("dynamic", "static"), default="dynamic",
                        help="transformers' KV cache for its contenders (mlx-lm always runs its own)")
    parser.add_argument("--compile", action="store_true", help="model.forward = torch.compile(model.forward) in "
                        "the transformers contenders (with the static cache)")
    parser.add_argument("--only", help="comma-separated contenders to run (default: all)")
    parser.add_argument("--worker")
    parser.add_argument("--path")
    parser.add_argument("--place")
    args = parser.parse_args()
    if args.compile:
        args.cache = "static"  # transformers compiles generation with a static cache
    if args.worker:
        if args.threads:
            import torch  # under ``tdx run`` this is tdx, which sets the torch executor's threads

            torch.set_num_threads(args.threads)
        if args.worker == "mlx-lm":
            once = mlx_lm_worker(args.path)
        else:
            once = transformers_worker(args.path, args.cache, args.place, args.compile)
        serve(once, args.tokens)
        return
    names = args.only.split(",") if args.only else list(CONTENDERS)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "llama")
        make_model(path)
        results = measure(names, path, args)
    oracle = next((name for name in ("torch cpu", "torch cuda") if name in results), None)
    want = results[oracle]["tokens"] if oracle else None
    med = {name: statistics.median(r["tps"]) for name, r in results.items()}
    med_cpu = {name: statistics.median(r["cpu_tps"]) for name, r in results.items()}
    print(f"Llama-style model {CONFIG['num_hidden_layers']} layers, hidden {CONFIG['hidden_size']}, "
          f"{args.tokens} new tokens greedy with transformers' {args.cache} KV cache"
          f"{', model.forward compiled' if args.compile else ''}; median of "
          f"{args.rounds * args.repeats} runs a contender, one run a turn, tokens compared with {oracle or 'nothing'}'s, "
          f"threads: {args.threads or 'default'}")
    print(f"{'contender':<14}{'tokens/s':>10}{'tok/cpu-s':>11}{'main ms/tok':>13}{'py calls/tok':>14}{'builtins/tok':>14}"
          f"{'syncs/tok':>11}{'starts/tok':>12}  same tokens")
    for name in names:
        r = results[name]
        same = "-" if want is None else r["tokens"] == want
        print(f"{name:<14}{med[name]:>10.1f}{med_cpu[name]:>11.1f}{statistics.median(r['main_ms']):>13.2f}{r['calls']:>14.0f}"
              f"{r['builtins']:>14.0f}{r['syncs']:>11.1f}{r['starts']:>12.1f}  {same}")
    for mine, theirs in PAIRS:
        if mine in med and theirs in med:
            paired = [a / b for a, b in zip(results[mine]["tps"], results[theirs]["tps"])]
            print(f"{mine + ' / ' + theirs:<25}= {med[mine] / med[theirs]:.2f}x tokens/s "
                  f"(paired runs: median {statistics.median(paired):.2f}x, {min(paired):.2f}..{max(paired):.2f}), "
                  f"{med_cpu[mine] / med_cpu[theirs]:.2f}x tokens per CPU second, "
                  f"same tokens: {results[mine]['tokens'] == results[theirs]['tokens']}")


if __name__ == "__main__":
    main()
