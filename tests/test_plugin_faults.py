"""The device matrix plugin after a device-side fault: the culprit fails by name, and the other tests
of the device keep their own outcomes (a fresh xdist worker runs them; without xdist they are skipped
naming the culprit). The fault is simulated: the project's conftest replaces the plugin's probe, as a
CUDA device-side assert would answer it, from the culprit test on."""

from __future__ import annotations

import textwrap

pytest_plugins = ["pytester"]

CONFTEST = """
    import tdx.testing.plugin as plugin

    STATE = {"bad": False}


    def _fake_fault(device):
        return "RuntimeError: CUDA error: device-side assert triggered" if STATE["bad"] else None


    plugin._device_fault = _fake_fault
"""

TESTS = """
    import pytest

    from conftest import STATE


    @pytest.mark.parametrize("k", range(4))
    def test_before(tdx_device, k):
        pass


    def test_bad_input(tdx_device):
        STATE["bad"] = True


    @pytest.mark.parametrize("k", range(4))
    def test_after(tdx_device, k):
        pass


    def test_outside_the_matrix():
        pass
"""


def _project(pytester):
    pytester.makeconftest(textwrap.dedent(CONFTEST))
    pytester.makepyfile(test_faults=textwrap.dedent(TESTS))


def test_fault_fails_the_culprit_and_skips_the_rest_without_xdist(pytester):
    _project(pytester)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly", "--tdx-devices=cpu",
                                           "-rfs")
    result.assert_outcomes(passed=5, failed=1, skipped=4)
    result.stdout.fnmatch_lines(["cpu reported a device-side fault after this test: RuntimeError: CUDA error: "
                                 "device-side assert triggered. A value checked inside a kernel*",
                                 "FAILED test_faults.py::test_bad_input?cpu? - *",
                                 "SKIPPED ?4? *cpu is unusable in this process after a device-side assert in "
                                 "test_faults.py::test_bad_input?cpu?"])


def test_fault_ends_the_xdist_worker_and_the_rest_still_runs(pytester):
    _project(pytester)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly", "--tdx-devices=cpu",
                                           "-n", "2", "-rf")
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed") == 9 and not outcomes.get("skipped"), outcomes
    failed = [line for line in result.stdout.lines if line.startswith("FAILED")]
    assert failed and all("test_bad_input[cpu]" in line for line in failed), result.stdout.str()[-3000:]
