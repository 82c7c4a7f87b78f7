"""Random numbers: ``tdx.Generator``, sampling functions and in-place fills, on every device.

Streams are reproducible per executor for a given seed (not equal to torch's streams), so
draws are checked for what they must satisfy: shape, dtype, support, rough moments, and
the errors torch raises for bad arguments.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import tdx
from conftest import check, skip_value_checked, torch_twin
from tdx._tensor.random import dropout
from tdx._tensor.generator import Generator


def _gen(device, seed=7):
    return Generator(device).manual_seed(seed)


def test_generator_api(device):
    g = Generator(device)
    assert g.device == tdx.backends.get(device).device
    assert g.manual_seed(123) is g and g.initial_seed() == 123
    assert g.manual_seed(-1).initial_seed() == 2 ** 64 - 1  # reduced to 64 bits, as torch
    fresh = g.seed()
    assert isinstance(fresh, int) and g.initial_seed() == fresh
    assert "Generator" in repr(g)
    with pytest.raises(TypeError):
        g.manual_seed(1.5)
    with pytest.raises(tdx.TdxError):
        g.manual_seed("1")


SAMPLERS = {
    "randperm": lambda dev, g: tdx.randperm(20, generator=g, device=dev),
    "multinomial": lambda dev, g: tdx.multinomial(tdx.ones(3, 5, device=dev), 4, generator=g),
    "multinomial_replacement": lambda dev, g: tdx.ones(8, device=dev).multinomial(6, True, generator=g),
    "bernoulli": lambda dev, g: tdx.full((30,), 0.5, device=dev).bernoulli(generator=g),
    "bernoulli_p": lambda dev, g: tdx.bernoulli(tdx.zeros(30, device=dev), 0.3, generator=g),
    "bernoulli_": lambda dev, g: tdx.zeros(30, device=dev).bernoulli_(0.4, generator=g),
    "normal_": lambda dev, g: tdx.zeros(10, device=dev).normal_(1.0, 2.0, generator=g),
    "uniform_": lambda dev, g: tdx.zeros(10, device=dev).uniform_(-1, 1, generator=g),
    "normal": lambda dev, g: tdx.normal(0.0, 1.0, (10,), generator=g, device=dev),
    "dropout": lambda dev, g: dropout(tdx.ones(40, device=dev), 0.5, True, generator=g),
}


@pytest.mark.parametrize("name", list(SAMPLERS))
def test_same_seed_same_stream(device, name):
    draw = SAMPLERS[name]
    a, b = _gen(device, 11), _gen(device, 11)
    first = [draw(device, a).tolist() for _ in range(3)]
    assert first == [draw(device, b).tolist() for _ in range(3)], "a seed must replay its stream"
    assert first[0] != first[1] or first[1] != first[2], "a generator must advance"
    c = _gen(device, 12)
    assert [draw(device, c).tolist() for _ in range(3)] != first, "another seed gives another stream"


def test_generator_of_another_device_is_refused():
    devices = [r.device for r in tdx.backends.available() if r.available]
    if len(devices) < 2:
        pytest.skip("needs two available devices")
    g = Generator(devices[0])
    with pytest.raises(RuntimeError) as info:
        tdx.randperm(4, generator=g, device=devices[1])
    assert isinstance(info.value, tdx.TdxError)
    with pytest.raises(TypeError):
        tdx.randperm(4, generator=object(), device=devices[0])


@pytest.mark.parametrize("fn", ["rand", "randn", "randint"])
def test_creation_functions_take_generator(device, fn):
    def draw(g):
        if fn == "randint":
            return tdx.randint(0, 100, (12,), device=device, generator=g).tolist()
        return getattr(tdx, fn)(12, device=device, generator=g).tolist()

    assert draw(_gen(device, 5)) == draw(_gen(device, 5))
    assert draw(_gen(device, 5)) != draw(_gen(device, 6))


@pytest.mark.parametrize("dtype", ["int64", "int32", "float32"])
def test_randperm(device, dtype):
    p = tdx.randperm(50, generator=_gen(device), dtype=getattr(tdx, dtype), device=device)
    assert p.dtype is getattr(tdx, dtype) and p.device == tdx.backends.get(device).device
    assert sorted(p.tolist()) == list(range(50))
    assert tdx.randperm(0, device=device).shape == (0,)
    assert tdx.randperm(3, device=device).dtype is tdx.int64
    check(lambda: tdx.randperm(-1, device=device), lambda: torch.randperm(-1), msg="negative n")


def test_multinomial(device):
    w = tdx.tensor([[0.0, 1.0, 3.0, 0.0], [2.0, 2.0, 0.0, 1.0]], device=device)
    g = _gen(device)
    without = w.multinomial(2, generator=g)
    assert without.dtype is tdx.int64 and without.shape == (2, 2)
    rows = without.tolist()
    assert sorted(rows[0]) == [1, 2] and len(set(rows[1])) == 2 and 2 not in rows[1]
    many = w.multinomial(4000, replacement=True, generator=g)
    counts = np.bincount(np.asarray(many.tolist()[0]), minlength=4)
    assert counts[0] == 0 and counts[3] == 0
    assert abs(counts[2] / 4000 - 0.75) < 0.05
    assert tdx.multinomial(w[1], 3, generator=g).shape == (3,)
    t = torch.tensor(w.tolist())
    for bad, want in [(lambda: w.multinomial(5), lambda: t.multinomial(5)),
                      (lambda: w.long().multinomial(1), lambda: t.long().multinomial(1)),
                      (lambda: w[None].multinomial(1), lambda: t[None].multinomial(1)),
                      (lambda: w.multinomial(0), lambda: t.multinomial(0))]:
        check(bad, want, msg="multinomial argument check")


def test_multinomial_refuses_bad_probabilities(device):
    skip_value_checked(device, "multinomial's probabilities (negative, all zero)")
    w = tdx.tensor([[0.0, 1.0, 3.0, 0.0], [2.0, 2.0, 0.0, 1.0]], device=device)
    t = torch.tensor(w.tolist())
    for bad, want in [(lambda: (w - 1).multinomial(1), lambda: (t - 1).multinomial(1)),
                      (lambda: (w * 0).multinomial(1), lambda: (t * 0).multinomial(1))]:
        check(bad, want, msg="multinomial probability check")


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_bernoulli(device, dtype):
    d = getattr(tdx, dtype)
    g = _gen(device)
    p = tdx.full((4000,), 0.25, dtype=d, device=device)
    draws = p.bernoulli(generator=g)
    assert draws.dtype is d and set(draws.tolist()) <= {0.0, 1.0}
    assert abs(draws.float().mean().item() - 0.25) < 0.04
    assert tdx.zeros(5, dtype=d, device=device).bernoulli().tolist() == [0.0] * 5
    assert tdx.ones(5, dtype=d, device=device).bernoulli().tolist() == [1.0] * 5
    ints = tdx.zeros(500, dtype=tdx.int64, device=device).bernoulli_(0.5, generator=g)
    assert ints.dtype is tdx.int64 and set(ints.tolist()) == {0, 1}
    twin = torch_twin(device)  # the dtype refusal is the device's kernel's ("..._cpu_p_" / "..._cuda_p_")
    check(lambda: tdx.ones(3, dtype=tdx.int64, device=device).bernoulli(),
          lambda: torch.ones(3, dtype=torch.int64, device=twin).bernoulli(), msg="int probabilities")


def test_bernoulli_refuses_probabilities_past_one(device):
    skip_value_checked(device, "bernoulli's probabilities (outside [0, 1])")
    t = torch.full((3,), 1.5)
    check(lambda: tdx.full((3,), 1.5, device=device).bernoulli(), lambda: t.bernoulli(), msg="p > 1")


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_normal_and_uniform_fills(device, dtype):
    d = getattr(tdx, dtype)
    g = _gen(device)
    x = tdx.zeros(4000, dtype=d, device=device)
    same = x
    x.normal_(2.0, 0.5, generator=g)
    assert x is same and x.dtype is d
    vals = np.asarray(x.float().tolist())
    assert abs(vals.mean() - 2.0) < 0.05 and abs(vals.std() - 0.5) < 0.05
    u = tdx.zeros(4000, dtype=d, device=device).uniform_(-3, 5, generator=g)
    vals = np.asarray(u.float().tolist())
    assert vals.min() >= -3 and vals.max() <= 5 and abs(vals.mean() - 1.0) < 0.2
    kw = tdx.zeros(10, dtype=d, device=device).uniform_(**{"from": 2, "to": 3})
    assert min(kw.tolist()) >= 2 and max(kw.tolist()) <= 3
    for bad_t, bad_x in [(lambda: torch.zeros(3, dtype=torch.int64).normal_(),
                          lambda: tdx.zeros(3, dtype=tdx.int64, device=device).normal_()),
                         (lambda: torch.zeros(3).normal_(0, -1), lambda: tdx.zeros(3, device=device).normal_(0, -1)),
                         (lambda: torch.zeros(3, dtype=torch.int64).uniform_(),
                          lambda: tdx.zeros(3, dtype=tdx.int64, device=device).uniform_()),
                         (lambda: torch.zeros(3).uniform_(2, 1), lambda: tdx.zeros(3, device=device).uniform_(2, 1))]:
        check(bad_x, bad_t, msg="fill argument check")


def test_complex_fills(device):
    """As torch: each part normal with the mean and std/sqrt(2), or uniform in [from, to)."""
    if "complex64" not in tdx.backends.get(device).caps.dtypes:
        pytest.skip("no complex64 here")
    g = _gen(device)
    z = np.asarray(tdx.zeros(20000, dtype=tdx.complex64, device=device).normal_(1.0, 2.0, generator=g).tolist())
    for part in (z.real, z.imag):
        assert abs(part.mean() - 1.0) < 0.05 and abs(part.std() - 2 ** 0.5) < 0.05
    u = np.asarray(tdx.zeros(2000, dtype=tdx.complex64, device=device).uniform_(2, 3, generator=g).tolist())
    for part in (u.real, u.imag):
        assert part.min() >= 2 and part.max() <= 3 and abs(part.mean() - 2.5) < 0.05


def test_normal_function_forms(device):
    g = _gen(device)
    mean = tdx.arange(6, dtype=tdx.float32, device=device).reshape(2, 3)
    out = tdx.normal(mean, 0.0, generator=g)
    assert out.tolist() == mean.tolist()
    std = tdx.full((3,), 2.0, device=device)
    assert tdx.normal(mean, std, generator=g).shape == (2, 3)
    assert tdx.normal(1.0, std).shape == (3,)
    assert tdx.normal(0.0, 1.0, (4, 2), device=device).shape == (4, 2)
    with pytest.raises(TypeError):
        tdx.normal(0.0, 1.0)
    with pytest.raises(ValueError):
        tdx.normal(mean, -std)


def test_dropout_helper(device):
    x = tdx.arange(1, 4001, dtype=tdx.float32, device=device)
    assert dropout(x, 0.3, training=False) is x
    assert dropout(x, 0.0) is x
    assert dropout(x, 1.0).tolist() == [0.0] * 4000
    y = dropout(x, 0.25, generator=_gen(device))
    kept = np.asarray(y.tolist()) != 0
    assert abs(1 - kept.mean() - 0.25) < 0.04
    np.testing.assert_allclose(np.asarray(y.tolist())[kept], np.asarray(x.tolist())[kept] / 0.75, rtol=1e-6)
    for p in (-0.1, 1.5):
        with pytest.raises(ValueError) as info:
            dropout(x, p)
        assert isinstance(info.value, tdx.TdxError)


def test_global_seed_reproduces_unseeded_draws(device):
    tdx.manual_seed(3)
    a = tdx.randperm(30, device=device).tolist()
    tdx.manual_seed(3)
    assert tdx.randperm(30, device=device).tolist() == a


STATE_DRAWS = {
    "rand": lambda dev, g: tdx.rand(3, 4, device=dev, generator=g),
    "randn": lambda dev, g: tdx.randn(3, 4, device=dev, generator=g),
    "randperm": SAMPLERS["randperm"],
    "normal_": SAMPLERS["normal_"],
}


@pytest.mark.parametrize("name", list(STATE_DRAWS))
def test_set_state_replays_draws(device, name):
    draw = STATE_DRAWS[name]
    g = _gen(device, 21)
    draw(device, g)  # the snapshot is taken mid-stream
    state = g.get_state()
    saved = state.tolist()
    first = [draw(device, g).tolist() for _ in range(3)]
    assert first[0] != first[1], "a generator must advance"
    assert g.set_state(state) is g
    assert [draw(device, g).tolist() for _ in range(3)] == first, "set_state must replay the stream"
    assert state.tolist() == saved, "get_state is a snapshot, not a view of the generator"
    other = _gen(device, 99).set_state(state)
    assert [draw(device, other).tolist() for _ in range(3)] == first
    assert other.initial_seed() == 21, "the seed travels with the state, as torch's"


def test_get_state_is_a_uint8_cpu_tensor(device):
    g = _gen(device, 5)
    state = g.get_state()
    assert type(state) is tdx.Tensor and state.dtype is tdx.uint8
    assert state.device == tdx.device("cpu") and state.ndim == 1 and state.shape[0] > 0
    assert g.get_state().tolist() == state.tolist(), "get_state does not advance the generator"
    assert tdx.randperm(10, generator=g, device=device).tolist() == \
        tdx.randperm(10, generator=_gen(device, 5), device=device).tolist(), \
        "get_state on a fresh generator leaves its stream as it was"
    assert Generator(device).manual_seed(6).get_state().tolist() != state.tolist()


def test_set_state_checks_its_argument(device):
    g, t = _gen(device), torch.Generator(torch_twin(device))  # a state's size is its device's generator's
    state = g.get_state()
    check(lambda: g.set_state(state.float()), lambda: t.set_state(t.get_state().float()), msg="float state")
    check(lambda: g.set_state(state[:-1]), lambda: t.set_state(t.get_state()[:-1]), msg="truncated state")
    check(lambda: g.set_state(state[:0]), lambda: t.set_state(t.get_state()[:0]), msg="empty state")
    check(lambda: g.set_state(state.tolist()), lambda: t.set_state(t.get_state().tolist()), msg="a list")
    with pytest.raises(TypeError) as info:
        g.set_state(state.numpy())  # a framework array is not a tdx tensor
    assert isinstance(info.value, tdx.TdxError) and "ndarray" in str(info.value)
    with pytest.raises(RuntimeError) as info:
        g.set_state(state[:-1])
    assert str(state.shape[0] - 1) in str(info.value), "the message names the size received"
    assert g.initial_seed() == 7
    assert tdx.randperm(10, generator=g, device=device).tolist() == \
        tdx.randperm(10, generator=_gen(device), device=device).tolist(), "a refused state changes nothing"


@pytest.fixture
def native_stream(monkeypatch):
    """MLX draws from its own generator for the test (``[random] stream = "native"``)."""
    monkeypatch.setenv("TDX_RANDOM_STREAM", "native")
    tdx.config.reload()
    yield
    monkeypatch.delenv("TDX_RANDOM_STREAM")
    tdx.config.reload()


def test_state_of_another_executor_kind_is_refused(native_stream):
    devices = {r.device for r in tdx.backends.available() if r.available}
    if not {"cpu", "mlx:cpu"} <= devices:
        pytest.skip("needs the cpu and mlx:cpu devices")
    for src, dst in (("cpu", "mlx:cpu"), ("mlx:cpu", "cpu")):
        g = _gen(dst, 3)
        with pytest.raises(RuntimeError) as info:
            g.set_state(_gen(src, 3).get_state())
        assert isinstance(info.value, tdx.TdxError)
        assert g.initial_seed() == 3
        assert tdx.randperm(10, generator=g, device=dst).tolist() == \
            tdx.randperm(10, generator=_gen(dst, 3), device=dst).tolist()


def test_mlx_state_layout(native_stream):
    """Header ``TDXMLXK\\x01``, the seed as a little-endian uint64, then the key's two uint32 words."""
    if not any(r.device == "mlx:cpu" and r.available for r in tdx.backends.available()):
        pytest.skip("needs mlx:cpu")
    seed = 2 ** 40 + 5
    data = bytes(_gen("mlx:cpu", seed).get_state().tolist())
    assert len(data) == 24 and data[:8] == b"TDXMLXK\x01"
    assert int.from_bytes(data[8:16], "little") == seed
    assert Generator("mlx:cpu").set_state(tdx.tensor(list(data), dtype=tdx.uint8)).initial_seed() == seed


def test_cpu_state_is_torch_state():
    """On cpu the bytes are torch's own: equal for a seed, and interchangeable with torch's."""
    g, t = _gen("cpu", 13), torch.Generator().manual_seed(13)
    assert bytes(g.get_state().tolist()) == t.get_state().numpy().tobytes()
    assert tdx.randn(5, generator=g).tolist() == torch.randn(5, generator=t).tolist()
    assert bytes(g.get_state().tolist()) == t.get_state().numpy().tobytes()
    saved = t.get_state()
    want = torch.rand(6, generator=t).tolist()
    g2 = Generator("cpu").set_state(tdx.tensor(saved.tolist(), dtype=tdx.uint8))
    assert g2.initial_seed() == t.initial_seed() == 13
    assert tdx.rand(6, generator=g2).tolist() == want
