"""``tdx.nn.init`` against ``torch.nn.init``.

On the torch executor (cpu, cuda: torch's own generators there) the same seed must give the values
real torch gives on that device (``torch_twin``) bit for bit, with the global seed and with a
``Generator``; on MLX the draws come from its own generator, so large tensors are checked for
torch's mean and standard deviation (tolerances from the sampling error of 20k draws). Errors and
warnings match torch's. Values are read with ``.cpu().numpy()``, as a cuda tensor must be.
"""

from __future__ import annotations

import inspect
import math

import numpy as np
import pytest
import torch
import torch.nn.init as TI

import tdx
import tdx.nn as nn
import tdx.nn.init as I
from conftest import torch_twin

RANDOM = [
    ("uniform_", (30, 40), dict(a=-2.0, b=3.0)),
    ("normal_", (30, 40), dict(mean=1.0, std=2.0)),
    ("trunc_normal_", (30, 40), {}),
    ("trunc_normal_", (30, 40), dict(mean=0.5, std=1.5, a=1.0, b=3.0)),  # the uniform-proposal branch
    ("xavier_uniform_", (20, 30, 3), dict(gain=2.0)),
    ("xavier_normal_", (40, 30), {}),
    ("kaiming_uniform_", (40, 30), dict(a=math.sqrt(5))),
    ("kaiming_uniform_", (40, 6, 5), dict(mode="fan_out", nonlinearity="relu")),
    ("kaiming_normal_", (40, 30), dict(nonlinearity="tanh")),
    ("orthogonal_", (20, 40), dict(gain=1.5)),
    ("orthogonal_", (40, 20), {}),
    ("orthogonal_", (6, 4, 5), {}),
    ("sparse_", (40, 30), dict(sparsity=0.3, std=0.5)),
]
DETERMINISTIC = [
    ("constant_", (3, 4), dict(val=2.5)), ("ones_", (5,), {}), ("zeros_", (2, 3), {}), ("eye_", (3, 5), {}),
    ("eye_", (4, 2), {}), ("dirac_", (4, 3, 5), {}), ("dirac_", (6, 2, 3, 3), dict(groups=2)),
    ("dirac_", (2, 2, 3, 3, 3), {}),
]


def _ids(cases):
    return [f"{name}-{'x'.join(map(str, shape))}-{i}" for i, (name, shape, _) in enumerate(cases)]


def _torch_stream(device, name=None):
    """Whether ``device`` draws from torch's own generator there (the torch executor), with the installed
    torch's initializer ``name`` making the draws tdx's makes: trunc_normal_ is torch 2.13's rejection sampler
    (an older torch draws erfinv of uniforms, other numbers from the same distribution)."""
    if name == "trunc_normal_" and "accept_buf" not in inspect.getsource(TI._no_grad_trunc_normal_):
        return False
    return tdx.backends.get(device).name == "torch"


def _qr_atol(device):
    """How far tdx's orthogonal_ (NumPy's float64 QR, rounded) may be from torch's float32 QR on ``device``:
    LAPACK's on the host, cuSOLVER's/MAGMA's on cuda (another blocking: a few more ulps)."""
    return 2e-6 if torch_twin(device) == "cpu" else 1e-5  # MLX's reference is the host's LAPACK too


@pytest.mark.parametrize("name,shape,kw", RANDOM, ids=_ids(RANDOM))
@pytest.mark.float64
def test_random_init_matches_torch(device, name, shape, kw):
    # the device under test is the default one on both sides: sparse_ draws its permutations on the default
    # device, as torch's (tdx's default is cuda where a GPU is present, torch's the CPU)
    tdx.manual_seed(123)
    t = tdx.empty(*shape, device=device)
    with tdx.device(device):
        out = getattr(I, name)(t, **kw)
    assert out is t and t.shape == shape and t.dtype is tdx.float32
    torch.manual_seed(123)
    with torch.device(torch_twin(device)):
        ref = getattr(TI, name)(torch.empty(*shape), **kw).cpu().numpy()
    got = t.cpu().numpy()
    if _torch_stream(device, name):
        if name == "orthogonal_":  # NumPy's QR (float64, then rounded) against torch's float32 QR
            np.testing.assert_allclose(got, ref, rtol=0, atol=_qr_atol(device))
        else:
            assert np.array_equal(got, ref)
        return
    n = got.size
    assert abs(got.mean() - ref.mean()) < 6 * ref.std() / math.sqrt(n) + 1e-6
    assert abs(got.std() - ref.std()) < 0.05 * ref.std()
    if name != "orthogonal_":  # bounded iid draws: the same support (an orthogonal matrix's extremes vary)
        assert got.min() >= ref.min() - 0.05 * np.ptp(ref) and got.max() <= ref.max() + 0.05 * np.ptp(ref)
    else:
        flat = got.reshape(shape[0], -1)
        gram = flat @ flat.T if flat.shape[0] <= flat.shape[1] else flat.T @ flat
        np.testing.assert_allclose(gram, kw.get("gain", 1) ** 2 * np.eye(gram.shape[0]), atol=1e-4)
    if name == "sparse_":
        assert ((got == 0).sum(axis=0) >= math.ceil(kw["sparsity"] * shape[0])).all()


@pytest.mark.parametrize("name", ["uniform_", "normal_", "trunc_normal_", "xavier_uniform_", "xavier_normal_",
                                  "kaiming_uniform_", "kaiming_normal_", "orthogonal_"])
@pytest.mark.float64
def test_generator_argument(device, name):
    g = tdx.Generator(device=device)
    g.manual_seed(5)
    a = getattr(I, name)(tdx.empty(8, 6, device=device), generator=g).cpu().numpy()
    g.manual_seed(5)
    b = getattr(I, name)(tdx.empty(8, 6, device=device), generator=g).cpu().numpy()
    assert np.array_equal(a, b)
    if _torch_stream(device, name):
        tg = torch.Generator(device=torch_twin(device))
        tg.manual_seed(5)
        ref = getattr(TI, name)(torch.empty(8, 6, device=torch_twin(device)), generator=tg).cpu().numpy()
        np.testing.assert_allclose(a, ref, rtol=0, atol=_qr_atol(device) if name == "orthogonal_" else 0)


@pytest.mark.parametrize("name,shape,kw", DETERMINISTIC, ids=_ids(DETERMINISTIC))
def test_deterministic_init_matches_torch(device, name, shape, kw):
    t = tdx.full(shape, 7.0, device=device)
    assert getattr(I, name)(t, **kw) is t
    assert np.array_equal(t.cpu().numpy(), getattr(TI, name)(torch.full(shape, 7.0), **kw).numpy())


def test_init_on_parameters_keeps_them_leaves(device):
    p = nn.Parameter(tdx.empty(4, 3, device=device))
    I.kaiming_uniform_(p, a=math.sqrt(5))
    I.zeros_(p)
    I.eye_(p)
    assert type(p) is nn.Parameter and p.requires_grad and p.is_leaf and p.grad_fn is None
    (p * 2).sum().backward()
    assert np.array_equal(p.grad.cpu().numpy(), np.full((4, 3), 2, np.float32))


@pytest.mark.parametrize("nonlinearity,param", [("linear", None), ("conv2d", None), ("sigmoid", None),
                                                ("tanh", None), ("relu", None), ("leaky_relu", None),
                                                ("leaky_relu", 0.2), ("leaky_relu", 3), ("selu", None)])
def test_calculate_gain(nonlinearity, param):
    assert I.calculate_gain(nonlinearity, param) == TI.calculate_gain(nonlinearity, param)


def _same_error(fn, tfn):
    with pytest.raises(Exception) as ref:
        tfn()
    with pytest.raises(type(ref.value)) as got:
        fn()
    assert isinstance(got.value, tdx.TdxError)
    assert str(ref.value).split(" (got")[0] in str(got.value)


def test_errors_match_torch(device):
    one = tdx.empty(3, device=device)
    cube = tdx.empty(2, 2, 2, device=device)
    _same_error(lambda: I.calculate_gain("swish"), lambda: TI.calculate_gain("swish"))
    _same_error(lambda: I.calculate_gain("leaky_relu", True), lambda: TI.calculate_gain("leaky_relu", True))
    _same_error(lambda: I.xavier_uniform_(one), lambda: TI.xavier_uniform_(torch.empty(3)))
    _same_error(lambda: I.kaiming_normal_(cube, mode="fan_avg"),
                lambda: TI.kaiming_normal_(torch.empty(2, 2, 2), mode="fan_avg"))
    _same_error(lambda: I.eye_(cube), lambda: TI.eye_(torch.empty(2, 2, 2)))
    _same_error(lambda: I.dirac_(one), lambda: TI.dirac_(torch.empty(3)))
    _same_error(lambda: I.dirac_(tdx.empty(3, 2, 3, device=device), groups=2),
                lambda: TI.dirac_(torch.empty(3, 2, 3), groups=2))
    _same_error(lambda: I.orthogonal_(one), lambda: TI.orthogonal_(torch.empty(3)))
    _same_error(lambda: I.sparse_(cube, 0.1), lambda: TI.sparse_(torch.empty(2, 2, 2), 0.1))


def test_warnings_match_torch(device):
    with pytest.warns(UserWarning, match="zero-element"):
        I.kaiming_uniform_(tdx.empty(0, 3, device=device))
    with pytest.warns(UserWarning, match="mean is more than 2 std"):
        I.trunc_normal_(tdx.empty(3, device=device), mean=10.0, std=1.0)
    with pytest.warns(FutureWarning, match="nn.init.xavier_uniform_"):
        I.xavier_uniform(tdx.empty(3, 3, device=device))


def test_public_names_match_torch():
    """Every public initializer of torch.nn.init (its __all__: the rest of its callables are typing names)."""
    assert set(I.__all__) == set(TI.__all__)
    assert all(callable(getattr(I, n)) for n in TI.__all__)
