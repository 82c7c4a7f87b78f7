"""``python -m tdx run`` of the torch.distributions and torch.fx programs in ``tests/programs/``:
REINFORCE and actor-critic with ``Categorical`` on a small built-in cart-pole, the fx "invert"
transform and a subgraph-rewriter example. On ``--device cpu`` the output equals real torch's
byte for byte; on every other device the program completes and prints what torch's prints, its
numbers within float32 rounding (MLX draws torch's random stream by default, so the episodes,
actions and rewards are torch's)."""

from __future__ import annotations

import re

import pytest

from test_run import PROGRAMS, _py, _reference

PROGRAM_NAMES = ("reinforce", "actor_critic", "fx_invert", "fx_subgraph_rewriter")
_NUMBER = re.compile(r"-?\d+\.\d+(?:e[-+]?\d+)?|-?\d+(?:e[-+]?\d+)?|nan|inf")


def _split(out: str) -> tuple:
    """(the output with device suffixes dropped and numbers blanked, the numbers)."""
    out = re.sub(r", device='[^']*'", "", out)
    return _NUMBER.sub("#", out), [float(n) for n in _NUMBER.findall(out)]


@pytest.mark.parametrize("name", PROGRAM_NAMES)
def test_program_runs_unmodified(name, device, tmp_path_factory):
    cwd, expected = _reference(name, tmp_path_factory)
    done = _py(["-m", "tdx", "run", "--device", device, str(PROGRAMS / f"{name}.py")], cwd)
    assert done.returncode == 0, done.stderr
    if device == "cpu":
        assert done.stdout == expected
        return
    shape, numbers = _split(done.stdout)
    expected_shape, expected_numbers = _split(expected)
    assert shape == expected_shape, done.stdout
    assert numbers == pytest.approx(expected_numbers, rel=1e-4, abs=1e-4, nan_ok=True), done.stdout
