"""pytest plugin (entry point ``pytest11``): the ``device`` fixture and the device matrix.

Any test that takes a ``device`` argument runs once per device tdx knows (``cpu``,
``cuda``, ``mps``, ``mlx:gpu``, ``mlx:cpu``...); devices that are not available are
reported as skipped with the reason. The run ends with a table of test modules x devices
(passed/failed/skipped). ``--tdx-devices=cpu,mlx:cpu`` narrows the devices; ``-p no:tdx``
turns the plugin off. Frameworks are imported only when devices are listed.
"""

from __future__ import annotations

import collections

import pytest

_KEY = "tdx_device"
_results: dict = collections.defaultdict(lambda: collections.Counter())
_devices_seen: list = []


def pytest_addoption(parser):
    group = parser.getgroup("tdx")
    group.addoption("--tdx-devices", default=None,
                    help="comma-separated devices to run device tests on (default: every known device)")
    group.addoption("--tdx-no-matrix", action="store_true", help="do not print the devices x modules table")


def _device_params(config):
    from .. import backends

    wanted = config.getoption("--tdx-devices")
    wanted = None if not wanted else [w.strip() for w in wanted.split(",")]
    params = []
    for row in backends.available():
        if wanted is not None and row.device not in wanted:
            continue
        marks = () if row.available else (pytest.mark.skip(reason=f"{row.device} unavailable: {row.reason}"),)
        params.append(pytest.param(row.device, marks=marks, id=row.device))
    return params


def pytest_generate_tests(metafunc):
    if "device" in metafunc.fixturenames:
        metafunc.parametrize("device", _device_params(metafunc.config))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    callspec = getattr(item, "callspec", None)
    if callspec is not None and "device" in callspec.params:
        report.user_properties.append((_KEY, callspec.params["device"]))


def pytest_runtest_logreport(report):
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
