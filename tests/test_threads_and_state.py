"""Threads and long-lived state on every device: tensors written from another thread stay readable, four threads
training, writing by index and drawing random numbers at once (in a subprocess, so an abort at exit is seen),
one process-wide generator, and optimizer state that does not grow with the step count."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
import time

import pytest
import torch

import tdx
from tdx.testing.parity import assert_close

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _in_thread(fn):
    errors = []

    def run():
        try:
            fn()
        except Exception as err:  # noqa: BLE001 - reported by the assertion below
            errors.append(err)

    th = threading.Thread(target=run)
    th.start()
    th.join()
    assert not errors, errors


def test_writes_from_another_thread_stay_readable(device):
    x = tdx.zeros(8, device=device)
    t = torch.zeros(8)

    def write(v, mod, **kw):
        v[0] = 5.0
        v[1:3] = 2.0
        v[1:3].add_(1)
        v[mod.tensor([3], **kw)] = 7.0
        v[4:6] += 1

    _in_thread(lambda: write(x, tdx, device=device))
    write(t, torch)
    assert_close(x, t)
    assert_close(x.sum(), t.sum())
    _in_thread(lambda: assert_close(x * 2, t * 2))


def test_one_generator_for_every_thread(device):
    tdx.manual_seed(0)
    draws, lock = [], threading.Lock()

    def draw():
        values = tdx.randn(4, device=device).tolist()
        mask = tdx.nn.functional.dropout(tdx.ones(64, device=device), 0.5).tolist()
        with lock:
            draws.append((values, mask))

    threads = [threading.Thread(target=draw) for _ in range(3)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    values = [v for d in draws for v in d[0]]
    assert len(set(values)) == len(values)
    masks = [tuple(d[1]) for d in draws]
    assert len(set(masks)) == len(masks)
    tdx.manual_seed(0)
    first = tdx.randn(4, device=device).tolist()
    tdx.manual_seed(0)
    assert tdx.randn(4, device=device).tolist() == first


_FOUR_THREADS = textwrap.dedent("""
    import json, sys, threading
    import tdx

    device = sys.argv[1]
    tdx.manual_seed(0)
    start = tdx.nn.Linear(4, 2).to(device).state_dict()
    data = tdx.randn(8, 4, device=device)

    def train(out, key):
        model = tdx.nn.Linear(4, 2).to(device)
        model.load_state_dict(start)
        opt = tdx.optim.Adam(model.parameters(), lr=0.01)
        y = tdx.zeros(16, device=device)
        draws = []
        for k in range(20):
            loss = model(data).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            y[k % 16] = float(k)
            y[2:4].add_(1)
            y[tdx.tensor([5, 6], device=device)] = 3.0
            draws += tdx.rand(2, device=device).tolist()
        out[key] = {"loss": loss.item(), "weight": model.weight.tolist(), "y": y.tolist(), "draws": draws}

    shared = tdx.zeros(4 * 500, device=device)

    def write_shared(i):  # disjoint elements of one tensor: every write lands, as torch's
        for k in range(500):
            shared[i * 500 + k] = float(k)

    serial, parallel = {}, {}
    train(serial, "serial")
    threads = [threading.Thread(target=train, args=(parallel, i)) for i in range(4)]
    threads += [threading.Thread(target=write_shared, args=(i,)) for i in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    print(json.dumps({"serial": serial["serial"], "parallel": [parallel[i] for i in range(4)],
                      "shared": shared.sum().item()}))
""")


def test_four_threads_train_write_and_draw_at_once(device, tmp_path):
    script = tmp_path / "four_threads.py"
    script.write_text(_FOUR_THREADS)
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, str(script), device], capture_output=True, text=True, env=env,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    serial = result["serial"]
    draws = list(serial["draws"])
    for run in result["parallel"]:
        assert run["y"] == serial["y"]
        assert_close(torch.tensor(run["weight"]), torch.tensor(serial["weight"]))
        assert_close(torch.tensor(run["loss"]), torch.tensor(serial["loss"]))
        draws += run["draws"]
    assert len(set(draws)) == len(draws)
    assert result["shared"] == 4 * sum(range(500))


_READS = textwrap.dedent("""
    import sys, threading, tdx
    x = tdx.randn(64, 64, device=sys.argv[1])
    want = (x @ x + 1).sum().item()
    wrong = []

    def read():
        for k in range(600):
            y = x @ x + 1
            got = y.sum().item() if k % 3 else (y.sum().tolist() if k % 2 else float(y.sum().numpy()))
            if got != want:
                wrong.append(got)

    threads = [threading.Thread(target=read) for _ in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not wrong, wrong[:3]
""")


def test_eight_threads_read_values_at_once(device, tmp_path):
    """Eight threads computing and reading values (``item``, ``tolist``, ``numpy``) at once, as torch allows:
    every read is the single thread's value, and the process lives (on MLX two evaluations of one stream at once
    crash inside MLX: tdx's reads take turns)."""
    script = tmp_path / "reads.py"
    script.write_text(_READS)
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-X", "faulthandler", str(script), device], capture_output=True,
                          text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]


@pytest.mark.parametrize("name", ["Adam", "AdamW", "NAdam", "RMSprop", "Adagrad", "Adadelta", "Rprop"])
def test_optimizer_step_counter_stays_a_value(device, name):
    """The counter torch keeps as a tensor never becomes a chain of lazy adds: its read takes constant
    time however many steps ran, and it equals torch's."""
    torch.manual_seed(0)
    ref = torch.nn.Linear(3, 1)
    model = tdx.nn.Linear(3, 1).to(device)
    with tdx.no_grad():
        model.weight.copy_(tdx.tensor(ref.weight.detach().numpy(), device=device))
        model.bias.copy_(tdx.tensor(ref.bias.detach().numpy(), device=device))
    opt, ref_opt = getattr(tdx.optim, name)(model.parameters()), getattr(torch.optim, name)(ref.parameters())
    x, t = tdx.ones(4, 3, device=device), torch.ones(4, 3)
    for _ in range(60):
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()
        ref_opt.zero_grad()
        ref(t).sum().backward()
        ref_opt.step()
    step = opt.state[model.weight]["step"]
    assert step.numel() == 1 and float(step) == float(ref_opt.state[ref.weight]["step"])
    native = step.native
    if hasattr(native, "inputs"):  # an MLX array: the counter holds no graph of earlier steps
        assert len(native.inputs()) == 0
    assert_close(model.weight, ref.weight, rtol=1e-4, atol=1e-5)


def test_adam_memory_does_not_grow_with_steps(device):
    """RSS after warm-up stays flat over 1,500 Adam steps (20,000 in bench/optim_memory.py)."""
    if not sys.platform.startswith("linux"):
        pytest.skip("reads /proc/self/statm")
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    from backward_rss import rss_mb

    model = tdx.nn.Sequential(tdx.nn.Linear(8, 16), tdx.nn.ReLU(), tdx.nn.Linear(16, 1)).to(device)
    opt = tdx.optim.Adam(model.parameters(), lr=1e-3)
    x, y = tdx.randn(16, 8, device=device), tdx.randn(16, 1, device=device)

    def step():
        opt.zero_grad()
        loss = tdx.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        return loss.item()

    for _ in range(200):
        step()
    before = rss_mb()
    for _ in range(1500):
        step()
    growth = rss_mb() - before
    assert growth < 2.0, f"RSS grew {growth:.2f} MB over 1500 Adam steps (~{1024 * growth / 1500:.2f} KB/step)"
    read = time.perf_counter()
    float(opt.state[next(model.parameters())]["step"])
    assert time.perf_counter() - read < 0.05
