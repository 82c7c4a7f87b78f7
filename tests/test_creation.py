"""Factory functions, conversions and printing against torch on CPU."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest
import torch

import tdx
from conftest import check

DATA = [[1, 2, 3], [1.5, -2.0], [True, False], 3, 2.5, True, [[1, 2], [3, 4]], [], [[True, 1], [0, 1]],
        np.arange(6, dtype=np.int32).reshape(2, 3), np.array([1.5, 2.5]), np.array(3.0), [1, 2.5]]


@pytest.mark.parametrize("data", DATA, ids=lambda d: repr(d)[:30])
@pytest.mark.float64
def test_tensor_infers_dtype_like_torch(device, data):
    check(lambda: tdx.tensor(data, device=device), lambda: torch.tensor(data))


@pytest.mark.parametrize("dtype", ["float32", "int64", "bool", "int32", "float16", "uint8"])
def test_tensor_with_dtype(device, dtype):
    data = [[0, 1.7, -2.2], [3, 0, 1]] if dtype != "uint8" else [[0, 1, 2], [3, 0, 1]]
    check(lambda: tdx.tensor(data, dtype=getattr(tdx, dtype), device=device),
          lambda: torch.tensor(data, dtype=getattr(torch, dtype)))


FACTORIES = [
    ("zeros", lambda m, d: m.zeros(2, 3, device=d)), ("zeros tuple", lambda m, d: m.zeros((2, 3), device=d)),
    ("ones int", lambda m, d: m.ones(4, dtype=m.int32, device=d)),
    ("full float", lambda m, d: m.full((2, 2), 1.5, device=d)),
    ("full int", lambda m, d: m.full((3,), 7, device=d)), ("full bool", lambda m, d: m.full((2,), True, device=d)),
    ("arange", lambda m, d: m.arange(5, device=d)), ("arange range", lambda m, d: m.arange(2, 11, 3, device=d)),
    ("arange float", lambda m, d: m.arange(0, 1, 0.25, device=d)),
    ("arange neg", lambda m, d: m.arange(5, 0, -2, device=d)),
    ("arange dtype", lambda m, d: m.arange(4, dtype=m.float32, device=d)),
    ("arange bad", lambda m, d: m.arange(0, 5, -1, device=d)),
    ("arange int64", lambda m, d: m.arange(7, dtype=m.int64, device=d)),  # generation's position ids
    ("arange range int64", lambda m, d: m.arange(2, 11, 3, dtype=m.int64, device=d)),
    ("arange empty", lambda m, d: m.arange(0, device=d)), ("arange negative", lambda m, d: m.arange(-3, device=d)),
    ("linspace", lambda m, d: m.linspace(0, 1, 5, device=d)),
    ("linspace one", lambda m, d: m.linspace(2, 3, 1, device=d)),
    ("linspace int", lambda m, d: m.linspace(0, 10, 4, dtype=m.int64, device=d)),
    ("eye", lambda m, d: m.eye(3, device=d)), ("eye rect", lambda m, d: m.eye(2, 4, dtype=m.int64, device=d)),
    ("zeros 0-size", lambda m, d: m.zeros(0, 3, device=d)), ("ones 0-d", lambda m, d: m.ones((), device=d)),
]


@pytest.mark.parametrize("case", FACTORIES, ids=lambda c: c[0])
def test_factories(device, case):
    check(lambda: case[1](tdx, device), lambda: case[1](torch, None), msg=case[0])


def test_like_factories(device):
    x = tdx.tensor([[1, 2], [3, 4]], dtype=tdx.int32, device=device)
    t = torch.tensor([[1, 2], [3, 4]], dtype=torch.int32)
    for name in ("zeros_like", "ones_like"):
        check(lambda: getattr(tdx, name)(x), lambda: getattr(torch, name)(t), msg=name)
    check(lambda: tdx.full_like(x, 9), lambda: torch.full_like(t, 9))
    check(lambda: tdx.zeros_like(x, dtype=tdx.float32), lambda: torch.zeros_like(t, dtype=torch.float32))
    assert tdx.empty_like(x).shape == (2, 2) and tdx.empty_like(x).dtype is tdx.int32
    assert tdx.zeros_like(x).device == x.device


@pytest.mark.parametrize("name", ["zeros_like", "ones_like", "empty_like"])
def test_like_of_a_view_and_of_a_parameter(device, name):
    """Of a transposed view: its shape and dtype, and on torch's executors torch's kept strides; of a
    parameter: no grad unless asked, and asked, a leaf that requires it."""
    x = tdx.arange(12, dtype=tdx.float32, device=device).view(3, 4).t()
    t = torch.arange(12, dtype=torch.float32).view(3, 4).t()
    got, want = getattr(tdx, name)(x), getattr(torch, name)(t)
    assert got.shape == want.shape and got.dtype is tdx.float32 and got.device == x.device
    if name != "empty_like":
        assert got.tolist() == want.tolist()
    if tdx.backends.get(device).name == "torch":
        assert got.stride() == want.stride() == (1, 4)
    p = tdx.nn.Parameter(tdx.ones(2, 3, device=device))
    plain, grad = getattr(tdx, name)(p), getattr(tdx, name)(p, requires_grad=True)
    assert not plain.requires_grad and grad.requires_grad and grad.is_leaf and grad.grad_fn is None
    assert type(plain) is tdx.Tensor


@pytest.mark.parametrize("dtype", [None, "float16", "float32"])
def test_random_factories(device, dtype):
    tdx.manual_seed(0)
    kw = {} if dtype is None else {"dtype": getattr(tdx, dtype)}
    u = tdx.rand(2000, device=device, **kw)
    n = tdx.randn(40, 50, device=device, **kw)
    want = getattr(torch, dtype or "float32")
    assert u.dtype.name == str(want).split(".")[-1] and n.shape == (40, 50)
    uu, nn = u.float(), n.float()
    assert 0.0 <= uu.min().item() and uu.max().item() < 1.0
    assert abs(uu.mean().item() - 0.5) < 0.05 and abs(nn.mean().item()) < 0.1 and abs(nn.std().item() - 1) < 0.1
    r = tdx.randint(3, 7, (500,), device=device)
    assert r.dtype is tdx.int64 and r.min().item() >= 3 and r.max().item() <= 6
    assert set(tdx.randint(2, (200,), device=device).tolist()) == {0, 1}
    assert tdx.rand_like(u).shape == u.shape and tdx.randn_like(n).dtype is n.dtype
    for fn in ("rand", "randn"):  # torch: its kernel's NotImplementedError (a RuntimeError)
        with pytest.raises(NotImplementedError):
            getattr(torch, fn)(3, dtype=torch.int64)
        with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
            getattr(tdx, fn)(3, dtype=tdx.int64, device=device)


def test_manual_seed_reproducible(device):
    tdx.manual_seed(1234)
    a = tdx.randn(5, device=device).tolist()
    tdx.manual_seed(1234)
    b = tdx.randn(5, device=device).tolist()
    tdx.manual_seed(4321)
    c = tdx.randn(5, device=device).tolist()
    assert a == b and a != c


def test_conversions(device):
    t = torch.tensor([[1.5, -2.0], [3.0, 4.25]])
    x = tdx.tensor(t.tolist(), device=device)
    assert x.tolist() == t.tolist()
    assert x[1, 1].item() == 4.25 and isinstance(x[1, 1].item(), float)
    assert isinstance(tdx.tensor(3, device=device).item(), int)
    np.testing.assert_array_equal(x.numpy(force=True), t.numpy())  # force: a cuda tensor exports by a copy only
    assert float(x[0, 0]) == 1.5 and int(x[1, 0]) == 3 and bool(x[0, 0])
    with pytest.raises(RuntimeError):
        x.item()
    with pytest.raises(RuntimeError):
        bool(x)
    assert len(x) == 2 and [r.tolist() for r in x] == t.tolist()
    check(lambda: x.to(tdx.int32), lambda: t.to(torch.int32))
    check(lambda: x.long(), lambda: t.long())
    check(lambda: x.half(), lambda: t.half())
    check(lambda: x.bool(), lambda: t.bool())
    check(lambda: x.to(dtype=tdx.float16), lambda: t.to(dtype=torch.float16))
    assert x.shape == (2, 2) and x.size() == (2, 2) and x.size(-1) == 2 and x.numel() == 4
    assert x.ndim == 2 and x.dim() == 2 and x.element_size() == 4 and x.is_floating_point()
    assert isinstance(x.shape, tdx.Size) and x.shape.numel() == 4


@pytest.mark.parametrize("other", ["cpu", "mlx:cpu"])
@pytest.mark.parametrize("dtype", ["float32", "int64", "bool", "bfloat16", "float16", "uint8"])
def test_to_between_devices(device, other, dtype):
    if not any(r.device == other and r.available for r in tdx.backends.available()):
        pytest.skip(f"{other} unavailable")
    t = torch.tensor([[0, 1, 2], [3, 4, 5]]).to(getattr(torch, dtype))
    x = tdx.tensor([[0, 1, 2], [3, 4, 5]], dtype=getattr(tdx, dtype), device=device)
    moved = x.to(other)
    assert str(moved.device) == other and moved.dtype is x.dtype
    check(lambda: moved, lambda: t)
    check(lambda: moved.to(device), lambda: t)
    both = x.to(other, tdx.float32)
    check(lambda: both, lambda: t.float())


def test_to_that_changes_nothing_is_the_tensor_itself(device):
    """The no-op forms return the tensor itself (as torch's); copy, another dtype, a memory format or
    a bad keyword still take the full path."""
    t = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    x = tdx.tensor([[1.0, 2.0], [3.0, 4.0]], device=device)
    dev = x.device
    forms = [((tdx.float32,), {}, (torch.float32,), {}), ((device,), {}, ("cpu",), {}),
             ((dev,), {}, (t.device,), {}), ((), {"dtype": tdx.float32}, (), {"dtype": torch.float32}),
             ((), {"device": dev, "dtype": tdx.float32}, (), {"device": t.device, "dtype": torch.float32}),
             ((dev, tdx.float32), {}, (t.device, torch.float32), {}), ((device,), {"non_blocking": True},
                                                                        ("cpu",), {"non_blocking": True}),
             ((), {"device": None, "dtype": None}, (), {"device": None, "dtype": None})]
    for args, kwargs, targs, tkwargs in forms:
        assert (x.to(*args, **kwargs) is x) == (t.to(*targs, **tkwargs) is t) == True, (args, kwargs)  # noqa: E712
    copied = x.to(device, copy=True)
    assert t.to("cpu", copy=True) is not t and copied is not x
    x.add_(1)
    check(lambda: copied, lambda: t)  # the copy does not see the later write
    cast = x.to(dtype=tdx.float64, device=dev)
    assert cast is not x and cast.dtype is tdx.float64
    with pytest.raises(TypeError):
        x.to(tdx.float32, bogus=1)
    with pytest.raises(TypeError):
        t.to(torch.float32, bogus=1)
    with pytest.raises(RuntimeError):
        t.to(torch.float32, memory_format=torch.channels_last)
    with pytest.raises(RuntimeError):
        x.to(tdx.float32, memory_format=tdx.channels_last)  # channels_last needs a 4-D tensor
    with pytest.raises(RuntimeError):
        x.to("nonsense")


REPRS = [[1.0, 2.0, 3.0], [0.1234567, 10.0], [[1, 2], [3, 4]], [True, False], [True], [[True, True]], 3.5, [],
         [1e-8, 1.0],
         [1e10, 1.0], [float("nan"), 1.5, float("inf")]]


@pytest.mark.parametrize("data", REPRS, ids=repr)
def test_repr_matches_torch_on_cpu(data):
    assert repr(tdx.tensor(data, device="cpu")) == repr(torch.tensor(data)).replace("torch.", "tdx.")


def test_repr_names_device_and_dtype(device):
    x = tdx.tensor([1, 2], dtype=tdx.int32, device=device)
    r = repr(x)
    assert "dtype=tdx.int32" in r and (device == "cpu") == ("device=" not in r)


def _grad_forms(m, device):
    """Tensors whose repr ends in torch's autograd field: leaves, results of recorded ops, a custom Function's."""
    x = m.tensor([1.0, -2.0], device=device).requires_grad_()

    class Twice(m.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    with m.no_grad():
        quiet = x * 2
    return {"leaf": x, "mul": x * 2, "add": x + 1, "sub": x - 1, "div": x / 2, "pow": x ** 2, "neg": -x,
            "exp": x.exp(), "tanh": x.tanh(), "relu": x.relu(), "sigmoid": x.sigmoid(), "abs": x.abs(),
            "softmax": x.softmax(0), "sum": x.sum(), "mean": x.mean(), "clone": x.clone(), "view": x.view(2, 1), "unsqueeze": x.unsqueeze(0),
            "cat": m.cat([x, x]), "stack": m.stack([x, x]), "function": Twice.apply(x), "detach": x.detach(),
            "no_grad": quiet, "param": m.nn.Parameter(m.ones(2, device=device))}


def test_repr_of_tensors_with_history_is_torchs(device):
    """torch prints ``grad_fn=<MulBackward0>`` for a result of recorded ops and ``requires_grad=True`` only for
    a leaf: so does tdx on every executor (on MLX the tape's node, named as torch names its node)."""
    want = _grad_forms(torch, "cpu")
    got = _grad_forms(tdx, device)
    for name, w in want.items():
        text = repr(got[name]).replace(f", device='{device}'", "").replace("tdx.", "torch.")
        assert text == repr(w), name


def test_pickle_round_trip(device):
    x = tdx.tensor([[1.5, 2.0]], device=device)
    y = pickle.loads(pickle.dumps(x))
    assert y.tolist() == x.tolist() and y.device == x.device and y.dtype is x.dtype


def test_math_module_values():
    assert math.isclose(tdx.tensor(2.0).exp().item(), math.exp(2.0), rel_tol=1e-6)


@pytest.mark.parametrize("dtype", ["float16", "int32", "bool", "float32"])
def test_new_factories_follow_the_tensor(device, dtype):
    """``new_zeros/ones/full/empty/tensor`` take the tensor's dtype and device unless given, as torch."""
    if dtype not in tdx.backends.get(device).caps.dtypes:
        pytest.skip(f"{device} has no {dtype}")
    x, t = tdx.ones(2, 3, dtype=getattr(tdx, dtype), device=device), torch.ones(2, 3, dtype=getattr(torch, dtype))
    calls = [lambda v, m: v.new_zeros(2, 2), lambda v, m: v.new_ones((3,)), lambda v, m: v.new_full((2,), 7),
             lambda v, m: v.new_zeros(2, dtype=m.int64), lambda v, m: v.new_tensor([[1, 0]]),
             lambda v, m: v.new_empty(0, 4), lambda v, m: v.new_tensor(v * 2, dtype=m.float32)]
    for i, call in enumerate(calls):
        got, want = call(x, tdx), call(t, torch)
        assert got.device == x.device, i
        check(lambda: got, lambda: want, msg=f"call {i}")
    assert x.new_ones(2, requires_grad=True).requires_grad if dtype.startswith("float") else True
