"""The same seed draws torch's numbers on every executor: the torch random stream.

Every draw on MLX (random functions, in-place fills, dropout masks, ``nn.init``, the layers' initial
weights, samplers) comes from torch's CPU generator while ``[random] stream = "torch"`` (the
default), so each is compared with real torch on CPU bit for bit; ``"native"`` gives MLX's own
numbers. Seeding, generator states and ``fork_rng`` cover MLX's draws. On a torch device (cuda) the
draws are torch's own generator's there (CUDA's Philox), so the reference is real torch on that device
(``torch_twin``), compared on the host.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import tdx
import tdx.nn as tnn
import tdx.nn.functional as TF
from conftest import torch_twin

SEEDS = (0, 7, 2024)
# torch before 2.12 drew nn.init.trunc_normal_ by inverse CDF (uniform_ then erfinv_); tdx draws 2.12's
# rejection sampler, so only a torch as new compares with it draw for draw
_REJECTION_TRUNC_NORMAL = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2]) >= (2, 12)


def _same(got, want, msg=""):
    """Bit-identical values, dtype names and shapes."""
    assert tuple(got.shape) == tuple(want.shape), msg
    assert got.dtype.name == str(want.dtype).rpartition(".")[2], msg
    g = got.detach().float() if got.dtype.name == "bfloat16" else got.detach()
    w = want.detach().float() if str(want.dtype).endswith("bfloat16") else want.detach()
    assert np.array_equal(g.numpy(force=True), np.asarray(w.cpu().numpy()), equal_nan=True), msg


DRAWS = {
    "rand": (lambda m, d: m.rand(3, 5, device=d), lambda m, d: m.rand(2, 4, dtype=m.float64, device=d)),
    "randn": (lambda m, d: m.randn(4, 6, device=d), lambda m, d: m.randn(33, dtype=m.float16, device=d)),
    "randint": (lambda m, d: m.randint(0, 10, (5, 3), device=d), lambda m, d: m.randint(-3, 3, (7,), dtype=m.int32, device=d)),
    "randperm": (lambda m, d: m.randperm(17, device=d), lambda m, d: m.randperm(5, dtype=m.float32, device=d)),
    "normal_": (lambda m, d: m.empty(20, device=d).normal_(1.5, 0.3), lambda m, d: m.empty(3, 3, dtype=m.bfloat16, device=d).normal_()),
    "uniform_": (lambda m, d: m.empty(40, device=d).uniform_(-2, 3), lambda m, d: m.zeros(4, dtype=m.float64, device=d).uniform_()),
    "bernoulli": (lambda m, d: m.full((50,), 0.3, device=d).bernoulli(), lambda m, d: m.rand(6, 6, device=d).bernoulli()),
    "bernoulli_p": (lambda m, d: m.bernoulli(m.zeros(30, device=d), 0.7), lambda m, d: m.ones(5, device=d).bernoulli_(0.25)),
    "multinomial": (lambda m, d: m.tensor([0.1, 0.2, 0.7], device=d).multinomial(5, replacement=True),
                    lambda m, d: m.tensor([[1.0, 2.0, 3.0, 4.0]] * 2, device=d).multinomial(3)),
    "normal": (lambda m, d: m.normal(2.0, 3.0, (4,), device=d), lambda m, d: m.normal(m.zeros(3, device=d), m.ones(3, device=d))),
    "like": (lambda m, d: m.randn_like(m.zeros(2, 3, device=d)), lambda m, d: m.randint_like(m.zeros(4, device=d), 0, 9)),
    "dropout": (lambda m, d: (m.nn.functional.dropout(m.ones(64, device=d), 0.3)),
                lambda m, d: m.nn.Dropout(0.5)(m.arange(24.0, device=d).reshape(4, 6))),
    "samplers": (lambda m, d: m.empty(9, device=d).exponential_(2.0), lambda m, d: m.poisson(m.full((6,), 3.5, device=d))),
    "distributions": (lambda m, d: m.distributions.Categorical(logits=m.zeros(5, device=d)).sample((8,)),
                      lambda m, d: m.distributions.Normal(m.zeros(3, device=d), m.ones(3, device=d)).rsample((2,))),
    "init": (lambda m, d: m.nn.init.kaiming_uniform_(m.empty(5, 4, device=d), a=5 ** 0.5),
             lambda m, d: m.nn.init.xavier_normal_(m.empty(3, 7, device=d))),
    "init_trunc": (lambda m, d: m.nn.init.trunc_normal_(m.empty(10, device=d), std=0.02),
                   lambda m, d: m.nn.init.normal_(m.empty(6, device=d), 0.0, 0.02)),
}


@pytest.mark.parametrize("name", sorted(DRAWS))
@pytest.mark.float64
def test_every_random_op_draws_torchs_numbers(device, name):
    twin = torch_twin(device)
    forms = DRAWS[name][1:] if name == "init_trunc" and not _REJECTION_TRUNC_NORMAL else DRAWS[name]
    for seed in SEEDS:
        for form in forms:
            torch.manual_seed(seed)
            want = [form(torch, twin), form(torch, twin)]
            tdx.manual_seed(seed)
            got = [form(tdx, device), form(tdx, device)]
            for g, w in zip(got, want):
                tol = name == "init_trunc" and tdx.backends.get(device).name != "torch"  # erfinv's last bit is MLX's
                if tol:
                    np.testing.assert_allclose(g.numpy(force=True), w.cpu().numpy(), rtol=1e-6, atol=1e-9)
                else:
                    _same(g, w, f"{name} seed {seed} on {device}")


def _filled_view(op: str, args: tuple, view):
    """A form filling ``view`` of a fresh (6, 40) tensor in place with ``op``; the form returns the base."""
    def form(m, d):
        base = m.zeros(6, 40, device=d)
        getattr(view(base), op)(*args)
        return base

    return form


# draws into non-contiguous layouts: torch's *_like keeps the input's layout (memory format preserve) and
# every fill visits memory in order (and takes another path than on contiguous memory: normal_ of 16+)
STRIDED = {
    "rand_like_t": lambda m, d: m.rand_like(m.zeros(5, 7, device=d).t()),
    "randn_like_t": lambda m, d: m.randn_like(m.zeros(6, 9, device=d).t()),
    "randn_like_permuted": lambda m, d: m.randn_like(m.zeros(2, 3, 4, device=d).permute(2, 0, 1), dtype=m.float64),
    "randn_like_permuted_half": lambda m, d: m.randn_like(m.zeros(2, 3, 4, device=d).permute(2, 0, 1),
                                                          dtype=m.float16),
    "randint_like_t": lambda m, d: m.randint_like(m.zeros(5, 7, device=d).t(), 3, 50),
    "rand_like_t_sliced": lambda m, d: m.rand_like(m.zeros(5, 8, device=d).t()[::2]),
    "rand_like_expanded": lambda m, d: m.rand_like(m.zeros(5, 1, device=d).expand(5, 4)),
    "randn_like_t_contiguous_format": lambda m, d: m.randn_like(m.zeros(6, 9, device=d).t(),
                                                                memory_format=m.contiguous_format),
    **{f"{op}_{where}": _filled_view(op, args, view)
       for op, args in (("uniform_", (-1, 2)), ("normal_", ()), ("bernoulli_", (0.3,)), ("exponential_", ()),
                        ("random_", (0, 10)), ("cauchy_", ()), ("log_normal_", ()), ("geometric_", (0.3,)))
       for where, view in (("t", lambda b: b.t()), ("sliced", lambda b: b[:, ::2]),
                           ("t_sliced", lambda b: b.t()[1::3]))},
}


# cases holding float64, skipped on a device without it (an MLX GPU)
STRIDED_FLOAT64 = frozenset({"randn_like_permuted"})


@pytest.mark.parametrize("name", sorted(STRIDED))
def test_draws_into_strided_layouts_follow_torchs_memory_order(device, name):
    if name in STRIDED_FLOAT64 and not tdx.backends.get(device).caps.float64:
        pytest.skip(f"{name} draws float64, which {device} does not hold")
    twin = torch_twin(device)
    for seed in SEEDS[:2]:
        torch.manual_seed(seed)
        want = STRIDED[name](torch, twin)
        want_next = torch.rand(3, device=twin)
        tdx.manual_seed(seed)
        got = STRIDED[name](tdx, device)
        got_next = tdx.rand(3, device=device)
        _same(got, want, f"{name} seed {seed} on {device}")
        assert tuple(got.stride()) == tuple(want.stride()), name
        _same(got_next, want_next, f"the draw after {name} on {device}")


LAYERS = {
    "Linear": lambda nn: nn.Linear(6, 4),
    "Conv2d": lambda nn: nn.Conv2d(3, 4, 3),
    "ConvTranspose1d": lambda nn: nn.ConvTranspose1d(2, 3, 4),
    "Embedding": lambda nn: nn.Embedding(11, 5),
    "LSTM": lambda nn: nn.LSTM(4, 6, num_layers=2),
    "GRU": lambda nn: nn.GRU(3, 5, bidirectional=True),
    "MultiheadAttention": lambda nn: nn.MultiheadAttention(8, 2),
    "Transformer": lambda nn: nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16), 2),
    "Bilinear": lambda nn: nn.Bilinear(3, 4, 2),
}


@pytest.mark.parametrize("where", ["default", "moved"])
@pytest.mark.parametrize("name", sorted(LAYERS))
def test_layers_initialize_as_torch(device, name, where):
    """A layer built with no device argument draws its weights on the default device, as torch's: ``default``
    builds it with ``device`` as the default device (a program pinned to it: ``tdx.device``, ``tdx run --device``)
    against torch under its twin; ``moved`` builds it on the host and moves it (``Net().to(device)``) against
    torch's on the host. Each side's default device is named: tdx's own is cuda where a GPU is present."""
    twin = torch_twin(device)
    build_on, want_on = (device, twin) if where == "default" else ("cpu", "cpu")
    for seed in SEEDS[:2]:
        torch.manual_seed(seed)
        with torch.device(want_on):
            want = LAYERS[name](torch.nn)
        tdx.manual_seed(seed)
        with tdx.device(build_on):
            got = LAYERS[name](tnn).to(device)
        pairs = list(zip(got.state_dict().items(), want.state_dict().items()))
        assert len(pairs) == len(want.state_dict())
        for (k, g), (_, w) in pairs:
            _same(g, w, f"{name}.{k} seed {seed}")


def test_draws_with_no_device_take_the_default_devices_generator(monkeypatch):
    """What is built or drawn with no device argument draws from the default device's generator, as torch's:
    a layer's initial weights, and ``sparse_``'s permutations even for a tensor on another device. Seen here
    where the default device's generator is not torch's CPU one without a GPU: mlx:cpu under MLX's own stream
    (``"native"``). On a GPU machine tdx's default device is cuda and the same rule draws CUDA's numbers, so a
    reference for a layer built with no device is torch's under the same default device (the tests above)."""
    if not any(r.device == "mlx:cpu" and r.available for r in tdx.backends.available()):
        pytest.skip("mlx:cpu unavailable")
    monkeypatch.setenv("TDX_RANDOM_STREAM", "native")
    tdx.config.reload()
    try:
        _default_device_draws()
    finally:
        monkeypatch.delenv("TDX_RANDOM_STREAM")
        tdx.config.reload()


def _default_device_draws():
    def weight(layer):
        return layer.weight.detach().numpy(force=True)

    def zeros_of_sparse(default):
        tdx.manual_seed(1)
        t = tdx.zeros(8, 5, device="cpu")
        with tdx.device(default):
            tnn.init.sparse_(t, 0.5)
        return t.numpy() == 0

    torch.manual_seed(0)
    want = torch.nn.Linear(6, 4).weight.detach().numpy()
    tdx.manual_seed(0)
    with tdx.device("mlx:cpu"):
        on_mlx = tnn.Linear(6, 4)
    tdx.manual_seed(0)
    made_there = tnn.Linear(6, 4, device="mlx:cpu")
    tdx.manual_seed(0)
    with tdx.device("cpu"):
        on_cpu = tnn.Linear(6, 4)
    assert on_mlx.weight.device.type == "mlx" and np.array_equal(weight(on_mlx), weight(made_there))
    assert not np.array_equal(weight(on_mlx), want), "a layer built under mlx:cpu drew torch's CPU numbers"
    assert np.array_equal(weight(on_cpu), want)
    torch.manual_seed(1)
    torch_zeros = torch.nn.init.sparse_(torch.zeros(8, 5), 0.5).numpy() == 0
    assert np.array_equal(zeros_of_sparse("cpu"), torch_zeros)
    assert not np.array_equal(zeros_of_sparse("mlx:cpu"), torch_zeros), "sparse_ drew on the tensor's device"


def test_layers_made_on_the_device_initialize_as_torch(device):
    torch.manual_seed(3)
    want = torch.nn.Linear(5, 3, device=torch_twin(device))
    tdx.manual_seed(3)
    got = tnn.Linear(5, 3, device=device)
    _same(got.weight, want.weight)
    _same(got.bias, want.bias)


def test_explicit_generators(device):
    twin = torch_twin(device)
    g, t = tdx.Generator(device).manual_seed(11), torch.Generator(twin).manual_seed(11)
    _same(tdx.randn(7, generator=g, device=device), torch.randn(7, generator=t, device=twin))
    _same(tdx.randperm(9, generator=g, device=device), torch.randperm(9, generator=t, device=twin))
    _same(tdx.empty(5, device=device).uniform_(generator=g), torch.empty(5, device=twin).uniform_(generator=t))
    state = g.get_state()
    assert bytes(state.tolist()) == t.get_state().numpy().tobytes()
    a = tdx.rand(4, generator=g, device=device)
    g.set_state(state)
    _same(tdx.rand(4, generator=g, device=device), torch.rand(4, generator=t, device=twin))
    _same(a, tdx.rand(4, generator=tdx.Generator(device).set_state(state), device=device))


def _seeding_returns(m, device):
    """What seeding returns, and draws through the generator ``manual_seed`` returns: every value to compare."""
    g = m.manual_seed(7)
    assert g is not None and m.random.manual_seed(7) is g, "manual_seed returns the default generator"
    assert g.initial_seed() == 7 and g.device.type == "cpu"
    assert m.cuda.manual_seed(7) is None and m.cuda.manual_seed_all(7) is None and m.mps.manual_seed(7) is None
    m.manual_seed(7)
    first = m.rand(3, generator=g, device="cpu")  # the default generator's draw (on the CPU: the default device
    # may be another, tdx's is cuda where one is present, and a draw there refuses a CPU generator, as torch's)
    state = g.get_state()
    nxt = m.rand(4, device=device)
    g.set_state(state)
    again = m.rand(4, device=device)
    return [first, nxt, again, g.manual_seed(3).get_state(), m.rand(2, device=device)]


def test_manual_seed_returns_the_default_generator(device):
    """``manual_seed`` returns the default CPU generator (torch's ``default_generator``): a generator whose
    draws, state and seed are the default stream's; the device modules' ``manual_seed`` return None."""
    twin = torch_twin(device)
    got, want = _seeding_returns(tdx, device), _seeding_returns(torch, twin)
    for g, w in zip(got, want):
        _same(g, w)


def _state_seed_and_fork(m, device):
    """Seed, save the global state, draw, restore it, draw again, draw inside and after a fork: every draw."""
    m.manual_seed(5)
    assert m.initial_seed() == 5
    state = m.get_rng_state()
    draws = [m.randn(6, device=device)]
    m.set_rng_state(state)
    draws.append(m.randn(6, device=device))
    with m.random.fork_rng():
        inside = m.randn(3, device=device)
    after = m.randn(3, device=device)
    assert np.array_equal(inside.cpu().numpy(), after.cpu().numpy()), "fork_rng restores the stream the block used"
    return draws + [inside, after]


def test_global_state_seed_and_fork(device):
    """The global state is torch's default CPU generator's: it covers the draws of a device drawing torch's CPU
    stream (MLX, cpu), so the draw after ``set_rng_state`` repeats; a torch device with its own generator (cuda)
    draws on, as torch there. Either way every draw is the one torch makes on ``torch_twin``."""
    twin = torch_twin(device)
    got, want = _state_seed_and_fork(tdx, device), _state_seed_and_fork(torch, twin)
    for g, w in zip(got, want):
        _same(g, w)
    if twin == "cpu":
        _same(got[1], got[0])
    s = tdx.seed()
    assert tdx.initial_seed() == s
    got = tdx.randn(2, device=device)
    torch.manual_seed(s)
    _same(got, torch.randn(2, device=twin))


def test_unseeded_program_draws_from_torchs_default_generator():
    import subprocess
    import sys

    code = ("import tdx, torch\n"
            "dev = 'mlx:cpu' if any(r.available for r in tdx.backends.available() if r.device == 'mlx:cpu') else 'cpu'\n"
            "a = tdx.randn(4, device=dev).tolist()\n"
            "b = torch.randn(4, generator=torch.Generator().manual_seed(torch.initial_seed())).tolist()\n"
            "print(a == b, tdx.initial_seed() == torch.initial_seed())")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["True", "True"], done.stderr


def test_data_shuffling_and_split(device):
    from tdx.utils.data import DataLoader, TensorDataset, random_split

    torch.manual_seed(2)
    want_split = [list(s.indices) for s in torch.utils.data.random_split(range(10), [0.5, 0.5])]
    want_order = [b[0].tolist() for b in torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(torch.arange(8)), batch_size=3, shuffle=True)]
    tdx.manual_seed(2)
    got_split = [list(s.indices) for s in random_split(range(10), [0.5, 0.5])]
    got_order = [b[0].tolist() for b in DataLoader(TensorDataset(tdx.arange(8, device=device)), batch_size=3,
                                                    shuffle=True)]
    assert got_split == want_split and got_order == want_order


def test_native_stream_is_a_choice(monkeypatch):
    if not any(r.available for r in tdx.backends.available() if r.device == "mlx:cpu"):
        pytest.skip("needs mlx:cpu")
    monkeypatch.setenv("TDX_RANDOM_STREAM", "native")
    tdx.config.reload()
    try:
        assert tdx.config.current()["random.stream"] == "native"
        tdx.manual_seed(0)
        native = tdx.randn(8, device="mlx:cpu").tolist()
        torch.manual_seed(0)
        assert native != torch.randn(8).tolist()
        tdx.manual_seed(0)
        assert tdx.randn(8, device="mlx:cpu").tolist() == native, "the native stream is seeded too"
    finally:
        monkeypatch.delenv("TDX_RANDOM_STREAM")
        tdx.config.reload()


def test_bad_stream_is_a_config_error(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tdx.toml").write_text('[random]\nstream = "fast"\n')
    with pytest.raises(tdx.ConfigError, match=r"random.stream.*'torch', 'native'"):
        tdx.config.reload()
    (tmp_path / "tdx.toml").unlink()
    monkeypatch.setenv("TDX_RANDOM_STREAM", "numpy")
    with pytest.raises(tdx.ConfigError, match="TDX_RANDOM_STREAM"):
        tdx.config.reload()
    monkeypatch.delenv("TDX_RANDOM_STREAM")
    tdx.config.reload()


def test_cuda_seeding_under_a_pin_seeds_the_device_used(device):
    from tdx import backends

    before = backends.pinned()
    backends.pin(device, "test")
    try:
        tdx.cuda.manual_seed_all(9)
        a = tdx.randn(5, device="cuda")
        state = tdx.cuda.get_rng_state()
        b = tdx.randn(2, device="cuda")
        tdx.cuda.set_rng_state(state)
        c = tdx.randn(2, device="cuda")
    finally:
        backends.unpin() if before is None else backends.pin(before[0].device, before[1])
    torch.manual_seed(9)
    _same(a, torch.randn(5, device=torch_twin(device)))
    _same(b, c)
