"""Programs that start processes, profile, or log to TensorBoard, run unmodified through ``python -m tdx run``:
on ``cpu`` they print what they print under torch, on every other device they complete.

- ``profiled_train``: torch.profiler with a schedule, record_function labels, on_trace_ready.
- ``dataloader_spawn``: DataLoader workers started by "spawn" build their tensors with ``torch``: the
  workers inherit the alias and the pin (before, they got real torch and default_collate refused the batch).
- ``ddp_spawn``: DDP over gloo in two processes started by ``torch.multiprocessing.spawn`` (the ranks'
  lines may come in either order: compared sorted).
- pytest-xdist's workers (``python -m tdx run -m pytest -n 2``) run the tests under the alias and the
  pin, conftest included (before, every worker silently ran real torch).
- ``char_tensorboard``: a makemore-style model logging to SummaryWriter; its event file read back with
  tensorboard's EventAccumulator holds the losses the program computed.
"""

from __future__ import annotations

import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from conftest import shared_reference
from test_run import GLOO_SHUTDOWN_ABORT, PROGRAMS, _py, _reference

ORDERED = ("profiled_train", "dataloader_spawn", "char_tensorboard")


def _run(name, device, cwd):
    done = _py(["-m", "tdx", "run", "--device", device, str(PROGRAMS / f"{name}.py")], cwd)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@pytest.mark.parametrize("name", ORDERED + ("ddp_spawn",))
def test_process_program_runs_unmodified(name, device, tmp_path, tmp_path_factory):
    out = _run(name, device, tmp_path)
    if device == "cpu":
        _, expected = _reference(name, tmp_path_factory)
        if name in ORDERED:
            assert out == expected
        else:
            assert sorted(out.splitlines()) == sorted(expected.splitlines())
    assert "final loss" in out or name == "ddp_spawn"
    if name == "dataloader_spawn":  # every batch is tdx's, built in the workers
        assert out.count("Tensor torch.float32") == 6
    if name == "profiled_train":
        assert out.count("('forward', 2)") == 2 and "steps profiled 10" in out
    if name == "ddp_spawn":  # both ranks end with the same parameters
        lines = sorted(line for line in out.splitlines() if line.startswith("rank"))
        assert len(lines) == 2 and lines[0].split()[-1] == lines[1].split()[-1]
    if name == "char_tensorboard":
        acc = EventAccumulator(str(tmp_path / "runs" / "makemore"))
        acc.Reload()
        losses = [e.value for e in acc.Scalars("Loss/train")]
        assert [e.step for e in acc.Scalars("Loss/train")] == list(range(30))
        printed = [float(line.split()[-1]) for line in out.splitlines() if line.startswith("step")]
        assert [round(losses[s], 4) for s in (0, 10, 20)] == printed
        assert sorted(acc.Tags()["histograms"]) == sorted(
            ["wte.weight", "mlp.0.weight", "mlp.0.bias", "mlp.2.weight", "mlp.2.bias"])
        assert acc.Images("embedding")[0].width == 8
        if device == "cpu":  # the very numbers torch's SummaryWriter wrote
            ref_dir, _ = _reference(name, tmp_path_factory)
            ref = EventAccumulator(str(ref_dir / "runs" / "makemore"))
            ref.Reload()
            assert losses == [e.value for e in ref.Scalars("Loss/train")]


_FLAKY = """
import pathlib, sys
runs = pathlib.Path("runs.txt")
n = len(runs.read_text()) if runs.exists() else 0
runs.write_text("x" * (n + 1))
if n < FAILS:
    sys.stderr.write(MESSAGE + "\\nProcessExitedException: process 0 terminated with signal SIGABRT\\n")
    sys.exit(1)
print("done")
"""


@pytest.mark.parametrize("message,fails,runs,rc", [
    (GLOO_SHUTDOWN_ABORT, 1, 2, 0),    # gloo's shutdown abort: run again, and the second run counts
    (GLOO_SHUTDOWN_ABORT, 5, 3, 1),    # every attempt aborts: the last failure is returned
    ("ValueError: a real failure", 1, 1, 1),  # anything else is returned at once
])
def test_only_gloo_shutdown_abort_is_run_again(message, fails, runs, rc, tmp_path):
    prog = tmp_path / "prog.py"
    prog.write_text(f"FAILS = {fails}\nMESSAGE = {message!r}\n" + _FLAKY)
    done = _py([str(prog)], tmp_path)
    assert done.returncode == rc and len((tmp_path / "runs.txt").read_text()) == runs


_XDIST_CONFTEST = """
import torch
MADE_IN_CONFTEST = torch.zeros(1)
"""
_XDIST_TEST = """
import os, pathlib, torch
from conftest import MADE_IN_CONFTEST

def _record(name):
    t = torch.ones(2) + 1
    line = f"{type(t).__module__.split('.')[0]} {t.device} {type(MADE_IN_CONFTEST).__module__.split('.')[0]}"
    pathlib.Path(os.environ["PYTEST_XDIST_WORKER"] + "-" + name).write_text(line)
    assert t.tolist() == [2.0, 2.0]

def test_one():
    _record("one")

def test_two():
    _record("two")
"""


def _plain_pytest_oracle(tag: str, files: dict, args: list, tmp_path_factory) -> tuple:
    """(exit status, stdout's tail, stderr's tail, the sorted texts of the ``gw*-*`` files the tests wrote) of
    plain pytest under real torch running ``files`` (name -> text) with ``args``: the oracle of a pytest run under
    ``tdx run``, one run a session for every device (``conftest.shared_reference``)."""
    def make(cwd):
        for name, text in files.items():
            (cwd / name).write_text(text)
        done = _py(args, cwd)
        written = sorted(p.read_text() for p in cwd.glob("gw*-*"))
        return done.returncode, done.stdout[-3000:], done.stderr[-3000:], written

    return tuple(shared_reference(f"plain-pytest-{tag}", tmp_path_factory, make)[1])


def test_xdist_workers_run_under_the_alias(device, tmp_path, tmp_path_factory):
    files = {"conftest.py": _XDIST_CONFTEST, "test_probe.py": _XDIST_TEST}
    args = ["-m", "pytest", "-q", "-n", "2", "-p", "no:cacheprovider", "-p", "no:randomly", "test_probe.py"]
    rc, out, err, lines = _plain_pytest_oracle("xdist", files, args, tmp_path_factory)  # plain pytest: torch
    assert rc == 0, out + err
    assert set(lines) == {"torch cpu torch"}
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    done = _py(["-m", "tdx", "run", "--device", device, *args], tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    lines = {p.name.split("-")[1]: p.read_text() for p in tmp_path.glob("gw*-*")}
    assert lines == {"one": f"tdx {device} tdx", "two": f"tdx {device} tdx"}


_SUBMODULE_TEST = """
import torch
import torch.nn.functional as F
from torch.distributions import Normal

def test_submodules():
    x = torch.tensor([-1.0, 2.0])
    assert F.relu(x).tolist() == [0.0, 2.0]
    assert round(float(Normal(0.0, 1.0).log_prob(torch.tensor(0.0))), 4) == -0.9189
    print("KIND", type(x).__module__.split(".")[0])
"""


def test_pytest_test_modules_import_torch_submodules_under_run(device, tmp_path, tmp_path_factory):
    # pytest's assertion rewriting claims the tdx package (tdx ships a pytest plugin): without tdx's finders
    # put back ahead of it, `import torch.nn.functional` in a test module failed with a relative-import error
    (tmp_path / "test_sub.py").write_text(_SUBMODULE_TEST)
    args = ["-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", "test_sub.py"]
    rc, out, err, _ = _plain_pytest_oracle("submodules", {"test_sub.py": _SUBMODULE_TEST}, args, tmp_path_factory)
    assert rc == 0 and "KIND torch" in out, out + err  # the oracle: plain pytest under torch
    done = _py(["-m", "tdx", "run", "--device", device, *args], tmp_path)
    assert done.returncode == 0 and "KIND tdx" in done.stdout, done.stdout[-3000:] + done.stderr[-3000:]
