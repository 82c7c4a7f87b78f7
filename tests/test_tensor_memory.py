"""Tensor methods about gradients' hooks and memory, on every device, against torch on CPU.

``register_hook`` (torch executors natively, MLX through the tape: the gradient a hook sees
and the one it substitutes), storages and data pointers (the "do these share memory" checks
users write), ``set_``, ``resize``, ``new`` and the legacy typed tensor and storage classes.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import tdx
from conftest import torch_twin
from tdx.testing.parity import assert_close

X = np.array([[0.5, -1.25, 2.0], [3.0, 0.75, -2.5]], dtype=np.float32)


def _both(device, arr=X, requires_grad=False):
    return (tdx.tensor(arr, device=device, requires_grad=requires_grad),
            torch.tensor(arr, requires_grad=requires_grad))


# --- register_hook ---------------------------------------------------------------------------------------------

def _hooked_graph(m, x):
    """Hooks on a leaf (doubling), an intermediate (recording) and the output (adding 1)."""
    seen = []
    handle = x.register_hook(lambda g: (seen.append(("x", g.tolist())), g * 2)[1])
    y = x * x
    y.register_hook(lambda g: seen.append(("y", g.tolist())))
    z = y + 3 * y.sin()
    z.register_hook(lambda g: g + 1)
    z.sum().backward()
    return seen, handle


def test_register_hook_sees_and_replaces_gradients(device):
    x, t = _both(device, requires_grad=True)
    seen, handle = _hooked_graph(tdx, x)
    seen_t, handle_t = _hooked_graph(torch, t)
    assert [s[0] for s in seen] == [s[0] for s in seen_t] == ["y", "x"]
    for (_, got), (_, want) in zip(seen, seen_t):
        assert_close(tdx.tensor(got), torch.tensor(want), rtol=1e-6, atol=1e-6)
    assert_close(x.grad, t.grad, rtol=1e-6, atol=1e-6)
    handle.remove()
    handle.remove()  # idempotent, as torch's
    handle_t.remove()
    x.grad, t.grad = None, None
    (x * x).sum().backward()
    (t * t).sum().backward()
    assert_close(x.grad, t.grad, rtol=1e-6, atol=1e-6)  # the removed hook no longer doubles


def test_register_hook_on_a_leaf_sees_the_total_gradient_once(device):
    for m, dev in ((tdx, device), (torch, "cpu")):
        w = m.tensor([1.0, 2.0], device=dev, requires_grad=True)
        calls = []
        w.register_hook(lambda g: calls.append(g.tolist()))
        (w * 3 + w * w).sum().backward()  # two uses of w: one hook call with their sum
        if m is tdx:
            got = calls
        else:
            assert calls == got


def test_register_hook_changes_what_flows_further_back_and_autograd_grad(device):
    results = []
    for m, dev in ((tdx, device), (torch, "cpu")):
        w = m.tensor([1.0, -2.0, 0.5], device=dev, requires_grad=True)
        u = w * 3
        u.register_hook(lambda g: g * 10)
        u.retain_grad()
        (g,) = m.autograd.grad((u * u).sum(), [w], retain_graph=True)
        (u * u).sum().backward()
        results.append((g.tolist(), w.grad.tolist()))
    assert results[0] == results[1]


def test_register_hook_needs_requires_grad_and_the_right_shape(device):
    with pytest.raises(RuntimeError, match="doesn't require gradient") as info:
        tdx.zeros(2, device=device).register_hook(lambda g: g)
    assert isinstance(info.value, tdx.TdxError)
    x = tdx.ones(3, device=device, requires_grad=True)
    x.register_hook(lambda g: g[:2])
    with pytest.raises(RuntimeError) as info:
        (x * 2).sum().backward()
    assert isinstance(info.value, tdx.TdxError)


@pytest.mark.parametrize("returned", [2.0, [1.0, 1.0, 1.0], X[0]], ids=["float", "list", "ndarray"])
def test_register_hook_returning_a_non_tensor_is_a_type_error(device, returned):
    """A hook on a leaf or on a non-leaf that returns neither a Tensor nor None: torch's TypeError."""
    for where in ("leaf", "non-leaf"):
        for m, dev in ((tdx, device), (torch, "cpu")):
            x = m.ones(3, device=dev, requires_grad=True)
            h = x if where == "leaf" else x * 2
            h.register_hook(lambda g: returned)
            with pytest.raises(TypeError) as info:
                (h * h).sum().backward()
            assert m is torch or isinstance(info.value, tdx.TdxError), where


# --- storages and pointers -------------------------------------------------------------------------------------

def test_data_ptr_and_storage_follow_views(device):
    x, t = _both(device)
    for m, a in ((tdx, x), (torch, t)):
        row = a[1]
        col = a[:, 2]
        assert row.data_ptr() - a.data_ptr() == 3 * 4  # the second row starts 12 bytes in
        assert col.data_ptr() - a.data_ptr() == 2 * 4
        if m is tdx or hasattr(torch.Tensor, "const_data_ptr"):  # torch 2.11 binds none in Python; 2.13 does
            assert a.const_data_ptr() == a.data_ptr() and row.const_data_ptr() == row.data_ptr()
        assert row.untyped_storage().data_ptr() == a.untyped_storage().data_ptr()
        assert row.untyped_storage().nbytes() == 24
        assert a.clone().untyped_storage().data_ptr() != a.untyped_storage().data_ptr()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch warns (once) that TypedStorage is deprecated
        st_t = t.storage()
    st = x.storage()
    assert (st.size(), len(st), st.element_size(), st.nbytes()) == (st_t.size(), len(st_t), st_t.element_size(),
                                                                    st_t.nbytes())
    assert st.dtype is tdx.float32 and st.device == x.device and st.tolist() == st_t.tolist()
    assert x.storage_type() is tdx.FloatStorage and tdx.is_storage(st) and not tdx.is_storage(x)
    assert tdx.zeros(2, dtype=tdx.int64, device=device).storage_type() is tdx.LongStorage


def test_storage_classes_construct_as_torchs():
    for name in ("FloatStorage", "DoubleStorage", "LongStorage", "ByteStorage", "BoolStorage"):
        ours, theirs = getattr(tdx, name)([1, 0, 1]), getattr(torch, name)([1, 0, 1])
        assert ours.tolist() == theirs.tolist() and ours.size() == theirs.size()
        assert str(ours.dtype).split(".")[1] == str(theirs.dtype).split(".")[1]
    assert tdx.UntypedStorage(5).nbytes() == torch.UntypedStorage(5).nbytes() == 5
    assert issubclass(tdx.FloatStorage, tdx.TypedStorage) and tdx.Storage is tdx.TypedStorage
    with pytest.raises(TypeError):
        tdx.UntypedStorage(-1)


def test_set_shares_memory_as_torchs(device):
    got = []
    for m, dev in ((tdx, device), (torch, "cpu")):
        a = m.arange(6.0, device=dev)
        b = m.zeros(2, device=dev)
        b.set_(a)
        b[1] = 50.0
        c = m.zeros(1, device=dev)
        c.set_(a.untyped_storage(), 2, (2, 2), (1, 2))
        d = m.zeros(1, device=dev)
        d.set_(a[1:4])
        e = m.ones(3, device=dev)
        e.set_()
        got.append((a.tolist(), b.is_set_to(a), c.tolist(), d.tolist(), tuple(e.shape), a.is_set_to(c)))
    assert got[0] == got[1]
    with pytest.raises(RuntimeError) as info:
        tdx.zeros(2, device=device).set_(tdx.zeros(2, dtype=tdx.int64, device=device))
    assert isinstance(info.value, tdx.TdxError)


def test_resize_and_resize_as(device):
    x, t = _both(device)
    with pytest.warns(UserWarning, match="non-inplace resize is deprecated"):
        assert_close(x.resize(3, 2), t.resize(3, 2))
    with pytest.warns(UserWarning, match="non-inplace resize_as is deprecated"):
        assert_close(x.resize_as(tdx.zeros(6, device=device)), t.resize_as(torch.zeros(6)))
    with pytest.raises(RuntimeError) as info, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        x.resize(4, 2)
    assert isinstance(info.value, tdx.TdxError)


def test_shared_and_pinned_memory(device):
    x = tdx.ones(3, device=device)
    t = torch.ones(3, device=torch_twin(device))  # torch counts CUDA memory as shared (IPC-ready), host memory not
    assert x.is_shared() is t.is_shared() and x.is_pinned() is t.is_pinned() is False
    if x._ex.name == "torch":
        assert x.share_memory_() is x and x.is_shared() is True
    else:
        with pytest.raises(RuntimeError):
            x.share_memory_()
    if not torch.cuda.is_available():
        with pytest.raises(RuntimeError) as info:
            x.pin_memory()
        assert isinstance(info.value, tdx.TdxError)


# --- legacy constructors ---------------------------------------------------------------------------------------

@pytest.mark.float64
def test_new_builds_in_the_same_dtype_and_device(device):
    x = tdx.zeros(2, dtype=tdx.float64, device=device)
    t = torch.zeros(2, dtype=torch.float64)
    for args in ((), (2, 3), ([1, 2],), (torch.Size([4]),)):
        ours = x.new(*[tdx.Size(a) if isinstance(a, torch.Size) else a for a in args])
        theirs = t.new(*args)
        assert tuple(ours.shape) == tuple(theirs.shape) and ours.dtype is tdx.float64 and ours.device == x.device
    assert x.new([1, 2]).tolist() == t.new([1, 2]).tolist()


@pytest.mark.parametrize("name", ["FloatTensor", "DoubleTensor", "LongTensor", "IntTensor", "ByteTensor",
                                  "BoolTensor", "HalfTensor", "ShortTensor", "CharTensor", "BFloat16Tensor"])
@pytest.mark.float64
def test_legacy_tensor_types(name, device):
    tdx.set_default_device(device)
    try:
        ours, theirs = getattr(tdx, name)([1, 0, 2]), getattr(torch, name)([1, 0, 2])
        empty = getattr(tdx, name)(2, 3)
    finally:
        tdx.set_default_device("cpu")
    assert ours.tolist() == theirs.tolist() and ours.device == tdx.device(device)
    assert str(ours.dtype).split(".")[1] == str(theirs.dtype).split(".")[1]
    assert tuple(empty.shape) == (2, 3)
    # torch.FloatTensor... are torch's CPU types: a tensor on cuda is an instance of none (torch.cuda.FloatTensor)
    on_twin = torch.tensor([1, 0, 2], dtype=theirs.dtype, device=torch_twin(device))
    assert isinstance(ours, getattr(tdx, name)) is isinstance(on_twin, getattr(torch, name))
    assert isinstance(theirs, getattr(torch, name))
    other = "LongTensor" if name != "LongTensor" else "FloatTensor"
    assert not isinstance(ours, getattr(tdx, other)) and not isinstance(theirs, getattr(torch, other))


def test_set_default_tensor_type():
    before = tdx.get_default_dtype()
    try:
        with pytest.warns(UserWarning):
            torch.set_default_tensor_type(torch.DoubleTensor)
        tdx.set_default_tensor_type(tdx.DoubleTensor)
        assert tdx.ones(1).dtype is tdx.float64 and torch.ones(1).dtype is torch.float64
        tdx.set_default_tensor_type("torch.FloatTensor")
        assert tdx.get_default_dtype() is tdx.float32
        with pytest.raises(TypeError) as info:
            tdx.set_default_tensor_type(tdx.LongTensor)
        assert isinstance(info.value, tdx.TdxError)
    finally:
        tdx.set_default_dtype(before)
        torch.set_default_dtype(torch.float32)
