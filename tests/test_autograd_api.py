"""``tdx.autograd`` beyond the basics, on every executor against torch.autograd on CPU: custom ``Function``,
``grad`` with ``create_graph`` (higher derivatives), ``backward``, ``gradcheck``/``gradgradcheck``,
anomaly detection, ``functional`` and the share of torch's public names."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import tdx
from tdx.testing.parity import assert_close

RNG = np.random.default_rng(5)
A = RNG.uniform(0.5, 1.5, (3, 4)).astype(np.float32)
B = RNG.uniform(-1.0, 1.0, (4,)).astype(np.float32)


def both(arr, device, requires_grad=True):
    return tdx.tensor(arr, device=device, requires_grad=requires_grad), torch.tensor(arr, requires_grad=requires_grad)


# custom Function -----------------------------------------------------------------------------------------
def make_scaled_cube(mod):
    class ScaledCube(mod.autograd.Function):
        @staticmethod
        def forward(ctx, x, k, y):
            ctx.save_for_backward(x, y)
            ctx.k = k
            ctx.seen = tuple(ctx.needs_input_grad)
            return x ** 3 * k + y

        @staticmethod
        def backward(ctx, g):
            x, y = ctx.saved_tensors
            return g * 3 * x ** 2 * ctx.k, None, g * 1.0 if ctx.needs_input_grad[2] else None

    return ScaledCube


def test_function_forward_backward_and_ctx(device):
    x, t = both(A, device)
    y, u = both(B, device, requires_grad=False)
    out = make_scaled_cube(tdx).apply(x, 2.5, y)
    ref = make_scaled_cube(torch).apply(t, 2.5, u)
    assert_close(out, ref.detach())
    assert out.requires_grad and out.grad_fn is not None and "ScaledCube" in type(out.grad_fn).__name__ + repr(
        out.grad_fn)
    (out * out).sum().backward()
    (ref * ref).sum().backward()
    assert_close(x.grad, t.grad)
    assert y.grad is None


def test_function_needs_input_grad_matches_torch(device):
    seen = {}
    for mod in (tdx, torch):
        fn = make_scaled_cube(mod)
        a = mod.tensor(A, requires_grad=True, **({"device": device} if mod is tdx else {}))
        b = mod.tensor(B, requires_grad=True, **({"device": device} if mod is tdx else {}))
        holder = {}

        class Spy(fn):
            @staticmethod
            def forward(ctx, x, k, y):
                holder["forward"] = tuple(ctx.needs_input_grad)
                return fn.forward(ctx, x, k, y)

        Spy.apply(a, 2.0, b).sum().backward()
        seen[mod.__name__] = holder["forward"]
        if mod is tdx:
            assert_close(b.grad, torch.full((4,), 3.0))
    assert seen["tdx"] == seen["torch"] == (True, False, True)


def test_function_double_backward(device):
    """The user's backward is made of differentiable ops: create_graph differentiates it again."""
    x, t = both(B, device)
    gx = tdx.autograd.grad(make_scaled_cube(tdx).apply(x, 2.0, tdx.zeros(4, device=device)).sum(), x,
                           create_graph=True)[0]
    gt = torch.autograd.grad(make_scaled_cube(torch).apply(t, 2.0, torch.zeros(4)).sum(), t, create_graph=True)[0]
    assert_close(gx, gt.detach())
    assert gx.requires_grad
    (ggx,) = tdx.autograd.grad((gx * gx).sum(), x)
    (ggt,) = torch.autograd.grad((gt * gt).sum(), t)
    assert_close(ggx, ggt)


def make_sort(mod):
    class Sort(mod.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            v, i = x.sort()
            ctx.mark_non_differentiable(i)
            ctx.save_for_backward(i)
            ctx.set_materialize_grads(False)
            return v, i

        @staticmethod
        @mod.autograd.function.once_differentiable
        def backward(ctx, gv, gi):
            assert gi is None  # materialize_grads(False): no zeros made up for the index output
            (i,) = ctx.saved_tensors
            out = gv.new_zeros(gv.shape) if hasattr(gv, "new_zeros") else None
            out[i] = gv
            return out

    return Sort


def test_function_non_differentiable_and_materialize(device):
    x, t = both(B, device)
    w = np.array([1.0, -2.0, 3.0, 0.5], np.float32)
    res = []
    for mod, v in ((tdx, x), (torch, t)):
        vals, idx = make_sort(mod).apply(v * 2)
        assert vals.requires_grad and not idx.requires_grad
        kw = {"device": device} if mod is tdx else {}
        (vals * mod.tensor(w, **kw)).sum().backward()
        res.append(v.grad)
    assert_close(res[0], res[1])


def test_function_setup_context_style_and_errors(device):
    class Square(tdx.autograd.Function):
        @staticmethod
        def forward(x):
            return x * x

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0])

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    x, t = both(A, device)
    Square.apply(x).sum().backward()
    (t * t).sum().backward()
    assert_close(x.grad, t.grad)

    class TooFew(tdx.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            return x * y

        @staticmethod
        def backward(ctx, g):
            return (g,)

    y = tdx.tensor(A, device=device, requires_grad=True)
    with pytest.raises(tdx.TdxError, match="incorrect number of gradients") as err:
        TooFew.apply(x, y).sum().backward()
    assert isinstance(err.value, RuntimeError)


def test_function_saved_tensor_modified_in_place_raises(device):
    class Keep(tdx.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * x

    x = tdx.tensor(A, device=device, requires_grad=True)
    h = x * 1.0
    out = Keep.apply(h)
    with tdx.no_grad():
        h.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()


def test_function_mark_dirty(device):
    class AddOneInPlace(tdx.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.add_(1.0)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    class TAddOneInPlace(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.add_(1.0)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    x, t = both(A, device)
    h, ht = x * 2, t * 2
    out, ref = AddOneInPlace.apply(h), TAddOneInPlace.apply(ht)
    assert out is h and ref is ht
    assert_close(h, ht.detach())
    (out * out).sum().backward()
    (ref * ref).sum().backward()
    assert_close(x.grad, t.grad)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        AddOneInPlace.apply(tdx.tensor(A, device=device, requires_grad=True))


# grad / backward -----------------------------------------------------------------------------------------
def test_grad_create_graph_third_derivative(device):
    x, t = both(B, device)
    outs = []
    for mod, v in ((tdx, x), (torch, t)):
        y = (v.sin() * v ** 3).sum()
        (g1,) = mod.autograd.grad(y, v, create_graph=True)
        (g2,) = mod.autograd.grad(g1.sum(), v, create_graph=True)
        (g3,) = mod.autograd.grad((g2 * g2).sum(), v)
        outs.append((g1, g2, g3))
    for a, b in zip(*outs):
        assert_close(a.detach(), b.detach(), rtol=1e-5, atol=1e-5)  # third derivatives: several roundings deep


def test_backward_create_graph_then_grad_of_grad(device):
    x, t = both(B, device)
    res = []
    for v in (x, t):
        (v.exp() * v).sum().backward(create_graph=True)
        g = v.grad
        assert g.requires_grad
        res.append(g)
    (hx,) = tdx.autograd.grad(res[0].sum(), x)
    (ht,) = torch.autograd.grad(res[1].sum(), t)
    assert_close(hx, ht)


def test_grad_options(device):
    x, t = both(A, device)
    z, zt = both(B, device)
    y, yt = (x * 2).sum(), (t * 2).sum()
    with pytest.raises(RuntimeError, match="not have been used"):
        tdx.autograd.grad(y, [x, z], retain_graph=True)
    gx, gz = tdx.autograd.grad(y, [x, z], retain_graph=True, allow_unused=True)
    assert gz is None
    gx, gz = tdx.autograd.grad(y, [x, z], materialize_grads=True)
    tx, tz = torch.autograd.grad(yt, [t, zt], materialize_grads=True)
    assert_close(gx, tx)
    assert_close(gz, tz)
    with pytest.raises(ValueError, match="allow_unused"):
        tdx.autograd.grad((x * 2).sum(), x, allow_unused=False, materialize_grads=True)
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        tdx.autograd.grad(x * 2, x, tdx.ones(4, device=device))
    assert x.grad is None  # grad never touches .grad
    go = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    (bx,) = tdx.autograd.grad(x * x, x, tdx.tensor(go, device=device), is_grads_batched=True)
    (bt,) = torch.autograd.grad(t * t, t, torch.tensor(go), is_grads_batched=True)
    assert_close(bx, bt)


def test_backward_function_and_inputs(device):
    x, t = both(A, device)
    z, zt = both(B, device)
    tdx.autograd.backward([(x * z).sum(), (z * z).sum()], inputs=[z])
    torch.autograd.backward([(t * zt).sum(), (zt * zt).sum()], inputs=[zt])
    assert x.grad is None and t.grad is None
    assert_close(z.grad, zt.grad)
    (x * z).backward(tdx.ones(3, 4, device=device), inputs=[x])
    (t * zt).backward(torch.ones(3, 4), inputs=[t])
    assert_close(x.grad, t.grad)
    assert_close(z.grad, zt.grad)


# gradcheck -----------------------------------------------------------------------------------------------
@pytest.mark.float64
def test_gradcheck_and_gradgradcheck(device):
    x = tdx.tensor(RNG.uniform(0.5, 1.5, (2, 3)), device=device, dtype=tdx.float64, requires_grad=True)
    y = tdx.tensor(RNG.uniform(0.5, 1.5, (3,)), device=device, dtype=tdx.float64, requires_grad=True)
    f = lambda a, b: (a.sin() * b).exp() / (a + b)  # noqa: E731
    assert tdx.autograd.gradcheck(f, (x, y))
    assert tdx.autograd.gradgradcheck(f, (x, y))

    class Wrong(tdx.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a * a

        @staticmethod
        def backward(ctx, g):
            (a,) = ctx.saved_tensors
            return g * a  # should be 2 * a

    with pytest.raises(tdx.autograd.GradcheckError, match="Jacobian mismatch") as err:
        tdx.autograd.gradcheck(Wrong.apply, (x,))
    assert isinstance(err.value, RuntimeError)
    assert tdx.autograd.gradcheck(Wrong.apply, (x,), raise_exception=False) is False


# anomaly ------------------------------------------------------------------------------------------------
def test_detect_anomaly_names_the_node(device):
    x = tdx.tensor([0.0, 1.0], device=device, requires_grad=True)
    assert not tdx.autograd.anomaly.is_anomaly_enabled()
    with tdx.autograd.detect_anomaly():
        assert tdx.autograd.anomaly.is_anomaly_enabled()
        y = (x.log() * 0.0).sum()  # d/dx at 0: 0 * inf = nan
        with pytest.raises(RuntimeError, match="returned nan values") as err:
            y.backward()
        assert isinstance(err.value, tdx.TdxError)
    assert not tdx.autograd.anomaly.is_anomaly_enabled()
    x.grad = None
    (x.log() * 0.0).sum().backward()  # off: nan flows, as torch's
    t = torch.tensor([0.0, 1.0], requires_grad=True)
    (t.log() * 0.0).sum().backward()
    assert_close(x.grad, t.grad)
    tdx.autograd.set_detect_anomaly(True)
    try:
        assert tdx.autograd.anomaly.is_anomaly_enabled()
    finally:
        tdx.autograd.set_detect_anomaly(False)


# functional ----------------------------------------------------------------------------------------------
def _f(mod):
    return lambda a, b: ((a * b).sin() * a).sum(1) if a.ndim > 1 else (a * b).sin() * a


def test_functional_matches_torch(device):
    F, TF = tdx.autograd.functional, torch.autograd.functional
    a = RNG.uniform(-1, 1, (3,)).astype(np.float32)
    b = RNG.uniform(-1, 1, (3,)).astype(np.float32)
    v = RNG.uniform(-1, 1, (3,)).astype(np.float32)
    xa, xb, xv = (tdx.tensor(q, device=device) for q in (a, b, v))
    ta, tb, tv = (torch.tensor(q) for q in (a, b, v))
    f, tf = _f(tdx), _f(torch)
    for got, ref in zip(F.jacobian(f, (xa, xb)), TF.jacobian(tf, (ta, tb))):
        assert_close(got, ref)
    assert_close(F.jacobian(lambda q: q.exp() * 2, xa), TF.jacobian(lambda q: q.exp() * 2, ta))
    s, ts = (lambda p: (p.sin() * p ** 2).sum()), (lambda p: (p.sin() * p ** 2).sum())
    assert_close(F.hessian(s, xa), TF.hessian(ts, ta))
    pairs = F.hessian(lambda p, q: (p * q.exp()).sum(), (xa, xb))
    tpairs = TF.hessian(lambda p, q: (p * q.exp()).sum(), (ta, tb))
    for row, trow in zip(pairs, tpairs):
        for got, ref in zip(row, trow):
            assert_close(got, ref)
    for name in ("vjp", "jvp"):
        (o, r), (to, tr) = getattr(F, name)(lambda q: f(q, xb), xa, xv), getattr(TF, name)(lambda q: tf(q, tb), ta, tv)
        assert_close(o, to)
        assert_close(r, tr)
        assert not r.requires_grad
    for name in ("hvp", "vhp"):
        (o, r), (to, tr) = getattr(F, name)(s, xa, xv), getattr(TF, name)(ts, ta, tv)
        assert_close(o, to)
        assert_close(r, tr)
    with pytest.raises(RuntimeError, match="independent of input"):
        F.vjp(lambda p, q: p * 2, (xa, xb), xv, strict=True)
    with pytest.raises(RuntimeError, match="single element"):
        F.hessian(lambda p: p * 2, xa)


def test_public_names_share():
    names = [n for n in dir(torch.autograd) if not n.startswith("_") and callable(getattr(torch.autograd, n))]
    have = [n for n in names if callable(getattr(tdx.autograd, n, None))]
    assert len(have) / len(names) >= 0.9, sorted(set(names) - set(have))
    for n in ("jacobian", "hessian", "vjp", "jvp", "hvp", "vhp"):
        assert callable(getattr(tdx.autograd.functional, n))
    assert isinstance(tdx.zeros(1), tdx.autograd.Variable)
    with pytest.raises(RuntimeError, match="deprecated"):
        tdx.autograd.variable(1.0)


def test_graph_names(device):
    x, t = both(A, device)
    y, yt = x * 2, t * 2
    assert isinstance(y.grad_fn, tdx.autograd.graph.Node) and isinstance(yt.grad_fn, torch.autograd.graph.Node)
    edge, tedge = tdx.autograd.graph.get_gradient_edge(y), torch.autograd.graph.get_gradient_edge(yt)
    assert edge.node is y.grad_fn and edge.output_nr == tedge.output_nr == 0
    with pytest.raises(RuntimeError, match="does not require"):
        tdx.autograd.graph.get_gradient_edge(tdx.ones(2, device=device))


def test_enumerations_match_torch():
    for name in ("DeviceType", "ProfilerActivity", "ProfilerState"):
        theirs, ours = getattr(torch.autograd, name), getattr(tdx.autograd, name)
        assert {k: int(v) for k, v in theirs.__members__.items()} == {k: int(v) for k, v in ours.__members__.items()}


def test_gradient_penalty_through_one_input_ops(device):
    """The gradient-penalty idiom through a chain of one-input ops (``tanh``, ``sum``): the first
    gradient keeps a graph (its cotangents have none), and the penalty's gradient is torch's."""
    x, t = both(B, device)
    outs = []
    for mod, v in ((tdx, x), (torch, t)):
        (g,) = mod.autograd.grad(v.tanh().sum(), v, create_graph=True)
        (g * g).sum().backward()
        outs.append((g.requires_grad, g.detach(), v.grad))
    assert outs[0][0] and outs[1][0]
    for a, b in zip(outs[0][1:], outs[1][1:]):
        assert_close(a, b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("create_graph", [False, True])
def test_function_gradient_of_another_dtype_is_cast_to_the_input(device, create_graph):
    """A custom Function whose backward returns a float32 gradient for a float16 input: the engine casts
    it to the input's dtype, with or without ``create_graph``, as torch's."""
    outs = []
    for mod, dev in ((tdx, device), (torch, "cpu")):
        class Twice(mod.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return (g * 2).to(mod.float32)

        w = mod.tensor([0.5, 3.0], dtype=mod.float16, device=dev, requires_grad=True)
        (g,) = mod.autograd.grad((Twice.apply(w) * w).sum(), [w], create_graph=create_graph)
        outs.append((str(g.dtype).split(".")[-1], g.detach()))
    assert outs[0][0] == outs[1][0] == "float16"
    assert_close(outs[0][1], outs[1][1])
