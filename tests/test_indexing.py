"""Basic and advanced indexing, and ``__setitem__``, against torch on CPU."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import tdx
from conftest import check, pair, sample, skip_value_checked
from tdx.testing.parity import assert_close

INDEX_CASES = [
    ("int", lambda m: 1), ("neg int", lambda m: -1), ("slice", lambda m: slice(1, 3)),
    ("slice step", lambda m: slice(None, None, 2)), ("neg slice", lambda m: slice(-2, None)),
    ("tuple", lambda m: (slice(None), 0)), ("ellipsis", lambda m: (Ellipsis, 1)),
    ("none", lambda m: None), ("none mid", lambda m: (0, None, slice(None))),
    ("list", lambda m: [0, 2]), ("list neg", lambda m: [-1, 0, 0]),
    ("tensor", lambda m: m.tensor([2, 0])), ("tensor 2d", lambda m: m.tensor([[0, 1], [2, 2]])),
    ("bool mask", lambda m: m.tensor([True, False, True])),
    ("bool mask 2d", lambda m: m.tensor([[True, False, True, False]] * 3)),
    ("adv pair", lambda m: (m.tensor([0, 2]), m.tensor([1, 3]))),
    ("adv split by slice", lambda m: (m.tensor([0, 2]), slice(None), m.tensor([1, 0]))),
    ("adv after slice", lambda m: (slice(None), m.tensor([3, 0]))),
    ("ellipsis adv", lambda m: (Ellipsis, m.tensor([1, 1]))),
    ("out of range", lambda m: 5), ("neg out of range", lambda m: -4),
    ("tensor out of range", lambda m: m.tensor([0, 3])), ("too many", lambda m: (0, 0, 0, 0)),
    ("neg step", lambda m: slice(None, None, -1)), ("float tensor", lambda m: m.tensor([0.0])),
    ("empty list", lambda m: []), ("0-d int tensor", lambda m: m.tensor(1)),
    # masks away from dim 0, and around an ellipsis (which counts the dims a mask consumes)
    ("mask after slice", lambda m: (slice(None), m.tensor([True, False, True, True]))),
    ("mask after int", lambda m: (1, m.tensor([False, True, True, False]))),
    ("ellipsis mask", lambda m: (Ellipsis, m.tensor([True, False, False, True]))),
    ("mask ellipsis", lambda m: (m.tensor([True, False, True]), Ellipsis)),
    ("2d mask ellipsis", lambda m: (m.tensor([[True, False, True, False]] * 3), Ellipsis)),
    ("ellipsis 2d mask none", lambda m: (Ellipsis, m.tensor([[False, True, True, False]] * 3), None)),
    ("mask wrong size", lambda m: (slice(None), m.tensor([True, False, True]))),
    ("slice step 1", lambda m: slice(0, 3, 1)),
    ("out of range by one", lambda m: 3), ("mask then bad int", lambda m: (m.tensor([True, False, True]), 4)),
    ("tensor of x's shape", lambda m: m.tensor([[[(i + j + k) % 3 for k in range(5)] for j in range(4)]
                                                for i in range(3)])),
    # scalar bools: an index tensor of shape (1,) or (0,) over a new axis, broadcast with the others
    ("0-d bool true", lambda m: m.tensor(True)), ("0-d bool false", lambda m: m.tensor(False)),
    ("py true", lambda m: True), ("py false", lambda m: False), ("py bools", lambda m: (True, m.tensor(False))),
    ("0-d bool after slice", lambda m: (slice(None), m.tensor(False))),
    ("0-d bool with int", lambda m: (m.tensor(True), 1)), ("0-d bool ellipsis", lambda m: (Ellipsis, m.tensor(True))),
    ("0-d bool with tensor", lambda m: (m.tensor(True), m.tensor([0, 2]))),
    ("0-d bool false split", lambda m: (m.tensor(False), slice(1, None), m.tensor([0]))),
    # slices without a step (the executor's getitem_slices): clamped bounds, empty results, too many dims
    ("slices", lambda m: (slice(None), slice(1, None))), ("slices clamped", lambda m: (slice(-10, 10), slice(5, 2))),
    ("slices past the end", lambda m: (slice(3, None), slice(None), slice(7, 9))),
    ("too many slices", lambda m: (slice(None),) * 4), ("slice step none", lambda m: slice(1, None, None)),
    ("empty tuple", lambda m: ()),
    # a range reads as the list of its values (transformers indexes with one)
    ("range", lambda m: range(2)), ("range step", lambda m: (slice(None), range(1, 4, 2))),
    ("range with int", lambda m: (range(1, 3), 0)), ("empty range", lambda m: range(0)),
    # a list holding a tensor, a sequence, a slice, None or Ellipsis is read as a tuple (torch warns it is deprecated);
    # a list of numbers is an index tensor (floats cut toward zero, bools and ints mixed: ints)
    ("list int none", lambda m: [0, None]), ("list none int", lambda m: [None, 0]), ("list none", lambda m: [None]),
    ("list int ellipsis", lambda m: [0, Ellipsis]), ("list ellipsis", lambda m: [Ellipsis]),
    ("list ellipsis none", lambda m: [Ellipsis, None]), ("list int slice", lambda m: [1, slice(1, 3)]),
    ("list slice int", lambda m: [slice(None), 0]), ("list int list", lambda m: [0, [0, 2]]),
    ("list none list", lambda m: [None, [0, 1]]), ("list of a list", lambda m: [[0, 2]]),
    ("list of a 2d list", lambda m: [[[0, 1], [1, 2]]]), ("list of a mask list", lambda m: [[True, False, True]]),
    ("list int 0-d tensor", lambda m: [0, m.tensor(1)]), ("list tensor none", lambda m: [m.tensor([0, 2]), None]),
    ("list bool none", lambda m: [True, None]), ("list false none", lambda m: [False, None]),
    ("list one bool", lambda m: [True]), ("list bool int", lambda m: [True, 0]),
    ("list floats", lambda m: [1.7, -1.5]),
    ("tuple in a tuple", lambda m: (slice(None), (0, 3))), ("list of a tuple", lambda m: [(0, 2)]),
    # more than one Ellipsis: each spans the dims the others leave, so torch reads a later one as spanning
    # none where nothing but Ellipsis follows it, and refuses an index after it
    ("ellipsis none ellipsis", lambda m: (Ellipsis, None, Ellipsis)),
    ("ellipsis int ellipsis", lambda m: (Ellipsis, 0, Ellipsis)),
    ("int ellipsis int ellipsis", lambda m: (0, Ellipsis, 1, Ellipsis)),
    ("ellipses", lambda m: (Ellipsis, Ellipsis, Ellipsis)),
    ("ellipsis list ellipsis", lambda m: (Ellipsis, [0, 1], Ellipsis)),
    ("ellipsis slice ellipsis", lambda m: (Ellipsis, slice(1, None), Ellipsis)),
    ("ellipsis mask ellipsis", lambda m: (Ellipsis, m.tensor([True, False, True, False, True]), Ellipsis)),
    ("ellipsis int ellipsis int", lambda m: (Ellipsis, 0, Ellipsis, 0)),
    ("ellipsis none ellipsis none", lambda m: (Ellipsis, None, Ellipsis, None)),
    ("ellipses spanning none", lambda m: (0, Ellipsis, 1, Ellipsis, 2, Ellipsis, None)),
    ("none ellipsis none", lambda m: (None, Ellipsis, None)),
    ("ellipsis 0-d bool ellipsis", lambda m: (Ellipsis, m.tensor(True), Ellipsis)),
]


VALUE_CHECKED = {"tensor out of range"}  # an index tensor's values: checked inside the kernel on CUDA


def _index(case, module, device):
    def tensor(v):
        return module.tensor(v, device=device) if module is tdx else module.tensor(v)

    class M:
        pass

    m = M()
    m.tensor = tensor
    return case[1](m)


@pytest.mark.filterwarnings("ignore:Using a non-tuple sequence")  # torch's deprecation of a list read as a tuple
@pytest.mark.parametrize("case", INDEX_CASES, ids=lambda c: c[0])
@pytest.mark.parametrize("dtype", ["float32", "int64"])
def test_getitem(device, case, dtype):
    if case[0] in VALUE_CHECKED:
        skip_value_checked(device, case[0])
    x, t = pair(sample((3, 4, 5), dtype, seed=30), device, dtype)
    check(lambda: x[_index(case, tdx, device)], lambda: t[_index(case, torch, device)], msg=case[0])


SET_CASES = [c for c in INDEX_CASES if c[0] not in ("neg step", "float tensor", "empty list")]


@pytest.mark.filterwarnings("ignore:Using a non-tuple sequence")  # torch's deprecation of a list read as a tuple
@pytest.mark.parametrize("case", SET_CASES, ids=lambda c: c[0])
@pytest.mark.parametrize("value", ["scalar", "float scalar", "tensor"])
def test_setitem(device, case, value):
    if case[0] in VALUE_CHECKED:
        skip_value_checked(device, case[0])
    x, t = pair(sample((3, 4, 5), "float32", seed=31), device, "float32")
    xi, ti = _index(case, tdx, device), _index(case, torch, device)

    def run(a, idx, mod):
        a = a.clone()
        v = {"scalar": 7, "float scalar": -1.5}.get(value)
        if v is None:
            v = mod.tensor([100.0, 200.0, 300.0, 400.0, 500.0])
            if mod is tdx:
                v = v.to(device)
        a[idx] = v
        return a

    check(lambda: run(x, xi, tdx), lambda: run(t, ti, torch), msg=f"{case[0]} = {value}")


def test_setitem_through_a_full_length_index(device):
    """``x[perm] = values``: an integer index as long as ``x`` scatters, as torch's (it is no mask)."""
    x, t = pair(np.arange(5.0), device, "float32")
    perm = [3, 0, 4, 1, 2]
    x[tdx.tensor(perm, device=device)] = tdx.tensor([10.0, 20.0, 30.0, 40.0, 50.0], device=device)
    t[torch.tensor(perm)] = torch.tensor([10.0, 20.0, 30.0, 40.0, 50.0])
    check(lambda: x, lambda: t)


@pytest.mark.parametrize("idx", [[0, 3], [-4, 1]])
def test_index_tensor_out_of_range_names_the_index(device, idx):
    """The error names the offending index, dimension and size, in torch's words."""
    skip_value_checked(device, "an index tensor's values")
    x, t = pair(np.arange(6.0).reshape(3, 2), device, "float32")
    with pytest.raises(IndexError) as want:
        t[torch.tensor(idx)]
    with pytest.raises(IndexError) as got:
        x[tdx.tensor(idx, device=device)]
    assert isinstance(got.value, tdx.TdxError) and str(got.value) == str(want.value)


def test_setitem_casts_to_destination_dtype(device):
    x, t = pair(np.arange(6).reshape(2, 3), device, "int64")
    x[0] = 2.7
    t[0] = 2.7
    check(lambda: x, lambda: t)
    x[x > 3] = 0
    t[t > 3] = 0
    check(lambda: x, lambda: t)


def test_setitem_other_device_raises(device):
    other = "mlx:cpu" if device == "cpu" else "cpu"
    if not any(r.device == other and r.available for r in tdx.backends.available()):
        pytest.skip(f"{other} unavailable")
    x = tdx.zeros(3, device=device)
    with pytest.raises(RuntimeError, match="same device"):  # (a 0-d CPU value is torch's scalar operand: taken)
        x[0:1] = tdx.ones((1,), device=other)


@pytest.mark.parametrize("dtype, edges", [("int8", (-128, 127)), ("uint8", (0, 255)), ("int16", (-2 ** 15, 2 ** 15 - 1)),
                                          ("int32", (-2 ** 31, 2 ** 31 - 1)), ("int64", (-2 ** 63, 2 ** 63 - 1))])
def test_fill_values_at_the_integer_range_edges(device, dtype, edges):
    """The range's ends fill; one past either end raises torch's overflow error kind (int64's below -2**63
    left out: torch raises a bare OverflowError from its Python int conversion there)."""
    x, t = pair(np.arange(6).reshape(2, 3), device, dtype)
    mx_, mt = x > 2, t > 2
    for v in (*edges, edges[1] + 1) + ((edges[0] - 1,) if dtype != "int64" else ()):
        check(lambda: x.masked_fill(mx_, v), lambda: t.masked_fill(mt, v), msg=f"masked_fill {dtype} {v}")


def test_index_select_names_the_bad_index(device):
    skip_value_checked(device, "index_select's indices")
    x = tdx.arange(6.0, device=device)
    for bad in ([0, -1, 2], [1, 6]):
        with pytest.raises(IndexError) as info:
            x.index_select(0, tdx.tensor(bad, device=device))
        assert isinstance(info.value, tdx.TdxError)
        if device.startswith("mlx"):
            assert f"index {bad[1] if bad[1] < 0 else 6}" in str(info.value), str(info.value)


@pytest.mark.parametrize("size,fill", [(4, -1), (1, 7), (0, -1), (3, 5)])
def test_nonzero_static(device, size, fill):
    a = np.array([[0, 1, 0], [2, 0, 3]])
    expected = torch.nonzero_static(torch.tensor(a), size=size, fill_value=fill)
    got = tdx.nonzero_static(tdx.tensor(a, device=device), size=size, fill_value=fill)
    assert got.dtype is tdx.int64 and tuple(got.shape) == tuple(expected.shape)
    np.testing.assert_array_equal(got.cpu().numpy(), expected.numpy())
    method = tdx.tensor(a, device=device).nonzero_static(size=size, fill_value=fill)
    np.testing.assert_array_equal(method.cpu().numpy(), expected.numpy())
    empty = tdx.nonzero_static(tdx.zeros(3, device=device), size=2)
    np.testing.assert_array_equal(empty.cpu().numpy(), torch.nonzero_static(torch.zeros(3), size=2).numpy())


@pytest.mark.parametrize("value", [2 + 0j, 1 + 2j, 1.5, -3])
def test_masks_and_fill_scalar_kinds(device, value):
    """A complex fill without an imaginary part fills a float tensor; one with an imaginary part raises
    torch's error kind, as do masks that are not bool (masked_fill and masked_select)."""
    x, t = pair(sample((2, 3), "float32", seed=32), device, "float32")
    check(lambda: x.masked_fill(x > 0, value), lambda: t.masked_fill(t > 0, value), msg=f"masked_fill {value}")
    check(lambda: x.masked_select((x > 0).long()), lambda: t.masked_select((t > 0).long()), msg="int mask")


def test_bad_index_roll_of_a_0d_tensor(device):
    """Rolling a 0-d tensor along a dim raises torch's IndexError (typed), naming the dim."""
    x, t = pair(np.array(1.5), device, "float32")
    check(lambda: x.roll(1, 0), lambda: t.roll(1, 0), msg="roll 0-d")
    with pytest.raises(IndexError, match="Dimension specified as -1 but tensor has no dimensions"):
        x.roll(2, -1)
    check(lambda: x.roll(1), lambda: t.roll(1), msg="roll 0-d without dims")


def test_gather_scatter_of_0d_tensors(device):
    """0-d self, index and src: gather, scatter, scatter_add and scatter_reduce as torch's."""
    x, t = pair(np.array(1.5), device, "float32")
    s, ts = pair(np.array(-4.0), device, "float32")
    i, ti = pair(np.array(0), device, "int64")
    check(lambda: x.gather(0, i), lambda: t.gather(0, ti), msg="gather")
    check(lambda: x.scatter(0, i, s), lambda: t.scatter(0, ti, ts), msg="scatter")
    check(lambda: x.scatter(0, i, 2.5), lambda: t.scatter(0, ti, 2.5), msg="scatter value")
    check(lambda: x.scatter_add(0, i, s), lambda: t.scatter_add(0, ti, ts), msg="scatter_add")
    check(lambda: x.scatter_reduce(0, i, s, "amax"), lambda: t.scatter_reduce(0, ti, ts, "amax"), msg="amax")


@pytest.mark.parametrize("index", [(slice(None), slice(1, None)), (slice(1, None),), (slice(None), slice(None), slice(0, 1))])
def test_slices_of_an_empty_tensor_and_writes_through_them(device, index):
    for shape in ((0, 3, 2), (2, 3, 2)):
        x, t = pair(np.arange(np.prod(shape), dtype=np.float32).reshape(shape), device, "float32")
        check(lambda: x[index], lambda: t[index], msg=str(shape))
        x[index].fill_(-1.0)
        t[index].fill_(-1.0)
        assert_close(x, t, msg=f"{shape}: the write through the view")


@pytest.mark.parametrize("index", [slice(None), slice(0, 1), (slice(None),)])
def test_a_slice_of_a_0d_tensor_is_refused_as_torch(device, index):
    x, t = pair(np.array(1.5, dtype=np.float32), device, "float32")
    check(lambda: x[index], lambda: t[index], msg=str(index))
    with pytest.raises(IndexError) as info:
        x[index]
    with pytest.raises(IndexError) as theirs:
        t[index]
    assert str(info.value) == str(theirs.value)


@pytest.mark.parametrize("index", [(Ellipsis, None), (Ellipsis, None, Ellipsis), (None, Ellipsis, None),
                                   (Ellipsis, Ellipsis), (Ellipsis, None, Ellipsis, None), (Ellipsis, slice(1, None)),
                                   (Ellipsis, 0, Ellipsis), [None], [Ellipsis, None], [None, None]], ids=repr)
@pytest.mark.filterwarnings("ignore:Using a non-tuple sequence")
def test_getitem_and_setitem_of_a_0d_tensor(device, index):
    """A 0-d tensor takes None and Ellipsis (any number of them) and refuses a slice or an int, as torch's."""
    x, t = pair(np.float32(3.5), device, "float32")
    check(lambda: x[index], lambda: t[index], msg=repr(index))

    def write(a):
        a = a.clone()
        a[index] = -1.0
        return a

    check(lambda: write(x), lambda: write(t), msg=f"{index!r} = -1")


@pytest.mark.parametrize("index", [[0, None], [Ellipsis, 1], [slice(1, None), 0], (Ellipsis, None, Ellipsis),
                                   (0, Ellipsis, 1, Ellipsis)], ids=repr)
def test_tuple_like_indices_are_views(device, index):
    """``x[[0, None]]`` and ``x[..., None, ...]`` are basic indices: views whose writes reach ``x``, with torch's
    strides; a list read as a tuple warns as torch's does."""
    x, t = pair(sample((3, 4, 5), "float32", seed=32), device, "float32")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        v, w = x[index], t[index]
    assert any("non-tuple sequence" in str(s.message) for s in seen) == isinstance(index, list), seen
    assert v.stride() == w.stride() and v.storage_offset() == w.storage_offset()
    v.mul_(-2)
    w.mul_(-2)
    assert_close(x, t)
