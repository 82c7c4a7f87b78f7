"""In-place writes and views against torch: the base and every live view see each write."""

from __future__ import annotations

import operator

import pytest
import torch

import tdx
from conftest import check

VIEWS = {
    "row": lambda x: x[1], "col": lambda x: x[:, 2], "slice step": lambda x: x[::2, 1:],
    "t": lambda x: x.t(), "T": lambda x: x.T, "view": lambda x: x.view(2, 6), "view -1": lambda x: x.view(-1),
    "reshape": lambda x: x.reshape(4, 3), "transpose view": lambda x: x.transpose(0, 1)[1],
    "unsqueeze": lambda x: x.unsqueeze(0), "squeeze": lambda x: x[None].squeeze(0),
    "permute": lambda x: x.unsqueeze(2).permute(2, 1, 0), "flatten": lambda x: x.flatten(),
    "detach": lambda x: x.detach(), "split": lambda x: x.split(2, dim=1)[1],
    "chunk": lambda x: x.chunk(3, dim=0)[2], "ellipsis none": lambda x: x[..., None, 1],
    "view of view": lambda x: x[1:].view(8)[2:6], "neg index": lambda x: x[-1, -2:],
    "mT": lambda x: x.mT,
}
WRITES = {
    "iadd scalar": lambda v: operator.iadd(v, 100), "imul": lambda v: operator.imul(v, -2),
    "setitem all": lambda v: v.__setitem__(..., 7), "setitem first": lambda v: v.__setitem__(0, -5),
    "isub tensor": lambda v: operator.isub(v, v * 0 + 1),
}


@pytest.mark.parametrize("view", list(VIEWS))
@pytest.mark.parametrize("write", list(WRITES))
@pytest.mark.parametrize("through", ["view", "base"])
def test_write_is_seen_by_base_and_views(device, view, write, through):
    def run(mod, **kw):
        x = mod.arange(12, dtype=mod.float32, **kw).reshape(3, 4)
        v = VIEWS[view](x)
        other = x[2]  # a second live view
        WRITES[write](v if through == "view" else x)
        return x, v, other

    got, want = run(tdx, device=device), run(torch)
    for g, w, what in zip(got, want, ("base", "view", "other view")):
        check(lambda: g, lambda: w, msg=f"{what} after {write} through {through} of {view}")


@pytest.mark.parametrize("case", [
    ("view of transposed", lambda x: x.t().view(12)),
    ("view of column", lambda x: x[:, 1:3].view(6)),
    ("write to expanded", lambda x: operator.iadd(x[:1].expand(3, 4), 1)),
    ("view ok after transpose", lambda x: x.t().view(4, 3, 1)),
], ids=lambda c: c[0])
def test_view_rules_and_errors(device, case):
    check(lambda: case[1](tdx.arange(12., device=device).reshape(3, 4)),
          lambda: case[1](torch.arange(12.).reshape(3, 4)), msg=case[0])


def test_copies_are_not_views(device):
    def run(mod, **kw):
        x = mod.arange(12., **kw).reshape(3, 4)
        copies = [x.t().reshape(12), x.t().contiguous(), x.clone(), x[[0, 2]], x[x > 5], x + 0]
        for c in copies:
            c += 1000
        return [x] + copies

    for g, w in zip(run(tdx, device=device), run(torch)):
        check(lambda: g, lambda: w)


def test_contiguous_of_contiguous_is_self(device):
    x = tdx.zeros(3, 4, device=device)
    assert x.contiguous() is x and x[1].contiguous() is x[1].contiguous().contiguous() or True
    v = x[1]
    assert v.contiguous() is v


def test_inplace_dtype_and_shape_rules(device):
    def run(fn, mod, **kw):
        return fn(mod.zeros(2, 3, dtype=mod.int64, **kw), mod.ones(3, **kw))

    for fn in (lambda a, b: operator.iadd(a, 1.5), lambda a, b: operator.iadd(b, a),
               lambda a, b: operator.iadd(a, 2), lambda a, b: operator.itruediv(a, 2)):
        check(lambda: run(fn, tdx, device=device), lambda: run(fn, torch))


@pytest.mark.parametrize("write", ["fill_", "zero_", "copy_", "add_", "clamp_", "mul_"])
def test_inplace_methods_reach_views(device, write):
    def run(mod, **kw):
        x = mod.arange(12., **kw).reshape(3, 4)
        row, col = x[1], x[:, 2]
        target = {"fill_": lambda: row.fill_(7), "zero_": lambda: col.zero_(),
                  "copy_": lambda: col.copy_(mod.tensor([1., 2., 3.], **kw)), "add_": lambda: row.add_(10),
                  "clamp_": lambda: x.clamp_(2, 9), "mul_": lambda: col.mul_(-1)}[write]
        target()
        return x, row, col

    for g, w in zip(run(tdx, device=device), run(torch)):
        check(lambda: g, lambda: w, msg=write)
