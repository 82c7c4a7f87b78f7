"""torch.func programs run unmodified through ``python -m tdx run``: per-sample gradients and model
ensembling (``tests/programs``), their output equal to the program's under real torch, byte for byte
on the cpu executor and to the printed precision elsewhere."""

from __future__ import annotations

import re

import pytest

from test_run import PROGRAMS, _py, _reference

PROGRAMS_FUNC = ("per_sample_grads", "model_ensembling")
_NUMBER = re.compile(r"-?\d+\.\d+")


def _same_to_printed_precision(got: str, expected: str) -> None:
    """The same lines, each printed number within two units of its last printed digit."""
    gl, el = got.splitlines(), expected.splitlines()
    assert len(gl) == len(el), got
    for g, e in zip(gl, el):
        assert _NUMBER.sub("#", g) == _NUMBER.sub("#", e), (g, e)
        for a, b in zip(_NUMBER.findall(g), _NUMBER.findall(e)):
            unit = 10.0 ** -len(b.split(".")[1])
            assert abs(float(a) - float(b)) <= 2 * unit, (g, e)


@pytest.mark.parametrize("name", PROGRAMS_FUNC)
def test_func_program_runs_unmodified(name, device, tmp_path_factory):
    cwd, expected = _reference(name, tmp_path_factory)
    done = _py(["-m", "tdx", "run", "--device", device, str(PROGRAMS / f"{name}.py")], cwd)
    assert done.returncode == 0, done.stderr
    assert "True" in done.stdout and "False" not in done.stdout
    if device == "cpu":
        assert done.stdout == expected
    else:
        _same_to_printed_precision(done.stdout, expected)
