"""Mixed-precision programs through ``python -m tdx run`` on every device: an AMP training loop (autocast and
GradScaler, bfloat16 on the CPU) and a nanoGPT-style ``train.py`` + ``sample.py`` pair (config globals, an
autocast-or-nullcontext ``ctx``, ``torch.cuda.amp.GradScaler``, TF32 switches, clipping, lr decay, a checkpoint
that ``sample.py`` loads and samples from with ``torch.multinomial``). On cpu the printed output equals the
program's under real torch byte for byte; on other devices the programs complete, with losses within tolerance
where the data are the same."""

from __future__ import annotations

import math
import re

import pytest

from conftest import shared_reference, torch_twin
from test_run import _ON_DEVICE, PROGRAMS, _py

NANOGPT = PROGRAMS / "nanogpt"
def _torch_run(key, scripts, tmp_path_factory, device="cpu"):
    """stdout of each script run in turn under real torch, in one fresh working dir (one run a session:
    ``conftest.shared_reference``); with ``device``, the reference of a tdx run pinned to it
    (``test_run.reference_args``: on cuda real torch with every tensor made there, so that a layer built with no
    device draws CUDA's numbers, as under ``tdx run --device``)."""
    twin = torch_twin(device)

    def make(cwd):
        outs = []
        for script in scripts:
            done = _py([str(script)] if twin == "cpu" else ["-c", _ON_DEVICE, twin, str(script)], cwd)
            assert done.returncode == 0, done.stderr
            outs.append(done.stdout)
        return outs

    return shared_reference(f"torch-{key}-{twin}", tmp_path_factory, make)[1]


def _tdx_run(device, scripts, cwd):
    outs = []
    for script in scripts:
        done = _py(["-m", "tdx", "run", "--device", device, str(script)], cwd)
        assert done.returncode == 0, done.stderr
        outs.append(done.stdout)
    return outs


def _numbers(pattern, out):
    return [float(v) for v in re.findall(pattern, out)]


def test_amp_training_loop(device, tmp_path_factory):
    script = PROGRAMS / "amp_loop.py"
    (expected,) = _torch_run("amp_loop", [script], tmp_path_factory, device)
    (got,) = _tdx_run(device, [script], tmp_path_factory.mktemp("amp_loop"))
    if device == "cpu":
        assert got == expected
        return
    # the same data and initial weights (torch's random stream on every executor), bfloat16 rounding apart
    assert _numbers(r"scale ([0-9.]+)", got) == _numbers(r"scale ([0-9.]+)", expected)
    losses = _numbers(r"loss ([0-9.]+)", got)
    assert len(losses) == 8 and all(math.isfinite(v) for v in losses)
    assert losses == pytest.approx(_numbers(r"loss ([0-9.]+)", expected), rel=5e-3)


def test_nanogpt_train_and_sample(device, tmp_path_factory):
    scripts = [NANOGPT / "train.py", NANOGPT / "sample.py"]
    train_want, sample_want = _torch_run("nanogpt", scripts, tmp_path_factory)
    train_got, sample_got = _tdx_run(device, scripts, tmp_path_factory.mktemp("nanogpt"))
    if device == "cpu":
        assert train_got == train_want
        assert sample_got == sample_want
        return
    want = _numbers(r"iter \d+: loss ([0-9.]+)", train_want)
    got = _numbers(r"iter \d+: loss ([0-9.]+)", train_got)
    assert len(got) == len(want)
    assert got[-1] == pytest.approx(want[-1], rel=0.05)  # bfloat16 on both sides, the same batches
    assert "resumed from iteration 20" in sample_got and sample_got.count("---------------") == 2


def test_amp_import_paths_under_the_alias(device, tmp_path):
    script = tmp_path / "paths.py"
    script.write_text(
        "import torch.cuda.amp\n"
        "import torch.cpu.amp as cpu_amp\n"
        "from torch.amp import GradScaler, autocast, custom_bwd, custom_fwd\n"
        "from torch.amp.grad_scaler import GradScaler as G2\n"
        "from torch.cuda.amp import GradScaler as CudaScaler\n"
        "import torch\n"
        "print(torch.cuda.amp.GradScaler is CudaScaler, G2 is GradScaler, autocast is torch.autocast,\n"
        "      issubclass(cpu_amp.autocast, autocast), torch.amp.is_autocast_available('cpu'))\n")
    want = _py([str(script)], tmp_path)
    got = _py(["-m", "tdx", "run", "--device", device, str(script)], tmp_path)
    assert want.returncode == 0 and got.returncode == 0, got.stderr
    assert got.stdout == want.stdout == "True True True True True\n"
