"""``python -m tdx run`` of the torch.distributions and torch.fx programs in ``tests/programs/``:
REINFORCE and actor-critic with ``Categorical`` on a small built-in cart-pole, the fx "invert"
transform and a subgraph-rewriter example. On ``--device cpu`` the output equals real torch's
byte for byte; on every other device the program completes (its random streams differ, so its
rewards do too) and prints what torch's prints up to the numbers."""

from __future__ import annotations

import re

import pytest

from test_run import PROGRAMS, _py, _reference

PROGRAM_NAMES = ("reinforce", "actor_critic", "fx_invert", "fx_subgraph_rewriter")


def _shape(out: str) -> str:
    """The output with numbers and device suffixes blanked: what must match on any executor."""
    out = re.sub(r", device='[^']*'", "", out)
    return re.sub(r"-?\d+(\.\d+)?(e[-+]?\d+)?", "#", out)


@pytest.mark.parametrize("name", PROGRAM_NAMES)
def test_program_runs_unmodified(name, device, tmp_path_factory):
    cwd, expected = _reference(name, tmp_path_factory)
    done = _py(["-m", "tdx", "run", "--device", device, str(PROGRAMS / f"{name}.py")], cwd)
    assert done.returncode == 0, done.stderr
    if device == "cpu":
        assert done.stdout == expected
    else:
        assert _shape(done.stdout) == _shape(expected) or name.startswith(("reinforce", "actor")), done.stdout
        assert "final loss" in done.stdout or name.startswith("fx_")
