"""``tdx.distributed`` and ``DistributedDataParallel`` across real processes on loopback.

Each test starts 2 or 4 ranks of ``dist_worker.py`` with torch's env:// variables: gloo for the
torch executor (cpu), MLX's ring backend for mlx:cpu. Every collective's result is compared with
the same reduction computed in this process with NumPy from each rank's known inputs; DDP training
on the split batch is compared with single-process torch training on the whole batch; a killed
rank, mismatched shapes and an unreachable rendezvous must each end in a typed error in time.
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import socket
import subprocess
import sys

import numpy as np
import pytest
import torch

import tdx

WORKER = pathlib.Path(__file__).with_name("dist_worker.py")
ROOT = pathlib.Path(__file__).resolve().parent.parent
BACKEND = {"cpu": "gloo", "mlx:cpu": "ring"}


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(scenario, device, world, timeout=300, only=None, group_timeout=60):
    """Start ``world`` ranks (or only those in ``only``) and return each rank's JSON result.

    ``group_timeout`` is the process group's own timeout (rendezvous and collectives): generous, so
    ranks whose imports a loaded machine slows down by different amounts still meet. ``timeout`` is
    only the backstop against a hung rank; what a test claims about time it measures in the rank.
    """
    if device not in BACKEND:
        pytest.skip(f"no distributed engine test for {device}")
    port = _port()
    env = {**os.environ, "WORLD_SIZE": str(world), "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port),
           "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
           "TDX_TEST_TIMEOUT": str(group_timeout)}
    env.pop("MLX_HOSTFILE", None)
    procs = [subprocess.Popen([sys.executable, str(WORKER), scenario, BACKEND[device], device],
                              env={**env, "RANK": str(r)}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for r in (only if only is not None else range(world))]
    results = []
    for p in procs:
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            pytest.fail(f"{scenario} on {device}: a rank hung past {timeout} s")
        lines = [ln for ln in out.splitlines() if ln.startswith("{")]
        results.append((p.returncode, json.loads(lines[-1]) if lines else None, err[-2000:]))
    return results


def _inputs(world, shape=(3,), dtype="float32"):
    return [np.random.default_rng(100 + r).integers(-5, 6, size=shape).astype(dtype) for r in range(world)]


@pytest.mark.parametrize("world", [2, 4])
def test_collectives_equal_the_single_process_result(device, world):
    results = _run("collectives", device, world)
    # the hostfile tdx's ring rendezvous wrote is removed once MLX has read it (none left in the temp folder)
    assert [r[1] and r[1]["hostfile_left"] for r in results] == [None] * world, results
    xs, ints = np.stack(_inputs(world)), np.stack(_inputs(world, dtype="int64"))
    expect = {"all_reduce_SUM": xs.sum(0), "all_reduce_AVG": xs.mean(0), "all_reduce_MAX": xs.max(0),
              "all_reduce_MIN": xs.min(0), "all_reduce_PRODUCT": xs.prod(0),
              "all_reduce_BXOR": np.bitwise_xor.reduce(ints, 0), "all_reduce_async": xs.sum(0),
              "broadcast": xs[world - 1], "all_gather": xs, "all_gather_into_tensor": xs.reshape(-1),
              "all_gather_object": [{"rank": r} for r in range(world)]}
    wide = np.stack(_inputs(world, (2 * world,))).sum(0)
    for rank, (code, res, err) in enumerate(results):
        assert code == 0 and res is not None, err
        for key, want in expect.items():
            got = res[key]
            if isinstance(want, np.ndarray):
                np.testing.assert_allclose(np.array(got), want, rtol=1e-6, err_msg=key)
            else:
                assert got == want, key
        np.testing.assert_allclose(res["reduce_scatter_tensor"], wide[2 * rank:2 * rank + 2], rtol=1e-6)
        np.testing.assert_allclose(res["scatter"], xs[rank])
        if rank == 0:
            np.testing.assert_allclose(np.array(res["gather"]), xs)
        if rank == 1:
            np.testing.assert_allclose(res["recv"], xs[0])


def _torch_reference(world):
    """The same training in one process with torch, on the whole batch (rank 0's initialization)."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    rng = np.random.default_rng(0)
    X = torch.tensor(rng.standard_normal((4 * world, 4)).astype(np.float32))
    Y = torch.tensor(rng.standard_normal((4 * world, 1)).astype(np.float32))
    for step in range(4):
        opt.zero_grad()
        if step == 1:  # the no_sync step: each rank's local gradient is added before the synced one
            sum(((model(X[4 * r:4 * r + 4]) - Y[4 * r:4 * r + 4]) ** 2).mean() for r in range(world)).div(world) \
                .backward()
        ((model(X) - Y) ** 2).mean().backward()
        opt.step()
    return [p.detach().reshape(-1).numpy() for p in model.parameters()]


@pytest.mark.parametrize("world", [2, 4])
def test_ddp_equals_single_process_training_on_the_whole_batch(device, world):
    want = _torch_reference(world)
    for code, res, err in _run("ddp", device, world):
        assert code == 0 and res is not None, err
        for got, ref in zip(res["params"], want):
            np.testing.assert_allclose(np.array(got), ref, rtol=1e-6, atol=1e-7)


def test_a_killed_rank_fails_the_others_in_time(device):
    results = _run("killed", device, 2)
    code, res, err = results[0]
    assert res is not None, err
    assert res["error"] in ("DistBackendError", "DistError") and res["builtin"], res
    assert res["seconds"] < 10, res


def test_mismatched_shapes_are_a_typed_error(device):
    if device == "cpu":
        pytest.skip("gloo checks sizes only with TORCH_DISTRIBUTED_DEBUG=DETAIL; the MLX engine always checks")
    for code, res, err in _run("mismatch", device, 2):
        assert res is not None, err
        assert res["error"] == "DistShapeError" and res["builtin"], res


def test_unreachable_rendezvous_is_a_typed_error_in_time(device):
    # only rank 1 of 2 starts: rank 0 never serves the rendezvous
    code, res, err = _run("collectives", device, 2, only=[1], group_timeout=3)[0]
    assert res is not None, err
    assert res["init_error"] in ("DistNetworkError", "DistError") and res["builtin"], res
    # in time: the rank's own wait (its imports not counted), a few rendezvous retries of 3 s at most
    assert res["init_seconds"] < 5 * res["timeout"], res


def test_api_without_a_process_group():
    import tdx.distributed as dist

    assert dist.is_available() and not dist.is_initialized()
    assert dist.get_rank() == -1 and dist.get_world_size() == -1
    with pytest.raises(dist.DistError) as info:
        dist.all_reduce(tdx.ones(2))
    assert isinstance(info.value, (tdx.TdxError, RuntimeError))
    with pytest.raises(dist.DistError):
        dist.init_process_group("carrier-pigeon")


@pytest.mark.parametrize("launcher", ["torchrun", "mlx.launch"])
def test_launchers_start_the_ranks(device, launcher):
    if device not in BACKEND:
        pytest.skip(f"no distributed engine test for {device}")
    if launcher == "mlx.launch" and device != "mlx:cpu":
        pytest.skip("mlx.launch starts MLX ranks (the ring backend)")
    binary = pathlib.Path(sys.executable).with_name(launcher)
    if not binary.exists():
        pytest.skip(f"{launcher} is not installed beside {sys.executable}")
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    env.pop("MLX_HOSTFILE", None)
    if launcher == "torchrun":
        cmd = [str(binary), "--nproc-per-node=2", f"--master-port={_port()}", str(WORKER), "collectives",
               BACKEND[device], device]
    else:
        cmd = [str(binary), "-n", "2", "--backend", "ring", "--python", sys.executable, str(WORKER), "collectives",
               "ring", device]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    # the launcher merges the ranks' output, so their result lines may interleave: read each rank's number
    ranks = sorted(int(r) for r in re.findall(r'\{"rank": (\d+), "all_reduce_SUM"', done.stdout))
    assert ranks == [0, 1], done.stdout[-1000:] + done.stderr[-2000:]


def test_a_torch_ddp_script_runs_unchanged_under_tdx_run(device):
    """torchrun starts ``python -m tdx run --device D`` on a script written for torch DDP: on cpu it prints
    exactly what it prints under torch; on mlx:cpu it runs on MLX ranks that agree with each other."""
    if device not in BACKEND:
        pytest.skip(f"no distributed engine test for {device}")
    torchrun = pathlib.Path(sys.executable).with_name("torchrun")
    if not torchrun.exists():
        pytest.skip("torchrun is not installed beside the interpreter")
    script = ROOT / "tests" / "programs" / "ddp_train.py"
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}

    def lines(*cmd):
        done = subprocess.run([str(torchrun), "--nproc-per-node=2", f"--master-port={_port()}", *cmd], env=env,
                              capture_output=True, text=True, timeout=180)
        found = sorted(re.findall(r"rank \d device \S+ weight0 -?\d+\.\d{6}", done.stdout))  # lines may interleave
        assert len(found) == 2, done.stdout[-1000:] + done.stderr[-2000:]
        return found

    ours = lines("-m", "tdx", "run", "--device", device, str(script))
    assert all(f"device {device} " in ln for ln in ours)
    assert ours[0].split()[-1] == ours[1].split()[-1]  # the ranks hold the same parameters
    if device == "cpu":
        assert ours == lines(str(script))  # real torch, no tdx
