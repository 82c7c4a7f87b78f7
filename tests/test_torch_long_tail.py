"""torch's long tail that libraries rely on, each held to real torch (on CPU) as the oracle on every device.

Tensors take attributes; ``torch.Size`` slices and sums are Sizes; the alias answers torch's name and version;
namespaces' ``__dict__`` hold their lazy names; an optimizer subclass that never ran ``Optimizer.__init__`` steps
(accelerate's); the ``torch._check`` family; ``out=`` and NumPy's ``axis=``/``keepdims=``; ``value in tensor``;
``squeeze(0, 1)``; ``where(condition)``; ``to_empty`` after ``meta``; ATen ops that are no torch function; the
private names libraries import (``torch._C``, ``_jit_internal``, ``_tensor_str``...).
"""

from __future__ import annotations

import copy
import importlib
import subprocess
import sys

import numpy as np
import pytest
import torch

import tdx
from tdx.testing.parity import assert_close
from test_run import ROOT, _env


def _pair(device, make):
    """(tdx result, torch result) of ``make(lib, device)`` on tdx's ``device`` and torch's CPU."""
    return make(tdx, device), make(torch, "cpu")


def test_tensors_take_attributes_and_keep_them_in_deepcopy(device):
    x = tdx.ones(2, device=device)
    assert x.__dict__ == {}
    x._pyro_custom_init = False
    x.tag = ["a"]
    y = copy.deepcopy(x)
    assert y.__dict__ == {"_pyro_custom_init": False, "tag": ["a"]} and y.tag is not x.tag
    p = tdx.nn.Parameter(tdx.ones(2, device=device))
    p._is_sharded = True
    assert p._is_sharded and isinstance(p, tdx.nn.Parameter)
    assert tdx.ones(1, device=device).__dict__ == {}  # a new tensor has none of another's


@pytest.mark.parametrize("expr", ["s[1:]", "s[-1:]", "s[::2]", "s + (5,)", "(5,) + s", "s + s", "s * 2", "2 * s",
                                  "s[0]", "s[-1:].numel()"])
def test_size_slices_sums_and_repeats_are_sizes(expr, device):
    got = eval(expr, {"s": tdx.ones(2, 3, 4, device=device).shape})
    want = eval(expr, {"s": torch.ones(2, 3, 4).shape})
    assert got == want and (type(got) is tdx.Size) == (type(want) is torch.Size)
    with pytest.raises(TypeError, match="can only concatenate tuple"):
        tdx.Size([1]) + [2]


def test_alias_answers_torchs_name_and_version(tmp_path):
    prog = tmp_path / "p.py"
    prog.write_text("import torch, sys\nprint(torch.__name__, torch.__version__, torch.version.__version__, "
                    "sorted(k for k in ('Adam', 'SGD', 'AdamW') if k in torch.optim.__dict__), torch.torch is torch)\n"
                    "import tdx.compat.version as v; print(sys.modules['tdx'].__dict__['__version__'] != v.__version__)\n")
    done = subprocess.run([sys.executable, "-m", "tdx", "run", str(prog)], cwd=tmp_path, env=_env(),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    version = torch.__version__.split("+")[0]
    assert done.stdout.split("\n")[:2] == [f"torch {version} {version} ['Adam', 'AdamW', 'SGD'] True", "True"]
    assert tdx.__name__ == "tdx" and tdx.__version__ != version  # without the alias: tdx's own


def test_optimizer_subclass_without_init_steps_unhooked():
    class Wrapper(tdx.optim.Optimizer):  # accelerate's AcceleratedOptimizer: wraps, never calls Optimizer.__init__
        def __init__(self, inner):
            self.inner = inner

        def step(self, closure=None):
            return self.inner.step(closure)

    w = tdx.nn.Parameter(tdx.ones(2))
    inner = tdx.optim.SGD([w], lr=0.5)
    seen = []
    inner.register_step_pre_hook(lambda *a: seen.append("inner"))
    w.grad = tdx.ones(2)
    Wrapper(inner).step()
    assert seen == ["inner"] and w.tolist() == [0.5, 0.5]


@pytest.mark.parametrize("name", ["_check", "_check_index", "_check_value", "_check_type", "_check_not_implemented"])
def test_check_family_raises_torchs_error(name):
    getattr(tdx, name)(True)
    for message in (None, lambda: "bad value"):
        with pytest.raises(Exception) as want:
            getattr(torch, name)(False, message)
        with pytest.raises(type(want.value)) as got:
            getattr(tdx, name)(False, message)
        assert str(got.value) == str(want.value) and isinstance(got.value, tdx.TdxError)
    with pytest.raises(ValueError, match="^nope$"):
        tdx._check_with(ValueError, False, lambda: "nope")
    with pytest.raises(TypeError, match="cond must be a bool"):
        tdx._check(1)


def test_numpy_keywords_out_and_where_alone(device):
    rng = np.random.default_rng(0)
    data = rng.standard_normal((3, 4)).astype(np.float32)
    for make in (lambda L, d: L.tensor(data, device=d).mean(axis=1, keepdims=True),
                 lambda L, d: L.tensor(data, device=d).all(axis=0),
                 lambda L, d: L.tensor(data, device=d).sum(axis=1),
                 lambda L, d: L.amax(L.tensor(data, device=d), axis=0),
                 lambda L, d: L.cat([L.tensor(data, device=d)] * 2, axis=1),
                 lambda L, d: L.where(L.tensor(data, device=d) > 0),
                 lambda L, d: L.tensor(data, device=d).reshape(1, 3, 1, 4).squeeze(0, 2)):
        got, want = _pair(device, make)
        assert_close(got, want)
    out = tdx.empty(0, device=device)
    assert tdx.cumsum(tdx.tensor(data, device=device), 1, out=out) is out
    assert_close(out, torch.cumsum(torch.tensor(data), 1))
    L = tdx.empty(0, device=device)
    res = tdx.linalg.cholesky_ex(tdx.tensor([[4.0, 1.0], [1.0, 3.0]], device=device), out=(L, tdx.empty(0)))
    assert res[0] is L
    assert_close(L, torch.linalg.cholesky(torch.tensor([[4.0, 1.0], [1.0, 3.0]])))
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type Long"):
        tdx.add(tdx.ones(2, device=device), 1, out=tdx.empty(2, dtype=tdx.int64, device=device))


@pytest.mark.parametrize("name", ["exp", "sin", "neg", "sqrt", "sigmoid", "abs", "mul", "pow", "maximum", "atan2",
                                  "remainder", "eq"])
def test_elementwise_functions_take_out(name, device):
    """``torch.exp(x, out=o)``, ``torch.mul(a, b, out=o)``: the result written into ``o`` (resized from another
    shape with torch's warning) and ``o`` returned; a result that requires grad refused as torch refuses it, and a
    dtype that cannot hold the result refused with a RuntimeError (a TdxError)."""
    import warnings

    data = np.random.default_rng(0).uniform(0.5, 2.0, size=(2, 3)).astype(np.float32)
    args = (lambda L, d: (L.tensor(data, device=d),)) if name in {"exp", "sin", "neg", "sqrt", "sigmoid", "abs"} else (
        lambda L, d: (L.tensor(data, device=d), L.tensor(data[::-1].copy(), device=d)))
    results = {}
    for L, d in ((torch, None), (tdx, device)):
        kind = torch.bool if name == "eq" else torch.float32
        out = L.empty(6, dtype=kind if L is torch else tdx.bool if name == "eq" else tdx.float32, device=d)
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            got = getattr(L, name)(*args(L, d), out=out)
        assert got is out
        results[L] = (out, [str(w.message)[:60] for w in seen])
    assert_close(results[tdx][0], results[torch][0])
    assert results[tdx][1] == results[torch][1]
    for L, d in ((torch, None), (tdx, device)):
        ins = tuple(t.requires_grad_() if t.is_floating_point() else t for t in args(L, d))
        target = L.empty(2, 3, dtype=torch.bool if L is torch else tdx.bool, device=d) if name == "eq" else \
            L.empty(2, 3, device=d)
        if name == "eq":  # not differentiable: no gradient to refuse
            assert getattr(L, name)(*ins, out=target) is target
        else:
            with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
                getattr(L, name)(*ins, out=target)
            with pytest.raises(RuntimeError) as info:  # torch's message varies by kernel; both are RuntimeError
                getattr(L, name)(*args(L, d), out=L.empty(2, 3, dtype=torch.int64 if L is torch else tdx.int64,
                                                          device=d))
            assert L is torch or isinstance(info.value, tdx.TdxError)


def test_value_in_tensor(device):
    for value in (1, 5, 2.0):
        got, want = _pair(device, lambda L, d: value in L.tensor([[1, 2], [3, 4]], device=d))
        assert got == want
    with pytest.raises(RuntimeError, match="only supports Tensor or scalar"):
        "a" in tdx.ones(2, device=device)  # noqa: B015


def _versions(L, d):
    """``_version`` after each kind of in-place write: through the tensor, a view, ``detach()``, ``.data``
    (which torch counts apart), setitem, copy_/fill_/zero_, init, an optimizer step, an op on the tape."""
    x = L.zeros(3, device=d)
    out = [x._version]
    x.add_(1)
    v = x[1:]
    v.mul_(2)
    out += [x._version, v._version]
    x.data = x.data - 1
    x.data.add_(1)
    out.append(x._version)
    x[0] = 5
    y = x.detach()
    y.add_(1)
    out += [x._version, y._version]
    x.copy_(L.ones(3, device=d))
    x.fill_(2)
    x.zero_()
    L.nn.init.normal_(x)
    out.append(x._version)
    p = L.nn.Parameter(L.zeros(2, device=d))
    p.grad = L.ones(2, device=d)
    L.optim.SGD([p], lr=0.1).step()
    w = L.ones(3, device=d, requires_grad=True).clone()
    w.mul_(2)
    w[0] += 1
    return out + [p._version, w._version, x[0]._version]


def test_version_counts_in_place_writes(device):
    """torch's version counter on every executor (MLX keeps one per root, shared by its views)."""
    got, want = _pair(device, _versions)
    assert got == want


def test_caches_keyed_by_version_see_in_place_edits(device):
    """The idiom libraries cache by (kornia's transform matrix, pyro's memoized functions): a result is reused
    while the inputs' versions are unchanged, and an input edited in place (even through a view) is seen."""
    def memoized(L, d):
        cache, calls = {}, []

        def fn(a, b):
            key = (id(a), id(b))
            version = (a._version, b._version)
            if key in cache and cache[key][0] == version:
                return cache[key][1]
            calls.append(1)
            cache[key] = (version, (a * b).sum().item())
            return cache[key][1]

        a, b = L.arange(4.0, device=d), L.ones(4, device=d)
        out = [fn(a, b), fn(a, b)]
        a[:2].mul_(3)
        out.append(fn(a, b))
        b.add_(1)
        out += [fn(a, b), fn(a, b), len(calls)]
        return out

    got, want = _pair(device, memoized)
    assert got == want and want[-1] == 3


def test_to_empty_after_meta(device):
    m = tdx.nn.Linear(3, 2, device="meta")
    m.to_empty(device=device)
    assert m.weight.device == tdx.device(device) and isinstance(m.weight, tdx.nn.Parameter)
    assert m(tdx.ones(4, 3, device=device)).shape == (4, 2)


def test_private_names_libraries_import(device):
    assert tdx.nn.modules.utils._pair(3) == torch.nn.modules.utils._pair(3) == (3, 3)
    assert tdx._C._nn._parse_to("cpu", tdx.float64)[1:] == (tdx.float64, False, None)
    assert tdx.distributed.ReduceOp.SUM == tdx.distributed.ReduceOp.RedOpType.SUM
    assert tdx.autograd.forward_ad.unpack_dual(tdx.ones(1, device=device)).tangent is None
    x = tdx.tensor([[1.5, 2.0], [3.0, 4.0]], device=device)
    from tdx.compat._tensor_str import _tensor_str

    assert _tensor_str(x, 4) == torch._tensor_str._tensor_str(torch.tensor([[1.5, 2.0], [3.0, 4.0]]), 4)
    model = tdx.nn.Linear(2, 2)
    assert isinstance(tdx.compile(model), tdx._dynamo.eval_frame.OptimizedModule)
    assert not isinstance(model, tdx._dynamo.eval_frame.OptimizedModule)
    assert tdx.randn(2, layout=tdx.strided, device=device).shape == (2,)
    with pytest.raises(tdx.UnsupportedOpError):
        tdx.zeros(2, layout=tdx.sparse_coo)
    assert tdx.promote_types(tdx.complex32, tdx.float32) is tdx.complex64
    assert repr(torch.promote_types(torch.complex32, torch.float32)) == "torch.complex64"


def test_aten_ops_that_are_no_torch_function(device):
    x = tdx.arange(10.0, device=device).view(2, 5)
    want = torch.ops.aten.slice(torch.arange(10.0).view(2, 5), 1, 1, 4, 2)
    assert_close(tdx.ops.aten.slice.Tensor(x, 1, 1, 4, 2), want)
    assert tdx.ops.aten._to_copy.default(x, dtype=tdx.int64).dtype is tdx.int64
    with pytest.raises(RuntimeError, match="Tensor sizes mismatch! Expected: \\[2, 4\\], Got: \\[2, 5\\]"):
        tdx.ops.aten._assert_tensor_metadata(x, (2, 4))
    with pytest.raises(RuntimeError, match="^boom$"):
        tdx.ops.aten._assert_scalar(False, "boom")


ATEN_CALLS = {  # what a __torch_function__ or a graph pass calls through torch.ops.aten, on x (2, 5)
    "gelu": lambda a, x: a.gelu.default(x), "gelu tanh": lambda a, x: a.gelu.default(x, approximate="tanh"),
    "silu": lambda a, x: a.silu.default(x), "_softmax": lambda a, x: a._softmax.default(x, -1, False),
    "_log_softmax": lambda a, x: a._log_softmax.default(x, 0, False), "index": lambda a, x: a.index.Tensor(
        x, [None, x.new_tensor([4, 0, 4]).long()]), "index rows": lambda a, x: a.index.Tensor(x, [x.new_tensor([1]).long()]),
    "_unsafe_view": lambda a, x: a._unsafe_view.default(x, [5, 2]), "addmm": lambda a, x: a.addmm.default(x[0, :2], x, x.t()),
    "mm": lambda a, x: a.mm.default(x, x.t()), "where": lambda a, x: a.where.self(x > 3, x, -x),
    "native_layer_norm": lambda a, x: a.native_layer_norm.default(x, [5], None, None, 1e-5)[0],
}


@pytest.mark.parametrize("name", sorted(ATEN_CALLS))
def test_aten_calls_as_torchs(device, name):
    """``torch.ops.aten.<op>.<overload>`` on tdx tensors: ATen's own forms (``_softmax``, ``index.Tensor`` with
    None for skipped dims), then tdx's functions, methods and ``nn.functional``'s (``gelu``, ``silu``)."""
    got, want = _pair(device, lambda lib, dev: ATEN_CALLS[name](lib.ops.aten, lib.arange(10.0, device=dev).view(2, 5) / 3))
    assert_close(got, want)


def test_make_subclass_and_default_torch_function(device):
    class Tagged(tdx.Tensor):
        pass

    base = tdx.ones(2, device=device, requires_grad=True) * 2
    t = tdx.Tensor._make_subclass(Tagged, base, True)
    assert type(t) is Tagged and t.requires_grad and t.is_leaf
    assert tdx.overrides.is_tensor_like(t)
    assert tdx.Tensor.__torch_function__(tdx.add, (tdx.Tensor,), (base, 1)).tolist() == [3.0, 3.0]


def test_compiler_stance_and_logs():
    calls = []

    def step(x):
        calls.append(tdx.compiler.is_compiling())
        return x + 1

    pytest.importorskip("mlx")
    compiled = tdx.compile(step)
    compiled(tdx.ones(2, device="mlx:cpu"))
    with tdx.compiler.set_stance("force_eager"):
        assert compiled(tdx.ones(2, device="mlx:cpu")).tolist() == [2.0, 2.0]
    assert calls == [True, False]  # traced by MLX's compile, then run eagerly
    tdx._logging.set_logs(dynamo=20, modules={"tdx.test_logger": True})
    import logging

    assert logging.getLogger("tdx.test_logger").level == logging.DEBUG


def test_refusal_never_claims_torch_lacks_a_name():
    with pytest.raises(tdx.NotProvidedAttributeError) as err:
        tdx.utils.data.no_such_name_here
    assert "torch has no such name" not in str(err.value) and "not among the public names" in str(err.value)


def test_basic_datapipes_batch_as_torchs():
    from torch.utils.data.datapipes.iter import Batcher as TorchBatcher, IterableWrapper as TorchWrapper

    from tdx.utils.data.datapipes.iter import Batcher, IterableWrapper

    for drop_last in (False, True):
        got = Batcher(IterableWrapper(range(7)), 3, drop_last=drop_last)
        want = TorchBatcher(TorchWrapper(range(7)), 3, drop_last=drop_last)
        assert [list(b) for b in got] == [list(b) for b in want] and len(got) == len(want)


def test_sympy_helpers_are_torchs_own_on_tdx_sizes(tmp_path):
    """Under the alias, ``torch.utils._sympy`` (transformers' exporters import ``numbers.IntInfinity``) is torch's
    code run on tdx, its ``FloorDiv`` evaluating a tdx tensor's sizes; beside real torch's own copy (this process)
    it is refused and real torch's registry stays as it was."""
    prog = tmp_path / "prog.py"
    prog.write_text("import torch\nfrom torch.utils._sympy.numbers import IntInfinity, int_oo\n"
                    "from torch.utils._sympy.functions import FloorDiv\n"
                    "x = torch.ones(7, 3)\n"
                    "print(type(int_oo).__module__, str(int_oo), int_oo > 2**100, "
                    "int(FloorDiv(x.shape[0] * x.shape[1], 2)))\n")
    done = subprocess.run([sys.executable, "-m", "tdx", "run", str(prog)], cwd=tmp_path, env=_env(),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    from torch.utils._sympy.numbers import int_oo as torch_int_oo

    assert done.stdout == f"tdx.compat.utils._sympy.numbers {torch_int_oo} True 10\n"
    import sympy

    before = sympy.S.IntInfinity
    with pytest.raises(tdx.NotProvidedError, match="already loaded"):
        importlib.import_module("tdx.utils._sympy")
    assert sympy.S.IntInfinity is before and type(before).__module__ == "torch.utils._sympy.numbers"


def test_logging_lazy_string_and_warning_once_answer_as_torchs(caplog):
    """``torch._logging.LazyString`` formats when printed; ``warning_once`` warns once per message (torch's
    ``utils._sympy.value_ranges`` imports the first)."""
    import logging

    import torch._logging as theirs

    import tdx._logging as ours

    calls = []
    for lib in (theirs, ours):
        lazy = lib.LazyString(lambda a, b=0: calls.append(a) or f"{a}+{b}", 1, b=2)
        assert calls == [] and str(lazy) == "1+2" and calls == [1]
        calls.clear()
    log = logging.getLogger("tdx_test_warning_once")
    with caplog.at_level(logging.WARNING, logger=log.name):
        for _ in range(3):
            ours.warning_once(log, "said %s", "once")
        ours.warning_once(log, "said %s", "twice")
    assert [r.getMessage() for r in caplog.records] == ["said once", "said twice"]


def test_torchscript_ir_types_can_be_named_but_not_made():
    """Libraries name ``torch._C.Graph``/``Value`` in annotations evaluated at import (transformers' SEW-D):
    the names exist as torch's do; isinstance answers False; making one is refused by name."""
    def symbolic(g: tdx._C.Graph, value: tdx._C.Value) -> tdx._C.Value:
        return value

    import inspect

    hints = inspect.get_annotations(symbolic, eval_str=True)  # this file's annotations are strings
    assert hints["g"].__name__ == torch._C.Graph.__name__ == "Graph" and hints["return"] is tdx._C.Value
    assert not isinstance(tdx.ones(1), tdx._C.Value)
    with pytest.raises(tdx.UnsupportedOpError, match=r"torch\._C\.Graph .*TorchScript"):
        tdx._C.Graph()


def test_get_accelerator_answers_as_torchs():
    """``torch._C._get_accelerator()`` (transformers' tests ask its ``.type``): the current accelerator, else cpu."""
    got = tdx._C._get_accelerator()
    assert isinstance(got, tdx.device)
    expected = tdx.accelerator.current_accelerator()
    assert got == (tdx.device("cpu") if expected is None else expected)
    if expected is None:
        assert str(got) == str(torch._C._get_accelerator()) == "cpu"


def test_importing_a_submodule_keeps_the_packages_function(tmp_path):
    """``torch.multiprocessing.spawn`` is a function though a submodule has its name; importing the submodule
    under the alias (transformers' FSDP tests do, then call ``mp.spawn``) leaves the function bound, as torch."""
    prog = tmp_path / "prog.py"
    prog.write_text("import torch.multiprocessing as mp\nimport torch.multiprocessing.spawn\n"
                    "from torch.multiprocessing.spawn import ProcessRaisedException\n"
                    "import torch.nn.functional\n"
                    "print(type(mp.spawn).__name__, type(torch.multiprocessing.spawn).__name__, "
                    "type(torch.nn.functional).__name__ != 'function')\n")
    outputs = []
    for command in ([sys.executable, "-m", "tdx", "run", str(prog)], [sys.executable, str(prog)]):
        done = subprocess.run(command, cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        outputs.append(done.stdout)
    assert outputs[0] == outputs[1] == "function function True\n"


GRADIENT_CASES = [
    ({}, (3, 5)), ({"spacing": 2.0, "dim": 1, "edge_order": 2}, (3, 5)), ({"spacing": [0.5, 3]}, (4, 3)),
    ({"dim": [0]}, (6,)), ({"dim": -1, "edge_order": 2}, (2, 3, 4)), ({"coordinates": (0, 1), "edge_order": 1}, (5, 4)),
    ({"coordinates": (1,), "edge_order": 2}, (3, 6)), ({"int": True, "spacing": (2,)}, (7,)),
]


@pytest.mark.parametrize("case", range(len(GRADIENT_CASES)))
def test_gradient_as_torchs(device, case):
    """``torch.gradient``: uniform spacing, per-dim spacing, sample coordinates, both edge orders, integer
    input, and its gradient through autograd, against torch; torch's errors for bad arguments."""
    kwargs, shape = dict(GRADIENT_CASES[case][0]), GRADIENT_CASES[case][1]
    rng = np.random.default_rng(case)
    as_int = kwargs.pop("int", False)
    data = rng.integers(-9, 9, shape) if as_int else rng.standard_normal(shape).astype(np.float32)
    coords = kwargs.pop("coordinates", None)

    def run(lib, dev):
        x = lib.tensor(data, device=dev, requires_grad=not as_int)
        kw = dict(kwargs)
        if coords is not None:
            kw["dim"] = list(coords)
            kw["spacing"] = [lib.tensor(np.cumsum(rng_coords(d, shape[d])), dtype=lib.float32, device=dev)
                             for d in coords]
        outs = lib.gradient(x, **kw)
        if as_int:
            return [o.tolist() for o in outs], None
        sum(o.sum() * (i + 1) for i, o in enumerate(outs)).backward()
        return [o.detach().cpu().numpy() for o in outs], x.grad.cpu().numpy()

    def rng_coords(d, n):
        return np.random.default_rng(100 + d).uniform(0.5, 2.0, n)

    (mine, mine_grad), (theirs, theirs_grad) = _pair(device, run)
    assert len(mine) == len(theirs)
    for a, b in zip(mine, theirs):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6, atol=1e-6)
    if theirs_grad is not None:
        np.testing.assert_allclose(mine_grad, theirs_grad, rtol=1e-6, atol=1e-6)


def test_gradient_errors_default_generator_and_grad_scaler_as_torchs(device):
    for lib, dev in ((tdx, device), (torch, "cpu")):
        x = lib.ones(2, 4, device=dev)
        for kwargs, match in (({"edge_order": 3}, "edge_order=1 and edge_order=2"),
                              ({"spacing": [1.0, 2.0, 3.0]}, "list of length equal to 'self.dim\\(\\) = 2'"),
                              ({"edge_order": 2}, "at least edge_order\\+1")):
            with pytest.raises(RuntimeError, match=match):
                lib.gradient(x, **kwargs)
    assert tdx.GradScaler is tdx.amp.GradScaler and torch.GradScaler is torch.amp.GradScaler
    gen = tdx.default_generator
    assert isinstance(gen, tdx.Generator) and gen is tdx.manual_seed(3) and gen.initial_seed() == 3
    assert "default_generator" in dir(tdx)


@torch.library.custom_op("tdxtest::scaled_add", mutates_args=())
def _scaled_add(x: torch.Tensor, y: torch.Tensor, alpha: float) -> torch.Tensor:
    return x + alpha * y


def test_operators_of_compiled_libraries_take_tdx_tensors(device):
    """An operator registered with torch by a compiled library (a C++ extension, torchvision's ``_C``; here
    one registered through torch.library) is ``tdx.ops.<ns>.<name>``: torch's kernel on the native tensors of
    torch executors, tdx tensors back; MLX tensors are refused with a typed error."""
    x, y = torch.randn(3, 4), torch.randn(3, 4)
    want = torch.ops.tdxtest.scaled_add(x, y, 0.5)
    a, b = tdx.tensor(x.numpy(), device=device), tdx.tensor(y.numpy(), device=device)
    if tdx.device(device).type == "mlx":
        with pytest.raises(tdx.TdxError, match="compiled torch operator") as err:
            tdx.ops.tdxtest.scaled_add(a, b, 0.5)
        assert isinstance(err.value, NotImplementedError)
        return
    for op in (tdx.ops.tdxtest.scaled_add, tdx.ops.tdxtest.scaled_add.default):
        got = op(a, b, alpha=0.5)
        assert isinstance(got, tdx.Tensor) and got.device == a.device
        assert_close(got, want, rtol=0, atol=0)
    with pytest.raises(AttributeError):
        tdx.ops.tdxtest.not_registered


def test_load_library_loads_into_torch(tmp_path):
    """``ops.load_library`` is torch's: a library that cannot be loaded raises torch's OSError."""
    missing = str(tmp_path / "libmissing.so")
    with pytest.raises(OSError) as want:
        torch.ops.load_library(missing)
    with pytest.raises(OSError) as got:
        tdx.ops.load_library(missing)
    assert type(got.value) is type(want.value)
    assert tdx.ops.loaded_libraries is torch.ops.loaded_libraries
