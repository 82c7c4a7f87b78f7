"""The device modules ``tdx.compat.cuda`` / ``mps`` / ``mlx`` (exposed as ``tdx.cuda`` ...):
the same answers as ``torch.cuda`` / ``torch.mps`` on this machine, ``mlx.core``'s numbers for
MLX, and torch's no-device answers where torch or MLX cannot be imported.
"""

import json
import os
import subprocess
import sys
import warnings

import pytest

torch = pytest.importorskip("torch")

import tdx.compat.cuda as tcuda  # noqa: E402
import tdx.compat.mlx as tmlx  # noqa: E402
import tdx.compat.mps as tmps  # noqa: E402
from tdx._device import device  # noqa: E402
from tdx._errors import InvalidDeviceError  # noqa: E402
from tdx.backends._flags import BackendUnavailableError  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _answer(fn):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return "value", fn()
    except Exception as e:  # noqa: BLE001 - the exception's type is the answer compared
        return "raises", [c.__name__ for c in (TypeError, ValueError, RuntimeError, AssertionError,
                                               AttributeError) if isinstance(e, c)]


CUDA_CALLS = [
    "is_available()", "is_initialized()", "device_count()", "current_device()", "set_device(-1)",
    "get_device_name()", "get_device_properties()", "get_device_capability()", "get_arch_list()",
    "synchronize()", "manual_seed(1)", "manual_seed_all(1)", "initial_seed()", "empty_cache()",
    "memory_allocated()", "max_memory_allocated()", "memory_reserved()", "max_memory_reserved()",
    "memory_stats()", "mem_get_info()", "is_bf16_supported()", "is_tf32_supported()",
    "current_stream()", "default_stream()", "Stream()", "device(-1).__enter__()", "stream(None).__enter__()",
    "get_rng_state()",
]


@pytest.mark.parametrize("call", CUDA_CALLS)
def test_cuda_module_answers_as_torch_cuda(call):
    ours = _answer(lambda: eval(call, {n: getattr(tcuda, n) for n in tcuda.__all__}))
    theirs = _answer(lambda: eval(call, {n: getattr(torch.cuda, n) for n in tcuda.__all__ if hasattr(torch.cuda, n)}))
    assert ours == theirs


def test_cuda_module_takes_tdx_devices_and_exposes_torch_classes():
    assert tcuda.memory_allocated(device("cuda:0")) == torch.cuda.memory_allocated("cuda:0")
    assert tcuda.Stream is torch.cuda.Stream and tcuda.Event is torch.cuda.Event
    assert {"Stream", "Event", "StreamContext"} <= set(dir(tcuda))
    assert all(hasattr(torch.cuda, n) for n in tcuda.__all__ if n != "BackendUnavailableError")


MPS_CALLS = [
    "is_available()", "device_count()", "synchronize()", "manual_seed(1)", "seed()", "empty_cache()",
    "current_allocated_memory()", "driver_allocated_memory()", "recommended_max_memory()",
    "set_per_process_memory_fraction(0.5)", "get_rng_state()",
]


@pytest.mark.parametrize("call", MPS_CALLS)
def test_mps_module_answers_as_torch_mps(call):
    ours = _answer(lambda: eval(call, {n: getattr(tmps, n) for n in tmps.__all__}))
    theirs = _answer(lambda: eval(call, {n: getattr(torch.mps, n) for n in tmps.__all__ if hasattr(torch.mps, n)}))
    assert ours == theirs


def test_mps_module_names_are_torch_names():
    assert all(hasattr(torch.mps, n) for n in tmps.__all__ if n != "BackendUnavailableError")
    assert tmps.Event is torch.mps.Event


# --- MLX --------------------------------------------------------------------------------------

mx = pytest.importorskip("mlx.core")


def _gpu() -> bool:
    return bool(mx.metal.is_available()) or bool(mx.cuda.is_available())


def test_mlx_availability_and_devices():
    assert tmlx.is_available() is True
    assert tmlx.device_count() == 1 + int(_gpu())
    kind = "gpu" if mx.default_device().type == mx.DeviceType.gpu else "cpu"
    assert tmlx.current_device() == device(f"mlx:{kind}")
    assert tmlx.is_bf16_supported() is True
    assert tmlx.get_device_name() == (mx.device_info().get("device_name") or kind)
    props = tmlx.get_device_properties("mlx:cpu")
    assert props.type == "cpu" and props.info == mx.device_info(mx.cpu)
    with pytest.raises(InvalidDeviceError, match="expected an MLX device"):
        tmlx.set_device("cuda:0")
    if not _gpu():
        with pytest.raises(BackendUnavailableError, match="mlx:gpu"):
            tmlx.set_device("mlx:gpu")


def test_mlx_device_context_sets_and_restores_default_device():
    before = mx.default_device()
    with tmlx.device("mlx:cpu"):
        assert mx.default_device() == mx.cpu
        assert tmlx.current_device() == device("mlx:cpu")
    assert mx.default_device() == before
    with pytest.raises(KeyError):
        with tmlx.device(device("mlx:cpu")):
            raise KeyError("boom")
    assert mx.default_device() == before


def test_mlx_manual_seed_is_mx_random_seed():
    tmlx.manual_seed(1234)
    a = mx.random.normal((8,))
    mx.random.seed(1234)
    b = mx.random.normal((8,))
    tmlx.manual_seed_all(1234)
    c = mx.random.normal((8,))
    assert a.tolist() == b.tolist() == c.tolist()
    tmlx.seed()
    assert mx.random.normal((8,)).tolist() != a.tolist()


def test_mlx_memory_counters_are_mlx_counters():
    x = mx.ones((1024, 1024))
    mx.eval(x)
    assert tmlx.memory_allocated() == mx.get_active_memory() >= 4 * 1024 * 1024
    assert tmlx.max_memory_allocated() == mx.get_peak_memory() >= tmlx.memory_allocated()
    assert tmlx.memory_reserved() == mx.get_active_memory() + mx.get_cache_memory()
    del x
    tmlx.empty_cache()
    assert mx.get_cache_memory() == 0
    tmlx.reset_peak_memory_stats()
    assert mx.get_peak_memory() == tmlx.max_memory_allocated()
    free, total = tmlx.mem_get_info()
    assert 0 < free <= total
    tmlx.synchronize()
    tmlx.synchronize("mlx:cpu")


def test_mlx_streams():
    s = tmlx.Stream("mlx:cpu")
    assert isinstance(s, mx.Stream) and isinstance(s, tmlx.Stream)
    assert not isinstance(object(), tmlx.Stream)
    with tmlx.stream(s):
        assert mx.default_stream(mx.default_device()) == s
    assert tmlx.current_stream() == mx.default_stream(mx.default_device())
    assert tmlx.default_stream("mlx:cpu") == mx.default_stream(mx.cpu)
    with tmlx.stream(None):
        pass


# --- without torch or MLX -----------------------------------------------------------------------

WITHOUT = r"""
import importlib.abc, json, sys
class _Blocked(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("torch", "mlx"):
            raise ImportError(name + " is blocked in this test")
        return None
sys.meta_path.insert(0, _Blocked())
import tdx.compat.cuda as cuda, tdx.compat.mps as mps, tdx.compat.mlx as mlx
import tdx.backends.mlx as bmlx
out = {}
for mod, calls in ((cuda, %r), (mps, %r), (mlx, %r), (bmlx, %r)):
    for call in calls:
        key = mod.__name__ + "." + call
        try:
            out[key] = repr(eval(call, {n: getattr(mod, n) for n in dir(mod) if not n.startswith("__")}))
        except Exception as e:
            out[key] = "raises " + "/".join(c.__name__ for c in type(e).__mro__
                                            if c.__name__ in ("ImportError", "RuntimeError", "AssertionError"))
out["loaded"] = [m for m in ("torch", "mlx", "mlx.core") if sys.modules.get(m) is not None]
print(json.dumps(out))
"""

NEEDS = "raises RuntimeError/AssertionError"
WITHOUT_EXPECTED = {
    "cuda": {"is_available()": "False", "is_initialized()": "False", "device_count()": "0",
             "current_device()": NEEDS, "set_device(-1)": "None", "set_device(0)": NEEDS,
             "get_device_name()": NEEDS, "get_device_properties()": NEEDS, "get_device_capability()": NEEDS,
             "synchronize()": NEEDS, "manual_seed(1)": "None", "manual_seed_all(1)": "None",
             "empty_cache()": "None", "memory_allocated()": "0", "max_memory_allocated()": "0",
             "reset_peak_memory_stats()": "None", "mem_get_info()": NEEDS, "is_bf16_supported()": "False",
             "get_arch_list()": "[]", "Stream()": NEEDS, "Event()": NEEDS, "device(0).__enter__()": NEEDS,
             "device(-1).__enter__()": "None", "stream(None).__enter__()": "None"},
    "mps": {"is_available()": "False", "device_count()": "0", "manual_seed(1)": "None",
            "synchronize()": NEEDS, "empty_cache()": NEEDS, "current_allocated_memory()": NEEDS,
            "Event()": NEEDS},
    "mlx": {"is_available()": "False", "device_count()": "0", "current_device()": NEEDS,
            "synchronize()": NEEDS, "manual_seed(1)": NEEDS, "memory_allocated()": "0",
            "max_memory_allocated()": "0", "empty_cache()": "None", "is_bf16_supported()": "False",
            "Stream()": NEEDS, "mem_get_info()": NEEDS},
    "bmlx": {"is_built()": "False", "is_available()": "False", "default_device()": "None",
             "is_metal_available()": "False", "is_cuda_available()": "False", "get_memory_limit()": "None",
             "set_memory_limit(1)": NEEDS, "fused_sdpa_enabled()": "True"},
}


def test_device_modules_answer_without_torch_or_mlx():
    code = WITHOUT % tuple(list(WITHOUT_EXPECTED[k]) for k in ("cuda", "mps", "mlx", "bmlx"))
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert out.pop("loaded") == []
    names = {"cuda": "tdx.compat.cuda", "mps": "tdx.compat.mps", "mlx": "tdx.compat.mlx", "bmlx": "tdx.backends.mlx"}
    expected = {f"{names[mod]}.{call}": answer
                for mod, calls in WITHOUT_EXPECTED.items() for call, answer in calls.items()}
    assert out == expected
