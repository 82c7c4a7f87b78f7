"""Attributes set on tensors travel as torch's do: pickle, ``copy.copy``/``copy.deepcopy``, ``tdx.save``/``tdx.load``
(either way with real torch, ``weights_only`` on and off), and Parameters, on every device, against torch's own
answers to the same code."""

from __future__ import annotations

import copy
import io
import pickle

import pytest
import torch

import tdx
import tdx.nn
from tdx.testing.parity import assert_close


def _tagged(lib, device=None):
    kw = {"device": device} if device else {}
    t = lib.arange(3.0, **kw)
    t.tag = 1
    t.meta = {"name": "w", "sizes": [1, 2]}
    return t


def _state(t) -> dict:
    return {k: v for k, v in t.__dict__.items()}


def _round_trips(lib):
    """name -> function giving the copy of a tensor that each idiom makes."""
    def saved(weights_only):
        def run(t):
            buf = io.BytesIO()
            lib.save(t, buf)
            buf.seek(0)
            return lib.load(buf, weights_only=weights_only)
        return run

    return {"pickle": lambda t: pickle.loads(pickle.dumps(t)), "copy": copy.copy, "deepcopy": copy.deepcopy,
            "save_load": saved(False), "save_load_weights_only": saved(True)}


@pytest.mark.parametrize("how", sorted(_round_trips(torch)))
@pytest.mark.parametrize("requires_grad", [False, True])
def test_attributes_survive_as_torchs(device, how, requires_grad):
    """Each idiom keeps the attributes torch keeps, with the values, device and requires_grad."""
    t, ref = _tagged(tdx, device).requires_grad_(requires_grad), _tagged(torch).requires_grad_(requires_grad)
    got, want = _round_trips(tdx)[how](t), _round_trips(torch)[how](ref)
    assert _state(got) == _state(want) == {"tag": 1, "meta": {"name": "w", "sizes": [1, 2]}}
    assert got.device == t.device and got.requires_grad == want.requires_grad
    assert (got.meta is t.meta) == (want.meta is ref.meta)  # copy.copy shares the values, the others do not
    assert_close(got.detach(), want.detach(), rtol=0, atol=0)


def test_plain_tensor_pickles_without_state(device):
    """A tensor that never took an attribute pickles as before: no state, an empty __dict__ after."""
    t = tdx.ones(2, device=device)
    assert len(t.__reduce_ex__(4)) == 2
    assert pickle.loads(pickle.dumps(tdx.ones(2, device=device))).__dict__ == {}


@pytest.mark.parametrize("how", sorted(_round_trips(torch)))
def test_parameter_attributes_as_torchs(device, how):
    """Parameters: pickle and save keep their attributes; deepcopy drops them, as torch's Parameter.__deepcopy__."""
    p, ref = tdx.nn.Parameter(tdx.ones(2, device=device)), torch.nn.Parameter(torch.ones(2))
    p.tag = ref.tag = "frozen"
    got, want = _round_trips(tdx)[how](p), _round_trips(torch)[how](ref)
    assert _state(got) == _state(want)
    assert type(got).__name__ == type(want).__name__ == "Parameter"
    assert got.device == p.device


@pytest.mark.parametrize("weights_only", [False, True])
def test_checkpoints_cross_with_torch(device, tmp_path, weights_only):
    """tdx.save's attributes load in torch, torch.save's in tdx, in a state dict and bare."""
    mine, theirs = _tagged(tdx, device), _tagged(torch)
    p = tdx.nn.Parameter(tdx.ones(2, device=device))
    p.tag = 7
    tdx.save({"t": mine, "p": p}, tmp_path / "tdx.pt")
    loaded = torch.load(tmp_path / "tdx.pt", weights_only=weights_only)
    assert _state(loaded["t"]) == _state(theirs) and loaded["p"].tag == 7
    assert type(loaded["p"]) is torch.nn.Parameter
    tp = torch.nn.Parameter(torch.ones(2))
    tp.tag = 7
    torch.save({"t": theirs, "p": tp}, tmp_path / "torch.pt")
    back = tdx.load(tmp_path / "torch.pt", map_location=device, weights_only=weights_only)
    assert _state(back["t"]) == _state(theirs) and back["p"].tag == 7
    assert back["t"].device == tdx.device(device) and isinstance(back["p"], tdx.nn.Parameter)
    assert_close(back["t"], theirs, rtol=0, atol=0)


class Note:
    """An attribute value of a class no safe list names."""

    def __eq__(self, other):
        return type(other).__name__ == "Note"


def test_weights_only_refuses_what_torch_refuses(device, tmp_path):
    """An attribute holding an object of an unlisted class: torch's weights_only load refuses it, so does tdx's;
    both load it with weights_only=False."""
    t, ref = tdx.ones(1, device=device), torch.ones(1)
    t.note = ref.note = Note()
    tdx.save(t, tmp_path / "a.pt")
    torch.save(ref, tmp_path / "b.pt")
    for path in ("a.pt", "b.pt"):
        with pytest.raises(pickle.UnpicklingError, match="Note"):
            torch.load(tmp_path / path, weights_only=True)
        with pytest.raises(pickle.UnpicklingError, match="Note"):
            tdx.load(tmp_path / path, weights_only=True, map_location=device)
        assert tdx.load(tmp_path / path, weights_only=False, map_location=device).note == Note()
        assert torch.load(tmp_path / path, weights_only=False).note == Note()


def test_a_checkpoint_cannot_set_the_tensors_own_slots(device, tmp_path):
    """A (crafted) state naming the tensor's array slot is refused: a file is untrusted input."""
    ref = torch.ones(2)
    ref._n = "not an array"
    torch.save(ref, tmp_path / "x.pt")
    with pytest.raises(pickle.UnpicklingError, match="'_n'"):
        tdx.load(tmp_path / "x.pt", map_location=device)
