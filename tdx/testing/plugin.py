"""pytest plugin (entry point ``pytest11``): tdx's device matrix, opt-in per test.

Installing tdx changes nothing for tests that do not ask for it: an argument named ``device``,
a project's own ``device`` fixture or ``parametrize("device", ...)`` are left alone. A test opts in
by taking the ``tdx_device`` argument, or by the ``@pytest.mark.tdx_devices`` marker (which
parametrizes ``device``, or the argument it names: ``@pytest.mark.tdx_devices("dev")``). It then
runs once per device tdx knows (``cpu``, ``cuda``, ``mps``, ``mlx:gpu``, ``mlx:cpu``...); absent
devices are reported as skipped with the reason, and the run ends with a table of test modules x
devices (passed/failed/skipped), under ``-n auto`` too. A suite that wants every ``device``
argument parametrized calls :func:`parametrize_devices` from its own ``pytest_generate_tests``
(tdx's suite does, in ``tests/conftest.py``). ``--tdx-devices=cpu,mlx:cpu`` narrows the devices;
``--tdx-absent=one`` (or ``tdx_absent = "one"`` in the ini options) keeps one skipped row per test function
for a device that is not there;
``-p no:tdx`` turns the plugin off. Frameworks are imported only when devices are listed.

Under ``python -m tdx run -m pytest -n N`` each xdist worker loads this plugin before any conftest
and adopts the run's torch alias and device pin (:func:`tdx.aliasing.inherit.adopt_from_environment`),
so the tests run on tdx in the workers as they do without ``-n``. It also keeps tdx's import finders
ahead of pytest's assertion-rewriting hook, which claims the ``tdx`` package because of this plugin.

On a device whose executor checks values inside its kernels (``caps.device_side_checks``: torch on
CUDA, where an index out of range is a device-side assert that leaves the process unable to use the
device), each test is followed by a synchronization: a fault found there fails that test by name,
with the device's message. Under pytest-xdist the worker then ends, so a fresh one runs the tests
that remain (the test is also reported as the crashed one); without xdist, the device's remaining
tests in the run are skipped with the culprit named. One bad-input test can so never turn the rest
of a device's rows into failures.

This module must never parametrize or override anything a test did not opt in to.
"""

from __future__ import annotations

import collections
import os
import sys
import time

import pytest

FIXTURE = "tdx_device"
MARKER = "tdx_devices"
_KEY = "tdx_device"
_argnames: set = {FIXTURE}  # argument names parametrized over tdx's devices in this process
_results: dict = collections.defaultdict(lambda: collections.Counter())
_devices_seen: list = []
_lost: dict = {}  # device -> node id of the test after which the device faulted, in this process
_ending: list = []  # set when this xdist worker must end after the current test's reports
_worker: list = []  # [True] in an xdist worker process (not in one it started, which inherits its environment)
_failure_log: list = []  # [path] where the controller appends each failure as it arrives (--tdx-failures)
_absent: dict = {}  # device that is not there -> the reason its rows skip, as device_params marked them


def _adopt_run_alias() -> None:
    """In a pytest-xdist worker of a ``python -m tdx run -m pytest -n N`` run: the run's alias and pin.
    And, when tdx was imported before pytest (``python -m tdx run -m pytest``), tdx's import finders
    back ahead of pytest's assertion-rewriting hook (:func:`tdx.aliasing.alias.put_first`)."""
    if "tdx.aliasing.alias" in sys.modules:
        sys.modules["tdx.aliasing.alias"].put_first()
    if "PYTEST_XDIST_WORKER" in os.environ and "TDX_RUN_ALIAS" in os.environ:
        from ..aliasing import inherit, torch_alias

        inherit.adopt_from_environment(torch_alias.adopt)


_adopt_run_alias()  # at import: xdist's worker loads the plugins before the conftests import torch


def pytest_addoption(parser):
    group = parser.getgroup("tdx")
    group.addoption("--tdx-devices", default=None,
                    help="comma-separated devices to run tdx device tests on (default: every known device)")
    group.addoption("--tdx-no-matrix", action="store_true", help="do not print the devices x modules table")
    group.addoption("--tdx-absent", choices=("each", "one"), default=None,
                    help="rows of a device that is not there: 'each' (default) reports every row skipped; 'one' "
                         "keeps one skipped row per test function and device, naming how many it stands for, "
                         "and deselects the others (a suite parametrized over many inputs skips thousands)")
    parser.addini("tdx_absent", "--tdx-absent's default for this project ('each' or 'one')", default="each")
    group.addoption("--tdx-failures", default=None, metavar="PATH",
                    help="append each failure's report to PATH as it arrives, so a run cut by a time limit "
                         "still leaves its messages (the summary at the end does not)")


def pytest_configure(config):
    _worker.append(hasattr(config, "workerinput"))  # an xdist worker (its controller sets workerinput)
    path = config.getoption("--tdx-failures", default=None)
    if path and not _worker[-1]:
        _failure_log.append(path)
    config.addinivalue_line("markers", f"{MARKER}(argname='device'): run the test once per tdx device, "
                                       "passing it as ``argname``")


def device_params(config) -> list:
    """One ``pytest.param`` per device tdx knows (absent ones marked skip with the reason)."""
    from .. import backends

    wanted = config.getoption("--tdx-devices", default=None)
    wanted = None if not wanted else [w.strip() for w in wanted.split(",")]
    params = []
    for row in backends.available():
        if wanted is not None and row.device not in wanted:
            continue
        marks = ()
        if not row.available:
            reason = _absent[row.device] = f"{row.device} unavailable: {row.reason}"
            marks = (pytest.mark.skip(reason=reason),)
        params.append(pytest.param(row.device, marks=marks, id=row.device))
    return params


def parametrize_devices(metafunc, argname: str = "device") -> bool:
    """Parametrize ``argname`` of the test over tdx's devices, counted in the device matrix.

    Call it from a ``pytest_generate_tests`` hook. Nothing happens (False is returned) when the
    test does not take ``argname`` or already parametrizes it itself.
    """
    if argname not in metafunc.fixturenames:
        return False
    if any(argname in _names(m.args[0]) for m in metafunc.definition.iter_markers("parametrize") if m.args):
        return False
    _argnames.add(argname)
    metafunc.parametrize(argname, device_params(metafunc.config))
    return True


def _names(spec) -> list:
    if isinstance(spec, str):
        return [s.strip() for s in spec.split(",")]
    return list(spec)


def pytest_generate_tests(metafunc):
    if FIXTURE in metafunc.fixturenames:
        parametrize_devices(metafunc, FIXTURE)
    for mark in metafunc.definition.iter_markers(MARKER):
        argname = mark.args[0] if mark.args else mark.kwargs.get("argname", "device")
        if argname not in metafunc.fixturenames:
            raise pytest.UsageError(f"{metafunc.definition.nodeid}: @pytest.mark.{MARKER} parametrizes "
                                    f"{argname!r}, which the test does not take")
        parametrize_devices(metafunc, argname)


def _device_of(item):
    """The tdx device ``item`` runs on, or None for a test outside the device matrix."""
    callspec = getattr(item, "callspec", None)
    if callspec is None:
        return None
    for name in _argnames:
        if name in callspec.params:
            return callspec.params[name]
    return None


def pytest_collection_modifyitems(config, items):
    """Under ``--tdx-absent=one``: of the rows of a device that is not there, one per test function is kept,
    skipped with the reason and the number of rows it stands for; the others are deselected (reported so)."""
    if (config.getoption("--tdx-absent", default=None) or config.getini("tdx_absent")) != "one" or not _absent:
        return
    kept, dropped, first = [], [], {}
    for item in items:
        device = _device_of(item)
        if device not in _absent:
            kept.append(item)
            continue
        key = (item.nodeid.partition("[")[0], device)
        if key in first:
            first[key][1] += 1
            dropped.append(item)
        else:
            first[key] = [item, 1]
            kept.append(item)
    if not dropped:
        return
    for (_, device), (item, rows) in first.items():
        if rows > 1:
            item.add_marker(pytest.mark.skip(reason=f"{_absent[device]} (one row for {rows}: --tdx-absent=each "
                                                    "lists each)"), append=False)
    config.hook.pytest_deselected(items=dropped)
    items[:] = kept


def _device_fault(device: str):
    """The message of a device-side fault ``device`` reports after a test, or None (see the module doc)."""
    from .. import backends

    ex = backends.get(device)
    if not ex.caps.device_side_checks:
        return None
    try:
        ex.synchronize()
    except RuntimeError as err:
        return f"{type(err).__name__}: {err}"
    return None


def pytest_runtest_setup(item):
    device = _device_of(item)
    if device in _lost:
        pytest.skip(f"{device} is unusable in this process after a device-side assert in {_lost[device]}")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    outcome = yield
    device = _device_of(item)
    if device is None:
        return
    fault = _device_fault(device)
    if fault is None:
        return
    _lost[device] = item.nodeid
    if _worker and _worker[0]:
        _ending.append(item.nodeid)
    raised = outcome.exception
    before = "" if raised is None else f" (the test itself ended with {type(raised).__name__}: {raised})"
    outcome.force_exception(pytest.fail.Exception(
        f"{device} reported a device-side fault after this test: {fault}{before}. A value checked inside a "
        "kernel (an index out of range, a bad target or rate) is an assert on the device, not an error at the "
        "call; such bad-input cases cannot run there.", pytrace=False))


def pytest_runtest_logfinish(nodeid, location):
    if _ending:  # this worker's device context is lost: end it, xdist starts a fresh one for the rest
        sys.stderr.write(f"tdx: ending this worker after a device-side fault in {_ending[0]}\n")
        sys.stderr.flush()
        time.sleep(0.5)  # let the reports already sent reach the controller
        os._exit(3)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    device = _device_of(item)
    if device is not None:
        report.user_properties.append((_KEY, device))


def pytest_runtest_logreport(report):
    if _failure_log and report.failed:
        with open(_failure_log[-1], "a", encoding="utf-8") as f:
            f.write(f"==== {report.nodeid} ({report.when})\n{report.longreprtext[-4000:]}\n")
    device = dict(report.user_properties).get(_KEY) if report.user_properties else None
    if device is None:
        return
    if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
        module = report.nodeid.split("::", 1)[0]
        _results[module][(device, report.outcome)] += 1
        if device not in _devices_seen:
            _devices_seen.append(device)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if config.getoption("--tdx-no-matrix") or not _results:
        return
    from .. import backends

    order = [r.device for r in backends.available()]
    devices = sorted(_devices_seen, key=lambda d: order.index(d) if d in order else len(order))
    tr = terminalreporter
    tr.section("tdx device matrix (passed/failed/skipped)")
    width = max(len(m) for m in _results)
    tr.write_line(f"{'module':<{width}}  " + "  ".join(f"{d:>12}" for d in devices))
    for module in sorted(_results):
        counts = _results[module]
        cells = []
        for d in devices:
            p, f, s = (counts[(d, o)] for o in ("passed", "failed", "skipped"))
            cells.append(f"{p}/{f}/{s}" if p + f + s else "-")
        tr.write_line(f"{module:<{width}}  " + "  ".join(f"{c:>12}" for c in cells))
