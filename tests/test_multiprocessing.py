"""torch.multiprocessing under tdx and the processes tdx starts: tensors through queues (shared on cpu as torch
shares, copied on MLX), spawn/start_processes failures with torch's exceptions and messages, sharing strategies,
children started by spawn/forkserver inheriting the torch alias and the pin, and DataLoader workers that exit or
die named within a second."""

from __future__ import annotations

import os
import re
import signal
import time

import pytest
import torch
import torch.multiprocessing as tmp

import tdx
import tdx.multiprocessing as mp
from tdx.aliasing.torch_alias import torch_alias


def _bump(q_in, q_out, done):
    t, tt = q_in.get()
    t.add_(1)
    tt.add_(1)
    q_out.put((t * 2, tt * 2))
    done.wait(60)


def test_tensors_through_a_queue(device):
    """A cpu tensor is shared as torch's is (the child's write is seen); an MLX tensor arrives as a copy."""
    ctx = mp.get_context("spawn")
    q_in, q_out, done = ctx.Queue(), ctx.Queue(), ctx.Event()
    t, tt = tdx.zeros(3, device=device), torch.zeros(3)
    p = ctx.Process(target=_bump, args=(q_in, q_out, done))
    p.start()
    try:
        q_in.put((t, tt))
        got, expected = q_out.get(timeout=60)
    finally:
        done.set()
        p.join(30)
    assert type(got) is tdx.Tensor and str(got.device) == device
    assert got.tolist() == expected.tolist() == [2.0, 2.0, 2.0]
    assert tt.tolist() == [1.0, 1.0, 1.0]  # torch shares a cpu tensor sent through a queue
    assert t.tolist() == (tt.tolist() if device == "cpu" else [0.0, 0.0, 0.0])


def _report(q):
    import torch as child_torch  # under the inherited alias: tdx

    q.put((child_torch.__spec__.name, str(child_torch.ones(1).device)))


@pytest.mark.parametrize("method", ["spawn", "forkserver"])
def test_children_inherit_the_alias_and_the_pin(device, method):
    ctx = mp.get_context(method)
    q = ctx.Queue()
    with torch_alias(device):
        p = ctx.Process(target=_report, args=(q,))
        p.start()
        got = q.get(timeout=120)
        p.join(30)
    assert got == ("tdx", device)
    if method == "forkserver":  # the server started under a pin; a child whose parent has none keeps none
        with torch_alias():
            p = ctx.Process(target=_report, args=(q,))
            p.start()
            got = q.get(timeout=120)
            p.join(30)
        assert got == ("tdx", str(tdx.get_default_device()))


def _raise(rank, t):
    if rank == 1:
        raise ValueError(f"rank {rank} holds {t.sum().item()}")
    time.sleep(60)  # terminated once rank 1 fails


def test_spawn_reraises_a_childs_exception(device):
    start = time.monotonic()
    with pytest.raises(mp.ProcessRaisedException) as info:
        mp.spawn(_raise, args=(tdx.ones(2, device=device),), nprocs=2)
    assert time.monotonic() - start < 45  # rank 0 was terminated, not waited for
    err = info.value
    assert err.error_index == 1 and isinstance(err, tdx.TdxError)
    assert str(err).startswith("\n\n-- Process 1 terminated with the following error:\nTraceback")
    assert "ValueError: rank 1 holds 2.0" in str(err)


def _exit(rank, how):
    if rank == 1:
        if how == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        os._exit(how)
    time.sleep(60)


@pytest.mark.parametrize("how", [3, "kill"])
def test_exits_and_signals_as_torch_reports_them(how):
    """Process supervision only (no tensor crosses): torch's own start_processes is the oracle."""
    errors = []
    for lib in (mp, tmp):
        with pytest.raises(lib.ProcessExitedException) as info:
            lib.start_processes(_exit, args=(how,), nprocs=2, start_method="fork")
        errors.append(info.value)
    ours, theirs = errors
    assert str(ours) == str(theirs)
    assert (ours.exit_code, ours.signal_name, ours.error_index) == (theirs.exit_code, theirs.signal_name, 1)


def test_sharing_strategies_and_bad_input():
    assert mp.get_all_sharing_strategies() == tmp.get_all_sharing_strategies()
    assert mp.get_sharing_strategy() == tmp.get_sharing_strategy()
    mp.set_sharing_strategy("file_system")
    try:
        assert mp.get_sharing_strategy() == "file_system"
    finally:
        mp.set_sharing_strategy("file_descriptor")
    with pytest.raises(ValueError) as info:
        mp.set_sharing_strategy("shm")
    assert isinstance(info.value, tdx.TdxError) and "'shm'" in str(info.value) and "file_system" in str(info.value)
    for bad in (0, 1.5):
        with pytest.raises(ValueError):
            mp.start_processes(_exit, nprocs=bad)
    with pytest.raises(ValueError) as info:
        mp.start_processes(_exit, start_method="thread")
    assert "'thread'" in str(info.value)
    import multiprocessing

    assert mp.Process is multiprocessing.Process and mp.Queue is multiprocessing.Queue
    assert mp.get_context is multiprocessing.get_context and mp.Pool is multiprocessing.Pool


class _Dying:
    def __init__(self, how, stamp=None):
        self.how, self.stamp = how, stamp

    def __len__(self):
        return 64

    def __getitem__(self, i):
        if i == 6:
            if self.stamp is not None:  # when the worker died (CLOCK_MONOTONIC is the same in every process)
                with open(self.stamp, "w") as f:
                    f.write(repr(time.monotonic()))
            if self.how == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            os._exit(self.how)
        time.sleep(0.01)
        return float(i)


@pytest.mark.parametrize("how,pattern", [
    (0, r"DataLoader worker \(pid\(s\) \d+\) exited unexpectedly$"),
    (3, r"DataLoader worker \(pid \d+\) exited unexpectedly with exit code 3\. Details are lost"),
    ("kill", r"DataLoader worker \(pid \d+\) is killed by signal: Killed\. $")])
def test_dataloader_worker_death_is_named_within_a_second(how, pattern, tmp_path):
    """Process supervision only: a worker that exits (any code) or is killed is named as torch names it."""
    stamp = tmp_path / "died"
    loader = tdx.utils.data.DataLoader(_Dying(how, str(stamp)), batch_size=2, num_workers=2,
                                       multiprocessing_context="fork")
    with pytest.raises(RuntimeError) as info:
        for _ in loader:
            pass
    noticed = time.monotonic() - float(stamp.read_text())
    # torch: ~0.1 s; tdx checks every 0.1 s (the bound leaves room for a loaded 2-core machine)
    assert noticed < 3, noticed
    assert isinstance(info.value, tdx.TdxError) and re.search(pattern, str(info.value)), str(info.value)
