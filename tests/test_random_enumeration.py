"""Every public callable of torch that draws random numbers draws torch's numbers under tdx.

The drawing callables are found in real torch, not listed by hand: the aten operators that take a
``Generator`` (their ``torch.*`` functions and ``Tensor`` methods), the ``nn.functional`` and ``nn.init``
functions whose call moves the default generator (each probed with generic inputs), the ``nn``
modules whose source builds or calls a drawing one (training mode), every ``distributions``
sampler and every ``utils.data`` sampler. Each found callable must have a call form in
:data:`FORMS` (or a reason in :data:`NOT_DRAWN`); a drawing callable a new torch adds fails
:func:`test_every_drawing_callable_is_covered` until it has one. Every form runs seeded under real
torch on CPU and under tdx on every device: the result and the generator's state afterwards must
be torch's. The run prints how many callables it covers beside torch's count.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import re
import warnings

import numpy as np
import pytest
import torch

import tdx
from conftest import torch_twin

# operators taking a Generator that are no drawing callable of their own
NOT_DRAWN = {
    "torch.manual_seed": "sets the seed (test_random.py)", "torch.seed": "reseeds from entropy (test_random.py)",
    "torch.initial_seed": "reads the seed",
    "torch.nn.functional.multi_head_attention_forward": "covered through nn.MultiheadAttention",
}


def _x(m, d, *shape):
    return m.linspace(-2.0, 2.0, int(np.prod(shape)), device=d).reshape(shape)


def _dist(name, *params, sample=(3,)):
    def form(m, d):
        args = [m.tensor(p, device=d) if isinstance(p, (list, float)) else p for p in params]
        dist = getattr(m.distributions, name)(*args)
        return dist.rsample(sample) if dist.has_rsample else dist.sample(sample)
    return form


def _module(name, *args, inputs=((4, 3, 8),), **kw):
    def form(m, d):
        mod = getattr(m.nn, name)(*args, **kw).to(d).train()
        out = mod(*[_x(m, d, *s) for s in inputs])
        return out[0] if isinstance(out, tuple) else out
    return form


def _sampler(build):
    def form(m, d):
        return m.tensor(list(build(m)), dtype=m.int64)
    return form


FORMS = {
    # torch.* functions
    "torch.rand": lambda m, d: m.rand(3, 4, device=d),
    "torch.randn": lambda m, d: m.randn(3, 4, device=d),
    "torch.randint": lambda m, d: m.randint(0, 9, (3, 4), device=d),
    "torch.randperm": lambda m, d: m.randperm(12, device=d),
    "torch.rand_like": lambda m, d: m.rand_like(_x(m, d, 3, 4)),
    "torch.randn_like": lambda m, d: m.randn_like(_x(m, d, 3, 4)),
    "torch.randint_like": lambda m, d: m.randint_like(_x(m, d, 3, 4), 0, 9),
    "torch.bernoulli": lambda m, d: m.bernoulli(m.full((20,), 0.3, device=d)),
    "torch.multinomial": lambda m, d: m.multinomial(m.tensor([0.2, 0.5, 0.3], device=d), 6, True),
    "torch.normal": lambda m, d: m.normal(_x(m, d, 6), 2.0),
    "torch.poisson": lambda m, d: m.poisson(m.full((8,), 3.0, device=d)),
    "torch.binomial": lambda m, d: m.binomial(m.full((8,), 10.0, device=d), m.full((8,), 0.3, device=d)),
    "torch._standard_gamma": lambda m, d: m._standard_gamma(m.full((8,), 2.0, device=d)),
    "torch._sample_dirichlet": lambda m, d: m._sample_dirichlet(m.full((3, 4), 2.0, device=d)),
    "torch.rrelu": lambda m, d: m.rrelu(_x(m, d, 20), training=True),
    "torch.rrelu_": lambda m, d: m.rrelu_(_x(m, d, 20), training=True),
    # Tensor methods
    "Tensor.bernoulli": lambda m, d: m.full((20,), 0.6, device=d).bernoulli(),
    "Tensor.bernoulli_": lambda m, d: m.empty(20, device=d).bernoulli_(0.4),
    "Tensor.cauchy_": lambda m, d: m.empty(10, device=d).cauchy_(),
    "Tensor.exponential_": lambda m, d: m.empty(10, device=d).exponential_(2.0),
    "Tensor.geometric_": lambda m, d: m.empty(10, device=d).geometric_(0.3),
    "Tensor.log_normal_": lambda m, d: m.empty(20, device=d).log_normal_(),
    "Tensor.normal_": lambda m, d: m.empty(10, device=d).normal_(1.0, 2.0),
    "Tensor.random_": lambda m, d: m.empty(10, device=d).random_(0, 7),
    "Tensor.uniform_": lambda m, d: m.empty(10, device=d).uniform_(-1, 1),
    "Tensor.multinomial": lambda m, d: m.tensor([[1.0, 2.0, 3.0]] * 2, device=d).multinomial(2),
    # nn.functional
    "torch.nn.functional.dropout": lambda m, d: m.nn.functional.dropout(_x(m, d, 4, 5), 0.4),
    "torch.nn.functional.dropout1d": lambda m, d: m.nn.functional.dropout1d(_x(m, d, 2, 4, 5), 0.4),
    "torch.nn.functional.dropout2d": lambda m, d: m.nn.functional.dropout2d(_x(m, d, 2, 4, 3, 3), 0.4),
    "torch.nn.functional.dropout3d": lambda m, d: m.nn.functional.dropout3d(_x(m, d, 2, 4, 2, 2, 2), 0.4),
    "torch.nn.functional.alpha_dropout": lambda m, d: m.nn.functional.alpha_dropout(_x(m, d, 20), 0.4, True),
    "torch.nn.functional.feature_alpha_dropout": lambda m, d: m.nn.functional.feature_alpha_dropout(
        _x(m, d, 2, 4, 3), 0.4, True),
    "torch.nn.functional.rrelu": lambda m, d: m.nn.functional.rrelu(_x(m, d, 20), training=True),
    "torch.nn.functional.rrelu_": lambda m, d: m.nn.functional.rrelu_(_x(m, d, 20), training=True),
    "torch.nn.functional.gumbel_softmax": lambda m, d: m.nn.functional.gumbel_softmax(_x(m, d, 3, 5)),
    "torch.nn.functional.scaled_dot_product_attention": lambda m, d: m.nn.functional.scaled_dot_product_attention(
        _x(m, d, 1, 2, 4, 8), _x(m, d, 1, 2, 5, 8).cos(), _x(m, d, 1, 2, 5, 8), dropout_p=0.3),
    # nn.init
    **{f"torch.nn.init.{n}": (lambda n: lambda m, d: getattr(m.nn.init, n)(m.empty(6, 5, device=d)))(n)
       for n in ("uniform_", "normal_", "trunc_normal_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_",
                 "kaiming_normal_", "orthogonal_", "uniform", "normal", "xavier_uniform", "xavier_normal",
                 "kaiming_uniform", "kaiming_normal", "orthogonal")},
    "torch.nn.init.sparse_": lambda m, d: m.nn.init.sparse_(m.empty(6, 5, device=d), 0.5),
    "torch.nn.init.sparse": lambda m, d: m.nn.init.sparse(m.empty(6, 5, device=d), 0.5),
    # nn modules, in training mode (their initial weights are drawn too)
    "torch.nn.Dropout": _module("Dropout", 0.3),
    "torch.nn.Dropout1d": _module("Dropout1d", 0.3),
    "torch.nn.Dropout2d": _module("Dropout2d", 0.3, inputs=((2, 3, 4, 4),)),
    "torch.nn.Dropout3d": _module("Dropout3d", 0.3, inputs=((2, 3, 2, 2, 2),)),
    "torch.nn.AlphaDropout": _module("AlphaDropout", 0.3),
    "torch.nn.FeatureAlphaDropout": _module("FeatureAlphaDropout", 0.3),
    "torch.nn.RReLU": _module("RReLU"),
    "torch.nn.MultiheadAttention": _module("MultiheadAttention", 8, 2, dropout=0.3, inputs=((4, 3, 8),) * 3),
    "torch.nn.TransformerEncoderLayer": _module("TransformerEncoderLayer", 8, 2, 16, dropout=0.3),
    "torch.nn.TransformerDecoderLayer": _module("TransformerDecoderLayer", 8, 2, 16, dropout=0.3,
                                                inputs=((4, 3, 8), (5, 3, 8))),
    "torch.nn.TransformerEncoder": lambda m, d: m.nn.TransformerEncoder(
        m.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.3), 2, enable_nested_tensor=False).to(d).train()(
        _x(m, d, 4, 3, 8)),
    "torch.nn.TransformerDecoder": lambda m, d: m.nn.TransformerDecoder(
        m.nn.TransformerDecoderLayer(8, 2, 16, dropout=0.3), 2).to(d).train()(_x(m, d, 4, 3, 8), _x(m, d, 5, 3, 8)),
    "torch.nn.Transformer": _module("Transformer", 8, 2, 1, 1, 16, dropout=0.3, inputs=((4, 3, 8), (5, 3, 8))),
    # distributions samplers
    "torch.distributions.Bernoulli": _dist("Bernoulli", [0.2, 0.7]),
    "torch.distributions.Beta": _dist("Beta", [2.0, 0.5], [1.0, 3.0]),
    "torch.distributions.Binomial": _dist("Binomial", 10, [0.2, 0.7]),
    "torch.distributions.Categorical": _dist("Categorical", [0.2, 0.5, 0.3]),
    "torch.distributions.Cauchy": _dist("Cauchy", [0.0, 1.0], [1.0, 2.0]),
    "torch.distributions.Chi2": _dist("Chi2", [2.0, 5.0]),
    "torch.distributions.ContinuousBernoulli": _dist("ContinuousBernoulli", [0.2, 0.7]),
    "torch.distributions.Dirichlet": _dist("Dirichlet", [1.0, 2.0, 3.0]),
    "torch.distributions.Exponential": _dist("Exponential", [1.0, 2.0]),
    "torch.distributions.FisherSnedecor": _dist("FisherSnedecor", [3.0, 5.0], [4.0, 6.0]),
    "torch.distributions.Gamma": _dist("Gamma", [2.0, 0.5], [1.0, 3.0]),
    "torch.distributions.GeneralizedPareto": _dist("GeneralizedPareto", [0.0, 1.0], [1.0, 2.0], [0.1, 0.3]),
    "torch.distributions.Geometric": _dist("Geometric", [0.2, 0.7]),
    "torch.distributions.Gumbel": _dist("Gumbel", [0.0, 1.0], [1.0, 2.0]),
    "torch.distributions.HalfCauchy": _dist("HalfCauchy", [1.0, 2.0]),
    "torch.distributions.HalfNormal": _dist("HalfNormal", [1.0, 2.0]),
    "torch.distributions.Independent": lambda m, d: m.distributions.Independent(
        m.distributions.Normal(m.zeros(2, 3, device=d), m.ones(2, 3, device=d)), 1).sample((2,)),
    "torch.distributions.InverseGamma": _dist("InverseGamma", [2.0, 3.0], [1.0, 2.0]),
    "torch.distributions.Kumaraswamy": _dist("Kumaraswamy", [2.0, 3.0], [1.0, 2.0]),
    "torch.distributions.LKJCholesky": _dist("LKJCholesky", 3, 0.5),
    "torch.distributions.Laplace": _dist("Laplace", [0.0, 1.0], [1.0, 2.0]),
    "torch.distributions.LogNormal": _dist("LogNormal", [0.0, 1.0], [1.0, 0.5]),
    "torch.distributions.LogisticNormal": _dist("LogisticNormal", [0.0, 1.0], [1.0, 0.5]),
    "torch.distributions.LowRankMultivariateNormal": lambda m, d: m.distributions.LowRankMultivariateNormal(
        m.zeros(3, device=d), _x(m, d, 3, 1), m.ones(3, device=d)).sample((2,)),
    "torch.distributions.MixtureSameFamily": lambda m, d: m.distributions.MixtureSameFamily(
        m.distributions.Categorical(m.tensor([0.3, 0.7], device=d)),
        m.distributions.Normal(m.tensor([-1.0, 1.0], device=d), m.tensor([0.5, 2.0], device=d))).sample((5,)),
    "torch.distributions.Multinomial": _dist("Multinomial", 5, [0.2, 0.5, 0.3]),
    "torch.distributions.MultivariateNormal": lambda m, d: m.distributions.MultivariateNormal(
        m.zeros(3, device=d), m.eye(3, device=d) * 2).sample((2,)),
    "torch.distributions.NegativeBinomial": _dist("NegativeBinomial", [3.0, 5.0], [0.2, 0.7]),
    "torch.distributions.Normal": _dist("Normal", [0.0, 1.0], [1.0, 2.0]),
    "torch.distributions.OneHotCategorical": _dist("OneHotCategorical", [0.2, 0.5, 0.3]),
    "torch.distributions.OneHotCategoricalStraightThrough": _dist("OneHotCategoricalStraightThrough",
                                                                  [0.2, 0.5, 0.3]),
    "torch.distributions.Pareto": _dist("Pareto", [1.0, 2.0], [1.5, 3.0]),
    "torch.distributions.Poisson": _dist("Poisson", [1.0, 4.0]),
    "torch.distributions.RelaxedBernoulli": _dist("RelaxedBernoulli", 0.5, [0.2, 0.7]),
    "torch.distributions.RelaxedOneHotCategorical": _dist("RelaxedOneHotCategorical", 0.5, [0.2, 0.5, 0.3]),
    "torch.distributions.StudentT": _dist("StudentT", [3.0, 5.0]),
    "torch.distributions.TransformedDistribution": lambda m, d: m.distributions.TransformedDistribution(
        m.distributions.Normal(m.zeros(3, device=d), m.ones(3, device=d)),
        [m.distributions.transforms.ExpTransform()]).sample((2,)),
    "torch.distributions.Uniform": _dist("Uniform", [0.0, 1.0], [1.0, 3.0]),
    "torch.distributions.VonMises": _dist("VonMises", [0.0, 1.0], [1.0, 4.0]),
    "torch.distributions.Weibull": _dist("Weibull", [1.0, 2.0], [1.5, 0.5]),
    "torch.distributions.Wishart": lambda m, d: m.distributions.Wishart(
        m.tensor(4.0, device=d), m.eye(2, device=d)).sample((2,)),
    # utils.data samplers
    "torch.utils.data.RandomSampler": _sampler(lambda m: m.utils.data.RandomSampler(range(10))),
    "torch.utils.data.SubsetRandomSampler": _sampler(lambda m: m.utils.data.SubsetRandomSampler([1, 4, 6, 8])),
    "torch.utils.data.WeightedRandomSampler": _sampler(lambda m: m.utils.data.WeightedRandomSampler(
        [0.1, 0.5, 0.2, 0.2], 6)),
    "torch.utils.data.random_split": _sampler(lambda m: m.utils.data.random_split(range(10), [0.6, 0.4])[0].indices),
}


# --- discovery, in real torch -----------------------------------------------------------------------

def _draws(call) -> bool:
    """Whether ``call()`` runs and moves torch's default CPU generator."""
    before = torch.get_rng_state()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            call()
    except Exception:  # noqa: BLE001 - a probe: a call the generic inputs do not fit says nothing
        return False
    return not torch.equal(before, torch.get_rng_state())


def _aten_drawing() -> set:
    """``torch.X`` and ``Tensor.X`` for every aten operator taking a ``Generator``."""
    ops = {s.name[len("aten::"):] for s in torch._C._jit_get_all_schemas()
           if s.name.startswith("aten::") and any("Generator" in str(a.type) for a in s.arguments)}
    found = set()
    for op in ops:
        for owner, prefix in ((torch, "torch."), (torch.Tensor, "Tensor.")):
            if callable(getattr(owner, op, None)) and not inspect.ismodule(getattr(owner, op)) and (not op.startswith("_") or prefix == "torch." and op in (
                    "_standard_gamma", "_sample_dirichlet")):
                found.add(prefix + op)
    return found


def _probe_functions(module, prefix: str, inputs) -> set:
    """The public functions of ``module`` that draw when called on one of ``inputs`` (with ``training`` and
    ``dropout_p`` set where they take them)."""
    found = set()
    for name in dir(module):
        fn = getattr(module, name)
        if name.startswith("_") or not inspect.isfunction(fn) and not callable(fn) or inspect.isclass(fn):
            continue
        try:
            params = inspect.signature(fn).parameters
            kws = [{k: v for k, v in (("training", True), ("dropout_p", 0.5)) if k in params}]
        except (TypeError, ValueError):  # a builtin: try the keywords and none
            kws = [{"training": True}, {"dropout_p": 0.5}, {}]
        if any(_draws(lambda: fn(*args, **kw)) for args in inputs() for kw in kws):
            found.add(prefix + name)
    return found


def _modules_drawing(functional: set) -> set:
    """``nn`` modules whose class source calls a drawing function or builds a drawing module (a closure)."""
    names = {n.rpartition(".")[2] for n in functional}
    classes = {n: getattr(torch.nn, n) for n in dir(torch.nn)
               if inspect.isclass(getattr(torch.nn, n)) and issubclass(getattr(torch.nn, n), torch.nn.Module)}
    sources = {}
    for n, cls in classes.items():  # each class's block of its module's text (inspect.getsource parses per class)
        text = _file_text(inspect.getsourcefile(cls))
        start = re.search(r"^class %s\b" % re.escape(cls.__name__), text, re.M)
        if start is not None:
            end = re.compile(r"^(class|def) ", re.M).search(text, start.end())
            sources[n] = text[start.start():end.start() if end else len(text)]
    drawing: set = set()
    while True:
        pattern = re.compile(r"\b(F\.(%s)|(%s))\(" % ("|".join(map(re.escape, names)) or "$^",
                                                      "|".join(map(re.escape, drawing)) or "$^"))
        more = {n for n, src in sources.items() if n not in drawing and pattern.search(src)}
        if not more:
            return {"torch.nn." + n for n in drawing}
        drawing |= more


@functools.lru_cache(maxsize=None)
def _file_text(path) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read()


@functools.lru_cache(maxsize=None)
def torch_drawing() -> frozenset:
    """Every public drawing callable of the installed torch (minus :data:`NOT_DRAWN`'s reasons)."""
    def tensors():
        return [(torch.linspace(-2, 2, 96).reshape(2, 3, 4, 4),), (torch.linspace(-2, 2, 12).reshape(3, 4),),
                (torch.linspace(-2, 2, 64).reshape(1, 2, 4, 8),) * 3]

    functional = _probe_functions(torch.nn.functional, "torch.nn.functional.", tensors)
    functional.add("torch.nn.functional.multi_head_attention_forward")  # needs its many arguments to be probed
    init = _probe_functions(torch.nn.init, "torch.nn.init.", lambda: [(torch.empty(6, 5),), (torch.empty(6, 5), 0.5)])
    dists = {"torch.distributions." + n for n in torch.distributions.__all__
             if inspect.isclass(getattr(torch.distributions, n))
             and issubclass(getattr(torch.distributions, n), torch.distributions.Distribution)
             and n not in ("Distribution", "ExponentialFamily")}
    data = {"torch.utils.data." + n for n in torch.utils.data.__all__
            if n in ("random_split",) or inspect.isclass(getattr(torch.utils.data, n))
            and issubclass(getattr(torch.utils.data, n), torch.utils.data.Sampler)
            and _draws(lambda n=n: list(_sampler_probe(getattr(torch.utils.data, n))))}
    found = _aten_drawing() | functional | init | _modules_drawing(functional) | dists | data
    return frozenset(found - set(NOT_DRAWN))


def _sampler_probe(cls):
    for args in ((range(10),), ([1, 2, 3],), ([0.2, 0.8], 4)):
        try:
            return iter(cls(*args))
        except Exception:  # noqa: BLE001 - a probe
            continue
    return iter(())


# --- the checks -------------------------------------------------------------------------------------

def test_every_drawing_callable_is_covered(capsys):
    """Each drawing callable torch has is run by :data:`FORMS`; the count is printed beside torch's."""
    found = torch_drawing()
    missing = sorted(found - set(FORMS))
    with capsys.disabled():
        print(f"\n[random enumeration] tdx checks {len(found & set(FORMS))} drawing callables of torch's {len(found)} "
              f"(+{len(NOT_DRAWN)} operators taking a generator that draw nothing of their own)")
    assert not missing, f"torch callables that draw and have no form in FORMS: {missing}"


def _state(m, twin):
    """The state of the generator the device's draws come from, as bytes."""
    get = m.get_rng_state if twin == "cpu" else getattr(m, twin.split(":")[0]).get_rng_state
    t = get()
    return bytes(t.numpy(force=True) if m is tdx else t.numpy())


def _values(out):
    x = out.detach()
    x = x.numpy(force=True) if hasattr(x, "_n") else x.cpu().numpy()
    return x.astype(np.float64) if x.dtype != np.bool_ else x


# forms that hold float64 on their device (torch's VonMises samples in double): skipped where it has none
FLOAT64_FORMS = frozenset({"torch.distributions.VonMises"})
# torch before 2.12 drew trunc_normal_ by inverse CDF (uniform_ then erfinv_), other numbers of the same law; tdx
# draws 2.12's rejection sampler
_OLD_TRUNC_NORMAL = "accept_buf" not in inspect.getsource(torch.nn.init._no_grad_trunc_normal_)


def _on_default(m, d, name):
    """The default device a form runs under: ``d``, the device under test (its torch twin for torch), so that
    what a callable makes or draws on the default device (a module's weights, ``sparse_``'s permutations,
    Wishart's indices) is made there on both sides, as in a program pinned to it; tdx's own default device
    is cuda where a GPU is present, torch's the CPU. torch's ``utils.data`` samplers keep the host's default
    (under another one they draw their seed there, then refuse their own CPU generator)."""
    return contextlib.nullcontext() if name.startswith("torch.utils.data.") else m.device(d)


@pytest.mark.parametrize("name", sorted(FORMS))
def test_drawing_callable_draws_torchs_numbers(device, name):
    """The callable's result and the generator's state after it, seeded, against torch's."""
    if name in FLOAT64_FORMS and not tdx.backends.get(device).caps.float64:
        pytest.skip(f"{name} samples in float64, which {device} does not hold")
    if name == "torch.nn.init.trunc_normal_" and _OLD_TRUNC_NORMAL:
        pytest.skip(f"torch {torch.__version__} draws trunc_normal_ by inverse CDF; tdx draws 2.12's sampler")
    twin = torch_twin(device)
    form = FORMS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.manual_seed(5)
        with _on_default(torch, twin, name):
            want = _values(form(torch, twin))
        want_state = _state(torch, twin)
        tdx.manual_seed(5)
        with _on_default(tdx, device, name):
            got = _values(form(tdx, device))
        got_state = _state(tdx, twin)
    assert got.shape == want.shape, name
    if tdx.backends.get(device).name == "torch":
        np.testing.assert_array_equal(got, want, err_msg=name)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=name)
    assert got_state == want_state, f"{name} leaves the generator elsewhere than torch on {device}"

