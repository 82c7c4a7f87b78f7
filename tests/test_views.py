"""In-place writes and views against torch: the base and every live view see each write."""

from __future__ import annotations

import gc
import math
import operator
import weakref

import pytest
import torch

import tdx
from conftest import assert_close, check

VIEWS = {
    "row": lambda x: x[1], "col": lambda x: x[:, 2], "slice step": lambda x: x[::2, 1:],
    "t": lambda x: x.t(), "T": lambda x: x.T, "view": lambda x: x.view(2, 6), "view -1": lambda x: x.view(-1),
    "reshape": lambda x: x.reshape(4, 3), "transpose view": lambda x: x.transpose(0, 1)[1],
    "unsqueeze": lambda x: x.unsqueeze(0), "squeeze": lambda x: x[None].squeeze(0),
    "permute": lambda x: x.unsqueeze(2).permute(2, 1, 0), "flatten": lambda x: x.flatten(),
    "detach": lambda x: x.detach(), "split": lambda x: x.split(2, dim=1)[1],
    "chunk": lambda x: x.chunk(3, dim=0)[2], "ellipsis none": lambda x: x[..., None, 1],
    "view of view": lambda x: x[1:].view(8)[2:6], "neg index": lambda x: x[-1, -2:],
    "mT": lambda x: x.mT, "narrow": lambda x: x.narrow(1, -3, 2), "unbind": lambda x: x.unbind(1)[2],
    "movedim": lambda x: x.unsqueeze(0).movedim((0, 2), (2, 0)), "select": lambda x: x.select(1, -2),
    "unflatten": lambda x: x.unflatten(1, (2, -1)), "diagonal": lambda x: x.diagonal(1),
    "diagonal of t": lambda x: x.t().diagonal(-1, 1, 0), "tensor_split": lambda x: x.tensor_split(3, 1)[1],
    "tensor_split at": lambda x: x.tensor_split([1, 3], 1)[2], "hsplit": lambda x: x.hsplit(2)[1],
    "vsplit": lambda x: x.vsplit([1])[1], "empty slice": lambda x: x[2:2], "empty narrow": lambda x: x.narrow(1, 3, 0),
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

    # (base, view, other view) after the write, or the error torch raises (an empty view has no [0])
    check(lambda: run(tdx, device=device), lambda: run(torch), msg=f"{write} through {through} of {view}")


@pytest.mark.parametrize("view", list(VIEWS))
def test_strides_offsets_and_contiguity_match_torch(device, view):
    def run(mod, **kw):
        v = VIEWS[view](mod.arange(12, dtype=mod.float32, **kw).reshape(3, 4))
        return tuple(v.shape), v.stride(), v.storage_offset(), v.is_contiguous(), v.contiguous().is_contiguous()

    assert run(tdx, device=device) == run(torch), view


@pytest.mark.parametrize("case", [
    ("select out of range", lambda x: x.select(0, 3)),
    ("unflatten bad sizes", lambda x: x.unflatten(1, (3, 2))),
    ("diagonal same dims", lambda x: x.diagonal(0, 1, -1)),
    ("diagonal bad dim", lambda x: x.diagonal(0, 0, 2)),
    ("hsplit indivisible", lambda x: x.hsplit(3)),
    ("vsplit of 1-D", lambda x: x[0].vsplit(2)),
    ("tensor_split zero", lambda x: x.tensor_split(0)),
    ("tensor_split bool", lambda x: x.tensor_split(True)),
    ("movedim of 0-d", lambda x: x[0, 0].movedim(0, -1)),
    ("-0.0 through a view", lambda x: x[1:].mul_(-0.0).signbit()),
    ("tensor_split past the end", lambda x: x.tensor_split([2, 9, 1], 1)),
    ("stride of dim", lambda x: x.t().stride(-1)),
    ("view of transposed", lambda x: x.t().view(12)),
    ("view of column", lambda x: x[:, 1:3].view(6)),
    ("view of a two-row block", lambda x: x[:2, :3].view(6)),
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
    assert x.contiguous() is x
    v = x[1]
    assert v.contiguous() is v and v.contiguous().contiguous() is v
    t = x.t()  # torch copies a non-contiguous tensor: a new tensor, no view of x
    assert t.contiguous() is not t and t.contiguous().is_contiguous()
    c = t.contiguous()
    c += 1
    check(lambda: x, lambda: torch.zeros(3, 4))


def test_more_than_64_live_views_all_see_writes(device):
    """A tensor with 100 live views: a write through the base reaches each, a write through each reaches the base."""
    def run(mod, **kw):
        x = mod.zeros(100, 3, **kw)
        views = [x[i] for i in range(100)] + [x[i:i + 1, 1:] for i in range(100)]
        x += 1
        for i, v in enumerate(views[:100]):
            v[0] = i  # through the 100 row views
        views[-1][0, 0] = -7  # the 200th view
        return [x] + views

    got, want = run(tdx, device=device), run(torch)
    for i, (g, w) in enumerate(zip(got, want)):
        check(lambda: g, lambda: w, msg=f"view {i}")


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


GRAD_WRITES = {**{k: (lambda f: lambda v, y: f(v))(f) for k, f in WRITES.items()},
               "mul_ leaf": lambda v, y: v.mul_(y), "copy_ leaf": lambda v, y: v.copy_(y.expand_as(v)),
               "setitem leaf": lambda v, y: v.__setitem__(..., y * 2)}


@pytest.mark.parametrize("view", [v for v in VIEWS if v != "detach"])
@pytest.mark.parametrize("write", list(GRAD_WRITES))
@pytest.mark.parametrize("through", ["view", "base"])
def test_writes_with_grad_match_torch(device, view, write, through):
    """In-place writes through views of a tensor that requires grad: values and gradients as torch."""
    def run(mod, **kw):
        x = mod.arange(12, dtype=mod.float32, **kw).reshape(3, 4).requires_grad_()
        y = mod.tensor(-1.5, **kw).requires_grad_()
        h = x * 1.5
        v = VIEWS[view](h)
        other = h[2]  # a second live view, made before the write and used after it
        GRAD_WRITES[write](v if through == "view" else h, y)
        ((h * h).sum() + v.sin().sum() + (other ** 2).sum()).backward()
        return h.detach(), v.detach(), x.grad, y.grad if y.grad is not None else mod.zeros(())

    # (base, view, grad of x, grad of y), or the error torch raises (split/chunk views can't be written)
    check(lambda: run(tdx, device=device), lambda: run(torch), msg=f"{write} through {through} of {view}",
          rtol=1e-5, atol=1e-4)


def test_grad_write_errors(device):
    """As torch refuses: writing a view of a leaf that requires grad, writing an expanded view,
    and writing (with grad mode on) a view made in no_grad mode of a tensor that requires grad."""
    for mod, kw in ((tdx, {"device": device}), (torch, {})):
        x = mod.ones(3, 4, **kw).requires_grad_()
        with pytest.raises(RuntimeError, match="view of a leaf Variable"):
            x[0].add_(1)
        with pytest.raises(RuntimeError, match="more than one element"):
            (x * 1)[:1].expand(3, 4).add_(1)
    for mod, kw in ((tdx, {"device": device}), (torch, {})):
        h = mod.ones(3, 4, **kw).requires_grad_() * 2
        with mod.no_grad():
            w = h[0]  # a view made in no_grad mode, written with grad mode on: torch refuses
        with pytest.raises(RuntimeError):
            w.add_(1)


def test_writes_through_data_and_detach_are_untracked(device):
    """``p.data.add_(...)`` and writes through ``detach()`` change the values, unrecorded, as torch's
    (the optimizer idiom of older code)."""
    def run(mod, **kw):
        p = mod.ones(2, 3, **kw).requires_grad_()
        (p * p).sum().backward()
        p.data.add_(p.grad, alpha=-0.5)
        p.detach()[0].mul_(2)
        (p * 3).sum().backward()
        return p.detach(), p.grad, p.requires_grad, p.is_leaf

    got, want = run(tdx, device=device), run(torch)
    check(lambda: got[0], lambda: want[0], msg="values")
    check(lambda: got[1], lambda: want[1], msg="grad")
    assert got[2:] == want[2:]


def test_detach_after_an_inplace_write_of_its_base(device):
    """``detach()`` shares the values of its base but never its gradient, even after the base is
    written in place (and so do views of the detached tensor)."""
    def run(mod, **kw):
        x = mod.ones(3, **kw).requires_grad_()
        y = x * 1
        z = y.detach()
        w = z[1:]
        y.mul_(2)
        (z * x).sum().backward()
        return z.requires_grad, w.requires_grad, x.grad.tolist(), z.tolist(), w.tolist()

    assert run(tdx, device=device) == run(torch)


def _write(index, source):
    """``x[index] = source(x)`` on a 3x4 ``x``; returns ``x``."""
    def run(x):
        x[index] = source(x)
        return x
    return run


OVERLAP_WRITES = {
    "rows from shifted rows": _write(slice(1, None), lambda x: x[:-1]),
    "int and slice": _write((0, slice(1, None)), lambda x: x[0, :-1]),
    "negative int and slice": _write((-1, slice(None, 3)), lambda x: x[-1, 1:]),
    "ellipsis": _write((slice(None, 2), Ellipsis), lambda x: x[1:]),
    "ellipsis then int": _write((Ellipsis, 1), lambda x: x[:, 2]),
    "ellipsis then out-of-range int": _write((Ellipsis, 5), lambda x: x[:, 2]),
    "None, int, ellipsis, int": _write((None, 0, Ellipsis, 1), lambda x: x[1, 2]),
    "too many indices": _write((0, 1, 2), lambda x: x[1, 2]),
    "none and int": _write((None, 0, slice(1, None)), lambda x: x[0, :-1]),
    "whole from its transpose": lambda x: _write(..., lambda y: y.t())(x[1].view(2, 2)),
    "add_ of own transpose": lambda x: x[2].view(2, 2).add_(x[2].view(2, 2).t()),
    "blocks that are not dense": _write((slice(None, 2), slice(None, 2)), lambda x: x[:2, 1:3]),
    # one side not dense: unchecked, as torch's, though the spans (offset to offset + numel) intersect
    "a column into a row": _write((0, slice(1, None)), lambda x: x[:, 0]),
    "a row into a column": _write((slice(None), 0), lambda x: x[0, 1:]),
    "disjoint rows": _write(0, lambda x: x[2]),
    "two ints": _write((1, -1), lambda x: x[0, 0]),
    "the same elements": _write(1, lambda x: x[1] * 2),
    "add_ of the same view": lambda x: x[1].add_(x[1]),
    "a view of the same elements": _write(1, lambda x: x[1]),
    "same elements through a reshape": _write((slice(None), slice(None)), lambda x: x.view(12).view(3, 4)),
    "out-of-range int": _write((5, 0), lambda x: x[0, 1]),
    "out-of-range int, overlapping modulo 3": _write((5, slice(1, None)), lambda x: x[2, :-1]),
}


@pytest.mark.parametrize("case", list(OVERLAP_WRITES))
def test_writes_from_overlapping_memory(device, case):
    """torch refuses a write whose source shares some but not all of the written elements (or the
    same elements with other strides); disjoint or identical memory is written as usual."""
    check(lambda: OVERLAP_WRITES[case](tdx.arange(12., device=device).reshape(3, 4)),
          lambda: OVERLAP_WRITES[case](torch.arange(12.).reshape(3, 4)), msg=case)


@pytest.mark.parametrize("case", [
    ("unsqueeze by None", lambda x: x[None]), ("None after a dim", lambda x: x[:, None]),
    ("None of a view", lambda x: x[1:][None, :, None]),
    ("0-d view as (1, 1)", lambda x: x[1, 2].view(1, 1)), ("0-d view as -1", lambda x: x[2, 1].view(-1)),
    ("0-d view as 0-d", lambda x: x[0, 3].view(())),
    ("empty view as itself", lambda x: x[:0].t().view(4, 0)), ("empty view reshaped", lambda x: x[:, :0].view(0, 3)),
    ("empty transposed as -1", lambda x: x[:0].t().view(-1)),
    ("None, Ellipsis, slice and int", lambda x: x[None, ..., 1:3, 0]),
    ("view of strided columns", lambda x: x[:, ::2].view(6)),  # dims merge across a stride of 2
    ("view of transposed, split by a size-1 dim", lambda x: x.t().view(4, 3, 1)),
    ("view of a column block", lambda x: x[:, 1:3].view(3, 1, 2)),  # two chunks of memory
    ("a one-wide column as a vector", lambda x: x[:, 1:2].view(3)),  # the size-1 dim's stride is ignored
    ("a slice of a bits view", lambda x: x.view(x.int().dtype)[1:, ::2]),  # the slice reads the bits too
], ids=lambda c: c[0])
def test_layouts_of_more_views(device, case):
    """Strides, offsets and shared writes of views torch lays out by special rules (``None`` indices,
    views of 0-d views, views of empty views)."""
    def run(mod, **kw):
        x = mod.arange(12., **kw).reshape(3, 4)
        v = case[1](x)
        layout = (tuple(v.shape), v.stride(), v.storage_offset(), v.is_contiguous())
        v.add_(100)
        return layout, x, v

    got, want = run(tdx, device=device), run(torch)
    assert got[0] == want[0], case[0]
    check(lambda: got[1:], lambda: want[1:], msg=case[0])


@pytest.mark.parametrize("history", ["before detach", "after detach"])
def test_detached_view_does_not_keep_its_base_alive(device, history):
    """``d = t.detach()`` of a tensor with a history, or taken before ``t`` gains one by an in-place op:
    ``d`` keeps sharing the values but holds neither ``t`` nor that history, so both are freed when
    ``t`` is dropped, as torch's."""
    def run(mod, **kw):
        w = mod.full((3,), 2., **kw).requires_grad_()
        if history == "before detach":
            t = w * 3
            d = t.detach()
        else:
            t = mod.zeros(3, **kw) + 1
            d = t.detach()
            t.mul_(w)  # t now has a history
        probe = weakref.ref(t)
        values, has_history = t.tolist(), t.grad_fn is not None  # read without detach(), which moves t itself
        del t
        gc.collect()
        d.add_(1)  # the detached view still works after its base is gone
        return probe() is None, has_history, values, d.tolist(), d.requires_grad

    assert run(tdx, device=device) == run(torch)


def test_detached_view_with_other_live_views_holds_no_history(device):
    """A root with a plain view and a detached one, written in place with a gradient input: the
    detached view's values are held apart from that history (tdx's bookkeeping on MLX), and all
    three show torch's values."""
    from tdx._tensor import views as _views

    def run(mod, **kw):
        t = mod.zeros(3, **kw) + 1
        v, d = t[1:], t.detach()
        t.mul_(mod.full((3,), 2., **kw).requires_grad_())
        if mod is tdx and device.startswith("mlx"):
            assert _views.layout_of(d).root is not t and _views.layout_of(d).root.grad_fn is None
        return t.tolist(), v.tolist(), d.tolist()

    assert run(tdx, device=device) == run(torch)


def test_view_tables_drop_dead_views_and_keep_live_ones(device):
    """A root's table of live views drops the views that died as it grows and keeps the live ones (a write
    through the root still reaches them, as torch's); a root goes once it and its views are dropped."""
    from tdx._tensor import views as _views

    def run(mod, **kw):
        x = mod.arange(6., **kw)
        v = x[1:4]
        for _ in range(300):  # views made and dropped at once
            x[2:].unsqueeze(0)
        w = x[:2].view(2, 1)
        x.add_(10)
        w.mul_(2)
        return x, v, w

    got, want = run(tdx, device=device), run(torch)
    for i, (g, w) in enumerate(zip(got, want)):
        check(lambda: g, lambda: w, msg=f"tensor {i}")
    if device.startswith("mlx"):  # only immutable executors keep tables of views
        x = tdx.arange(6., device=device)
        keep = x[1:]
        for _ in range(300):
            x[2:]
        table = _views._views_of(x)
        assert 0 < len(table) <= 64 and id(keep) in table, len(table)
        root = weakref.ref(x)
        del x, keep, table
        gc.collect()
        assert root() is None


@pytest.mark.parametrize("index", ["list", "tensor", "mask"])
@pytest.mark.parametrize("of_view", [False, True])
def test_advanced_index_is_a_copy_not_a_view(device, index, of_view):
    """``x[[0, 2]]``, ``x[tensor]`` and ``x[mask]`` copy: writing the result leaves ``x`` (and its root) as they
    were, of a root and of a view alike."""
    def run(mod, **kw):
        root = mod.arange(12., **kw).reshape(4, 3)
        x = root[1:] if of_view else root
        idx = {"list": [0, 2], "tensor": mod.tensor([0, 2], **kw),
               "mask": mod.tensor([True, False, True] + ([] if of_view else [False]), **kw)}[index]
        y = x[idx]
        y.fill_(100.0)
        return root, y

    got, want = run(tdx, device=device), run(torch)
    for g, w in zip(got, want):
        check(lambda: g, lambda: w, msg=index)


@pytest.mark.parametrize("of_view", [False, True])
def test_new_trailing_axis_has_torchs_stride(device, of_view):
    """``x[..., None]`` and ``x[0, :, None]``: a new axis after the last dim has stride 1, as torch's; writes
    through it reach ``x``."""
    def run(mod, **kw):
        root = mod.arange(24., **kw).reshape(2, 3, 4)
        x = root[:, 1:] if of_view else root
        a, b = x[..., None], x[0, :, None]
        b.mul_(-1)
        return root, a, b

    got, want = run(tdx, device=device), run(torch)
    for g, w in zip(got, want):
        assert g.stride() == w.stride() and g.storage_offset() == w.storage_offset(), (g.stride(), w.stride())
        check(lambda: g, lambda: w)


@pytest.mark.parametrize("pick", ["index", "slice"])
def test_view_of_a_multi_output_view_refuses_in_place_writes(device, pick):
    """``a, b = h.split(2)`` under autograd: a view of ``a`` (``a[0]``, ``a[1:]``) inherits torch's refusal
    of in-place writes to one of several views a function returns."""
    def run(mod, **kw):
        h = mod.ones(4, 3, requires_grad=True, **kw) * 1
        a, _ = h.split(2)
        v = a[0] if pick == "index" else a[1:]
        v.add_(1)

    with pytest.raises(RuntimeError, match="output of a function that returns multiple views"):
        run(torch)
    with pytest.raises(RuntimeError, match="output of a function that returns multiple views") as info:
        run(tdx, device=device)
    assert isinstance(info.value, tdx.TdxError)


# in-place ops between slices that touch (adjacent memory, no element shared) are no overlap: torch writes them;
# slices sharing one element are a partial overlap torch refuses. Rows, columns and 1-d runs, each op.
_TOUCHING = {
    "x[:3].copy_(x[3:])": lambda x: x[:3].copy_(x[3:]),
    "x[3:].copy_(x[:3])": lambda x: x[3:].copy_(x[:3]),
    "x[:3].add_(x[3:])": lambda x: x[:3].add_(x[3:]),
    "x[3:].sub_(x[:3])": lambda x: x[3:].sub_(x[:3]),
    "x[:3].mul_(x[3:])": lambda x: x[:3].mul_(x[3:]),
    "x[:3].div_(x[3:])": lambda x: x[:3].div_(x[3:]),
    "x[:3] += x[3:]": lambda x: x[:3].__iadd__(x[3:]),
    "x[3:] = x[:3]": lambda x: x.__setitem__(slice(3, None), x[:3]),
    "x[:3].clamp_(max=x[3:])": lambda x: x[:3].clamp_(max=x[3:]),
    "x[:3].lerp_(x[3:], 0.5)": lambda x: x[:3].lerp_(x[3:], 0.5),
    "x[:3].addcmul_(x[3:], x[3:])": lambda x: x[:3].addcmul_(x[3:], x[3:]),
    "rows: m[0].add_(m[1])": lambda x: x.view(2, 3)[0].add_(x.view(2, 3)[1]),
    "rows: m[1].copy_(m[0])": lambda x: x.view(2, 3)[1].copy_(x.view(2, 3)[0]),
    "cols: m[:, :1].mul_(m[:, 1:2])": lambda x: x.view(3, 2)[:, :1].mul_(x.view(3, 2)[:, 1:2]),
    "one element shared: x[:4].copy_(x[3:])": lambda x: x[:4].copy_(x[2:]),
    "one element shared: x[2:].add_(x[:4])": lambda x: x[2:].add_(x[:4]),
}


# with grad, torch refuses at backward an op whose derivative saved the other slice (its version moved with the
# write, as views share one version counter): the tape refuses it too


@pytest.mark.parametrize("grad", [False, True])
@pytest.mark.parametrize("case", list(_TOUCHING))
def test_inplace_between_touching_slices(device, case, grad):
    def run(lib, **kw):
        leaf = lib.arange(1.0, 7.0, requires_grad=grad, **kw)
        x = leaf * 1 if grad else leaf
        _TOUCHING[case](x)
        if grad:
            x.sum().backward()
            return x.detach(), leaf.grad
        return x

    check(lambda: run(tdx, device=device), lambda: run(torch), msg=case)


# views that read the same memory as another dtype: writes through either side reach the other ---------------
def _complex_base(mod, **kw):
    return mod.view_as_complex(mod.arange(24, dtype=mod.float32, **kw).reshape(3, 4, 2) - 7)


def _float_base(mod, **kw):
    return mod.arange(12, dtype=mod.float32, **kw).reshape(3, 4) - 5


def _bytes_base(mod, **kw):
    return mod.arange(24, dtype=mod.uint8, **kw).reshape(3, 8)


def _bf16_base(mod, **kw):
    return (mod.arange(12, dtype=mod.float32, **kw).reshape(3, 4) - 5).bfloat16()


REINTERPRET = {  # name: (base, the view of it)
    "view_as_real": (_complex_base, lambda z, m: m.view_as_real(z)),
    "view_as_real of t, sliced": (_complex_base, lambda z, m: m.view_as_real(z.t())[1:, :, 0]),
    "real": (_complex_base, lambda z, m: z.real), "imag": (_complex_base, lambda z, m: z.imag),
    "imag of row": (_complex_base, lambda z, m: z[1].imag), "real of t": (_complex_base, lambda z, m: z.t().real),
    "complex as float32": (_complex_base, lambda z, m: z.view(m.float32)),
    "view_as_complex": (_float_base, lambda x, m: m.view_as_complex(x.view(3, 2, 2))),
    "view_as_complex of cols": (_float_base, lambda x, m: m.view_as_complex(x[:, 2:].unflatten(1, (1, 2)))),
    "float32 as int32": (_float_base, lambda x, m: x.view(m.int32)),
    "float32 as uint8": (_float_base, lambda x, m: x.view(m.uint8)),
    "float32 cols as int16": (_float_base, lambda x, m: x[:, 2:].view(m.int16)),
    "float32 as complex": (_float_base, lambda x, m: x.view(m.complex64)),
    "uint8 as int32": (_bytes_base, lambda x, m: x.view(m.int32)),
    "uint8 cols as float32": (_bytes_base, lambda x, m: x[:, 4:].view(m.float32)),
    "uint8 as int16 as int32 of t": (_bytes_base, lambda x, m: x.view(m.int16).view(m.int32).t()),
    "bfloat16 as int16": (_bf16_base, lambda x, m: x.view(m.int16)),
    "int16 of bfloat16 row": (_bf16_base, lambda x, m: x[2].view(m.int16)),
}
REINTERPRET_WRITES = {
    "iadd": lambda v: operator.iadd(v, 3), "fill_": lambda v: v.fill_(2), "zero_": lambda v: v.zero_(),
    "setitem first": lambda v: v.__setitem__(0, 1), "setitem last col": lambda v: v.__setitem__((..., -1), 4),
    "imul": lambda v: operator.imul(v, 2),
}


def _comparable(t, mod):
    """``t`` as real numbers of its own bits (complex as pairs, bfloat16 as int16): compared exactly."""
    if t.dtype.is_complex:
        return mod.view_as_real(t)
    return t.view(mod.int16) if t.dtype == mod.bfloat16 else t


@pytest.mark.parametrize("view", list(REINTERPRET))
@pytest.mark.parametrize("write", list(REINTERPRET_WRITES))
@pytest.mark.parametrize("through", ["view", "base"])
def test_reinterpreting_view_shares_memory(device, view, write, through):
    """view_as_real/view_as_complex/real/imag/view(dtype) are views: a write through either side is seen."""
    def run(mod, **kw):
        make, see = REINTERPRET[view]
        base = make(mod, **kw)
        v = see(base, mod)
        other = see(base, mod)  # a second live view of the same kind
        REINTERPRET_WRITES[write](v if through == "view" else base)
        return (*(_comparable(t, mod) for t in (base, v, other)), v.stride(), v.storage_offset())

    got, want = run(tdx, device=device), run(torch)
    for g, w in zip(got[:3], want[:3]):
        assert_close(g, w, rtol=0, atol=0, msg=f"{write} through {through} of {view}")
    assert got[3:] == want[3:], view


def test_random_fills_through_view_as_real_reach_the_complex_tensor(device):
    """``view_as_real(z).uniform_()`` and ``z.imag.normal_()`` fill z (torch.testing.make_tensor's idiom)."""
    z = tdx.zeros(4, 3, dtype=tdx.complex64, device=device)
    r = tdx.view_as_real(z)
    r.uniform_(1, 2)
    assert bool((tdx.view_as_real(z) >= 1).all()) and bool((tdx.view_as_real(z) == r).all())
    z.imag.normal_()
    assert bool((z.real >= 1).all()) and bool((r[..., 1] == z.imag).all()) and bool((z.imag < 1).any())
    assert_close(z, torch.complex(torch.tensor(r[..., 0].tolist()), torch.tensor(r[..., 1].tolist())))


REINTERPRET_ERRORS = {
    "stride -1 not 1": lambda m: m.ones(4, 3).t().view(m.float16),
    "offset not divisible": lambda m: m.ones(6, dtype=m.uint8)[1:5].view(m.int16),
    "size not divisible": lambda m: m.ones(3, dtype=m.uint8).view(m.int16),
    "stride not divisible": lambda m: m.ones(3, 6, dtype=m.uint8)[:, :4].view(m.int32),
    "as_complex last stride": lambda m: m.view_as_complex(m.ones(2, 3).t()),
    "as_complex odd stride": lambda m: m.view_as_complex(m.ones(3, 3)[:, :2]),
    "as_complex odd offset": lambda m: m.view_as_complex(m.ones(7)[1:3]),
    "as_complex even offset": lambda m: m.view_as_complex(m.ones(4, 2)[1:]),
}


@pytest.mark.parametrize("case", list(REINTERPRET_ERRORS))
def test_reinterpreting_view_layout_rules_match_torch(device, case):
    """torch's refusals (typed, same message) and layouts for reading a strided tensor as another dtype."""
    try:
        want = REINTERPRET_ERRORS[case](torch)
    except RuntimeError as err:
        with pytest.raises(tdx.TdxError) as info:
            REINTERPRET_ERRORS[case](tdx)
        assert isinstance(info.value, RuntimeError) and str(info.value) == str(err)
        return
    got = REINTERPRET_ERRORS[case](tdx)
    assert (tuple(got.shape), got.stride(), got.storage_offset()) == (tuple(want.shape), want.stride(),
                                                                      want.storage_offset())


def test_reinterpreting_views_under_autograd_match_torch(device):
    """Gradients through view_as_real/view_as_complex/real/imag, and through a write into view_as_real of a
    tensor that requires grad, are torch's."""
    def run(mod, **kw):
        zr = mod.tensor([[1.0, -2.0], [0.5, 3.0], [2.0, 1.0]], requires_grad=True, **kw)
        z = mod.view_as_complex(zr * 1)
        y = z * (1 - 2j)
        r = mod.view_as_real(y)
        r[1:, 1].mul_(3)  # a write through the view: y changes
        loss = (y.real * 2 + y.imag ** 2).sum() + (mod.view_as_real(z) ** 3).sum()
        loss.backward()
        return y.detach(), zr.grad

    got, want = run(tdx, device=device), run(torch)
    assert_close(got[0], want[0])
    assert_close(got[1], want[1])


def test_view_dtype_writes_are_not_recorded_as_torchs(device):
    """``view(dtype)`` carries no gradient in torch: writing through it into a tensor that requires grad (a
    leaf or not) is allowed and untracked; the base's own later writes are tracked."""
    def run(mod, **kw):
        x = mod.ones(2, 2, requires_grad=True, **kw)
        x.view(mod.int32).add_(1)  # a leaf's bits change; no error, no history
        y = x * 2
        y.view(mod.uint8)[:, :2].zero_()
        y.mul_(3)
        (y * y).sum().backward()
        return x.detach(), y.detach(), x.grad, x.view(mod.float32).requires_grad

    got, want = run(tdx, device=device), run(torch)
    for g, w in zip(got[:3], want[:3]):
        assert_close(g, w, rtol=0, atol=0)
    assert got[3] is want[3] is False


@pytest.mark.parametrize("shape, dims, new", [((1, 8, 1, 32), (1, 2), (1, 1, 256)), ((2, 8, 1, 4), (1, 2), (2, 1, 32)),
                                              ((3, 1, 4), (0, 1), (4, 3)), ((2, 3, 1), (1, 2), (6,)),
                                              ((2, 3, 4), (0, 1), (24,)), ((2, 3, 4), (1, 2), (6, 4))])
def test_reshape_of_a_transpose_is_a_view_where_torch_makes_one(device, shape, dims, new):
    """``x.transpose(a, b).reshape(...)``: where the swapped dims keep the memory order (a dim of one element, as an
    attention output over one query has) a view of ``x`` with torch's strides, so a write through it reaches ``x``
    and the transpose; where the order changes, a copy that leaves them as they were, as torch's."""
    def run(mod, **kw):
        base = mod.arange(float(math.prod(shape)), **kw).reshape(shape)
        v = base.transpose(*dims)
        r = v.reshape(new)
        r.mul_(2)
        return base, v, r, r.stride(), r.is_contiguous()

    got, want = run(tdx, device=device), run(torch)
    for i, (g, w) in enumerate(zip(got[:3], want[:3])):
        check(lambda: g, lambda: w, msg=f"tensor {i}")
    assert got[3:] == want[3:]
