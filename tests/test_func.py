"""``tdx.func`` (torch.func) against torch.func on CPU, on every device: vmap, grad, vjp, jvp,
jacrev, jacfwd, hessian, functional_call, stack_module_state, the tutorials' idioms (per-sample
gradients, model ensembling) and bad inputs as typed errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import tdx
from tdx.testing.parity import assert_close, tolerance

from conftest import check

TOL = dict(zip(("rtol", "atol"), tolerance(tdx.float32, "gradient")))


def _t(arr, device):
    """(tdx tensor on ``device``, torch tensor) of float32 ``arr``."""
    a = np.asarray(arr, dtype=np.float32)
    return tdx.tensor(a, device=device), torch.tensor(a)


def _same(got, exp, msg=""):
    """``got`` (a tree of tdx tensors) equals ``exp`` (the same tree of torch tensors)."""
    if isinstance(exp, dict):
        assert isinstance(got, dict) and set(got) == set(exp), msg
        for k in exp:
            _same(got[k], exp[k], f"{msg}[{k}]")
    elif isinstance(exp, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(got) == len(exp), f"{msg}: {type(got)} vs {type(exp)}"
        for i, (g, e) in enumerate(zip(got, exp)):
            _same(g, e, f"{msg}[{i}]")
    elif isinstance(exp, torch.Tensor):
        assert isinstance(got, tdx.Tensor), f"{msg}: got {type(got)}"
        assert_close(got, exp.detach(), msg=msg, **TOL)
    else:
        assert got == exp, msg


def _rng(seed=0):
    return np.random.default_rng(seed)


def test_vmap_matches_torch(device):
    r = _rng()
    (x, tx), (y, ty), (w, tw) = (_t(r.standard_normal(s), device) for s in ((4, 3), (3, 4), (3,)))
    for name, fn, tfn, kw, args, targs in [
        ("default", lambda a: a.sin() * 2, lambda a: a.sin() * 2, {}, (x,), (tx,)),
        ("in_dims tuple, None", lambda a, b: a @ b, lambda a, b: a @ b, {"in_dims": (0, None)}, (x, w), (tx, tw)),
        ("negative in_dim", lambda a: a.sum(0), lambda a: a.sum(0), {"in_dims": -1}, (y,), (ty,)),
        ("out_dims 1", lambda a: a.exp(), lambda a: a.exp(), {"out_dims": 1}, (x,), (tx,)),
        ("two outputs, out_dims tuple", lambda a: (a.sum(), a * 3), lambda a: (a.sum(), a * 3),
         {"out_dims": (0, 1)}, (x,), (tx,)),
        ("unmapped output", lambda a, b: (a + b, b), lambda a, b: (a + b, b), {"in_dims": (0, None),
                                                                             "out_dims": (0, None)}, (x, w), (tx, tw)),
        ("dict argument", lambda d: d["a"] * d["b"], lambda d: d["a"] * d["b"], {"in_dims": ({"a": 0, "b": None},)},
         ({"a": x, "b": w},), ({"a": tx, "b": tw},)),
        ("chunk_size", lambda a: a.cos(), lambda a: a.cos(), {"chunk_size": 3}, (x,), (tx,)),
    ]:
        _same(tdx.func.vmap(fn, **kw)(*args), torch.func.vmap(tfn, **kw)(*targs), name)
    # nested: an outer product by two vmaps, kwargs passed unmapped
    outer = tdx.func.vmap(tdx.func.vmap(lambda a, b, scale=1.0: a * b * scale, in_dims=(None, 0)), in_dims=(0, None))
    touter = torch.func.vmap(torch.func.vmap(lambda a, b, scale=1.0: a * b * scale, in_dims=(None, 0)),
                             in_dims=(0, None))
    _same(outer(w, w, scale=2.0), touter(tw, tw, scale=2.0), "nested")


def test_vmap_over_value_reading_function(device, monkeypatch):
    """cross_entropy checks its targets' values (MLX's tracing cannot): it maps slice by slice, while a
    function that only computes goes through the executor's own vmap where it has one."""
    r = _rng(1)
    x, tx = _t(r.standard_normal((5, 6)), device)
    labels = tdx.tensor([0, 2, 1, 3, 5], device=device)
    tlabels = torch.tensor([0, 2, 1, 3, 5])
    loss = lambda lg, lb: tdx.nn.functional.cross_entropy(lg.unsqueeze(0), lb.unsqueeze(0))  # noqa: E731
    tloss = lambda lg, lb: torch.nn.functional.cross_entropy(lg.unsqueeze(0), lb.unsqueeze(0))  # noqa: E731
    _same(tdx.func.vmap(loss)(x, labels), torch.func.vmap(tloss)(tx, tlabels))
    if x._ex.taped:
        from tdx.compat.func import _slices

        def no_loop(*args, **kwargs):
            raise AssertionError("mapped slice by slice")

        monkeypatch.setattr(_slices, "vmap_by_slices", no_loop)
        _same(tdx.func.vmap(lambda a: (a.tanh() * a).sum(0))(x), torch.func.vmap(lambda a: (a.tanh() * a).sum(0))(tx))


def test_grad_family_matches_torch(device):
    r = _rng(2)
    (x, tx), (w, tw) = _t(r.standard_normal((4, 3)), device), _t(r.standard_normal(3), device)
    f = lambda w, x: ((x @ w).tanh() ** 2).sum()  # noqa: E731
    _same(tdx.func.grad(f)(w, x), torch.func.grad(f)(tw, tx), "grad")
    _same(tdx.func.grad(f, argnums=(0, 1))(w, x), torch.func.grad(f, argnums=(0, 1))(tw, tx), "argnums tuple")
    _same(tdx.func.grad(f, argnums=-1)(w, x), torch.func.grad(f, argnums=-1)(tw, tx), "argnums -1")
    _same(tdx.func.grad_and_value(f)(w, x), torch.func.grad_and_value(f)(tw, tx), "grad_and_value")
    aux = lambda w, x: (f(w, x), {"out": x @ w})  # noqa: E731
    _same(tdx.func.grad(aux, has_aux=True)(w, x), torch.func.grad(aux, has_aux=True)(tw, tx), "has_aux")
    _same(tdx.func.grad_and_value(aux, has_aux=True)(w, x), torch.func.grad_and_value(aux, has_aux=True)(tw, tx))
    g = lambda p, x: (x @ p["w"] + p["b"]).pow(2).mean()  # noqa: E731
    b, tb = _t([0.5], device)
    _same(tdx.func.grad(g)({"w": w, "b": b}, x), torch.func.grad(g)({"w": tw, "b": tb}, tx), "dict of params")
    unused = lambda a, b: a.sum()  # noqa: E731
    _same(tdx.func.grad(unused, argnums=1)(w, w), torch.func.grad(unused, argnums=1)(tw, tw), "unused -> zeros")
    # second order: grad of grad, and a gradient flowing through an inner grad to an outer leaf (MAML)
    h = lambda a: (a ** 3).sum()  # noqa: E731
    _same(tdx.func.grad(lambda a: tdx.func.grad(h)(a).sum())(w),
          torch.func.grad(lambda a: torch.func.grad(h)(a).sum())(tw))
    wl, twl = w.clone().requires_grad_(), tw.clone().requires_grad_()
    for func, ww, xx in ((tdx.func, wl, x), (torch.func, twl, tx)):
        inner = func.grad(f)(ww, xx)
        (ww - 0.1 * inner).pow(2).sum().backward()
    _same(wl.grad, twl.grad, "outer backward through an inner grad")


def test_vjp_jvp_jacobians_match_torch(device):
    r = _rng(3)
    (x, tx), (v, tv) = _t(r.standard_normal(3), device), _t(r.standard_normal(3), device)
    f = lambda a, b: (a.sin() * b, (a * b).sum())  # noqa: E731
    out, fn = tdx.func.vjp(f, x, v)
    tout, tfn = torch.func.vjp(f, tx, tv)
    _same(out, tout, "vjp output")
    ct = (tdx.ones(3, device=device), tdx.tensor(2.0, device=device))
    _same(fn(ct), tfn((torch.ones(3), torch.tensor(2.0))), "vjp_fn")
    _same(tdx.func.jvp(f, (x, v), (v, x)), torch.func.jvp(f, (tx, tv), (tv, tx)), "jvp")
    aux = lambda a: (a.exp(), a.sum())  # noqa: E731
    _same(tdx.func.jvp(aux, (x,), (v,), has_aux=True), torch.func.jvp(aux, (tx,), (tv,), has_aux=True), "jvp aux")
    _same(tdx.func.vjp(aux, x, has_aux=True)[2], torch.func.vjp(aux, tx, has_aux=True)[2], "vjp aux")
    m = lambda a, b: a.unsqueeze(1) * b.cos()  # noqa: E731
    for argnums in (0, 1, (0, 1)):
        _same(tdx.func.jacrev(m, argnums)(x, v), torch.func.jacrev(m, argnums)(tx, tv), f"jacrev {argnums}")
        _same(tdx.func.jacfwd(m, argnums)(x, v), torch.func.jacfwd(m, argnums)(tx, tv), f"jacfwd {argnums}")
    s = lambda a, b: (a.sin() * b).sum() + (a ** 2 * b ** 3).sum()  # noqa: E731
    _same(tdx.func.hessian(s)(x, v), torch.func.hessian(s)(tx, tv), "hessian")
    _same(tdx.func.hessian(s, argnums=(0, 1))(x, v), torch.func.hessian(s, argnums=(0, 1))(tx, tv), "hessian pair")
    _same(tdx.func.jacrev(f)(x, v), torch.func.jacrev(f)(tx, tv), "jacrev of two outputs")
    out, jfn = tdx.func.linearize(lambda a: a.sin(), x)
    _same(jfn(v), torch.func.linearize(lambda a: a.sin(), tx)[1](tv), "linearize")


def _torch_model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))


def _twin(tmodel, device):
    model = tdx.nn.Sequential(tdx.nn.Linear(5, 8), tdx.nn.ReLU(), tdx.nn.Linear(8, 3)).to(device)
    model.load_state_dict({k: tdx.tensor(v.numpy(), device=device) for k, v in tmodel.state_dict().items()})
    return model


def test_per_sample_gradients_match_torch(device):
    """torch's per-sample-gradients tutorial: vmap(grad(loss)) over functional_call."""
    tmodel = _torch_model()
    model = _twin(tmodel, device)
    r = _rng(4)
    data, tdata = _t(r.standard_normal((6, 5)), device)
    targets, ttargets = tdx.tensor([0, 1, 2, 0, 1, 2], device=device), torch.tensor([0, 1, 2, 0, 1, 2])

    def make_loss(F, fc, m):
        def compute_loss(params, buffers, sample, target):
            out = fc(m, (params, buffers), (sample.unsqueeze(0),))
            return F.cross_entropy(out, target.unsqueeze(0))
        return compute_loss

    params = {k: v.detach() for k, v in model.named_parameters()}
    tparams = {k: v.detach() for k, v in tmodel.named_parameters()}
    got = tdx.func.vmap(tdx.func.grad(make_loss(tdx.nn.functional, tdx.func.functional_call, model)),
                        in_dims=(None, None, 0, 0))(params, {}, data, targets)
    exp = torch.func.vmap(torch.func.grad(make_loss(torch.nn.functional, torch.func.functional_call, tmodel)),
                          in_dims=(None, None, 0, 0))(tparams, {}, tdata, ttargets)
    _same(got, exp, "per-sample grads")
    assert all(p.grad is None for p in model.parameters())


def test_model_ensembling_matches_torch(device):
    """torch's ensembling tutorial: stack_module_state, then vmap over functional_call of a base copy."""
    tmodels = [_torch_model() for _ in range(1)]
    torch.manual_seed(1)
    tmodels += [torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3)) for _ in range(3)]
    models = [_twin(m, device) for m in tmodels]
    params, buffers = tdx.func.stack_module_state(models)
    tparams, tbuffers = torch.func.stack_module_state(tmodels)
    _same(params, tparams, "stacked params")
    assert all(p.requires_grad and p.is_leaf for p in params.values())
    base, tbase = models[0], tmodels[0]
    r = _rng(5)
    mb, tmb = _t(r.standard_normal((4, 7, 5)), device)
    fmodel = lambda p, b, x: tdx.func.functional_call(base, (p, b), (x,))  # noqa: E731
    tfmodel = lambda p, b, x: torch.func.functional_call(tbase, (p, b), (x,))  # noqa: E731
    _same(tdx.func.vmap(fmodel)(params, buffers, mb), torch.func.vmap(tfmodel)(tparams, tbuffers, tmb), "per model")
    _same(tdx.func.vmap(fmodel, in_dims=(0, 0, None))(params, buffers, mb[0]),
          torch.func.vmap(tfmodel, in_dims=(0, 0, None))(tparams, tbuffers, tmb[0]), "same minibatch")


def test_functional_call_options(device):
    class Tied(tdx.nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = tdx.nn.Linear(2, 2), tdx.nn.Linear(2, 2)
            self.b.weight = self.a.weight

        def forward(self, x):
            return self.a(x) + self.b(x)

    m = Tied().to(device)
    x = tdx.ones(1, 2, device=device)
    ones = tdx.ones(2, 2, device=device)
    tied = tdx.func.functional_call(m, {"a.weight": ones}, (x,))
    untied = tdx.func.functional_call(m, {"a.weight": ones}, x, tie_weights=False)
    assert_close(tied, 2 * ones.sum(1, keepdim=True).T + m.a.bias + m.b.bias)
    assert_close(untied, (x @ ones.T + m.a.bias) + m.b(x))
    with pytest.raises(ValueError, match="tied"):
        tdx.func.functional_call(m, {"a.weight": ones, "b.weight": ones * 2}, (x,))
    with pytest.raises(RuntimeError, match="Unexpected key\\(s\\): 'foo'"):
        tdx.func.functional_call(m, {"foo": ones}, (x,), strict=True)
    with pytest.raises(ValueError, match=r"\['a.bias'\] appeared in multiple"):
        tdx.func.functional_call(m, ({"a.bias": ones[0]}, {"a.bias": ones[0]}), (x,))
    before = m.a.weight
    with pytest.raises(RuntimeError):
        tdx.func.functional_call(m, {"a.weight": tdx.ones(3, 3, device=device)}, (x,))
    assert m.a.weight is before and m.b.weight is before  # restored after the failed call
    with pytest.raises(TypeError, match="3 is not an instance of torch.Tensor"):
        tdx.func.functional_call(m, {"a.weight": 3}, (x,))


def test_randomness_modes(device):
    x = tdx.zeros(4, 3, device=device)
    with pytest.raises(RuntimeError, match="randomness error mode") as info:
        tdx.func.vmap(lambda a: a + tdx.rand(3, device=device))(x)
    assert isinstance(info.value, tdx.TdxError)
    same = tdx.func.vmap(lambda a: a + tdx.rand(3, device=device), randomness="same")(x)
    diff = tdx.func.vmap(lambda a: a + tdx.rand(3, device=device), randomness="different")(x)
    assert bool((same == same[0]).all()) and not bool((diff == diff[0]).all())


def test_bad_inputs_are_typed_errors(device):
    x, tx = _t(np.ones((3, 2)), device)
    f, g = tdx.func, torch.func
    cases = {
        "in_dims string": (lambda m, a: m.vmap(lambda t: t, in_dims="a")(a)),
        "in_dims length": (lambda m, a: m.vmap(lambda t, u: t, in_dims=(0,))(a, a)),
        "in_dim out of range": (lambda m, a: m.vmap(lambda t: t, in_dims=2)(a)),
        "in_dim for non-tensor": (lambda m, a: m.vmap(lambda t, u: t, in_dims=(0, 0))(a, 1.0)),
        "in_dim float": (lambda m, a: m.vmap(lambda t: t, in_dims=(0.5,))(a)),
        "sizes differ": (lambda m, a: m.vmap(lambda t, u: t)(a, a[:2])),
        "no inputs": (lambda m, a: m.vmap(lambda: a)()),
        "non-tensor output": (lambda m, a: m.vmap(lambda t: 1.0)(a)),
        "bad randomness": (lambda m, a: m.vmap(lambda t: t, randomness="x")(a)),
        "chunk_size 0": (lambda m, a: m.vmap(lambda t: t, chunk_size=0)(a)),
        "out_dims string": (lambda m, a: m.vmap(lambda t: t, out_dims="a")(a)),
        "grad non-tensor": (lambda m, a: m.grad(lambda t: 1.0)(a)),
        "grad non-scalar": (lambda m, a: m.grad(lambda t: t.sin())(a)),
        "grad aux not pair": (lambda m, a: m.grad(lambda t: t.sum(), has_aux=True)(a)),
        "argnums range": (lambda m, a: m.grad(lambda t: t.sum(), argnums=2)(a)),
        "argnums type": (lambda m, a: m.grad(lambda t: t.sum(), argnums=1.0)(a)),
        "argnums empty": (lambda m, a: m.grad(lambda t: t.sum(), argnums=())(a)),
        "argnums repeated": (lambda m, a: m.grad(lambda t, u: t.sum(), argnums=(0, 0))(a, a)),
        "grad of int tensor": (lambda m, a: m.grad(lambda t: t.sum())(a.long())),
        "vjp non-tensor": (lambda m, a: m.vjp(lambda t: 1.0, a)),
        "vjp cotangent structure": (lambda m, a: m.vjp(lambda t: t.sin(), a)[1]((a, a))),
        "jvp primals not tuple": (lambda m, a: m.jvp(lambda t: t, a, a)),
        "jvp structure": (lambda m, a: m.jvp(lambda t, u: t, (a, a), (a,))),
        "jvp shape": (lambda m, a: m.jvp(lambda t: t, (a,), (a[:1],))),
        "stack no models": (lambda m, a: m.stack_module_state([])),
    }
    for name, case in cases.items():
        check(lambda: case(f, x), lambda: case(g, tx), msg=name)
    with pytest.raises(ValueError, match=r"in_dim=2 .* dimensionality 2"):
        f.vmap(lambda t: t, in_dims=2)(x)
    with pytest.raises(RuntimeError, match="got <class 'float'>"):
        f.grad(lambda t: 1.0)(x)


def test_torch_func_under_the_alias():
    from tdx.aliasing.torch_alias import torch_alias

    with torch_alias():
        import torch as alias_torch
        from torch.func import vmap

        assert alias_torch.func is tdx.func and vmap is tdx.func.vmap
        import torch.utils.checkpoint as ck

        assert ck.checkpoint is tdx.utils.checkpoint.checkpoint


def test_debug_unwrap_and_functionalize(device):
    x, tx = _t(np.arange(6.0).reshape(2, 3), device)
    assert tdx.func.debug_unwrap(x) is x
    seen = []
    tdx.func.vmap(lambda a: seen.append(tuple(tdx.func.debug_unwrap(a).shape)) or a)(x)
    tseen = []
    torch.func.vmap(lambda a: tseen.append(tuple(torch.func.debug_unwrap(a).shape)) or a)(tx)
    assert seen[0] in (tseen[0], (3,))  # torch executors see torch's batched value; slices elsewhere
    f = lambda a: a.clone().add_(1).mul(2)  # noqa: E731
    _same(tdx.func.functionalize(f)(x), torch.func.functionalize(f)(tx))
    with pytest.raises(RuntimeError, match="invalid argument for remove=bad"):
        tdx.func.functionalize(f, remove="bad")


def test_gradient_flows_to_parameters_a_function_closes_over(device):
    r = _rng(6)
    (x, tx), (w, tw) = _t(r.standard_normal(3), device), _t(r.standard_normal(3), device)
    w.requires_grad_()
    tw.requires_grad_()
    for func, ww, xx in ((tdx.func, w, x), (torch.func, tw, tx)):
        g = func.grad(lambda a: (ww * a).sin().sum())(xx)
        assert g.requires_grad
        (g * g).sum().backward()
        out, fn = func.vjp(lambda a: (ww * a).tanh(), xx)
        fn(out)[0].sum().backward()
    _same(w.grad, tw.grad, "closure parameter's gradient")
    plain = tdx.func.grad(lambda a: (a * a).sum())(x)
    assert not plain.requires_grad and plain.grad_fn is None


def test_vmap_over_batch_norm(device):
    """Training-mode running statistics under vmap are refused (as torch refuses them), never written
    once per slice; eval mode and replace_all_batch_norm_modules_ map as torch's."""
    torch.manual_seed(0)
    tbn = torch.nn.BatchNorm1d(3)
    bn = tdx.nn.BatchNorm1d(3).to(device)
    x, tx = _t(_rng(7).standard_normal((4, 2, 3)), device)
    check(lambda: tdx.func.vmap(bn)(x), lambda: torch.func.vmap(tbn)(tx), msg="train-mode running stats")
    assert_close(bn.running_mean, tbn.running_mean)
    bn.eval()
    tbn.eval()
    _same(tdx.func.vmap(bn)(x), torch.func.vmap(tbn)(tx), "eval mode")
    tdx.func.replace_all_batch_norm_modules_(bn.train())
    torch.func.replace_all_batch_norm_modules_(tbn.train())
    _same(tdx.func.vmap(bn)(x), torch.func.vmap(tbn)(tx), "without running stats")
    assert bn.running_mean is None and not bn.track_running_stats
