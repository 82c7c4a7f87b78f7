"""``tdx.backends.<name>`` mirrors ``torch.backends.<name>``: same public names, same answers,
settings that reach torch, sane answers where torch cannot be imported, and tdx's own
``tdx.backends.mlx``. Compared against the installed torch.
"""

import ast
import importlib
import importlib.util
import json
import os
import pkgutil
import subprocess
import sys
import types
import warnings

import pytest

HAS_OPT_EINSUM = importlib.util.find_spec("opt_einsum") is not None  # torch's opt_einsum flags follow it

torch = pytest.importorskip("torch")
import torch.backends  # noqa: E402

import tdx.backends as B  # noqa: E402
from tdx import config  # noqa: E402
from tdx.backends import _flags  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TORCH_SUBMODULES = sorted(m.name for m in pkgutil.iter_modules(torch.backends.__path__)
                          if not m.name.startswith("_"))
# torch's module wrappers keep the original module in an attribute ``m``: an implementation detail.
TORCH_INTERNALS = {"m"}


def _top_level_imports(path: str) -> tuple:
    """Names bound by module-level imports, and those that rename a private name to a public one."""
    tree = ast.parse(open(path, encoding="utf-8").read())
    bound, exported = set(), set()

    def visit(nodes):
        for node in nodes:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for alias in node.names:
                    name = alias.asname or alias.name.split(".")[0]
                    bound.add(name)
                    if alias.asname and alias.name.startswith("_") and not alias.asname.startswith("_"):
                        exported.add(alias.asname)
            for field in ("body", "orelse", "finalbody", "handlers"):
                visit(getattr(node, field, []) or [])

    visit(tree.body)
    return bound, exported


def _public_names(mod) -> set:
    # '@py_builtins'/'@pytest_ar' are pytest's assertion-rewrite globals, not part of any API
    names = {n for n in dir(mod) if not n.startswith(("_", "@"))}
    names |= {n for n in dir(type(mod)) if not n.startswith("_")} - set(dir(types.ModuleType))
    inner = mod.__dict__.get("m")
    if isinstance(inner, types.ModuleType):
        names |= {n for n in dir(inner) if not n.startswith("_") and hasattr(mod, n)}
    return names


def torch_public(name: str) -> set:
    mod = importlib.import_module(f"torch.backends.{name}")
    origin = os.path.join(torch.backends.__path__[0], name, "__init__.py")
    bound, exported = _top_level_imports(origin)
    listed = set(getattr(mod, "__all__", None) or ())
    return (_public_names(mod) - (bound - exported - listed)) - TORCH_INTERNALS


def tdx_public(name: str) -> set:
    return _public_names(importlib.import_module(f"tdx.backends.{name}"))


# --- names --------------------------------------------------------------------------------------

MIRRORED_TORCH = (2, 13)  # the torch release whose torch.backends tdx mirrors


def _installed_torch() -> tuple:
    return tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2])


def test_every_torch_backends_submodule_is_mirrored():
    assert TORCH_SUBMODULES, "found no torch.backends submodules"
    missing = [m for m in TORCH_SUBMODULES if m not in B._MIRRORS]
    assert not missing, f"torch.backends submodules without a tdx mirror: {missing}"
    for name in B._MIRRORS:
        assert getattr(B, name) is importlib.import_module(f"tdx.backends.{name}")


@pytest.mark.parametrize("name", TORCH_SUBMODULES)
def test_public_names_match_torch(name):
    mirror = importlib.import_module(f"tdx.backends.{name}")
    theirs, ours = torch_public(name), tdx_public(name)
    extensions = set(mirror._TDX_EXTENSIONS)
    assert not theirs - ours, f"tdx.backends.{name} lacks {sorted(theirs - ours)}"
    assert extensions <= ours, f"listed extensions that do not exist: {sorted(extensions - ours)}"
    if _installed_torch() < MIRRORED_TORCH:  # an older torch lacks the names later releases added
        return
    assert not (ours - theirs) - extensions, \
        f"tdx.backends.{name} has undocumented names {sorted((ours - theirs) - extensions)}"


def test_mlx_module_is_all_documented_extensions():
    assert tdx_public("mlx") == set(B.mlx._TDX_EXTENSIONS)
    assert "mlx" not in TORCH_SUBMODULES


# torch.backends' own helper classes, not settings: tdx keeps its own machinery in _flags.
TORCH_TOP_LEVEL_MACHINERY = {"ContextProp", "PropModule", "GenericModule", "m"}


def test_torch_backends_top_level_names_are_provided():
    bound, _ = _top_level_imports(os.path.join(torch.backends.__path__[0], "__init__.py"))
    theirs = _public_names(torch.backends) - bound - set(TORCH_SUBMODULES) - TORCH_TOP_LEVEL_MACHINERY
    provided = {n for n in theirs if hasattr(_flags, n) or hasattr(_flags.BackendsModule, n)}
    assert theirs == provided == {"fp32_precision", "flags", "set_flags", "disable_global_flags", "flags_frozen"}


def test_top_level_fp32_precision_and_flags_reach_torch():
    module = types.ModuleType("tdx_backends_probe")
    module.__class__ = _flags.BackendsModule
    assert module.fp32_precision == torch.backends.fp32_precision == "none"
    assert _flags.flags_frozen() is torch.backends.flags_frozen() is False
    try:
        module.fp32_precision = "ieee"
        assert torch.backends.fp32_precision == "ieee"
        assert _flags.set_flags("tf32") == ("ieee",)
        assert torch.backends.fp32_precision == "tf32"
        with pytest.raises(KeyError):
            with _flags.flags(fp32_precision="ieee"):
                assert module.fp32_precision == "ieee"
                raise KeyError("boom")
        assert torch.backends.fp32_precision == "tf32"
    finally:
        module.fp32_precision = "none"
    assert torch.backends.fp32_precision == "none"


def test_name_check_catches_a_missing_name(monkeypatch):
    monkeypatch.delattr(B.mps, "get_core_count")
    assert "get_core_count" in torch_public("mps") - tdx_public("mps")


# --- same answers as torch ----------------------------------------------------------------------

QUERIES = """
cpu.get_cpu_capability()
cuda.is_built()
cuda.matmul.allow_tf32
cuda.matmul.allow_fp16_reduced_precision_reduction
cuda.matmul.allow_fp16_reduced_precision_reduction_split_k
cuda.matmul.allow_bf16_reduced_precision_reduction
cuda.matmul.allow_bf16_reduced_precision_reduction_split_k
cuda.matmul.allow_fp16_accumulation
cuda.matmul.fp32_precision
cuda.matmul.no_such_setting
cuda.cufft_plan_cache.size
cuda.cufft_plan_cache.max_size
cuda.cufft_plan_cache[0].max_size
type(cuda.cufft_plan_cache[0]).__name__
cuda.cufft_plan_cache.clear()
cuda.preferred_blas_library()
cuda.preferred_linalg_library()
cuda.preferred_rocm_fa_library()
cuda.preferred_blas_library('nonsense')
cuda.preferred_linalg_library(3)
cuda.preferred_rocm_fa_library(3)
cuda.cublas_workspace_size()
cuda.is_ck_sdpa_available()
cuda.flash_sdp_enabled()
cuda.mem_efficient_sdp_enabled()
cuda.math_sdp_enabled()
cuda.cudnn_sdp_enabled()
cuda.fp16_bf16_reduction_math_sdp_allowed()
cuda.is_flash_attention_available()
cuda.can_use_flash_attention(P(cuda))
cuda.can_use_efficient_attention(P(cuda))
cuda.can_use_cudnn_attention(P(cuda))
cuda.can_use_flash_attention(1)
sorted(cuda.SDPBackend.__members__)
cudnn.version()
cudnn.is_available()
cudnn.enabled
cudnn.allow_tf32
cudnn.deterministic
cudnn.benchmark
cudnn.benchmark_limit
cudnn.fp32_precision
cudnn.conv.fp32_precision
cudnn.depthwise_kernel
sorted(str(d).rpartition('.')[2] for d in cudnn.CUDNN_TENSOR_DTYPES)
cudnn.is_acceptable(x)
cusparselt.version()
cusparselt.is_available()
cusparselt.get_max_alg_id()
mha.get_fastpath_enabled()
miopen.immediate
mps.is_available()
mps.is_built()
mps.is_macos13_or_newer()
mps.is_macos_or_newer(14, 0)
mkl.is_available()
(mkl.VERBOSE_OFF, mkl.VERBOSE_ON)
mkldnn.is_available()
mkldnn.is_acl_available()
mkldnn.enabled
mkldnn.deterministic
mkldnn.allow_tf32
mkldnn.fp32_precision
mkldnn.matmul.fp32_precision
mkldnn.conv.fp32_precision
mkldnn.rnn.fp32_precision
(mkldnn.VERBOSE_OFF, mkldnn.VERBOSE_ON, mkldnn.VERBOSE_ON_CREATION)
nnpack.is_available()
openmp.is_available()
opt_einsum.is_available()
opt_einsum.enabled
opt_einsum.strategy
opt_einsum.get_opt_einsum()
kleidiai.is_available()
quantized.engine
quantized.supported_engines
xnnpack.enabled
python_native.available_dsls
python_native.all_dsls
python_native.get_dsl_operations('triton')
python_native.is_dsl_disabled('triton')
python_native.is_operation_disabled('scaled_mm')
python_native.triton.enabled
python_native.no_such_dsl
""".strip().splitlines()


def _evaluate(ns, expr: str):
    mods = {name: importlib.import_module(f"{ns.__name__}.{name}") for name in TORCH_SUBMODULES}
    q = torch.zeros(1, 2, 4, 8)

    def params(cuda):
        return cuda.SDPAParams(q, q, q, None, 0.0, False, False)

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return "value", eval(expr, {"P": params, "x": q, **mods})
    except Exception as e:  # noqa: BLE001 - the exception's type is the answer compared
        return "raises", [c.__name__ for c in (TypeError, ValueError, RuntimeError, AssertionError,
                                               AttributeError, IndexError) if isinstance(e, c)]


@pytest.mark.parametrize("expr", QUERIES)
def test_query_answers_as_torch(expr):
    assert _evaluate(B, expr) == _evaluate(torch.backends, expr)


def test_answers_follow_torch_state():
    before = torch.backends.cudnn.benchmark
    try:
        torch.backends.cudnn.benchmark = not before
        assert B.cudnn.benchmark is (not before)
        torch.backends.cuda.enable_mem_efficient_sdp(False)
        assert B.cuda.mem_efficient_sdp_enabled() is False
    finally:
        torch.backends.cudnn.benchmark = before
        torch.backends.cuda.enable_mem_efficient_sdp(True)


# --- settings reach torch ------------------------------------------------------------------------

def _torch_obj(path: str):
    obj = torch.backends
    for part in path.split("."):
        obj = getattr(obj, part) if not isinstance(obj, types.ModuleType) or hasattr(obj, part) \
            else importlib.import_module(f"{obj.__name__}.{part}")
    return obj


def _tdx_obj(path: str):
    obj = B
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


ATTRIBUTES = [  # (owner path, attribute, value to set, value to restore)
    ("cudnn", "enabled", False, True),
    ("cudnn", "benchmark", True, False),
    ("cudnn", "deterministic", True, False),
    ("cudnn", "benchmark_limit", 5, None),
    ("cudnn", "depthwise_kernel", "native", "auto"),
    ("cudnn", "fp32_precision", "ieee", "none"),
    ("cudnn.conv", "fp32_precision", "ieee", "tf32"),
    ("cuda.matmul", "allow_fp16_accumulation", True, False),
    ("cuda.matmul", "fp32_precision", "ieee", "none"),
    ("miopen", "immediate", True, False),
    ("mkldnn", "enabled", False, True),
    ("mkldnn", "deterministic", True, False),
    ("mkldnn.matmul", "fp32_precision", "bf16", "none"),
    ("mkldnn.conv", "fp32_precision", "bf16", "none"),
    ("mkldnn.rnn", "fp32_precision", "bf16", "none"),
    ("opt_einsum", "enabled", True, False),
    ("opt_einsum", "strategy", "greedy", None),
    ("quantized", "engine", "qnnpack", "x86"),
]


@pytest.mark.parametrize("owner,attr,value,restore", ATTRIBUTES, ids=lambda v: str(v))
def test_attribute_setter_round_trips_into_torch(owner, attr, value, restore):
    theirs = _torch_obj(owner)
    original = getattr(theirs, attr)
    # torch's opt_einsum module stores an assigned attribute on its module wrapper, where it
    # shadows what set_flags()/flags() change from then on: undo that too, so later tests see torch as loaded
    shadowed = isinstance(theirs, types.ModuleType) and attr in vars(theirs)
    try:
        setattr(_tdx_obj(owner), attr, value)
        assert getattr(theirs, attr) == value
        assert getattr(_tdx_obj(owner), attr) == value
    finally:
        setattr(_tdx_obj(owner), attr, original)  # torch's default may depend on installed packages (opt_einsum)
        if isinstance(theirs, types.ModuleType) and not shadowed:
            vars(theirs).pop(attr, None)
    assert getattr(theirs, attr) == original
    assert restore is not None or attr == "strategy" or original == restore


def test_tf32_switches_round_trip_into_torch():
    try:
        B.cuda.matmul.allow_tf32 = True
        assert torch.backends.cuda.matmul.allow_tf32 is True
        assert B.cuda.matmul.allow_tf32 is True
        B.cudnn.allow_tf32 = False
        assert torch.backends.cudnn.allow_tf32 is False
        assert B.cudnn.allow_tf32 is False
    finally:
        B.cuda.matmul.allow_tf32 = False
        B.cuda.matmul.fp32_precision = "none"
        B.cudnn.allow_tf32 = True
    assert torch.backends.cuda.matmul.fp32_precision == "none"
    assert torch.backends.cudnn.allow_tf32 is True


@pytest.mark.parametrize("kind", ["fp16", "bf16"])
def test_reduced_precision_reduction_tuple_form(kind):
    name = f"allow_{kind}_reduced_precision_reduction"
    try:
        setattr(B.cuda.matmul, name, (False, False))
        assert getattr(torch.backends.cuda.matmul, name) is False
        assert getattr(torch.backends.cuda.matmul, name + "_split_k") is False
        setattr(B.cuda.matmul, name, (False,))
        assert getattr(B.cuda.matmul, name + "_split_k") is True
        with pytest.raises(TypeError, match="allow_splitk"):
            setattr(B.cuda.matmul, name, (True, 1))
        with pytest.raises(AttributeError):
            setattr(B.cuda.matmul, name + "_split_k", True)
    finally:
        setattr(B.cuda.matmul, name, True)
    assert getattr(torch.backends.cuda.matmul, name) is True


SWITCHES = [  # (tdx/torch module, setter, getter, non-default value)
    ("cuda", "enable_flash_sdp", "flash_sdp_enabled", False),
    ("cuda", "enable_mem_efficient_sdp", "mem_efficient_sdp_enabled", False),
    ("cuda", "enable_math_sdp", "math_sdp_enabled", False),
    ("cuda", "enable_cudnn_sdp", "cudnn_sdp_enabled", False),
    ("cuda", "allow_fp16_bf16_reduction_math_sdp", "fp16_bf16_reduction_math_sdp_allowed", True),
    ("mha", "set_fastpath_enabled", "get_fastpath_enabled", False),
]


@pytest.mark.parametrize("module,setter,getter,value", SWITCHES)
def test_switch_round_trips_into_torch(module, setter, getter, value):
    ours, theirs = getattr(B, module), getattr(torch.backends, module)
    try:
        getattr(ours, setter)(value)
        assert getattr(theirs, getter)() is value
        assert getattr(ours, getter)() is value
    finally:
        getattr(ours, setter)(not value)
    assert getattr(theirs, getter)() is (not value)


def test_preferred_rocm_fa_library_round_trips():
    try:
        assert B.cuda.preferred_rocm_fa_library("ck") == torch._C._ROCmFABackend.Ck
        assert torch.backends.cuda.preferred_rocm_fa_library() == torch._C._ROCmFABackend.Ck
    finally:
        B.cuda.preferred_rocm_fa_library("default")
    assert torch.backends.cuda.preferred_rocm_fa_library() == torch._C._ROCmFABackend.Default


def test_read_only_attributes_refuse_assignment():
    with pytest.raises(RuntimeError, match="Assignment not supported"):
        B.xnnpack.enabled = True
    with pytest.raises(RuntimeError, match="Assignment not supported"):
        B.quantized.supported_engines = []
    with pytest.raises(RuntimeError, match="not a valid value"):
        B.quantized.engine = "bogus"


def test_nnpack_and_python_native_switches_reach_torch():
    assert B.nnpack.set_flags(False) == (True,)
    try:
        assert torch._C._get_nnpack_enabled() is False
    finally:
        B.nnpack.set_flags(True)
    B.python_native.disable_operations("tdx_test_op")
    try:
        assert torch.backends.python_native.is_operation_disabled("tdx_test_op")
    finally:
        B.python_native.enable_operations("tdx_test_op")
    assert not torch.backends.python_native.is_operation_disabled("tdx_test_op")


FLAG_BLOCKS = [  # (module, flags kwargs, attribute checked inside, value inside)
    ("cudnn", {}, "enabled", False),
    ("cudnn", {"enabled": True, "benchmark": True}, "benchmark", True),
    ("mkldnn", {}, "enabled", False),
    ("miopen", {"immediate": True}, "immediate", True),
]


@pytest.mark.filterwarnings("ignore:TF32 acceleration on top of oneDNN")
@pytest.mark.parametrize("module,kwargs,attr,inside", FLAG_BLOCKS)
def test_flags_context_restores_on_exception(module, kwargs, attr, inside):
    theirs = getattr(torch.backends, module)
    before = getattr(theirs, attr)
    with pytest.raises(KeyError):
        with getattr(B, module).flags(**kwargs):
            assert getattr(theirs, attr) is inside
            assert getattr(getattr(B, module), attr) is inside
            raise KeyError("boom")
    assert getattr(theirs, attr) is before


def test_nnpack_and_opt_einsum_flags_restore_on_exception():
    with pytest.raises(KeyError):
        with B.nnpack.flags(enabled=False):
            assert torch._C._get_nnpack_enabled() is False
            raise KeyError("boom")
    assert torch._C._get_nnpack_enabled() is True
    if HAS_OPT_EINSUM:  # installed (a library's dependency): the flag is torch's and comes back after an error
        before = torch.backends.opt_einsum.enabled
        with pytest.raises(KeyError):
            with B.opt_einsum.flags(enabled=not before):
                assert torch.backends.opt_einsum.enabled is (not before)
                raise KeyError("boom")
        assert torch.backends.opt_einsum.enabled is before
        return
    with pytest.raises(ValueError, match="opt_einsum is not available"):
        with B.opt_einsum.flags(enabled=True):
            pass


def test_sdp_kernel_warns_and_restores():
    with pytest.warns(FutureWarning, match="sdp_kernel"):
        context = B.cuda.sdp_kernel(enable_flash=False, enable_math=True)
    with pytest.raises(KeyError):
        with context as value:
            assert value == {}
            assert torch.backends.cuda.flash_sdp_enabled() is False
            assert torch.backends.cuda.math_sdp_enabled() is True
            raise KeyError("boom")
    assert torch.backends.cuda.flash_sdp_enabled() is True


def test_bad_values_fail_as_in_torch():
    with pytest.raises(RuntimeError, match="expects a bool"):
        B.cudnn.enabled = 1
    with pytest.raises(RuntimeError, match="expects a bool"):
        B.cuda.enable_flash_sdp(1)
    with pytest.raises(RuntimeError, match="Unknown precision"):
        B.cuda.matmul.fp32_precision = "bogus"
    with pytest.raises(AttributeError, match="Unknown attribute"):
        B.cuda.matmul.bogus = True


# --- pending values -----------------------------------------------------------------------------

def test_on_torch_loaded_applies_pending_values(monkeypatch):
    monkeypatch.setitem(_flags._state, "synced", None)
    before = torch.backends.cudnn.deterministic
    _flags.defer("test.deterministic", "cudnn.deterministic = True",
                 lambda t: setattr(t.backends.cudnn, "deterministic", True))
    try:
        _flags.on_torch_loaded()
        assert torch.backends.cudnn.deterministic is True
        assert _flags.pending() == []
    finally:
        torch.backends.cudnn.deterministic = before


def test_pending_value_applies_lazily_and_refusals_warn(monkeypatch):
    monkeypatch.setitem(_flags._state, "synced", None)
    before = torch.backends.cudnn.deterministic
    _flags.defer("test.deterministic", "cudnn.deterministic = True",
                 lambda t: setattr(t.backends.cudnn, "deterministic", True))
    _flags.defer("test.refused", "cudnn.depthwise_kernel = 'bogus'",
                 lambda t: setattr(t.backends.cudnn, "depthwise_kernel", "bogus"))
    try:
        with pytest.warns(UserWarning, match="refused cudnn.depthwise_kernel"):
            assert B.cudnn.deterministic is True
        assert _flags.pending() == []
    finally:
        torch.backends.cudnn.deterministic = before


# --- without torch ------------------------------------------------------------------------------

BLOCK_TORCH = r"""
import importlib.abc, sys
class _NoTorch(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ImportError("torch is blocked in this test")
        return None
sys.meta_path.insert(0, _NoTorch())
"""

WITHOUT_TORCH = BLOCK_TORCH + r"""
import json
import tdx.backends.cpu as cpu, tdx.backends.cuda as cuda, tdx.backends.cudnn as cudnn
import tdx.backends.cusparselt as cusparselt, tdx.backends.mha as mha, tdx.backends.miopen as miopen
import tdx.backends.mps as mps, tdx.backends.mkl as mkl, tdx.backends.mkldnn as mkldnn
import tdx.backends.nnpack as nnpack, tdx.backends.openmp as openmp, tdx.backends.opt_einsum as opt_einsum
import tdx.backends.kleidiai as kleidiai, tdx.backends.python_native as python_native
import tdx.backends.quantized as quantized, tdx.backends.xnnpack as xnnpack, tdx.backends.xeon as xeon
import tdx.backends.mlx as mlx
from tdx.backends import _flags
out = {}
def q(expr):
    try:
        out[expr] = repr(eval(expr))
    except Exception as e:
        out[expr] = "raises " + "/".join(c.__name__ for c in type(e).__mro__
                                         if c.__name__ in ("ImportError", "RuntimeError", "AssertionError", "TypeError"))
for expr in %r:
    q(expr)
cudnn.benchmark = True
cuda.matmul.allow_tf32 = True
cuda.matmul.allow_bf16_reduced_precision_reduction = (False,)
cuda.enable_flash_sdp(False)
cuda.preferred_blas_library("cublaslt")
mkldnn.enabled = False
quantized.engine = "qnnpack"
python_native.disable_operations("scaled_mm")
with cudnn.flags(enabled=False):
    inside = cudnn.enabled
try:
    with mkldnn.flags(deterministic=True):
        raise KeyError("boom")
except KeyError:
    pass
with cuda.sdp_kernel(enable_math=False):
    math_inside = cuda.math_sdp_enabled()
out["after"] = [cudnn.benchmark, cuda.matmul.allow_tf32, cuda.matmul.allow_bf16_reduced_precision_reduction_split_k,
                cuda.flash_sdp_enabled(), repr(cuda.preferred_blas_library()), mkldnn.enabled,
                mkldnn.deterministic, quantized.engine, python_native.is_operation_disabled("scaled_mm"),
                inside, cudnn.enabled, math_inside, cuda.math_sdp_enabled()]
import types
probe = types.ModuleType("probe")
probe.__class__ = _flags.BackendsModule
out["generic"] = [probe.fp32_precision, _flags.set_flags("ieee"), probe.fp32_precision]
_flags.disable_global_flags()
try:
    cudnn.enabled = False
    refused = None
except RuntimeError as e:
    refused = str(e)
with cudnn.flags(enabled=False, benchmark=False):
    inside_frozen = [cudnn.enabled, cudnn.benchmark]
out["frozen"] = [_flags.flags_frozen(), refused, inside_frozen, cudnn.enabled, cudnn.benchmark]
out["pending"] = len(_flags.pending())
out["torch_in_modules"] = sys.modules.get("torch") is not None
print(json.dumps(out))
"""

NO_TORCH_EXPECTED = {
    "cpu.get_cpu_capability()": "'DEFAULT'",
    "cuda.is_built()": "False",
    "cuda.matmul.allow_tf32": "False",
    "cuda.matmul.allow_fp16_reduced_precision_reduction": "True",
    "cuda.matmul.allow_fp16_reduced_precision_reduction_split_k": "True",
    "cuda.matmul.allow_bf16_reduced_precision_reduction": "True",
    "cuda.matmul.allow_fp16_accumulation": "False",
    "cuda.matmul.fp32_precision": "'none'",
    "cuda.cufft_plan_cache.size": "raises RuntimeError/AssertionError",
    "cuda.cufft_plan_cache.max_size": "raises RuntimeError/AssertionError",
    "cuda.cufft_plan_cache[0]": "raises RuntimeError",
    "repr(cuda.preferred_blas_library())": "'<_BlasBackend.Cublas: 1>'",
    "repr(cuda.preferred_linalg_library())": "'<_LinalgBackend.Default: 0>'",
    "repr(cuda.preferred_rocm_fa_library())": "'<_ROCmFABackend.Default: 0>'",
    "cuda.is_ck_sdpa_available()": "False",
    "cuda.flash_sdp_enabled()": "True",
    "cuda.mem_efficient_sdp_enabled()": "True",
    "cuda.math_sdp_enabled()": "True",
    "cuda.cudnn_sdp_enabled()": "True",
    "cuda.fp16_bf16_reduction_math_sdp_allowed()": "False",
    "cuda.is_flash_attention_available()": "False",
    "cuda.can_use_flash_attention(cuda.SDPAParams(1, 1, 1, None, 0.0, False, False))": "False",
    "cuda.can_use_efficient_attention(cuda.SDPAParams(1, 1, 1, None, 0.0, False, False))": "False",
    "cuda.can_use_cudnn_attention(cuda.SDPAParams(1, 1, 1, None, 0.0, False, False))": "False",
    "cudnn.version()": "None",
    "cudnn.is_available()": "False",
    "cudnn.enabled": "True",
    "cudnn.allow_tf32": "True",
    "cudnn.deterministic": "False",
    "cudnn.benchmark": "False",
    "cudnn.benchmark_limit": "None",
    "cudnn.conv.fp32_precision": "'tf32'",
    "cusparselt.version()": "None",
    "cusparselt.is_available()": "False",
    "mha.get_fastpath_enabled()": "True",
    "miopen.immediate": "False",
    "mps.is_available()": "False",
    "mps.is_built()": "False",
    "mps.get_name()": "raises RuntimeError/AssertionError",
    "mkl.is_available()": "False",
    "mkldnn.is_available()": "False",
    "mkldnn.enabled": "True",
    "nnpack.is_available()": "False",
    "nnpack.set_flags(False)": "(True,)",
    "openmp.is_available()": "False",
    "opt_einsum.is_available()": str(HAS_OPT_EINSUM),
    "opt_einsum.get_opt_einsum()": repr(importlib.import_module("opt_einsum")) if HAS_OPT_EINSUM else "None",
    "opt_einsum.enabled": str(HAS_OPT_EINSUM),
    "opt_einsum.strategy": "'auto'" if HAS_OPT_EINSUM else "None",
    "kleidiai.is_available()": "False",
    "quantized.engine": "'none'",
    "quantized.supported_engines": "[]",
    "xnnpack.enabled": "False",
    "python_native.all_dsls": "[]",
    "python_native.available_dsls": "[]",
    "mlx.is_built()": "True",
    "mlx.fused_sdpa_enabled()": "True",
}


def test_every_query_answers_without_torch():
    code = WITHOUT_TORCH % (list(NO_TORCH_EXPECTED),)
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout.strip().splitlines()[-1])
    answers = {k: out[k] for k in NO_TORCH_EXPECTED}
    assert answers == NO_TORCH_EXPECTED
    assert out["after"] == [True, True, True, False, "<_BlasBackend.Cublaslt: 2>", False, False, "qnnpack",
                            True, False, True, False, True]
    assert out["generic"] == ["none", ["none"], "ieee"]
    assert out["frozen"] == [True, "not allowed to set cudnn flags after disable_global_flags; please use "
                             "flags() context manager instead", [False, False], True, True]
    assert out["pending"] >= 10
    assert out["torch_in_modules"] is False


# --- the notebook check -------------------------------------------------------------------------

NOTEBOOK = """
print("cudnn.enabled", torch.backends.cudnn.enabled)
print("cudnn.is_available", torch.backends.cudnn.is_available())
print("cudnn.version", torch.backends.cudnn.version())
print("cudnn.benchmark", torch.backends.cudnn.benchmark, torch.backends.cudnn.deterministic)
print("mps", torch.backends.mps.is_built(), torch.backends.mps.is_available())
print("mkldnn.enabled", torch.backends.mkldnn.enabled, torch.backends.mkldnn.is_available())
print("mkl", torch.backends.mkl.is_available(), "openmp", torch.backends.openmp.is_available())
print("cpu capability", torch.backends.cpu.get_cpu_capability())
print("cuda built", torch.backends.cuda.is_built(), "cuda available", torch.cuda.is_available())
if torch.cuda.is_available():
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
print("tf32", torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
print("sdp", torch.backends.cuda.flash_sdp_enabled(), torch.backends.cuda.mem_efficient_sdp_enabled(),
      torch.backends.cuda.math_sdp_enabled(), torch.backends.cuda.cudnn_sdp_enabled())
print("blas", torch.backends.cuda.preferred_blas_library())
print("quantized", torch.backends.quantized.engine, torch.backends.quantized.supported_engines)
print("opt_einsum", torch.backends.opt_einsum.is_available(), torch.backends.opt_einsum.enabled)
with torch.backends.cudnn.flags(enabled=False):
    print("inside flags", torch.backends.cudnn.enabled)
print("after flags", torch.backends.cudnn.enabled)
"""

# One fresh process checks, in order: importing every mirror and device module imports neither
# torch nor MLX; values set before torch loads are kept, and reading the switches of tdx's own
# kernels does not import torch; then, after the user imports torch, the notebook script runs
# against tdx (whose first query applies the kept values to torch) and against torch, and both
# print the same. Until tdx/__init__ exposes ``tdx.backends`` and ``tdx.cuda`` itself, the tdx run
# binds them the way it will.
FRESH_PROCESS = r"""
import contextlib, importlib, io, json, sys
for name in %r:
    importlib.import_module("tdx.backends." + name)
import tdx.compat.cuda, tdx.compat.mps, tdx.compat.mlx
from tdx.backends import _flags
import tdx.backends as B
out = {"imported_on_import": [m for m in ("torch", "mlx", "mlx.core") if m in sys.modules]}
B.cuda.enable_flash_sdp(False)
B.mha.set_fastpath_enabled(False)
B.cudnn.benchmark = True
B.cuda.matmul.allow_fp16_reduced_precision_reduction = (False, False)
B.quantized.engine = "qnnpack"
out["governed"] = [B.cuda.flash_sdp_enabled(), B.mha.get_fastpath_enabled(), B.opt_einsum.enabled]
out["imported_after_governed"] = "torch" in sys.modules
out["pending"] = len(_flags.pending())
import torch as real_torch
script = %r
ours = io.StringIO()
with contextlib.redirect_stdout(ours):
    import tdx as torch
    import tdx.backends, tdx.compat.cuda
    if not hasattr(torch, "cuda"):
        torch.cuda = tdx.compat.cuda
    exec(script, {"torch": torch})
out["torch"] = [real_torch.backends.cuda.flash_sdp_enabled(), real_torch.backends.mha.get_fastpath_enabled(),
                real_torch.backends.cudnn.benchmark,
                real_torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction_split_k,
                real_torch.backends.quantized.engine]
theirs = io.StringIO()
with contextlib.redirect_stdout(theirs):
    exec(script, {"torch": real_torch})
out["notebook"] = [ours.getvalue(), theirs.getvalue()]
print(json.dumps(out))
"""


def test_fresh_process_keeps_values_for_torch_and_prints_the_notebook_as_torch():
    code = FRESH_PROCESS % (list(B._MIRRORS), NOTEBOOK)
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert out["imported_on_import"] == []
    assert out["governed"] == [False, False, HAS_OPT_EINSUM]
    assert out["imported_after_governed"] is False
    assert out["pending"] == 5
    assert out["torch"] == [False, False, True, False, "qnnpack"]
    ours, theirs = out["notebook"]
    assert "cudnn.enabled" in theirs and "after flags" in theirs
    assert ours == theirs


# --- tdx.backends.mlx ---------------------------------------------------------------------------

def test_mlx_backend_answers_as_mlx():
    mx = pytest.importorskip("mlx.core")
    assert B.mlx.is_built() and B.mlx.is_available()
    assert B.mlx.is_metal_available() is bool(mx.metal.is_available())
    assert B.mlx.is_cuda_available() is bool(mx.cuda.is_available())
    assert B.mlx.is_gpu_available() is (bool(mx.metal.is_available()) or bool(mx.cuda.is_available()))
    kind = "gpu" if mx.default_device().type == mx.DeviceType.gpu else "cpu"
    assert str(B.mlx.default_device()) == f"mlx:{kind}"
    assert B.mlx.get_memory_limit() == mx.get_memory_limit()


def test_mlx_memory_limits_round_trip():
    mx = pytest.importorskip("mlx.core")
    original = mx.get_memory_limit()
    try:
        assert B.mlx.set_memory_limit(original // 2) == original
        assert mx.get_memory_limit() == original // 2
    finally:
        mx.set_memory_limit(original)
    previous = B.mlx.set_cache_limit(1 << 20)
    try:
        assert B.mlx.set_cache_limit(previous) == 1 << 20
    finally:
        mx.set_cache_limit(previous)


def test_mlx_fused_sdpa_switch_follows_config_and_setter(tmp_path, monkeypatch):
    assert B.mlx.fused_sdpa_enabled() is True
    with pytest.raises(KeyError):
        with B.mlx.flags(fused_sdpa=False):
            assert B.mlx.fused_sdpa_enabled() is False
            raise KeyError("boom")
    assert B.mlx.fused_sdpa_enabled() is True
    with pytest.raises(RuntimeError, match="expects a bool"):
        B.mlx.enable_fused_sdpa("no")
    cfg = tmp_path / "tdx.toml"
    cfg.write_text("[backends.mlx]\nfused_sdpa = false\n")
    monkeypatch.setenv("TDX_CONFIG", str(cfg))
    try:
        config.reload()
        assert B.mlx.fused_sdpa_enabled() is False
        B.mlx.enable_fused_sdpa(True)
        assert B.mlx.fused_sdpa_enabled() is True
    finally:
        B.mlx._state["fused_sdpa"] = None
        monkeypatch.delenv("TDX_CONFIG")
        config.reload()
    assert B.mlx.fused_sdpa_enabled() is True


def test_backend_unavailable_error_is_both_builtins():
    err = _flags.BackendUnavailableError("x")
    assert isinstance(err, RuntimeError) and isinstance(err, AssertionError)


def test_mlx_flags_restore_even_when_a_value_is_refused():
    mlx_flags = B.mlx
    before = (mlx_flags.fused_sdpa_enabled(), mlx_flags.downcast_float64_enabled())
    with pytest.raises(RuntimeError, match="expects a bool"):
        with mlx_flags.flags(fused_sdpa=not before[0], downcast_float64="yes"):
            pass
    assert (mlx_flags.fused_sdpa_enabled(), mlx_flags.downcast_float64_enabled()) == before


@pytest.mark.parametrize("preset", [None, "1"])
def test_mlx_multiplies_float32_as_torch_unless_the_environment_says(preset):
    """MLX defaults to TF32 products on CUDA; tdx sets MLX's switch to torch's full float32 before MLX starts,
    leaving a value the user exported."""
    pytest.importorskip("mlx.core")
    env = {k: v for k, v in os.environ.items() if k != "MLX_ENABLE_TF32"}
    if preset is not None:
        env["MLX_ENABLE_TF32"] = preset
    code = ("import os, tdx; x = tdx.ones(2, device='mlx:cpu'); (x @ x).sum().item(); "
            "print(os.environ.get('MLX_ENABLE_TF32'))")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == (preset or "0")
