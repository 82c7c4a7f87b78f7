"""A newcomer's first hour: exit codes, the program name in help, a compact ``info``, a local folder
named like a framework, ``.numpy()`` of a tensor that requires grad, and the package metadata.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest
import torch

import tdx
from conftest import torch_twin

ROOT = pathlib.Path(__file__).resolve().parent.parent
if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib


def _run(args, cwd=ROOT, **kw):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=180, **kw)


@pytest.mark.parametrize("text", ["default_device = 5", "[[[", "bogus = 1"])
def test_info_exits_nonzero_on_a_config_error(tmp_path, text):
    (tmp_path / "tdx.toml").write_text(text + "\n", encoding="utf-8")
    run = _run([sys.executable, "-m", "tdx", "info"], cwd=tmp_path)
    assert run.returncode == 1, run.stdout
    assert "config error" in run.stdout and "tdx.toml" in run.stdout


def test_demo_exits_nonzero_when_nothing_ran():
    code = ("import sys\nfor m in ('torch', 'mlx', 'mlx.core'): sys.modules[m] = None\n"
            "from tdx.__main__ import main\nsys.exit(main(['demo']))")
    run = _run([sys.executable, "-c", code])
    assert run.returncode == 1, run.stdout + run.stderr
    assert "nothing ran" in run.stderr and "pip install 'tdx-runtime[" in run.stderr


def test_help_names_the_program_as_invoked():
    assert _run([sys.executable, "-m", "tdx", "--help"]).stdout.startswith("usage: python -m tdx ")
    script = pathlib.Path(sys.executable).with_name("tdx")
    if not script.exists():
        pytest.skip("the tdx console script is not installed beside this interpreter")
    assert _run([str(script), "--help"]).stdout.startswith("usage: tdx ")


def test_info_is_compact_unless_verbose():
    short = _run([sys.executable, "-m", "tdx", "info"])
    assert short.returncode == 0, short.stdout + short.stderr
    assert max(len(line) for line in short.stdout.splitlines()) <= 130
    assert "--verbose" in short.stdout and "where present" not in short.stdout
    long = _run([sys.executable, "-m", "tdx", "info", "--verbose"])
    assert long.returncode == 0 and "DLPack exchange matrix" in long.stdout
    assert len(long.stdout.splitlines()) > len(short.stdout.splitlines())


@pytest.mark.parametrize("framework", ["mlx", "torch"])
def test_a_local_folder_never_shadows_the_framework(tmp_path, framework):
    (tmp_path / framework).mkdir()
    (tmp_path / framework / "__init__.py").write_text("raise ImportError('the local folder was imported')\n")
    device = "mlx:cpu" if framework == "mlx" else "cpu"
    if not any(r.available for r in tdx.backends.available() if r.device == device):
        pytest.skip(f"{device} is not available here")
    code = f"import tdx\nprint(tdx.ones(3, device={device!r}).sum().item())"
    run = _run([sys.executable, "-c", code], cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "3.0"
    assert str(tmp_path / framework) in run.stderr and "shadow" in run.stderr


def test_a_namespace_folder_is_left_out_silently(tmp_path):
    if not any(r.available for r in tdx.backends.available() if r.device == "mlx:cpu"):
        pytest.skip("mlx:cpu is not available here")
    (tmp_path / "mlx" / "core").mkdir(parents=True)
    (tmp_path / "mlx" / "core" / "__init__.py").write_text("raise ImportError('the local folder was imported')\n")
    run = _run([sys.executable, "-W", "error", "-c", "import tdx\nprint(tdx.ones(2, device='mlx:cpu').sum().item())"],
               cwd=tmp_path)
    assert run.returncode == 0 and run.stdout.strip() == "2.0", run.stderr


def test_numpy_of_a_tensor_that_requires_grad(device):
    x = tdx.ones(3, device=device, requires_grad=True)
    t = torch.ones(3, requires_grad=True, device=torch_twin(device))
    with pytest.raises((RuntimeError, TypeError)) as expected:  # on a GPU torch refuses the device first
        t.numpy()
    kind = type(expected.value)
    with pytest.raises(kind) as got:
        x.numpy()
    assert isinstance(got.value, tdx.TdxError) and str(got.value) == str(expected.value)
    host = (lambda a: a.cpu()) if kind is TypeError else (lambda a: a)  # noqa: E731 - a GPU tensor: .cpu() first
    assert (host(x.detach()).numpy() == host(t.detach()).numpy()).all()
    assert (x.numpy(force=True) == t.numpy(force=True)).all()
    y = x * 2
    with pytest.raises(kind):
        y.numpy()
    assert (host(y.detach()).numpy() == 2).all()


def test_package_metadata():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert meta["name"] == "tdx-runtime"
    assert meta["license"] == "MIT" and meta["license-files"] == ["LICENSE"]
    assert all("tdx-runtime[" in dep for dep in meta["optional-dependencies"]["all"])


def test_pin_warning_names_the_programs_own_request(tmp_path):
    if not any(r.available for r in tdx.backends.available() if r.device == "mlx:cpu"):
        pytest.skip("mlx:cpu is not available here")
    prog = tmp_path / "prog.py"
    prog.write_text("import torch\nfrom torch.utils.data import DataLoader, TensorDataset, random_split\n"
                    "ds = TensorDataset(torch.arange(8.).reshape(4, 2))\n"
                    "parts = random_split(ds, [2, 2])\n"
                    "for (b,) in DataLoader(ds, batch_size=2, shuffle=True):\n"
                    "    print(b.device)\n"
                    "x = torch.zeros(2, device='cuda')\n")
    run = _run([sys.executable, "-m", "tdx", "run", "--device", "mlx:cpu", str(prog)], cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["mlx:cpu", "mlx:cpu"]
    warned = [line for line in run.stderr.splitlines() if "runs on the pinned device" in line]
    assert len(warned) == 1 and "device 'cuda'" in warned[0] and "prog.py:7" in warned[0], run.stderr


def test_info_into_a_closed_pipe_ends_quietly():
    run = _run(["sh", "-c", f"'{sys.executable}' -m tdx info --verbose | head -1"])
    assert run.stdout.startswith("tdx ") and "Traceback" not in run.stderr, run.stderr
