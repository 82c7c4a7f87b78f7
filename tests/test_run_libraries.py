"""Third-party libraries built on torch, unmodified, under ``python -m tdx run`` on every device.

Each program in ``tests/programs/`` uses one library the way its documentation shows, on tiny models built from
configs and on data it makes itself (nothing is downloaded): accelerate (an ``Accelerator`` preparing model,
optimizer, scheduler and loader, saving), diffusers (a UNet2DModel trained on DDPM's noise, then sampled),
PyTorch Lightning (a ``Trainer`` fitting, validating and testing), torchmetrics (module and functional
metrics), sentence-transformers (a SentenceTransformer over a tiny BERT, encoding and a training step), kornia
(filters, color, warps, augmentation, with gradients), gpytorch (an exact GP fitted by Adam), pyro (SVI with an
AutoNormal guide, then Predictive), torch_geometric (a GCN on a graph built here, batched pooling) and a GPT
training script in llm.c's and build-nanogpt's style with tiktoken. Each runs first under real torch (the
reference), then under tdx: on cpu its output is torch's byte for byte; elsewhere every number agrees within
the program's tolerance and every other word is the same.
"""

from __future__ import annotations

import re

import pytest

from test_run import PROGRAM_TIMEOUT, PROGRAMS, _py, _reference

# program -> (the library it needs, relative tolerance of its numbers off torch's cpu executor); the GPT script
# computes in bfloat16 under autocast, so its numbers agree to bfloat16's rounding and the tokens it samples from
# those probabilities may differ off cpu (its "sample" line is compared on cpu only)
LIBRARIES = {"accelerate_train": ("accelerate", 1e-4), "diffusers_ddpm": ("diffusers", 1e-3),
             "lightning_train": ("pytorch_lightning", 1e-4), "torchmetrics_eval": ("torchmetrics", 1e-4),
             "sentence_embeddings": ("sentence_transformers", 1e-3), "kornia_ops": ("kornia", 1e-4),
             "gpytorch_regression": ("gpytorch", 1e-3), "pyro_svi": ("pyro", 1e-3),
             "geometric_gcn": ("torch_geometric", 1e-4), "gpt_tiktoken": ("tiktoken", 1e-3)}
_NUMBER = re.compile(r"-?\d+\.\d+(?:e-?\d+)?")


def _split(out: str):
    """(every decimal number printed, the text around them)."""
    return [float(n) for n in _NUMBER.findall(out)], _NUMBER.sub("#", out)


@pytest.mark.parametrize("name", sorted(LIBRARIES))
@pytest.mark.timeout(PROGRAM_TIMEOUT)
def test_library_program_runs_unmodified(name, device, tmp_path_factory):
    library, tolerance = LIBRARIES[name]
    pytest.importorskip(library)
    cwd, expected = _reference(name, tmp_path_factory, device)
    done = _py(["-m", "tdx", "run", "--device", device, str(PROGRAMS / f"{name}.py")], cwd)
    assert done.returncode == 0, done.stderr[-3000:]
    if device == "cpu":
        assert done.stdout == expected
        return
    if name == "gpt_tiktoken":
        done.stdout, expected = (re.sub(r"sample \[.*\]", "sample", out) for out in (done.stdout, expected))
    (got, got_text), (want, want_text) = _split(done.stdout), _split(expected)
    assert got_text == want_text, (done.stdout, expected)
    assert len(want) >= 3 and got == pytest.approx(want, rel=tolerance, abs=tolerance), (done.stdout, expected)
