"""``tdx.utils.checkpoint`` (torch.utils.checkpoint) on every device: the same gradients as without
it and as torch's, the random state preserved for the recomputation, both variants' rules, torch's
warnings, bad arguments as typed errors, and (on MLX) the block's intermediates not kept."""

from __future__ import annotations

import contextlib
import gc
import warnings
import weakref

import numpy as np
import pytest
import torch
import torch.utils.checkpoint as tck

import tdx
from tdx.testing.parity import assert_close, tolerance
from tdx.utils.checkpoint import checkpoint, checkpoint_sequential

from conftest import check

TOL = dict(zip(("rtol", "atol"), tolerance(tdx.float32, "gradient")))


def _stack(nn, dropout):
    return nn.Sequential(*[nn.Sequential(nn.Linear(6, 6), nn.Tanh(), nn.Dropout(dropout)) for _ in range(4)])


def _pair(device, dropout=0.0):
    torch.manual_seed(0)
    tmodel = _stack(torch.nn, dropout)
    model = _stack(tdx.nn, dropout).to(device)
    model.load_state_dict({k: tdx.tensor(v.numpy(), device=device) for k, v in tmodel.state_dict().items()})
    a = np.random.default_rng(0).standard_normal((3, 6)).astype(np.float32)
    return model, tmodel, tdx.tensor(a, device=device, requires_grad=True), torch.tensor(a, requires_grad=True)


def _run(lib, model, x, mode, preserve=True, seed=1):
    for p in model.parameters():
        p.grad = None
    x.grad = None
    lib.manual_seed(seed)
    ck = tdx.utils.checkpoint if lib is tdx else tck
    if mode == "plain":
        y = model(x)
    elif mode == "sequential":
        y = ck.checkpoint_sequential(model, 2, x, use_reentrant=False, preserve_rng_state=preserve)
    else:
        y = x
        for block in model:
            y = ck.checkpoint(block, y, use_reentrant=mode == "reentrant", preserve_rng_state=preserve)
    (y * y).sum().backward()
    return [y.detach(), x.grad.clone(), *[p.grad.clone() for p in model.parameters()]]


@pytest.mark.parametrize("mode", ["reentrant", "non-reentrant", "sequential"])
def test_same_gradients_as_without_checkpoint(device, mode):
    model, tmodel, x, tx = _pair(device)
    for got, exp, plain in zip(_run(tdx, model, x, mode), _run(torch, tmodel, tx, mode), _run(tdx, model, x, "plain")):
        assert_close(got, exp, **TOL)
        assert_close(got, plain, rtol=0, atol=0)


@pytest.mark.parametrize("mode", ["reentrant", "non-reentrant", "sequential"])
def test_dropout_mask_is_the_same_in_recomputation(device, mode):
    model, _, x, _ = _pair(device, dropout=0.5)
    plain = _run(tdx, model, x, "plain")
    for got, exp in zip(_run(tdx, model, x, mode), plain):
        assert_close(got, exp, rtol=0, atol=0)
    # without the state preserved the recomputation draws another mask: the gradients change
    unpreserved = _run(tdx, model, x, mode, preserve=False)
    assert any(not bool((a == b).all()) for a, b in zip(unpreserved[1:], plain[1:]))


def test_non_reentrant_works_with_autograd_grad_and_kwargs(device):
    model, tmodel, x, tx = _pair(device)
    block, tblock = model[0], tmodel[0]

    def f(m, a, *, scale):
        return m(a) * scale

    y = checkpoint(f, block, x, scale=2.0, use_reentrant=False)
    ty = tck.checkpoint(f, tblock, tx, scale=2.0, use_reentrant=False)
    got = tdx.autograd.grad(y.sum(), [x, block[0].weight])
    exp = torch.autograd.grad(ty.sum(), [tx, tblock[0].weight])
    for g, e in zip(got, exp):
        assert_close(g, e, **TOL)
    # the reentrant variant refuses autograd.grad, as torch's
    y = checkpoint(block, x, use_reentrant=True)
    with pytest.raises(RuntimeError, match="use_reentrant=True, torch.utils.checkpoint is incompatible") as info:
        tdx.autograd.grad(y.sum(), [x])
    assert isinstance(info.value, tdx.TdxError)


def test_context_fn_wraps_forward_and_recomputation(device):
    model, _, x, _ = _pair(device)
    seen = []

    @contextlib.contextmanager
    def mark(name):
        seen.append(name)
        yield

    y = checkpoint(model[0], x, use_reentrant=False, context_fn=lambda: (mark("forward"), mark("recompute")))
    assert seen == ["forward"]
    y.sum().backward()
    assert seen == ["forward", "recompute"]


def test_warnings_as_torch(device):
    model, _, x, _ = _pair(device)
    with pytest.warns(UserWarning, match="use_reentrant parameter should be passed explicitly"):
        checkpoint(model[0], x)
    with pytest.warns(UserWarning, match="checkpoint_sequential: the use_reentrant parameter"):
        checkpoint_sequential(model, 2, x)
    with pytest.warns(UserWarning, match="None of the inputs have requires_grad=True"):
        y = checkpoint(model[0], x.detach(), use_reentrant=True)
    assert not y.requires_grad  # as torch's: no input requires grad, so no gradients
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y = checkpoint(model[0], x.detach(), use_reentrant=False)
    assert y.requires_grad  # the parameters inside still get theirs


def test_bad_arguments_are_typed_errors(device):
    model, tmodel, x, tx = _pair(device)
    cases = {
        "kwargs with reentrant": lambda ck, m, a: ck.checkpoint(m, a, use_reentrant=True, extra=1),
        "context_fn with reentrant": lambda ck, m, a: ck.checkpoint(m, a, use_reentrant=True,
                                                                     context_fn=lambda: (None, None)),
        "debug with reentrant": lambda ck, m, a: ck.checkpoint(m, a, use_reentrant=True, debug=True),
        "bad determinism_check": lambda ck, m, a: ck.checkpoint(m, a, use_reentrant=False, determinism_check="x"),
        "sequential kwargs": lambda ck, m, a: ck.checkpoint_sequential(m, 2, a, use_reentrant=False, extra=1),
    }
    for name, case in cases.items():
        check(lambda: case(tdx.utils.checkpoint, model[0] if "sequential" not in name else model, x),
              lambda: case(tck, tmodel[0] if "sequential" not in name else tmodel, tx), msg=name)


def test_checkpoint_keeps_no_intermediate_on_the_tape(device):
    model, _, x, _ = _pair(device)
    if not x._ex.taped:
        pytest.skip("torch executors keep what torch's own checkpoint keeps")
    refs = []

    def block(a):
        h = model[0][0](a)
        refs.append(weakref.ref(h))
        return model[0][1](h)

    y = checkpoint(block, x, use_reentrant=False)
    gc.collect()
    assert refs[0]() is None
    z = block(x)
    gc.collect()
    assert refs[1]() is not None  # the plain run's tape holds it
    (y.sum() + z.sum()).backward()


def test_early_stop_switch_keeps_gradients(device):
    from tdx.utils.checkpoint import set_checkpoint_early_stop

    model, _, x, _ = _pair(device)
    plain = _run(tdx, model, x, "plain")
    with set_checkpoint_early_stop(False):
        got = _run(tdx, model, x, "non-reentrant")
    for g, e in zip(got, plain):
        assert_close(g, e, rtol=0, atol=0)


def test_nested_outputs_and_double_backward(device):
    a = np.random.default_rng(1).standard_normal(4).astype(np.float32)
    x, tx = tdx.tensor(a, device=device, requires_grad=True), torch.tensor(a, requires_grad=True)
    w, tw = (tdx.tensor(a[::-1].copy(), device=device, requires_grad=True),
             torch.tensor(a[::-1].copy(), requires_grad=True))

    def block(t, ww):
        return {"y": (t * ww).sin(), "n": 3, "z": (t.exp() * ww).sum()}

    grads = []
    for ck, xx, ww in ((tdx.utils.checkpoint, x, w), (tck, tx, tw)):
        out = ck.checkpoint(lambda t: block(t, ww), xx, use_reentrant=False)
        assert out["n"] == 3
        g, = (tdx if ck is not tck else torch).autograd.grad(out["y"].sum() + out["z"], xx, create_graph=True)
        g.sum().backward()
        grads.append((g.detach(), xx.grad, ww.grad))
    for got, exp in zip(*grads):
        assert_close(got, exp, **TOL)
