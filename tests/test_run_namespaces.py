"""Programs using torch.jit, torch.onnx-style optional imports and torch's other namespaces, run unmodified
through ``python -m tdx run``: byte-for-byte torch's output on cpu, completing with the same printed structure on
every other device."""

from __future__ import annotations

import re

import pytest

from test_run import PROGRAMS, _py, _reference

_NUMBERS = re.compile(r"[-+]?\d+\.\d+(e[-+]?\d+)?")
_DEVICE = re.compile(r", device='[^']*'")


@pytest.mark.parametrize("name", ["torchscript_intro"])
def test_namespace_program_runs_unmodified(name, device, tmp_path_factory):
    cwd, expected = _reference(name, tmp_path_factory)
    done = _py(["-m", "tdx", "run", "--device", device, str(PROGRAMS / f"{name}.py")], cwd)
    assert done.returncode == 0, done.stderr
    if device == "cpu":
        assert done.stdout == expected
    else:  # other random streams: the same lines with other numbers
        def shape(text):
            return ["".join(_NUMBERS.sub("#", _DEVICE.sub("", line)).split()) for line in text.splitlines()]

        assert shape(done.stdout) == shape(expected)
