"""PyTorch's OpInfo database (``op_db``) run through tdx, with real torch as the oracle.

For an OpInfo entry, a device and a dtype, :func:`run_entry` takes torch's own sample inputs,
copies each onto the device as tdx tensors, calls the tdx function of the same name (``tdx.add``,
``tdx.nn.functional.relu``, ``tdx.linalg.svd``...), and compares values, dtype and shape with
torch's result on the device's torch twin (``conftest.torch_twin``: the device itself where tdx runs
torch's own kernels there, such as cuda, whose kernels round, pick among ties, draw and refuse dtypes
otherwise than CPU's; CPU for MLX). Entries whose ``op`` is a Python function of torch's test suite (a lambda
such as ``lambda x: x.H``) are called with their globals rebound so that ``torch`` means ``tdx``.
With ``grad=True`` the gradients of the inputs of a weighted sum of the outputs are compared too;
``variants=True`` also checks the method (``x.add(y)``) and in-place (``x.add_(y)``) variants.
Random ops (:data:`RANDOM`) compare shape, dtype, support and moments, never values.

Used by ``tests/test_opinfo.py`` (sampled, in the suite) and by its script mode (the independent
pass-share figure). It needs ``expecttest`` (the ``dev`` extra), which torch's test modules import.
"""

from __future__ import annotations

import math
import types
import warnings

import numpy as np
import torch

import tdx
from tdx.aliasing.refused import is_refused
from tdx.testing.parity import assert_close

from conftest import torch_twin

# (rtol, atol) per dtype. float32 is looser than torch.testing's 1.3e-6: reductions and matmuls
# accumulate in another order on each executor, and MLX's transcendental kernels differ by a few ulp.
TOL = {"float32": (1e-5, 1e-5), "float64": (1e-10, 1e-10), "float16": (1e-3, 1e-3),
       "bfloat16": (1.6e-2, 1e-2), "complex64": (1e-5, 1e-5), "complex128": (1e-10, 1e-10)}
# gradients go through one more chain of float32 arithmetic
GRAD_TOL = {"float32": (1e-4, 1e-5), "float64": (1e-9, 1e-10)}

# per-op float64 tolerances where torch's own kernel is less accurate than float64 allows (its trigamma
# sums 6 recurrence steps and 3 asymptotic terms: about 1e-10 relative)
OP_TOL = {"polygamma": {"float64": (1e-9, 1e-10)}}

# ops whose values are draws: compared by shape, dtype, support and moments
RANDOM = frozenset({"bernoulli", "multinomial", "normal", "uniform", "cauchy", "exponential", "geometric",
                    "log_normal", "rand_like", "randn_like", "randint_like", "randint", "nn.functional.dropout",
                    "nn.functional.dropout2d", "nn.functional.dropout3d", "nn.functional.alpha_dropout",
                    "nn.functional.feature_alpha_dropout", "nn.functional.rrelu", "empty", "empty_like",
                    "new_empty", "new_empty_strided", "empty_strided", "empty_permuted",
                    "nn.functional.fractional_max_pool2d", "nn.functional.fractional_max_pool3d",
                    "torch.empty", "normal", "randn", "rand", "bernoulli"})
# ops whose result is uninitialized memory: shape and dtype only
UNINITIALIZED = frozenset({"empty", "empty_like", "new_empty", "new_empty_strided", "empty_strided",
                           "empty_permuted", "torch.empty"})

# randomized factorizations: the factors depend on the draws (tdx's MLX generator is not torch's), so the
# results are compared through the sample's output_process_fn_grad, the functions of the factors that torch's
# own tests use because they are well defined ((U V^H, S) for svd_lowrank and pca_lowrank)
RANDOM_FACTORS = frozenset({"svd_lowrank", "pca_lowrank"})
# eigendecompositions: eigenvectors are unique up to a sign (eigh) or a unit phase (eig), and eig's eigenvalue
# order is the LAPACK build's deflation order (torch's test_linalg sorts both sides before comparing): tdx's
# eigenvalues are put in torch's order by nearest match, its eigenvectors multiplied by the sign or phase
# that best aligns them with torch's, and then everything is compared at the usual tolerances
EIGEN = frozenset({"linalg.eig", "linalg.eigvals", "linalg.eigh"})
# ops returning (values, indices) where torch's index among equal values is its kernel's choice: the
# values are compared, and the indices must select them
TIED_INDICES = frozenset({"kthvalue", "mode", "median", "nanmedian", "sort", "topk"})
# ops returning only indices, where torch's order among equal values is its kernel's choice: the values
# they select are compared
TIED_ARGS = frozenset({"argsort"})
# ops reading their input's storage beyond its elements: tdx gets the input as the same view (sizes,
# strides, offset) of a copy of the whole storage, not a contiguous copy of its elements
STORAGE_READERS = frozenset({"as_strided", "as_strided_copy"})
# CUDA-only entries (torch.cuda.jiterator) that list CPU dtypes but never run there
CUDA_ONLY = frozenset({"jiterator_unary", "jiterator_binary", "jiterator_4inputs_with_extra_args",
                       "jiterator_binary_return_by_ref", "jiterator_2inputs_2outputs"})

DTYPES = {"float32": torch.float32, "float64": torch.float64, "float16": torch.float16,
          "bfloat16": torch.bfloat16, "int64": torch.int64, "bool": torch.bool, "complex64": torch.complex64}


class Unsupported(Exception):
    """tdx has no callable for this entry (a missing op or namespace)."""


class NotApplicable(Exception):
    """torch's entry supports none of the sampled dtypes on CPU (CUDA-only ops such as the jiterator's)."""


# the namespaces the ``linalg`` branch builds (tdx.linalg, tdx.fft, tdx.special, tdx.masked, tdx.signal)
OTHER_NAMESPACES = ("linalg", "special", "fft", "masked", "signal")


def load_db():
    """torch's ``op_db`` (a list of OpInfo), imported on first use (it takes seconds)."""
    frozen = torch.backends.flags_frozen()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from torch.testing._internal.common_methods_invocations import op_db
    if not frozen and torch.backends.flags_frozen():
        # torch's test utilities freeze torch.backends' flags on import (disable_global_flags); the rest of
        # the suite sets them, so they are thawed again
        torch.backends.flags_frozen.__globals__["__allow_nonbracketed_mutation_flag"] = True
    return op_db


def entry_id(op) -> str:
    return op.name + (f".{op.variant_test_name}" if op.variant_test_name else "")


# --- torch -> tdx ------------------------------------------------------------------------------
def to_tdx(x, device):
    """``x`` with every torch tensor copied onto ``device`` (requires_grad kept) and torch's dtypes,
    devices and sizes as tdx's."""
    if isinstance(x, torch.Tensor):
        t = x.detach()
        name = str(t.dtype).rsplit(".", 1)[-1]
        arr = (t.float() if t.dtype == torch.bfloat16 else t).resolve_conj().resolve_neg().cpu().numpy()
        out = tdx.tensor(np.array(arr, order="C"), dtype=getattr(tdx, name), device=device)
        if x.requires_grad and x.is_leaf:
            out.requires_grad_()
        return out
    if isinstance(x, torch.dtype):
        return getattr(tdx, str(x).rsplit(".", 1)[-1])
    if isinstance(x, torch.device):
        return device
    if isinstance(x, torch.Size):
        return tuple(x)
    if isinstance(x, torch.memory_format):
        return getattr(tdx, str(x).rsplit(".", 1)[-1])
    if isinstance(x, torch.layout):
        return getattr(tdx, str(x).rsplit(".", 1)[-1])
    if isinstance(x, torch.nn.Module) and not any(True for _ in x.parameters()):  # PairwiseDistance()...
        out = getattr(tdx.nn, type(x).__name__)()
        for k, v in vars(x).items():
            if not k.startswith("_"):
                setattr(out, k, to_tdx(v, device))
        return out
    if isinstance(x, tuple) and type(x) is not tuple:  # namedtuple
        return type(x)(*(to_tdx(v, device) for v in x))
    if isinstance(x, (list, tuple)):
        return type(x)(to_tdx(v, device) for v in x)
    if isinstance(x, dict):
        return {k: to_tdx(v, device) for k, v in x.items()}
    return x


def rebound(fn):
    """``fn`` (a function of torch's test suite) with ``torch`` in its globals meaning ``tdx``."""
    g = dict(fn.__globals__)
    g["torch"] = tdx
    new = types.FunctionType(fn.__code__, g, fn.__name__, fn.__defaults__, fn.__closure__)
    new.__kwdefaults__ = fn.__kwdefaults__
    return new


def resolve(op):
    """The tdx callable for entry ``op``: a function, or ``None`` when only the method exists.

    Raises:
        Unsupported: neither a function nor a Tensor method of that name exists in tdx.
    """
    if isinstance(op.op, types.FunctionType) and op.op.__module__.startswith("torch.testing"):
        return rebound(op.op)
    name = op.name[len("torch."):] if op.name.startswith("torch.") else op.name
    obj = tdx
    try:
        for part in name.split("."):
            obj = getattr(obj, part)
        if is_refused(obj):
            raise Unsupported(f"tdx has no {op.name} (refused at use: {obj.__doc__})")
        if callable(obj) and not isinstance(obj, tdx.dtype):
            return obj
    except AttributeError:
        pass
    if "." not in name and hasattr(tdx.Tensor, name):
        return None
    raise Unsupported(f"tdx has no {op.name}")


def namespace_missing(op) -> bool:
    """Whether the entry lives in a ``tdx`` namespace that is not built yet."""
    head = op.name.split(".")[0]
    if head in ("linalg", "special", "fft", "masked", "signal", "sparse"):
        try:
            module = getattr(tdx, head)
        except AttributeError:
            return True
        return bool(getattr(module, "__tdx_generated__", False))  # importable, every name refused at use
    return False


# --- comparison ----------------------------------------------------------------------------------
def compare(got, expected, dtype: str, what: str, tol=TOL) -> None:
    """Assert ``got`` (tdx) matches ``expected`` (torch), recursing into tuples and lists."""
    if isinstance(expected, torch.Tensor):
        if not isinstance(got, tdx.Tensor):
            raise AssertionError(f"{what}: expected a Tensor, got {type(got).__name__}")
        exp_name = str(expected.dtype).rsplit(".", 1)[-1]
        rtol, atol = tol.get(exp_name, tol.get(dtype, (0, 0))) if exp_name in TOL else (0, 0)
        if exp_name in TOL and dtype in tol:
            rtol, atol = max(rtol, tol[dtype][0]), max(atol, tol[dtype][1])
        assert_close(got, expected, rtol=rtol, atol=atol, msg=what)
    elif isinstance(expected, (tuple, list)):
        if not isinstance(got, (tuple, list)) or len(got) != len(expected):
            raise AssertionError(f"{what}: expected a sequence of {len(expected)}, got {got!r:.200}")
        for i, (g, e) in enumerate(zip(got, expected)):
            compare(g, e, dtype, f"{what}[{i}]", tol)
    elif isinstance(expected, float) and not isinstance(got, tdx.Tensor):
        if not (math.isclose(got, expected, rel_tol=1e-5, abs_tol=1e-6) or (math.isnan(got) and math.isnan(expected))):
            raise AssertionError(f"{what}: {got!r} != {expected!r}")
    elif expected is None or isinstance(expected, (bool, int, complex, str)):
        if got != expected:
            raise AssertionError(f"{what}: {got!r} != {expected!r}")
    elif isinstance(expected, torch.dtype):
        if got is not to_tdx(expected, None):
            raise AssertionError(f"{what}: {got!r} != {expected!r}")
    else:
        compare(to_tdx(got, None) if False else got, expected.tolist() if hasattr(expected, "tolist") else expected,
                dtype, what, tol)


def aligned_eigen(got, expected, reorder: bool):
    """tdx's eigendecomposition ``got`` (in torch's eigenvalue order where ``reorder``: eig's order is not
    documented, eigh's ascending order is), its eigenvectors scaled by the unit sign or phase that best aligns
    each with torch's (see :data:`EIGEN`); ``got`` unchanged where shapes differ."""
    pair = isinstance(expected, tuple)
    gw, ew = (got[0], expected[0]) if pair else (got, expected)
    if not isinstance(gw, tdx.Tensor) or tuple(gw.shape) != tuple(ew.shape) or ew.numel() == 0:
        return got
    w = np.asarray(gw._ex.host_numpy(gw._n))
    ref = ew.detach().numpy()
    n = w.shape[-1]
    flat_w, flat_ref = w.reshape(-1, n), ref.reshape(-1, n)
    order = np.broadcast_to(np.arange(n), flat_w.shape).copy()
    for b in range(flat_w.shape[0] if reorder else 0):  # greedy nearest match, torch's eigenvalues first to last
        free = list(range(n))
        for j in range(n):
            k = min(free, key=lambda i: abs(flat_w[b, i] - flat_ref[b, j]))
            order[b, j] = k
            free.remove(k)
    order = order.reshape(w.shape)
    out_w = tdx.tensor(np.take_along_axis(w, order, -1), device=gw.device)
    if not pair:
        return out_w
    gv = got[1]
    v = np.take_along_axis(np.asarray(gv._ex.host_numpy(gv._n)), order[..., None, :], -1)
    dots = np.sum(np.conj(v) * expected[1].detach().numpy(), axis=-2, keepdims=True)
    mag = np.abs(dots)
    unit = np.where(mag > 0, dots / np.where(mag > 0, mag, 1), 1)
    return type(got)(out_w, tdx.tensor((v * unit).astype(v.dtype), device=gv.device))


def compare_random(got, expected, what: str) -> None:
    """Draws: same shape and dtype; same support (for discrete draws) and close moments (for many)."""
    if isinstance(expected, (tuple, list)):
        for i, (g, e) in enumerate(zip(got, expected)):
            compare_random(g, e, f"{what}[{i}]")
        return
    if not isinstance(expected, torch.Tensor):
        return
    assert tuple(got.shape) == tuple(expected.shape), f"{what}: shape {tuple(got.shape)} != {tuple(expected.shape)}"
    exp_name = str(expected.dtype).rsplit(".", 1)[-1]
    assert got.dtype.name == exp_name, f"{what}: dtype {got.dtype.name} != {exp_name}"
    if what.split(":")[0] in UNINITIALIZED or expected.numel() == 0:
        return
    g = np.asarray(got._ex.host_numpy(got._n), dtype=np.float64)
    e = expected.detach().double().numpy() if not expected.is_complex() else None
    if e is None:
        return
    if np.isfinite(e).all() and not np.isfinite(g).all():
        raise AssertionError(f"{what}: non-finite draws where torch's are finite")
    if expected.numel() >= 200 and np.isfinite(e).all() and e.std() > 0:
        spread = max(e.std(), g.std()) / math.sqrt(e.size)
        assert abs(g.mean() - e.mean()) < 8 * spread + 1e-6, f"{what}: mean {g.mean()} vs torch's {e.mean()}"


def _dropout_draws(op, sample, device: str) -> bool:
    """A sample whose result holds dropout draws on a device whose generator is not torch's (MLX): its
    values cannot be torch's, so it is compared as draws. (A torch device shares torch's generator and
    matches it value for value.) tdx's own tests check such draws' expectation against torch's result
    without dropout (test_attention.py)."""
    if not device.startswith("mlx"):
        return False
    if op.name == "nn.functional.scaled_dot_product_attention":
        return sample.kwargs.get("dropout_p", 0.0) > 0
    if op.name != "nn.functional.multi_head_attention_forward":
        return False
    return bool(sample.kwargs.get("training", True)) and len(sample.args) > 9 and sample.args[9] > 0


# --- running ---------------------------------------------------------------------------------------
def _call(fn, name, inp, args, kwargs, variant: str):
    if variant == "function":
        if fn is None:
            return getattr(inp, name)(*args, **kwargs)
        return fn(inp, *args, **kwargs)
    if variant == "method":
        return getattr(inp, name)(*args, **kwargs)
    return getattr(inp, name + "_")(*args, **kwargs)


def same_view(x, device):
    """``x`` on ``device`` as the same view of a copy of its whole storage (a leaf if ``x`` is one)."""
    t = x.detach()
    whole = t.as_strided((t.untyped_storage().nbytes() // t.element_size(),), (1,), 0)
    out = to_tdx(whole, device)[:]
    out.as_strided_(tuple(t.shape), t.stride(), t.storage_offset())
    if x.requires_grad and x.is_leaf:
        out.requires_grad_()
    return out


def on_twin(x, twin: str):
    """``x`` with every torch tensor copied onto the torch device ``twin`` by a differentiable copy (a
    gradient reaches the CPU leaf it came from) and a ``torch.device`` naming it; ``x`` itself on CPU."""
    if twin == "cpu":
        return x
    if isinstance(x, torch.Tensor):
        return x.to(twin)
    if isinstance(x, torch.device):
        return torch.device(twin)
    if isinstance(x, tuple) and hasattr(x, "_fields"):  # namedtuple
        return type(x)(*(on_twin(v, twin) for v in x))
    if isinstance(x, (list, tuple)):
        return type(x)(on_twin(v, twin) for v in x)
    if isinstance(x, dict):
        return {k: on_twin(v, twin) for k, v in x.items()}
    return x


def on_host(x):
    """``x`` (torch's result on the twin device) with every tensor on CPU by a differentiable copy, structseqs
    (``torch.return_types``) and namedtuples kept."""
    if isinstance(x, torch.Tensor):
        return x.to("cpu")
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return type(x)(*(on_host(v) for v in x))
    if isinstance(x, (list, tuple)):
        return type(x)([on_host(v) for v in x]) if type(x) not in (list, tuple) else type(x)(map(on_host, x))
    if isinstance(x, dict):
        return {k: on_host(v) for k, v in x.items()}
    return x


def _twin_input(op, x, twin: str):
    """The sample input on the twin device; a storage reader gets the same view of a copy of the whole storage."""
    if twin == "cpu" or op.name not in STORAGE_READERS or not isinstance(x, torch.Tensor):
        return on_twin(x, twin)
    t = x.detach()
    whole = x.as_strided((t.untyped_storage().nbytes() // t.element_size(),), (1,), 0).to(twin)  # differentiable
    return whole.as_strided(tuple(t.shape), t.stride(), t.storage_offset())


def _tdx_input(op, x, device):
    return same_view(x, device) if op.name in STORAGE_READERS and isinstance(x, torch.Tensor) else to_tdx(x, device)


def _grad_leaves(x):
    out = []
    if isinstance(x, torch.Tensor) and x.requires_grad and x.is_leaf:
        out.append(x)
    elif isinstance(x, tdx.Tensor) and x.requires_grad and x.is_leaf:
        out.append(x)
    elif isinstance(x, (list, tuple)):
        for v in x:
            out += _grad_leaves(v)
    elif isinstance(x, dict):
        for v in x.values():
            out += _grad_leaves(v)
    return out


def _float_outputs(x):
    if isinstance(x, (torch.Tensor, tdx.Tensor)):
        return [x] if x.dtype.is_floating_point and x.requires_grad else []
    if isinstance(x, (list, tuple)):
        return [o for v in x for o in _float_outputs(v)]
    return []


def _weighted_loss(outputs, weights, lib):
    loss = None
    for o, w in zip(outputs, weights):
        term = (o * w).sum()
        loss = term if loss is None else loss + term
    return loss


def check_sample(op, fn, sample, device: str, dtype: str, variant: str = "function", grad: bool = False) -> None:
    """Run one sample input through torch and tdx and compare (raises AssertionError when they differ)."""
    name = op.name.split(".")[-1]
    what = f"{entry_id(op)}:{variant}:{dtype}"
    twin = torch_twin(device)
    t_in, t_rest, t_kwargs = _twin_input(op, sample.input, twin), on_twin(sample.args, twin), on_twin(sample.kwargs, twin)
    t_args = (t_in, *t_rest)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if variant == "function":
                expected = op.op(*t_args, **t_kwargs)
            elif variant == "method":
                expected = op.method_variant(*t_args, **t_kwargs)
            else:
                expected = op.inplace_variant(t_in.clone() if not grad else t_in, *t_rest, **t_kwargs)
        expected = on_host(expected)
    except (RuntimeError, ValueError, TypeError, IndexError) as err:
        kind = next(b for b in (IndexError, TypeError, ValueError, RuntimeError) if isinstance(err, b))
        inp = _tdx_input(op, sample.input, device)
        args, kwargs = to_tdx(sample.args, device), to_tdx(sample.kwargs, device)
        try:
            _call(fn, name, inp, args, kwargs, variant)
        except kind:
            return
        raise AssertionError(f"{what}: torch raises {err!r:.120} but tdx does not") from None
    inp, args, kwargs = _tdx_input(op, sample.input, device), to_tdx(sample.args, device), to_tdx(sample.kwargs, device)
    if variant == "inplace" and isinstance(inp, tdx.Tensor):
        inp = inp.detach() if not grad else inp
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            got = _call(fn, name, inp, args, kwargs, variant)
        except tdx.DtypeError:
            if not _held(expected, device):
                return  # torch's result dtype (complex128 on MLX) is one the executor cannot hold: refused, typed
            raise
    if op.name in RANDOM or entry_id(op) in RANDOM or _dropout_draws(op, sample, device):
        compare_random(got, expected, what)
        return
    if op.name in TIED_ARGS and isinstance(expected, torch.Tensor) and sample.input.ndim:
        dim = sample.args[0] if sample.args and not isinstance(sample.args[0], bool) else sample.kwargs.get("dim", -1)
        idx = torch.from_numpy(np.asarray(got._ex.host_numpy(got._n))).long()
        assert tuple(idx.shape) == tuple(expected.shape), f"{what}: shape {tuple(idx.shape)} != {tuple(expected.shape)}"
        src = sample.input.detach()
        a, b = src.take_along_dim(idx, dim), src.take_along_dim(expected, dim)
        assert torch.equal(a.isnan(), b.isnan()) and torch.equal(a.nan_to_num(), b.nan_to_num()), \
            f"{what}: the indices do not order the values as torch's"
    elif op.name in RANDOM_FACTORS:
        proc = sample.output_process_fn_grad
        compare((rebound(proc) if isinstance(proc, types.FunctionType) else proc)(got), proc(expected), dtype, what)
    elif op.name in EIGEN:
        compare(aligned_eigen(got, expected, reorder=op.name != "linalg.eigh"), expected, dtype, what)
    elif op.name in TIED_INDICES and isinstance(expected, tuple) and len(expected) == 2:
        compare(got[0], expected[0], dtype, what)
        pos = [a for a in sample.args[1 if op.name in ("kthvalue", "topk") else 0:] if not isinstance(a, bool)]
        dim = pos[0] if pos else sample.kwargs.get("dim", -1)
        idx = torch.from_numpy(np.asarray(got[1]._ex.host_numpy(got[1]._n))).long()
        keep = sample.kwargs.get("keepdim", bool(sample.args) and sample.args[-1] is True)
        src = sample.input.detach()
        if src.ndim:
            same = idx.ndim == src.ndim  # sort, topk: no dim reduced
            picked = src.take_along_dim(idx if keep or same else idx.unsqueeze(dim), dim)
            picked = picked if keep or same else picked.squeeze(dim)
            assert torch.equal(picked.isnan(), expected[0].isnan()) and torch.equal(
                picked.nan_to_num(), expected[0].detach().nan_to_num()), f"{what}: indices do not select the values"
    else:
        try:
            compare(got, expected, dtype, what, {**TOL, **OP_TOL.get(op.name, {})})
        except AssertionError:
            if not _as_accurate(op, sample, got, expected, dtype, variant):
                raise
    if not grad:
        return
    process = sample.output_process_fn_grad
    t_out = process(expected)
    g_out = (rebound(process) if isinstance(process, types.FunctionType) and
             process.__module__.startswith("torch.testing") else process)(got)
    t_outs, g_outs = _float_outputs(t_out), _float_outputs(g_out)
    t_leaves = _grad_leaves([sample.input, list(sample.args), sample.kwargs])
    g_leaves = _grad_leaves([inp, list(args), kwargs])
    if not t_outs or not t_leaves:
        return
    if len(g_outs) != len(t_outs) or len(g_leaves) != len(t_leaves):
        raise AssertionError(f"{what}: {len(g_outs)} differentiable outputs and {len(g_leaves)} leaves, "
                             f"torch has {len(t_outs)} and {len(t_leaves)}")
    gen = torch.Generator().manual_seed(0)
    weights = [torch.rand(o.shape, generator=gen, dtype=o.dtype) + 0.5 for o in t_outs]
    try:
        t_grads = torch.autograd.grad(_weighted_loss(t_outs, weights, torch), t_leaves, allow_unused=True)
    except RuntimeError:  # torch has no derivative for this sample (floor_divide...): tdx may raise too
        try:
            _weighted_loss(g_outs, [to_tdx(w, o.device) for o, w in zip(g_outs, weights)], tdx).backward()
        except RuntimeError:
            pass
        return
    _weighted_loss(g_outs, [to_tdx(w, o.device) for o, w in zip(g_outs, weights)], tdx).backward()
    for i, (leaf, tg) in enumerate(zip(g_leaves, t_grads)):
        if tg is None:
            continue
        if leaf.grad is None:
            if not tg.any():  # torch materializes a zero gradient where tdx has none
                continue
            raise AssertionError(f"{what}: no gradient for input {i}")
        try:
            compare(leaf.grad, tg, dtype, f"{what}: grad of input {i}", {**GRAD_TOL, **OP_TOL.get(op.name, {})})
        except AssertionError:
            if not _grad_as_accurate(op, sample, i, leaf.grad, tg, weights, dtype):
                raise


def _widened(x):
    """``x`` with every floating tensor in float64; leaves that require grad stay leaves that do."""
    if isinstance(x, torch.Tensor):
        if not x.is_floating_point():
            return x
        w = x.detach().double()
        return w.requires_grad_() if x.requires_grad and x.is_leaf else w
    if isinstance(x, (list, tuple)):
        return type(x)(_widened(v) for v in x) if not hasattr(x, "_fields") else type(x)(*map(_widened, x))
    if isinstance(x, dict):
        return {k: _widened(v) for k, v in x.items()}
    return x


def _grad_as_accurate(op, sample, i: int, got, expected, weights, dtype: str) -> bool:
    """Whether tdx's float32/16 gradient of input ``i`` is as close to the float64 gradient as torch's own
    is, where the two differ by more than the tolerance (the gradient's form of :func:`_as_accurate`:
    torch's float32 result is then rounding noise that tdx need not copy)."""
    if dtype not in ("float32", "float16", "bfloat16") or torch.float64 not in cpu_dtypes(op):
        return False
    inp, args, kwargs = _widened(sample.input), _widened(list(sample.args)), _widened(dict(sample.kwargs))
    leaves = _grad_leaves([inp, args, kwargs])
    try:
        outs = _float_outputs(sample.output_process_fn_grad(op.op(inp, *args, **kwargs)))
        if len(outs) != len(weights):
            return False
        ref = torch.autograd.grad(_weighted_loss(outs, [w.double() for w in weights], torch), leaves,
                                  allow_unused=True)[i]
    except Exception:  # noqa: BLE001 - no float64 reference: the plain comparison stands
        return False
    if ref is None or ref.shape != expected.shape:
        return False
    g = torch.from_numpy(np.asarray(got._ex.host_numpy(got._n), dtype=np.float64))
    if g.shape != expected.shape:
        return False
    rtol, atol = GRAD_TOL.get(dtype, TOL[dtype])
    mine, theirs = (g - ref).abs(), (expected.detach().double() - ref).abs()
    return bool((ref.isfinite() & (mine <= theirs + atol + rtol * ref.abs())).all())


def _as_accurate(op, sample, got, expected, dtype: str, variant: str) -> bool:
    """Whether tdx's float32/16 result is as close to the float64 result as torch's own is, where the two
    differ by more than the tolerance (ill-conditioned points: near poles, in cancellations)."""
    if dtype not in ("float32", "float16", "bfloat16") or \
            \
            not isinstance(expected, torch.Tensor) or not isinstance(got, tdx.Tensor) or \
            torch.float64 not in cpu_dtypes(op):
        return False

    def wide(x):
        return x.detach().double() if isinstance(x, torch.Tensor) and x.is_floating_point() else x

    try:
        ref = op.op(wide(sample.input), *[wide(a) for a in sample.args],
                    **{k: wide(v) for k, v in sample.kwargs.items()})
    except Exception:  # noqa: BLE001 - no float64 reference: the plain comparison stands
        return False
    if not isinstance(ref, torch.Tensor) or ref.shape != expected.shape:
        return False
    g = torch.from_numpy(np.asarray(got._ex.host_numpy(got._n), dtype=np.float64))
    if g.shape != expected.shape or got.dtype.name != str(expected.dtype).rsplit(".", 1)[-1]:
        return False
    e = expected.detach().double()
    rtol, atol = TOL[dtype]
    mine, theirs = (g - ref).abs(), (e - ref).abs()
    finite = ref.isfinite()
    ok = (mine <= theirs + atol + rtol * ref.abs()) | (finite.logical_not() & ((g == e) | (g.isnan() & e.isnan())))
    return bool(ok.all())


def _held(expected, device: str) -> bool:
    """Whether every tensor dtype of ``expected`` is one the device's executor holds."""
    from tdx import backends

    if isinstance(expected, torch.Tensor):
        return str(expected.dtype).rsplit(".", 1)[-1] in backends.get(device).caps.dtypes
    if isinstance(expected, (tuple, list)):
        return all(_held(e, device) for e in expected)
    return True


_CPU_DTYPES: dict = {}


def cpu_dtypes(op) -> frozenset:
    """The dtypes torch's entry supports on CPU (memoized: OpInfo recomputes them per call)."""
    key = id(op)
    if key not in _CPU_DTYPES:
        _CPU_DTYPES[key] = frozenset(op.supported_dtypes("cpu"))
    return _CPU_DTYPES[key]


def supported(op, dtype: str, device: str) -> bool:
    """Whether torch's entry supports ``dtype`` on CPU and the device's executor holds it."""
    if DTYPES[dtype] not in cpu_dtypes(op):
        return False
    from tdx import backends

    return dtype in backends.get(device).caps.dtypes


def samples(op, dtype: str, n: int, requires_grad: bool = False) -> list:
    """The first ``n`` of torch's sample inputs for ``op`` at ``dtype`` (on CPU)."""
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.manual_seed(0)
        # the generator itself: OpInfo.sample_inputs wraps it in a tracker that inspects the call stack per sample
        for s in op.sample_inputs_func(op, "cpu", DTYPES[dtype], requires_grad):
            out.append(s)
            if len(out) >= n:
                break
    return out


def run_entry(op, device: str, dtypes, n, grad: bool = False, variants: bool = False) -> None:
    """Check every sampled (dtype, sample, variant) of ``op`` on ``device``; raises on the first difference.

    ``n`` is the number of samples per dtype (an int, or a dict dtype -> int); the method and in-place
    variants run on the first sample of each dtype.

    Raises:
        Unsupported: tdx lacks the op.
        AssertionError: a value, dtype, shape or gradient differs (or tdx raised where torch did not).
    """
    if op.name in CUDA_ONLY or not any(DTYPES[d] in cpu_dtypes(op) for d in dtypes):
        raise NotApplicable(f"{entry_id(op)} supports none of {dtypes} on CPU")
    fn = resolve(op)
    for dtype in dtypes:
        if not supported(op, dtype, device):
            continue
        kinds = ["function"]
        if variants:
            if op.method_variant is not None and fn is not None and "." not in op.name:
                kinds.append("method")
            if op.inplace_variant is not None and "." not in op.name and not op.name.endswith("_"):
                kinds.append("inplace")
        count = n[dtype] if isinstance(n, dict) else n
        for i, s in enumerate(samples(op, dtype, count)):
            for kind in kinds if i == 0 else kinds[:1]:
                check_sample(op, fn, s, device, dtype, kind)
        if grad and op.supports_autograd and dtype in GRAD_TOL and op.name not in RANDOM:
            for s in samples(op, dtype, count, requires_grad=True):
                check_sample(op, fn, s, device, dtype, "function", grad=True)
