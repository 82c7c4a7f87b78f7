"""Devices, the executor registry and capabilities, and the facade's structure."""

from __future__ import annotations

import inspect

import pytest

import tdx
from tdx import backends
from tdx.backends.base import Executor, Provider


@pytest.mark.parametrize("text, kind, index, kind2", [
    ("cpu", "cpu", None, None), ("cuda", "cuda", None, None), ("cuda:1", "cuda", 1, None),
    ("mps", "mps", None, None), ("mlx", "mlx", None, None), ("mlx:gpu", "mlx", None, "gpu"),
    ("mlx:cpu", "mlx", None, "cpu")])
def test_device_parsing(text, kind, index, kind2):
    d = tdx.device(text)
    assert (d.type, d.index, d.kind, str(d)) == (kind, index, kind2, text)
    assert d == text and tdx.device(d) == d and hash(d) == hash(tdx.device(text))
    assert tdx.device(2) == "cuda:2" and tdx.device("cuda", 3) == "cuda:3"


@pytest.mark.parametrize("bad", ["tpu", "cuda:x", "mlx:1", "cuda:-1", "", 1.5])
def test_bad_device_strings(bad):
    with pytest.raises(tdx.InvalidDeviceError) as info:
        tdx.device(bad)
    assert isinstance(info.value, RuntimeError) and repr(bad)[1:-1] in str(info.value) or bad == ""


@pytest.mark.parametrize("args", [("cuda", 10 ** 10), (10 ** 10,), ("cuda", 128), ("cuda", 2 ** 63), ("cuda", 127),
                                  ("cuda:10000000000",), ("cuda:2147483648",), ("cuda:128",), ("cuda:256",),
                                  ("cuda:127",), ("cpu:300",), ("mps", 200)])
def test_device_index_out_of_torchs_range_is_refused(args):
    """torch keeps a device index in a signed 8-bit int: it refuses what its parser cannot read (a string index
    past int32, an int past int64) and silently wraps the rest past 127 (``cuda:128`` is index 65408,
    ``device('cuda', 10**10)`` index 0). tdx takes torch's error where torch refuses and refuses the wrapping
    ones too (a RuntimeError naming the index and 0..127); an index torch keeps is tdx's."""
    import torch

    try:
        want = torch.device(*args)
    except (RuntimeError, ValueError) as err:
        with pytest.raises(type(err)) as info:
            tdx.device(*args)
        assert isinstance(info.value, tdx.TdxError)
        return
    requested = args[-1] if isinstance(args[-1], int) else int(args[0].partition(":")[2])
    if want.index == requested or (want.type == "cpu" and requested <= 127):
        assert repr(tdx.device(*args)) == repr(want)
        return
    with pytest.raises(tdx.InvalidDeviceError, match=f"{requested}.*0..127"):
        tdx.device(*args)


def test_available_lists_every_device_with_reason():
    rows = backends.available()
    names = [r.device for r in rows]
    assert names[0] == "cpu" and "mlx:cpu" in names and "mlx:gpu" in names and "mps" in names
    assert any(n.startswith("cuda") for n in names)
    for r in rows:
        assert r.available or r.reason, r


def test_device_context_manager_and_default(device):
    with tdx.device(device):
        assert str(tdx.zeros(1).device) == device
    tdx.set_default_device(device)
    try:
        assert str(tdx.get_default_device()) == device and str(tdx.ones(2).device) == device
    finally:
        tdx.set_default_device(None)


def test_mixing_executors_raises_torch_style_error():
    x, y = tdx.zeros(2, device="cpu"), tdx.zeros(2, device="mlx:cpu")
    for fn in (lambda: x + y, lambda: y * x, lambda: tdx.cat([x, y]), lambda: x.add(y),
               lambda: tdx.where(x > 0, x, y), lambda: x[y.long()]):
        with pytest.raises(tdx.DeviceMismatchError) as info:
            fn()
        assert isinstance(info.value, RuntimeError)
        assert "Expected all tensors to be on the same device" in str(info.value)


@pytest.mark.parametrize("first", ["cpu", "mlx:cpu"])
def test_mixing_executors_in_nn_and_inplace_ops_raises_torch_style_error(first):
    """Functions routed to an executor's own kernels (nn.functional) and in-place ops take their short
    paths only for tensors of one executor; a tensor of another, in any position, is torch's error."""
    other = "mlx:cpu" if first == "cpu" else "cpu"
    for d in (first, other):
        if d not in {r.device for r in backends.available() if r.available}:
            pytest.skip(f"{d} is not available")
    F = tdx.nn.functional
    a, b = tdx.ones(3, 4, device=first), tdx.ones(3, 4, device=other)
    wa, wb = tdx.ones(5, 4, device=first), tdx.ones(5, 4, device=other)
    idx = tdx.tensor([0, 1], device=first)
    for fn in (lambda: F.linear(a, wb), lambda: F.linear(a, wa, tdx.zeros(5, device=other)),
               lambda: F.layer_norm(a, (4,), tdx.ones(4, device=other)), lambda: F.gelu(a) + b,
               lambda: F.cross_entropy(a, tdx.tensor([0, 1, 2], device=other)),
               lambda: F.embedding(idx, wb), lambda: a.add_(b), lambda: a.mul_(b), lambda: a.add_(b, alpha=2),
               lambda: a.addcmul_(a, b, value=0.5), lambda: a.addcdiv_(b, a), lambda: a.lerp_(b, 0.5),
               lambda: a.add_(tdx.nn.Parameter(b)), lambda: a.mul_(other=tdx.nn.Parameter(b))):
        with pytest.raises(tdx.DeviceMismatchError) as info:
            fn()
        assert "Expected all tensors to be on the same device" in str(info.value)
    assert float(a.sum()) == 12.0  # nothing was written


def test_capabilities_not_names(device):
    ex = backends.get(device)
    caps = ex.caps
    assert {"float32", "int64", "bool"} <= caps.dtypes
    assert caps.float64 == ("float64" in caps.dtypes)
    # the hot path's plain attributes agree with the capabilities they stand for
    assert ex.mutable == caps.mutable and ex.taped == (not caps.native_autograd)
    x = tdx.zeros(2, device=device)
    if not caps.float64:
        with pytest.raises(tdx.DtypeError):
            x.double()
    else:
        assert x.double().dtype is tdx.float64


def test_register_third_party_provider():
    class Fake(Provider):
        name = "fake"
        device_types = ("cuda",)

        def statuses(self):
            return []

    with pytest.raises(tdx.TdxValueError, match="already registered"):
        backends.register(Fake)


def test_tensor_facade_is_slotted_and_private():
    """The facade is slotted (its data slots are fixed; a library's attribute goes to a ``__dict__`` the slot
    makes on first use, as torch's tensors take attributes); calling the class is torch's legacy constructor."""
    x = tdx.zeros(1)
    assert "_n" in tdx.Tensor.__slots__ and "__dict__" in tdx.Tensor.__slots__
    assert not x.__dict__  # nothing set yet
    x.foo = 1
    assert x.foo == 1 and "foo" not in vars(x + 1) and not hasattr(tdx.zeros(1), "foo")
    assert tdx.Tensor([1, 2]).tolist() == [1.0, 2.0] and type(tdx.Tensor(2, 3)) is tdx.Tensor
    with pytest.raises(TypeError, match="new"):
        tdx.Tensor([1], [2])
    assert isinstance(x, tdx.Tensor) and type(x.native).__module__.startswith("torch")
    assert type(x + 1) is tdx.Tensor and type(x.sum()) is tdx.Tensor and type(x[0]) is tdx.Tensor


def test_every_executor_op_has_the_public_signature():
    """Executor methods written in Python take the same parameters as the base/MLX reference."""
    from tdx.backends.mlx._executor import MLXExecutor
    from tdx.backends._torch.executor import TorchExecutor

    checked = 0
    for name in ("sum", "mean", "prod", "var", "std", "max_dim", "min_dim", "all", "any", "squeeze", "split",
                 "from_data", "zeros", "ones", "full", "arange", "linspace", "eye", "rand", "randn", "randint"):
        sigs = []
        for cls in (TorchExecutor, MLXExecutor):
            fn = inspect.getattr_static(cls, name)
            fn = fn.__func__ if isinstance(fn, staticmethod) else fn
            params = [p for p in inspect.signature(fn).parameters if p != "self"]
            sigs.append(params)
        assert sigs[0] == sigs[1], f"{name}: torch {sigs[0]} vs mlx {sigs[1]}"
        checked += 1
    assert checked == 21
    assert issubclass(MLXExecutor, Executor) and issubclass(TorchExecutor, Executor)
