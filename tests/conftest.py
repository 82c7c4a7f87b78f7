"""The suite's device parametrization and shared helpers: build a tdx tensor on a device and the torch-on-CPU oracle from one array."""

from __future__ import annotations

import fcntl
import getpass
import json
import os
import re
import shutil
import tempfile

import numpy as np
import pytest
import torch
from hypothesis import strategies as st

import tdx
from tdx.testing.parity import assert_close
from tdx.testing.plugin import parametrize_devices

BUILTINS = (IndexError, TypeError, ValueError, RuntimeError)


def _inductor_cache_of_this_capability() -> None:
    """Give torch's inductor a cache directory of the CPU capability the run pins (``ATEN_CPU_CAPABILITY``).

    torch's on-disk inductor cache does not key its compiled C++ on that variable: a graph compiled under
    ``avx2`` and found again under ``default`` no longer compiles (``at::vec`` undeclared), with real torch alone
    too. A directory the run names itself is left as it is.
    """
    capability = os.environ.get("ATEN_CPU_CAPABILITY")
    if capability and "TORCHINDUCTOR_CACHE_DIR" not in os.environ:
        name = f"torchinductor_{getpass.getuser()}_{capability.lower()}"
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(tempfile.gettempdir(), name)


_inductor_cache_of_this_capability()


def pytest_addoption(parser):
    parser.addoption("--mlx-as-gpu", action="store_true", default=False,
                     help="run mlx:cpu with what an MLX GPU declares (no float64, no zero-copy export to the host), "
                          "to find tests that assume more without a GPU")


def pytest_configure(config):
    config.addinivalue_line("markers", "float64: the test holds float64 on its device, or needs torch's rounding, "
                                       "which MLX reproduces with float64 arithmetic; skipped where the device has none")
    if config.getoption("--mlx-as-gpu"):
        _declare_mlx_cpu_as_gpu()


def _declare_mlx_cpu_as_gpu() -> None:
    """Make every MLX executor of this process declare an MLX GPU's capabilities (see ``--mlx-as-gpu``)."""
    import dataclasses

    import mlx.core as mx

    from tdx import _dtypes as D
    from tdx.backends.mlx import _executor as E

    init = E.MLXExecutor.__init__

    def as_gpu(self, device):
        init(self, device)
        self.caps = dataclasses.replace(self.caps, dtypes=self.caps.dtypes - {"float64"}, float64=False,
                                        dlpack_zero_copy_export=False)
        self._to_native.pop(D.float64, None)
        self._from_native.pop(mx.float64, None)

    E.MLXExecutor.__init__ = as_gpu


def pytest_runtest_setup(item):
    """A row whose ``dtype`` the device does not hold (float64 on an MLX GPU) skips, naming both, as does a
    test marked ``float64`` on a device without it: the refusal itself is tested apart
    (``test_float64_refused_where_missing``)."""
    params = getattr(getattr(item, "callspec", None), "params", {})
    device, dtype = params.get("device"), params.get("dtype")
    if not isinstance(device, str):
        return
    row = next((r for r in tdx.backends.available() if r.device == device), None)
    if row is None or not row.available:
        return
    caps = tdx.backends.get(device).caps
    if isinstance(dtype, str) and dtype in _DTYPE_NAMES and dtype not in caps.dtypes:
        pytest.skip(f"{device} holds no {dtype}")
    if not caps.float64 and item.get_closest_marker("float64") is not None:
        pytest.skip(f"{device} has no float64, which this test holds or rounds through")


_DTYPE_NAMES = frozenset({"float16", "bfloat16", "float32", "float64", "complex64", "complex128", "int8", "int16",
                          "int32", "int64", "uint8", "uint16", "uint32", "uint64", "bool"})


def pytest_generate_tests(metafunc):
    """tdx's own suite: every test taking ``device`` runs on every tdx device (the plugin is opt-in)."""
    parametrize_devices(metafunc, "device")


def skip_value_checked(device, what: str) -> None:
    """Skip a bad-input case on a device whose kernels check such values (``caps.device_side_checks``:
    torch on CUDA), where the call raises nothing and the device-side assert ends the process's use of
    the device, as with torch itself."""
    if tdx.backends.get(device).caps.device_side_checks:
        pytest.skip(f"{device} checks {what} inside the kernel, as torch does there: a device-side assert, "
                    "not an error at the call")


def torch_twin(device: str) -> str:
    """The torch device whose results tdx promises on ``device``: the device itself where tdx runs real torch's own
    kernels and generators there (the torch executor on cuda or mps: their summation orders, cuDNN's TF32
    convolutions, the Philox draws), else ``"cpu"`` (MLX draws torch's CPU stream and adds in its CPU order).
    A bit-exact or random-stream check builds its reference there and compares on the host."""
    return device if tdx.backends.get(device).name == "torch" else "cpu"


_REFERENCES: dict = {}  # tag -> (the folder the reference run wrote, its result): this process's


def shared_reference(tag: str, tmp_path_factory, make):
    """(a fresh working folder holding the files reference run ``tag`` wrote, the result of that run): one run a
    session, whichever test asks first, for every device that takes the same reference (cpu and mlx:cpu).

    ``make(folder)`` runs the reference in ``folder`` and returns its result (JSON). Under xdist the workers share
    one run through a folder of the session's base temp: the first worker to ask runs it while the others wait on
    its lock, then read the result it wrote. Each caller gets its own copy of the folder, so two tdx runs of one
    program on two workers at once never write into each other's files. A run that fails writes no result: the
    next caller runs it again and fails as well."""
    if tag not in _REFERENCES:
        _REFERENCES[tag] = _run_reference(re.sub(r"[^\w.-]", "_", tag), tmp_path_factory, make)
    src, result = _REFERENCES[tag]
    cwd = tmp_path_factory.mktemp(src.name)
    shutil.copytree(src, cwd, dirs_exist_ok=True)
    return cwd, result


def _run_reference(name: str, tmp_path_factory, make):
    if os.environ.get("PYTEST_XDIST_WORKER") is None:  # one process: its own memo is the session's
        cwd = tmp_path_factory.mktemp(f"ref-{name}")
        return cwd, make(cwd)
    root = tmp_path_factory.getbasetemp().parent / "references"  # the session's base temp, which workers share
    root.mkdir(exist_ok=True)
    cwd, done = root / name, root / f"{name}.json"
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, by this worker or by its end
        if done.exists():
            return cwd, json.loads(done.read_text())
        shutil.rmtree(cwd, ignore_errors=True)  # a failed run's files
        cwd.mkdir()
        result = make(cwd)
        done.write_text(json.dumps(result))
        return cwd, result


def torch_order(device: str, *ops: str) -> tuple:
    """Whether tdx promises torch's bits on ``device`` for every op class in ``ops`` (``"sum"``, ``"dot"``,
    ``"multiply_add"``, ``"tanh"``, ``"prod"``: ``tdx/backends/mlx/_torch_order.py``), and why not.

    The torch executor runs torch's own kernels: always. MLX's CPU stream reproduces torch's order of an op
    class only where it was verified against torch's kernels on the running CPU (and, for ``"sum"`` and
    ``"dot"``, while ``[backends.mlx] summation`` asks for torch's orders); an MLX GPU stream never. A bit-for-bit
    check compares bit for bit where this answers True and within float tolerance, naming the reason,
    where it answers False.

    Returns:
        ``(promised, reason)``; ``reason`` is empty when promised.
    """
    ex = tdx.backends.get(device)
    if ex.name == "torch":
        return True, ""
    if not ex.caps.float64:
        return False, f"{device} keeps MLX's own order (no float64 to reproduce torch's roundings)"
    from tdx.backends.mlx import _summation_order, _torch_order

    if not _summation_order.chosen():
        return False, "[backends.mlx] summation does not ask for torch's orders (\"native\", or \"auto\" with MLX's stream)"
    why = [f"{op}: {_torch_order.verdict(op).reason}" for op in ops if not _torch_order.verified(op)]
    return not why, "; ".join(why)


def pair(arr, device, dtype):
    """(tdx tensor on ``device``, torch CPU tensor) holding ``arr`` as ``dtype`` (a name)."""
    arr = np.asarray(arr)
    t = torch.tensor(arr).to(getattr(torch, dtype))
    x = tdx.tensor(arr, dtype=getattr(tdx, dtype), device=device)  # narrowed on the host: no float64 on the device
    return x, t


def sample(shape, dtype, seed=0, low=-4, high=4):
    """Deterministic values for ``shape``: ints in [low, high), floats with fractions, bools."""
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.integers(0, 2, size=shape).astype(bool)
    if dtype.startswith(("int", "uint")):
        lo = 0 if dtype == "uint8" else low
        return rng.integers(lo, high, size=shape)
    return rng.uniform(low, high, size=shape).round(3)


def check(tdx_fn, torch_fn, msg="", **tol):
    """Run both; if torch raises, tdx must raise a TdxError that is also the same builtin."""
    try:
        expected = torch_fn()
    except BUILTINS as err:
        kind = next(b for b in BUILTINS if isinstance(err, b))
        with pytest.raises(kind) as info:
            tdx_fn()
        assert isinstance(info.value, tdx.TdxError), f"{msg}: raised untyped {info.value!r}"
        return None
    got = tdx_fn()
    if isinstance(expected, (tuple, list)):
        assert len(got) == len(expected), msg
        for g, e in zip(got, expected):
            assert_close(g, e, msg=msg, **tol)
    else:
        assert_close(got, expected, msg=msg, **tol)
    return got


# hypothesis strategies shared by the property tests
shapes = st.lists(st.integers(0, 4), min_size=0, max_size=3).map(tuple)  # 0-d and 0-size included
nonempty = st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple)
seeds = st.integers(0, 2 ** 16)


@st.composite
def broadcast_pair(draw):
    """Two shapes that broadcast: dims of one drawn as 1 or the other's size, some dropped."""
    a = draw(shapes)
    b = [draw(st.sampled_from([s, 1])) for s in a]
    b = tuple(b[draw(st.integers(0, len(b))):])
    return (a, b) if draw(st.booleans()) else (b, a)


def dim_of(draw, shape):
    """A valid dim of ``shape`` (0-d tensors take -1 and 0), negative ones included."""
    n = max(len(shape), 1)
    return draw(st.integers(-n, n - 1))
