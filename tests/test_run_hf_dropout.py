"""HuggingFace models with their default dropout train to torch's losses under ``python -m tdx run``.

``tests/programs/hf_dropout.py`` builds GPT-2, BERT, T5 and ViT from tiny configs that keep every
dropout at its default, seeded, and trains two AdamW steps: the initial weights and every dropout
mask (attention's included) come from the random stream, and the program prints the losses and the
next ``torch.rand``. On cpu the output is torch's byte for byte; elsewhere the losses agree to
1e-4 relative and the next draw is torch's.
"""

from __future__ import annotations

import re

import pytest

from test_run import PROGRAMS, _py

pytest.importorskip("transformers")

PROGRAM = str(PROGRAMS / "hf_dropout.py")
_LINE = re.compile(r"^(\w+ (?:step \d loss|next rand)) (-?[0-9.]+)$")


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The program's output under real torch."""
    done = _py([PROGRAM], tmp_path_factory.mktemp("hf_dropout"))
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def _numbers(out: str) -> dict:
    return {m.group(1): float(m.group(2)) for m in map(_LINE.match, out.splitlines()) if m}


def test_hf_models_with_dropout_train_to_torchs_losses(device, reference, tmp_path):
    done = _py(["-m", "tdx", "run", "--device", device, PROGRAM], tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    if device == "cpu":
        assert done.stdout == reference
        return
    got, want = _numbers(done.stdout), _numbers(reference)
    assert got.keys() == want.keys() and len(want) == 12
    for key, value in want.items():
        if "rand" in key:
            assert got[key] == value, key
        else:
            assert got[key] == pytest.approx(value, rel=1e-4), key
