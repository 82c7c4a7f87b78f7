"""Every refusal of ``tdx/aliasing/refused.py`` is of a name the installed torch has, at the path the refusal
names, and its message says tdx does not support it, never that torch lacks it: walked group by group against
real torch."""

from __future__ import annotations

import importlib

import pytest
import torch

import tdx
from tdx._errors import UnsupportedOpError
from tdx.aliasing import refused as R

_ABSENCE = ("no such name", "does not exist", "torch has no", "not a torch name", "torch lacks")


def _message_of(refusal) -> str:
    """The text a refusal raises when used (called, or instantiated for a class)."""
    with pytest.raises(UnsupportedOpError) as info:
        refusal()
    return str(info.value)


def _check(owner: str, name: str, refusal) -> None:
    text = _message_of(refusal)
    assert text.startswith(f"{owner}.{name} is not supported by tdx ("), text
    assert not any(claim in text for claim in _ABSENCE), text


def _module(path: str):
    try:
        return importlib.import_module(path)
    except ImportError:
        return None


def test_torch_names_exist_in_torch():
    """``torch.*`` refusals: torch has each name; tdx's refusal names it as unsupported."""
    missing = sorted(n for n in R.TORCH if not hasattr(torch, n))
    assert missing == []
    for name in sorted(R.TORCH):
        _check("torch", name, getattr(tdx, name))


def test_tensor_methods_exist_in_torch():
    """``torch.Tensor`` refusals: torch's Tensor has each method."""
    assert sorted(n for n in R.TENSOR if not hasattr(torch.Tensor, n)) == []
    t = tdx.zeros(1)
    for name in sorted(R.TENSOR):
        _check("Tensor", name, getattr(t, name))


def test_refused_modules_exist_in_torch():
    """Whole-module refusals: each module path imports under torch."""
    assert sorted(p for p in R.MODULES if _module(p) is None) == []


@pytest.mark.parametrize("path", sorted(R._NAMESPACE_GROUPS))
def test_namespace_names_exist_in_torch(path):
    """Refusals in torch's other namespaces: torch's module at that path has each name, and tdx's module at the
    same path refuses it by that path."""
    theirs = _module(path)
    assert theirs is not None, path
    names = sorted(R.namespace_names(path))
    assert [n for n in names if not hasattr(theirs, n)] == []
    mine = importlib.import_module("tdx" + path[len("torch"):])
    for name in names:
        _check(path, name, getattr(mine, name))


def test_methods_and_scripted_attributes_exist_in_torch():
    """Refused methods of other classes and TorchScript-only attributes are torch's."""
    from torch.utils.tensorboard import SummaryWriter

    owners = {"SummaryWriter": SummaryWriter}
    for key in R.METHODS:
        owner, name = key.split(".")
        assert hasattr(owners[owner], name), key
    scripted = torch.jit.script(torch.nn.Linear(2, 2))
    assert sorted(n for n in R.SCRIPTED if not hasattr(scripted, n)) == []


def test_the_walk_can_fail():
    """A refusal of a name torch lacks is seen: the checks above are not vacuous."""
    assert not hasattr(torch, "no_such_torch_function")
    bogus = R._refused_function("torch", "no_such_torch_function", R.TORCH["quantize_per_tensor"])
    with pytest.raises(AssertionError):
        _check("torch", "no_such_torch_function", lambda: (_ for _ in ()).throw(UnsupportedOpError(
            "torch.no_such_torch_function does not exist in torch")))
    _check("torch", "no_such_torch_function", bogus)  # the message form alone passes; the hasattr walk catches it
