"""The view ops' fast paths on a fresh tensor (a tuple of ints and slices, ``x[i]``, ``transpose``,
``permute``, ``reshape``/``view``, ``unsqueeze``) keep torch's view semantics, against torch on CPU:
the strides and storage offset torch reports, writes through the base reaching the view and writes
through the view (or a view of it) reaching the base. On MLX the layout of a tuple-indexed view is
computed only when first read; these tests read it after writes as well as before.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import tdx
from tdx.testing.parity import assert_close

VIEWS = {
    "x[:, 1:]": lambda x: x[:, 1:], "x[1:3, ::2]": lambda x: x[1:3, ::2], "x[2, 1:]": lambda x: x[2, 1:],
    "x[-1, -2]": lambda x: x[-1, -2], "x[:2]": lambda x: x[:2], "x[1]": lambda x: x[1], "x[-3]": lambda x: x[-3],
    "x[(1, slice(None))]": lambda x: x[(1, slice(None))], "x[3:1]": lambda x: x[3:1],
    "transpose": lambda x: x.transpose(0, 1), "transpose(-1, 0)": lambda x: x.transpose(-1, 0),
    "permute": lambda x: x.permute(1, 0), "permute(-1, 0)": lambda x: x.permute((-1, 0)),
    "reshape": lambda x: x.reshape(2, 10), "view": lambda x: x.view(5, 2, 2), "unsqueeze": lambda x: x.unsqueeze(1),
    "unsqueeze(-1)": lambda x: x.unsqueeze(-1),
}


def _pair(device):
    data = np.arange(20, dtype=np.float32).reshape(4, 5)
    return tdx.tensor(data, device=device), torch.tensor(data)


@pytest.mark.parametrize("name", VIEWS)
@pytest.mark.parametrize("when", ["layout first", "write first"])
def test_view_of_a_fresh_tensor_is_torch_s(device, name, when):
    x, t = _pair(device)
    v, w = VIEWS[name](x), VIEWS[name](t)
    if when == "layout first":
        assert v.stride() == w.stride() and v.storage_offset() == w.storage_offset()
        assert v.is_contiguous() == w.is_contiguous()
    x.add_(100)  # through the base: the view sees it
    t.add_(100)
    assert_close(v, w)
    if w.numel():
        v.mul_(-1)  # through the view: the base sees it
        w.mul_(-1)
        assert_close(x, t)
    assert v.stride() == w.stride() and v.storage_offset() == w.storage_offset()
    assert v.is_contiguous() == w.is_contiguous()


@pytest.mark.parametrize("name", ["x[:, 1:]", "x[1:3, ::2]", "x[1]", "transpose", "permute"])
def test_view_of_a_view_writes_through_to_the_base(device, name):
    x, t = _pair(device)
    v, w = VIEWS[name](x).unsqueeze(0).transpose(0, -1), VIEWS[name](t).unsqueeze(0).transpose(0, -1)
    assert v.stride() == w.stride() and v.storage_offset() == w.storage_offset()
    v.fill_(7)
    w.fill_(7)
    assert_close(x, t)
    x[0, 0] = -1  # and back: a write into the base reaches the view of the view
    t[0, 0] = -1
    assert_close(v, w)


@pytest.mark.parametrize("index", [(slice(None), 5), (4, 0), (0, slice(None, None, 0)), (0, 1, 2)])
def test_bad_basic_index_raises_torch_s_error(device, index):
    x, t = _pair(device)
    with pytest.raises(Exception) as want:
        t[index]
    with pytest.raises(want.type):
        x[index]


CHAINS = {  # a view of a fresh tensor's view, as attention layers make them (on MLX both layouts stay lazy)
    "view.transpose": lambda x: x.view(2, 5, 2).transpose(0, 1),
    "view.transpose(-1, 0)": lambda x: x.view(2, 5, 2).transpose(-1, 0),
    "view.transpose[..., :1]": lambda x: x.view(2, 5, 2).transpose(1, 2)[..., :1],
    "view.transpose[..., 1:]": lambda x: x.view(2, 5, 2).transpose(1, 2)[..., 1:],
    "view.transpose[1, None, ::2]": lambda x: x.view(2, 5, 2).transpose(1, 2)[1, None, ::2],
    "x[1:][..., 2:4]": lambda x: x[1:][..., 2:4],
    "x[:, 1:].transpose(1, 0)[-1]": lambda x: x[:, 1:].transpose(1, 0)[-1],
    "transpose.transpose": lambda x: x.transpose(0, 1).transpose(1, 0),
}


@pytest.mark.parametrize("name", CHAINS)
@pytest.mark.parametrize("when", ["layout first", "write first"])
def test_view_of_a_view_of_a_fresh_tensor_is_torch_s(device, name, when):
    x, t = _pair(device)
    v, w = CHAINS[name](x), CHAINS[name](t)
    if when == "layout first":
        assert v.stride() == w.stride() and v.storage_offset() == w.storage_offset()
    x.add_(100)  # through the base: the view sees it
    t.add_(100)
    assert_close(v, w)
    v.mul_(-1)  # through the view: the base sees it
    w.mul_(-1)
    assert_close(x, t)
    assert v.stride() == w.stride() and v.storage_offset() == w.storage_offset()
    assert v.is_contiguous() == w.is_contiguous()
