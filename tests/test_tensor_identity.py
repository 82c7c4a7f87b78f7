"""Tensor predicates, in-place fills and the small top-level builders, on every device, against torch on CPU.

``is_*`` predicates and their ``torch.*`` forms, ``get_device``, ``dim_order``, ``as_subclass``,
``module_load``, ``random_``, ``fill_diagonal_``, ``apply_``/``map_``/``map2_`` (cpu only, as
torch's), the foreign-device moves, the ``*_copy`` view forms, ``slice_inverse``, ``range``,
``vander`` and ``frombuffer``.
"""

from __future__ import annotations

import array
import warnings

import numpy as np
import pytest
import torch

import tdx
from conftest import torch_twin
from tdx.testing.parity import assert_close

X = np.array([[0.5, -1.25, 2.0], [3.0, 0.0, -2.5]], dtype=np.float32)


def _both(device, arr=X, dtype="float32"):
    return (tdx.tensor(arr, dtype=getattr(tdx, dtype), device=device), torch.tensor(arr).to(getattr(torch, dtype)))


@pytest.mark.parametrize("dtype", ["float32", "int64", "uint8", "bool", "int8"])
def test_predicates(device, dtype):
    x, t = _both(device, dtype=dtype)
    assert x.is_signed() == t.is_signed() == tdx.is_signed(x) == torch.is_signed(t)
    assert x.is_neg() == t.is_neg() == tdx.is_neg(x)
    assert x.is_inference() == t.is_inference() == tdx.is_inference(x)
    assert x.is_distributed() == t.is_distributed() == tdx.is_distributed(x)
    assert x.is_same_size(x[0:1]) == t.is_same_size(t[0:1]) and tdx.is_same_size(x, x) == torch.is_same_size(t, t)
    for v in ([0], [3], [True]):
        a, b = _both(device, np.array(v), dtype)
        assert a.is_nonzero() == b.is_nonzero() == tdx.is_nonzero(a)
    for bad in (np.zeros((0,)), np.zeros((2,))):
        a, b = _both(device, bad, dtype)
        with pytest.raises(RuntimeError):
            b.is_nonzero()
        with pytest.raises(RuntimeError) as info:
            a.is_nonzero()
        assert isinstance(info.value, tdx.TdxError)


def test_is_neg_follows_torchs_lazy_negation():
    z = tdx.tensor([1 + 2j])
    assert z.conj().imag.is_neg() == torch.tensor([1 + 2j]).conj().imag.is_neg()


@pytest.mark.float64
def test_get_device_dim_order_and_strided_answers(device):
    x, t = _both(device)
    on_twin = t.to(torch_twin(device))  # -1 for host memory (cpu, MLX's), the ordinal on cuda
    assert x.get_device() == tdx.get_device(x) == on_twin.get_device() == torch.get_device(on_twin)
    for a, b in ((x, t), (x.t(), t.t()), (x.unsqueeze(0).expand(3, 2, 3), t.unsqueeze(0).expand(3, 2, 3))):
        assert a.dim_order() == b.dim_order()
    y, u = tdx.zeros(2, 1, 3, device=device), torch.zeros(2, 1, 3)
    with pytest.raises(RuntimeError):
        u.dim_order(ambiguity_check=True)
    with pytest.raises(RuntimeError) as info:
        y.dim_order(ambiguity_check=True)
    assert isinstance(info.value, tdx.TdxError)
    assert x.to_dense() is x and t.to_dense() is t
    assert x.to_dense(tdx.float64).dtype is tdx.float64
    assert (x.dense_dim(), x.sparse_dim()) == (t.dense_dim(), t.sparse_dim())


def test_as_subclass_and_module_load(device):
    class Mine(tdx.Tensor):
        pass

    x, t = _both(device)
    s = x.as_subclass(Mine)
    assert type(s) is Mine and s.tolist() == x.tolist() and s.data_ptr() == x.data_ptr()
    with pytest.raises(TypeError) as info:
        x.as_subclass(int)
    assert isinstance(info.value, tdx.TdxError)
    y, u = tdx.zeros(2, 3, device=device), torch.zeros(2, 3)
    out, out_t = y.module_load(x), u.module_load(t)
    assert_close(out, out_t) and assert_close(y, u)  # the default copies into self
    assert y.module_load(x, assign=True).tolist() == u.module_load(t, assign=True).tolist()


@pytest.mark.float64
def test_random_(device):
    for dtype, args, lo, hi in (("float32", (), 0, 2 ** 24), ("float32", (5,), 0, 4), ("int64", (-3, 4), -3, 3),
                                ("uint8", (), 0, 255), ("bool", (), 0, 1), ("float64", (2, 10), 2, 9)):
        tdx.manual_seed(0)
        x = tdx.zeros(2000, device=device, dtype=getattr(tdx, dtype))
        out = x.random_(*args)
        assert out is x and x.dtype is getattr(tdx, dtype)
        v = x.to(tdx.float64)
        assert lo <= v.min().item() and v.max().item() <= hi
        assert v.unique().numel() > 1 and (v == v.round()).all().item()
    with pytest.raises(RuntimeError) as info:
        tdx.zeros(2, device=device).random_(5, 5)
    assert isinstance(info.value, tdx.TdxError)
    with pytest.raises(RuntimeError):
        torch.zeros(2).random_(5, 5)


@pytest.mark.parametrize("shape,wrap", [((3, 3), False), ((5, 2), False), ((7, 3), True), ((2, 5), True),
                                        ((3, 3, 3), False)])
def test_fill_diagonal_(device, shape, wrap):
    x, t = tdx.zeros(shape, device=device), torch.zeros(shape)
    assert x.fill_diagonal_(4.5, wrap=wrap) is x
    t.fill_diagonal_(4.5, wrap=wrap)
    assert_close(x, t)
    for bad in ((3,), (2, 3, 3)):
        with pytest.raises(RuntimeError):
            torch.zeros(bad).fill_diagonal_(1)
        with pytest.raises(RuntimeError) as info:
            tdx.zeros(bad, device=device).fill_diagonal_(1)
        assert isinstance(info.value, tdx.TdxError)


def test_apply_map_map2_are_cpu_only_as_torchs(device):
    x, t = _both(device)
    y, u = _both(device, X[::-1].copy())
    if tdx.device(device).type != "cpu" or device.startswith("mlx"):
        with pytest.raises(TypeError) as info:
            x.apply_(lambda v: v * 2)
        assert isinstance(info.value, tdx.TdxError)
        return
    assert_close(x.apply_(lambda v: v * 2 + 1), t.apply_(lambda v: v * 2 + 1))
    assert_close(x.map_(y, lambda a, b: a - b), t.map_(u, lambda a, b: a - b))
    assert_close(x.map2_(y, y[0], lambda a, b, c: a * b + c), t.map2_(u, u[0], lambda a, b, c: a * b + c))


def test_hardshrink_and_prelu_methods(device):
    x, t = _both(device)
    assert_close(x.hardshrink(1.0), t.hardshrink(1.0))
    assert_close(x.hardshrink(), t.hardshrink())
    w, wt = tdx.tensor([0.25], device=device), torch.tensor([0.25])
    assert_close(x.prelu(w), t.prelu(wt))


def test_foreign_device_moves_raise_torchs_errors(device):
    x, t = _both(device)
    for op in ("xpu", "mtia"):
        with pytest.raises(AssertionError):
            getattr(t, op)()
        with pytest.raises(AssertionError) as info:
            getattr(x, op)()
        assert isinstance(info.value, tdx.TdxError)
    with pytest.raises(RuntimeError) as info:
        x.ipu()
    assert isinstance(info.value, tdx.TdxError)
    with pytest.raises(RuntimeError, match="reinforce"):
        t.reinforce(1.0)
    with pytest.raises(RuntimeError, match="reinforce") as info:
        x.reinforce(1.0)
    assert isinstance(info.value, tdx.TdxError)
    with pytest.raises(RuntimeError):  # torch: "unknown parameter type" (None is no Stream), on every device
        t.to(torch_twin(device)).record_stream(None)
    with pytest.raises(RuntimeError) as info:  # tdx: no stream off CUDA (NotImplementedError), torch's error on it
        x.record_stream(None)
    assert isinstance(info.value, tdx.TdxError)


def test_view_copies(device):
    x, t = _both(device)
    pairs = [(tdx.select_copy(x, 1, 2), torch.select_copy(t, 1, 2)),
             (tdx.slice_copy(x, 1, 0, 3, 2), torch.slice_copy(t, 1, 0, 3, 2)),
             (tdx.detach_copy(x), torch.detach_copy(t))]
    pairs += list(zip(tdx.split_copy(x, 2, 1), torch.split_copy(t, 2, 1)))
    pairs += list(zip(tdx.unsafe_split_with_sizes(x, [1, 2], 1), torch.unsafe_split_with_sizes(t, [1, 2], 1)))
    pairs += list(zip(x.unsafe_split_with_sizes([2, 1], 1), t.unsafe_split_with_sizes([2, 1], 1)))
    c, ct = tdx.view_as_complex_copy(x[:, :2].contiguous()), torch.view_as_complex_copy(t[:, :2].contiguous())
    pairs += [(c, ct), (tdx.view_as_real_copy(c), torch.view_as_real_copy(ct))]
    for got, want in pairs:
        assert_close(got, want)
    copy = tdx.select_copy(x, 0, 0)
    copy[0] = 99.0
    assert x[0, 0].item() == 0.5  # a copy, not a view


def test_slice_inverse(device):
    a, at = _both(device, np.arange(24.0, dtype=np.float32).reshape(6, 4))
    for args in ((0, 1, 5, 2), (1, 0, 4, 3)):
        index = [slice(None)] * 2
        index[args[0]] = slice(*args[1:])
        got = tdx.slice_inverse(a[tuple(index)], a, *args)
        want = torch.slice_inverse(at[tuple(index)], at, *args)
        assert_close(got, want)
        assert_close(a[tuple(index)].slice_inverse(a, *args), want)


@pytest.mark.float64
def test_range_vander_frombuffer(device):
    tdx.set_default_device(device)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for args, kw in (((1, 4), {}), ((0, 1, 0.1), {}), ((-1, 1, 0.25), {}), ((1, 4), {"dtype": "int64"}),
                             ((3, 0, -0.5), {"dtype": "float64"})):
                got = tdx.range(*args, **{k: getattr(tdx, v) for k, v in kw.items()})
                want = torch.range(*args, **{k: getattr(torch, v) for k, v in kw.items()})
                assert_close(got, want, rtol=0, atol=0)
                assert got.device == tdx.device(device)
        with pytest.warns(UserWarning, match="deprecated"):
            tdx.range(0, 2)
        with pytest.raises(RuntimeError) as info, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tdx.range(0, 2, -1)
        assert isinstance(info.value, tdx.TdxError)
    finally:
        tdx.set_default_device("cpu")
    for dtype, vals in (("float32", [1.5, -2.0, 0.5, 3.0]), ("float64", [0.1, 0.2, 0.3]), ("int32", [1, 2, 3, 0]),
                        ("bool", [True, False]), ("int64", [2, -3])):
        x, t = _both(device, np.array(vals), dtype)
        for n, inc in ((None, False), (5, False), (3, True), (0, False), (1, True)):
            got, want = tdx.vander(x, n, inc), torch.vander(t, n, inc)
            assert_close(got, want, rtol=1e-6 if dtype == "float32" else 1e-12)
    buf = bytearray(np.arange(5, dtype=np.int32).tobytes())
    got, want = tdx.frombuffer(buf, dtype=tdx.int32, count=2, offset=4), torch.frombuffer(buf, dtype=torch.int32,
                                                                                           count=2, offset=4)
    assert_close(got, want)
    buf[4] = 9  # both share the buffer's memory
    assert got.tolist() == want.tolist() == [9, 2]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch warns that a bytes object is not writable
        assert_close(tdx.frombuffer(array.array("f", [1.5, 2.5]), dtype=tdx.float32),
                     torch.frombuffer(array.array("f", [1.5, 2.5]), dtype=torch.float32))
    for kw in ({"count": 7}, {"offset": 20}, {"count": 0}):
        with pytest.raises(ValueError):
            torch.frombuffer(buf, dtype=torch.int32, **kw)
        with pytest.raises(ValueError) as info:
            tdx.frombuffer(buf, dtype=tdx.int32, **kw)
        assert isinstance(info.value, tdx.TdxError)


def test_dim_order_of_permuted_and_expanded_layouts(device):
    base, base_t = _both(device, np.zeros((2, 3, 4, 5), dtype=np.float32))
    for perm in ((0, 2, 3, 1), (3, 2, 1, 0), (1, 0, 2, 3)):
        assert base.permute(perm).dim_order() == base_t.permute(perm).dim_order()
    e, et = base[:, :1].expand(2, 3, 4, 5), base_t[:, :1].expand(2, 3, 4, 5)
    assert e.dim_order() == et.dim_order()
    assert base[:, ::2].dim_order() == base_t[:, ::2].dim_order()


@pytest.mark.float64
def test_from_file(tmp_path, device):
    path = str(tmp_path / "values.bin")
    np.arange(10, dtype=np.float32).tofile(path)
    for kw in ({"size": 4}, {"size": 3, "dtype": "int32"}, {"size": 0}, {"size": 5, "dtype": "float64"}):
        ours = tdx.from_file(path, **{k: getattr(tdx, v) if k == "dtype" else v for k, v in kw.items()},
                             device=device)
        theirs = torch.from_file(path, **{k: getattr(torch, v) if k == "dtype" else v for k, v in kw.items()})
        assert_close(ours, theirs, rtol=0, atol=0)
        assert ours.device == tdx.device(device)
    mapped = tdx.from_file(path, True, 10)
    mapped[0] = 42.0  # shared: the write reaches the file, as torch's
    assert torch.from_file(path, False, 2).tolist() == [42.0, 1.0]
    with pytest.raises(RuntimeError):
        torch.from_file(path, size=11)
    with pytest.raises(RuntimeError) as info:
        tdx.from_file(path, size=11)
    assert isinstance(info.value, tdx.TdxError)


METADATA = '''
x = torch.tensor([[0.5, -1.25, 2.0], [3.0, 0.0, -2.5]], device=DEV)
v = x.view(3, 2)
row = v[0]
h = torch.ones(4, dtype=torch.float16, device=DEV)
leaf = torch.tensor([1.0, 2.0], device=DEV, requires_grad=True)
mid = leaf * 2
mid.retain_grad()
first, second = (leaf * 3).split(1)
OUT = {
    "itemsize": (x.itemsize, h.itemsize, x.long().itemsize, x.bool().itemsize),
    "nbytes": (x.nbytes, row.nbytes, h.nbytes, x[:, :0].nbytes),
    "is_view": (x._is_view(), v._is_view(), row._is_view(), x.detach()._is_view(), x.t()._is_view(),
                (x + 1)._is_view(), x.clone()._is_view()),
    "base_values": (v._base.tolist(), row._base.tolist(), x._base is None),
    "retains_grad": (leaf.retains_grad, mid.retains_grad, (leaf * 5).retains_grad),
    "output_nr": (leaf.output_nr, mid.output_nr, first.output_nr, second.output_nr),
    "flags": (x.is_xla, x.is_xpu, x.is_ipu, x.is_maia, x.is_mtia, x.is_vulkan),
    "aliases": (mid._grad_fn.name(), leaf._grad, x.name, x._is_zerotensor(), torch.complex(x, -x)._conj().tolist(),
                x._neg_view().tolist(), (x > 0)._is_all_true().item(), (x > 0)._is_any_true().item()),
    "reversed": (reversed(x).tolist(), [r.tolist() for r in reversed(x[0])], reversed(x[0, 0]).tolist()),
}
try:
    del x[0]
except TypeError as err:
    OUT["del"] = str(err)
'''


def test_size_view_and_autograd_metadata_as_torchs(device):
    """``itemsize``, ``nbytes``, ``_is_view``/``_base``, ``retains_grad``, ``output_nr``, the ``is_<device>``
    flags of absent devices, ``reversed(t)`` and ``del t[i]``: torch's answers on every device."""
    mine, theirs = {"torch": tdx, "DEV": device}, {"torch": torch, "DEV": "cpu"}
    for ns in (mine, theirs):
        exec(compile(METADATA, "<metadata program>", "exec"), ns)  # noqa: S102 - the test's own program, twice
    assert mine["OUT"] == theirs["OUT"]
    x = tdx.ones(2, 3, device=device)
    assert x.view(3, 2)._base.data_ptr() == x.data_ptr() or device.startswith("mlx")
    if device.startswith("mlx"):  # a view's base is the very tensor (on torch executors, a new one over its memory)
        assert x.view(3, 2)._base is x and x[0].view(3)._base is x
