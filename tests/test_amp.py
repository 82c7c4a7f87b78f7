"""``torch.autocast`` / ``torch.amp`` / ``torch.cuda.amp`` / ``torch.cpu.amp`` on every device, against torch on CPU.

A region named ``"cpu"`` is opened on each device the way ``python -m tdx run --device DEV`` runs a program
(a pin): output dtypes per op equal torch's CPU policy, values equal torch's bit for bit on the cpu executor
and within the low precision's tolerance on MLX. Nested and disabled regions, the decorator form,
``cache_enabled``, ``custom_fwd``/``custom_bwd`` and the deprecated spellings are checked the same way; the
policy table of the other device types (``cuda``/``mps``/``mlx``) is checked on MLX's own ``"mlx"`` regions.
"""

from __future__ import annotations

import contextlib
import warnings

import numpy as np
import pytest
import torch

import tdx
from tdx.compat.amp import autocast_state
from tdx.testing import assert_close, tolerance

LOW = ["bfloat16", "float16"]


def _cpu_oracle(device):
    """Skip on accelerators: a ``"cpu"`` region (torch's CPU lists, the oracle here) covers only non-accelerator
    devices; the accelerators' lists are checked by :func:`test_gpu_regions_use_the_gpu_table`."""
    from tdx.compat.cuda import is_accelerator

    if is_accelerator(tdx.device(device)):
        pytest.skip(f"{device} is an accelerator: a 'cpu' region does not cover it (torch's CUDA lists apply there)")


@contextlib.contextmanager
def pinned(device):
    """Every tensor on ``device``, as ``python -m tdx run --device`` does."""
    tdx.backends.pin(device, "test")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        tdx.backends.unpin()


def _arrays(seed=0):
    rng = np.random.default_rng(seed)
    f = lambda *s: rng.standard_normal(s).astype(np.float32)  # noqa: E731
    return {"a": f(4, 6), "b": f(6, 5), "c": f(4, 5), "x3": f(2, 4, 6), "y3": f(2, 6, 3), "w": f(5, 6),
            "bias": f(5), "img": f(1, 2, 7, 7), "k": f(3, 2, 3, 3), "seq": f(1, 2, 9), "k1": f(3, 2, 3),
            "q": f(1, 2, 5, 4), "vol": f(1, 1, 4, 4, 4), "t": rng.integers(0, 5, size=4)}


OPS = {  # name -> fn(m, tensors, low dtype); run on float32 inputs, and on inputs already in the low dtype
    "linear": lambda m, t, lo: m.nn.functional.linear(t["a"], t["w"], t["bias"]),
    "matmul": lambda m, t, lo: t["a"] @ t["b"],
    "mm": lambda m, t, lo: m.mm(t["a"], t["b"]),
    "bmm": lambda m, t, lo: t["x3"].bmm(t["y3"]),
    "addmm": lambda m, t, lo: m.addmm(t["c"], t["a"], t["b"]),
    "baddbmm": lambda m, t, lo: m.baddbmm(t["x3"][:, :, :3], t["x3"], t["y3"]),
    "einsum": lambda m, t, lo: m.einsum("ij,jk->ik", t["a"], t["b"]),
    "conv1d": lambda m, t, lo: m.nn.functional.conv1d(t["seq"], t["k1"]),
    "conv2d": lambda m, t, lo: m.nn.functional.conv2d(t["img"], t["k"], padding=1),
    "sdpa": lambda m, t, lo: m.nn.functional.scaled_dot_product_attention(t["q"], t["q"], t["q"], is_causal=True),
    "mv": lambda m, t, lo: t["a"].mv(t["b"][:, 0]),
    "softmax": lambda m, t, lo: m.softmax(t["a"], -1),
    "log_softmax": lambda m, t, lo: m.nn.functional.log_softmax(t["a"], 1),
    "layer_norm": lambda m, t, lo: m.nn.functional.layer_norm(t["a"], (6,)),
    "exp": lambda m, t, lo: t["a"].exp(),
    "sum": lambda m, t, lo: t["a"].sum(),
    "cumsum": lambda m, t, lo: t["a"].cumsum(0),
    "pow": lambda m, t, lo: t["a"] ** 2,
    "gelu": lambda m, t, lo: m.nn.functional.gelu(t["a"]),
    "prod": lambda m, t, lo: t["a"].prod(1),
    "cdist": lambda m, t, lo: m.cdist(t["a"], t["c"][:, :1].expand(4, 6)),
    "mse_loss": lambda m, t, lo: m.nn.functional.mse_loss(t["a"][:, :5], t["c"]),
    "cross_entropy": lambda m, t, lo: m.nn.functional.cross_entropy(t["c"], t["t"]),
    "nll_loss": lambda m, t, lo: m.nn.functional.nll_loss(t["c"], t["t"]),
    "avg_pool3d": lambda m, t, lo: m.nn.functional.avg_pool3d(t["vol"], 2),
    "cat mixed": lambda m, t, lo: m.cat([t["a"], t["a"].to(getattr(m, lo))]),
    "stack mixed": lambda m, t, lo: m.stack([t["a"].to(getattr(m, lo)), t["a"]]),
    "cat low": lambda m, t, lo: m.cat([t["a"].to(getattr(m, lo)), t["a"].to(getattr(m, lo))]),
}


def _tensors(m, arrays, cast=None):
    out = {}
    for k, v in arrays.items():
        x = m.tensor(v)
        out[k] = x.to(getattr(m, cast)) if cast is not None and x.is_floating_point() else x
    return out


def _check(got, want, device, low, what=""):
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1], what
    if device == "cpu":
        assert np.array_equal(got.detach().float().numpy(), want.detach().float().numpy(), equal_nan=True), what
    else:
        rtol, atol = tolerance(getattr(tdx, str(want.dtype).split(".")[-1]), "reduction")
        assert_close(got.detach().float(), want.detach().float(), rtol=rtol * 2, atol=atol * 2, check_dtype=False,
                     msg=what)


@pytest.mark.parametrize("low", LOW)
@pytest.mark.parametrize("inputs", ["float32", "low"])
def test_op_dtypes_and_values_follow_torch_cpu_policy(device, low, inputs):
    _cpu_oracle(device)
    arrays = _arrays()
    cast = None if inputs == "float32" else low
    with torch.autocast("cpu", dtype=getattr(torch, low)):
        want = {k: f(torch, _tensors(torch, arrays, cast), low) for k, f in OPS.items()}
    with pinned(device):
        with tdx.autocast("cpu", dtype=getattr(tdx, low)):
            got = {k: f(tdx, _tensors(tdx, arrays, cast), low) for k, f in OPS.items()}
        plain = OPS["linear"](tdx, _tensors(tdx, arrays), low)
    for k in OPS:
        _check(got[k], want[k], device, low, k)
    assert plain.dtype is tdx.float32  # outside the region nothing is cast


def test_the_linear_layer_in_a_bfloat16_region(device):
    """The idiom the silent defect hid: a Linear layer inside ``autocast("cpu", bfloat16)`` returns bfloat16."""
    _cpu_oracle(device)
    torch.manual_seed(0)
    ref = torch.nn.Linear(8, 3)
    x = np.random.default_rng(1).standard_normal((5, 8)).astype(np.float32)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        want = ref(torch.tensor(x))
    with pinned(device):
        lin = tdx.nn.Linear(8, 3)
        lin.load_state_dict({k: tdx.tensor(v.detach().numpy()) for k, v in ref.state_dict().items()})
        with tdx.autocast("cpu", dtype=tdx.bfloat16):
            y = lin(tdx.tensor(x))
        assert y.dtype is tdx.bfloat16
    _check(y, want, device, "bfloat16")


F64_OPS = ("linear", "matmul", "mm", "bmm", "addmm", "baddbmm", "einsum", "conv1d", "conv2d", "mv", "softmax",
           "log_softmax", "layer_norm", "exp", "sum", "prod", "mse_loss", "cdist")


@pytest.mark.float64
@pytest.mark.parametrize("low", LOW)
def test_float64_operands_stay_float64_in_a_region(device, low):
    """torch's autocast casts float32 (and the low dtypes) only: float64 operands of ``linear``/``matmul``/... in a
    region stay float64 and keep float64's values, in a ``"cpu"`` region (pinned) and in the device's own."""
    arrays = {k: v.astype(np.float64) if v.dtype == np.float32 else v for k, v in _arrays().items()}
    with torch.autocast("cpu", dtype=getattr(torch, low)):
        want = {k: OPS[k](torch, _tensors(torch, arrays), low) for k in F64_OPS}
    kind = tdx.device(device).type
    regions = [] if kind == "cpu" else [kind]
    from tdx.compat.cuda import is_accelerator

    if not is_accelerator(tdx.device(device)):
        regions.append("cpu")
    for region in regions:
        with pinned(device):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                with tdx.autocast(region, dtype=getattr(tdx, low)):
                    got = {k: OPS[k](tdx, _tensors(tdx, arrays), low) for k in F64_OPS}
        for k in F64_OPS:
            assert got[k].dtype is tdx.float64, f"{region} region, {k}: {got[k].dtype}"
            assert_close(got[k].detach(), want[k].detach(), msg=f"{region} region, {k}")


def test_gradients_through_a_region(device):
    _cpu_oracle(device)
    arrays = _arrays(3)
    grads = {}
    for m in (torch, tdx):
        ctx = pinned(device) if m is tdx else contextlib.nullcontext()
        with ctx:
            t = _tensors(m, arrays)
            w = t["w"].requires_grad_()
            a = t["a"].requires_grad_()
            with m.autocast("cpu", dtype=m.bfloat16):
                h = m.nn.functional.linear(a, w, t["bias"])
                loss = m.nn.functional.cross_entropy(h, t["t"])
            loss.backward()
            grads[m.__name__] = (loss, a.grad, w.grad)
    for got, want in zip(grads["tdx"], grads["torch"]):
        assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1] == "float32"
        if device == "cpu":
            assert np.array_equal(got.detach().numpy(), want.detach().numpy())
        else:
            assert_close(got, want.detach(), rtol=5e-2, atol=5e-2)


def test_nested_disabled_and_decorated_regions(device):
    _cpu_oracle(device)
    def run(m):
        seen = []
        a, b = m.ones(3, 3), m.ones(3, 3)

        @m.autocast("cpu", dtype=m.bfloat16)
        def decorated():
            return (a @ b).dtype

        with m.autocast("cpu", dtype=m.bfloat16):
            seen.append((m.is_autocast_enabled("cpu"), (a @ b).dtype))
            with m.autocast("cpu", enabled=False):
                seen.append((m.is_autocast_enabled("cpu"), (a @ b).dtype))
                with m.autocast("cpu", dtype=m.float16):
                    seen.append((m.get_autocast_dtype("cpu"), (a @ b).dtype))
            seen.append((m.get_autocast_dtype("cpu"), (a @ b).dtype))
        seen.append((m.is_autocast_enabled("cpu"), (a @ b).dtype, decorated(), (a @ b).dtype))
        return [tuple(str(v).split(".")[-1] for v in row) for row in seen]

    want = run(torch)
    with pinned(device):
        assert run(tdx) == want


@pytest.mark.parametrize("cache", [True, False])
def test_cache_enabled(device, cache):
    arrays = _arrays(5)
    with pinned(device):
        t = _tensors(tdx, arrays)
        w = t["w"].requires_grad_()
        with tdx.autocast("cpu", dtype=tdx.bfloat16, cache_enabled=cache):
            assert tdx.is_autocast_cache_enabled() is cache
            y1 = tdx.nn.functional.linear(t["a"], w)
            y2 = tdx.nn.functional.linear(t["a"], w)
        assert np.array_equal(np.asarray(y1.detach().float()), np.asarray(y2.detach().float()))  # a GPU tensor has no .numpy()
        assert autocast_state._cache() == {}  # the outermost exit drops the cached casts
    assert tdx.is_autocast_cache_enabled()


def test_gpu_regions_use_the_gpu_table(device):
    """A region named by another device type than cpu (``cuda``, ``mps``, ``mlx``) takes torch's CUDA lists: torch's
    own autocast on CUDA/MPS, tdx's table of them on MLX."""
    kind = tdx.device(device).type
    if kind == "cpu":
        with pytest.warns(UserWarning, match="CUDA is not available"):
            region = tdx.autocast("cuda")
        with region:
            assert (tdx.ones(2, 2) @ tdx.ones(2, 2)).dtype is tdx.float32  # disabled, as torch without CUDA
        return
    a = tdx.ones(3, 4, device=device)
    b = tdx.ones(4, 3, device=device)
    with tdx.autocast(kind, dtype=tdx.float16):
        got = {"matmul": (a @ b).dtype, "mv": a.mv(b[:, 0]).dtype, "exp": a.to(tdx.float16).exp().dtype,
               "softmax": a.to(tdx.float16).softmax(-1).dtype, "sum": a.to(tdx.float16).sum().dtype,
               "layer_norm": tdx.nn.functional.layer_norm(a.to(tdx.float16), (4,)).dtype,
               "addcmul": tdx.addcmul(a.to(tdx.float16), a, a.to(tdx.float16)).dtype,
               "relu": tdx.relu(a.to(tdx.float16)).dtype}
    assert got == {"matmul": tdx.float16, "mv": tdx.float16, "exp": tdx.float32, "softmax": tdx.float32,
                   "sum": tdx.float32, "layer_norm": tdx.float32, "addcmul": tdx.float32, "relu": tdx.float16}
    for name in ("matmul", "mv", "exp", "softmax", "sum", "layer_norm", "addcmul"):
        assert autocast_state.policy_of("cuda", name) is not None


def test_custom_fwd_and_custom_bwd(device):
    _cpu_oracle(device)
    def run(m):
        seen = {}

        class Double(m.autograd.Function):
            @staticmethod
            @m.amp.custom_fwd(device_type="cpu", cast_inputs=m.float32)
            def forward(ctx, x):
                seen["fwd"] = (str(x.dtype), m.is_autocast_enabled("cpu"))
                return x * 2

            @staticmethod
            @m.amp.custom_bwd(device_type="cpu")
            def backward(ctx, g):
                seen["bwd"] = m.is_autocast_enabled("cpu")
                return g * 2

        class Plain(m.autograd.Function):
            @staticmethod
            @m.amp.custom_fwd(device_type="cpu")
            def forward(ctx, x):
                seen["plain"] = (str(x.dtype), m.is_autocast_enabled("cpu"))
                return x.clone()

            @staticmethod
            @m.amp.custom_bwd(device_type="cpu")
            def backward(ctx, g):
                seen["plain bwd"] = m.is_autocast_enabled("cpu")
                return g

        x = m.ones(2, 2, requires_grad=True)
        with m.autocast("cpu", dtype=m.bfloat16):
            y = Double.apply(x.to(m.bfloat16))
            z = Plain.apply(x)
        (y.float().sum() + z.sum()).backward()
        return {k: tuple(str(v).split(".")[-1] for v in (val if isinstance(val, tuple) else (val,)))
                for k, val in seen.items()}

    want = run(torch)
    with pinned(device):
        assert run(tdx) == want
    with pytest.raises(ValueError):
        tdx.amp.custom_fwd(device_type=3)


def test_deprecated_spellings_and_availability(device):
    for m in (torch, tdx):
        with pytest.warns(FutureWarning):
            region = m.cpu.amp.autocast(dtype=m.bfloat16)
        with region:
            assert m.is_autocast_enabled("cpu") and m.get_autocast_dtype("cpu") == m.bfloat16
        with pytest.warns(FutureWarning):
            m.cuda.amp.autocast(enabled=False)
        assert m.amp.is_autocast_available("cpu") and m.amp.is_autocast_available("cuda")
        with pytest.warns(UserWarning, match="target dtype is not supported"):
            off = m.autocast("cpu", dtype=m.float32)
        with off:
            assert not m.is_autocast_enabled("cpu")
    assert tdx.amp.autocast is tdx.autocast
    with pytest.raises(RuntimeError):
        tdx.autocast("tpu")
    with pytest.raises(ValueError):
        tdx.autocast(0)
    import tdx.cpu.amp as cpu_amp
    import tdx.cuda.amp as cuda_amp

    assert tdx.cuda.amp is cuda_amp and tdx.cpu.amp is cpu_amp
