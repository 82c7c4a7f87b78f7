"""Memory held by tdx against torch: what detach() and a finished backward let go, and what MLX-only
work imports. Values are compared with torch on CPU; liveness is checked with weak references."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import weakref

import pytest
import torch

import tdx
from conftest import check, shared_reference, skip_value_checked


def _loss(mod, x, w, b):
    return mod.nn.functional.linear(x, w, b).square().mean()


def _inputs(mod, **kw):
    g = torch.Generator().manual_seed(0)
    x, w, b = (torch.randn(*s, generator=g, dtype=torch.float32) for s in ((4, 8), (6, 8), (6,)))
    if mod is torch:
        return x, w.requires_grad_(True), b.requires_grad_(True)
    return (tdx.tensor(x.numpy(), **kw), tdx.tensor(w.numpy(), **kw).requires_grad_(True),
            tdx.tensor(b.numpy(), **kw).requires_grad_(True))


@pytest.mark.parametrize("backward", [False, True])
def test_detached_loss_lets_the_graph_go(device, backward):
    """``kept = loss.detach(); del loss`` frees loss and its graph node (issue 15's reproducer)."""
    x, w, b = _inputs(tdx, device=device)
    loss = _loss(tdx, x, w, b)
    if backward:
        loss.backward()
    dead = [weakref.ref(loss)]
    if not device.startswith(("cpu", "cuda", "mps")):  # tape nodes (torch's C++ nodes take no weak reference)
        dead.append(weakref.ref(loss.grad_fn))
    kept = loss.detach()
    del loss
    gc.collect()
    assert [r() for r in dead] == [None] * len(dead)
    assert kept.grad_fn is None and not kept.requires_grad
    ref = _loss(torch, *_inputs(torch)).detach()
    torch.testing.assert_close(torch.tensor(kept.numpy(force=True)), ref, rtol=1.3e-6, atol=0)


def _aliasing(mod, **kw):
    """Writes through a detached tensor, its source (a non-leaf with history) and a view made earlier."""
    x = mod.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], **kw).requires_grad_(True)
    y = x * 2  # a recorded history
    early = y[1]  # a view of y made before detach
    k = y.detach()
    late = k[:, 1]  # a view of the detached tensor
    k.add_(10)
    with mod.no_grad():
        y.mul_(-1)
    late.sub_(0.5)
    early_val, y_val = early.detach().clone(), y.detach().clone()
    del y, early
    gc.collect()
    k[0, 0] = 100.0
    return k, late, early_val, y_val


def test_detach_still_aliases_every_way(device):
    """torch's detach shares the values: writes through either, or through any view, are seen by all."""
    check(lambda: _aliasing(tdx, device=device), lambda: _aliasing(torch))


def _history_through_detached_family(mod, through, **kw):
    x = mod.tensor([[1.0, -2.0, 3.0], [0.5, 5.0, -6.0]], **kw).requires_grad_(True)
    c = mod.tensor([0.25, -1.5, 2.0], **kw).requires_grad_(True)
    y = x * x  # non-leaf
    v = y[1]  # made before detach
    k = y.detach()
    if through == "base":
        y.mul_(c)  # recorded in place on the source of a detached tensor
    else:
        v.mul_(c)  # recorded in place on a view of it
    (y * y).sum().backward(retain_graph=True)
    (v.sum() * 3).backward()
    return y.detach(), v.detach(), k, x.grad, c.grad


@pytest.mark.parametrize("through", ["base", "view"])
def test_recorded_writes_after_detach_keep_torch_gradients(device, through):
    """In-place ops recorded on a detached tensor's source (or a view of it) differentiate as torch's."""
    check(lambda: _history_through_detached_family(tdx, through, device=device),
          lambda: _history_through_detached_family(torch, through), rtol=1.3e-6, atol=1e-5)


def test_backward_frees_the_views_it_recorded(device):
    """Views taken for the forward (``w.t()``, ``b.expand``) die with the backward that used them."""
    x, w, b = _inputs(tdx, device=device)
    wt, be = w.t(), b.expand(4, 6)
    refs = [weakref.ref(wt), weakref.ref(be)]
    out = ((x @ wt + be) ** 2).sum() + _loss(tdx, x, w, b)
    del wt, be
    out.backward()
    gc.collect()
    assert [r() for r in refs] == [None, None]
    if not device.startswith(("cpu", "cuda", "mps")):
        from tdx._tensor import views

        assert views.family(w) == [] and views.family(b) == []
    tw, tb = _inputs(torch)[1:]
    tx = _inputs(torch)[0]
    (((tx @ tw.t() + tb.expand(4, 6)) ** 2).sum() + _loss(torch, tx, tw, tb)).backward()
    torch.testing.assert_close(torch.tensor(w.grad.numpy(force=True)), tw.grad, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(torch.tensor(b.grad.numpy(force=True)), tb.grad, rtol=1e-5, atol=1e-5)


def test_retained_graph_keeps_its_views(device):
    """With ``retain_graph=True`` a second backward still works, as torch's."""
    x, w, b = _inputs(tdx, device=device)
    out = (x @ w.t() + b.expand(4, 6)).square().sum()
    out.backward(retain_graph=True)
    out.backward()
    tx, tw, tb = _inputs(torch)
    t = (tx @ tw.t() + tb.expand(4, 6)).square().sum()
    t.backward(retain_graph=True)
    t.backward()
    torch.testing.assert_close(torch.tensor(w.grad.numpy(force=True)), tw.grad, rtol=1e-5, atol=1e-5)


def test_optimizer_step_builds_no_index_maps():
    """After a backward, an optimizer's in-place writes on MLX refresh no view through an index map."""
    pytest.importorskip("mlx.core")
    from tdx._tensor import views

    x, w, b = _inputs(tdx, device="mlx:cpu")
    opt = tdx.optim.AdamW([w, b], lr=1e-2)
    calls = []
    real = views.Layout.index_map

    def counting(self):
        calls.append(self.shape)
        return real(self)

    for _ in range(2):
        opt.zero_grad()
        _loss(tdx, x, w, b).backward()
        views.Layout.index_map = counting
        try:
            opt.step()
        finally:
            views.Layout.index_map = real
    assert calls == []
    tx, tw, tb = _inputs(torch)
    topt = torch.optim.AdamW([tw, tb], lr=1e-2)
    for _ in range(2):
        topt.zero_grad()
        _loss(torch, tx, tw, tb).backward()
        topt.step()
    torch.testing.assert_close(torch.from_numpy(w.detach().numpy()), tw.detach(), rtol=1e-5, atol=1e-6)


_MLX_ONLY = """
import sys, tdx
import tdx.nn as nn, tdx.nn.functional as F
tdx.manual_seed(0)
{setup}
m = nn.Sequential(nn.Linear(8, 16, device={dev}), nn.GELU(), nn.LayerNorm(16, device={dev}), nn.Linear(16, 4, device={dev}))
opt = tdx.optim.AdamW(m.parameters(), lr=1e-3)
x = tdx.randn(5, 8, device={dev})
for _ in range(2):
    opt.zero_grad()
    loss = F.cross_entropy(m(x), tdx.tensor([0, 1, 2, 3, 0], device={dev}))
    loss.backward()
    opt.step()
q = tdx.randn(1, 2, 16, 4, device={dev}, requires_grad=True)
F.scaled_dot_product_attention(q, q, q, is_causal=True).sum().backward()
kept = loss.detach()
tdx.backends.mlx  # the MLX flags module
print(sorted(n for n in ("torch", "torch.nn", "torch.cuda") if n in sys.modules))
"""


@pytest.mark.parametrize("setup", ["dev = 'mlx:cpu'", "tdx.set_default_device('mlx:cpu'); dev = None",
                                   "dev = 'mlx'"])
def test_mlx_only_training_imports_no_torch(setup):
    """ones, nn, ops, backward, an optimizer step and attention on MLX import no torch (about 200 MB) under
    MLX's own random stream; the default torch stream draws MLX's random numbers with torch's generator."""
    pytest.importorskip("mlx.core")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), TDX_RANDOM_STREAM="native")
    for var in ("TDX_DEVICE", "TDX_CONFIG"):  # the default device is the built-in "auto"
        env.pop(var, None)
    code = _MLX_ONLY.format(setup=setup, dev="dev")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "[]"


def _ce(mod, x, t, reduction, ignore_index, **kw):
    xt = mod.tensor(x, **kw).requires_grad_(True)
    loss = mod.nn.functional.cross_entropy(xt, mod.tensor(t, **kw), reduction=reduction, ignore_index=ignore_index)
    (loss.sum() * 1.5).backward()
    return loss.detach(), xt.grad


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("ignore", ["none", "some", "all"])
def test_cross_entropy_rows(device, reduction, ignore):
    """cross_entropy of (N, C) float32 logits and class indices (MLX's fused node) matches torch,
    gradient and ignore_index included (the mean over no counted target is NaN)."""
    import numpy as np

    rng = np.random.default_rng(3)
    x = rng.standard_normal((6, 5)).astype(np.float32) * 3
    t = rng.integers(0, 5, 6)
    if ignore == "some":
        t[[1, 4]] = -100
    elif ignore == "all":
        t[:] = 2
    ii = 2 if ignore == "all" else -100
    check(lambda: _ce(tdx, x, t, reduction, ii, device=device), lambda: _ce(torch, x, t, reduction, ii),
          rtol=2e-6, atol=1e-7, equal_nan=True)


def test_cross_entropy_rows_bad_target(device):
    """A target out of range raises torch's IndexError on the fused path too."""
    skip_value_checked(device, "class targets")
    check(lambda: tdx.nn.functional.cross_entropy(tdx.zeros(3, 4, device=device), tdx.tensor([0, 4, 1], device=device)),
          lambda: torch.nn.functional.cross_entropy(torch.zeros(3, 4), torch.tensor([0, 4, 1])))


def test_cross_entropy_backward_holds_no_log_probabilities():
    """On MLX, cross_entropy's forward + backward peaks at about two logits' worth of memory above the
    logits (the gradient and one softmax), as native MLX code; the composed form held six."""
    mx = pytest.importorskip("mlx.core")
    import numpy as np

    rng = np.random.default_rng(0)
    x = tdx.tensor(rng.standard_normal((256, 512)).astype(np.float32), device="mlx:cpu", requires_grad=True)
    t = tdx.tensor(rng.integers(0, 512, 256), device="mlx:cpu")
    mx.eval(x._n, t._n)
    mx.clear_cache()
    mx.reset_peak_memory()
    base = mx.get_active_memory()
    tdx.nn.functional.cross_entropy(x, t).backward()
    mx.eval(x.grad._n)
    assert (mx.get_peak_memory() - base) / x.numel() / 4 < 3.0


def test_means_of_many_shapes_hold_no_memory():
    """On MLX a mean's plan (kept per shape for as long as the executor lives) holds no memory the size of its
    result once the tensors are gone: averaging large results of 20 shapes leaves MLX's active memory where it
    was; the values are torch's."""
    mx = pytest.importorskip("mlx.core")
    import numpy as np

    rng = np.random.default_rng(0)
    gc.collect()
    base = mx.get_active_memory()
    for t in range(100, 120):
        a = rng.standard_normal((8, 512, t)).astype(np.float32)
        h = tdx.tensor(a, device="mlx:cpu")
        check(lambda: h.mean(-1), lambda: torch.tensor(a).mean(-1))
        del h
    gc.collect()
    assert mx.get_active_memory() - base < 64 * 1024  # each plan's kept divisor would be 16 KiB


def _attention_run(mod, grad, **kw):
    g = torch.Generator().manual_seed(5)
    q, k, v = (mod.tensor(torch.randn(2, 3, 8, 4, generator=g).numpy(), **kw).requires_grad_(grad) for _ in range(3))
    out = mod.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    if not grad:
        return out
    (out * out).sum().backward()
    return out.detach(), q.grad, k.grad, v.grad


def test_attention_in_training_takes_the_fused_mlx_kernel(monkeypatch):
    """In training on MLX (grad enabled, inputs require grad) the automatic choice is MLX's fused kernel,
    never the bridge to torch (its forced evaluations pin the forward's memory); an explicit
    ``sdpa_kernel([BRIDGE])`` still runs the bridge. Values and gradients are torch's."""
    pytest.importorskip("mlx.core")
    from tdx.attention import SDPBackend, _kernels, explain, sdpa_kernel

    chosen = []
    real = _kernels.pick  # every choice, planned or worked out in full, is picked here

    def spy(*a, **k):
        chosen.append(real(*a, **k))
        return chosen[-1]

    monkeypatch.setattr(_kernels, "pick", spy)
    _kernels.clear_cache()
    q = tdx.zeros(2, 3, 8, 4, device="mlx:cpu", requires_grad=True)
    assert explain(q, q, q, is_causal=True).kernel is SDPBackend.MLX_FUSED
    check(lambda: _attention_run(tdx, True, device="mlx:cpu"), lambda: _attention_run(torch, True),
          rtol=1e-5, atol=1e-6)
    assert chosen and set(chosen) == {SDPBackend.MLX_FUSED}
    chosen.clear()
    with sdpa_kernel([SDPBackend.BRIDGE]):
        check(lambda: _attention_run(tdx, True, device="mlx:cpu"), lambda: _attention_run(torch, True),
              rtol=1e-5, atol=1e-6)
    assert chosen and chosen[0] is SDPBackend.BRIDGE  # then the peer's own choice on cpu


# --- state a module updates itself, read by nobody (issue 39) -----------------------------------------------------

_BENCH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench")
sys.path.insert(0, _BENCH)
from buffer_rss import cases as _buffer_cases  # noqa: E402

_BUFFER_CASES = list(_buffer_cases(tdx))
_STDERR, _STATUS = "stderr", "status"  # the keys of the run's stderr and exit status among its rows (no case's)


def _rss_rows(device: str, tmp_path_factory) -> dict:
    """bench/buffer_rss.py's row of every case on ``device`` (case -> the row's text), from one process a session
    for all cases (``--inline``: every case's objects stay alive, so memory one case frees cannot hide another's
    growth), and that process's stderr and exit status under :data:`_STDERR` and :data:`_STATUS`: its start-up
    (torch's import) is paid once, not once a case."""
    def make(cwd):
        env = {**os.environ, "PYTHONPATH": os.path.dirname(_BENCH) + os.pathsep + os.environ.get("PYTHONPATH", "")}
        proc = subprocess.run([sys.executable, os.path.join(_BENCH, "buffer_rss.py"), "--inline", "--cases",
                               ",".join(_BUFFER_CASES), "--device", device, "--steps", "500", "--warmup", "300",
                               "--samples", "5"], capture_output=True, text=True, env=env, timeout=900, cwd=cwd)
        rows = {case: line for line in proc.stdout.splitlines() for case in _BUFFER_CASES
                if line.startswith(case) and line[len(case):len(case) + 1] == " "}
        rows[_STDERR], rows[_STATUS] = proc.stderr[-3000:], proc.returncode
        return rows

    return shared_reference(f"buffer-rss-{device}", tmp_path_factory, make)[1]


@pytest.mark.parametrize("case", _BUFFER_CASES)
@pytest.mark.timeout(1200)
def test_state_nobody_reads_stays_flat(device, case, tmp_path_factory):
    """500 training steps that read nothing back (after 300 of warm-up: the longest chain of lazy in-place
    writes tdx lets a tensor build is 256) grow the RSS by under 5 MB per 1,000 steps, for every module that
    updates buffers itself (running statistics, ``num_batches_tracked``, ``spectral_norm``'s vectors,
    ``AveragedModel``) and for optimizers stepping parameters nobody reads. The cases of a device run in one
    process of their own (bench/buffer_rss.py), apart from the suite's, so that memory another test freed cannot
    hide the growth; without the bound every case grew 17 to 90 MB per 1,000 steps on MLX."""
    if not sys.platform.startswith("linux"):
        pytest.skip("reads /proc/self/statm")
    rows = _rss_rows(device, tmp_path_factory)
    assert rows[_STATUS] == 0 and case in rows, rows[_STDERR]
    per_1000 = float(rows[case][len(case):].split()[1]) / 10  # the first-to-last growth, in MB per 10,000 steps
    assert per_1000 < 5.0, f"{case} on {device}: RSS grew {per_1000:.2f} MB per 1,000 steps"
