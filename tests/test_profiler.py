"""torch.profiler / torch.autograd.profiler on every device: the ops a block calls are counted by name with
positive timings, record_function labels (context and decorator), input shapes, the Chrome trace is valid JSON
with one event per call, a schedule records the steps torch's records and calls on_trace_ready as often, and
nothing of the profiler stays on the call path once it stops."""

from __future__ import annotations

import json

import pytest
import torch
import torch.profiler as tprof

import tdx
import tdx.profiler as P
from tdx.autograd import profiler as legacy


def _block(device):
    a = tdx.ones(4, 4, device=device)
    b = tdx.full((4, 4), 2.0, device=device)
    for _ in range(3):
        c = a + b
    return (c @ b).relu().sum()


def test_ops_counted_with_positive_times(device):
    with P.profile(activities=[P.ProfilerActivity.CPU], record_shapes=True, profile_memory=True) as prof:
        with P.record_function("block"):
            out = _block(device)
    assert out.item() == 384.0
    avgs = {e.key: e for e in prof.key_averages()}
    assert avgs["tdx::add"].count == 3 and avgs["tdx::matmul"].count == 1 and avgs["tdx::relu"].count == 1
    assert avgs["block"].count == 1 and avgs["block"].is_user_annotation
    for key in ("tdx::add", "tdx::matmul", "tdx::relu", "tdx::sum", "block"):
        assert avgs[key].cpu_time_total > 0 and avgs[key].self_cpu_time_total >= 0
    assert avgs["block"].cpu_time_total >= avgs["tdx::matmul"].cpu_time_total  # nesting: the label spans its ops
    assert avgs["tdx::add"].cpu_memory_usage == 3 * 16 * 4  # bytes of the outputs
    by_shape = prof.key_averages(group_by_input_shape=True)
    assert [e.input_shapes for e in by_shape if e.key == "tdx::matmul"] == [[[4, 4], [4, 4]]]
    table = prof.key_averages().table(sort_by="cpu_time_total", row_limit=3)
    assert "Self CPU time total" in table and len([ln for ln in table.splitlines() if "  " in ln and
                                                   ("tdx::" in ln or "aten::" in ln or "block" in ln)]) == 3
    if device == "cpu":  # torch's own events folded in, nested inside tdx's
        assert avgs["aten::mm"].count == 1 and avgs["tdx::matmul"].cpu_time_total >= avgs["aten::mm"].cpu_time_total


def test_chrome_trace_is_valid_json(device, tmp_path):
    with P.profile() as prof:
        _block(device)
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())
    names = [e["name"] for e in trace["traceEvents"]]
    assert names.count("tdx::add") == 3
    assert all(e["ph"] == "X" and e["dur"] >= 0 and isinstance(e["ts"], float) for e in trace["traceEvents"])
    with pytest.raises(ValueError) as info:
        prof.key_averages().export_chrome_trace(str(path))
    assert isinstance(info.value, tdx.TdxError)


def _steps_of(profile_cls, record_function, sched, work, n=9):
    """The (name, count) of the steps and labels recorded in each cycle handed to on_trace_ready."""
    cycles = []

    def ready(p):
        cycles.append(sorted((e.key, e.count) for e in p.key_averages() if e.key in ("ProfilerStep*", "work")))

    with profile_cls(schedule=sched, on_trace_ready=ready) as p:
        for _ in range(n):
            with record_function("work"):
                work()
            p.step()
    return cycles


@pytest.mark.parametrize("kw", [dict(wait=1, warmup=1, active=2, repeat=2), dict(wait=0, warmup=1, active=1),
                                dict(wait=2, warmup=1, active=3, skip_first=1, repeat=1)])
def test_schedule_records_the_steps_torch_records(device, kw):
    x = tdx.ones(3, device=device)
    ours = _steps_of(P.profile, P.record_function, P.schedule(**kw), lambda: x * 2)
    y = torch.ones(3)
    theirs = _steps_of(tprof.profile, tprof.record_function, tprof.schedule(**kw), lambda: y * 2)
    assert ours == theirs
    fn_ours, fn_theirs = P.schedule(**kw), tprof.schedule(**kw)
    assert [fn_ours(i).name for i in range(20)] == [fn_theirs(i).name for i in range(20)]


def test_record_function_decorator_and_legacy_api(device, tmp_path):
    @P.record_function("my_fn")
    def f(t):
        return t * 3

    x = tdx.ones(2, device=device)
    with legacy.profile(record_shapes=True) as prof:
        f(x)
        f(x)
    avgs = {e.key: e.count for e in prof.key_averages()}
    assert avgs["my_fn"] == 2 and avgs["tdx::mul"] == 2
    assert prof.self_cpu_time_total > 0 and "my_fn" in prof.table(sort_by="count")
    assert f(x).tolist() == [3.0, 3.0]  # outside a profile: the plain function


def test_trace_handler_writes_tensorboard_traces(device, tmp_path):
    with P.profile(schedule=P.schedule(wait=0, warmup=1, active=1, repeat=2),
                   on_trace_ready=P.tensorboard_trace_handler(str(tmp_path), worker_name="w")) as p:
        for _ in range(5):
            tdx.ones(2, device=device).add(1)
            p.step()
    files = sorted(tmp_path.glob("w.*.pt.trace.json"))
    assert len(files) == 2
    assert all("tdx::add" in [e["name"] for e in json.loads(f.read_text())["traceEvents"]] for f in files)


def test_no_trace_of_the_profiler_once_stopped(device):
    before = (tdx.Tensor.__add__, tdx.Tensor.add, tdx.add, tdx.nn.functional.relu)
    with P.profile():
        assert tdx.Tensor.__add__ is not before[0]  # the timed twins are in place only while recording
        with pytest.raises(RuntimeError) as info:  # one profiler at a time, as torch
            P.profile().__enter__()
        assert isinstance(info.value, tdx.TdxError)
    assert (tdx.Tensor.__add__, tdx.Tensor.add, tdx.add, tdx.nn.functional.relu) == before
    with P.profile(schedule=P.schedule(wait=1, warmup=0, active=1)) as p:
        assert tdx.Tensor.add is before[1]  # waiting: nothing installed
        p.step()
        assert tdx.Tensor.add is not before[1]
    assert tdx.Tensor.add is before[1]


def test_bad_arguments_are_typed(device):
    for bad, name in ((dict(wait=-1, warmup=1, active=1), "wait"), (dict(wait=0, warmup=1, active=0), "active"),
                      (dict(wait=0, warmup=1.5, active=1), "warmup")):
        with pytest.raises(ValueError) as info:  # torch asserts; tdx names the count and its value
            P.schedule(**bad)
        assert isinstance(info.value, tdx.TdxError) and f"{name} must be" in str(info.value)
        assert repr(bad[name]) in str(info.value)
    with pytest.raises(TypeError) as info:
        P.profile(activities=["cpu"])
    assert isinstance(info.value, tdx.TdxError) and "'cpu'" in str(info.value)
    with P.profile() as prof:
        tdx.ones(1, device=device) + 1
    with pytest.raises(ValueError) as info:
        prof.key_averages().table(sort_by="speed")
    assert "speed" in str(info.value) and "cpu_time_total" in str(info.value)
    with pytest.raises(TypeError):
        P.record_function(3)
