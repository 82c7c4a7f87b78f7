"""The layer, activation, normalization, dropout and embedding modules of ``tdx.nn`` and the
functions added to ``tdx.nn.functional`` for them, against torch on CPU, on every device:
forward values, input and parameter gradients (float32 and float64), ``repr``, default
initialisation bit for bit on cpu for the same seed, train/eval behaviour and torch's error
kinds for bad arguments."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
import torch

import tdx
from conftest import torch_twin
from nn_oracle import compare, raises_like, torch_repr

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")
DTYPES = ["float32", "float64"]


def F(m):
    return m.nn.functional


def u(*shape, lo=-2.0, hi=2.0, seed=0):
    return np.random.default_rng(seed).uniform(lo, hi, size=shape)


def on(m, device, v, **kw):
    return m.tensor(v, device=device if m is tdx else "cpu", **kw)


# functional additions ----------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag(device, dtype, mode):
    weight = u(10, 3)
    idx2 = np.array([[1, 2, 4, 5], [4, 3, 2, 9], [0, 0, 7, 7]])
    compare(device, dtype, lambda m, w: F(m).embedding_bag(on(m, device, idx2), w, mode=mode), [weight])
    flat = np.array([1, 2, 4, 5, 4, 3, 2, 9, 0, 7])
    offsets = [0, 2, 2, 6]  # an empty bag gives zeros
    compare(device, dtype, lambda m, w: F(m).embedding_bag(on(m, device, flat), w, on(m, device, offsets), mode=mode),
            [weight])
    compare(device, dtype, lambda m, w: F(m).embedding_bag(on(m, device, flat), w, on(m, device, offsets + [10]),
                                                           mode=mode, include_last_offset=True), [weight])
    compare(device, dtype, lambda m, w: F(m).embedding_bag(on(m, device, flat), w, on(m, device, offsets), mode=mode,
                                                           padding_idx=2), [weight])
    if mode == "sum":
        compare(device, dtype, lambda m, w, s: F(m).embedding_bag(on(m, device, flat), w, on(m, device, offsets),
                                                                  mode=mode, per_sample_weights=s),
                [weight, u(10, seed=3)])


def test_embedding_bag_errors(device):
    def call(m, case):
        d = device if m is tdx else "cpu"
        w = m.ones(5, 2, device=d)
        i1 = m.tensor([0, 1, 2], device=d)
        off = m.tensor([0, 2], device=d)
        return [lambda: F(m).embedding_bag(i1, w),
                lambda: F(m).embedding_bag(i1.reshape(1, 3), w, off),
                lambda: F(m).embedding_bag(i1, w, off, mode="median"),
                lambda: F(m).embedding_bag(i1, w, off, mode="mean", per_sample_weights=m.ones(3, device=d)),
                lambda: F(m).embedding_bag(i1, w, m.tensor([1, 2], device=d))][case]()

    for case in range(5):
        raises_like(lambda: call(tdx, case), lambda: call(torch, case))


@pytest.mark.parametrize("dtype", DTYPES)
def test_local_response_norm_and_pdist(device, dtype):
    for shape, size in (((2, 5, 3), 3), ((2, 6, 3, 2), 4), ((1, 3, 2, 2, 2), 1), ((2, 4, 3), 7)):
        compare(device, dtype, lambda m, x: F(m).local_response_norm(x, size, alpha=0.3, beta=0.6, k=1.5),
                [u(*shape)])
    x = u(5, 3)
    x[3] = x[1]  # a zero distance: zero gradient, as torch's
    for p in (2.0, 1.0, 3.0):
        compare(device, dtype, lambda m, a: F(m).pdist(a, p), [x])
    with tdx.device(device):
        raises_like(lambda: F(tdx).local_response_norm(tdx.ones(2, 3), 2),
                    lambda: F(torch).local_response_norm(torch.ones(2, 3), 2))
        raises_like(lambda: F(tdx).pdist(tdx.ones(2, 3, 1)), lambda: F(torch).pdist(torch.ones(2, 3, 1)))


@pytest.mark.parametrize("shape", [(2, 6, 3), (1, 5, 2, 3)])
def test_local_response_norm_int64(device, shape):
    # torch averages an int64 window by integer pooling (sum floor-divided by size); the result is float32
    a = np.random.default_rng(4).integers(-9, 10, size=shape)
    a.flat[0], a.flat[1] = 1, 0  # a window sum below size: its integer average is 0
    for size, kw in ((2, {}), (3, dict(alpha=3e-2, beta=0.5, k=1.25)), (4, dict(alpha=1e-3))):
        got = F(tdx).local_response_norm(tdx.tensor(a, device=device), size, **kw)
        want = F(torch).local_response_norm(torch.tensor(a), size, **kw)
        assert got.dtype.name == "float32"
        np.testing.assert_allclose(got.cpu().numpy(), want.numpy(), rtol=2e-6, atol=1e-7)
    for dt in ("int32", "uint8", "bool"):
        raises_like(lambda: F(tdx).local_response_norm(tdx.ones(shape, dtype=getattr(tdx, dt), device=device), 2),
                    lambda: F(torch).local_response_norm(torch.ones(shape, dtype=getattr(torch, dt)), 2))
        raises_like(lambda: F(tdx).pdist(tdx.ones(3, 2, dtype=tdx.float16)),
                    lambda: F(torch).pdist(torch.ones(3, 2, dtype=torch.float16)))


@pytest.mark.parametrize("fn,shape", [("dropout1d", (4, 6, 5)), ("dropout1d", (6, 5)), ("dropout2d", (4, 6, 3, 2)),
                                      ("dropout3d", (4, 6, 2, 2, 2)), ("dropout3d", (6, 2, 2, 2)),
                                      ("feature_alpha_dropout", (4, 6, 3))])
@pytest.mark.float64
def test_channel_dropout(device, fn, shape):
    x = tdx.tensor(u(*shape, lo=0.5, hi=1.5), device=device).float().requires_grad_(True)
    f = getattr(F(tdx), fn)
    out = f(x, 0.4, True)
    batched = len(shape) in (3, 4, 5) and not (fn == "dropout3d" and len(shape) == 4) and \
        not (fn == "dropout1d" and len(shape) == 2)
    chans = out.detach().reshape(shape[:2] + (-1,) if batched else (1, shape[0], -1)).cpu().numpy()
    xs = x.detach().reshape(chans.shape).cpu().numpy()
    if fn == "feature_alpha_dropout":
        a = 1.0 / np.sqrt((1.7580993408473766 ** 2 * 0.4 + 1) * 0.6)
        b = 1.7580993408473766 * a * 0.4
        kept = np.isclose(chans, xs * a + b, rtol=1e-5)
        dropped = np.isclose(chans, -1.7580993408473766 * a + b, rtol=1e-5)
    else:
        kept, dropped = np.isclose(chans, xs / 0.6, rtol=1e-6), chans == 0
    # every channel is wholly kept or wholly dropped
    assert ((kept.all(-1)) | (dropped.all(-1))).all()
    out.sum().backward()
    g = x.grad.reshape(chans.shape).cpu().numpy()
    scale = a if fn == "feature_alpha_dropout" else 1 / 0.6
    np.testing.assert_allclose(g, np.where(kept.all(-1, keepdims=True), scale, 0.0) * np.ones_like(g), rtol=1e-6)
    assert f(x, 0.4, False) is x  # eval: the input itself, as torch
    y = x.detach().clone()
    assert f(y, 1.0, True, inplace=True) is y and float(y.abs().sum().item()) == 0 or fn == "feature_alpha_dropout"
    with tdx.device(device):
        raises_like(lambda: f(tdx.ones(*shape), 1.5), lambda: getattr(F(torch), fn)(torch.ones(*shape), 1.5))
    if fn == "dropout1d":
        raises_like(lambda: f(tdx.ones(2, 3, 4, 5, device=device)), lambda: F(torch).dropout1d(torch.ones(2, 3, 4, 5)))


@pytest.mark.float64
def test_rrelu_and_gumbel_softmax(device):
    x = tdx.tensor(u(200, lo=-2, hi=2), device=device).requires_grad_(True)
    xt = torch.tensor(x.detach().cpu().numpy())
    out = F(tdx).rrelu(x)  # eval: the mean slope
    compare(device, "float32", lambda m, a: F(m).rrelu(a, 0.1, 0.3), [x.detach().cpu().numpy()])
    out = F(tdx).rrelu(x, 0.1, 0.3, training=True)
    ratio = (out.detach() / x.detach()).cpu().numpy()
    neg = xt.numpy() < 0
    assert ((ratio[neg] >= 0.1 - 1e-6) & (ratio[neg] <= 0.3 + 1e-6)).all() and np.allclose(ratio[~neg], 1)
    assert len(np.unique(ratio[neg].round(6))) > 10  # drawn per element
    out.sum().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), ratio, rtol=1e-5)
    logits = tdx.tensor(u(64, 5), device=device).requires_grad_(True)
    soft = F(tdx).gumbel_softmax(logits, tau=0.5)
    np.testing.assert_allclose(soft.detach().sum(-1).cpu().numpy(), 1, rtol=1e-5)
    hard = F(tdx).gumbel_softmax(logits, hard=True)
    h = hard.detach().cpu().numpy()
    assert set(np.unique(h)) <= {0.0, 1.0} and (h.sum(-1) == 1).all()
    (hard * tdx.arange(5, device=device).float()).sum().backward()
    assert float(logits.grad.abs().sum().item()) > 0  # straight through
    with tdx.device(device):
        raises_like(lambda: F(tdx).rrelu(tdx.ones(3), 0.5, 0.1, True),
                    lambda: F(torch).rrelu(torch.ones(3), 0.5, 0.1, True))


# modules ------------------------------------------------------------------------------------------
from nn_oracle import module_check  # noqa: E402

IDX = np.array([[1, 2, 4, 5], [4, 3, 2, 9], [0, 0, 7, 7]])
LAYERS = {
    "linear": (lambda m: m.nn.Linear(4, 3), [u(2, 5, 4)]),
    "linear_nobias": (lambda m: m.nn.Linear(4, 3, bias=False), [u(4)]),
    "bilinear": (lambda m: m.nn.Bilinear(3, 4, 2), [u(5, 3), u(5, 4, seed=1)]),
    "bilinear_nobias": (lambda m: m.nn.Bilinear(3, 4, 2, bias=False), [u(2, 2, 3), u(2, 2, 4, seed=1)]),
    "embedding": (lambda m: m.nn.Embedding(10, 3), [IDX]),
    "embedding_pad": (lambda m: m.nn.Embedding(10, 3, padding_idx=-3, scale_grad_by_freq=True), [IDX]),
    "embedding_norm": (lambda m: m.nn.Embedding(10, 3, max_norm=1.0, norm_type=1.5), [IDX]),
    "embedding_bag": (lambda m: m.nn.EmbeddingBag(10, 3, mode="sum", padding_idx=2), [IDX]),
    "embedding_bag_max": (lambda m: m.nn.EmbeddingBag(10, 3, mode="max", max_norm=2.0), [IDX]),
    "layer_norm": (lambda m: m.nn.LayerNorm([3, 4]), [u(2, 3, 4)]),
    "layer_norm_nobias": (lambda m: m.nn.LayerNorm(4, eps=1e-3, bias=False), [u(2, 3, 4)]),
    "layer_norm_plain": (lambda m: m.nn.LayerNorm(4, elementwise_affine=False), [u(2, 3, 4)]),
    "group_norm": (lambda m: m.nn.GroupNorm(2, 4), [u(2, 4, 3)]),
    "group_norm_plain": (lambda m: m.nn.GroupNorm(4, 4, affine=False), [u(2, 4, 3, 2)]),
    "group_norm_nobias": (lambda m: m.nn.GroupNorm(1, 4, bias=False), [u(2, 4, 3)]),
    "rms_norm": (lambda m: m.nn.RMSNorm([4]), [u(2, 3, 4)]),
    "rms_norm_eps": (lambda m: m.nn.RMSNorm((3, 4), eps=1e-3, elementwise_affine=False), [u(2, 3, 4)]),
    "lrn": (lambda m: m.nn.LocalResponseNorm(3, alpha=0.1), [u(2, 5, 3, 3)]),
    "prelu": (lambda m: m.nn.PReLU(), [u(3, 4, 2)]),
    "prelu_channels": (lambda m: m.nn.PReLU(4, init=0.1), [u(3, 4, 2)]),
    "pairwise": (lambda m: m.nn.PairwiseDistance(p=1.5, keepdim=True), [u(4, 3), u(4, 3, seed=1)]),
    "cosine": (lambda m: m.nn.CosineSimilarity(dim=0), [u(4, 3), u(4, 3, seed=1)]),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(LAYERS))
def test_layer_modules(device, dtype, name):
    build, arrays = LAYERS[name]
    # torch's kernels on the device itself (its cuda embedding renorm sums x ** norm_type without abs)
    module_check(device, dtype, build, arrays, oracle=torch_twin(device))


HARDSIGMOID = lambda m: m.nn.Hardsigmoid()  # noqa: E731
ACTIVATIONS = [
    lambda m: m.nn.ReLU(), lambda m: m.nn.ReLU6(), lambda m: m.nn.LeakyReLU(0.2), lambda m: m.nn.ELU(alpha=0.5),
    lambda m: m.nn.CELU(alpha=1.5), lambda m: m.nn.SELU(), lambda m: m.nn.GELU(), lambda m: m.nn.GELU("tanh"),
    lambda m: m.nn.SiLU(), lambda m: m.nn.Mish(), lambda m: m.nn.Sigmoid(), lambda m: m.nn.Tanh(),
    lambda m: m.nn.Hardtanh(-0.5, 1.5), HARDSIGMOID, lambda m: m.nn.Hardswish(),
    lambda m: m.nn.Hardshrink(0.7), lambda m: m.nn.Softshrink(0.3), lambda m: m.nn.Tanhshrink(),
    lambda m: m.nn.Softplus(beta=2, threshold=3), lambda m: m.nn.Softsign(), lambda m: m.nn.LogSigmoid(),
    lambda m: m.nn.Threshold(0.3, -2.0), lambda m: m.nn.GLU(), lambda m: m.nn.GLU(dim=1),
    lambda m: m.nn.Softmax(dim=1), lambda m: m.nn.Softmin(dim=-1), lambda m: m.nn.LogSoftmax(dim=0),
    lambda m: m.nn.Softmax2d(), lambda m: m.nn.RReLU(0.1, 0.3), lambda m: m.nn.Identity(),
]
INPLACE = [lambda m: m.nn.ReLU(inplace=True), lambda m: m.nn.ReLU6(True), lambda m: m.nn.LeakyReLU(inplace=True),
           lambda m: m.nn.ELU(inplace=True), lambda m: m.nn.CELU(inplace=True), lambda m: m.nn.SELU(True),
           lambda m: m.nn.SiLU(True), lambda m: m.nn.Mish(True), lambda m: m.nn.Hardtanh(inplace=True),
           lambda m: m.nn.Hardsigmoid(True), lambda m: m.nn.Hardswish(True), lambda m: m.nn.Threshold(0.1, 2, True),
           lambda m: m.nn.RReLU(inplace=True)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("i", range(len(ACTIVATIONS)))
def test_activation_modules(device, dtype, i):
    # torch's float64 hardsigmoid backward multiplies by a float32 1/6: 3e-8 relative off the exact gradient
    tol = dict(rtol=1e-7, atol=1e-12) if dtype == "float64" and ACTIVATIONS[i] is HARDSIGMOID else None
    # torch's kernels on the device itself (its cuda hardswish multiplies by a float32 1/6 in float64 too)
    module_check(device, dtype, ACTIVATIONS[i], [u(2, 4, 3, 2, lo=-4, hi=4)], train=False, tol=tol,
                 oracle=torch_twin(device))


# in-place activations tdx composes on torch executors too (a clamp, a product, a select: torch's values on every
# device), whose graph holds a copy where torch's holds the activation's node
_COMPOSED_IN_PLACE = frozenset({"ReLU6", "LeakyReLU", "Hardtanh", "Threshold"})


@pytest.mark.parametrize("i", range(len(INPLACE)))
@pytest.mark.float64
def test_inplace_activation_modules(device, i):
    """``inplace=True``: the module writes into a non-leaf input and returns it; gradients still torch's."""
    ref, mod = INPLACE[i](torch).eval(), INPLACE[i](tdx).eval()
    assert repr(mod) == repr(ref)
    arr = u(3, 4, lo=-4, hi=4)
    twin = torch_twin(device)  # torch's kernels on the device itself (cuda's float32 1/6 in hardswish)
    x, t = tdx.tensor(arr, device=device).requires_grad_(True), torch.tensor(arr, device=twin).requires_grad_(True)
    hx, ht = x * 1, t * 1
    out, expected = mod(hx), ref(ht)
    assert out is hx
    compare(device, "float64", lambda m, a: a, [expected.detach().cpu().numpy()])
    np.testing.assert_allclose(hx.detach().cpu().numpy(), ht.detach().cpu().numpy(), rtol=1e-12, atol=1e-14)
    if tdx.backends.get(device).name == "torch" and type(ref).__name__ not in _COMPOSED_IN_PLACE:
        # torch's own in-place kernel wrote the native (its node, not a copy's): cuda's float32 1/6 in float64
        assert type(hx._n.grad_fn).__name__ == type(ht.grad_fn).__name__, type(hx._n.grad_fn).__name__
    (out * out).sum().backward()
    (expected * expected).sum().backward()
    rtol = 1e-7 if isinstance(ref, torch.nn.Hardsigmoid) else 1e-10  # torch's float32 1/6 (see above)
    np.testing.assert_allclose(x.grad.cpu().numpy(), t.grad.cpu().numpy(), rtol=rtol, atol=1e-12)


REPRS = [
    lambda m: m.nn.Threshold(0.1, 20), lambda m: m.nn.Hardtanh(inplace=True), lambda m: m.nn.Softmax(),
    lambda m: m.nn.Dropout(0.2, True), lambda m: m.nn.Dropout2d(), lambda m: m.nn.AlphaDropout(0.1),
    lambda m: m.nn.FeatureAlphaDropout(), lambda m: m.nn.Dropout1d(0.3), lambda m: m.nn.Dropout3d(),
    lambda m: m.nn.Embedding(5, 2, padding_idx=1, max_norm=2.0, norm_type=1.0, scale_grad_by_freq=True),
    lambda m: m.nn.EmbeddingBag(5, 2, max_norm=1.0, norm_type=3.0, padding_idx=0),
    lambda m: m.nn.LazyLinear(4), lambda m: m.nn.RReLU(inplace=True), lambda m: m.nn.PReLU(3),
    lambda m: m.nn.Sequential(m.nn.Linear(2, 3), m.nn.GELU(), m.nn.LayerNorm(3), m.nn.Dropout()),
]


@pytest.mark.parametrize("i", range(len(REPRS)))
def test_module_reprs(i):
    assert torch_repr(REPRS[i](tdx)) == repr(REPRS[i](torch))


INITS = [lambda m, **kw: m.nn.Linear(7, 5, **kw), lambda m, **kw: m.nn.Linear(3, 4, bias=False, **kw),
         lambda m, **kw: m.nn.Bilinear(3, 2, 4, **kw), lambda m, **kw: m.nn.Embedding(6, 3, padding_idx=2, **kw),
         lambda m, **kw: m.nn.EmbeddingBag(6, 3, **kw), lambda m, **kw: m.nn.PReLU(3, 0.3, **kw),
         lambda m, **kw: m.nn.LayerNorm(3, **kw), lambda m, **kw: m.nn.GroupNorm(2, 4, **kw),
         lambda m, **kw: m.nn.RMSNorm(3, **kw)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("i", range(len(INITS)))
def test_default_init_is_torchs(device, dtype, i):
    """On cpu the same seed gives torch's parameters bit for bit; elsewhere, the same shapes and dtypes
    and values in the distribution's range."""
    torch.manual_seed(123)
    ref = INITS[i](torch, dtype=getattr(torch, dtype))
    tdx.manual_seed(123)
    mod = INITS[i](tdx, device=device, dtype=getattr(tdx, dtype))
    got, expected = dict(mod.named_parameters()), dict(ref.named_parameters())
    assert list(got) == list(expected)
    for name, p in expected.items():
        q = got[name]
        assert q.device == tdx.device(device) and q.dtype is getattr(tdx, dtype) and q.requires_grad
        if device == "cpu":
            np.testing.assert_array_equal(q.detach().numpy(), p.detach().numpy(), err_msg=name)
        else:
            assert tuple(q.shape) == tuple(p.shape)
            bound = float(p.detach().abs().max()) * 3 + 1  # normal draws: a generous range
            assert float(q.detach().abs().max().item()) <= bound


def test_lazy_linear(device):
    torch.manual_seed(5)
    ref = torch.nn.LazyLinear(3)
    ref(torch.ones(2, 4))
    tdx.manual_seed(5)
    mod = tdx.nn.LazyLinear(3).to(device)
    assert isinstance(mod.weight, tdx.nn.UninitializedParameter) and mod.in_features == 0
    out = mod(tdx.ones(2, 4, device=device))
    assert type(mod) is tdx.nn.Linear and mod.in_features == 4 and tuple(out.shape) == (2, 3)
    assert repr(mod) == repr(ref) and mod.weight.device == tdx.device(device)
    if device == "cpu":
        np.testing.assert_array_equal(mod.weight.detach().numpy(), ref.weight.detach().numpy())
        np.testing.assert_array_equal(mod.bias.detach().numpy(), ref.bias.detach().numpy())
    out.sum().backward()
    assert tuple(mod.weight.grad.shape) == (3, 4)



def test_linear_forward_reads_what_attribute_lookup_finds(device):
    """``nn.Linear``'s forward uses the weight and bias that ``self.weight``/``self.bias`` give, however they were
    put there: a write into ``_parameters`` (how accelerate places a loaded tensor), a deleted bias, a weight moved
    into the instance's ``__dict__`` or a buffer (weight norm's style), a parametrization's property, a subclass's
    ``__getattr__``; the values and
    errors are torch's."""
    rng = np.random.default_rng(3)
    x, w, w2, b = (rng.standard_normal(s).astype(np.float32) for s in ((2, 4), (3, 4), (3, 4), (3,)))

    def run(m):
        d = device if m is tdx else "cpu"
        lin = m.nn.Linear(4, 3).to(d)
        with m.no_grad():
            lin.weight.copy_(m.tensor(w, device=d))
            lin.bias.copy_(m.tensor(b, device=d))
        inp = m.tensor(x, device=d)
        outs = [lin(inp)]
        lin._parameters["weight"] = m.nn.Parameter(m.tensor(w2, device=d))  # a direct write into the table
        outs.append(lin(inp))
        lin.__dict__["weight"] = m.tensor(w, device=d) * 4  # an instance entry shadows the registered weight
        outs.append(lin(inp))
        del lin.__dict__["weight"]
        lin.bias = None  # a registered None: no bias
        outs.append(lin(inp))
        del lin._parameters["weight"]  # the weight as a plain attribute of the instance
        lin.__dict__["weight"] = m.tensor(w, device=d) * 2
        outs.append(lin(inp))
        del lin.__dict__["weight"]
        lin.register_buffer("weight", m.tensor(w2, device=d) * 3)  # ...and as a buffer
        outs.append(lin(inp))
        bare = m.nn.Linear(4, 3).to(d)
        del bare.bias  # a missing bias: torch's AttributeError
        with pytest.raises(AttributeError, match="has no attribute 'bias'"):
            bare(inp)

        class Doubled(m.nn.Linear):  # a subclass whose own lookup of the registered weight answers otherwise
            def __getattr__(self, name):
                found = super().__getattr__(name)
                return found * 2 if name == "weight" else found

        dbl = Doubled(4, 3).to(d)
        with m.no_grad():
            dbl.weight.copy_(m.tensor(w, device=d))  # (the doubled weight is a new tensor: the copy is lost)
            dbl._parameters["weight"].copy_(m.tensor(w, device=d))
            dbl.bias.copy_(m.tensor(b, device=d))
        outs.append(dbl(inp))

        class Half(m.nn.Module):
            def forward(self, weight):
                return weight * 0.5

        sub = m.nn.Linear(4, 3).to(d)
        with m.no_grad():
            sub.weight.copy_(m.tensor(w, device=d))
            sub.bias.copy_(m.tensor(b, device=d))
        m.nn.utils.parametrize.register_parametrization(sub, "weight", Half())  # a class property from then on
        outs.append(sub(inp))
        return [o.detach().cpu().numpy() for o in outs]

    for got, want in zip(run(tdx), run(torch)):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)

@pytest.mark.float64
def test_embedding_from_pretrained(device):
    arr = u(4, 3)
    for freeze in (True, False):
        for cls in ("Embedding", "EmbeddingBag"):
            w = tdx.tensor(arr, device=device).float()
            mod = getattr(tdx.nn, cls).from_pretrained(w, freeze=freeze)
            ref = getattr(torch.nn, cls).from_pretrained(torch.tensor(arr).float(), freeze=freeze)
            assert mod.weight.requires_grad is ref.weight.requires_grad and repr(mod) == repr(ref)
            idx = [[0, 3, 3]]
            assert_ = np.testing.assert_allclose
            assert_(mod(tdx.tensor(idx, device=device)).detach().cpu().numpy(), ref(torch.tensor(idx)).detach().numpy())
    with pytest.raises(AssertionError):
        torch.nn.Embedding.from_pretrained(torch.ones(3))
    with pytest.raises(ValueError) as err:  # torch asserts; tdx raises a typed ValueError
        tdx.nn.Embedding.from_pretrained(tdx.ones(3, device=device))
    assert isinstance(err.value, tdx.TdxError)


DROPOUTS = [("Dropout", (8, 50)), ("Dropout1d", (8, 6, 5)), ("Dropout2d", (8, 6, 3, 2)),
            ("Dropout3d", (4, 6, 2, 2, 2)), ("AlphaDropout", (8, 50)), ("FeatureAlphaDropout", (8, 6, 5))]


@pytest.mark.parametrize("name,shape", DROPOUTS)
@pytest.mark.float64
def test_dropout_modules_train_eval(device, name, shape):
    tdx.manual_seed(0)  # 24 channels for Dropout3d: an unseeded draw leaves (0.25, 0.75) about 2% of the time
    mod = getattr(tdx.nn, name)(p=0.5)
    x = tdx.tensor(u(*shape, lo=0.5, hi=1.5), device=device).float()
    assert mod.training
    def dropped(out):
        """The fraction of values set to the dropped value (0, or alpha dropout's constant)."""
        _, counts = np.unique(out.cpu().numpy().round(5), return_counts=True)
        return counts.max() / out.numel()

    assert 0.25 < dropped(mod(x)) < 0.75  # about half the values (or channels)
    mod.eval()
    assert mod(x) is x and not mod.training
    mod.train()
    assert dropped(mod(x)) > 0.25
    with pytest.raises(ValueError) as err:
        getattr(tdx.nn, name)(p=1.5)
    assert isinstance(err.value, tdx.TdxError)


def test_module_errors(device):
    with tdx.device(device):
        raises_like(lambda: tdx.nn.Linear(4, 3)(tdx.ones(2, 5)), lambda: torch.nn.Linear(4, 3)(torch.ones(2, 5)))
        raises_like(lambda: tdx.nn.LayerNorm(4)(tdx.ones(2, 5)), lambda: torch.nn.LayerNorm(4)(torch.ones(2, 5)))
        raises_like(lambda: tdx.nn.GroupNorm(3, 4), lambda: torch.nn.GroupNorm(3, 4))
        with pytest.raises(AssertionError):
            torch.nn.Embedding(3, 2, padding_idx=3)
        with pytest.raises(ValueError) as err:  # torch asserts; tdx raises a typed ValueError
            tdx.nn.Embedding(3, 2, padding_idx=3)
        assert isinstance(err.value, tdx.TdxError)
        if not tdx.backends.get(device).caps.device_side_checks:  # an index past the table: cuda asserts in
            raises_like(lambda: tdx.nn.Embedding(3, 2)(tdx.tensor([[0, 3]])),  # its kernel (skip_value_checked)
                        lambda: torch.nn.Embedding(3, 2)(torch.tensor([[0, 3]])))
        raises_like(lambda: tdx.nn.Softmax2d()(tdx.ones(2, 3)), lambda: torch.nn.Softmax2d()(torch.ones(2, 3)))
        raises_like(lambda: tdx.nn.Bilinear(2, 3, 4)(tdx.ones(5, 2), tdx.ones(5, 2)),
                    lambda: torch.nn.Bilinear(2, 3, 4)(torch.ones(5, 2), torch.ones(5, 2)))
        raises_like(lambda: tdx.nn.EmbeddingBag(3, 2, mode="median")(tdx.tensor([[0, 1]])),
                    lambda: torch.nn.EmbeddingBag(3, 2, mode="median")(torch.tensor([[0, 1]])))
    with pytest.raises(NotImplementedError):
        tdx.nn.Embedding(3, 2, sparse=True)


@pytest.mark.float64
def test_training_idioms(device):
    """A small model built from the modules trains like torch's: ``model.to(device)``, ``zero_grad``,
    ``p.grad.zero_()``, ``p.data.add_`` steps; the loss curve follows torch's."""
    def build(m):
        return m.nn.Sequential(m.nn.Embedding(12, 6), m.nn.Flatten(), m.nn.Linear(18, 16), m.nn.LayerNorm(16),
                               m.nn.GELU(), m.nn.Dropout(0.0), m.nn.Linear(16, 5))

    ref = build(torch).double()
    model = build(tdx).to(device).double()
    model.load_state_dict({k: tdx.tensor(v.numpy(), device=device) for k, v in ref.state_dict().items()})
    idx = np.random.default_rng(0).integers(0, 12, size=(8, 3))
    tgt = np.random.default_rng(1).integers(0, 5, size=8)
    loss_fn, ref_loss_fn = tdx.nn.CrossEntropyLoss(label_smoothing=0.1), torch.nn.CrossEntropyLoss(label_smoothing=0.1)
    x, y = tdx.tensor(idx, device=device), tdx.tensor(tgt, device=device)
    for step in range(5):
        model.zero_grad()
        for p in ref.parameters():
            if p.grad is not None:
                p.grad.zero_()
        loss = loss_fn(model(x), y)
        expected = ref_loss_fn(ref(torch.tensor(idx)), torch.tensor(tgt))
        np.testing.assert_allclose(float(loss.item()), float(expected.item()), rtol=1e-10)
        loss.backward()
        expected.backward()
        with tdx.no_grad():
            for p in model.parameters():
                p.data.add_(p.grad, alpha=-0.5)
        with torch.no_grad():
            for p in ref.parameters():
                p.data.add_(p.grad, alpha=-0.5)


# spatial transformers, channel shuffle, linear cross entropy -------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("align", [False, True])
def test_affine_grid_and_grid_sample(device, dtype, align):
    theta = np.array([[[0.9, -0.3, 0.1], [0.2, 1.1, -0.2]], [[1.3, 0.4, 0.5], [-0.6, 0.7, 0.3]]])
    compare(device, dtype, lambda m, t: F(m).affine_grid(t, (2, 3, 4, 5), align_corners=align), [theta])
    compare(device, dtype, lambda m, t: F(m).affine_grid(t, (2, 3, 1, 5), align_corners=align), [theta])
    theta3 = u(2, 3, 4, lo=-1, hi=1)
    compare(device, dtype, lambda m, t: F(m).affine_grid(t, (2, 1, 2, 3, 4), align_corners=align), [theta3])
    img = u(2, 3, 4, 5)
    grid = u(2, 3, 6, 2, lo=-1.4, hi=1.4, seed=2)  # some locations outside the image
    for pad in ("zeros", "border", "reflection"):
        compare(device, dtype, lambda m, a, gr: F(m).grid_sample(a, gr, "bilinear", pad, align), [img, grid])
        compare(device, dtype, lambda m, a, gr: F(m).grid_sample(a, gr, "nearest", pad, align), [img, grid],
                grad=[0])
    compare(device, dtype, lambda m, a, t: F(m).grid_sample(a, F(m).affine_grid(t, (2, 3, 3, 3), align), "bilinear",
                                                           "zeros", align), [img, theta])
    with tdx.device(device):
        raises_like(lambda: F(tdx).affine_grid(tdx.ones(2, 2, 3), (2, 3, 4), False),
                    lambda: F(torch).affine_grid(torch.ones(2, 2, 3), (2, 3, 4), False))
        raises_like(lambda: F(tdx).grid_sample(tdx.ones(1, 1, 2, 2), tdx.ones(1, 2, 2, 2), "cubic", align_corners=False),
                    lambda: F(torch).grid_sample(torch.ones(1, 1, 2, 2), torch.ones(1, 2, 2, 2), "cubic",
                                                 align_corners=False))
        raises_like(lambda: F(tdx).grid_sample(tdx.ones(1, 1, 2, 2), tdx.ones(2, 2, 2, 2), align_corners=False),
                    lambda: F(torch).grid_sample(torch.ones(1, 1, 2, 2), torch.ones(2, 2, 2, 2), align_corners=False))


@pytest.mark.parametrize("dtype", DTYPES)
def test_channel_shuffle_and_linear_cross_entropy(device, dtype):
    compare(device, dtype, lambda m, a: F(m).channel_shuffle(a, 3), [u(2, 6, 2, 2)])
    module_check(device, dtype, lambda m: m.nn.ChannelShuffle(2), [u(2, 4, 3)])
    with tdx.device(device):
        raises_like(lambda: F(tdx).channel_shuffle(tdx.ones(2, 5, 2), 2),
                    lambda: F(torch).channel_shuffle(torch.ones(2, 5, 2), 2))
    torch_lce = getattr(F(torch), "linear_cross_entropy", None)
    if torch_lce is None or "linear_bias" not in inspect.signature(torch_lce).parameters:
        pytest.skip(f"the installed torch {torch.__version__} has no linear_cross_entropy(linear_bias=) (torch 2.13's, "
                    "which tdx follows) to compare with")
    x, w, b = u(4, 3), u(5, 3, seed=1), u(5, seed=2)
    cls = np.array([0, 4, 2, 2])
    twin = torch_twin(device)  # torch's matmul and reductions on the device itself
    for kw in (dict(), dict(reduction="none", label_smoothing=0.1), dict(ignore_index=2, reduction="sum")):
        compare(device, dtype, lambda m, a, ww, bb, t: F(m).linear_cross_entropy(a, ww, t, linear_bias=bb, **kw),
                [x, w, b, cls], oracle=twin)
    w3, t3 = u(5, 2, 3, seed=3), np.random.default_rng(0).integers(0, 5, size=(4, 2))
    compare(device, dtype, lambda m, a, ww, t: F(m).linear_cross_entropy(a, ww, t), [x, w3, t3], oracle=twin)
    with tdx.device(device):
        raises_like(lambda: F(tdx).linear_cross_entropy(tdx.ones(2, 3), tdx.ones(5, 4), tdx.tensor([0, 1])),
                    lambda: F(torch).linear_cross_entropy(torch.ones(2, 3), torch.ones(5, 4), torch.tensor([0, 1])))


def _adaptive(lib, device, batched=True):
    lib.manual_seed(0)
    with lib.device(device):  # built with no device argument, drawn on the default device (tdx's: cuda on a GPU)
        m = lib.nn.AdaptiveLogSoftmaxWithLoss(16, 20, [5, 12], div_value=2.0, head_bias=True)
    x = lib.tensor(u(7, 16).astype(np.float32), device=device, requires_grad=True)
    t = lib.tensor([0, 3, 7, 19, 12, 4, 11], device=device)
    out, loss = m(x, t) if batched else m(x[2], t[2])
    loss.backward()
    return {"output": out, "loss": loss, "x.grad": x.grad, "head.grad": m.head.weight.grad,
            "tail.grad": m.tail[1][1].weight.grad, "log_prob": m.log_prob(x), "predict": m.predict(x),
            "repr": repr(m)}


@pytest.mark.parametrize("batched", [True, False])
def test_adaptive_log_softmax_with_loss(device, batched):
    """AdaptiveLogSoftmaxWithLoss: seeded initialisation, outputs, loss, gradients of the input and of the head
    and cluster layers, log_prob and predict as torch's (bit for bit on cpu); torch's errors."""
    mine, theirs = _adaptive(tdx, device, batched), _adaptive(torch, torch_twin(device), batched)
    assert mine.pop("repr").replace("tdx", "torch") == theirs.pop("repr")
    exact = device == "cpu"
    for key, want in theirs.items():
        if want is None:  # a cluster no target fell in: no gradient, as torch's
            assert mine[key] is None, key
            continue
        got = mine[key].detach().cpu().numpy()
        want = want.detach().cpu().numpy()
        if exact or key == "predict":
            np.testing.assert_array_equal(got, want, err_msg=key)
        else:
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=key)
    for lib, dev in ((tdx, device), (torch, "cpu")):
        with pytest.raises(ValueError, match="cutoffs should be a sequence of unique"):
            lib.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [4, 2])
        m = lib.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [4]).to(dev)
        with pytest.raises(RuntimeError, match="Target values should be in \\[0, 9\\]"):
            m(lib.ones(2, 8, device=dev), lib.tensor([1, 10], device=dev))


def _lce_module(lib, device, **kw):
    lib.manual_seed(0)
    options = lib.nn.LinearCrossEntropyOptions(chunking_method=None)
    with lib.device(device):  # the projection drawn on the default device, as torch's
        m = lib.nn.LinearCrossEntropyLoss(8, 5, options=options, **kw)
    x = lib.tensor(u(6, 8).astype(np.float32), device=device, requires_grad=True)
    shape = (6, *kw.get("out_features", ()))
    t = lib.tensor(np.random.default_rng(1).integers(0, 5, size=shape), device=device)
    loss = m(x, t)
    loss.sum().backward()
    return {"loss": loss, "x.grad": x.grad, "w.grad": m.linear.weight.grad}, repr(m)


@pytest.mark.parametrize("kw", [dict(bias=True, label_smoothing=0.1), dict(out_features=(2,), reduction="none"),
                                dict(ignore_index=3, reduction="sum")], ids=["bias-smooth", "out2-none", "ignore-sum"])
def test_linear_cross_entropy_loss_module(device, kw):
    """nn.LinearCrossEntropyLoss and LinearCrossEntropyOptions: seeded projection, loss (bit for bit on cpu) and
    gradients as torch's, the module's repr, and torch's errors for the options and the arguments."""
    if not hasattr(torch.nn, "LinearCrossEntropyLoss"):
        pytest.skip(f"the installed torch {torch.__version__} has no nn.LinearCrossEntropyLoss to compare with")
    (mine, mine_repr), (theirs, theirs_repr) = _lce_module(tdx, device, **kw), _lce_module(torch, torch_twin(device),
                                                                                          **kw)
    assert mine_repr.replace("tdx.", "torch.") == theirs_repr
    for key, want in theirs.items():
        got, want = mine[key].detach().cpu().numpy(), want.detach().cpu().numpy()
        if device == "cpu" and key == "loss":
            np.testing.assert_array_equal(got, want, err_msg=key)
        else:  # torch's backward of its fused op rounds apart from the composed one's by an ulp
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=key)
    for lib in (tdx, torch):
        for bad, match in ((dict(chunking_method="rows"), "invalid chunking_method"),
                           (dict(acc_policy="fast"), "invalid acc_policy"), (dict(batch_chunk_size=0), "positive int")):
            with pytest.raises(ValueError, match=match):
                lib.nn.LinearCrossEntropyOptions(**bad)
        with pytest.raises(RuntimeError, match="label_smoothing to be in range"):
            lib.nn.LinearCrossEntropyLoss(8, 5, label_smoothing=2.0)
