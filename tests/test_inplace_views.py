"""In-place view ops (``squeeze_``, ``unsqueeze_``, ``transpose_``, ``t_``, ``swapaxes_``, ``as_strided_``)
and conversions taking ``memory_format=``, against torch on CPU.

An in-place view op changes the tensor's own shape and keeps it a view of the same memory: writes
through it reach its base and the other views, and theirs reach it, on every device.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import tdx
from tdx.testing.parity import assert_close

OPS = {
    "squeeze_": lambda x: x.unsqueeze_(1).squeeze_(1), "squeeze_ all": lambda x: x.unsqueeze_(0).unsqueeze_(2).squeeze_(),
    "squeeze_ dims": lambda x: x.unsqueeze_(0).unsqueeze_(2).squeeze_((0, 2)), "unsqueeze_": lambda x: x.unsqueeze_(-1),
    "transpose_": lambda x: x.transpose_(0, 1), "t_": lambda x: x.t_(), "swapaxes_": lambda x: x.swapaxes_(1, 0),
    "swapdims_": lambda x: x.swapdims_(0, -1), "as_strided_": lambda x: x.as_strided_((2, 2), (1, 3), 1),
}


def _lib_run(lib, device, op, write):
    """(base, in-place viewed tensor, another view) after ``op`` and a write through one of them."""
    base = lib.arange(12.0).reshape(3, 4)
    if lib is tdx:
        base = base.to(device)
    x = base[1:]  # a view whose memory starts inside base's
    other = base[:, 1]
    y = OPS[op](x)
    assert y is x
    if write == "through result":
        x.mul_(-1)
    elif write == "through base":
        base.add_(100)
    elif write == "through other view":
        other.fill_(-7)
    return base, x, other


@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("write", ["none", "through result", "through base", "through other view"])
def test_inplace_view_of_a_view_aliases(device, op, write):
    got = _lib_run(tdx, device, op, write)
    expected = _lib_run(torch, device, op, write)
    for g, e, what in zip(got, expected, ("base", "result", "other view")):
        assert_close(g, e, rtol=0, atol=0, msg=f"{op} {write}: {what}")
    assert tuple(got[1].shape) == tuple(expected[1].shape)


@pytest.mark.parametrize("op", ["transpose_", "t_", "unsqueeze_", "as_strided_"])
def test_inplace_view_of_a_root_with_live_views(device, op):
    def run(lib):
        base = lib.arange(12.0).reshape(3, 4)
        if lib is tdx:
            base = base.to(device)
        row = base[2]
        OPS[op](base)
        row.fill_(-1)  # the row's memory is still the old third row
        base.mul_(2)
        return base, row

    for g, e in zip(run(tdx), run(torch)):
        assert_close(g, e, rtol=0, atol=0, msg=op)


def test_inplace_view_ops_refuse_like_torch(device):
    x = tdx.zeros(2, 3, 4, device=device)
    with pytest.raises(RuntimeError, match="expects a tensor with <= 2 dimensions"):
        x.t_()  # 3-D
    with pytest.raises(IndexError):
        x.transpose_(0, 3)
    leaf = tdx.ones(2, 3, device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        leaf.t_()
    with pytest.raises(RuntimeError, match="out of bounds"):
        tdx.zeros(4, device=device).as_strided_((3,), (2,))
    for err in (x.t_, lambda: x.transpose_(0, 3), lambda: leaf.t_()):
        with pytest.raises(tdx.TdxError):
            err()


@pytest.mark.float64
def test_inplace_view_op_is_differentiable(device):
    w = np.arange(6.0).reshape(2, 3)
    a = tdx.tensor(w, device=device, requires_grad=True)
    ta = torch.tensor(w, requires_grad=True)
    for lib, leaf in ((tdx, a), (torch, ta)):
        y = leaf * 3
        y.t_().unsqueeze_(0)
        (y * lib.arange(6.0).reshape(1, 3, 2).to(leaf.device if lib is torch else device)).sum().backward()
    assert_close(a.grad, ta.grad, rtol=0, atol=0)


CONVERSIONS = ["float", "double", "half", "bfloat16", "int", "long", "short", "char", "byte", "bool", "cfloat"]


@pytest.mark.parametrize("name", CONVERSIONS)
@pytest.mark.parametrize("fmt", ["preserve_format", "contiguous_format", "channels_last"])
def test_conversion_accepts_memory_format(device, name, fmt):
    if name == "double" and not tdx.backends.get(device).caps.float64:
        pytest.skip(f"{device} has no float64")
    arr = (np.arange(-12, 12).reshape(1, 2, 3, 4) / 4).astype(np.float32)  # exact in float32
    got = getattr(tdx.tensor(arr, device=device), name)(memory_format=getattr(tdx, fmt))
    expected = getattr(torch.tensor(arr), name)(memory_format=getattr(torch, fmt))
    assert_close(got, expected, rtol=0, atol=0)
    moved = tdx.tensor(arr, device=device).to(tdx.float32, memory_format=getattr(tdx, fmt))
    assert_close(moved, torch.tensor(arr).to(torch.float32, memory_format=getattr(torch, fmt)), rtol=0, atol=0)


@pytest.mark.parametrize("fmt, ndim", [("channels_last", 3), ("channels_last_3d", 4), ("channels_last", 5)])
def test_conversion_refuses_channels_last_of_another_rank(device, fmt, ndim):
    x = tdx.zeros(*(2,) * ndim, device=device)
    with pytest.raises(RuntimeError, match=f"required rank {4 if fmt == 'channels_last' else 5}") as info:
        x.float(memory_format=getattr(tdx, fmt))
    assert isinstance(info.value, tdx.TdxError)
    with pytest.raises(RuntimeError):
        torch.zeros(*(2,) * ndim).float(memory_format=getattr(torch, fmt))
    with pytest.raises(tdx.TdxError, match="required rank"):
        x.to(tdx.float64, memory_format=getattr(tdx, fmt))
    with pytest.raises(TypeError):
        x.double(memory_format="channels_last")
