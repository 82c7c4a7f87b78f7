"""Python's scalar types as dtypes (``dtype=float`` is float64, ``complex`` complex128, ``int`` int64, ``bool``
bool), in every public callable that takes a ``dtype=``, against torch on CPU, on every device.

The callables are discovered, not listed by hand: every tdx function, Tensor method and ``nn`` module whose
signature names ``dtype``, and every torch op whose schema has a ``dtype`` argument. Each must have a recipe
here (or a reason it cannot be called with a plain dtype), so a new ``dtype=`` callable fails
``test_every_dtype_callable_is_walked`` until it is walked.
"""

from __future__ import annotations

import importlib
import inspect

import numpy as np
import pytest
import torch

import tdx
from tdx.testing.parity import assert_close

PY_TYPES = (float, int, bool, complex)
X = [[0.5, 1.5, 2.0], [1.0, 3.0, 0.25]]

# recipe(ns, x, dt, dev): ns is torch or tdx, x a 2x3 float32 tensor of ns on the device, dt the dtype-like,
# dev the device keyword for ns's factories; "random"/"empty" recipes compare dtype and shape only
_R, _E = "random", "empty"
RECIPES = {
    "torch.arange": (lambda ns, x, dt, dev: ns.arange(4, dtype=dt, **dev), None),
    "torch.as_tensor": (lambda ns, x, dt, dev: ns.as_tensor([1, 0, 2], dtype=dt, **dev), None),
    "torch.asarray": (lambda ns, x, dt, dev: ns.asarray([1, 0, 2], dtype=dt, **dev), None),
    "torch.tensor": (lambda ns, x, dt, dev: ns.tensor([0.1, 1.0, 0.0], dtype=dt, **dev), None),
    "torch.scalar_tensor": (lambda ns, x, dt, dev: ns.scalar_tensor(0.1, dtype=dt, **dev), None),
    "torch.empty": (lambda ns, x, dt, dev: ns.empty(2, 3, dtype=dt, **dev), _E),
    "torch.empty_like": (lambda ns, x, dt, dev: ns.empty_like(x, dtype=dt), _E),
    "torch.empty_permuted": (lambda ns, x, dt, dev: ns.empty_permuted((2, 3), (1, 0), dtype=dt, **dev), _E),
    "torch.empty_strided": (lambda ns, x, dt, dev: ns.empty_strided((2, 3), (3, 1), dtype=dt, **dev), _E),
    "torch.eye": (lambda ns, x, dt, dev: ns.eye(3, dtype=dt, **dev), None),
    "torch.frombuffer": (lambda ns, x, dt, dev: ns.frombuffer(bytearray(np.arange(4.0).tobytes()), dtype=dt).to(
        x.device), None),
    "torch.full": (lambda ns, x, dt, dev: ns.full((2, 2), 1, dtype=dt, **dev), None),
    "torch.full_like": (lambda ns, x, dt, dev: ns.full_like(x, 1, dtype=dt), None),
    "torch.linspace": (lambda ns, x, dt, dev: ns.linspace(0, 3, 4, dtype=dt, **dev), None),
    "torch.logspace": (lambda ns, x, dt, dev: ns.logspace(0, 2, 3, dtype=dt, **dev), None),
    "torch.range": (lambda ns, x, dt, dev: ns.range(0, 3, dtype=dt, **dev), None),
    "torch.ones": (lambda ns, x, dt, dev: ns.ones(2, 3, dtype=dt, **dev), None),
    "torch.ones_like": (lambda ns, x, dt, dev: ns.ones_like(x, dtype=dt), None),
    "torch.zeros": (lambda ns, x, dt, dev: ns.zeros(2, 3, dtype=dt, **dev), None),
    "torch.zeros_like": (lambda ns, x, dt, dev: ns.zeros_like(x, dtype=dt), None),
    "torch.tril_indices": (lambda ns, x, dt, dev: ns.tril_indices(3, 3, dtype=dt, **dev), None),
    "torch.triu_indices": (lambda ns, x, dt, dev: ns.triu_indices(3, 3, dtype=dt, **dev), None),
    "torch.rand": (lambda ns, x, dt, dev: ns.rand(2, 3, dtype=dt, **dev), _R),
    "torch.rand_like": (lambda ns, x, dt, dev: ns.rand_like(x, dtype=dt), _R),
    "torch.randn": (lambda ns, x, dt, dev: ns.randn(2, 3, dtype=dt, **dev), _R),
    "torch.randn_like": (lambda ns, x, dt, dev: ns.randn_like(x, dtype=dt), _R),
    "torch.randint": (lambda ns, x, dt, dev: ns.randint(0, 5, (2, 3), dtype=dt, **dev), _R),
    "torch.randint_like": (lambda ns, x, dt, dev: ns.randint_like(x, 5, dtype=dt), _R),
    "torch.randperm": (lambda ns, x, dt, dev: ns.randperm(5, dtype=dt, **dev), _R),
    "torch.normal": (lambda ns, x, dt, dev: ns.normal(0.0, 1.0, (2, 3), dtype=dt, **dev), _R),
    "torch.bartlett_window": (lambda ns, x, dt, dev: ns.bartlett_window(5, dtype=dt, **dev), None),
    "torch.blackman_window": (lambda ns, x, dt, dev: ns.blackman_window(5, dtype=dt, **dev), None),
    "torch.hamming_window": (lambda ns, x, dt, dev: ns.hamming_window(5, dtype=dt, **dev), None),
    "torch.hann_window": (lambda ns, x, dt, dev: ns.hann_window(5, dtype=dt, **dev), None),
    "torch.kaiser_window": (lambda ns, x, dt, dev: ns.kaiser_window(5, dtype=dt, **dev), None),
    "torch.cumprod": (lambda ns, x, dt, dev: ns.cumprod(x, 1, dtype=dt), None),
    "torch.cumsum": (lambda ns, x, dt, dev: ns.cumsum(x, 1, dtype=dt), None),
    "torch.log_softmax": (lambda ns, x, dt, dev: ns.log_softmax(x, 1, dtype=dt), None),
    "torch.softmax": (lambda ns, x, dt, dev: ns.softmax(x, 1, dtype=dt), None),
    "torch.mean": (lambda ns, x, dt, dev: ns.mean(x, dtype=dt), None),
    "torch.nanmean": (lambda ns, x, dt, dev: ns.nanmean(x, dtype=dt), None),
    "torch.nansum": (lambda ns, x, dt, dev: ns.nansum(x, dtype=dt), None),
    "torch.norm": (lambda ns, x, dt, dev: ns.norm(x, dtype=dt), None),
    "torch.prod": (lambda ns, x, dt, dev: ns.prod(x, 1, dtype=dt), None),
    "torch.sum": (lambda ns, x, dt, dev: ns.sum(x, 1, dtype=dt), None),
    "torch.view_copy": (lambda ns, x, dt, dev: ns.view_copy(x, dt), None),
    "torch.promote_types": (lambda ns, x, dt, dev: ns.promote_types(dt, ns.int32), None),
    "torch.can_cast": (lambda ns, x, dt, dev: ns.can_cast(dt, ns.int32), None),
    "torch.finfo": (lambda ns, x, dt, dev: ns.finfo(dt).eps, None),
    "torch.iinfo": (lambda ns, x, dt, dev: ns.iinfo(dt).max, None),
    "torch.set_default_dtype": (lambda ns, x, dt, dev: ns.set_default_dtype(dt), None),
    "Tensor.cumprod": (lambda ns, x, dt, dev: x.cumprod(1, dtype=dt), None),
    "Tensor.cumprod_": (lambda ns, x, dt, dev: x.clone().cumprod_(1, dtype=dt), None),
    "Tensor.cumsum": (lambda ns, x, dt, dev: x.cumsum(1, dtype=dt), None),
    "Tensor.cumsum_": (lambda ns, x, dt, dev: x.clone().cumsum_(1, dtype=dt), None),
    "Tensor.log_softmax": (lambda ns, x, dt, dev: x.log_softmax(0, dtype=dt), None),
    "Tensor.softmax": (lambda ns, x, dt, dev: x.softmax(0, dtype=dt), None),
    "Tensor.mean": (lambda ns, x, dt, dev: x.mean(0, dtype=dt), None),
    "Tensor.nanmean": (lambda ns, x, dt, dev: x.nanmean(0, dtype=dt), None),
    "Tensor.nansum": (lambda ns, x, dt, dev: x.nansum(0, dtype=dt), None),
    "Tensor.norm": (lambda ns, x, dt, dev: x.norm(dtype=dt), None),
    "Tensor.prod": (lambda ns, x, dt, dev: x.prod(dtype=dt), None),
    "Tensor.sum": (lambda ns, x, dt, dev: x.sum(dtype=dt), None),
    "Tensor.new_empty": (lambda ns, x, dt, dev: x.new_empty(2, dtype=dt), _E),
    "Tensor.new_empty_strided": (lambda ns, x, dt, dev: x.new_empty_strided((2,), (1,), dtype=dt), _E),
    "Tensor.new_full": (lambda ns, x, dt, dev: x.new_full((2,), 3, dtype=dt), None),
    "Tensor.new_ones": (lambda ns, x, dt, dev: x.new_ones(2, dtype=dt), None),
    "Tensor.new_zeros": (lambda ns, x, dt, dev: x.new_zeros(2, dtype=dt), None),
    "Tensor.new_tensor": (lambda ns, x, dt, dev: x.new_tensor([0.1, 2.0], dtype=dt), None),
    "Tensor.to": (lambda ns, x, dt, dev: (x.to(dt), x.to(dtype=dt), x.to(x.device, dt)), None),
    "Tensor.to_dense": (lambda ns, x, dt, dev: x.to_dense(dtype=dt), None),
    "Tensor.type": (lambda ns, x, dt, dev: x.type(dt), None),
    "Tensor.view": (lambda ns, x, dt, dev: x.view(dt), None),
    "nn.functional.log_softmax": (lambda ns, x, dt, dev: ns.nn.functional.log_softmax(x, 1, dtype=dt), None),
    "nn.functional.softmax": (lambda ns, x, dt, dev: ns.nn.functional.softmax(x, 1, dtype=dt), None),
    "nn.functional.softmin": (lambda ns, x, dt, dev: ns.nn.functional.softmin(x, 1, dtype=dt), None),
    "linalg.matrix_norm": (lambda ns, x, dt, dev: ns.linalg.matrix_norm(x, dtype=dt), None),
    "linalg.norm": (lambda ns, x, dt, dev: ns.linalg.norm(x, dtype=dt), None),
    "linalg.vector_norm": (lambda ns, x, dt, dev: ns.linalg.vector_norm(x, dtype=dt), None),
    "fft.fftfreq": (lambda ns, x, dt, dev: ns.fft.fftfreq(5, dtype=dt, **dev), None),
    "fft.rfftfreq": (lambda ns, x, dt, dev: ns.fft.rfftfreq(5, dtype=dt, **dev), None),
    "special.log_softmax": (lambda ns, x, dt, dev: ns.special.log_softmax(x, 1, dtype=dt), None),
    "special.softmax": (lambda ns, x, dt, dev: ns.special.softmax(x, 1, dtype=dt), None),
    "nn.Module.to": (lambda ns, x, dt, dev: ns.nn.Linear(3, 2).to(x.device).to(dt), _R),
    "nn.Module.type": (lambda ns, x, dt, dev: ns.nn.Linear(3, 2).to(x.device).type(dt), _R),
}

def _autocast_dtype(ns, dt):
    """``set_autocast_dtype("cpu", dt)`` read back, then restored; and a region opened with ``dtype=dt``."""
    import warnings

    before = ns.get_autocast_dtype("cpu")
    try:
        ns.set_autocast_dtype("cpu", dt)
        got = ns.get_autocast_dtype("cpu")
    finally:
        ns.set_autocast_dtype("cpu", before)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # an unsupported dtype disables the region, with a warning
        with ns.autocast("cpu", dtype=dt):
            enabled = ns.is_autocast_enabled("cpu")
    return got, enabled


RECIPES["torch.set_autocast_dtype"] = (lambda ns, x, dt, dev: _autocast_dtype(ns, dt), None)
RECIPES["torch.autocast"] = (lambda ns, x, dt, dev: _autocast_dtype(ns, dt), None)

_MASK = "masked"
for _name in ("amax", "amin", "argmax", "argmin", "cumprod", "cumsum", "log_softmax", "logsumexp", "mean",
              "median", "norm", "normalize", "prod", "softmax", "softmin", "std", "sum", "var", "logaddexp"):
    def _masked(ns, x, dt, dev, _name=_name):
        fn = getattr(ns.masked, _name)
        mask = x > 0.6
        if _name == "logaddexp":
            return fn(x, x, dtype=dt, input_mask=mask, other_mask=mask)
        if _name in ("norm", "normalize"):
            return fn(x, 2.0, 1, dtype=dt, mask=mask)
        return fn(x, 1, dtype=dt, mask=mask)
    RECIPES[f"masked.{_name}"] = (_masked, None)

for _name in ("bartlett", "blackman", "cosine", "exponential", "gaussian", "general_hamming", "hamming",
              "hann", "kaiser", "nuttall"):
    RECIPES[f"signal.windows.{_name}"] = (
        lambda ns, x, dt, dev, _name=_name: getattr(ns.signal.windows, _name)(5, dtype=dt, **dev), None)
RECIPES["signal.windows.general_cosine"] = (
    lambda ns, x, dt, dev: ns.signal.windows.general_cosine(5, a=[0.5, 0.5], dtype=dt, **dev), None)

# nn modules taking factory keywords: constructor arguments; parameters' and buffers' dtypes compared
MODULE_ARGS = {
    "AdaptiveLogSoftmaxWithLoss": (8, 10, [4]), "LinearCrossEntropyLoss": (3, 4),
    "BatchNorm1d": (2,), "BatchNorm2d": (2,), "BatchNorm3d": (2,), "SyncBatchNorm": (2,), "Bilinear": (2, 2, 3),
    "Conv1d": (1, 1, 1), "Conv2d": (1, 1, 1), "Conv3d": (1, 1, 1), "ConvTranspose1d": (1, 1, 1),
    "ConvTranspose2d": (1, 1, 1), "ConvTranspose3d": (1, 1, 1), "Embedding": (4, 2), "EmbeddingBag": (4, 2),
    "GRUCell": (2, 3), "LSTMCell": (2, 3), "RNNCell": (2, 3), "GroupNorm": (1, 2), "LayerNorm": (3,),
    "RMSNorm": (3,), "InstanceNorm1d": (2,), "InstanceNorm2d": (2,), "InstanceNorm3d": (2,), "Linear": (2, 3),
    "MultiheadAttention": (4, 2), "PReLU": (), "GRU": (2, 3), "LSTM": (2, 3), "RNN": (2, 3),
    "RNNBase": ("RNN_TANH", 2, 3), "RNNCellBase": (2, 3, True, 1),
    "Transformer": (4, 1, 1, 1, 4), "TransformerEncoderLayer": (4, 1, 4), "TransformerDecoderLayer": (4, 1, 4),
    "LazyLinear": (3,), "LazyConv1d": (1, 1), "LazyConv2d": (1, 1), "LazyConv3d": (1, 1),
    "LazyConvTranspose1d": (1, 1), "LazyConvTranspose2d": (1, 1), "LazyConvTranspose3d": (1, 1),
    "LazyBatchNorm1d": (), "LazyBatchNorm2d": (), "LazyBatchNorm3d": (), "LazyInstanceNorm1d": (),
    "LazyInstanceNorm2d": (), "LazyInstanceNorm3d": (),
}
for _name, _args in MODULE_ARGS.items():
    RECIPES[f"nn.{_name}"] = (lambda ns, x, dt, dev, _name=_name, _args=_args: getattr(ns.nn, _name)(
        *_args, dtype=dt, **dev, **({"affine": True} if "InstanceNorm" in _name else {})), _R)

# callables whose dtype is not a plain element dtype, or that tdx refuses by design (tdx/compat/refused.py)
NOT_WALKED = {
    "torch.from_file": "reads a file's bytes: the dtype reading is frombuffer's, walked",
    "torch.empty_quantized": "quantized tensors are refused", "torch.quantize_per_tensor": "quantized",
    "torch.quantize_per_channel": "quantized", "torch.quantize_per_tensor_dynamic": "quantized",
    "torch.quantized_lstm": "quantized", "Tensor.to_mkldnn": "oneDNN layout refused",
    "torch.sparse_bsc_tensor": "sparse layouts refused", "torch.sparse_bsr_tensor": "sparse layouts refused",
    "torch.sparse_compressed_tensor": "sparse layouts refused", "torch.sparse_coo_tensor": "sparse layouts refused",
    "torch.sparse_csc_tensor": "sparse layouts refused", "torch.sparse_csr_tensor": "sparse layouts refused",
    "torch.native_norm": "not a public torch function (no torch.native_norm in tdx)",
    "linalg._powsum": "private", "torch.set_autocast_cpu_dtype": "deprecated spelling of set_autocast_dtype",
    "torch.set_autocast_gpu_dtype": "deprecated spelling of set_autocast_dtype",
    "torch.set_autocast_ipu_dtype": "autocast's dtype", "torch.set_autocast_xla_dtype": "autocast's dtype",
}

_NAMESPACES = {"torch": "tdx", "nn.functional": "tdx.nn.functional", "linalg": "tdx.linalg", "fft": "tdx.fft",
               "special": "tdx.special", "masked": "tdx.masked", "signal.windows": "tdx.signal.windows"}


def _takes_dtype(fn) -> bool:
    try:
        return "dtype" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def discovered() -> set:
    """Every public callable taking ``dtype=``: from tdx's signatures and from torch's op schemas."""
    names = set()
    for short, path in _NAMESPACES.items():
        mod = importlib.import_module(path)
        for n in dir(mod):
            if not n.startswith("_") and callable(getattr(mod, n, None)) and not isinstance(getattr(mod, n), type) \
                    and _takes_dtype(getattr(mod, n)):
                names.add(f"{short}.{n}")
    names.update(f"Tensor.{n}" for n in dir(tdx.Tensor) if not n.startswith("_") and _takes_dtype(
        getattr(tdx.Tensor, n)))
    for n in dir(tdx.nn):
        cls = getattr(tdx.nn, n)
        if isinstance(cls, type) and issubclass(cls, tdx.nn.Module) and _takes_dtype(cls):
            names.add(f"nn.{n}")
    for schema in torch._C._jit_get_all_schemas():
        if not schema.name.startswith("aten::") or not any(a.name == "dtype" for a in schema.arguments):
            continue
        n = schema.name[6:]
        for prefix in ("linalg_", "fft_", "special_"):
            if n.startswith(prefix):
                names.add(f"{prefix[:-1]}.{n[len(prefix):]}")
                break
        else:
            if hasattr(torch, n) and not n.startswith("_"):
                names.add(f"torch.{n}")
            if hasattr(torch.Tensor, n) and not n.startswith("_"):
                names.add(f"Tensor.{n}")
    return names


def test_every_dtype_callable_is_walked():
    missing = discovered() - set(RECIPES) - set(NOT_WALKED)
    assert not missing, f"callables taking dtype= with no recipe in this file: {sorted(missing)}"
    assert len(RECIPES) > 120


def _summary(r):
    """What is compared: (dtype name, values) of a tensor, or the value itself."""
    if isinstance(r, (tuple, list)):
        return [_summary(v) for v in r]
    if isinstance(r, (torch.nn.Module, tdx.nn.Module)):  # the dtypes its parameters and buffers hold
        return sorted({str(p.dtype).rsplit(".", 1)[-1] for p in list(r.parameters()) + list(r.buffers())
                       if p.is_floating_point() or p.is_complex()})
    if isinstance(r, (torch.dtype, tdx.dtype)):
        return str(r).rsplit(".", 1)[-1]
    return r


def _compare(got, expected, kind, name):
    if isinstance(expected, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(got) == len(expected), name
        for g, e in zip(got, expected):
            _compare(g, e, kind, name)
        return
    if isinstance(expected, (torch.Tensor, tdx.Tensor)):
        assert isinstance(got, tdx.Tensor), f"{name}: {got!r}"
        assert str(got.dtype).rsplit(".", 1)[-1] == str(expected.dtype).rsplit(".", 1)[-1], \
            f"{name}: dtype {got.dtype}, torch {expected.dtype}"
        assert tuple(got.shape) == tuple(expected.shape), name
        if kind is None:
            assert_close(got, expected, msg=name)
        return
    assert _summary(got) == _summary(expected), f"{name}: {_summary(got)} != {_summary(expected)}"


def _held(r) -> set:
    """The dtype names a torch result holds (tensors, a module's parameters)."""
    if isinstance(r, (tuple, list)):
        return set().union(*(_held(v) for v in r)) if r else set()
    if isinstance(r, torch.Tensor):
        return {str(r.dtype).rsplit(".", 1)[-1]}
    if isinstance(r, torch.nn.Module):
        return set(_summary(r))
    return set()


MAPPED = {float: "float64", int: "int64", bool: "bool", complex: "complex128"}
BUILTINS = (IndexError, TypeError, ValueError, NotImplementedError, RuntimeError, AttributeError)


def _run(recipe, ns, device, dt):
    """(result, None) or (None, the exception) of one recipe call, the default dtype restored after."""
    default = tdx.get_default_dtype()
    torch.manual_seed(0)
    x = torch.tensor(X) if ns is torch else tdx.tensor(X, device=device)
    try:
        return recipe(ns, x, dt, {} if ns is torch else {"device": device}), None
    except BUILTINS as err:
        return None, err
    finally:
        torch.set_default_dtype(torch.float32)
        tdx.set_default_dtype(default)


def _torch_has(name: str) -> bool:
    """Whether the installed torch has the callable a recipe is named after (``nn.LinearCrossEntropyLoss`` is newer
    than torch 2.11)."""
    obj = torch
    for part in name.split(".")[1 if name.startswith("torch.") else 0:]:
        obj = getattr(obj, part, None)
        if obj is None:
            return False
    return True


# recipes whose refusal of an integer dtype= an older torch left to its kernel (a NotImplementedError naming the
# dtype) where torch 2.13, which tdx follows, checks the argument itself (a RuntimeError): since that version
_ARGUMENT_CHECKED_SINCE = {"torch.nanmean": (2, 13), "Tensor.nanmean": (2, 13)}
_TORCH = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2])


def _kernel_coverage(err) -> bool:
    """torch's refusal is its kernel's dtype coverage ("... not implemented for 'Bool'"), not the argument."""
    return isinstance(err, NotImplementedError) and "not implemented for '" in str(err)


@pytest.mark.parametrize("name", sorted(RECIPES))
def test_python_types_as_dtype_match_torch(device, name):
    """torch's outcome for each Python type: the same dtype and values, or the same builtin error as a TdxError.
    Where the device cannot hold the type's dtype (complex128 on MLX) the refusal names it; where torch's kernel
    lacks the dtype and tdx computes it, ``dtype=<type>`` must behave exactly as ``dtype=<its tdx dtype>``."""
    recipe, kind = RECIPES[name]
    caps = tdx.backends.get(device).caps
    if not _torch_has(name):
        pytest.skip(f"the installed torch {torch.__version__} has no {name} to compare with")
    for py in PY_TYPES:
        label = f"{name}(dtype={py.__name__})"
        expected, t_err = _run(recipe, torch, device, py)
        got, err = _run(recipe, tdx, device, py)
        if MAPPED[py] not in caps.dtypes and (t_err is not None or MAPPED[py] in _held(expected)):
            if err is not None:
                assert isinstance(err, tdx.DtypeError) and MAPPED[py] in str(err) or \
                    t_err is not None and isinstance(err, type(t_err).__mro__[0:1] + (tdx.TdxError,)), \
                    f"{label}: {err!r}"
                continue
            assert t_err is not None, f"{label}: {device} holds no {MAPPED[py]} yet returned {got!r}"
        if t_err is not None:
            if err is None and _kernel_coverage(t_err):  # tdx computes what torch's kernel lacks
                same, same_err = _run(recipe, tdx, device, getattr(tdx, MAPPED[py]))
                assert same_err is None, f"{label} works, dtype=tdx.{MAPPED[py]} raises {same_err!r}"
                _compare(got, same, kind, label)
                continue
            builtin = next(b for b in BUILTINS if isinstance(t_err, b))
            if _kernel_coverage(t_err) and _TORCH < _ARGUMENT_CHECKED_SINCE.get(name, _TORCH):
                builtin = RuntimeError  # tdx refuses the argument, as the newer torch
            assert isinstance(err, builtin), f"{label}: torch raised {t_err!r}, tdx {err!r}"
            assert isinstance(err, (tdx.TdxError, AttributeError)), f"{label}: untyped {err!r}"
            continue
        assert err is None, f"{label}: torch gave {_summary(expected)!r}, tdx raised {err!r}"
        _compare(got, expected, kind, label)


@pytest.mark.parametrize("default", ["float32", "float64", "float16"])
def test_python_float_ignores_the_default_dtype(device, default):
    """``dtype=float`` is float64 and ``dtype=complex`` complex128 whatever the default; a Python float value
    still takes the default, as in torch."""
    caps = tdx.backends.get(device).caps
    try:
        torch.set_default_dtype(getattr(torch, default))
        tdx.set_default_dtype(getattr(tdx, default))
        cases = [lambda ns, dev: ns.ones(2, dtype=float, **dev), lambda ns, dev: ns.tensor([0.1], dtype=float, **dev),
                 lambda ns, dev: ns.tensor([0.1], **dev), lambda ns, dev: ns.tensor(0.1, **dev) * 2,
                 lambda ns, dev: ns.arange(3, dtype=float, **dev), lambda ns, dev: ns.zeros(2, **dev).to(float),
                 lambda ns, dev: ns.ones(2, dtype=int, **dev) / 2]
        if "complex128" in caps.dtypes:
            cases.append(lambda ns, dev: ns.ones(2, dtype=complex, **dev))
        for i, case in enumerate(cases):
            expected = case(torch, {})
            if str(expected.dtype).rsplit(".", 1)[-1] not in caps.dtypes:
                continue
            got = case(tdx, {"device": device})
            want = str(expected.dtype).rsplit(".", 1)[-1]
            assert got.dtype.name == want, f"case {i}: {got.dtype} vs {expected.dtype}"
            assert_close(got, expected, msg=f"case {i}")
    finally:
        torch.set_default_dtype(torch.float32)
        tdx.set_default_dtype(tdx.float32)


@pytest.mark.float64
def test_dtype_float_keeps_float64_precision(device):
    """The case that silently lost precision: 0.1 held as float64 reads back as the Python float 0.1."""
    assert tdx.tensor([0.1], dtype=float, device=device).item() == 0.1
    assert tdx.full((1,), 0.1, dtype=float, device=device).item() == 0.1
    assert tdx.tensor([0.1], device=device).to(float).item() == torch.tensor([0.1]).to(float).item()


@pytest.mark.parametrize("bad", ["float32", "torch.float32", "float", np.float64, object, 1])
def test_dtype_names_and_foreign_objects_refused_as_torch(device, bad):
    with pytest.raises(TypeError):
        torch.ones(2, dtype=bad)
    with pytest.raises(TypeError) as info:
        tdx.ones(2, dtype=bad, device=device)
    assert isinstance(info.value, tdx.TdxError) and repr(bad) in str(info.value)
    with pytest.raises(TypeError):
        torch.ones(2).sum(dtype=bad)
    with pytest.raises(tdx.TdxError):
        tdx.ones(2, device=device).sum(dtype=bad)
