"""torch.nn.attention, torch.jit, torch.futures, torch.library, torch.hub, torch.utils._pytree/hooks/benchmark,
torch.xpu/mtia, torch.overrides/types/storage/onnx under tdx: each against torch on CPU, on every device."""

from __future__ import annotations

import typing
import warnings

import numpy as np
import pytest
import torch

import tdx
import tdx.nn.attention as na
import tdx.nn.attention.bias as xbias
import tdx.nn.attention.flex_attention as xflex
from tdx.testing.parity import assert_close
from torch.nn.attention import bias as tbias
from torch.nn.attention import flex_attention as tflex

warnings.filterwarnings("ignore", category=UserWarning, module="torch.nn.attention.flex_attention")


def _qkv(seed=0, shape=(2, 4, 5, 8), kv_heads=None, kv_len=None):
    g = torch.Generator().manual_seed(seed)
    kshape = (shape[0], kv_heads or shape[1], kv_len or shape[2], shape[3])
    return torch.randn(shape, generator=g), torch.randn(kshape, generator=g), torch.randn(kshape, generator=g)


def _x(t, device):
    return tdx.tensor(t.numpy(), device=device)


# torch.nn.attention ------------------------------------------------------------------------------------------
def test_nn_attention_is_tdx_attention():
    assert na.sdpa_kernel is tdx.attention.sdpa_kernel and na.SDPBackend is tdx.attention.SDPBackend
    ours = {b.name: int(b) for b in na.SDPBackend}   # torch's kernels, plus tdx's MLX_FUSED, CHUNKED and BRIDGE
    assert all(ours[n] == int(b) for n, b in torch.nn.attention.SDPBackend.__members__.items())
    assert na.WARN_FOR_UNFUSED_KERNELS is False
    na.WARN_FOR_UNFUSED_KERNELS = True
    try:
        assert tdx.attention.WARN_FOR_UNFUSED_KERNELS is True
    finally:
        na.WARN_FOR_UNFUSED_KERNELS = False
    assert na.list_flash_attention_impls() == [] and na.current_flash_attention_impl() is None
    with pytest.raises(tdx.UnsupportedOpError, match="activate_flash_attention_impl"):
        na.activate_flash_attention_impl("FA3")


def test_sdpa_kernel_under_the_alias_selects_as_tdx_attention(device):
    from tdx.aliasing.torch_alias import torch_alias

    with torch_alias():
        from torch.nn.attention import SDPBackend, sdpa_kernel
    q, k, v = (_x(t, device) for t in _qkv())
    with sdpa_kernel(SDPBackend.MATH):
        assert tdx.attention.explain(q, k, v).kernel is SDPBackend.MATH
        out = tdx.nn.functional.scaled_dot_product_attention(q, k, v)
    tq, tk, tv = _qkv()
    with torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.MATH):
        ref = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv)
    assert_close(out, ref)


@pytest.mark.parametrize("q_len, kv_len", [(5, 5), (3, 5)])
@pytest.mark.parametrize("variant", ["causal_upper_left", "causal_lower_right"])
def test_causal_biases_match_torch(device, variant, q_len, kv_len):
    tq, tk, tv = _qkv(shape=(2, 4, q_len, 8), kv_len=kv_len)
    ref = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, attn_mask=getattr(tbias, variant)(q_len, kv_len))
    out = tdx.nn.functional.scaled_dot_product_attention(_x(tq, device), _x(tk, device), _x(tv, device),
                                                         attn_mask=getattr(xbias, variant)(q_len, kv_len))
    assert_close(out, ref)
    assert_close(getattr(xbias, variant)(q_len, kv_len)._materialize(device),
                 getattr(tbias, variant)(q_len, kv_len)._materialize())
    assert xbias.CausalVariant.LOWER_RIGHT == tbias.CausalVariant.LOWER_RIGHT


def test_causal_bias_bad_input():
    with pytest.raises(ValueError, match="causal_lower_right only supports 2D"):
        xbias.causal_lower_right(2, 3, 4)
    with pytest.raises(TypeError, match="CausalVariant"):
        xbias.CausalBias(2, 3, 3)
    q = tdx.zeros(1, 1, 3, 4)
    with pytest.raises(ValueError, match="causal=True"):
        tdx.nn.functional.scaled_dot_product_attention(q, q, q, attn_mask=xbias.causal_upper_left(3, 3),
                                                       is_causal=True)


def _causal(b, h, q, kv):
    return q >= kv


def _rel(score, b, h, q, kv):
    return score + (q - kv) * 0.1


def _blind(b, h, q, kv):
    return q < 0


@pytest.mark.parametrize("score_mod, mask_mod", [(None, None), (_rel, None), (None, _causal), (_rel, _causal),
                                                 (None, _blind)])
def test_flex_attention_matches_torch(device, score_mod, mask_mod):
    tq, tk, tv = _qkv(1)
    tmask = tflex.create_block_mask(mask_mod, None, None, 5, 5, device="cpu") if mask_mod else None
    xmask = xflex.create_block_mask(mask_mod, None, None, 5, 5, device=device) if mask_mod else None
    ref, ref_lse = tflex.flex_attention(tq, tk, tv, score_mod=score_mod, block_mask=tmask, return_lse=True)
    out, lse = xflex.flex_attention(_x(tq, device), _x(tk, device), _x(tv, device), score_mod=score_mod,
                                    block_mask=xmask, return_lse=True)
    assert_close(out, ref)
    assert_close(lse, ref_lse)


def test_flex_attention_gqa_masks_and_gradients(device):
    tq, tk, tv = _qkv(2, kv_heads=2)
    ref = tflex.flex_attention(tq, tk, tv, enable_gqa=True)
    assert_close(xflex.flex_attention(_x(tq, device), _x(tk, device), _x(tv, device), enable_gqa=True), ref)
    with pytest.raises(ValueError, match="enable_gqa"):
        xflex.flex_attention(_x(tq, device), _x(tk, device), _x(tv, device))
    both = xflex.and_masks(_causal, xflex.noop_mask)
    ref_mask = tflex.create_block_mask(tflex.and_masks(_causal, tflex.noop_mask), 1, 1, 256, 256, device="cpu")
    assert xflex.create_block_mask(both, 1, 1, 256, 256, device=device).to_dense().tolist() == \
        ref_mask.to_dense().tolist()
    assert_close(xflex.create_mask(xflex.or_masks(_causal, _blind), 1, 1, 4, 4, device),
                 tflex.create_mask(tflex.or_masks(_causal, _blind), 1, 1, 4, 4, "cpu"))
    # gradients: torch's flex_attention has no CPU backward, so the oracle is SDPA with the same additive bias
    tq, tk, tv = _qkv(3)
    q = _x(tq, device).requires_grad_(True)
    xflex.flex_attention(q, _x(tk, device), _x(tv, device), score_mod=_rel).sum().backward()
    tq.requires_grad_(True)
    idx = torch.arange(5)
    bias = (idx[:, None] - idx[None, :]) * 0.1
    torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, attn_mask=bias).sum().backward()
    assert_close(q.grad, tq.grad)


# torch.jit ----------------------------------------------------------------------------------------------------
def _cell_class(nn):
    class Cell(nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = nn.Linear(4, 4)

        def forward(self, x, h):
            return (self.linear(x) + h).tanh()
    return Cell


_Cell, _TorchCell = _cell_class(tdx.nn), _cell_class(torch.nn)


def _cells(device):
    torch.manual_seed(0)
    ref = _TorchCell()
    mine = _Cell().to(device)
    mine.load_state_dict({k: tdx.tensor(v.detach().numpy()) for k, v in ref.state_dict().items()})
    return ref, mine


def test_jit_script_and_trace_modules_behave_and_print_as_torch(device):
    ref, mine = _cells(device)
    x, h = torch.rand(3, 4), torch.rand(3, 4)
    xs = (_x(x, device), _x(h, device))
    for make_ref, make_mine in ((lambda: torch.jit.script(ref), lambda: tdx.jit.script(mine)),
                                (lambda: torch.jit.trace(ref, (x, h)), lambda: tdx.jit.trace(mine, xs))):
        r, m = make_ref(), make_mine()
        assert repr(m) == repr(r)
        assert_close(m(*xs), r(x, h).detach())
        assert isinstance(m, tdx.jit.ScriptModule) and isinstance(m, tdx.nn.Module)
        assert m.linear.weight is mine.linear.weight and sorted(m.state_dict()) == sorted(r.state_dict())
        with pytest.raises(tdx.UnsupportedOpError, match=r"\.graph is not supported by tdx \(TorchScript\)"):
            m.graph
        assert not hasattr(m, "code")
        with pytest.raises(tdx.UnsupportedOpError, match="ScriptModule.save"):
            m.save("model.pt")


def test_jit_script_functions_and_scripting_state(device):
    def f(x, scale: float = 2.0):
        if torch.jit.is_scripting():
            return x.sum()
        return x.sum() * scale

    def g(x, scale: float = 2.0):
        if tdx.jit.is_scripting():
            return x.sum()
        return x.sum() * scale

    ones = torch.ones(3)
    assert_close(tdx.jit.script(g)(_x(ones, device)), torch.jit.script(f)(ones))
    assert_close(tdx.jit.trace(g, _x(ones, device))(_x(ones, device)), torch.jit.trace(f, ones)(ones))
    assert tdx.jit.script(g).name == "g" and not tdx.jit.is_scripting() and not tdx.jit.is_tracing()
    seen = []
    tdx.jit.trace(lambda x: seen.append(tdx.jit.is_tracing()) or x, _x(ones, device))
    assert seen == [True]

    class Gate(tdx.nn.Module):
        def forward(self, x):
            return self.python(x) if not tdx.jit.is_scripting() else x

        @tdx.jit.ignore
        def python(self, x):
            return x * 0 + float(tdx.jit.is_scripting())

    assert_close(tdx.jit.script(Gate())(_x(ones, device)), ones)
    with pytest.raises(tdx.UnsupportedOpError, match="torch.jit.load"):
        tdx.jit.load("model.pt")
    with pytest.raises(TypeError, match="expected a module, function or class"):
        tdx.jit.script(3)


def test_jit_helpers_are_torchs_eager_ones(device):
    fut = tdx.jit.fork(lambda t: t * 2, _x(torch.ones(2), device))
    assert_close(tdx.jit.wait(fut), torch.jit.wait(torch.jit.fork(lambda t: t * 2, torch.ones(2))))
    assert tdx.jit.annotate(typing.List[int], []) == [] and tdx.jit.Final is typing.Final
    for obj, typ in (([1, 2], typing.List[int]), ([1, "a"], typing.List[int]),
                     ({"a": [1.0]}, typing.Dict[str, typing.List[float]]), ((1, "a"), typing.Tuple[int, str]),
                     (None, typing.Optional[int])):
        assert tdx.jit.isinstance(obj, typ) == torch.jit.isinstance(obj, typ), (obj, typ)
    assert tdx.jit.Attribute(1, int) == torch.jit.Attribute(1, int)
    for deco in ("unused", "export", "interface", "script_method", "script_if_tracing"):
        fn = lambda x: x  # noqa: E731
        assert getattr(tdx.jit, deco)(fn) is fn
    assert tdx.jit.script(_Cell) is _Cell
    with tdx.jit.optimized_execution(False), tdx.jit.fuser("fuser1"), tdx.jit.strict_fusion():
        pass
    ref, mine = _cells(device)
    frozen = tdx.jit.freeze(tdx.jit.script(mine).eval())
    with pytest.raises(TypeError, match="eval mode"):
        tdx.jit.freeze(tdx.jit.script(mine).train())
    assert isinstance(frozen, tdx.jit.ScriptModule)


# torch.futures ------------------------------------------------------------------------------------------------
def test_futures_as_torch():
    import tdx.futures as xf

    for mod in (torch.futures, xf):
        a, b = mod.Future(), mod.Future()
        both = mod.collect_all([a, b])
        chained = a.then(lambda f: f.wait() + 1)
        seen = []
        b.add_done_callback(lambda f: seen.append(f.value()))
        assert not both.done()
        a.set_result(1)
        b.set_result(2)
        assert both.done() and [f.wait() for f in both.wait()] == [1, 2] and chained.wait() == 2 and seen == [2]
        assert mod.wait_all([a, b]) == [1, 2]
        bad = mod.Future()
        bad.set_exception(ValueError("boom"))
        with pytest.raises(ValueError, match="boom"):
            bad.wait()
        with pytest.raises(RuntimeError):
            a.set_result(3)


# torch.library ------------------------------------------------------------------------------------------------
def test_library_custom_op_kernels_and_autograd(device):
    @tdx.library.custom_op("tdxtest::mysin", mutates_args=())
    def mysin(x: tdx.Tensor) -> tdx.Tensor:
        return x.sin()

    x = _x(torch.tensor([0.5, 1.0]), device)
    assert_close(mysin(x), torch.tensor([0.5, 1.0]).sin())
    assert tdx.ops.tdxtest.mysin is mysin and mysin.default is mysin

    def setup(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    def backward(ctx, grad):
        (saved,) = ctx.saved_tensors
        return grad * saved.cos() * 10

    mysin.register_autograd(backward, setup_context=setup)
    leaf = x.clone().requires_grad_(True)
    mysin(leaf).sum().backward()
    assert_close(leaf.grad, torch.tensor([0.5, 1.0]).cos() * 10)

    @mysin.register_fake
    def _(t):
        return tdx.empty_like(t)

    kind = tdx.device(device).type
    tdx.library.register_kernel("tdxtest::mysin", kind, lambda t: t * 0 + 7)
    assert_close(mysin(x), torch.full((2,), 7.0))

    lib = tdx.library.Library("tdxtest2", "DEF")
    assert lib.define("twice(Tensor x) -> Tensor") == "twice"
    lib.impl("twice", lambda t: t * 2, "CompositeExplicitAutograd")
    assert_close(tdx.ops.tdxtest2.twice(x), torch.tensor([1.0, 2.0]))
    assert_close(tdx.ops.aten.add.Tensor(x, x), torch.tensor([1.0, 2.0]))
    with pytest.raises(ValueError, match="Unsupported kind: BAD"):
        tdx.library.Library("x", "BAD")
    with pytest.raises(ValueError, match="namespace::name"):
        tdx.library.custom_op("noname", mutates_args=())
    with pytest.raises(AttributeError, match="torch.ops.tdxtest.nothing"):
        tdx.ops.tdxtest.nothing
    lib._destroy()


ASSERT_CASES = [
    ("_assert_scalar", lambda m, d: ((True, "fine"), {})), ("_assert_scalar", lambda m, d: ((0, "boom"), {})),
    ("_assert_async", lambda m, d: ((m.tensor(2, device=d),), {})),
    ("_assert_async", lambda m, d: ((m.tensor(0.0, device=d),), {})),
    ("_assert_async", lambda m, d: ((m.tensor(0, device=d), "my message"), {})),
    ("_assert_async", lambda m, d: ((m.zeros(2, device=d),), {})),
    ("_assert_tensor_metadata", lambda m, d: ((m.zeros(2, 3, device=d), [2, 3], [3, 1], m.float32), {})),
    ("_assert_tensor_metadata", lambda m, d: ((m.zeros(2, device=d),), {"size": [3]})),
    ("_assert_tensor_metadata", lambda m, d: ((m.zeros(2, 3, device=d).t(),), {"stride": [3, 1]})),
    ("_assert_tensor_metadata", lambda m, d: ((m.zeros(2, device=d),), {"dtype": m.int64})),
    ("_assert_tensor_metadata", lambda m, d: ((m.zeros(2, device=d),), {"device": m.device("meta")})),
]


@pytest.mark.parametrize("case", ASSERT_CASES, ids=lambda c: c[0])
def test_aten_runtime_assertion_ops_answer_as_torchs(device, case):
    name, make = case

    def outcome(mod, dev):
        packet = getattr(mod.ops.aten, name)
        op = packet.msg if name == "_assert_async" and len(make(mod, dev)[0]) == 2 else packet.default
        args, kwargs = make(mod, dev)
        try:
            return op(*args, **kwargs)
        except RuntimeError as err:
            return f"RuntimeError: {err}"

    want = outcome(torch, "cpu")
    assert outcome(tdx, device) == (want.replace("Got: cpu", f"Got: {device}") if want else want)


# torch.hub ----------------------------------------------------------------------------------------------------
HUBCONF = '''
"""A local hub repository."""
dependencies = ["numpy"]
import torch


def tiny(out_features=3, *, bias=True):
    """A tiny linear model."""
    torch.manual_seed(0)
    return torch.nn.Linear(2, out_features, bias=bias)


def _private():
    return None
'''


def test_hub_local_load_list_help_and_dirs(tmp_path, device):
    (tmp_path / "hubconf.py").write_text(HUBCONF)
    from tdx.aliasing.torch_alias import torch_alias

    with torch_alias(device):   # the program's hubconf imports torch: it gets tdx
        mine = tdx.hub.load(str(tmp_path), "tiny", 4, source="local", bias=False)
    ref = torch.hub.load(str(tmp_path), "tiny", 4, source="local", bias=False)
    assert isinstance(mine, tdx.nn.Linear) and repr(mine) == repr(ref) and mine.weight.device == tdx.device(device)
    assert tdx.hub.list(str(tmp_path)) == ["tiny"]
    assert tdx.hub.help(str(tmp_path), "tiny") == "A tiny linear model."
    with pytest.raises(RuntimeError, match="Cannot find callable nothing in hubconf"):
        tdx.hub.load(str(tmp_path), "nothing", source="local")
    with pytest.raises(ValueError, match='Unknown source: "ftp"'):
        tdx.hub.load(str(tmp_path), "tiny", source="ftp")
    (tmp_path / "hubconf.py").write_text(HUBCONF.replace('"numpy"', '"no_such_dependency"'))
    with pytest.raises(RuntimeError, match="Missing dependencies: no_such_dependency"):
        tdx.hub.load(str(tmp_path), "tiny", source="local")
    before = tdx.hub.get_dir()
    try:
        tdx.hub.set_dir(tmp_path / "cache")
        assert tdx.hub.get_dir() == str(tmp_path / "cache")
    finally:
        tdx.hub.set_dir(before)


def test_hub_weights_by_url_offline_and_from_file(tmp_path, device):
    state = {"w": tdx.arange(4.0)}
    tdx.save(state, tmp_path / "src.pt")
    url = (tmp_path / "src.pt").as_uri()
    loaded = tdx.hub.load_state_dict_from_url(url, model_dir=str(tmp_path / "ckpt"), map_location=device)
    assert_close(loaded["w"], torch.arange(4.0))
    assert (tmp_path / "ckpt" / "src.pt").exists()
    with pytest.raises(tdx.hub.HubDownloadError, match="could not download 'http://127.0.0.1:9/w.pt'") as err:
        tdx.hub.load_state_dict_from_url("http://127.0.0.1:9/w.pt", model_dir=str(tmp_path / "off"))
    assert isinstance(err.value, OSError) and isinstance(err.value, tdx.TdxError)
    assert not (tmp_path / "off" / "w.pt").exists() and list((tmp_path / "off").iterdir()) == []
    with pytest.raises(RuntimeError, match="invalid hash value"):
        tdx.hub.download_url_to_file(url, str(tmp_path / "x.pt"), hash_prefix="0000")
    assert not (tmp_path / "x.pt").exists()


# torch.utils._pytree, hooks, benchmark --------------------------------------------------------------------
def test_pytree_is_torchs_over_tdx_tensors(device):
    from tdx.utils import _pytree as xp

    x = _x(torch.arange(3.0), device)
    tree = {"a": x, "b": (1, [x * 2])}
    leaves, spec = xp.tree_flatten(tree)
    assert len(leaves) == 3 and xp.tree_unflatten(leaves, spec)["b"][0] == 1
    doubled = xp.tree_map(lambda t: t * 2 if isinstance(t, tdx.Tensor) else t, tree)
    assert_close(doubled["b"][1][0], torch.arange(3.0) * 4)
    assert xp.TreeSpec is torch.utils._pytree.TreeSpec


def test_hooks_handle_and_warning(device):
    from tdx.utils import hooks

    lin = tdx.nn.Linear(2, 2).to(device)
    handle = lin.register_forward_hook(lambda m, i, o: None)
    assert isinstance(handle, hooks.RemovableHandle)
    handle.remove()
    assert len(lin._forward_hooks) == 0
    fn = hooks.unserializable_hook(lambda g: g)
    assert fn.__torch_unserializable__


def test_benchmark_timer_measures_tdx_calls(device):
    from tdx.utils import benchmark

    x = tdx.randn(16, 16, device=device)
    timer = benchmark.Timer("x @ x", globals={"x": x}, label="mm")
    m = timer.timeit(5)
    assert m.number_per_run == 5 and len(m.times) == 1 and m.mean > 0 and "mm" in repr(m)
    m = timer.blocked_autorange(min_run_time=0.02)
    assert m.median > 0 and sum(m.raw_times) >= 0.02 and m.iqr >= 0
    assert timer._globals["torch"] is tdx
    with pytest.raises(ValueError, match="stmt must be Python source"):
        benchmark.Timer(lambda: None)


# torch.xpu, torch.mtia, torch.overrides, torch.types, torch.storage, torch.onnx -------------------------------
@pytest.mark.parametrize("name", ["xpu", "mtia"])
def test_absent_accelerators_answer_as_torch_without_them(name):
    mine, ref = getattr(tdx, name), getattr(torch, name)
    for fn in ("is_available", "device_count", "is_initialized"):
        assert getattr(mine, fn)() == getattr(ref, fn)()
    mine.manual_seed(0)
    for fn in ("current_device", "synchronize", "init"):
        with pytest.raises((AssertionError, RuntimeError)):   # torch raises either, tdx's error is both
            getattr(ref, fn)()
        with pytest.raises(AssertionError, match=f"Torch not compiled with {name.upper()} enabled") as err:
            getattr(mine, fn)()
        assert isinstance(err.value, RuntimeError)
    assert set(mine.__all__) <= set(dir(ref))
    if ref.Stream is torch.Stream:  # torch.mtia.Stream is torch's generic Stream
        assert mine.Stream is tdx.Stream
    else:
        with pytest.raises(tdx.UnsupportedOpError, match=f"torch.{name}.Stream"):
            mine.Stream()


def test_overrides_types_storage_onnx():
    assert not tdx.overrides.has_torch_function((tdx.ones(1),))
    assert tdx.overrides.is_tensor_like(tdx.ones(1)) and not tdx.overrides.is_tensor_like(1)
    assert tdx.add in tdx.overrides.get_overridable_functions()[tdx]
    assert tdx.overrides.resolve_name(tdx.add) == torch.overrides.resolve_name(torch.add) == "torch.add"
    with tdx.overrides.TorchFunctionMode():
        pass
    assert tdx.types.Number == torch.types.Number
    assert tdx.storage.UntypedStorage is tdx.UntypedStorage and tdx.storage.TypedStorage is tdx.TypedStorage
    assert isinstance(tdx.ones(2).untyped_storage(), tdx.storage.UntypedStorage)
    assert tdx.onnx.is_in_onnx_export() is torch.onnx.is_in_onnx_export() is False
    with pytest.raises(tdx.UnsupportedOpError, match=r"torch\.onnx\.export is not supported by tdx \(ONNX export\)"):
        tdx.onnx.export(tdx.nn.Linear(1, 1), (tdx.ones(1),), "model.onnx")
    with pytest.raises(tdx.UnsupportedOpError, match=r"torch\.export\.export is not supported by tdx"):
        tdx.export.export(tdx.nn.Linear(1, 1), (tdx.ones(1),))


def test_testing_make_tensor(device):
    t = tdx.testing.make_tensor(2, 3, dtype=tdx.float32, device=device, low=-1, high=1)
    assert t.shape == (2, 3) and t.device == tdx.device(device) and float(t.abs().max()) <= 1
    i = tdx.testing.make_tensor((4,), dtype=tdx.int64, device=device, low=0, high=3, exclude_zero=True)
    assert set(np.asarray(i.cpu().tolist())) <= {1, 2}
    with pytest.raises(ValueError, match="low"):
        tdx.testing.make_tensor(2, dtype=tdx.float32, device=device, low=2, high=1)


def test_catalog_section_measures_each_name_by_running(device):
    from tdx import backends
    from tdx._cli import module_catalog

    results = module_catalog.run((device,), {r.device: r for r in backends.available()})
    cells = {f"{path}.{name}": (status, res.get(device, status)) for path, rows in results.items()
             for name, (status, res) in rows.items()}
    assert not [k for k, (_, r) in cells.items() if r.startswith("failed") or r == "refusal broken"]
    assert cells["torch.jit.script"] == ("built", "ok") and cells["torch.nn.attention.sdpa_kernel"] == ("built", "ok")
    assert cells["torch.onnx.export"] == ("refused", "refused") and cells["torch.jit.load"][0] == "refused"
    assert "## torch's other namespaces" in module_catalog.render(results, (device,))
