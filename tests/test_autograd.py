"""Autograd on every executor against torch's autograd on CPU: gradients, leaf rules, grad modes,
and a small training loop that must reach torch's loss."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import tdx
from tdx.testing.parity import assert_close, tolerance


def leaves(arrays, device):
    xs = [tdx.tensor(a, device=device, requires_grad=True) for a in arrays]
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    return xs, ts


def grads_match(fn, arrays, device, rtol=1e-5, atol=1e-5):
    xs, ts = leaves(arrays, device)
    out_x, out_t = fn(tdx, *xs), fn(torch, *ts)
    assert_close(out_x, out_t, rtol=rtol, atol=atol, msg="forward")
    out_x.backward()
    out_t.backward()
    for i, (x, t) in enumerate(zip(xs, ts)):
        if t.grad is None:
            assert x.grad is None, f"input {i}: tdx has a gradient torch lacks"
        else:
            assert_close(x.grad, t.grad, rtol=rtol, atol=atol, msg=f"grad of input {i}")


RNG = np.random.default_rng(0)
A = RNG.uniform(0.5, 2.0, (3, 4)).astype(np.float32)
B = RNG.uniform(-1.0, 1.0, (4,)).astype(np.float32)
C = RNG.uniform(-1.0, 1.0, (4, 5)).astype(np.float32)

CASES = {
    "add-mul-broadcast": lambda m, a, b: ((a + b) * b - a / 2).sum(),
    "sub-div-pow": lambda m, a, b: ((a - b) ** 2 / (a + 3)).mean(),
    "rpow-rsub-rtruediv": lambda m, a, b: (2 ** b + 1 - a + 1 / a).sum(),
    "exp-log-sqrt": lambda m, a, b: (a.exp() + a.log() + a.sqrt()).sum(),
    "tanh-sigmoid-relu": lambda m, a, b: (a.tanh() * b.sigmoid() + (a * b).relu()).sum(),
    "sin-cos-abs-neg": lambda m, a, b: (m.sin(a) * m.cos(b) + (-b).abs()).sum(),
    "matmul": lambda m, a, c: (a @ c).sum(),
    "mean-std-var": lambda m, a, b: a.mean(0).sum() + a.std() + a.var(1).sum(),
    "max-min-amax": lambda m, a, b: a.max() + a.min(1).values.sum() + a.amax(0).sum(),
    "reshape-transpose-permute": lambda m, a, b: (a.reshape(4, 3).t() * a).sum() + a.permute(1, 0)[0].sum(),
    "index-slice-adv": lambda m, a, b: a[1:, ::2].sum() + a[m.tensor([0, 2]) if m is torch else
                                                            m.tensor([0, 2], device=a.device)].sum(),
    "cat-stack-split": lambda m, a, b: (m.cat([a, a * 2], 1) ** 2).sum() + m.stack([b, b]).prod()
                                       + a.split(2, 1)[1].sum(),
    "where-clamp": lambda m, a, b: m.where(a > 1, a, a * 3).sum() + a.clamp(0.8, 1.5).sum(),
    "squeeze-unsqueeze-expand-flatten": lambda m, a, b: (b.unsqueeze(0).expand(3, 4) * a).flatten().sum()
                                                        + a.unsqueeze(1).squeeze(1).sum(),
    # tensors passed by keyword (replayed by the tape the general way, not by position)
    "keyword-tensors": lambda m, a, b: (m.lerp(a, a * 2, weight=b.sigmoid()) + m.clamp(a, min=b, max=b + 1.5)
                                        + m.addcmul(a, a, b, value=0.5)).sum()
                                       + (m.cat(tensors=[a, b.expand(2, 4)], dim=0) ** 2).sum(),
    "softmax-by-hand": lambda m, a, b: ((a - a.amax(1, keepdim=True)).exp()
                                        / (a - a.amax(1, keepdim=True)).exp().sum(1, keepdim=True))[:, 0].sum(),
}


@pytest.mark.parametrize("name", list(CASES))
def test_gradients_match_torch(device, name):
    second = C if name == "matmul" else B
    grads_match(CASES[name], [A, second], device)


def test_grad_accumulates_and_retain_graph(device):
    x, t = leaves([A], device)
    for mod, v in ((tdx, x[0]), (torch, t[0])):
        y = (v * v).sum()
        y.backward(retain_graph=True)
        y.backward()
    assert_close(x[0].grad, t[0].grad)
    y = (x[0] * 2 * x[0]).sum()
    y.backward()
    with pytest.raises(tdx.TdxError, match="second time") as err:  # torch's error, typed, on every executor
        y.backward()
    assert isinstance(err.value, RuntimeError)


def test_backward_with_gradient_argument(device):
    x, t = leaves([A], device)
    gx = tdx.tensor(B, device=device).expand(3, 4) * 1.0
    (x[0] * 3).backward(gx)
    (t[0] * 3).backward(torch.tensor(B).expand(3, 4) * 1.0)
    assert_close(x[0].grad, t[0].grad)
    with pytest.raises(RuntimeError, match="scalar outputs"):
        (x[0] * 3).backward()


def test_leaf_rules_and_modes(device):
    x = tdx.tensor(A, device=device, requires_grad=True)
    y = x * 2
    assert x.is_leaf and not y.is_leaf and y.requires_grad and y.grad_fn is not None
    # torch names its nodes MulBackward0, ...; tdx's tape MulBackward: the name is a method on both
    want = torch.tensor(A, requires_grad=True).mul(2).grad_fn.name()
    for out in (y, x * 3):  # the second product's name comes from the name cache
        assert out.grad_fn.name().rstrip("0") == want.rstrip("0") == "MulBackward"
        assert out.grad_fn.name() in repr(out.grad_fn) or device == "cpu"
    with pytest.raises(RuntimeError, match="leaf Variable"):
        x += 1
    with tdx.no_grad():
        z = x * 2
        x.mul_(1.0) if hasattr(x, "mul_") else None
    assert not z.requires_grad and z.grad_fn is None
    with tdx.set_grad_enabled(False):
        assert not (x + 1).requires_grad
    with tdx.enable_grad():
        assert (x + 1).requires_grad
    with tdx.inference_mode():
        assert not (x + 1).requires_grad
    assert not x.detach().requires_grad and x.detach().tolist() == x.tolist()
    ints = tdx.tensor([1, 2], device=device)
    with pytest.raises(RuntimeError, match="floating point"):
        ints.requires_grad_()
    with pytest.raises(RuntimeError):
        y.requires_grad = False


def test_non_leaf_retain_grad_and_inplace(device):
    x, t = leaves([A], device)
    outs = []
    for mod, v in ((tdx, x[0]), (torch, t[0])):
        h = v * 2
        h.retain_grad()
        h += 1  # in-place on a non-leaf is recorded
        (h * h).sum().backward()
        outs.append((v.grad, h.grad))
    assert outs[0][1] is not None, "retain_grad() kept no gradient"
    assert_close(outs[0][0], outs[1][0])
    assert_close(outs[0][1], outs[1][1])


def test_retain_grad_accumulates_like_torch(device):
    """A retained non-leaf gradient is read and kept as one tensor until the next backward, which (torch's
    retain_grad hook) replaces it by the sum, leaving the earlier tensor as it was."""
    x, t = leaves([A], device)
    res = []
    for v in (x[0], t[0]):
        h = (v * v).sin()
        h.retain_grad()
        z = (h * 3).sum()
        assert h.grad is None
        z.backward(retain_graph=True)
        first = h.grad
        assert first is h.grad
        z.backward()
        assert h.grad is not first
        res.append((first, h.grad))
    for a, b in zip(res[0], res[1]):
        assert_close(a, b)
    assert_close(res[0][0], torch.full((3, 4), 3.0))
    assert_close(res[0][1], torch.full((3, 4), 6.0))


def test_post_accumulate_grad_hooks(device):
    """A leaf's post-accumulate-grad hook sees ``.grad`` after each accumulation, until removed; a
    non-leaf refuses one with torch's error."""
    res = []
    for m, kw in ((tdx, {"device": device}), (torch, {})):
        w = m.tensor(B, requires_grad=True, **kw)
        seen = []
        handle = w.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.clone()))
        (w * w).sum().backward()
        (w * 3).sum().backward()
        handle.remove()
        (w * 1).sum().backward()
        res.append((seen, w.grad))
        with pytest.raises(RuntimeError, match="non-leaf"):
            (w * 2).register_post_accumulate_grad_hook(lambda t: None)
    assert len(res[0][0]) == len(res[1][0]) == 2
    for a, b in zip(res[0][0] + [res[0][1]], res[1][0] + [res[1][1]]):
        assert_close(a, b, rtol=1e-6, atol=1e-6)


def test_autograd_grad_function(device):
    x, t = leaves([A, B], device)
    gx = tdx.autograd.grad(((x[0] * x[1]) ** 2).sum(), [x[0], x[1]])
    gt = torch.autograd.grad(((t[0] * t[1]) ** 2).sum(), [t[0], t[1]])
    for a, b in zip(gx, gt):
        assert_close(a, b)
    assert x[0].grad is None
    # with respect to intermediate tensors, one feeding the other
    hx, ht = x[0] * x[1], t[0] * t[1]
    kx, kt = hx.exp(), ht.exp()
    gx = tdx.autograd.grad((kx * hx).sum(), [kx, hx, x[1]])
    gt = torch.autograd.grad((kt * ht).sum(), [kt, ht, t[1]])
    for a, b in zip(gx, gt, strict=True):
        assert_close(a, b, rtol=1e-6, atol=1e-6)
    assert x[0].grad is None and x[1].grad is None
    unused = tdx.tensor(B, device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match="not have been used"):
        tdx.autograd.grad((x[0] * 2).sum(), [unused])


def test_setitem_records_on_the_tape(device):
    x, t = leaves([A], device)
    res = []
    for v in (x[0], t[0]):
        h = v * 1.0
        h[0] = h[1] * 3
        h[:, 1] = 0.0
        h.sum().backward()
        res.append(v.grad)
    assert_close(res[0], res[1])


def _train(lib, device, steps=50):
    rng = np.random.default_rng(7)
    X = rng.standard_normal((64, 8)).astype(np.float32)
    Y = (X @ rng.standard_normal((8, 1)) + 0.3).astype(np.float32)
    W1 = (rng.standard_normal((8, 16)) * 0.3).astype(np.float32)
    W2 = (rng.standard_normal((16, 1)) * 0.3).astype(np.float32)
    kw = {} if lib is torch else {"device": device}
    x, y = lib.tensor(X, **kw), lib.tensor(Y, **kw)
    params = [lib.tensor(W1, requires_grad=True, **kw), lib.zeros(16, requires_grad=True, **kw),
              lib.tensor(W2, requires_grad=True, **kw), lib.zeros(1, requires_grad=True, **kw)]
    losses = []
    for _ in range(steps):
        w1, b1, w2, b2 = params
        pred = (x @ w1 + b1).tanh() @ w2 + b2
        loss = ((pred - y) ** 2).mean()
        loss.backward()
        with lib.no_grad():
            for p in params:
                p -= 0.05 * p.grad
                p.grad = None
        losses.append(loss.item())
    return losses


def test_training_loop_matches_torch(device):
    ours, theirs = _train(tdx, device), _train(torch, None)
    assert theirs[-1] < theirs[0] * 0.5, "the task must be learnable"
    np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("op", ["add_", "mul_", "clamp_", "fill_", "tanh_"])
def test_inplace_methods_are_recorded(device, op):
    args = {"add_": (2.0,), "mul_": (3.0,), "clamp_": (0.9, 1.6), "fill_": (0.5,), "tanh_": ()}[op]
    x, t = leaves([A], device)
    res = []
    for v in (x[0], t[0]):
        h = v * 1.5
        getattr(h, op)(*args)
        (h * v).sum().backward()
        res.append(v.grad)
    assert_close(res[0], res[1])


@pytest.mark.parametrize("view", ["row", "column", "split"])
def test_inplace_through_a_view_of_a_non_leaf(device, view):
    """``h = x * 1.5; h[0].mul_(y)``: the write reaches ``h`` and the gradients reach ``x`` and ``y``, as
    torch's; a view of a multi-output function (``split``) written in place raises torch's error kind;
    a view of a leaf that requires grad refuses in-place writes."""
    def run(m, **kw):
        x = m.tensor(A, requires_grad=True, **kw)
        y = m.tensor(B[:3], requires_grad=True, **kw)
        h = x * 1.5
        v = {"row": lambda: h[0, 1:], "column": lambda: h[:, 2], "split": lambda: h.split(2, 0)[1][0, 1:]}[view]()
        try:
            v.mul_(y)
        except RuntimeError as err:
            return type(err).__mro__[-3:], None, None, None
        ((h * h).sum() + v.sum()).backward()
        return None, h.detach(), x.grad, y.grad

    got, want = run(tdx, device=device), run(torch)
    assert (got[0] is None) == (want[0] is None) == (view != "split"), (got[0], want[0])
    for g, w, what in zip(got[1:], want[1:], ("h", "x.grad", "y.grad")):
        if w is not None:
            assert_close(g, w, rtol=1e-6, atol=1e-6, msg=f"{view}: {what}")
    for m, kw in ((tdx, {"device": device}), (torch, {})):
        leaf = m.tensor(A, requires_grad=True, **kw)
        with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
            leaf[0].mul_(2.0)


# in-place ops reading memory they write: torch refuses a partial overlap at once, and at backward an op whose
# derivative saved an operand sharing the written memory (one version counter per storage: y[0].mul_(y[1]) too)
_SELF_READS = {
    "y.mul_(y.T)": lambda y, w: y.mul_(y.T), "y.mul_(y)": lambda y, w: y.mul_(y),
    "y.add_(y.T)": lambda y, w: y.add_(y.T), "y.mul_(y.t())": lambda y, w: y.mul_(y.t()),
    "y *= y": lambda y, w: y.__imul__(y), "y /= y": lambda y, w: y.__itruediv__(y),
    "y %= y": lambda y, w: y.__imod__(y), "y.div_(y)": lambda y, w: y.div_(y), "y.pow_(y)": lambda y, w: y.pow_(y),
    "y.mul_(y.detach())": lambda y, w: y.mul_(y.detach()), "y[0].mul_(y[1])": lambda y, w: y[0].mul_(y[1]),
    "y.addcmul_(y, y)": lambda y, w: y.addcmul_(y, y), "y.addcdiv_(w, y)": lambda y, w: y.addcdiv_(w, y),
    "y.clamp_(min=y)": lambda y, w: y.clamp_(min=y), "y.lerp_(w, y)": lambda y, w: y.lerp_(w, y),
    "y.lerp_(w, weight=y)": lambda y, w: y.lerp_(w, weight=y),
    "y.addmm_(w, y)": lambda y, w: y.addmm_(w, y), "y.atan2_(y)": lambda y, w: y.atan2_(y),
    # nothing saved, or nothing shared: torch differentiates them
    "y.add_(y)": lambda y, w: y.add_(y), "y.sub_(y)": lambda y, w: y.sub_(y), "y += y": lambda y, w: y.__iadd__(y),
    "y.copy_(y)": lambda y, w: y.copy_(y), "y.lerp_(y, 0.5)": lambda y, w: y.lerp_(y, 0.5),
    "y.mul_(w)": lambda y, w: y.mul_(w), "y[0] = y[1]": lambda y, w: y.__setitem__(0, y[1]),
    "y.masked_fill_(y > 2, y[0, 0])": lambda y, w: y.masked_fill_(y > 2, y[0, 0]),
    "y.index_fill_(0, [1], y[0, 0])": lambda y, w: y.index_fill_(0, tdx.tensor([1], device=y.device) if
                                                               isinstance(y, tdx.Tensor) else torch.tensor([1]), y[0, 0]),
}


@pytest.mark.parametrize("case", list(_SELF_READS))
def test_inplace_op_reading_the_memory_it_writes(device, case):
    """``y.mul_(y)`` raises torch's "modified by an inplace operation" RuntimeError at backward, ``y.mul_(y.T)``
    torch's overlap error at once, and ``y.add_(y)`` differentiates: where and what torch raises, on every device."""
    def run(m, **kw):
        leaf = m.tensor(A[:3, :3] + 1, requires_grad=True, **kw)
        wleaf = m.tensor(A[:3, 1:], requires_grad=True, **kw)
        y, w = leaf * 1, wleaf * 1
        try:
            _SELF_READS[case](y, w)
        except RuntimeError as err:
            return "forward", err
        try:
            (y.sum() + w.sum()).backward()
        except RuntimeError as err:
            return "backward", err
        return y.detach(), leaf.grad, wleaf.grad

    got, want = run(tdx, device=device), run(torch)
    if isinstance(want[1], RuntimeError):
        assert got[0] == want[0], f"{case}: torch raises in {want[0]}, tdx {got}"
        assert isinstance(got[1], tdx.TdxError) and isinstance(got[1], RuntimeError), repr(got[1])
        words = "modified by an inplace operation" if want[0] == "backward" else "refer to a single memory location"
        assert words in str(want[1]) and words in str(got[1]), (str(want[1]), str(got[1]))
        return
    assert not isinstance(got[1], BaseException), f"{case}: tdx raises {got[1]!r} where torch does not"
    for g, t, what in zip(got, want, ("y", "leaf.grad", "w.grad")):
        assert_close(g, t, rtol=1e-5, atol=1e-5, msg=f"{case}: {what}")


def test_dropout_gradient_is_its_mask(device):
    """Dropout's gradient is the kept mask scaled by 1/(1-p) (its mask is no input), checked with torch fed the
    same mask; it keeps about 1-p of the elements (4 sigma), and on cpu draws torch's own mask for a seed."""
    import tdx.nn.functional as F

    n, p = 4000, 0.25
    tdx.manual_seed(7)
    x = tdx.ones(n, device=device, requires_grad=True)
    y = F.dropout(x * 1.5, p)
    y.sum().backward()
    kept = y.detach().numpy(force=True) != 0
    sigma = (n * p * (1 - p)) ** 0.5
    assert abs(kept.sum() - n * (1 - p)) < 4 * sigma, f"kept {kept.sum()} of {n}"
    t = torch.ones(n, requires_grad=True)
    yt = t * 1.5 * torch.tensor(kept) / (1 - p)
    yt.sum().backward()
    assert_close(y, yt.detach())
    assert_close(x.grad, t.grad)
    if device == "cpu":
        torch.manual_seed(7)
        assert np.array_equal(kept, torch.nn.functional.dropout(torch.ones(n), p).numpy() != 0)


def test_tensor_passed_by_keyword_gets_its_gradient(device):
    """An input given as a keyword next to other keywords (``other=y, alpha=2``) is differentiated."""
    x = tdx.tensor(A, device=device, requires_grad=True)
    y = tdx.tensor(A, device=device, requires_grad=True)
    tx, ty = torch.tensor(A, requires_grad=True), torch.tensor(A, requires_grad=True)
    (tdx.add(x, other=y, alpha=2.5) * x.addcmul(x, tensor2=y, value=0.5)).sum().backward()
    (torch.add(tx, other=ty, alpha=2.5) * tx.addcmul(tx, tensor2=ty, value=0.5)).sum().backward()
    assert_close(x.grad, tx.grad)
    assert_close(y.grad, ty.grad)
    c, tc = tdx.tensor(A, device=device), torch.tensor(A)  # a list by keyword, one member without grad
    (tdx.cat(tensors=[y, c], dim=0) ** 2).sum().backward()
    (torch.cat(tensors=[ty, tc], dim=0) ** 2).sum().backward()
    assert_close(y.grad, ty.grad)


def test_hooks_retained_grads_and_post_accumulate_hooks(device):
    """A non-leaf hook that returns a new gradient, a leaf hook, a retained non-leaf grad summed over two
    backward passes, and post-accumulate hooks on leaves: as torch's."""
    def run(lib, **kw):
        x = lib.tensor(A, requires_grad=True, **kw)
        fired = []
        h = x * 2
        h.retain_grad()
        h.register_hook(lambda g: g * 3)
        x.register_hook(lambda g: g + 1)
        x.register_post_accumulate_grad_hook(lambda p: fired.append(p.grad.sum().item()))
        loss = (h * h).sum()
        loss.backward(retain_graph=True)
        loss.backward()
        return x.grad, h.grad, fired

    gx, gh, fired = run(tdx, device=device)
    tx, th, tfired = run(torch)
    assert_close(gx, tx)
    assert_close(gh, th)
    np.testing.assert_allclose(fired, tfired, rtol=1e-6)
    with pytest.raises(RuntimeError, match="size"):  # a hook may not change the gradient's shape
        x = tdx.tensor(A, device=device, requires_grad=True)
        h = x * 2
        h.register_hook(lambda g: g[0])
        h.sum().backward()


def test_inplace_write_through_view_of_history_free_root(device):
    """``v = root[1:3]; v.add_(w * 2)``: the root shows the write and its gradient reaches ``w``."""
    def run(lib, **kw):
        root = lib.zeros(4, **kw)
        w = lib.ones(2, requires_grad=True, **kw)
        v = root[1:3]
        v.add_(w * 2)
        (root * lib.arange(4.0, **kw)).sum().backward()
        return root.detach(), w.grad

    r, g = run(tdx, device=device)
    tr, tg = run(torch)
    assert_close(r, tr)
    assert_close(g, tg)


def test_view_of_multi_view_function_after_base_write(device):
    """One of several views (``split``) used after its base was written in place: torch's error."""
    x = tdx.tensor(A, device=device, requires_grad=True)
    b = x * 1
    a1, _ = b.split(2)
    b.mul_(2)
    with pytest.raises(RuntimeError, match="its base or another view of its base has been modified inplace"):
        (a1 * 1).sum().backward()


def test_inplace_write_through_view_of_dropped_root(device):
    """A view whose root was never named (``zeros(4)[1:3]``) written with a gradient input, then viewed
    again: the new view sees the write, and the gradient reaches ``w``."""
    def run(lib, **kw):
        w = lib.ones(2, requires_grad=True, **kw)
        v = lib.zeros(4, **kw)[1:3]
        v.add_(w * 2)
        u = v[1:]
        again = v.view(2, 1)
        (u * 3).sum().backward(retain_graph=True)
        return v.detach(), u.detach(), again.detach(), w.grad

    for got, want in zip(run(tdx, device=device), run(torch)):
        assert_close(got, want)


def test_write_through_detach_after_a_recorded_write_of_its_base(device):
    """``d = h.detach()``, then ``h.mul_(2)`` (recorded), then a write through ``d``: all three writes
    are in the shared values, and the gradient is torch's (the logging/EMA idiom of a detached alias)."""
    def run(lib, **kw):
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True, **kw)
        h = x * 1
        d = h.detach()
        h.mul_(2)
        d[1:].add_(0.5)  # a write through part of the family: the rest must be h's new values
        d[-1] = 100.0
        (h * x).sum().backward()
        return h.detach(), d, x.grad

    for got, want in zip(run(tdx, device=device), run(torch)):
        assert_close(got, want)


def test_only_retained_non_leaves_get_a_grad(device):
    """After ``backward()`` a non-leaf has ``.grad`` only when ``retain_grad()`` asked for it, as torch's."""
    def run(lib, **kw):
        x = lib.tensor(A, requires_grad=True, **kw)
        h = x * 2
        h.retain_grad()
        k = h.sin()
        j = h.cos()
        j.register_hook(lambda g: g * 2)  # a hook, but no retain_grad()
        (k * k + j).sum().backward()
        with warnings.catch_warnings():  # torch warns when the .grad of a non-leaf is read
            warnings.simplefilter("ignore")
            return x.grad, h.grad, k.grad, j.grad

    got, want = run(tdx, device=device), run(torch)
    assert want[2:] == (None, None) and got[2:] == (None, None)
    assert_close(got[0], want[0])
    assert_close(got[1], want[1])


@pytest.mark.float64
def test_new_tensors_of_a_tensor_with_history_have_none(device):
    """``h.new_zeros``/``new_ones``/``new_full``/``new_empty``/``new_tensor`` and ``torch.tensor(h)`` of a
    tensor with a history are new leaves without it (requiring grad only when asked), on ``h``'s device
    unless another is given; ``h.cpu()`` keeps the gradient flowing, as torch's."""
    def run(mod, **kw):
        x = mod.tensor(A, requires_grad=True, **kw)
        h = x * 2
        with warnings.catch_warnings():  # torch warns that tensor(h) had better be h.detach().clone()
            warnings.simplefilter("ignore")
            made = [h.new_zeros(2, 3), h.new_ones(2), h.new_full((2,), 1.5), h.new_empty(0), h.new_tensor([1., 2.]),
                    h.new_tensor(h), mod.tensor(h), mod.tensor(x, requires_grad=True),
                    mod.tensor(h, dtype=mod.float64), h.new_zeros(2, device="cpu")]
        flags = [(m.requires_grad, m.is_leaf, str(m.dtype).split(".")[-1]) for m in made]
        where = [m.device == h.device for m in made[:-1]] + [made[-1].device.type == "cpu"]
        made[6].add_(1)  # a copy: h keeps its values
        (h.cpu() * h.cpu()).sum().backward()
        return flags, where, h, x.grad

    got, want = run(tdx, device=device), run(torch)
    assert got[:2] == want[:2]
    assert_close(got[2], want[2])
    assert_close(got[3], want[3])


def test_tape_refuses_a_recorded_op_whose_result_changes_executor(device):
    """The tape's guard for what it cannot differentiate: a recorded op whose result lands on another
    executor (a move is differentiable only as ``to()``/``cpu()``) is refused, naming where from."""
    from tdx._tensor import recording as tape

    x = tdx.tensor(A, device=device, requires_grad=True)
    if x._ex.caps.native_autograd:
        pytest.skip("torch executors record their own autograd")
    h = x * 2
    with pytest.raises(tdx.UnsupportedOpError, match=f"from {device} to another executor"):
        tape.call(lambda t: t.detach().to("cpu"), h)
    with pytest.raises(tdx.UnsupportedOpError, match=f"from {device} to another executor"):
        tape.call(lambda t: (t * 1, t.detach().to("cpu")), h)  # one of several outputs
    assert_close((h * 1).cpu(), torch.tensor(A) * 2)  # the tape is still usable


def test_write_through_a_view_of_a_tensor_with_a_detached_alias(device):
    """``d = h.detach()`` (a logging alias), then a recorded write through a view of ``h``: ``h``, ``d``
    and the view all show it, and the gradient is torch's."""
    def run(lib, **kw):
        x = lib.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True, **kw)
        h = x * 2
        d = h.detach()
        v = h[1:3]
        v.mul_(x[:2])
        (h * h).sum().backward()
        return h.tolist(), d.tolist(), v.tolist(), x.grad

    got, want = run(tdx, device=device), run(torch)
    assert got[:3] == want[:3]
    assert_close(got[3], want[3])


def test_grad_of_the_output_itself_among_the_inputs(device):
    """``autograd.grad(out, [out, x])`` and ``out.backward(inputs=[out, x])``: the output's own gradient
    is the given one, as torch's."""
    def run(lib, **kw):
        x = lib.tensor(A, requires_grad=True, **kw)
        out = (x * x).sin().sum()
        g_out, g_x = lib.autograd.grad(out, [out, x], retain_graph=True)
        y = x * 3
        y.backward(lib.ones_like(y) * 2, inputs=[y, x])
        return g_out, g_x, y.grad, x.grad

    for got, want in zip(run(tdx, device=device), run(torch)):
        assert_close(got, want)


@pytest.mark.parametrize("create_graph", [False, True])
def test_a_leaf_frozen_after_the_forward_takes_no_gradient(device, create_graph):
    """``requires_grad_(False)`` on a leaf between the forward and the backward (freezing one network
    of a GAN for the other's step): it gets no ``.grad``, the other leaves get theirs, as torch's."""
    def run(lib, **kw):
        x = lib.tensor([0.5, 1.0, 2.0], requires_grad=True, **kw)
        w = lib.tensor([3.0, 4.0, 5.0], requires_grad=True, **kw)
        y = x.sin()  # a node whose only input is frozen below
        z = (y * w).sum()
        x.requires_grad_(False)
        with warnings.catch_warnings():  # torch warns that backward(create_graph=True) makes a cycle
            warnings.simplefilter("ignore")
            y.backward(lib.ones_like(y), create_graph=create_graph, retain_graph=True)
            z.backward(create_graph=create_graph)
        return x.grad, w.grad.detach()

    got, want = run(tdx, device=device), run(torch)
    assert want[0] is None and got[0] is None
    assert_close(got[1], want[1])


COMPLEX_LOSSES = {  # name -> loss(lib, a, b) of two real leaves, through complex intermediates
    "abs of complex": lambda t, a, b: t.complex(a, b).abs().sum(),
    "product with conj": lambda t, a, b: (t.complex(a, b) * t.complex(b, a).conj()).real.sum(),
    "imag of a square": lambda t, a, b: (t.complex(a, b) ** 2).imag.sum(),
    "exp": lambda t, a, b: t.complex(a, b).exp().real.sum(),
    "angle": lambda t, a, b: t.complex(a, b).angle().sum(),
    "matmul": lambda t, a, b: (t.complex(a, b).reshape(2, 3) @ t.complex(b, -a).reshape(3, 2)).abs().sum(),
    "view_as_real": lambda t, a, b: (t.view_as_real(t.complex(a, b) * (1 + 2j)) ** 2).sum(),
    "division": lambda t, a, b: (t.complex(a, b) / t.complex(b + 3, a)).imag.sum(),
    "polar": lambda t, a, b: t.polar(a.abs() + 0.5, b).real.sum(),
    "sum then abs": lambda t, a, b: t.complex(a, b).sum().abs(),
    "complex power": lambda t, a, b: (t.complex(a, b) ** 2.5).real.sum() + (t.complex(a, b) ** 3).abs().sum(),
    "complex exponent": lambda t, a, b: (t.complex(a, b) ** (t.complex(b, a) * 0.5)).imag.sum() + (
        2 ** t.complex(a, b)).imag.sum(),
}


@pytest.mark.parametrize("name", sorted(COMPLEX_LOSSES))
def test_complex_autograd_matches_torch(device, name):
    loss = COMPLEX_LOSSES[name]
    rng = np.random.default_rng(3)
    va, vb = (rng.uniform(-2, 2, 6).astype(np.float32) for _ in range(2))
    a, b = (tdx.tensor(v, device=device, requires_grad=True) for v in (va, vb))
    ta, tb = (torch.tensor(v, requires_grad=True) for v in (va, vb))
    got, expected = loss(tdx, a, b), loss(torch, ta, tb)
    got.backward()
    expected.backward()
    rtol, atol = tolerance(tdx.float32, "gradient")
    assert_close(got, expected.detach(), rtol=rtol, atol=atol)
    assert_close(a.grad, ta.grad, rtol=rtol, atol=atol, msg=f"{name}: d/da")
    assert_close(b.grad, tb.grad, rtol=rtol, atol=atol, msg=f"{name}: d/db")
