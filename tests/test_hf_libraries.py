"""Libraries built on torch over tdx: einops (its backend found by subclassing), safetensors
(byte-identical files), vision models in timm's/torchvision's idioms, third-party packages whose
names start with "torch" under the alias, and the cause shown when a library wraps a tdx refusal.

einops is also checked in-process against real torch as the oracle, with gradients; the programs
run through ``python -m tdx run`` on every device and print what they print under torch.
"""

from __future__ import annotations

import re
import textwrap

import numpy as np
import pytest
import torch

import tdx
from tdx.testing.parity import assert_close
from conftest import shared_reference, torch_twin
from test_run import PROGRAM_TIMEOUT, PROGRAMS, _py, reference_args

einops = pytest.importorskip("einops")
pytest.importorskip("safetensors")


def _reference(name, tmp_path_factory, device="cpu"):
    """(working dir, stdout) of the reference run (``reference_args``: on a GPU, real torch with its tensors there),
    one a session (``conftest.shared_reference``)."""
    def make(cwd):
        done = _py(reference_args(name, device), cwd)
        assert done.returncode == 0, done.stderr[-3000:]
        return done.stdout

    return shared_reference(f"hf-{name}-{torch_twin(device)}", tmp_path_factory, make)


def _einops_case(lib, x, w):
    from einops import einsum, pack, rearrange, reduce, repeat, unpack

    a = rearrange(x, "b (h p) w -> b h (p w)", p=2)
    m = reduce(x, "b h w -> b w", "max") + reduce(x, "b h w -> b h", "mean").sum(-1, keepdim=True)
    r = repeat(w, "h w -> b h w k", b=2, k=3)
    e = einsum(x, w, "b h w, h w -> b h")
    packed, shapes = pack([x, m], "b *")
    first, second = unpack(packed, shapes, "b *")
    return [a, m, r, e, packed, first, second]


def test_einops_matches_torch_with_gradients(device):
    rng = np.random.default_rng(0)
    xs, ws = rng.standard_normal((2, 4, 3)).astype(np.float32), rng.standard_normal((4, 3)).astype(np.float32)
    outs = {}
    for lib, mk in (("torch", lambda a: torch.tensor(a, requires_grad=True)),
                    ("tdx", lambda a: tdx.tensor(a, device=device, requires_grad=True))):
        x, w = mk(xs), mk(ws)
        res = _einops_case(lib, x, w)
        sum(t.pow(2).sum() for t in res).backward()
        outs[lib] = (res, x.grad, w.grad)
    for got, want in zip(outs["tdx"][0] + [outs["tdx"][1], outs["tdx"][2]],
                         outs["torch"][0] + [outs["torch"][1], outs["torch"][2]]):
        assert isinstance(got, tdx.Tensor) and got.device == tdx.device(device)
        assert_close(got, want)


# einops_safetensors computes its data in float64 and saves a float64 tensor: a device without float64 (MLX's GPU)
# refuses it, as tdx does every float64 tensor there
@pytest.mark.parametrize("name", [pytest.param("einops_safetensors", marks=pytest.mark.float64), "vision_models"])
@pytest.mark.timeout(PROGRAM_TIMEOUT)
def test_library_programs_run_unmodified(name, device, tmp_path_factory):
    """einops layers and safetensors files (byte-identical: same SHA-256 on every device, against ``python
    program.py``); vision models (on a GPU against real torch there: cuDNN's TF32 convolutions, CUDA's draws)."""
    cwd, expected = _reference(name, tmp_path_factory, "cpu" if name == "einops_safetensors" else device)
    done = _py(["-m", "tdx", "run", "--device", device, str(PROGRAMS / f"{name}.py")], cwd)
    assert done.returncode == 0, done.stderr[-3000:]
    if device == "cpu" or name == "einops_safetensors":
        assert done.stdout == expected
        return
    number = re.compile(r"loss (-?[0-9.]+)")
    got, want = done.stdout.splitlines(), expected.splitlines()
    assert len(got) == len(want) == 9
    for g, w in zip(got, want):
        assert float(number.search(g).group(1)) == pytest.approx(float(number.search(w).group(1)), rel=1e-4)
        assert g.split(" loss ")[0] == w.split(" loss ")[0]


def test_safetensors_reads_device_memory_through_the_host(device):
    """safetensors reads a tensor's bytes at ``data_ptr`` after ``tensor.to("cpu")``, which a device pin keeps on
    the device (on cuda: device memory read from the host ends the process). Its per-tensor read is wrapped: a
    tensor off the cpu executor gives torch's bytes read through the host, a cpu tensor the library's own read."""
    import safetensors.torch

    from tdx.compat.integrations import safetensors as integration

    assert safetensors.torch._to_ndarray.__module__ == integration.__name__
    caps = tdx.backends.get(device).caps
    for dtype in ("float32", "float16", "bfloat16", "float64", "int64", "int32", "uint8", "bool"):
        if dtype not in caps.dtypes:
            continue
        for shape in ((2, 3), (), (0, 4)):
            arr = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape) * 0.37
            t = torch.tensor(arr).to(getattr(torch, dtype))
            x = tdx.tensor(arr, dtype=getattr(tdx, dtype), device=device)
            library_read = []
            data, _ = integration.host_ndarray(x, lambda v: library_read.append(v) or (np.zeros(0, np.uint8), v))
            if x.device.type == "cpu":
                assert library_read == [x]
                continue
            assert not library_read and data.dtype == np.uint8, (dtype, shape)
            assert data.tobytes() == t.reshape(-1).view(torch.uint8).numpy().tobytes(), (dtype, shape)


def test_torch_prefixed_packages_import_as_themselves(tmp_path, device):
    """torchy, torchvision-like and torchmetrics-like packages are not torch: they import as themselves."""
    for pkg in ("torchy", "torchvision_standin", "torchmetrics_standin"):
        (tmp_path / pkg).mkdir()
        (tmp_path / pkg / "__init__.py").write_text(textwrap.dedent(f"""
            import torch
            from torch import nn
            NAME = __name__
            TORCH = torch.__spec__.name
            def make():
                return nn.Linear(2, 2)(torch.ones(1, 2)).device
        """))
    (tmp_path / "prog.py").write_text(textwrap.dedent("""
        import torch, torchy, torchvision_standin, torchmetrics_standin
        for m in (torchy, torchvision_standin, torchmetrics_standin):
            print(m.NAME, m.TORCH, m.make().type != "meta", m.__file__.endswith(m.NAME + "/__init__.py"))
    """))
    done = _py(["-m", "tdx", "run", "--device", device, "prog.py"], tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split("\n")[:3] == [f"{n} tdx True True" for n in
                                           ("torchy", "torchvision_standin", "torchmetrics_standin")]


def test_a_library_wrapped_refusal_names_its_cause(tmp_path, device):
    """A library that re-raises an import failure as its own error (transformers' lazy modules) still
    shows the torch name tdx lacks, on the last line the user reads."""
    (tmp_path / "lazylib").mkdir()
    (tmp_path / "lazylib" / "__init__.py").write_text(textwrap.dedent("""
        def __getattr__(name):
            try:
                import torch.not_a_namespace_xyz
            except ImportError as e:
                raise ModuleNotFoundError(f"Could not import module {name!r}. Are this object's "
                                          "requirements defined correctly?") from e
    """))
    (tmp_path / "prog.py").write_text("import lazylib\nlazylib.Model\n")
    done = _py(["-m", "tdx", "run", "--device", device, "prog.py"], tmp_path)
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("tdx: the underlying cause: NotProvidedError: torch.not_a_namespace_xyz is not provided")
