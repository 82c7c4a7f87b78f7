"""torch.utils.tensorboard.SummaryWriter on every device: what tdx writes, read back with tensorboard's own
EventAccumulator, equals what torch's SummaryWriter writes from the same values (scalars, add_scalars sub-runs,
histograms, images decoded pixel for pixel, text, hparams); add_graph refused by name; bad input typed."""

from __future__ import annotations

import io

import numpy as np
import pytest
import torch
from PIL import Image
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from torch.utils.tensorboard import SummaryWriter as TorchWriter

import tdx
from tdx.utils.tensorboard import SummaryWriter

RNG = np.random.default_rng(0)
VALUES = RNG.standard_normal(200).astype(np.float32)
IMG = RNG.uniform(0, 1, (3, 5, 7)).astype(np.float32)
IMGS = RNG.uniform(0, 1, (10, 1, 4, 4)).astype(np.float32)


def _write(writer_cls, lib, log_dir, device=None):
    kw = {} if device is None else {"device": device}
    with writer_cls(log_dir) as w:
        for step in range(3):
            w.add_scalar("loss", lib.tensor(1.0 / (step + 1), **kw), step)
        w.add_scalar("plain", 0.25, 7)
        w.add_scalars("run", {"a": lib.tensor(1.5, **kw), "b": 2.0}, 1)
        w.add_histogram("w", lib.tensor(VALUES, **kw), 0)
        w.add_histogram("w_auto", lib.tensor(VALUES, **kw), 0, bins="auto")
        w.add_image("img", lib.tensor(IMG, **kw), 0)
        w.add_image("img_hwc", lib.tensor(IMG.transpose(1, 2, 0), **kw), 0, dataformats="HWC")
        w.add_images("imgs", lib.tensor(IMGS, **kw), 0)
        w.add_text("note", "hello *tensorboard*", 2)
        w.add_hparams({"lr": 0.1, "opt": "sgd", "layers": 2, "flag": True}, {"hp/loss": 0.5}, run_name="hp")


def _read(path):
    acc = EventAccumulator(str(path), size_guidance={"tensors": 0, "images": 0, "histograms": 0, "scalars": 0})
    acc.Reload()
    return acc


def _pixels(acc, tag):
    ev = acc.Images(tag)[0]
    return np.asarray(Image.open(io.BytesIO(ev.encoded_image_string)).convert("RGB"))


def test_event_files_equal_torchs(device, tmp_path):
    _write(SummaryWriter, tdx, tmp_path / "ours", device)
    _write(TorchWriter, torch, tmp_path / "theirs")
    ours, theirs = _read(tmp_path / "ours"), _read(tmp_path / "theirs")
    assert ours.Tags()["scalars"] == theirs.Tags()["scalars"]
    for tag in ("loss", "plain"):
        assert [(e.step, e.value) for e in ours.Scalars(tag)] == [(e.step, e.value) for e in theirs.Scalars(tag)]
    for tag in ("w", "w_auto"):
        h, g = ours.Histograms(tag)[0].histogram_value, theirs.Histograms(tag)[0].histogram_value
        assert (h.num, h.min, h.max) == (g.num, g.min, g.max)
        np.testing.assert_allclose([h.sum, h.sum_squares], [g.sum, g.sum_squares], rtol=1e-6)
        assert list(h.bucket) == list(g.bucket) and np.allclose(h.bucket_limit, g.bucket_limit)
    for tag in ("img", "img_hwc", "imgs"):
        np.testing.assert_array_equal(_pixels(ours, tag), _pixels(theirs, tag))
    text = [e.tensor_proto.string_val for e in ours.Tensors("note/text_summary")]
    assert text == [e.tensor_proto.string_val for e in theirs.Tensors("note/text_summary")] == [[b"hello *tensorboard*"]]
    for sub in ("run_a", "run_b"):
        assert [e.value for e in _read(tmp_path / "ours" / sub).Scalars("run")] == \
               [e.value for e in _read(tmp_path / "theirs" / sub).Scalars("run")]
    hp_ours, hp_theirs = _read(tmp_path / "ours" / "hp"), _read(tmp_path / "theirs" / "hp")
    assert hp_ours.Scalars("hp/loss")[0].value == hp_theirs.Scalars("hp/loss")[0].value == 0.5
    assert hp_ours.PluginTagToContent("hparams") == hp_theirs.PluginTagToContent("hparams")


def test_writer_refusals_and_bad_input(device, tmp_path):
    w = SummaryWriter(str(tmp_path))
    with pytest.raises(tdx.UnsupportedOpError) as info:
        w.add_graph(tdx.nn.Linear(2, 2).to(device), tdx.ones(1, 2, device=device))
    assert "SummaryWriter.add_graph" in str(info.value) and "TorchScript" in str(info.value)
    with pytest.raises(ValueError) as info:
        w.add_scalar("x", tdx.ones(2, device=device))
    assert isinstance(info.value, tdx.TdxError) and "(2,)" in str(info.value)
    with pytest.raises(ValueError) as info:
        w.add_image("x", tdx.ones(3, 4, 4, device=device), dataformats="CHWX")
    assert isinstance(info.value, tdx.TdxError) and "'CHWX'" in str(info.value)
    with pytest.raises(ValueError) as info:
        w.add_histogram("x", tdx.ones(0, device=device))
    assert isinstance(info.value, tdx.TdxError)
    with pytest.raises(TypeError) as info:
        w.add_hparams([("lr", 0.1)], {})
    assert isinstance(info.value, tdx.TdxError)
    with pytest.raises(TypeError) as info:
        w.add_hparams({"lr": [0.1]}, {})
    assert "'lr'" in str(info.value)
    w.close()
    w.add_scalar("after_close", 1.0, 0)  # reopens, as torch's
    w.flush()
    w.close()
    assert [e.value for e in _read(tmp_path).Scalars("after_close")] == [1.0]
