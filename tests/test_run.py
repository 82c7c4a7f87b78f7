"""``python -m tdx run``: unmodified PyTorch programs on every device, the torch alias, device pinning,
the CLI's first-hour behaviour, and the opt-in pytest plugin."""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch

import tdx
from conftest import shared_reference, torch_twin

pytest_plugins = ["pytester"]
ROOT = pathlib.Path(__file__).resolve().parent.parent
PROGRAMS = ROOT / "tests" / "programs"
# program -> relative tolerance of every number it prints on a device other than torch's cpu executor:
# the same seed draws torch's numbers on every executor (the torch random stream on MLX; on a GPU the reference
# runs there too, see reference_args), so only the kernels' roundings differ: float32 programs within 1e-4, the
# float64 LSTM within 1e-6
TOLERANCE = {"poly_regression": 1e-4, "bigram": 1e-4, "gpt": 1e-4, "lstm_lbfgs": 1e-6, "hf_compiled_generate": 1e-4}
# seconds a test running a program twice (the reference, then through tdx) may take: each run starts a Python with
# torch (and on a GPU a CUDA context) and may take up to _py's 300 s
PROGRAM_TIMEOUT = 600
# program -> its command-line arguments, in both runs: the LSTM's two LBFGS steps (its own default is three) carry
# the optimizer's history from one step() to the next, at two thirds of the time on MLX
PROGRAM_ARGS = {"lstm_lbfgs": ["2"]}


def _env(**extra):
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore")
    env.pop("TDX_RUN_DEVICE", None)
    env.update(extra)
    return env


# torch's gloo can abort a rank at shutdown, after the program's work is done: a transport thread destroyed
# while still joinable ends the process with SIGABRT and this line on stderr. Seen about once in a hundred
# runs of real torch's own DDP program on a loaded 2-core machine, never from a Python error.
GLOO_SHUTDOWN_ABORT = "terminate called without an active exception"


def _py(args, cwd, attempts=3, **env):
    """``python ARGS`` in CWD with the tests' environment; a run ended by gloo's shutdown abort (and only such a
    run) is run again, up to ATTEMPTS times in all, so that torch's own race never reads as a failure."""
    for _ in range(attempts):
        done = subprocess.run([sys.executable, *args], cwd=cwd, env=_env(**env), capture_output=True, text=True,
                              timeout=300)
        if done.returncode == 0 or not (GLOO_SHUTDOWN_ABORT in done.stderr and "SIGABRT" in done.stderr):
            return done
    return done


def _numbers(out: str) -> list:
    """Every decimal number a program printed, in order (losses, step by step)."""
    return [float(n) for n in re.findall(r"-?\d+\.\d+(?:e-?\d+)?", out)]


# real torch with every tensor and every generator made on DEVICE, as ``tdx run --device DEVICE`` makes them (its
# random draws then come from that device's generator, the CUDA one on a GPU, and its kernels are that device's).
# torch's ``Generator()`` is a CPU generator whatever the default device, and a draw on the device refuses it (the
# samplers of torch.utils.data, a program's own ``torch.Generator().manual_seed(0)``); tdx's follows the default
# device, so the reference's ``Generator()`` is made on DEVICE too
_ON_DEVICE = """
import runpy, sys, torch
device = sys.argv[1]
torch.set_default_device(device)
_Generator = torch.Generator


class Generator(_Generator):
    def __new__(cls, device=None):
        return _Generator.__new__(cls, torch.get_default_device() if device is None else device)


torch.Generator = Generator
sys.argv = sys.argv[2:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def reference_args(name: str, device: str = "cpu") -> list:
    """The arguments of the reference run of program ``name`` for tdx runs pinned to ``device``: ``python
    program.py`` under real torch where tdx promises torch's CPU numbers, else the program under real torch with
    its tensors on the device whose kernels tdx runs there (``torch_twin``)."""
    program, twin = _program(name), torch_twin(device)
    return program if twin == "cpu" else ["-c", _ON_DEVICE, twin, *program]


def _program(name: str) -> list:
    """Program ``name``'s path and its arguments (``PROGRAM_ARGS``), as both runs pass them."""
    return [str(PROGRAMS / f"{name}.py"), *PROGRAM_ARGS.get(name, ())]


def _reference(name: str, tmp_path_factory, device: str = "cpu"):
    """(working dir, stdout) of the reference run under real torch: the dir holds the data files it wrote, a copy
    of its own for each caller (``conftest.shared_reference``: one run a session)."""
    def make(cwd):
        done = _py(reference_args(name, device), cwd)
        assert done.returncode == 0, done.stderr
        return done.stdout

    return shared_reference(f"{name}-{torch_twin(device)}", tmp_path_factory, make)


# lstm_lbfgs trains in float64: a device without float64 (MLX's GPU) refuses it, as tdx does every float64 tensor there
@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.float64) if n == "lstm_lbfgs" else n
                                  for n in sorted(TOLERANCE)])
@pytest.mark.timeout(PROGRAM_TIMEOUT)
def test_program_runs_unmodified(name, device, tmp_path_factory):
    cwd, expected = _reference(name, tmp_path_factory, device)
    done = _py(["-m", "tdx", "run", "--device", device, *_program(name)], cwd)
    assert done.returncode == 0, done.stderr
    if device == "cpu":
        assert done.stdout == expected
    else:
        got, want = _numbers(done.stdout), _numbers(expected)
        assert len(got) == len(want) and got == pytest.approx(want, rel=TOLERANCE[name]), (done.stdout, expected)


def _script(tmp_path, body: str, name="prog.py") -> pathlib.Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return path


def test_alias_resolves_every_torch_path_to_tdx(tmp_path):
    script = _script(tmp_path, """
        import sys
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        from torch.nn import functional as F2
        import torch.optim as optim
        from torch.utils.data import DataLoader, Dataset
        import torch.backends.cudnn
        import torch.cuda, torch.mps, torch.accelerator, torch.testing, torch.autograd
        import tdx
        assert torch is tdx and nn is tdx.nn and F is F2 is tdx.nn.functional and optim is tdx.optim
        assert DataLoader is tdx.utils.data.DataLoader and torch.backends.cudnn is tdx.backends.cudnn
        x = torch.ones(2, 3, device="cpu")
        assert isinstance(x, torch.Tensor) and type(x) is tdx.Tensor
        real = sys.modules["torch"]            # tdx's executor loaded the real torch for itself
        assert real is not tdx and type(x.native).__module__ == "torch" and real.__file__.endswith("__init__.py")
        print(repr(x.dtype), repr(x.shape), repr(torch.preserve_format))
        try:
            import torch.no_such_module
        except ImportError as err:
            print("missing:", err.name, "|", err)
        try:
            from torch import no_such_name
        except ImportError as err:
            print("missing:", err.name)
        print(sys.argv, __name__, __file__ == sys.argv[3], sys.path[0] == sys.argv[4])
        sys.exit(7)
    """)
    done = _py(["-m", "tdx", "run", str(script), "a", "b", str(script), str(tmp_path)], tmp_path)
    assert done.returncode == 7, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "torch.float32 torch.Size([2, 3]) torch.preserve_format"
    assert lines[1].startswith("missing: torch.no_such_module | torch.no_such_module is not provided by tdx")
    assert lines[2] == "missing: torch.no_such_name"
    assert lines[3] == f"{[str(script), 'a', 'b', str(script), str(tmp_path)]} __main__ True True"


def test_traceback_is_the_programs_own(tmp_path):
    script = _script(tmp_path, """
        import torch
        def f():
            raise ValueError("boom")
        f()
    """)
    done = _py(["-m", "tdx", "run", str(script)], tmp_path)
    plain = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True,
                           env=_env(PYTHONPATH=""))
    assert done.returncode == plain.returncode == 1
    assert done.stderr == plain.stderr and "tdx" not in done.stderr


def test_run_module_and_usage(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    _script(tmp_path / "pkg", "import sys, torch\nprint(torch.__spec__.name, sys.argv[1:], __name__)\n", "mod.py")
    done = _py(["-m", "tdx", "run", "-m", "pkg.mod", "x"], tmp_path)
    assert done.returncode == 0 and done.stdout == "tdx ['x'] __main__\n", done.stderr
    assert _py(["-m", "tdx", "run"], tmp_path).returncode == 2
    version = _py(["-m", "tdx", "--version"], tmp_path)
    assert version.stdout.strip() == f"tdx {tdx.__version__}"
    bare = _py(["-m", "tdx"], tmp_path)
    assert bare.returncode == 0 and "run" in bare.stdout and "info" in bare.stdout


PIN_PROGRAM = """
    import warnings
    warnings.simplefilter("always")
    import torch
    import torch.nn as nn
    device = "cuda" if torch.cuda.is_available() else "cpu"
    with warnings.catch_warnings(record=True) as caught:
        made = [torch.zeros(2, device="cpu"), torch.zeros(2, device="cuda"), torch.ones(2, device="cuda:0"),
                torch.ones(2, device=torch.device("mps")), torch.ones(2).cuda(), torch.ones(2).to(device),
                torch.ones(2).to("cpu"), nn.Linear(2, 2).to("cuda").weight, torch.randn(2)]
    print(sorted({str(t.device) for t in made}))
    print(sum("pinned" in str(w.message) for w in caught), [str(w.message) for w in caught][:1])
    print(torch.cuda.is_available(), torch.accelerator.current_accelerator())
"""


def test_pin_puts_every_tensor_on_the_device(device, tmp_path):
    script = _script(tmp_path, PIN_PROGRAM)
    done = _py(["-m", "tdx", "run", "--device", device, str(script)], tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"['{tdx.device(device)}']"
    count, message = lines[1].split(" ", 1)
    assert count == "1" and "--device" in message and device in message
    from tdx.compat.cuda import is_accelerator

    accelerator = is_accelerator(tdx.device(device))
    assert lines[2].split()[0] == str(accelerator)


@pytest.mark.parametrize("how", ["env", "config"])
def test_pin_from_environment_and_config(how, tmp_path):
    script = _script(tmp_path, PIN_PROGRAM)
    env = {"TDX_RUN_DEVICE": "mlx:cpu"} if how == "env" else {}
    if how == "config":
        (tmp_path / "tdx.toml").write_text('[run]\ndevice = "mlx:cpu"\n')
    if not any(r.device == "mlx:cpu" and r.available for r in tdx.backends.available()):
        pytest.skip("mlx:cpu unavailable")
    done = _py(["-m", "tdx", "run", str(script)], tmp_path, **env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "['mlx:cpu']"
    where = "TDX_RUN_DEVICE" if how == "env" else f"[run] device in {tmp_path / 'tdx.toml'}"
    assert where in done.stdout


def test_bad_run_device_is_a_config_error(tmp_path):
    (tmp_path / "tdx.toml").write_text('[run]\ndevice = "gpu"\n')
    script = _script(tmp_path, "import torch\n")
    done = _py(["-m", "tdx", "run", str(script)], tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "ConfigError" in done.stderr and "'run.device'" in done.stderr and "'mlx:cpu'" in done.stderr
    info = _py(["-m", "tdx", "info"], tmp_path)
    assert info.returncode == 1 and "Traceback" not in info.stdout + info.stderr
    assert "config error" in info.stdout and "run.device" in info.stdout
    bad = _py(["-m", "tdx", "run", "--device", "tpu", str(script)], tmp_path)
    assert bad.returncode == 2 and "--device has bad value 'tpu'" in bad.stderr


def test_torch_alias_context_manager_in_process():
    from tdx.aliasing.torch_alias import is_active, torch_alias

    with torch_alias():
        import torch as aliased
        import torch.nn.functional as F
        from torch.utils.data import DataLoader

        assert aliased is tdx and F is tdx.nn.functional and DataLoader is tdx.utils.data.DataLoader
        assert repr(tdx.float64) == "torch.float64" and is_active()
        x = tdx.ones(2, device="cpu")  # tdx's executor still reaches the real torch
        assert type(x.native) is torch.Tensor
    import torch as real

    assert real is torch and sys.modules["torch"] is torch and not is_active()
    assert repr(tdx.float64) == "tdx.float64" and repr(tdx.Size([2])) == "tdx.Size([2])"


def test_torch_alias_pins_and_restores(device):
    from tdx.aliasing.torch_alias import torch_alias

    asked = {"cpu": "mlx", "cuda": "cpu"}.get(tdx.device(device).type, "cuda")  # a device of another type
    with pytest.warns(UserWarning, match="pinned by torch_alias"):
        with torch_alias(device):
            x = tdx.zeros(2, device=asked)
    assert str(x.device) == str(tdx.device(device)) or x.device == tdx.backends.get(device).device
    assert tdx.backends.pinned() is None


def test_mlx_without_torch_and_numpy_oracle(tmp_path):
    code = textwrap.dedent("""
        import sys
        sys.modules["torch"] = None
        import tdx, tdx.__main__
        if not any(r.device == "mlx:cpu" and r.available for r in tdx.backends.available()):
            print("no mlx"); raise SystemExit(0)
        x = tdx.ones(3, device="mlx:cpu") * 2
        assert x.sum().item() == 6.0
        rc = tdx.__main__.main(["demo"])
        print("rc", rc, sys.modules["torch"] is None)
    """)
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=_env(), capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    if "no mlx" not in done.stdout:
        assert "oracle: NumPy, float64" in done.stdout and "rc 0 True" in done.stdout
        assert re.search(r"mlx:cpu\s+ok", done.stdout)


def test_first_hour_names(device):
    for d in ("float16", "bfloat16", "float32", "float64"):
        a, b = tdx.finfo(getattr(tdx, d)), torch.finfo(getattr(torch, d))
        assert (a.bits, a.eps, a.max, a.min, a.tiny, a.resolution) == (b.bits, b.eps, b.max, b.min, b.tiny,
                                                                         b.resolution)
    for d in ("uint8", "int8", "int16", "int32", "int64"):
        a, b = tdx.iinfo(getattr(tdx, d)), torch.iinfo(getattr(torch, d))
        assert (a.bits, a.min, a.max) == (b.bits, b.min, b.max)
    with pytest.raises(TypeError):
        tdx.iinfo(tdx.float32)
    arr = np.arange(4.0)
    t = tdx.from_numpy(arr)
    arr[0] = 9
    assert t.tolist() == torch.from_numpy(arr).tolist() and t.dtype == tdx.float64
    with pytest.raises(TypeError, match="expected np.ndarray"):
        tdx.from_numpy([1, 2])
    tdx.manual_seed(np.int64(5))
    torch.manual_seed(np.int64(5))
    assert tdx.initial_seed() == torch.initial_seed() == 5
    x = tdx.arange(6.0, device=device).view(2, 3)
    for fmt in ("contiguous_format", "preserve_format"):
        f = getattr(tdx, fmt)
        assert x.contiguous(memory_format=f).tolist() == x.clone(memory_format=f).tolist() == x.tolist()
        assert tdx.zeros_like(x, memory_format=f).shape == x.to(device, memory_format=f).shape == (2, 3)
    with pytest.raises(NotImplementedError, match="channels_last"):
        x.contiguous(memory_format=tdx.channels_last)
    with pytest.raises(TypeError):
        x.clone(memory_format="contiguous")
    assert tdx.is_tensor(x) and tdx.is_floating_point(x) and tdx.numel(x) == 6 and repr(tdx.strided) == "tdx.strided"
    assert f"{x.sum():.2f}" == f"{torch.arange(6.0).sum():.2f}" == "15.00"
    tdx.set_printoptions(precision=2)
    torch.set_printoptions(precision=2)
    try:
        # on cpu (the default device is cuda where one exists), then on the device beside torch on its twin
        assert repr(tdx.tensor([1.2345, 2.5], device="cpu")) == repr(torch.tensor([1.2345, 2.5]))
        if torch_twin(device) == device:
            assert repr(tdx.tensor([1.2345, 2.5], device=device)) == repr(torch.tensor([1.2345, 2.5], device=device))
    finally:
        tdx.set_printoptions(profile="default")
        torch.set_printoptions(profile="default")


PROJECT_TEST = """
    import pytest

    @pytest.fixture
    def device():
        return "projects-own"

    def test_own_fixture(device):
        assert device == "projects-own"

    @pytest.mark.parametrize("device", ["cpu", "meta"])
    def test_own_parametrize(device):
        assert device in ("cpu", "meta")

    def test_opt_in(tdx_device):
        assert isinstance(tdx_device, str)
"""


def test_plugin_leaves_other_projects_alone(pytester):
    pytester.makepyfile(test_project=textwrap.dedent(PROJECT_TEST))
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider", "-v")
    result.assert_outcomes(passed=3 + sum(r.available for r in tdx.backends.available()),
                           skipped=sum(not r.available for r in tdx.backends.available()))
    result.stdout.fnmatch_lines(["*test_own_fixture PASSED*", "*test_own_parametrize?cpu? PASSED*",
                                 "*test_own_parametrize?meta? PASSED*", "*tdx device matrix*"])


ABSENT_ROWS_TEST = """
    import pytest

    @pytest.mark.parametrize("n", [1, 2, 3])
    def test_rows(tdx_device, n):
        assert n in (1, 2, 3)

    def test_single(tdx_device):
        pass
"""


@pytest.mark.parametrize("how", ["option", "ini", "default"])
def test_absent_devices_skip_one_row_per_function_where_asked(pytester, how):
    """``--tdx-absent=one`` (or ``tdx_absent = "one"`` in the ini options) keeps, of a device that is not there, one
    skipped row per test function, naming the reason and how many rows it stands for, and deselects the rest;
    without it every row is skipped. Present devices run every row either way."""
    rows = tdx.backends.available()
    present, absent = sum(r.available for r in rows), sum(not r.available for r in rows)
    if not absent:
        pytest.skip("every device tdx knows is on this machine: no row is skipped")
    pytester.makepyfile(test_absent=textwrap.dedent(ABSENT_ROWS_TEST))
    args = ["-p", "no:randomly", "-p", "no:cacheprovider", "-rs"]
    if how == "option":
        args.append("--tdx-absent=one")
    elif how == "ini":
        pytester.makeini("[pytest]\ntdx_absent = one\n")
    result = pytester.runpytest_subprocess(*args)
    if how == "default":
        result.assert_outcomes(passed=4 * present, skipped=4 * absent)
        return
    result.assert_outcomes(passed=4 * present, skipped=2 * absent, deselected=2 * absent)
    missing = next(r for r in rows if not r.available)
    result.stdout.fnmatch_lines([f"*{missing.device} unavailable: *(one row for 3: --tdx-absent=each lists each)*"])


STAR_MODULES = ("torch", "torch.nn", "torch.nn.functional", "torch.nn.init", "torch.optim",
                "torch.optim.lr_scheduler", "torch.utils.data", "torch.linalg", "torch.fft", "torch.special",
                "torch.autograd", "torch.distributions",
                "torch.amp", "torch.cuda", "torch.func", "torch.testing", "torch.nn.utils", "torch.nn.utils.rnn",
                "torch.masked", "torch.random", "torch.serialization", "torch.multiprocessing", "torch.jit",
                "torch.utils.checkpoint", "torch.profiler", "torch.hub")


def test_star_imports_under_run(tmp_path):
    """``from torch import *`` (and from torch's other namespaces) under ``python -m tdx run`` binds the names a
    program then uses, as under torch: nothing in an ``__all__`` fails to resolve."""
    script = _script(tmp_path, f"""
        for name in {STAR_MODULES!r}:
            exec(f"from {{name}} import *", {{}})
        from torch import *
        from torch.nn import *
        from torch.optim import *
        import torch
        x = tensor([[1.0, 2.0], [3.0, 4.0]])
        layer = Linear(2, 1)
        opt = SGD(layer.parameters(), lr=0.1)
        with no_grad():
            y = layer(x)
        print(type(x) is torch.Tensor and isinstance(layer, Module), zeros(2).sum().item(), y.shape, is_tensor(y))
    """)
    done = _py(["-m", "tdx", "run", str(script)], tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["True 0.0 torch.Size([2, 1]) True"]


def test_every_all_name_resolves():
    """Each tdx namespace's ``__all__`` names only what it has (a ``from ... import *`` reads every one)."""
    import importlib

    for name in STAR_MODULES:
        mod = importlib.import_module("tdx" + name[len("torch"):])
        missing = [n for n in getattr(mod, "__all__", ()) if not hasattr(mod, n)]
        assert not missing, f"{mod.__name__}.__all__ names what it lacks: {missing}"
