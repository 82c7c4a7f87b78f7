"""torch's top-level settings, control flow, symbolic helpers, error classes and refused names.

Each setting is read back as torch's is (same defaults, same accepted values, the same builtin
error for a bad one); ``cond``/``while_loop``/``vmap``/``fork`` are compared with torch's
results on every device; every refused name raises ``UnsupportedOpError`` naming its feature.
"""

from __future__ import annotations


import numpy as np
import pytest
import torch

import tdx
from conftest import torch_twin
from tdx.aliasing import refused
from tdx.testing.parity import assert_close


def _both(device, arr):
    arr = np.asarray(arr, dtype=np.float32)
    return tdx.tensor(arr, device=device), torch.tensor(arr)


# --- settings ---------------------------------------------------------------------------------------------------

def test_thread_settings_round_trip():
    before = tdx.get_num_threads()
    assert isinstance(before, int) and before >= 1 and isinstance(tdx.get_num_interop_threads(), int)
    try:
        tdx.set_num_threads(1)
        assert tdx.get_num_threads() == 1
    finally:
        tdx.set_num_threads(before)
    for bad in (0, -2, 1.5):
        with pytest.raises((RuntimeError, TypeError)):
            torch.set_num_threads(bad)
        with pytest.raises((RuntimeError, TypeError)) as info:
            tdx.set_num_threads(bad)
        assert isinstance(info.value, tdx.TdxError)
    tdx.init_num_threads()


def test_determinism_and_matmul_precision_settings():
    assert tdx.are_deterministic_algorithms_enabled() == torch.are_deterministic_algorithms_enabled() is False
    try:
        tdx.use_deterministic_algorithms(True, warn_only=True)
        assert tdx.are_deterministic_algorithms_enabled() and tdx.is_deterministic_algorithms_warn_only_enabled()
        assert tdx.get_deterministic_debug_mode() == 1
        tdx.set_deterministic_debug_mode("error")
        assert tdx.get_deterministic_debug_mode() == 2 and not tdx.is_deterministic_algorithms_warn_only_enabled()
        with pytest.raises(RuntimeError) as info:
            tdx.set_deterministic_debug_mode("loud")
        assert isinstance(info.value, tdx.TdxError)
    finally:
        tdx.use_deterministic_algorithms(False)
    assert tdx.get_deterministic_debug_mode() == torch.get_deterministic_debug_mode() == 0
    assert tdx.get_float32_matmul_precision() == torch.get_float32_matmul_precision() == "highest"
    try:
        tdx.set_float32_matmul_precision("high")
        assert tdx.get_float32_matmul_precision() == "high"
    finally:
        tdx.set_float32_matmul_precision("highest")
    with pytest.raises((RuntimeError, ValueError)) as info:
        tdx.set_float32_matmul_precision("fastest")
    assert isinstance(info.value, tdx.TdxError)


def test_warn_always_anomaly_and_flags():
    assert tdx.is_warn_always_enabled() == torch.is_warn_always_enabled() is False
    try:
        tdx.set_warn_always(True)
        assert tdx.is_warn_always_enabled()
    finally:
        tdx.set_warn_always(False)
    assert tdx.is_anomaly_enabled() == torch.is_anomaly_enabled() is False
    try:
        tdx.set_anomaly_enabled(True, check_nan=False)
        assert tdx.is_anomaly_enabled() and not tdx.is_anomaly_check_nan_enabled()
    finally:
        tdx.set_anomaly_enabled(False)
    assert isinstance(tdx.set_flush_denormal(False), bool)
    assert tdx.compiled_with_cxx11_abi() in (True, False)
    assert tdx.is_vulkan_available() is False
    assert tdx.cudnn_is_acceptable(tdx.zeros(1)) is torch.cudnn_is_acceptable(torch.zeros(1)) is False


def _draw_around_a_restore(m, device):
    m.manual_seed(3)
    state = m.get_rng_state()
    a = m.rand(4, device=device).tolist()
    m.set_rng_state(state)
    return a, m.rand(4, device=device).tolist()


def test_rng_state_and_seed(device):
    """``get_rng_state`` is the default CPU generator's state, as torch's: restoring it repeats the draws of a
    device drawing that stream (cpu, MLX), not those of a device with its own generator (cuda), as in torch."""
    twin = torch_twin(device)
    got = _draw_around_a_restore(tdx, device)
    assert got == _draw_around_a_restore(torch, twin)
    if twin == "cpu":
        assert got[0] == got[1]
    s = tdx.seed()
    assert isinstance(s, int) and s == tdx.initial_seed()


def test_typename_classproperty_and_device_module():
    assert tdx.typename(tdx.zeros(1)) == torch.typename(torch.zeros(1)).replace("torch", "tdx")
    assert tdx.typename(3) == torch.typename(3) == "int"
    for dt in ("int64", "bool", "complex64", "float16", "uint8"):
        x, t = tdx.zeros(1, dtype=getattr(tdx, dt)), torch.zeros(1, dtype=getattr(torch, dt))
        assert x.type() == t.type().replace("torch", "tdx")
        assert x.type(tdx.DoubleTensor).dtype is tdx.float64 and x.type("torch.IntTensor").dtype is tdx.int32

    class Owner:
        @tdx.classproperty
        def kind(cls):
            return cls.__name__

    assert Owner.kind == "Owner"
    assert tdx.get_device_module("cuda") is tdx.cuda and tdx.get_device_module(tdx.device("mps")) is tdx.mps
    with pytest.raises(RuntimeError) as info:  # tdx has no tdx.cpu module (torch.cpu's stream helpers)
        tdx.get_device_module("cpu")
    assert isinstance(info.value, tdx.TdxError)


def test_autocast_state():
    assert tdx.is_autocast_enabled() == torch.is_autocast_enabled() is False
    assert tdx.get_autocast_dtype("cpu") is tdx.bfloat16 and torch.get_autocast_dtype("cpu") is torch.bfloat16
    assert tdx.get_autocast_dtype("cuda") is tdx.float16 and tdx.get_autocast_gpu_dtype() is tdx.float16
    with tdx.autocast("cpu", dtype=tdx.float16):
        assert tdx.is_autocast_enabled("cpu") and tdx.is_autocast_cpu_enabled()
        assert tdx.get_autocast_cpu_dtype() is tdx.float16
    assert not tdx.is_autocast_enabled("cpu") and tdx.get_autocast_cpu_dtype() is tdx.bfloat16
    try:
        tdx.set_autocast_enabled("cuda", True)
        assert tdx.is_autocast_enabled() and tdx.is_autocast_enabled("cuda")
    finally:
        tdx.set_autocast_enabled("cuda", False)
    assert tdx.autocast_increment_nesting() == 1 and tdx.autocast_decrement_nesting() == 0
    assert tdx.is_autocast_cache_enabled() is True
    with pytest.raises(RuntimeError) as info:
        tdx.autocast("tpu9")
    assert isinstance(info.value, tdx.TdxError)

    @tdx.autocast("cpu")
    def inside():
        return tdx.is_autocast_enabled("cpu")

    assert inside() is True and tdx.is_autocast_enabled("cpu") is False


# --- control flow -----------------------------------------------------------------------------------------------

def test_cond_and_while_loop(device):
    x, t = _both(device, [1.0, -2.0, 3.0])
    for m, a in ((tdx, x), (torch, t)):
        assert m.cond(a.sum() > 0, lambda v: v * 2, lambda v: v - 1, (a,)).tolist() == \
            (t * 2 if t.sum() > 0 else t - 1).tolist()
        assert m.cond(False, lambda v: v * 2, lambda v: v - 1, (a,)).tolist() == (t - 1).tolist()
    i, acc = tdx.while_loop(lambda i, s: i < 5, lambda i, s: (i + 1, s * 2),
                            (tdx.tensor(0, device=device), x))
    assert i.item() == 5 and acc.tolist() == (t * 32).tolist()
    with pytest.raises(RuntimeError) as info:
        tdx.cond(x > 0, lambda v: v, lambda v: v, (x,))  # a predicate of three elements
    assert isinstance(info.value, tdx.TdxError)


def test_vmap_matches_torchs(device):
    a_np = np.arange(12, dtype=np.float32).reshape(3, 4) / 7
    b_np = np.arange(8, dtype=np.float32).reshape(4, 2) - 3
    a, at = _both(device, a_np)
    b, bt = _both(device, b_np)
    assert_close(tdx.vmap(lambda r: r.dot(r))(a), torch.vmap(lambda r: r.dot(r))(at), rtol=1e-6)
    assert_close(tdx.vmap(tdx.mv, in_dims=(None, 1))(a, b), torch.vmap(torch.mv, in_dims=(None, 1))(at, bt),
                 rtol=1e-6, atol=1e-6)
    assert_close(tdx.vmap(lambda r: r * 2, out_dims=1)(a), torch.vmap(lambda r: r * 2, out_dims=1)(at))
    got = tdx.vmap(lambda r: (r.sum(), r.max()))(a)
    want = torch.vmap(lambda r: (r.sum(), r.max()))(at)
    for g, w in zip(got, want):
        assert_close(g, w, rtol=1e-6)
    nested = tdx.vmap(tdx.vmap(lambda u, v: u * v))(a[:, :2], b.t()[:3] if False else b[:3])
    assert_close(nested, torch.vmap(torch.vmap(lambda u, v: u * v))(at[:, :2], bt[:3]))
    with pytest.raises(ValueError) as info:
        tdx.vmap(lambda u, v: u + v)(a, b)  # batch sizes 3 and 4
    assert isinstance(info.value, tdx.TdxError)


def test_fork_and_wait(device):
    x, t = _both(device, [1.0, 2.0])
    fut = tdx.jit.fork(lambda v: v * 3, x) if hasattr(tdx, "jit") else tdx.fork(lambda v: v * 3, x)
    fut_t = torch.jit.fork(lambda v: v * 3, t)
    assert tdx.wait(fut).tolist() == torch.jit.wait(fut_t).tolist()
    assert fut.done() and fut.value().tolist() == [3.0, 6.0]
    chained = tdx.fork(lambda: 5).then(lambda f: f.value() + 1)
    assert tdx.wait(chained) == 6


# --- symbolic helpers -------------------------------------------------------------------------------------------

def test_symbolic_helpers_on_plain_numbers():
    for name, args in (("sym_int", (3.7,)), ("sym_int", (-3.7,)), ("sym_float", (4,)), ("sym_not", (0,)),
                       ("sym_max", (2, 5.5)), ("sym_min", (2, 5.5)), ("sym_sqrt", (9,)),
                       ("sym_sum", ([1, 2, 3.5],)), ("sym_ite", (True, 1, 2)), ("sym_ite", (False, 1, 2))):
        got, want = getattr(tdx, name)(*args), getattr(torch, name)(*args)
        assert got == want and type(got) is type(want), name
    with pytest.raises(ValueError):
        torch.sym_sqrt(-1.0)
    with pytest.raises(ValueError):
        tdx.sym_sqrt(-1.0)
    tdx.sym_constrain_range(3, min=0, max=5)
    with pytest.raises(RuntimeError) as info:
        tdx.sym_constrain_range(9, min=0, max=5)
    assert isinstance(info.value, tdx.TdxError)
    assert not isinstance(3, tdx.SymInt) and not isinstance(3.0, tdx.SymFloat)


# --- error classes and refused names ----------------------------------------------------------------------------

def test_error_classes():
    assert issubclass(tdx.OutOfMemoryError, RuntimeError) and issubclass(tdx.OutOfMemoryError, tdx.TdxError)
    assert issubclass(tdx.AcceleratorError, RuntimeError) and issubclass(tdx.AcceleratorError, tdx.TdxError)
    assert issubclass(tdx.FatalError, tdx.TdxError) and issubclass(tdx.JITException, tdx.TdxError)
    assert issubclass(torch.OutOfMemoryError, RuntimeError)


@pytest.mark.parametrize("name", sorted(refused.TORCH))
def test_every_refused_torch_name_raises_the_typed_error(name):
    obj = getattr(tdx, name)
    assert refused.is_refused(obj)
    with pytest.raises(tdx.UnsupportedOpError, match=rf"torch\.{name} is not supported by tdx \(") as info:
        obj()
    assert isinstance(info.value, NotImplementedError) and isinstance(info.value, tdx.TdxError)
    assert refused.TORCH[name][0] in str(info.value) and "Instead:" in str(info.value)
    if isinstance(obj, type):
        assert not isinstance(tdx.zeros(1), obj)


@pytest.mark.parametrize("name", sorted(refused.TENSOR))
def test_every_refused_tensor_method_raises_the_typed_error(name):
    method = getattr(tdx.zeros(2, 2), name)
    with pytest.raises(tdx.UnsupportedOpError, match=rf"Tensor\.{name} is not supported by tdx") as info:
        method()
    assert isinstance(info.value, NotImplementedError)


def test_refusals_are_torchs_names_and_never_shadow_a_built_one():
    assert set(refused.TORCH) <= set(dir(torch))
    assert set(refused.TENSOR) <= set(dir(torch.Tensor))
    built = [n for n in refused.TENSOR if not refused.is_refused(getattr(tdx.Tensor, n))]
    assert built == []


def test_inference_mode_state(device):
    assert tdx.is_inference_mode_enabled() is torch.is_inference_mode_enabled() is False
    with tdx.inference_mode():
        assert tdx.is_inference_mode_enabled() and not tdx.is_grad_enabled()
        with tdx.inference_mode(False):
            assert not tdx.is_inference_mode_enabled()
        assert tdx.is_inference_mode_enabled()
    assert not tdx.is_inference_mode_enabled() and tdx.is_grad_enabled()

    @tdx.inference_mode()
    def inside():
        return tdx.is_inference_mode_enabled()

    assert inside() is True and tdx.is_inference_mode_enabled() is False


def test_name_counts_keep_refusals_apart():
    from tdx._cli import name_counts

    counts = name_counts.count((("torch", "tdx"), ("torch.Tensor", "tdx.Tensor")))
    torch_names = set(name_counts.public_callables(torch))
    assert counts["torch"]["refused"] == len(set(refused.TORCH) & torch_names)
    assert counts["torch.Tensor"]["refused"] == len(refused.TENSOR)
    for c in counts.values():
        assert c["built"] + c["refused"] + len(c["missing"]) == c["total"]
    text = name_counts.render(counts)
    assert f"{counts['torch']['refused']} refused" in text and "torch.Tensor:" in text


def test_torch_function_switches_and_thread_safe_generator(device):
    x, t = _both(device, [1.0, -2.0])
    for m, a in ((tdx, x), (torch, t)):
        with m.DisableTorchFunction():
            first = (a * 2).tolist()
        with m.DisableTorchFunctionSubclass():
            second = (a + 1).tolist()
        assert (first, second) == ((t * 2).tolist(), (t + 1).tolist())
    assert tdx.thread_safe_generator() is None
    if hasattr(torch, "thread_safe_generator"):  # torch 2.12 added it
        assert torch.thread_safe_generator() is None

    class Counting:
        def __init__(self):
            self.seen = []

        def __getitem__(self, i):
            self.seen.append(tdx.thread_safe_generator())
            return i

        def __len__(self):
            return 2

    ds = Counting()
    list(tdx.utils.data.DataLoader(ds, batch_size=1))
    assert ds.seen == [None, None]
