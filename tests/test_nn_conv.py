"""Convolution, padding, pooling, resampling and batch/instance norm of ``tdx.nn`` against torch on CPU,
on every device: forward values, input and parameter gradients (float32 and float64), module ``repr``
and default initialisation (bit for bit on cpu for one seed), running statistics, and torch's error
kinds for bad arguments."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import tdx
import tdx.testing.parity
from conftest import torch_twin
from nn_oracle import TOL, compare, module_check, raises_like, torch_repr

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")
DTYPES = ["float32", "float64"]


@pytest.fixture(autouse=True, scope="module")
def _one_torch_thread():
    """Small kernels on a loaded 2-core machine: one torch thread avoids oversubscription (both sides of
    every comparison run in this process, so they share the setting)."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def tol(device, dtype):
    """cpu runs torch's own kernels: its results are exact. MLX sums each window or convolution in its own
    order: float32 results then differ by a few ulps of the (larger) partial sums, hence the wider float32
    bound there; float64 stays at 1e-10."""
    if device.startswith("mlx") and dtype == "float32":
        return dict(rtol=1e-4, atol=2e-5)
    return TOL[dtype]


def u(*shape, seed=0):
    return np.random.default_rng(seed).uniform(-2, 2, size=shape)


def F(m):
    return m.nn.functional


# convolution -----------------------------------------------------------------------------------------
CONV = [
    (1, (2, 4, 9), (6, 4, 3), dict(stride=2, padding=1, dilation=2)),
    (1, (4, 9), (6, 2, 4), dict(padding="same", groups=2)),  # unbatched, even kernel, 'same'
    (2, (2, 4, 7, 6), (6, 2, 3, 2), dict(stride=(2, 1), padding=(1, 0), groups=2)),
    (2, (2, 3, 6, 6), (4, 3, 3, 3), dict(padding="same", dilation=2)),
    (2, (2, 3, 6, 6), (4, 3, 3, 3), dict(padding="valid")),
    (3, (1, 4, 5, 4, 5), (6, 2, 2, 3, 2), dict(padding=1, groups=2, stride=(1, 2, 1))),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("nd,xs,ws,kw", CONV)
def test_conv(device, dtype, nd, xs, ws, kw):
    fn = f"conv{nd}d"
    compare(device, dtype, lambda m, x, w, b: getattr(F(m), fn)(x, w, b, **kw), [u(*xs), u(*ws, seed=1),
                                                                                 u(ws[0], seed=2)],
            tol=tol(device, dtype), oracle=torch_twin(device))  # cuDNN's (TF32) convolutions on cuda


CONVT = [
    (1, (2, 4, 5), (4, 3, 3), dict(stride=2, padding=1, dilation=2, output_padding=1)),
    (2, (2, 4, 5, 4), (4, 3, 3, 2), dict(stride=(2, 3), padding=(2, 0), groups=2, output_padding=(1, 2))),
    (2, (4, 7, 6), (4, 3, 3, 3), dict(padding=3)),  # unbatched; padding beyond the kernel crops
    (3, (1, 4, 3, 4, 3), (4, 2, 2, 3, 2), dict(stride=2, padding=1, groups=2)),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("nd,xs,ws,kw", CONVT)
def test_conv_transpose(device, dtype, nd, xs, ws, kw):
    fn = f"conv_transpose{nd}d"
    n_out = ws[1] * kw.get("groups", 1)
    compare(device, dtype, lambda m, x, w, b: getattr(F(m), fn)(x, w, b, **kw), [u(*xs), u(*ws, seed=1),
                                                                                 u(n_out, seed=2)],
            tol=tol(device, dtype), oracle=torch_twin(device))  # cuDNN's (TF32) convolutions on cuda


def test_conv_errors(device):
    x, w = tdx.randn(2, 3, 8, device=device), tdx.randn(4, 3, 3, device=device)
    tx, tw = torch.randn(2, 3, 8), torch.randn(4, 3, 3)
    raises_like(lambda: tdx.nn.functional.conv1d(x, w, stride=2, padding="same"),
                lambda: torch.nn.functional.conv1d(tx, tw, stride=2, padding="same"))
    raises_like(lambda: tdx.nn.functional.conv1d(x, w, padding="full"),
                lambda: torch.nn.functional.conv1d(tx, tw, padding="full"))
    raises_like(lambda: tdx.nn.functional.conv1d(x, tdx.randn(4, 2, 3, device=device)),
                lambda: torch.nn.functional.conv1d(tx, torch.randn(4, 2, 3)))
    raises_like(lambda: tdx.nn.functional.conv1d(x, tdx.randn(4, 3, 9, device=device)),
                lambda: torch.nn.functional.conv1d(tx, torch.randn(4, 3, 9)))
    raises_like(lambda: tdx.nn.functional.conv_transpose1d(x, tdx.randn(3, 2, 3, device=device), output_padding=1),
                lambda: torch.nn.functional.conv_transpose1d(tx, torch.randn(3, 2, 3), output_padding=1))
    raises_like(lambda: tdx.nn.Conv2d(3, 4, 3, stride=2, padding="same"),
                lambda: torch.nn.Conv2d(3, 4, 3, stride=2, padding="same"))
    raises_like(lambda: tdx.nn.Conv2d(3, 4, 3, groups=2), lambda: torch.nn.Conv2d(3, 4, 3, groups=2))
    raises_like(lambda: tdx.nn.Conv2d(3, 4, 3, padding_mode="mirror"),
                lambda: torch.nn.Conv2d(3, 4, 3, padding_mode="mirror"))
    raises_like(lambda: tdx.nn.ConvTranspose2d(3, 4, 3, padding_mode="reflect"),
                lambda: torch.nn.ConvTranspose2d(3, 4, 3, padding_mode="reflect"))


CONV_MODULES = [
    ("Conv1d", (4, 6, 3), dict(padding="same", dilation=2, padding_mode="reflect", bias=False), (2, 4, 9)),
    ("Conv2d", (3, 6, 3), dict(stride=2, padding=1), (2, 3, 7, 6)),
    ("Conv2d", (4, 6, (3, 2)), dict(padding=(1, 2), groups=2, padding_mode="replicate"), (2, 4, 5, 6)),
    ("Conv3d", (2, 4, 2), dict(padding=1, padding_mode="circular"), (1, 2, 4, 3, 4)),
    ("ConvTranspose1d", (3, 4, 3), dict(stride=2, output_padding=1), (2, 3, 5)),
    ("ConvTranspose2d", (4, 6, 3), dict(stride=2, padding=1, groups=2, dilation=2), (2, 4, 4, 3)),
    ("ConvTranspose3d", (2, 3, 2), dict(stride=(1, 2, 1)), (1, 2, 3, 3, 2)),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name,args,kw,shape", CONV_MODULES)
def test_conv_modules(device, dtype, name, args, kw, shape):
    module_check(device, dtype, lambda m: getattr(m.nn, name)(*args, **kw), [u(*shape)], tol=tol(device, dtype),
                 oracle=torch_twin(device))  # cuDNN's (TF32) convolutions on cuda


@pytest.mark.parametrize("name,args,kw", [(n, a, k) for n, a, k, _ in CONV_MODULES])
def test_conv_default_init_is_torchs(name, args, kw):
    torch.manual_seed(7)
    ref = getattr(torch.nn, name)(*args, **kw)
    tdx.manual_seed(7)
    mod = getattr(tdx.nn, name)(*args, **kw, device="cpu")  # where torch builds it (tdx's default may be cuda)
    for k, v in ref.state_dict().items():
        np.testing.assert_array_equal(mod.state_dict()[k].numpy(), v.numpy(), err_msg=k)


def test_conv_transpose_output_size(device):
    torch.manual_seed(0)
    ref = torch.nn.ConvTranspose2d(2, 3, 3, stride=2)
    tdx.manual_seed(0)
    mod = tdx.nn.ConvTranspose2d(2, 3, 3, stride=2, device="cpu").to(device)
    ref_out = ref.to(torch_twin(device))  # cuDNN's (TF32) convolution on cuda
    x = u(1, 2, 4, 4)
    got = mod(tdx.tensor(x, dtype=tdx.float32, device=device), output_size=[10, 9])
    want = ref_out(torch.tensor(x, dtype=torch.float32, device=torch_twin(device)), output_size=[10, 9])
    tdx.testing.parity.assert_close(got, want, **tol(device, "float32"))
    raises_like(lambda: mod(tdx.tensor(x, dtype=tdx.float32, device=device), output_size=[12, 9]),
                lambda: ref(torch.tensor(x, dtype=torch.float32), output_size=[12, 9]))


def test_lazy_conv(device):
    """Materialized on the device by the first forward, from the device's generator: on the torch executor
    the values real torch draws there (``torch_twin``)."""
    twin = torch_twin(device)
    torch.manual_seed(3)
    ref = torch.nn.LazyConv2d(5, 3, padding=1).to(twin)
    ref(torch.zeros(1, 4, 6, 6, device=twin))
    tdx.manual_seed(3)
    mod = tdx.nn.LazyConv2d(5, 3, padding=1).to(device)
    assert type(mod).__name__ == "LazyConv2d"
    mod(tdx.zeros(1, 4, 6, 6, device=device))
    assert type(mod) is tdx.nn.Conv2d and mod.in_channels == 4 and repr(mod) == repr(ref)
    assert mod.weight.device == tdx.device(device)
    got, want = mod.weight.detach().cpu().numpy(), ref.weight.detach().cpu().numpy()
    if tdx.backends.get(device).name == "torch":
        np.testing.assert_array_equal(got, want)
    else:  # MLX's own generator: the same bounds
        bound = float(np.abs(want).max()) * 1.05
        assert got.shape == want.shape and float(np.abs(got).max()) <= bound


# padding ---------------------------------------------------------------------------------------------
PADS = [((2, 3, 5), (2, 1)), ((3, 5), (1, 3)), ((2, 3, 5, 4), (1, 2, 3, 0)), ((1, 2, 4, 4, 5), (1, 1, 2, 2, 3, 3)),
        ((2, 3, 5), (-1, 2)), ((2, 3, 5, 4), (2, -1, -1, 1))]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize("shape,amounts", PADS)
def test_pad_modes(device, dtype, mode, shape, amounts):
    compare(device, dtype, lambda m, x: F(m).pad(x, amounts, mode=mode), [u(*shape)])


def test_pad_errors(device):
    x, t = tdx.randn(1, 2, 5, device=device), torch.randn(1, 2, 5)
    raises_like(lambda: tdx.nn.functional.pad(x, (5, 5), mode="reflect"),
                lambda: torch.nn.functional.pad(t, (5, 5), mode="reflect"))
    raises_like(lambda: tdx.nn.functional.pad(x, (6, 6), mode="circular"),
                lambda: torch.nn.functional.pad(t, (6, 6), mode="circular"))
    raises_like(lambda: tdx.nn.functional.pad(x[0, 0], (1, 1), mode="replicate"),
                lambda: torch.nn.functional.pad(t[0, 0], (1, 1), mode="replicate"))
    raises_like(lambda: tdx.nn.functional.pad(x, (1, 1), mode="reflect", value=1.0),
                lambda: torch.nn.functional.pad(t, (1, 1), mode="reflect", value=1.0))
    raises_like(lambda: tdx.nn.functional.pad(x, (1, 1), mode="wrap"),
                lambda: torch.nn.functional.pad(t, (1, 1), mode="wrap"))


PAD_MODULES = [("ReflectionPad1d", (2,), (2, 3, 5)), ("ReflectionPad2d", ((1, 0, 2, 1),), (2, 3, 4, 5)),
               ("ReflectionPad3d", (1,), (1, 2, 3, 3, 3)), ("ReplicationPad1d", ((0, 3),), (2, 3, 5)),
               ("ReplicationPad2d", (2,), (3, 4, 5)), ("ReplicationPad3d", ((1, 0, 1, 0, 2, 2),), (1, 2, 3, 3, 3)),
               ("CircularPad1d", (2,), (2, 3, 5)), ("CircularPad2d", ((1, 2, 0, 1),), (1, 2, 3, 4)),
               ("CircularPad3d", (1,), (1, 1, 2, 3, 2)), ("ConstantPad1d", (2, 3.5), (2, 3, 5)),
               ("ConstantPad2d", ((1, 0, 2, 1), -1.0), (2, 3, 4)), ("ConstantPad3d", (1, 0.5), (1, 2, 2, 2)),
               ("ZeroPad1d", ((1, 2),), (2, 4)), ("ZeroPad2d", (1,), (1, 2, 3, 3)), ("ZeroPad3d", (1,), (1, 2, 2, 2))]


@pytest.mark.parametrize("name,args,shape", PAD_MODULES)
def test_pad_modules(device, name, args, shape):
    module_check(device, "float32", lambda m: getattr(m.nn, name)(*args), [u(*shape)])


# pooling ---------------------------------------------------------------------------------------------
POOLS = [
    ("max_pool1d", (2, 3, 9), (3, 2, 1), dict(ceil_mode=True)),
    ("max_pool2d", (2, 3, 9, 8), ((3, 2), (2, 1), (1, 1)), dict(dilation=(2, 1))),
    ("max_pool2d", (3, 7, 7), (3, 2, 0), dict(ceil_mode=True)),
    ("max_pool3d", (1, 2, 6, 5, 7), (2,), {}),
    ("avg_pool1d", (2, 3, 9), (3, 2, 1), dict(ceil_mode=True, count_include_pad=False)),
    ("avg_pool2d", (2, 3, 9, 8), (3, 2, 1), dict(ceil_mode=True)),
    ("avg_pool2d", (2, 3, 9, 8), (3, 2, 1), dict(divisor_override=5)),
    ("avg_pool3d", (1, 2, 6, 5, 7), (3, 2, 1), dict(count_include_pad=False, ceil_mode=True)),
    ("adaptive_avg_pool1d", (2, 3, 9), (5,), {}),
    ("adaptive_avg_pool2d", (2, 3, 9, 7), ((4, 3),), {}),
    ("adaptive_avg_pool3d", (1, 2, 5, 6, 7), ((2, None, 3),), {}),
    ("adaptive_max_pool1d", (2, 3, 9), (4,), {}),
    ("adaptive_max_pool2d", (3, 9, 7), ((4, 3),), {}),
    ("adaptive_max_pool3d", (1, 2, 5, 6, 7), (3,), {}),
    ("lp_pool1d", (2, 3, 8), (2.0, 3, 2), {}),
    ("lp_pool2d", (2, 3, 8, 8), (1.5, 2), dict(ceil_mode=True)),
    ("lp_pool3d", (1, 2, 4, 4, 4), (2, 2), {}),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name,shape,args,kw", POOLS)
def test_pooling(device, dtype, name, shape, args, kw):
    arr = u(*shape) if not name.startswith("lp") else np.abs(u(*shape)) + 0.1  # lp pools of positives: real roots
    compare(device, dtype, lambda m, x: getattr(F(m), name)(x, *args, **kw), [arr], tol=tol(device, dtype))


@pytest.mark.parametrize("name,shape,args", [("max_pool1d", (2, 3, 9), (3, 2, 1)),
                                             ("max_pool2d", (2, 3, 9, 8), ((3, 2), (2, 1), (1, 1))),
                                             ("max_pool3d", (1, 2, 6, 5, 7), (2,)),
                                             ("adaptive_max_pool2d", (2, 3, 9, 7), ((4, 3),)),
                                             ("adaptive_max_pool3d", (1, 2, 5, 6, 7), (3,))])
def test_max_pool_indices_and_unpool(device, name, shape, args):
    x = u(*shape)
    got_v, got_i = getattr(tdx.nn.functional, name)(tdx.tensor(x, dtype=tdx.float32, device=device), *args,
                                                     return_indices=True)
    want_v, want_i = getattr(torch.nn.functional, name)(torch.tensor(x, dtype=torch.float32), *args,
                                                         return_indices=True)
    tdx.testing.parity.assert_close(got_v, want_v, rtol=0, atol=0)
    np.testing.assert_array_equal(got_i.cpu().numpy(), want_i.numpy())
    if name.startswith("max_pool"):
        nd = int(name[-2])
        unpool = f"max_unpool{nd}d"
        k, s, p = (list(args) + [None, 0])[:3]
        got = getattr(tdx.nn.functional, unpool)(got_v, got_i, k, s, p, output_size=shape[-nd:])
        want = getattr(torch.nn.functional, unpool)(want_v, want_i, k, s, p, output_size=shape[-nd:])
        tdx.testing.parity.assert_close(got, want, rtol=0, atol=0)


def test_pool_errors(device):
    x, t = tdx.randn(1, 2, 5, device=device), torch.randn(1, 2, 5)
    raises_like(lambda: tdx.nn.functional.max_pool1d(x, 3, padding=2),
                lambda: torch.nn.functional.max_pool1d(t, 3, padding=2))
    raises_like(lambda: tdx.nn.functional.avg_pool1d(x, 7), lambda: torch.nn.functional.avg_pool1d(t, 7))
    raises_like(lambda: tdx.nn.functional.max_pool2d(x[0, 0], 2), lambda: torch.nn.functional.max_pool2d(t[0, 0], 2))


POOL_MODULES = [("MaxPool1d", (3,), dict(stride=2, padding=1), (2, 3, 9)),
                ("MaxPool2d", (3,), dict(stride=2, ceil_mode=True), (2, 3, 8, 7)),
                ("MaxPool3d", (2,), {}, (1, 2, 4, 4, 4)), ("AvgPool1d", (3,), {}, (2, 3, 9)),
                ("AvgPool2d", (3,), dict(divisor_override=2, padding=1), (2, 3, 6, 6)),
                ("AvgPool3d", (2,), dict(count_include_pad=False), (1, 2, 4, 4, 4)),
                ("AdaptiveAvgPool1d", (4,), {}, (2, 3, 9)), ("AdaptiveAvgPool2d", ((2, 3),), {}, (2, 3, 7, 8)),
                ("AdaptiveAvgPool3d", (2,), {}, (1, 2, 5, 4, 3)), ("AdaptiveMaxPool1d", (3,), {}, (2, 3, 7)),
                ("AdaptiveMaxPool2d", ((3, None),), {}, (2, 3, 7, 5)), ("AdaptiveMaxPool3d", (2,), {}, (1, 2, 5, 4, 3)),
                ("LPPool1d", (2, 3), {}, (2, 3, 9)), ("LPPool2d", (2, 2), dict(stride=1), (2, 3, 5, 5)),
                ("LPPool3d", (1, 2), {}, (1, 2, 4, 4, 4))]


@pytest.mark.parametrize("name,args,kw,shape", POOL_MODULES)
def test_pool_modules(device, name, args, kw, shape):
    module_check(device, "float32", lambda m: getattr(m.nn, name)(*args, **kw), [np.abs(u(*shape)) + 0.1],
                 tol=tol(device, "float32"))


def test_max_unpool_modules(device):
    x = u(2, 3, 8, 6)
    pool_t, unpool_t = torch.nn.MaxPool2d(2, return_indices=True), torch.nn.MaxUnpool2d(2)
    pool, unpool = tdx.nn.MaxPool2d(2, return_indices=True), tdx.nn.MaxUnpool2d(2)
    assert repr(unpool) == repr(unpool_t) and repr(pool) == repr(pool_t)
    want = unpool_t(*pool_t(torch.tensor(x, dtype=torch.float32)))
    got = unpool(*pool(tdx.tensor(x, dtype=tdx.float32, device=device)))
    tdx.testing.parity.assert_close(got, want, rtol=0, atol=0)


def test_fractional_max_pool_cpu():
    x = u(1, 2, 9, 9)
    samples = torch.rand(1, 2, 2, dtype=torch.float32)
    want = torch.nn.functional.fractional_max_pool2d(torch.tensor(x), 3, output_size=4, _random_samples=samples.double())
    got = tdx.nn.functional.fractional_max_pool2d(tdx.tensor(x), 3, output_size=4,
                                                  _random_samples=tdx.tensor(samples.double().numpy()))
    tdx.testing.parity.assert_close(got, want, rtol=0, atol=0)


# resampling ------------------------------------------------------------------------------------------
INTERP = [((2, 3, 5, 7), dict(size=(8, 4), mode=m)) for m in ("nearest", "nearest-exact", "bilinear", "bicubic",
                                                               "area")]
INTERP += [((2, 3, 5, 7), dict(scale_factor=1.7, mode=m)) for m in ("nearest", "nearest-exact", "bilinear",
                                                                    "bicubic", "area")]
INTERP += [((2, 3, 5, 7), dict(scale_factor=(2.3, 0.6), mode="bilinear", align_corners=True)),
           ((2, 3, 5, 7), dict(scale_factor=(2.3, 0.6), mode="bicubic", align_corners=False,
                               recompute_scale_factor=True)),
           ((2, 3, 5), dict(size=9, mode="linear", align_corners=True)), ((2, 3, 5), dict(size=3, mode="linear")),
           ((1, 2, 3, 5, 4), dict(scale_factor=2, mode="trilinear")),
           ((1, 2, 3, 5, 4), dict(size=(2, 7, 3), mode="trilinear", align_corners=True)),
           ((1, 2, 3, 5, 4), dict(scale_factor=0.5, mode="nearest")), ((1, 2, 13), dict(scale_factor=0.3)),
           ((1, 2, 6, 6, 6), dict(size=4, mode="area"))]
# longer dims: the periodic source positions of whole and rational ratios (strided slices, a count that does not
# divide the period, unclamped positions past both edges), aperiodic ones (gathers), area's equal short and long
# windows and unequal ones
INTERP += [((1, 2, 12, 9), dict(scale_factor=2, mode="bilinear")),
           ((1, 2, 12, 9), dict(scale_factor=(1.5, 3), mode="bicubic")),
           ((1, 2, 11, 9), dict(size=(20, 40), mode="bilinear", align_corners=True)),
           ((1, 2, 11, 9), dict(size=(33, 27), mode="bicubic", align_corners=True)),
           ((1, 2, 40), dict(scale_factor=0.25, mode="linear")), ((1, 2, 13), dict(size=29, mode="linear")),
           ((1, 2, 7, 13, 6), dict(scale_factor=(2, 1.5, 3), mode="trilinear")),
           ((2, 3, 40, 36), dict(size=(20, 12), mode="area")), ((1, 2, 36), dict(size=2, mode="area")),
           ((1, 2, 30, 17), dict(size=(7, 5), mode="area")), ((1, 2, 5, 6), dict(size=(13, 12), mode="area")),
           ((1, 2, 15, 12), dict(size=(10, 9), mode="area"))]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,kw", INTERP)
def test_interpolate(device, dtype, shape, kw):
    compare(device, dtype, lambda m, x: F(m).interpolate(x, **kw), [u(*shape)], tol=tol(device, dtype))


def test_interpolate_antialias_cpu():
    x = u(1, 2, 9, 9)
    want = torch.nn.functional.interpolate(torch.tensor(x), size=4, mode="bilinear", antialias=True)
    got = tdx.nn.functional.interpolate(tdx.tensor(x), size=4, mode="bilinear", antialias=True)
    tdx.testing.parity.assert_close(got, want, rtol=0, atol=0)


def test_interpolate_errors(device):
    x, t = tdx.randn(1, 2, 5, 5, device=device), torch.randn(1, 2, 5, 5)
    raises_like(lambda: tdx.nn.functional.interpolate(x, size=3, scale_factor=2),
                lambda: torch.nn.functional.interpolate(t, size=3, scale_factor=2))
    raises_like(lambda: tdx.nn.functional.interpolate(x, size=3, mode="nearest", align_corners=True),
                lambda: torch.nn.functional.interpolate(t, size=3, mode="nearest", align_corners=True))
    raises_like(lambda: tdx.nn.functional.interpolate(x, size=3, mode="linear"),
                lambda: torch.nn.functional.interpolate(t, size=3, mode="linear"))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name,shape,args,kw", [
    ("unfold", (2, 3, 7, 6), ((3, 2),), dict(dilation=(1, 2), padding=1, stride=(2, 1))),
    ("unfold", (3, 5, 5), (2,), {}),
    ("fold", (2, 18, 9), ((5, 6), (3, 2)), dict(padding=(1, 0), stride=2)),
    ("fold", (12, 9), ((4, 5), 2), dict(dilation=(1, 2))),
    ("pixel_shuffle", (2, 8, 3, 4), (2,), {}), ("pixel_shuffle", (3, 2, 9, 2, 2), (3,), {}),
    ("pixel_unshuffle", (2, 2, 6, 4), (2,), {})])
def test_resampling(device, dtype, name, shape, args, kw):
    compare(device, dtype, lambda m, x: getattr(F(m), name)(x, *args, **kw), [u(*shape)])


RESAMPLE_MODULES = [("Upsample", (), dict(scale_factor=2, mode="bilinear"), (2, 3, 4, 5)),
                    ("Upsample", (), dict(size=7, mode="linear", align_corners=True), (2, 3, 4)),
                    ("UpsamplingNearest2d", (), dict(size=(4, 5)), (1, 2, 3, 3)),
                    ("UpsamplingBilinear2d", (), dict(scale_factor=2), (1, 2, 3, 3)),
                    ("PixelShuffle", (2,), {}, (1, 8, 3, 3)), ("PixelUnshuffle", (2,), {}, (1, 2, 4, 6)),
                    ("Fold", ((4, 5), 2), {}, (2, 12, 12)), ("Unfold", ((2, 3),), dict(padding=1), (2, 3, 4, 4))]


@pytest.mark.parametrize("name,args,kw,shape", RESAMPLE_MODULES)
def test_resampling_modules(device, name, args, kw, shape):
    module_check(device, "float32", lambda m: getattr(m.nn, name)(*args, **kw), [u(*shape)],
                 tol=tol(device, "float32"))


# batch and instance norm -----------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("shape", [(4, 3, 5, 6), (6, 3), (3, 3, 4)])
@pytest.mark.float64
def test_batch_norm(device, dtype, training, shape):
    rm, rv = u(3, seed=5), np.abs(u(3, seed=6)) + 0.5
    out = {}

    def run(m, x, w, b):
        mean = m.tensor(rm, device=device if m is tdx else "cpu").to(x.dtype)
        var = m.tensor(rv, device=device if m is tdx else "cpu").to(x.dtype)
        y = F(m).batch_norm(x, mean, var, w, b, training=training, momentum=0.3, eps=1e-4)
        out[m.__name__] = (mean, var)
        return y

    compare(device, dtype, run, [u(*shape), u(3, seed=1), u(3, seed=2)])
    for got, want in zip(out["tdx"], out["torch"]):
        tdx.testing.parity.assert_close(got, want, **TOL[dtype])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("use_input_stats", [True, False])
@pytest.mark.float64
def test_instance_norm(device, dtype, use_input_stats):
    rm, rv = u(3, seed=5), np.abs(u(3, seed=6)) + 0.5
    out = {}

    def run(m, x, w, b):
        mean = m.tensor(rm, device=device if m is tdx else "cpu").to(x.dtype)
        var = m.tensor(rv, device=device if m is tdx else "cpu").to(x.dtype)
        y = F(m).instance_norm(x, mean, var, w, b, use_input_stats=use_input_stats, momentum=0.2)
        out[m.__name__] = (mean, var)
        return y

    compare(device, dtype, run, [u(2, 3, 7), u(3, seed=1), u(3, seed=2)])
    for got, want in zip(out["tdx"], out["torch"]):
        tdx.testing.parity.assert_close(got, want, **TOL[dtype])


NORM_MODULES = [("BatchNorm1d", (3,), {}, (5, 3)), ("BatchNorm1d", (3,), dict(momentum=None, affine=False), (4, 3, 6)),
                ("BatchNorm2d", (3,), dict(eps=1e-3, momentum=0.2), (4, 3, 5, 5)),
                ("BatchNorm3d", (2,), dict(track_running_stats=False), (2, 2, 3, 3, 3)),
                ("BatchNorm2d", (3,), dict(bias=False), (2, 3, 4, 4)),
                ("SyncBatchNorm", (3,), {}, (4, 3, 2)), ("InstanceNorm1d", (3,), {}, (2, 3, 6)),
                ("InstanceNorm2d", (3,), dict(affine=True, track_running_stats=True), (2, 3, 4, 5)),
                ("InstanceNorm3d", (2,), dict(affine=True), (2, 3, 3, 3)[:0] + (2, 2, 3, 3, 3))]


@pytest.mark.parametrize("train", [True, False])
@pytest.mark.parametrize("name,args,kw,shape", NORM_MODULES)
def test_norm_modules(device, train, name, args, kw, shape):
    build = (lambda m: getattr(m.nn, name)(*args, **kw))
    twin = torch_twin(device)  # cuDNN's batch norm on cuda
    mod, ref = module_check(device, "float32", build, [u(*shape)], train=train, oracle=twin)
    for _ in range(2):  # further steps: running statistics and num_batches_tracked as torch's
        x = u(*shape, seed=9)
        tdx.testing.parity.assert_close(mod(tdx.tensor(x, dtype=tdx.float32, device=device)),
                                 ref(torch.tensor(x, dtype=torch.float32, device=twin)), **TOL["float32"])
    for k, v in ref.state_dict().items():
        tdx.testing.parity.assert_close(mod.state_dict()[k], v, msg=k, **TOL["float32"])


def test_lazy_batch_norm(device):
    mod = tdx.nn.LazyBatchNorm2d().to(device)
    ref = torch.nn.LazyBatchNorm2d()
    x = u(2, 4, 3, 3)
    got, want = mod(tdx.tensor(x, dtype=tdx.float32, device=device)), ref(torch.tensor(x, dtype=torch.float32))
    assert type(mod) is tdx.nn.BatchNorm2d and torch_repr(mod) == repr(ref)
    tdx.testing.parity.assert_close(got, want, **TOL["float32"])
    tdx.testing.parity.assert_close(mod.running_var, ref.running_var, **TOL["float32"])


def test_batch_norm_errors(device):
    raises_like(lambda: tdx.nn.functional.batch_norm(tdx.randn(1, 3, device=device), None, None, training=True),
                lambda: torch.nn.functional.batch_norm(torch.randn(1, 3), None, None, training=True))
    raises_like(lambda: tdx.nn.BatchNorm2d(3)(tdx.randn(2, 3, device=device)),
                lambda: torch.nn.BatchNorm2d(3)(torch.randn(2, 3)))
    for shape in ((3,), ()):  # no channel dim: torch's IndexError
        raises_like(lambda: tdx.nn.functional.batch_norm(tdx.zeros(shape, device=device), None, None, training=True),
                    lambda: torch.nn.functional.batch_norm(torch.zeros(shape), None, None, training=True))


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_empty_1d_input(device, training):
    # torch's empty-input shortcut: an empty 1-d input (with empty running buffers) comes back as is
    x, e = tdx.zeros(0, device=device, requires_grad=True), tdx.zeros(0, device=device)
    y = tdx.nn.functional.batch_norm(x, e, e.clone(), training=training)
    t = torch.nn.functional.batch_norm(torch.zeros(0), torch.zeros(0), torch.zeros(0), training=training)
    assert tuple(y.shape) == tuple(t.shape) and y.dtype.name == "float32" and y.requires_grad
    y.sum().backward()
    assert tuple(x.grad.shape) == (0,)


def test_norm_module_reprs():
    for name, args, kw, _ in NORM_MODULES:
        assert torch_repr(getattr(tdx.nn, name)(*args, **kw)) == repr(getattr(torch.nn, name)(*args, **kw))


# coverage and wrappers -------------------------------------------------------------------------------
def _public(mod):
    return [n for n in dir(mod) if not n.startswith("_") and callable(getattr(mod, n))]


def test_nn_coverage():
    nn_names, f_names, init_names = _public(torch.nn), _public(torch.nn.functional), _public(torch.nn.init)
    nn_have = [n for n in nn_names if hasattr(tdx.nn, n)]
    f_have = [n for n in f_names if hasattr(tdx.nn.functional, n)]
    assert len(nn_have) >= 0.95 * len(nn_names), sorted(set(nn_names) - set(nn_have))
    assert len(f_have) >= 0.95 * len(f_names), sorted(set(f_names) - set(f_have))
    assert all(hasattr(tdx.nn.init, n) for n in init_names), [n for n in init_names if not hasattr(tdx.nn.init, n)]


def test_data_parallel_single_device(device):
    inner = tdx.nn.Linear(3, 2).to(device)
    dp = tdx.nn.DataParallel(inner)
    x = tdx.randn(4, 3, device=device)
    tdx.testing.parity.assert_close(dp(x), inner(x), rtol=0, atol=0)
    assert list(dp.state_dict()) == ["module.weight", "module.bias"]
    assert tdx.nn.parallel.DataParallel is tdx.nn.DataParallel
    with pytest.raises(ValueError):
        tdx.nn.DataParallel(inner, device_ids=[0, 1])


def test_deprecated_names():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        c = tdx.nn.Container(a=tdx.nn.ReLU())
        tdx.nn.NLLLoss2d()
    assert len(caught) == 2 and list(dict(c.named_children())) == ["a"]
    assert tdx.nn.factory_kwargs({"device": "cpu", "factory_kwargs": {"dtype": tdx.float64}}) == {
        "device": "cpu", "dtype": tdx.float64}


def test_catalog_nn_section(device):
    from tdx import backends
    from tdx._cli import nn_catalog

    results = nn_catalog.run((device,), {r.device: r for r in backends.available()})
    assert len(results) > 100
    failed = {name: row[device] for name, row in results.items() if row[device] is not None}
    assert not failed
    assert "| `nn.Conv2d` | passed |" in nn_catalog.render(results, (device,))
