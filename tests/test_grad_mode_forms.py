"""Every form of ``no_grad``/``enable_grad``/``inference_mode``/``set_grad_enabled`` (bare decorator,
called decorator, context manager, plain call, generator functions) behaves as torch's, on every device:
the decorated function returns its result, the mode inside is torch's, and the mode outside is restored."""

from __future__ import annotations

import pytest
import torch

import tdx


def _forms(m):
    """name -> (decorated function returning (grad enabled inside, x * 2 requires grad))."""

    def body(x):
        y = x * 2
        return m.is_grad_enabled(), y.requires_grad

    out = {"no_grad bare": m.no_grad(body), "no_grad()": m.no_grad()(body),
           "enable_grad bare": m.enable_grad(body), "enable_grad()": m.enable_grad()(body),
           "inference_mode bare": m.inference_mode(body), "inference_mode()": m.inference_mode()(body),
           "inference_mode(False)": m.inference_mode(False)(body),
           "set_grad_enabled(False)": m.set_grad_enabled(False)(body),
           "set_grad_enabled(True)": m.set_grad_enabled(True)(body),
           "autograd.no_grad bare": m.autograd.no_grad(body)}
    return out


@pytest.mark.parametrize("outer", [True, False])
def test_decorator_forms_match_torch(device, outer):
    xt = torch.ones(3, requires_grad=True)
    xd = tdx.ones(3, device=device, requires_grad=True)
    with torch.set_grad_enabled(outer):
        want = {k: f(xt) for k, f in _forms(torch).items()}
        assert torch.is_grad_enabled() is outer
    with tdx.set_grad_enabled(outer):
        got = {k: f(xd) for k, f in _forms(tdx).items()}
        assert tdx.is_grad_enabled() is outer
    assert got == want
    assert tdx.is_grad_enabled()


def test_set_grad_enabled_as_call_context_and_decorator(device):
    for m in (torch, tdx):
        m.set_grad_enabled(False)
        assert not m.is_grad_enabled()
        m.set_grad_enabled(True)
        with m.set_grad_enabled(False):
            assert not m.is_grad_enabled()
        assert m.is_grad_enabled()

        @m.set_grad_enabled(False)  # the decorator leaves the mode as it was at definition
        def f():
            return m.is_grad_enabled()

        assert m.is_grad_enabled() and f() is False and m.is_grad_enabled()
    with pytest.raises(TypeError):
        tdx.set_grad_enabled("no")


def test_context_managers_return_none_and_nest(device):
    x = tdx.ones(2, device=device, requires_grad=True)
    with tdx.no_grad() as a:
        with tdx.enable_grad() as b:
            assert (x * 2).requires_grad
        assert not (x * 2).requires_grad
    with torch.no_grad() as ta, torch.enable_grad() as tb:
        pass
    assert (a, b) == (ta, tb) == (None, None)
    with tdx.inference_mode():
        assert tdx.is_inference_mode_enabled() and not tdx.is_grad_enabled()
        with tdx.inference_mode(False):
            assert not tdx.is_inference_mode_enabled()
    assert not tdx.is_inference_mode_enabled() and tdx.is_grad_enabled()


@pytest.mark.parametrize("form", ["no_grad", "no_grad()", "inference_mode", "inference_mode()",
                                  "set_grad_enabled(False)", "enable_grad"])
def test_generator_functions(device, form):
    def run(m, x):
        name, called = form.rstrip("()"), form.endswith(")")
        deco = getattr(m, form.split("(")[0])
        if form.startswith("set_grad_enabled"):
            deco = m.set_grad_enabled(False)
        elif called:
            deco = deco()

        @deco
        def gen(n):
            for _ in range(n):
                sent = yield m.is_grad_enabled(), (x * 2).requires_grad
                assert sent is None
            return name

        seen = []
        g = gen(3)
        for item in g:
            seen.append((item, m.is_grad_enabled()))  # the caller's mode holds between steps
        return seen

    assert run(tdx, tdx.ones(2, device=device, requires_grad=True)) == run(torch, torch.ones(2, requires_grad=True))


def test_decorating_a_class_is_refused(device):
    with pytest.raises(RuntimeError):
        tdx.no_grad()(type("C", (), {}))


@pytest.mark.parametrize("form", ["no_grad", "inference_mode", "set_grad_enabled(False)"])
def test_grad_off_ops_skip_the_tape_and_other_threads_still_record(device, form, monkeypatch):
    """Under a grad-off mode no op consults the tape (a per-thread gate read before ``tape.wants``), the
    results are torch's, and a thread started meanwhile (grad on by default) still records."""
    import threading

    from tdx._tensor import recording as tape

    asked = []
    real = tape.wants
    monkeypatch.setattr(tape, "wants", lambda *a, **k: asked.append(1) or real(*a, **k))
    ctx = {"no_grad": lambda m: m.no_grad(), "inference_mode": lambda m: m.inference_mode(),
           "set_grad_enabled(False)": lambda m: m.set_grad_enabled(False)}[form]
    xt = torch.arange(6.0).reshape(2, 3).requires_grad_()
    xd = tdx.arange(6.0, device=device).reshape(2, 3).requires_grad_()

    def ops(x):
        return (x * 2 + x).exp().sum(1).view(2, 1).transpose(0, 1)[0]

    seen = []

    def other():
        y = ops(xd)
        seen.append((tdx.is_grad_enabled(), y.requires_grad))

    with ctx(torch):
        want = ops(xt)
    asked.clear()
    with ctx(tdx):
        got = ops(xd)
        asked_inside = len(asked)
        worker = threading.Thread(target=other)
        worker.start()
        worker.join()
    assert asked_inside == 0
    assert got.requires_grad is want.requires_grad is False
    torch.testing.assert_close(torch.from_numpy(got.cpu().numpy()), want.detach())
    assert seen == [(True, True)]
    ops(xd).sum().backward()  # recording is back after the mode ends
    xt.grad = None
    ops(xt).sum().backward()
    torch.testing.assert_close(torch.from_numpy(xd.grad.cpu().numpy()), xt.grad)
