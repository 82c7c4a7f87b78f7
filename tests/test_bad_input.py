"""Bad input across the public API: each call of the table is made with torch (CPU) and with tdx on every
device, and tdx must refuse it with a ``TdxError`` that is also the very builtin class torch raised
(``except RuntimeError`` written for torch keeps working). Also the refusals torch has no twin for:
MLX's 32-bit dimension limit, a learning rate given as a str, a config device with whitespace, and a
malformed ``pyproject.toml`` in a parent folder."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
import torch

import tdx
from conftest import skip_value_checked, torch_twin


def _builtin(err: BaseException) -> type:
    """The most derived builtin exception class of ``err`` (torch's ``IndexError`` of ``index out of range``)."""
    return next(c for c in type(err).__mro__ if c.__module__ == "builtins")


def _ones(t, d, *shape, **kw):
    return t.ones(*shape, device=d, **kw)


BAD = {  # name -> call(lib, device); torch must raise
    "arange step 0": lambda t, d: t.arange(0, 5, 0, device=d),
    "arange inconsistent sign": lambda t, d: t.arange(0, 5, -1, device=d),
    "linspace steps -1": lambda t, d: t.linspace(0, 1, -1, device=d),
    "eye -1": lambda t, d: t.eye(-1, device=d),
    "randint low >= high": lambda t, d: t.randint(5, 2, (3,), device=d),
    "randperm -1": lambda t, d: t.randperm(-1, device=d),
    "empty -1": lambda t, d: t.empty(-1, device=d),
    "zeros of a str": lambda t, d: t.zeros("12", device=d),
    "zeros of a float size": lambda t, d: t.zeros((2.5,), device=d),
    "device with a space": lambda t, d: t.device(" cpu"),
    "unknown device": lambda t, d: t.zeros(2, device="nope"),
    "split 0": lambda t, d: t.arange(4, device=d).split(0),
    "split -1": lambda t, d: t.arange(4, device=d).split(-1),
    "chunk 0": lambda t, d: t.arange(4, device=d).chunk(0),
    "chunk of a float": lambda t, d: t.arange(4, device=d).chunk(1.5),
    "div rounding_mode round": lambda t, d: t.div(_ones(t, d, 2), 2, rounding_mode="round"),
    "cat []": lambda t, d: t.cat([]),
    "stack []": lambda t, d: t.stack([]),
    "hstack []": lambda t, d: t.hstack([]),
    "cat mismatched shapes": lambda t, d: t.cat([_ones(t, d, 2, 3), _ones(t, d, 2, 4)]),
    "cat mismatched ranks": lambda t, d: t.cat([_ones(t, d, 2, 3), _ones(t, d, 3)]),
    "cat of 0-d tensors": lambda t, d: t.cat([t.tensor(1.0, device=d), t.tensor(2.0, device=d)]),
    "index_select out of range": lambda t, d: t.arange(4.0, device=d).index_select(0, t.tensor([7], device=d)),
    "index_add_ out of range": lambda t, d: t.zeros(4, device=d).index_add_(0, t.tensor([7], device=d),
                                                                         _ones(t, d, 1)),
    "index_copy_ out of range": lambda t, d: t.zeros(4, device=d).index_copy_(0, t.tensor([7], device=d),
                                                                           _ones(t, d, 1)),
    "index_fill_ out of range": lambda t, d: t.zeros(4, device=d).index_fill_(0, t.tensor([7], device=d), 1.0),
    "gather out of range": lambda t, d: t.zeros(4, device=d).gather(0, t.tensor([7], device=d)),
    "scatter_ out of range": lambda t, d: t.zeros(4, device=d).scatter_(0, t.tensor([7], device=d), _ones(t, d, 1)),
    "view as float64, odd last dim": lambda t, d: t.zeros(3, device=d).view(t.float64),
    "view of another numel": lambda t, d: _ones(t, d, 2, 3).view(4),
    "reshape of another numel": lambda t, d: _ones(t, d, 2, 3).reshape(5),
    "view to negative dims of the right product": lambda t, d: _ones(t, d, 2, 3).view(-2, -3),
    "reshape to negative dims of the right product": lambda t, d: _ones(t, d, 2, 3).reshape(-3, -2),
    "view with two -1": lambda t, d: _ones(t, d, 2, 3).view(-1, -1),
    "view with a -1 the size does not fill": lambda t, d: _ones(t, d, 2, 3).view(4, -1),
    "requires_grad_ on int": lambda t, d: t.zeros(3, dtype=t.int64, device=d).requires_grad_(),
    "int tensor requiring grad": lambda t, d: t.zeros(3, dtype=t.int64, device=d, requires_grad=True),
    "SGD lr str": lambda t, d: t.optim.SGD([t.nn.Parameter(_ones(t, d, 2))], lr="0.1"),
    "SGD lr negative": lambda t, d: t.optim.SGD([t.nn.Parameter(_ones(t, d, 2))], lr=-0.1),
    "Adam lr str": lambda t, d: t.optim.Adam([t.nn.Parameter(_ones(t, d, 2))], lr="1e-3"),
    "add of unbroadcastable shapes": lambda t, d: _ones(t, d, 2) + _ones(t, d, 3),
    "matmul of mismatched shapes": lambda t, d: _ones(t, d, 2, 3) @ _ones(t, d, 2, 3),
    "sum over a missing dim": lambda t, d: _ones(t, d, 2).sum(dim=5),
    "transpose of a missing dim": lambda t, d: _ones(t, d, 2, 2).transpose(0, 3),
    "permute repeating a dim": lambda t, d: _ones(t, d, 2, 2).permute(0, 0),
    "expand to a smaller size": lambda t, d: _ones(t, d, 3, 1).expand(2, 1),
    "item of many elements": lambda t, d: _ones(t, d, 2).item(),
    "index past the end": lambda t, d: _ones(t, d, 2)[5],
    "softmax over a missing dim": lambda t, d: t.nn.functional.softmax(_ones(t, d, 2), dim=3),
    "Linear of the wrong width": lambda t, d: t.nn.Linear(2, 3).to(d)(_ones(t, d, 2, 4)),
    "multinomial of negative weights": lambda t, d: t.multinomial(t.tensor([-1.0, 1.0], device=d), 1),
    # torch's classes for the cases a probe of 5,000 calls found raising another one, or nothing
    "GradScaler growth_factor 1": lambda t, d: t.amp.GradScaler("cpu", growth_factor=1.0),
    "GradScaler backoff_factor 1": lambda t, d: t.amp.GradScaler("cpu", backoff_factor=1.0),
    "float() of two elements": lambda t, d: float(_ones(t, d, 2)),
    "int() of two elements": lambda t, d: int(_ones(t, d, 2)),
    "complex() of no element": lambda t, d: complex(_ones(t, d, 0)),
    "put_ out of range": lambda t, d: _ones(t, d, 3).put_(t.tensor([5], device=d), _ones(t, d, 1)),
    "put_ negative out of range": lambda t, d: _ones(t, d, 3).put_(t.tensor([-4], device=d), _ones(t, d, 1)),
    "kthvalue k out of range": lambda t, d: t.kthvalue(_ones(t, d, 3), 4),
    "kthvalue k 0": lambda t, d: _ones(t, d, 3).kthvalue(0),
    "index_select negative": lambda t, d: t.arange(4.0, device=d).index_select(0, t.tensor([-1], device=d)),
    "dtype given as a str": lambda t, d: t.ones(2, dtype="float32", device=d),
    "dtype given as a qualified str": lambda t, d: t.zeros(2, dtype="torch.float64", device=d),
    "sum dtype given as a str": lambda t, d: _ones(t, d, 2).sum(dtype="float64"),
    "dtype given as a NumPy type": lambda t, d: t.ones(2, dtype=__import__("numpy").float64, device=d),
    "set_default_dtype(float)": lambda t, d: t.set_default_dtype(float),
    "Tensor.type(float)": lambda t, d: _ones(t, d, 2).type(float),
    "Tensor.type('float64')": lambda t, d: _ones(t, d, 2).type("float64"),
    "Adam lr nan": lambda t, d: t.optim.Adam([t.nn.Parameter(_ones(t, d, 2))], lr=float("nan")),
    "AdamW lr nan": lambda t, d: t.optim.AdamW([t.nn.Parameter(_ones(t, d, 2))], lr=float("nan")),
    "RMSprop lr nan": lambda t, d: t.optim.RMSprop([t.nn.Parameter(_ones(t, d, 2))], lr=float("nan")),
    "Adagrad lr nan": lambda t, d: t.optim.Adagrad([t.nn.Parameter(_ones(t, d, 2))], lr=float("nan")),
    "Adam lr nan tensor": lambda t, d: t.optim.Adam([t.nn.Parameter(_ones(t, d, 2))], lr=t.tensor(float("nan"))),
    "Muon lr nan": lambda t, d: t.optim.Muon([t.nn.Parameter(_ones(t, d, 2, 2))], lr=float("nan")),
    "mm of a 3-d input": lambda t, d: t.mm(_ones(t, d, 1, 2, 2), _ones(t, d, 2, 2)),
    "mm of a 1-d mat2": lambda t, d: _ones(t, d, 2, 2).mm(_ones(t, d, 2)),
    "int8 indices": lambda t, d: _ones(t, d, 3)[t.tensor([0, 1], dtype=t.int8, device=d)],
    "int16 indices": lambda t, d: _ones(t, d, 3)[t.tensor([0, 1], dtype=t.int16, device=d)],
    "index_put_ of floats into int64": lambda t, d: t.zeros(3, dtype=t.int64, device=d).index_put_(
        (t.tensor([0], device=d),), _ones(t, d, 1)),
    "index_put_ accumulate of floats into int64": lambda t, d: t.zeros(3, dtype=t.int64, device=d).index_put_(
        (t.tensor([0], device=d),), _ones(t, d, 1), accumulate=True),
    "x[int tensor] = float tensor, x int64": lambda t, d: t.zeros(3, dtype=t.int64, device=d).__setitem__(
        t.tensor([0, 2], device=d), _ones(t, d, 2)),
    "empty_strided negative stride": lambda t, d: t.empty_strided((2, 3), (-1, 2), device=d),
    "empty_strided strides of another length": lambda t, d: t.empty_strided((2, 3), (1,), device=d),
    "rand of int64": lambda t, d: t.rand(2, dtype=t.int64, device=d),
    "arange of bool": lambda t, d: t.arange(3, dtype=t.bool, device=d),
    "cumsum_ to another dtype": lambda t, d: _ones(t, d, 3).cumsum_(0, dtype=t.float64),
}


VALUE_CHECKED = {"index_select out of range", "index_add_ out of range", "index_copy_ out of range",
                 "index_fill_ out of range", "gather out of range", "scatter_ out of range",
                 "multinomial of negative weights", "index_select negative", "put_ out of range",
                 "put_ negative out of range"}  # checked inside the kernel on CUDA (a device-side assert)


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_input_raises_torchs_class(device, name):
    if name in VALUE_CHECKED:
        skip_value_checked(device, name)
    if "float64" in name and not tdx.backends.get(device).caps.float64:
        pytest.skip(f"{device} has no float64")
    call = BAD[name]
    with pytest.raises(Exception) as expected:
        call(torch, "cpu")
    kind = _builtin(expected.value)
    with pytest.raises(Exception) as got:
        call(tdx, device)
    assert isinstance(got.value, kind) and isinstance(got.value, tdx.TdxError), \
        f"{name}: torch raises {kind.__name__}, tdx {type(got.value).__mro__}: {got.value}"


@pytest.mark.parametrize("make", [lambda d: tdx.zeros(0, 2 ** 31, device=d), lambda d: tdx.randperm(2 ** 34, device=d),
                                  lambda d: tdx.randperm(2 ** 31, device=d), lambda d: tdx.arange(2 ** 31, device=d),
                                  lambda d: tdx.zeros(0, device=d).reshape(0, 2 ** 31),
                                  lambda d: tdx.ones(1, device=d).expand(2 ** 31),
                                  lambda d: tdx.randint(0, 5, (0, 2 ** 31), device=d)],
                         ids=["zeros", "randperm 2**34", "randperm 2**31", "arange", "reshape", "expand", "randint"])
def test_mlx_dimension_limit_is_named(device, make):
    """MLX shapes are 32-bit: a dimension of 2**31 or more is refused by name (the op, the limit), as
    a RuntimeError, never MLX's bare OverflowError or ``std::bad_cast``."""
    if not device.startswith("mlx"):
        pytest.skip("the 32-bit dimension limit is MLX's")
    with pytest.raises(RuntimeError, match=r"exceeds MLX's limit of 2147483647") as info:
        make(device)
    assert isinstance(info.value, tdx.TdxError)
    op = str(info.value).split(":")[0]
    assert op in ("zeros", "randperm", "arange", "reshape", "expand", "randint"), str(info.value)


def _tdx_in(folder, code: str):
    import os

    env = {**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(os.path.abspath(tdx.__file__)))}
    env.pop("TDX_CONFIG", None)
    env.pop("TDX_DEVICE", None)
    return subprocess.run([sys.executable, "-W", "always", "-c", textwrap.dedent(code)], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=120)


def test_config_device_with_whitespace_is_refused(device, tmp_path):
    (tmp_path / "tdx.toml").write_text('default_device = " cpu"\n')
    out = _tdx_in(tmp_path, "import tdx\ntry:\n    tdx.zeros(1)\nexcept tdx.ConfigError as e:\n    print('REFUSED', e)")
    assert "REFUSED" in out.stdout and "default_device" in out.stdout and "' cpu'" in out.stdout, out.stderr[-2000:]


def test_malformed_unrelated_pyproject_in_a_parent_folder(device, tmp_path):
    """tdx reads only ``[tool.tdx]``: a parent's pyproject.toml that is not TOML and never mentions tdx
    is ignored with a warning; one that mentions tdx and cannot be parsed is a ConfigError naming it."""
    inner = tmp_path / "project" / "src"
    inner.mkdir(parents=True)
    (tmp_path / "pyproject.toml").write_text("[project\nname = 'other'\n")
    code = f"import tdx\ntdx.zeros(1)\nprint('DEVICE', tdx.zeros(1, device={device!r}).device)"  # the default read
    out = _tdx_in(inner, code)
    assert f"DEVICE {device}" in out.stdout, out.stderr[-2000:]
    assert "ignores" in out.stderr and "pyproject.toml" in out.stderr
    (tmp_path / "pyproject.toml").write_text('[tool.tdx]\ndefault_device = "cpu"\n[broken\n')
    out = _tdx_in(inner, "import tdx\ntry:\n    tdx.zeros(1)\nexcept tdx.ConfigError as e:\n    print('REFUSED', e)")
    assert "REFUSED" in out.stdout and "pyproject.toml" in out.stdout and "mentions tdx" in out.stdout, out.stderr


# where torch computes, tdx computes the same (each once raised): compared with torch on the device's twin (cuda's
# random_ draws from its Philox generator)
WORKS = {
    "random_() of int64": lambda t, d: (t.manual_seed(0), t.zeros(5, dtype=t.int64, device=d).random_())[1],
    "random_() of int32": lambda t, d: (t.manual_seed(1), t.zeros(5, dtype=t.int32, device=d).random_())[1],
    "random_(-5, 5) of int16": lambda t, d: (t.manual_seed(2), t.zeros(5, dtype=t.int16, device=d).random_(-5, 5))[1],
    "empty_strided non-contiguous, written": lambda t, d: t.empty_strided((2, 3), (1, 2), device=d).copy_(
        t.arange(6.0, device=d).reshape(2, 3)),
    "empty_strided with gaps, its stride": lambda t, d: t.tensor(t.empty_strided((2, 3), (6, 2), device=d).stride()),
    "empty_strided overlapping, its stride": lambda t, d: t.tensor(t.empty_strided((2, 3), (0, 1), device=d).stride()),
    "empty_strided empty, its stride": lambda t, d: t.tensor(t.empty_strided((0, 3), (1, 5), device=d).stride()),
    "empty_strided empty last dim, its stride": lambda t, d: t.tensor(
        t.empty_strided((2, 0), (7, 1), device=d).stride()),
    "empty_strided size-1 dim, its stride": lambda t, d: t.tensor(t.empty_strided((3, 1), (1, 9), device=d).stride()),
    "new_empty_strided non-contiguous": lambda t, d: t.tensor(
        _ones(t, d, 1).new_empty_strided((2, 3), (1, 2)).stride()),
    "vmap(jacrev(tanh))": lambda t, d: t.func.vmap(t.func.jacrev(t.tanh))(t.tensor([[0.1, 0.2], [0.3, 0.4]], device=d)),
    "vmap(jacrev(sigmoid))": lambda t, d: t.func.vmap(t.func.jacrev(t.sigmoid))(t.tensor([[0.1, 0.2]], device=d)),
    "SGD lr nan (torch's SGD checks lr < 0)": lambda t, d: t.tensor(
        t.optim.SGD([t.nn.Parameter(_ones(t, d, 2))], lr=float("nan")).param_groups[0]["lr"]),
    "GradScaler backoff_factor 0": lambda t, d: t.tensor(
        t.amp.GradScaler("cpu", backoff_factor=0.0).get_backoff_factor()),
    "x[0:1] = float tensor, x int64 (a copy, cast)": lambda t, d: t.zeros(3, dtype=t.int64, device=d).__setitem__(
        slice(0, 1), t.tensor([1.5], device=d)) or t.zeros(1),
    "uint8 index is a mask": lambda t, d: _ones(t, d, 3)[t.tensor([0, 1, 1], dtype=t.uint8, device=d)],
}


@pytest.mark.parametrize("name", sorted(WORKS))
def test_torch_computes_so_does_tdx(device, name):
    import warnings

    from tdx.testing.parity import assert_close

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # uint8 indices: torch's deprecation warning
        expected = WORKS[name](torch, torch_twin(device))
        got = WORKS[name](tdx, device)
    assert_close(got, expected, msg=name)


@pytest.mark.parametrize("shape", [(2,), (0,), (2, 2), (1, 0)])
def test_truth_value_of_many_or_no_elements_in_torchs_words(device, shape):
    """``bool()``/``if`` of a tensor of several or no elements: torch's RuntimeError, word for word."""
    with pytest.raises(RuntimeError) as want:
        bool(torch.ones(shape))
    with pytest.raises(tdx.TdxError) as got:
        bool(tdx.ones(shape, device=device))
    assert isinstance(got.value, RuntimeError) and str(got.value) == str(want.value)
