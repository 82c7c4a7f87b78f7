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

from test_run import PROGRAMS, _py

NANOGPT = PROGRAMS / "nanogpt"
_ref: dict = {}


def _torch_run(key, scripts, tmp_path_factory):
    """stdout of each script run in turn under real torch, in one fresh working dir (cached per session)."""
    if key not in _ref:
        cwd = tmp_path_factory.mktemp(f"torch-{key}")
        outs = []
        for script in scripts:
            done = _py([str(script)], cwd)
            assert done.returncode == 0, done.stderr
            outs.append(done.stdout)
        _ref[key] = outs
    return _ref[key]


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
    (expected,) = _torch_run("amp_loop", [script], tmp_path_factory)
    (got,) = _tdx_run(device, [script], tmp_path_factory.mktemp("amp_loop"))
    if device == "cpu":
        assert got == expected
        return
    # MLX draws torch.randn from its own stream here, so the data differ: the scale sequence (no overflow in
    # bfloat16) and a finite, decreasing loss are what must hold
    assert _numbers(r"scale ([0-9.]+)", got) == _numbers(r"scale ([0-9.]+)", expected)
    losses = _numbers(r"epoch \d+: loss ([0-9.]+)", got)
    assert len(losses) == 6 and all(math.isfinite(v) for v in losses) and losses[-1] < losses[0]


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
