"""HuggingFace transformers, unmodified, under ``python -m tdx run`` on every device.

``tests/programs/hf_models.py`` builds GPT-2, a Llama-style decoder (grouped-query attention, rotary
embeddings), BERT (masked LM and classification), T5 and ViT from tiny configs, trains two AdamW
steps, generates greedily and by sampling with the KV cache, takes a step with gradient
checkpointing, compares "eager" and "sdpa" attention and round-trips ``save_pretrained``/
``from_pretrained``. The reference run under real torch saves each model's initial weights
(``init_<name>``), which the tdx runs load with ``from_pretrained`` (a torch checkpoint under tdx);
each tdx run's trained checkpoints (``ckpt_<name>``) are then loaded by real torch (the reverse).
On cpu the output is torch's byte for byte; elsewhere the losses and logits agree to 1e-4 relative
and the greedy tokens are the same.
"""

from __future__ import annotations

import re

import pytest

from test_run import PROGRAMS, _py

pytest.importorskip("transformers")

PROGRAM = str(PROGRAMS / "hf_models.py")
_NUMBER = re.compile(r"(loss|logits sum) (-?[0-9.]+)$")


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """(working dir, stdout) of the program under real torch; its init_<name> folders stay there."""
    cwd = tmp_path_factory.mktemp("hf_models")
    done = _py([PROGRAM], cwd)
    assert done.returncode == 0, done.stderr[-3000:]
    return cwd, done.stdout


def _numbers(out: str) -> dict:
    found = {}
    for line in out.splitlines():
        m = _NUMBER.search(line)
        if m:
            found[line[:m.start(2)]] = float(m.group(2))
    return found


def test_hf_models_train_generate_and_checkpoint(device, reference):
    cwd, expected = reference
    done = _py(["-m", "tdx", "run", "--device", device, PROGRAM], cwd)
    assert done.returncode == 0, done.stderr[-3000:]
    if device == "cpu":
        assert done.stdout == expected
    else:
        got, want = _numbers(done.stdout), _numbers(expected)
        assert got.keys() == want.keys() and len(want) >= 20
        for key, value in want.items():
            assert got[key] == pytest.approx(value, rel=1e-4, abs=1e-5), key
        rest = [line for line in expected.splitlines() if not _NUMBER.search(line)]
        assert rest == [line for line in done.stdout.splitlines() if not _NUMBER.search(line)]
        assert sum("greedy" in line for line in rest) == 3
    # the checkpoints this tdx run saved load under real torch and give the logits tdx printed
    again = _py([PROGRAM, "--reload"], cwd)
    assert again.returncode == 0, again.stderr[-3000:]
    printed = {k: v for k, v in _numbers(done.stdout).items() if "logits sum" in k}
    reloaded = _numbers(again.stdout)
    assert reloaded.keys() == printed.keys() and len(printed) == 6
    for key, value in printed.items():
        assert reloaded[key] == pytest.approx(value, rel=1e-5, abs=1e-5), key
