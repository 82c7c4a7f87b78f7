"""Gradient regressions the OpInfo run found on MLX, each against torch's autograd on CPU, on every device.

``atleast_{1,2,3}d`` of a list whose tensors pass through unchanged (each output stays its own
input), ``logcumsumexp`` with -inf and large values, ``scatter_reduce``/``index_reduce`` with
``reduce='prod'`` (zeros in the source and in the destination, ``include_self`` both ways),
``as_strided`` of a view that reaches past the view into its root's storage, and ``ctc_loss`` (torch's
derivative through a log_softmax).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import tdx
from conftest import torch_twin

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")  # torch: index_reduce() is in beta


def _pair(values, device, dtype="float32", twin=False):
    """The same leaf on tdx (``device``) and on torch (on CPU, or with ``twin`` on the device's torch twin), both
    requiring grad."""
    a = np.asarray(values, dtype=dtype)
    return (tdx.tensor(a, device=device).requires_grad_(),
            torch.tensor(a, device=torch_twin(device) if twin else "cpu").requires_grad_())


def _close(got, expected, rtol=1e-6, atol=1e-6):
    assert got is not None, "tdx gave no gradient where torch gives one"
    np.testing.assert_allclose(np.asarray(got.detach().cpu().numpy()), expected.detach().cpu().numpy(),
                               rtol=rtol, atol=atol)


def _grads(device, arrays, fn, rtol=1e-6, atol=1e-6, dtype="float32", twin=False):
    """``fn(lib, *leaves)`` on both libraries; the weighted sum of its outputs' gradients must match (torch's
    on the device's torch twin with ``twin``)."""
    pairs = [_pair(a, device, dtype, twin) for a in arrays]
    outs_g = fn(tdx, *[p[0] for p in pairs])
    outs_t = fn(torch, *[p[1] for p in pairs])
    outs_g = outs_g if isinstance(outs_g, (tuple, list)) else (outs_g,)
    outs_t = outs_t if isinstance(outs_t, (tuple, list)) else (outs_t,)
    for g, t in zip(outs_g, outs_t):
        _close(g, t, rtol, atol)
    rng = np.random.default_rng(0)
    ws = [rng.uniform(0.5, 1.5, size=tuple(t.shape)).astype(dtype) for t in outs_t]
    sum(((g * tdx.tensor(w, device=device)).sum() for g, w in zip(outs_g, ws))).backward()
    sum(((t * torch.tensor(w, device=t.device)).sum() for t, w in zip(outs_t, ws))).backward()
    for g, t in pairs:
        _close(g.grad, t.grad, rtol, atol)


@pytest.mark.parametrize("name", ["atleast_1d", "atleast_2d", "atleast_3d"])
@pytest.mark.parametrize("as_list", [False, True])
def test_atleast_several_tensors(device, name, as_list):
    arrays = [np.float32(1.5), [1.0, 2.0], [[1.0, 2.0], [3.0, 4.0]], np.ones((2, 1, 3)), np.ones((1, 2, 1, 2))]
    pairs = [_pair(a, device) for a in arrays]

    def run(lib, leaves):
        fn = getattr(lib, name)
        return fn(list(leaves)) if as_list else fn(*leaves)

    outs_g, outs_t = run(tdx, [p[0] for p in pairs]), run(torch, [p[1] for p in pairs])
    assert [tuple(o.shape) for o in outs_g] == [tuple(o.shape) for o in outs_t]
    assert [p[0].is_leaf for p in pairs] == [True] * len(pairs)
    sum(((o * (i + 1)).sum() for i, o in enumerate(outs_g))).backward()
    sum(((o * (i + 1)).sum() for i, o in enumerate(outs_t))).backward()
    for g, t in pairs:
        _close(g.grad, t.grad)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.float64
def test_logcumsumexp_large_and_infinite_values(device, dtype, dim):
    if dtype not in tdx.backends.get(device).caps.dtypes:
        pytest.skip(f"{device} has no {dtype}")
    rng = np.random.default_rng(3)
    big = rng.uniform(-1e4, 1e4, size=(5, 5, 5))  # the gradient is exp(x + scan): an ulp of the scan shows
    small = rng.normal(size=(4, 6, 3))
    small[0, :, 0] = -np.inf  # a leading -inf: no contribution, zero gradient
    for a in (big, small):
        # float32: 1e-4 relative, the scan's last ulp magnified by exp at values of 1e4 (torch's own error); cuda's
        # parallel scan rounds otherwise than CPU's, so torch runs on the device's torch twin
        _grads(device, [a], lambda lib, x: lib.logcumsumexp(x, dim), rtol=1e-4 if dtype == "float32" else 1e-9,
               atol=1e-5 if dtype == "float32" else 1e-10, dtype=dtype, twin=True)


# self (3, 4); src (4, 4) scattered along dim 0 by INDEX: zeros alone, zeros sharing a target, zeros in self
SELF = [[1.5, 0.0, -2.0, 0.5], [3.0, 1.25, 0.0, -1.0], [0.75, 2.0, 1.0, 4.0]]
SRC = [[2.0, 0.0, 1.5, -0.5], [0.0, 3.0, 0.0, 2.0], [1.25, 0.0, -1.0, 0.0], [0.5, 2.0, 0.75, 1.5]]
INDEX = [[0, 1, 2, 0], [0, 1, 2, 2], [2, 1, 2, 2], [0, 0, 1, 0]]


@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_prod_gradient(device, include_self):
    idx = np.asarray(INDEX)

    def fn(lib, x, src):
        i = lib.tensor(idx, device=x.device) if lib is tdx else torch.tensor(idx)
        return x.scatter_reduce(0, i, src, "prod", include_self=include_self)

    _grads(device, [SELF, SRC], fn)


@pytest.mark.parametrize("include_self", [True, False])
def test_index_reduce_prod_gradient(device, include_self):
    idx = np.asarray([0, 2, 2, 1])

    def fn(lib, x, src):
        i = lib.tensor(idx, device=x.device) if lib is tdx else torch.tensor(idx)
        return x.index_reduce(0, i, src, "prod", include_self=include_self)

    _grads(device, [SELF, SRC], fn)
    _grads(device, [np.asarray(SELF).T, np.asarray(SRC).T],  # along dim 1, through the functional form
           lambda lib, x, src: lib.index_reduce(x, 1, lib.tensor(idx, device=x.device) if lib is tdx
                                                else torch.tensor(idx), src, "prod", include_self=include_self))


@pytest.mark.parametrize("offset", [None, 0, 3, 10])
@pytest.mark.parametrize("leaf", ["view", "root"])
def test_as_strided_of_a_view_reads_its_root_storage(device, offset, leaf):
    """A view's storage is its root's memory: offsets count from the root's start, past the view's end."""
    base = np.arange(20, dtype=np.float32) * 0.5 - 3.0
    w = np.asarray([[1.0, 2.0], [3.0, 4.0]], dtype=np.float32)
    results = []
    for lib, dev in ((tdx, device), (torch, None)):
        root = lib.tensor(base, device=dev) if dev else lib.tensor(base)
        if leaf == "root":
            root.requires_grad_()
        view = root[5:15]
        if leaf == "view":
            view.requires_grad_()
        out = view.as_strided((2, 2), (1, 2)) if offset is None else view.as_strided((2, 2), (1, 2), offset)
        (out * (lib.tensor(w, device=dev) if dev else lib.tensor(w))).sum().backward()
        results.append((out, (view if leaf == "view" else root).grad))
    (got, got_grad), (expected, expected_grad) = results
    _close(got, expected, 0, 0)
    _close(got_grad, expected_grad, 0, 0)


def test_as_strided_of_a_transposed_view(device):
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    got = tdx.tensor(a, device=device).t().as_strided((2, 3), (1, 4), 1)
    expected = torch.tensor(a).t().as_strided((2, 3), (1, 4), 1)
    _close(got, expected, 0, 0)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("zero_infinity", [False, True])
def test_ctc_loss_gradient_is_torchs(device, reduction, zero_infinity):
    """torch's derivative of ctc_loss is the one through a log_softmax: ``exp(lp)`` more per step within the
    input length than the derivative of the loss's value (float64: the scan rounds at ~1e-15)."""
    if "float64" not in tdx.backends.get(device).caps.dtypes:
        pytest.skip(f"{device} has no float64")
    rng = np.random.default_rng(5)
    logits = rng.normal(size=(6, 3, 5))
    lp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    targets = np.asarray([[1, 2, 2], [3, 1, 0], [4, 4, 4]])
    in_lens, tg_lens = [6, 4, 2], [3, 2, 3]  # the last is impossible (3 labels, two repeated, in 2 steps)

    # the last item is impossible; with zero_infinity it has a 0 loss and no gradient, else it is left out
    n = 3 if zero_infinity else 2

    def fn(lib, x):
        t = lib.tensor(targets[:n], device=x.device) if lib is tdx else torch.tensor(targets[:n])
        return lib.nn.functional.ctc_loss(x, t, in_lens[:n], tg_lens[:n], reduction=reduction,
                                          zero_infinity=zero_infinity)

    _grads(device, [lp[:, :n]], fn, rtol=1e-9, atol=1e-12, dtype="float64")
